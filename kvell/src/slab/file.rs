//! A slab file of one worker and size class, and its growth: a new item takes a free
//! slot (the free list) or is appended, the file growing by `fallocate` as it fills
//! (doubling, at least 1 MiB, at most +1 GiB per step; followed by `fsync` in flush
//! mode so the new size is durable before anything is written there).

use super::class::{LARGE_PAGES, Loc, SMALL, is_large, unit_len};
use super::freelist::FreeList;
use crate::io::{Backend, FileId, PAGE};
use crate::poison::Poison;
use kvapi::{Error, Result};
use std::path::PathBuf;

/// Name of a slab file.
pub fn file_name(worker: usize, class: usize) -> String {
    if is_large(class) {
        format!(
            "w{worker:03}-large-{}p.slab",
            LARGE_PAGES[class - SMALL.len()]
        )
    } else {
        format!("w{worker:03}-{}.slab", SMALL[class])
    }
}

/// One slab file of the worker.
pub(crate) struct Slab {
    pub(crate) file: FileId,
    pub(crate) path: PathBuf,
    pub(crate) len: u64,
    /// Next slot to append at.
    pub(crate) next_slot: u64,
    pub(crate) free: FreeList,
}

/// A slot taken for a new item: where, whether its unit is fresh (nothing on disk
/// worth reading) and whether it continues the free list's on-disk chain.
#[derive(Clone, Copy)]
pub(crate) struct Allocated {
    pub(crate) loc: Loc,
    pub(crate) fresh: bool,
    pub(crate) follow_chain: bool,
}

impl Slab {
    /// A slot for a new item of `class` in this slab: a free one, or appended
    /// (growing the file). A failed growth poisons the engine.
    pub(crate) fn allocate(
        &mut self,
        io: &mut dyn Backend,
        poison: &Poison,
        dsync: bool,
        class: usize,
    ) -> Result<Allocated> {
        if let Some(t) = self.free.take() {
            return Ok(Allocated {
                loc: Loc::new(class, t.slot),
                fresh: false,
                follow_chain: t.follow_chain,
            });
        }
        let slot = self.next_slot;
        self.next_slot += 1;
        let loc = Loc::new(class, slot);
        let unit = loc.unit();
        let end = unit.file_offset() + unit_len(class) as u64;
        if end > self.len {
            let grown = (self.len.saturating_mul(2)).min(self.len + (1 << 30));
            let new_len = end.max(grown).max(1 << 20).div_ceil(PAGE as u64) * PAGE as u64;
            let r = io
                .set_len(self.file, new_len)
                .and_then(|()| if dsync { io.sync(self.file) } else { Ok(()) });
            if let Err(e) = r {
                self.next_slot -= 1;
                let m = format!("growing {}: {e}", self.path.display());
                poison.set(m.clone());
                return Err(Error::io(m, e));
            }
            self.len = new_len;
        }
        Ok(Allocated {
            loc,
            fresh: is_large(class) || loc.offset_in_unit() == 0,
            follow_chain: false,
        })
    }
}
