//! Bad input: oversized keys and values, bad options, other engines' directories,
//! and damaged WiredTiger files, each refused with a clear error (never a panic, never
//! a silently empty store).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]
#![cfg(not(wt_missing))]

use kvapi::{Engine, Error, Options};
use kvtestkit::{TempDir, value};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

fn open_with(dir: &Path, extra: &[(&str, &str)]) -> kvapi::Result<Arc<dyn Engine>> {
    let d = dir.display().to_string();
    let mut o = vec![("dir", d.as_str()), ("cache", "4M"), ("log_file_max", "1M")];
    o.extend_from_slice(extra);
    wiredtiger_engine::open_engine(&Options::new("wiredtiger", &o))
}

/// 20,000 pairs of 500 bytes (about 12 MB of table, three times the cache), closed.
fn fill(dir: &Path) {
    let e = open_with(dir, &[]).unwrap();
    for i in 0..20_000u64 {
        e.insert(format!("k{i:08}").as_bytes(), &value(i, 500))
            .unwrap();
    }
    e.close().unwrap();
}

fn table(dir: &Path) -> std::path::PathBuf {
    dir.join("db/kv.wt")
}

#[test]
fn oversized_keys_and_values_write_nothing() {
    let d = TempDir::new("wt-oversized");
    let e = open_with(d.path(), &[]).unwrap();
    let limits = e.info().limits;
    assert_eq!(limits.max_key, 64 * 1024);
    assert_eq!(limits.max_value, 64 * 1024 * 1024);
    let key = vec![b'k'; limits.max_key + 1];
    assert!(matches!(
        e.insert(&key, b"v"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        e.update(&key, b"v"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(e.get(&key), Err(Error::InvalidArgument(_))));
    assert!(matches!(e.delete(&key), Err(Error::InvalidArgument(_))));
    let big = vec![1u8; limits.max_value + 1];
    assert!(matches!(
        e.insert(b"big", &big),
        Err(Error::InvalidArgument(_))
    ));
    // the largest key and a large value are stored (the key as an overflow item)
    let key = vec![b'k'; limits.max_key];
    e.insert(&key, &value(1, 3 << 20)).unwrap();
    assert!(matches!(
        e.insert(b"", b"v"),
        Err(Error::InvalidArgument(_))
    ));
    e.close().unwrap();
    drop(e);
    let e = open_with(d.path(), &[]).unwrap();
    assert_eq!(
        e.get(b"big").unwrap(),
        None,
        "a refused write wrote nothing"
    );
    assert_eq!(e.get(&key).unwrap(), Some(value(1, 3 << 20)));
    let all = e.scan(b"", 10).unwrap();
    assert_eq!(all.len(), 1, "only the accepted pair is stored");
    e.close().unwrap();
}

#[test]
fn bad_options_are_refused_before_anything_is_created() {
    let d = TempDir::new("wt-options");
    for bad in [
        &[("durability", "sometimes")][..],
        &[("cahce", "1G")],
        &[("cache", "100K")],
        &[("leaf_page_max", "6000")],
        &[("checkpoint_secs", "-1")],
        &[("log_file_max", "10K")],
    ] {
        let err = open_with(d.path(), bad).err().expect("a bad option opened");
        assert!(matches!(err, Error::InvalidArgument(_)), "{bad:?}: {err}");
        assert!(err.to_string().contains("wiredtiger."), "{err}");
    }
    assert!(!d.path().exists(), "a refused open created the directory");
}

#[test]
fn a_table_is_not_reopened_with_other_page_sizes() {
    let d = TempDir::new("wt-page-size");
    let e = open_with(d.path(), &[]).unwrap();
    e.insert(b"k", b"v").unwrap();
    e.close().unwrap();
    drop(e);
    // WiredTiger would silently keep 4 KiB pages: the engine refuses instead of
    // stating a configuration that is not in force
    let err = open_with(d.path(), &[("leaf_page_max", "8K")])
        .err()
        .expect("reopened with another page size");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("leaf_page_max=4KB"), "{err}");
    let e = open_with(d.path(), &[]).unwrap();
    assert_eq!(e.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    e.close().unwrap();
}

#[test]
fn another_engines_directory_and_a_foreign_home_are_refused() {
    let d = TempDir::new("wt-other");
    std::fs::create_dir_all(d.path()).unwrap();
    std::fs::write(d.path().join(kvapi::MARKER_FILE), "rocksdb\n").unwrap();
    let err = open_with(d.path(), &[])
        .err()
        .expect("opened a RocksDB directory");
    assert!(matches!(err, Error::WrongEngine { .. }), "{err}");
    // a bare WiredTiger home (no marker) is not adopted either
    let d = TempDir::new("wt-bare");
    fill(d.path());
    let home = d.path().join("db");
    let err = open_with(&home, &[]).err().expect("adopted a bare home");
    assert!(matches!(err, Error::WrongEngine { .. }), "{err}");
}

fn assert_corrupt(err: &Error, file: &str) {
    match err {
        Error::Corruption {
            file: f, detail, ..
        } => {
            assert!(f.ends_with(file), "names {f:?}, not {file}: {detail}");
        }
        other => panic!("expected corruption in {file}, got {other:?}"),
    }
}

#[test]
fn a_truncated_table_file_fails_the_open() {
    for keep in [0.5, 0.0] {
        let d = TempDir::new("wt-truncated");
        fill(d.path());
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(table(d.path()))
            .unwrap();
        let len = f.metadata().unwrap().len();
        f.set_len((len as f64 * keep) as u64).unwrap();
        drop(f);
        let err = open_with(d.path(), &[])
            .err()
            .expect("a truncated table opened");
        assert_corrupt(&err, "kv.wt");
        assert!(err.to_string().contains("failed to read"), "{err}");
        // the directory is not left locked by the failed open
        let err = open_with(d.path(), &[]).err().expect("opened on retry");
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
    }
}

#[test]
fn damaged_pages_are_reported_then_the_engine_refuses_work() {
    let d = TempDir::new("wt-garbage");
    fill(d.path());
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(table(d.path()))
        .unwrap();
    let len = f.metadata().unwrap().len();
    for off in (len / 4..len * 3 / 4).step_by(8192) {
        f.write_all_at(&[0x5a; 512], off).unwrap();
    }
    drop(f);
    let e = open_with(d.path(), &[]).unwrap();
    let mut first = None;
    let mut found = 0;
    for i in (0..20_000u64).step_by(97) {
        match e.get(format!("k{i:08}").as_bytes()) {
            Ok(Some(v)) => {
                assert_eq!(v, value(i, 500), "a damaged value was returned");
                found += 1;
            }
            Ok(None) => panic!("k{i:08} silently missing"),
            Err(err) => {
                if first.is_none() {
                    first = Some(err);
                } else {
                    assert!(matches!(err, Error::Poisoned(_)), "{err}");
                }
            }
        }
    }
    let first = first.expect("no read noticed the damage");
    assert_corrupt(&first, "kv.wt");
    assert!(first.to_string().contains("checksum"), "{first}");
    eprintln!("{found} reads before the damage was met; then {first}");
    // WiredTiger panicked: everything after is refused, with the cause
    let err = e.insert(b"after", b"x").unwrap_err();
    assert!(
        matches!(&err, Error::Poisoned(m) if m.contains("checksum")),
        "{err}"
    );
    assert!(e.close().is_err(), "close after a panic reports it");
    drop(e);
    // the directory can be opened again in this process, and the damage is met again
    let again = open_with(d.path(), &[]).and_then(|e| {
        for i in (0..20_000u64).step_by(97) {
            e.get(format!("k{i:08}").as_bytes())?;
        }
        Ok(())
    });
    assert!(matches!(again, Err(Error::Corruption { .. })), "{again:?}");
}

#[test]
fn damaged_metadata_and_log_fail_the_open() {
    // the metadata table cut short
    let d = TempDir::new("wt-meta");
    fill(d.path());
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(d.path().join("db/WiredTiger.wt"))
        .unwrap();
    f.set_len(4096).unwrap();
    drop(f);
    let err = open_with(d.path(), &[])
        .err()
        .expect("opened without metadata");
    assert_corrupt(&err, "WiredTiger.wt");
    // the turtle file (where the metadata's checkpoint is) overwritten
    let d = TempDir::new("wt-turtle");
    fill(d.path());
    std::fs::write(d.path().join("db/WiredTiger.turtle"), b"garbage\n").unwrap();
    let err = open_with(d.path(), &[])
        .err()
        .expect("opened with a bad turtle");
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(err.to_string().contains("turtle"), "{err}");
    // every log file damaged after its header: recovery cannot replay it
    let d = TempDir::new("wt-log");
    fill(d.path());
    for entry in std::fs::read_dir(d.path().join("db")).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("WiredTigerLog.")
        {
            let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            f.write_all_at(&[0x5a; 4096], 128).unwrap();
        }
    }
    let err = open_with(d.path(), &[])
        .err()
        .expect("opened with a bad log");
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(err.to_string().contains("Recovery failed"), "{err}");
}
