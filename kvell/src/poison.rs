//! The engine's poison flag, shared by its workers: set by a failed write, sync, read
//! or file growth; from then on writes are refused with `Error::Poisoned` (reads go
//! on) until the engine is reopened, so nothing is acknowledged on top of a write
//! whose fate is unknown (redb's `PreviousIo`, fjall's `Poisoned`).

use kvapi::{Error, Result};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Why the engine is poisoned (the first reason), and a flag read on every write.
#[derive(Default)]
pub(crate) struct Poison(Mutex<Option<String>>, AtomicBool);

impl Poison {
    pub(crate) fn set(&self, why: String) {
        // The reason is a message only ever replaced whole (no engine state): a
        // panic elsewhere cannot leave it half-written, so it is taken over.
        let mut g = kvapi::sync::lock_handoff(&self.0);
        if g.is_none() {
            *g = Some(why);
        }
        self.1.store(true, Relaxed);
    }

    pub(crate) fn check(&self) -> Result<()> {
        if !self.1.load(Relaxed) {
            return Ok(());
        }
        let g = kvapi::sync::lock_handoff(&self.0);
        Err(Error::Poisoned(g.clone().unwrap_or_default()))
    }
}
