//! The shared conformance suite, on io_uring and on the pread/pwrite backend.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test (helpers outside #[test] too)"
)]
use std::path::Path;
use std::sync::Arc;

fn open(dir: &Path) -> kvapi::Result<Arc<dyn kvapi::Engine>> {
    let mut c = kvell::Config::new(dir);
    c.cache_bytes = 1 << 20;
    Ok(kvell::Kvell::open(c)?)
}

kvtestkit::conformance_tests!(open);

mod psync {
    use super::*;

    fn open(dir: &Path) -> kvapi::Result<Arc<dyn kvapi::Engine>> {
        let o = kvapi::Options::new(
            "kvell",
            &[
                ("dir", dir.to_str().expect("utf-8 path")),
                ("io", "psync"),
                ("cache", "1M"),
                ("workers", "3"),
            ],
        );
        kvell::open_engine(&o)
    }

    kvtestkit::conformance_tests!(open);
}
