//! What the engine states about itself (durability class, the exact configuration
//! strings, direct I/O, limits) and the counters it reports.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]
#![cfg(not(wt_missing))]

use kvapi::{Durability, Engine, Options};
use kvtestkit::{TempDir, value};
use std::path::Path;
use std::sync::Arc;

fn open_with(dir: &Path, extra: &[(&str, &str)]) -> Arc<dyn Engine> {
    let d = dir.display().to_string();
    let mut o = vec![("dir", d.as_str()), ("cache", "4M"), ("log_file_max", "1M")];
    o.extend_from_slice(extra);
    wiredtiger_engine::open_engine(&Options::new("wiredtiger", &o)).unwrap()
}

fn setting<'a>(info: &'a kvapi::EngineInfo, name: &str) -> &'a str {
    info.settings
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no setting {name}: {:?}", info.settings))
}

#[test]
fn states_durability_and_configuration_strings() {
    let d = TempDir::new("wt-info");
    for (class, want, sync) in [
        (
            "none",
            Durability::None,
            "log=(enabled=false),transaction_sync=(enabled=false)",
        ),
        (
            "process",
            Durability::Process,
            "log=(enabled=true,file_max=1MB),transaction_sync=(enabled=true,method=none)",
        ),
        (
            "power",
            Durability::Power,
            "log=(enabled=true,file_max=1MB),transaction_sync=(enabled=true,method=fsync)",
        ),
    ] {
        let e = open_with(d.path(), &[("durability", class)]);
        let i = e.info();
        assert_eq!(i.engine, "wiredtiger");
        assert_eq!(i.durability, want);
        assert_eq!(i.cache_bytes, Some(4 << 20));
        assert_eq!(i.direct_io, Some(true), "notes: {:?}", i.notes);
        assert!(!i.limits.empty_key);
        let open = setting(&i, "wiredtiger_open");
        assert_eq!(
            open,
            format!(
                "create,config_base=false,use_environment=false,cache_size=4MB,\
                 session_max=1024,eviction=(threads_min=1,threads_max=8),direct_io=[data],\
                 statistics=(fast),checkpoint=(wait=60),checkpoint_sync=true,{sync}"
            )
        );
        assert!(i.durability_setting.contains(match class {
            "none" => "log disabled",
            "process" => "method=none",
            _ => "method=fsync",
        }));
        assert_eq!(
            setting(&i, "create"),
            "table:kv key_format=u,value_format=u,allocation_size=4KB,leaf_page_max=4KB,\
             internal_page_max=4KB,block_compressor=,checksum=on"
        );
        assert_eq!(setting(&i, "open_cursor"), "overwrite=true");
        assert_eq!(setting(&i, "open_session"), "isolation=snapshot");
        assert!(setting(&i, "library").starts_with("WiredTiger 3."));
        assert_eq!(setting(&i, "durability"), class);
        assert_eq!(setting(&i, "checkpoint_secs"), "60");
        // two write tickets per CPU, stated with the key locks in a note
        let cpus = std::thread::available_parallelism().unwrap().get();
        assert_eq!(setting(&i, "write_tickets"), (2 * cpus).to_string());
        assert!(
            i.notes
                .iter()
                .any(|n| n.contains(&format!("{} write tickets", 2 * cpus))
                    && n.contains("key_lock_waits"))
        );
        assert!(i.notes.iter().any(|n| n.contains("cache_size")));
        assert!(i.notes.iter().any(|n| n.contains("session")));
        e.close().unwrap();
    }
}

/// The open flags of this process's descriptors of files in `dir` whose names start
/// with `prefix` (tests run in parallel in one process: other engines' files are
/// open too).
fn open_flags(dir: &Path, prefix: &str) -> Vec<u32> {
    let mut flags = Vec::new();
    for fd in std::fs::read_dir("/proc/self/fd").unwrap() {
        let fd = fd.unwrap();
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        if target.parent() != Some(dir) || !name.starts_with(prefix) {
            continue;
        }
        let info = std::fs::read_to_string(format!(
            "/proc/self/fdinfo/{}",
            fd.file_name().to_string_lossy()
        ))
        .unwrap_or_default();
        if let Some(f) = info.lines().find_map(|l| l.strip_prefix("flags:")) {
            flags.push(u32::from_str_radix(f.trim(), 8).unwrap());
        }
    }
    flags
}

