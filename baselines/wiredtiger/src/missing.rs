//! The stand-in built when WiredTiger was not found: every open says so.

use kvapi::{Engine, Error, Options, Result};
use std::sync::Arc;

/// What is missing and how to get it (set by build.rs; the default covers a build
/// forced with `--cfg wt_missing`).
pub(crate) const REASON: &str = match option_env!("WT_MISSING_REASON") {
    Some(r) => r,
    None => {
        "WiredTiger is not in this build: libwiredtiger-dev (pkg-config wiredtiger) was \
         not found when it was built; install it (apt-get install libwiredtiger-dev) and \
         rebuild"
    }
};

pub(crate) fn open_engine(_opts: &Options) -> Result<Arc<dyn Engine>> {
    Err(Error::Unsupported(REASON.to_string()))
}
