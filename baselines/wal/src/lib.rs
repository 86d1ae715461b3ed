//! The WAL engine of kvell-testbed: DAOS's "metadata on SSD" design.
//!
//! The index and small values live in a memory-resident image of the meta file,
//! changed in place by transactions whose redo entries go to a circular write-ahead
//! log before they are acknowledged; large values go to a data file, written in
//! parallel with the WAL record (or before it, above `data_first`). Checkpoints write
//! dirty image pages back to the meta file and move the log's replay start; open loads
//! the meta file and replays the log from there. Format and write path:
//! baselines/wal/DESIGN.md.
//!
//! Module map: [`io`] (the I/O seam and the crash-test file system), `format` (ids,
//! WAL header), [`txn`] (transaction encoding), `image` (meta image, slab heap,
//! ordered index), `extent` (data file allocator), `wal` (reserve/commit, committer),
//! `replay`, `engine` (write path, checkpoint, close).
#![deny(unsafe_code)]

mod aio;
mod engine;
mod extent;
pub mod format;
mod image;
pub mod io;
mod replay;
pub mod txn;
mod wal;

pub use engine::{Config, ENGINE_NAME, MAX_KEY, MAX_VALUE, Mode, WalEngine};
pub use io::{FileVfs, MemVfs, Storage, Vfs};

use std::sync::Arc;

/// Opens the WAL engine with the `wal.*` properties (prefix removed): `dir`,
/// `log_size`, `durability` (fdatasync | dsync | none-process), `checkpoint_pct`,
/// `checkpoint_ms`, `large_value`, `data_first`, `cache`.
pub fn open_engine(opts: &kvapi::Options) -> kvapi::Result<Arc<dyn kvapi::Engine>> {
    let cfg = Config::from_options(opts)?;
    Ok(WalEngine::open(cfg)?)
}
