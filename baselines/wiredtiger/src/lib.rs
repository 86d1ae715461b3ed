//! The real WiredTiger (the system's libwiredtiger 3.2, a row-store B+ tree) behind
//! the engine interface: the paper's B+ tree baseline. See DESIGN.md for the
//! configuration, the durability mapping and the threading model.
//!
//! Durability (`wiredtiger.durability`), named as for every engine:
//! - `none`: log disabled; an acknowledged write lives in the cache until the next
//!   checkpoint (every `wiredtiger.checkpoint_secs`, and at close).
//! - `process` (default): the log record is written to the OS at every commit, not
//!   synced (`transaction_sync=(enabled=true,method=none)`): survives a killed
//!   process, not a power loss.
//! - `power`: the log is fsync'ed at every commit
//!   (`transaction_sync=(enabled=true,method=fsync)`).
//!
//! Options (`wiredtiger.*`): `dir`, `memory` (the memory budget: the cache, unless
//! `cache` is given), `cache` (bytes, default 256M), `durability`,
//! `direct_io` (data files, default true), `log_os_cache` (`drop`, the default, or
//! `keep`: the log's pages in the OS page cache), `checkpoint_secs` (default 60),
//! `session_max` (default 1024), `log_file_max` (default 100M), `leaf_page_max` and
//! `internal_page_max` (default 4K), `eviction_threads_min`/`_max` (default 1/8, as
//! WiredTiger's), `write_tickets` (writes inside WiredTiger at once, default two per
//! CPU, 0 for no limit).
//!
//! Built without WiredTiger (no libwiredtiger-dev found by pkg-config), the crate
//! still compiles: [`AVAILABLE`] is false and [`open_engine`] says what is missing.
#![deny(unsafe_code)]

#[cfg(not(wt_missing))]
mod config;
#[cfg(not(wt_missing))]
mod counters;
#[cfg(not(wt_missing))]
mod engine;
#[cfg(not(wt_missing))]
mod error;
#[cfg(not(wt_missing))]
mod ffi;
#[cfg(not(wt_missing))]
mod info;
#[cfg(not(wt_missing))]
mod keylocks;
#[cfg(wt_missing)]
mod missing;
#[cfg(not(wt_missing))]
mod sessions;

#[cfg(not(wt_missing))]
pub use engine::WiredTigerEngine;

use kvapi::{Engine, Options, Result};
use std::sync::Arc;

/// Whether this build has WiredTiger.
pub const AVAILABLE: bool = cfg!(not(wt_missing));

/// Why WiredTiger is not in this build, if it is not.
pub fn unavailable_reason() -> Option<&'static str> {
    #[cfg(wt_missing)]
    return Some(missing::REASON);
    #[cfg(not(wt_missing))]
    None
}

/// Opens WiredTiger with the `wiredtiger.*` options.
pub fn open_engine(opts: &Options) -> Result<Arc<dyn Engine>> {
    #[cfg(wt_missing)]
    return missing::open_engine(opts);
    #[cfg(not(wt_missing))]
    Ok(Arc::new(WiredTigerEngine::open(opts)?))
}
