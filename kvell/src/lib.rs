//! The KVell engine (SOSP 2019): shared-nothing workers, size-class slab files of
//! unsorted items updated in place, a per-worker in-memory ordered index, a per-worker
//! page cache, free lists chained through on-disk tombstones, batched io_uring I/O
//! with a bounded queue depth, no commit log, recovery by scanning the slabs.
//!
//! Entry points: [`open_engine`] (the driver, from `kvell.*` options) and
//! [`Kvell::open`] (tests, from a [`Config`]). See kvell/DESIGN.md for the design and
//! its module map: a request goes `engine.rs` -> `route.rs` -> `worker/` (`run.rs`,
//! `keys.rs`, `read.rs` / `write.rs`, `units.rs`, `queue.rs`, `complete.rs`) -> `io/`.

mod budget;
mod cache;
mod clean;
mod config;
mod engine;
mod hint;
mod index;
pub mod io;
mod layout;
mod oneshot;
mod open;
mod poison;
mod recovery;
mod request;
mod route;
mod scan;
pub mod slab;
mod stats;
mod wake;
mod worker;

pub use config::{CacheSetup, Config, IoMode, LIMITS, Mode};
pub use engine::{Kvell, KvellAsync};
pub use io::sim::{Crash, SimDisk};

use kvapi::{Engine, Result};
use std::sync::Arc;

/// Opens the engine from `kvell.*` options (without the prefix).
pub fn open_engine(opts: &kvapi::Options) -> Result<Arc<dyn Engine>> {
    let cfg = Config::from_options(opts)?;
    Ok(Kvell::open(cfg)?)
}