#[test]
fn data_files_use_direct_io_and_the_log_does_not() {
    const O_DIRECT: u32 = 0o40000;
    let d = TempDir::new("wt-direct");
    let e = open_with(d.path(), &[]);
    for i in 0..2000u64 {
        e.insert(format!("k{i:06}").as_bytes(), &value(i, 1000))
            .unwrap();
    }
    let table = open_flags(&d.path().join("db"), "kv.wt");
    assert!(!table.is_empty(), "kv.wt is not open");
    assert!(table.iter().all(|f| f & O_DIRECT != 0), "{table:?}");
    let log = open_flags(&d.path().join("db"), "WiredTigerLog.");
    assert!(!log.is_empty(), "the log is not open");
    assert!(log.iter().all(|f| f & O_DIRECT == 0), "{log:?}");
    e.close().unwrap();
    drop(e);
    let e = open_with(d.path(), &[("direct_io", "false")]);
    assert_eq!(e.info().direct_io, Some(false));
    assert!(e.info().notes.iter().any(|n| n.contains("buffered")));
    assert_eq!(e.get(b"k000007").unwrap(), Some(value(7, 1000)));
    let table = open_flags(&d.path().join("db"), "kv.wt");
    assert!(table.iter().all(|f| f & O_DIRECT == 0), "{table:?}");
    e.close().unwrap();
}

/// On a file system without O_DIRECT (tmpfs) the engine opens with buffered I/O and
/// says so.
#[test]
fn direct_io_falls_back_where_the_file_system_refuses_it() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("no /dev/shm: skipped");
        return;
    }
    let d = shm.join(format!("wt-no-direct-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let e = open_with(&d, &[]);
    let i = e.info();
    if i.direct_io == Some(true) {
        eprintln!("/dev/shm accepts O_DIRECT here: nothing to fall back from");
    } else {
        assert_eq!(i.direct_io, Some(false));
        assert!(
            i.notes.iter().any(|n| n.contains("refused")),
            "{:?}",
            i.notes
        );
        assert!(setting(&i, "wiredtiger_open").contains("direct_io=[],"));
    }
    e.insert(b"k", b"v").unwrap();
    e.close().unwrap();
    drop(e);
    let e = open_with(&d, &[]);
    assert_eq!(e.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    e.close().unwrap();
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn counters_move_with_the_data() {
    let d = TempDir::new("wt-counters");
    let e = open_with(d.path(), &[]);
    // three times the cache: eviction writes pages, reads miss
    for i in 0..12_000u64 {
        e.insert(format!("k{i:06}").as_bytes(), &value(i, 1000))
            .unwrap();
    }
    for i in (0..12_000u64).step_by(7) {
        assert_eq!(
            e.get(format!("k{i:06}").as_bytes()).unwrap(),
            Some(value(i, 1000))
        );
    }
    let c = e.counters();
    let extra = |name: &str| {
        c.extra
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no counter {name}: {:?}", c.extra))
    };
    assert!(c.device_bytes_written.unwrap() > 12_000_000, "{c:?}");
    assert!(c.device_bytes_read.unwrap() > 0, "{c:?}");
    assert!(c.device_reads.unwrap() > 0, "{c:?}");
    assert!(c.cache_misses.unwrap() > 0, "{c:?}");
    assert!(c.cache_hits.unwrap() > 0, "{c:?}");
    assert_eq!(c.items, None);
    assert_eq!(c.device_writes, None);
    let in_cache = extra("memory.cache_bytes");
    assert!(in_cache > 0 && in_cache <= 4 << 20, "{in_cache}");
    assert_eq!(extra("cache_bytes_max"), 4 << 20);
    assert!(extra("log_bytes_written") > 12_000_000);
    assert!(extra("block_bytes_written") > 0);
    e.close().unwrap();
    assert_eq!(
        e.counters(),
        kvapi::Counters::default(),
        "after close: nothing to report"
    );
}

/// The driver's memory governor resizes WiredTiger's cache on the open connection: the
/// capacity it reports, and WiredTiger's own "maximum bytes configured", follow; below
/// WiredTiger's 1 MiB smallest cache it holds 1 MiB; a closed engine refuses.
#[test]
fn its_cache_can_be_resized_while_open() {
    let d = TempDir::new("wt-resize");
    let e = open_with(d.path(), &[]);
    let max = |e: &Arc<dyn Engine>| {
        e.counters()
            .extra
            .iter()
            .find(|(k, _)| k == "cache_bytes_max")
            .map(|(_, v)| *v)
    };
    assert_eq!(e.cache_capacity(), Some(4 << 20));
    assert_eq!(max(&e), Some(4 << 20));
    for k in 0..200u32 {
        e.insert(format!("k{k:05}").as_bytes(), &value(k as u64, 900))
            .unwrap();
    }
    e.set_cache_capacity(2 << 20).unwrap();
    assert_eq!(e.cache_capacity(), Some(2 << 20));
    assert_eq!(max(&e), Some(2 << 20), "WiredTiger's own figure follows");
    e.set_cache_capacity(1000).unwrap();
    assert_eq!(e.cache_capacity(), Some(1 << 20), "no smaller than 1 MiB");
    assert_eq!(max(&e), Some(1 << 20));
    // the data is all there after the shrink
    for k in 0..200u32 {
        assert_eq!(
            e.get(format!("k{k:05}").as_bytes()).unwrap(),
            Some(value(k as u64, 900))
        );
    }
    e.close().unwrap();
    assert!(e.set_cache_capacity(4 << 20).is_err(), "closed: refused");
}
