//! The engine conformance suite against sled (every flush setting) and the null
//! engine's own checks.

use kvapi::{Engine, Options, Result};
use std::path::Path;
use std::sync::Arc;

mod sled_periodic {
    use super::*;
    fn open(dir: &Path) -> Result<Arc<dyn Engine>> {
        let d = dir.display().to_string();
        baselines::sled_engine::open_engine(&Options::new("sled", &[("dir", &d), ("cache", "16M")]))
    }
    kvtestkit::conformance_tests!(open);
}

mod sled_flush_every_write {
    use super::*;
    fn open(dir: &Path) -> Result<Arc<dyn Engine>> {
        let d = dir.display().to_string();
        baselines::sled_engine::open_engine(&Options::new(
            "sled",
            &[("dir", &d), ("cache", "16M"), ("flush", "every")],
        ))
    }
    kvtestkit::conformance_tests!(open);
}

#[test]
fn sled_refuses_unknown_option_and_foreign_directory() {
    let d = kvtestkit::conformance::TempDir::new("sled-bad");
    let dir = d.path().display().to_string();
    let e = baselines::sled_engine::open_engine(&Options::new(
        "sled",
        &[("dir", &dir), ("flsh", "every")],
    ));
    assert!(matches!(e, Err(kvapi::Error::InvalidArgument(_))));
    std::fs::create_dir_all(d.path()).unwrap();
    std::fs::write(d.path().join(kvapi::MARKER_FILE), "kvell\n").unwrap();
    let e = baselines::sled_engine::open_engine(&Options::new("sled", &[("dir", &dir)]));
    assert!(matches!(e, Err(kvapi::Error::WrongEngine { .. })));
}

#[test]
fn sled_states_its_durability() {
    let d = kvtestkit::conformance::TempDir::new("sled-dur");
    let dir = d.path().display().to_string();
    let e = baselines::sled_engine::open_engine(&Options::new("sled", &[("dir", &dir)])).unwrap();
    let info = e.info();
    assert_eq!(info.durability, kvapi::Durability::None);
    assert!(info.durability_setting.contains("500 ms"));
    assert_eq!(info.direct_io, Some(false));
    assert!(
        info.settings
            .iter()
            .any(|(k, v)| k == "flush" && v == "periodic")
    );
    e.close().unwrap();
}

#[test]
fn null_engine_accepts_everything_and_stores_nothing() {
    let e = baselines::null::open_engine(&Options::new("null", &[])).unwrap();
    e.insert(b"k", b"v").unwrap();
    assert_eq!(e.get(b"k").unwrap(), None);
    assert!(e.scan(b"", 10).unwrap().is_empty());
    assert!(baselines::null::open_engine(&Options::new("null", &[("dir", "x")])).is_err());
}
