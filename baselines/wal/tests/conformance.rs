//! The shared conformance suite, on real files with the default durability
//! (fdatasync) and a small log so that checkpoints and wrap-around happen.
use std::path::Path;
use std::sync::Arc;

fn open(dir: &Path) -> kvapi::Result<Arc<dyn kvapi::Engine>> {
    let d = dir.to_string_lossy().into_owned();
    wal_engine::open_engine(&kvapi::Options::new(
        "wal",
        &[("dir", &d), ("log_size", "1M"), ("checkpoint_ms", "100")],
    ))
}

kvtestkit::conformance_tests!(open);

#[test]
fn unknown_option_is_refused() {
    let d = kvtestkit::conformance::TempDir::new("wal-opt");
    let p = d.path().to_string_lossy().into_owned();
    let e = wal_engine::open_engine(&kvapi::Options::new(
        "wal",
        &[("dir", &p), ("log_sise", "1M")],
    ))
    .err()
    .expect("a misspelt option is refused");
    assert!(matches!(e, kvapi::Error::InvalidArgument(_)), "{e}");
}

#[test]
fn info_states_durability() {
    let d = kvtestkit::conformance::TempDir::new("wal-info");
    let p = d.path().to_string_lossy().into_owned();
    for (mode, class) in [
        ("fdatasync", kvapi::Durability::Power),
        ("dsync", kvapi::Durability::Power),
        ("none-process", kvapi::Durability::Process),
    ] {
        let e = wal_engine::open_engine(&kvapi::Options::new(
            "wal",
            &[("dir", &p), ("durability", mode)],
        ))
        .unwrap();
        let info = e.info();
        assert_eq!(info.durability, class, "{mode}");
        assert_eq!(info.limits.max_key, wal_engine::MAX_KEY);
        e.insert(mode.as_bytes(), mode.as_bytes()).unwrap();
        let big = kvtestkit::conformance::value(7, 20_000);
        e.insert(b"big", &big).unwrap();
        e.close().unwrap();
        // reopened with the default mode: every mode's writes are there
        let e = wal_engine::open_engine(&kvapi::Options::new("wal", &[("dir", &p)])).unwrap();
        assert_eq!(
            e.get(mode.as_bytes()).unwrap().as_deref(),
            Some(mode.as_bytes())
        );
        assert_eq!(e.get(b"big").unwrap(), Some(big));
        e.close().unwrap();
    }
}
