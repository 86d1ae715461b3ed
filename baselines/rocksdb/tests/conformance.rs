//! The engine conformance suite against RocksDB, and its bad-input cases.

use kvapi::{Engine, Options, Result};
use std::path::Path;
use std::sync::Arc;

fn open_with(dir: &Path, extra: &[(&str, &str)]) -> Result<Arc<dyn Engine>> {
    let d = dir.display().to_string();
    let mut o = vec![
        ("dir", d.as_str()),
        ("cache", "16M"),
        ("write_buffer_size", "4M"),
    ];
    o.extend_from_slice(extra);
    rocksdb_engine::open_engine(&Options::new("rocksdb", &o))
}

mod wal_process {
    use super::*;
    fn open(dir: &Path) -> Result<Arc<dyn Engine>> {
        open_with(dir, &[])
    }
    kvtestkit::conformance_tests!(open);
}

mod wal_synced {
    use super::*;
    fn open(dir: &Path) -> Result<Arc<dyn Engine>> {
        open_with(dir, &[("durability", "power")])
    }
    kvtestkit::conformance_tests!(open);
}

#[test]
fn states_durability_and_memory() {
    let d = kvtestkit::conformance::TempDir::new("rocks-info");
    for (class, want) in [
        ("none", kvapi::Durability::None),
        ("process", kvapi::Durability::Process),
        ("power", kvapi::Durability::Power),
    ] {
        let e = open_with(d.path(), &[("durability", class)]).unwrap();
        let i = e.info();
        assert_eq!(i.durability, want);
        assert_eq!(i.cache_bytes, Some(16 << 20));
        assert_eq!(i.direct_io, Some(true));
        assert!(i.notes.iter().any(|n| n.contains("memtables")));
        assert!(
            i.settings
                .iter()
                .any(|(k, v)| k == "compression" && v == "none")
        );
        e.insert(b"k", &vec![1u8; 1000]).unwrap();
        let c = e.counters();
        assert!(c.cache_hits.is_some() && c.device_bytes_written.is_some());
        e.close().unwrap();
    }
}

#[test]
fn refuses_bad_options_foreign_and_corrupt_directories() {
    let d = kvtestkit::conformance::TempDir::new("rocks-bad");
    assert!(matches!(
        open_with(d.path(), &[("durability", "sometimes")]),
        Err(kvapi::Error::InvalidArgument(_))
    ));
    assert!(matches!(
        open_with(d.path(), &[("bloom", "10")]),
        Err(kvapi::Error::InvalidArgument(_))
    ));
    std::fs::create_dir_all(d.path()).unwrap();
    std::fs::write(d.path().join(kvapi::MARKER_FILE), "sled\n").unwrap();
    assert!(matches!(
        open_with(d.path(), &[]),
        Err(kvapi::Error::WrongEngine { .. })
    ));
    // a RocksDB directory whose CURRENT file is garbage
    let d2 = kvtestkit::conformance::TempDir::new("rocks-corrupt");
    let e = open_with(d2.path(), &[]).unwrap();
    e.insert(b"a", b"b").unwrap();
    e.close().unwrap();
    drop(e);
    std::fs::write(d2.path().join("db/CURRENT"), "MANIFEST-999999\n").unwrap();
    let err = open_with(d2.path(), &[])
        .err()
        .expect("a corrupt directory must not open");
    let msg = err.to_string();
    assert!(msg.contains("RocksDB open"), "{msg}");
}
