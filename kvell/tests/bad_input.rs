//! Bad input: oversized keys and values, corrupt and truncated slabs, a second open,
//! a changed worker layout, misspelt options, a filesystem without O_DIRECT.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test (helpers outside #[test] too)"
)]
use kvapi::{Engine, Error, Request};
use kvell::{Config, Kvell, slab};
use kvtestkit::conformance::TempDir;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::sync::mpsc;

fn cfg(dir: &std::path::Path) -> Config {
    let mut c = Config::new(dir);
    c.workers = 1;
    c.cache_bytes = 1 << 20;
    c
}

fn filled(d: &TempDir) {
    let e = Kvell::open(cfg(d.path())).unwrap();
    for i in 0..200u32 {
        e.insert(format!("k{i:04}").as_bytes(), b"small value")
            .unwrap();
    }
    e.close().unwrap();
}

#[test]
fn oversized_key_and_value_refused_on_both_paths() {
    let d = TempDir::new("kvell-big");
    let e = Kvell::open(cfg(d.path())).unwrap();
    let limits = e.info().limits;
    assert_eq!(limits.max_key, slab::MAX_KEY);
    let err = e.insert(&vec![1u8; slab::MAX_KEY + 1], b"v").unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("key of"), "{err}");
    let err = e.insert(b"k", &vec![1u8; slab::MAX_VALUE + 1]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    // the largest item is accepted
    let big = vec![3u8; slab::MAX_VALUE];
    e.insert(&vec![2u8; slab::MAX_KEY], &big).unwrap();
    assert_eq!(e.get(&vec![2u8; slab::MAX_KEY]).unwrap(), Some(big));
    let a = e.clone().native_async().unwrap();
    let (tx, rx) = mpsc::channel();
    a.submit(
        Request::Insert {
            key: b"k".to_vec(),
            value: vec![0; slab::MAX_VALUE + 1],
        },
        Box::new(move |r| tx.send(r).unwrap()),
    );
    assert!(matches!(rx.recv().unwrap(), Err(Error::InvalidArgument(_))));
    assert_eq!(e.get(b"k").unwrap(), None, "nothing was written");
    e.close().unwrap();
}

#[test]
fn corrupt_header_is_reported_with_file_and_offset() {
    let d = TempDir::new("kvell-corrupt");
    filled(&d);
    let path = d.path().join(slab::file_name(0, 0));
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    // third slot of the second page: unknown flags in the header
    let at = 4096 + 2 * 100 + 10;
    f.write_all_at(&[0xAB, 0xCD], at).unwrap();
    drop(f);
    let err = match Kvell::open(cfg(d.path())) {
        Err(e) => e,
        Ok(_) => panic!("opened a corrupt slab"),
    };
    match &err {
        Error::Corruption { file, offset, .. } => {
            assert_eq!(file, &path);
            assert_eq!(*offset, 4096 + 200);
        }
        other => panic!("expected corruption, got {other}"),
    }
    assert!(err.to_string().contains("w000-100.slab"), "{err}");
}

#[test]
fn truncated_slab_is_reported_or_recovered_up_to_the_cut() {
    let d = TempDir::new("kvell-trunc");
    filled(&d);
    let path = d.path().join(slab::file_name(0, 0));
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(3 * 4096 + 100).unwrap();
    drop(f);
    let err = Kvell::open(cfg(d.path()))
        .err()
        .expect("opened a torn file");
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(err.to_string().contains("truncated"), "{err}");
    // cut at a page boundary of a cleanly closed slab: the clean-shutdown record says
    // where it ended, so the loss is reported too
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(3 * 4096).unwrap();
    drop(f);
    let err = Kvell::open(cfg(d.path())).err().expect("opened a cut slab");
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(err.to_string().contains("items lost"), "{err}");
    // without the record the length itself tells: 3 pages is no length file growth
    // gives (1 MiB first), and items lie past the last one it gives (0)
    std::fs::remove_file(d.path().join("w000.clean")).unwrap();
    let err = Kvell::open(cfg(d.path())).err().expect("opened a cut slab");
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(
        err.to_string().contains("length growth never gives"),
        "{err}"
    );
    // the operator accepts the loss: the slab back at a growth length (1 MiB) and no
    // record; what is intact (3 pages of 40 items) is recovered
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(1 << 20).unwrap();
    drop(f);
    let e = Kvell::open(cfg(d.path())).unwrap();
    assert_eq!(e.counters().items, Some(120));
    assert_eq!(
        e.get(b"k0000").unwrap().as_deref(),
        Some(&b"small value"[..])
    );
    e.insert(b"new", b"after the cut").unwrap();
    e.close().unwrap();
}

#[test]
fn second_open_and_changed_layout_refused() {
    let d = TempDir::new("kvell-twice");
    let e = Kvell::open(cfg(d.path())).unwrap();
    assert!(matches!(
        Kvell::open(cfg(d.path())),
        Err(Error::Locked { .. })
    ));
    e.close().unwrap();
    drop(e);
    let mut c = cfg(d.path());
    c.workers = 3;
    let err = Kvell::open(c).err().expect("opened with another layout");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("workers=1"), "{err}");
}

