//! The committer thread: takes every queued transaction, packed into whole blocks
//! (`Log::next_batch`), writes them with one or two
//! writes (two when the batch wraps past the end of the log), syncs once, and marks
//! them written (group commit). While it syncs, new transactions queue up for the
//! next batch. Its handle is narrow: the log's queue and progress, and the WAL file.

use crate::files::WalFile;
use crate::format::{BLOCK, UNITS_PER_BLOCK};
use crate::log::Log;

/// Runs until the log stops or is poisoned. A failed write or sync poisons the
/// engine; a poisoned log lock stops it (every caller then meets the poisoned lock).
pub fn committer(log: &Log, wal: &WalFile) {
    while let Ok(Some((start, batch))) = log.next_batch() {
        match wal.write_blocks(start / UNITS_PER_BLOCK, &batch) {
            Ok(()) => {
                let blocks = (batch.len() / BLOCK) as u64;
                if log.written(start + blocks * UNITS_PER_BLOCK).is_err() {
                    return;
                }
            }
            Err(e) => {
                log.write_failed(format!("WAL write failed: {e}"));
                return;
            }
        }
    }
}
