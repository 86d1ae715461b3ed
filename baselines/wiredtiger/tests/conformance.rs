//! The engine conformance suite against WiredTiger, once per durability class.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]
#![cfg(not(wt_missing))]

use kvapi::{Engine, Options, Result};
use std::path::Path;
use std::sync::Arc;

fn open_with(dir: &Path, extra: &[(&str, &str)]) -> Result<Arc<dyn Engine>> {
    let d = dir.display().to_string();
    let mut o = vec![
        ("dir", d.as_str()),
        ("cache", "16M"),
        ("log_file_max", "1M"),
    ];
    o.extend_from_slice(extra);
    wiredtiger_engine::open_engine(&Options::new("wiredtiger", &o))
}

mod durability_none {
    use super::*;
    fn open(dir: &Path) -> Result<Arc<dyn Engine>> {
        open_with(dir, &[("durability", "none")])
    }
    kvtestkit::conformance_tests!(open);
}

mod durability_process {
    use super::*;
    fn open(dir: &Path) -> Result<Arc<dyn Engine>> {
        open_with(dir, &[])
    }
    kvtestkit::conformance_tests!(open);
}

mod durability_power {
    use super::*;
    fn open(dir: &Path) -> Result<Arc<dyn Engine>> {
        open_with(dir, &[("durability", "power")])
    }
    kvtestkit::conformance_tests!(open);
}