#[test]
fn options_are_checked() {
    let d = TempDir::new("kvell-opts");
    let p = d.path().to_str().unwrap().to_string();
    let o = kvapi::Options::new("kvell", &[("dir", &p), ("cahce", "1G")]);
    let err = kvell::open_engine(&o).err().expect("typo accepted");
    assert!(err.to_string().contains("kvell.cahce"), "{err}");
    let o = kvapi::Options::new("kvell", &[("dir", &p), ("durability", "sometimes")]);
    assert!(matches!(
        kvell::open_engine(&o),
        Err(Error::InvalidArgument(_))
    ));
    let o = kvapi::Options::new("kvell", &[("dir", &p), ("cache_setup", "later")]);
    let err = kvell::open_engine(&o)
        .err()
        .expect("a bad cache_setup accepted");
    assert!(
        err.to_string().contains("cache_setup") && err.to_string().contains("open, after"),
        "{err}"
    );
    // recovery's read shape: a clear error for a size or depth it cannot use
    for (k, v, says) in [
        ("recovery_read", "1000", "multiple of 4096"),
        ("recovery_read", "128M", "multiple of 4096"),
        ("recovery_read", "lots", "recovery_read"),
        ("recovery_depth", "1", "between 2 and 256"),
        ("recovery_depth", "1000", "between 2 and 256"),
    ] {
        let o = kvapi::Options::new("kvell", &[("dir", &p), (k, v)]);
        let err = kvell::open_engine(&o)
            .err()
            .unwrap_or_else(|| panic!("{k}={v} accepted"));
        assert!(err.to_string().contains(says), "{k}={v}: {err}");
    }
    // buffers beyond reason, or over a quarter of a worker's budget (100M over 2 workers)
    for (opts, says) in [
        (
            vec![("recovery_read", "64M"), ("recovery_depth", "32")],
            "over 1G",
        ),
        (
            vec![
                ("memory", "100M"),
                ("recovery_read", "2M"),
                ("recovery_depth", "8"),
            ],
            "over a quarter of its memory budget",
        ),
    ] {
        let mut all = vec![("dir", p.as_str())];
        all.extend(opts.iter().copied());
        let err = kvell::open_engine(&kvapi::Options::new("kvell", &all))
            .err()
            .unwrap_or_else(|| panic!("{opts:?} accepted"));
        assert!(err.to_string().contains(says), "{opts:?}: {err}");
    }
    // a Config built by hand is checked at open as options are
    let mut c = cfg(d.path());
    c.recovery_read = Some(1000);
    let err = Kvell::open(c).err().expect("a read of 1000 bytes accepted");
    assert!(err.to_string().contains("multiple of 4096"), "{err}");
    // a shape given is the shape used and reported, and the data recovers with it
    // (4 KiB reads: each of a slab's pages one read)
    let r = TempDir::new("kvell-reads");
    let rp = r.path().to_str().unwrap().to_string();
    let e = kvell::open_engine(&kvapi::Options::new("kvell", &[("dir", &rp)])).unwrap();
    for i in 0..3000u32 {
        e.insert(format!("r{i:05}").as_bytes(), &[i as u8; 700])
            .unwrap();
    }
    e.close().unwrap();
    drop(e);
    let o = kvapi::Options::new(
        "kvell",
        &[
            ("dir", &rp),
            ("recovery_read", "4K"),
            ("recovery_depth", "16"),
        ],
    );
    let e = kvell::open_engine(&o).unwrap();
    assert_eq!(e.counters().items, Some(3000));
    assert_eq!(
        e.get(b"r02999").unwrap().as_deref(),
        Some(&[2999u32 as u8; 700][..])
    );
    let shape = e
        .info()
        .settings
        .iter()
        .find(|(k, _)| k == "recovery_read_ahead")
        .map(|(_, v)| v.clone());
    assert_eq!(
        shape.as_deref(),
        Some("16 reads of 4096 bytes in flight per worker")
    );
    e.close().unwrap();
    // several directories, workers in contiguous blocks
    let d2 = TempDir::new("kvell-opts2");
    let dirs = format!("{},{}", p, d2.path().display());
    let o = kvapi::Options::new(
        "kvell",
        &[("dir", &dirs), ("workers", "4"), ("durability", "flush")],
    );
    let e = kvell::open_engine(&o).unwrap();
    assert_eq!(e.info().durability, kvapi::Durability::Power);
    for i in 0..100u32 {
        e.insert(format!("m{i}").as_bytes(), b"x").unwrap();
    }
    e.close().unwrap();
    assert!(d.path().join(slab::file_name(1, 0)).exists());
    assert!(d2.path().join(slab::file_name(2, 0)).exists());
    assert!(!d2.path().join(slab::file_name(0, 0)).exists());
    let e = kvell::open_engine(&o).unwrap();
    assert_eq!(e.scan(b"m", 1000).unwrap().len(), 100);
    e.close().unwrap();
}

#[test]
fn tmpfs_without_o_direct_gives_a_clear_error() {
    let shm = std::path::Path::new("/dev/shm");
    if !shm.is_dir() {
        return;
    }
    let d = shm.join(format!("kvell-tmpfs-{}", std::process::id()));
    let r = Kvell::open(cfg(&d));
    let _ = std::fs::remove_dir_all(&d);
    match r {
        Ok(_) => {} // this /dev/shm accepts O_DIRECT (newer kernels do)
        Err(e) => {
            assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
            assert!(e.to_string().contains("O_DIRECT"), "{e}");
        }
    }
}
