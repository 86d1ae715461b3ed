//! The WAL engine of kvell-testbed: DAOS's "metadata on SSD" design.
//!
//! The index lives in memory; small values live in an image of the meta file, paged
//! through a bounded cache and changed in place by transactions whose redo entries go
//! to a circular write-ahead log before they are acknowledged; large values go to a
//! data file, written in parallel with the WAL record (or before it, above
//! `data_first`). Checkpoints write dirty image pages back to the meta file and move
//! the log's replay start; open replays the log from there, reading pages on demand.
//! Format and write path: baselines/wal/DESIGN.md.
//!
//! A request's way: `engine` (the facade) hands a write to `write` (admission,
//! apply to the `heap` in the `image`, reserve in the `log`), which the committer in
//! `commit` writes to the WAL file (`files`, over the [`io`] seam); a read goes through
//! `read` to the `store`. `checkpoint` writes dirty pages back and reclaims the log;
//! `open` creates a database or loads it and runs `replay`. On-disk formats:
//! [`format`] (ids, WAL header), [`txn`] (transactions), `image` (meta pages and
//! records), `extent` (the data file's extents).
#![deny(unsafe_code)]

mod aio;
mod checkpoint;
mod commit;
mod config;
mod datawriter;
mod engine;
mod extent;
mod files;
pub mod format;
mod heap;
mod image;
pub mod io;
mod loader;
mod log;
mod open;
mod read;
mod replay;
mod stats;
mod store;
pub mod txn;
mod write;

pub use config::{Config, ENGINE_NAME, MAX_KEY, MAX_VALUE, Mode};
pub use engine::WalEngine;
pub use io::{FileVfs, MemVfs, Storage, Vfs};

use std::sync::Arc;

/// Opens the WAL engine with the `wal.*` properties (prefix removed): `dir`,
/// `log_size`, `durability` (fdatasync | dsync | none-process), `checkpoint_pct`,
/// `checkpoint_ms`, `checkpoint_dirty_pct`, `uring` (on | off), `log_depth` (batches in flight), `large_value`, `data_first`, `cache` (stated only), `memory` (the
/// budget the image and its index must fit in).
pub fn open_engine(opts: &kvapi::Options) -> kvapi::Result<Arc<dyn kvapi::Engine>> {
    let cfg = Config::from_options(opts)?;
    Ok(WalEngine::open(cfg)?)
}
