//! A slab file of one worker and size class, and its growth: a new item takes a free
//! slot (the free list) or is appended, the file growing by `fallocate` as it fills
//! (doubling, at least 1 MiB and one slot, at most +1 GiB per step), then `fsync` so
//! the new size is durable, then the clean-shutdown record says the new length,
//! before anything is written there. Only these lengths are ones a slab can have
//! (`is_growth_len`): recovery takes any other as damage or an interrupted growth.

use super::class::{LARGE_PAGES, Loc, SMALL, is_large, unit_len};
use super::freelist::FreeList;
use crate::clean::CleanRecord;
use crate::io::{Backend, FileId, PAGE};
use crate::poison::Poison;
use kvapi::{Error, Result};
use std::path::PathBuf;

/// Largest step of a growth.
const MAX_STEP: u64 = 1 << 30;
/// Smallest slab file.
const MIN_LEN: u64 = 1 << 20;

/// The length a slab grows to from `len` when a slot ending at `end` does not fit.
fn grow_to(len: u64, end: u64) -> u64 {
    let grown = (len.saturating_mul(2)).min(len + MAX_STEP);
    end.max(grown).max(MIN_LEN).div_ceil(PAGE as u64) * PAGE as u64
}

/// The length a slab of `class` at `len` grows to for a slot ending at `end`: the
/// first length of the growth sequence (`growth_floor`) past both, so that a slab at
/// a length growth never gives (accepted by recovery when nothing lies past its
/// floor) is back in the sequence after its next growth. From a length of the
/// sequence it is one step, `grow_to(len, end)`.
fn next_growth(len: u64, end: u64, class: usize) -> u64 {
    let ulen = unit_len(class) as u64;
    let mut l = 0;
    while l < end || l <= len {
        l = grow_to(l, l + ulen);
    }
    l
}

/// The lengths growth gives a slab of `class`, from 0: 0, then the first growth
/// (1 MiB, or one slot if larger), doubling to 1 GiB, then 1 GiB more at a time.
/// Returns the largest such length <= `len` and whether it is `len` itself.
pub(crate) fn growth_floor(len: u64, class: usize) -> (u64, bool) {
    let ulen = unit_len(class) as u64;
    let mut l = 0;
    loop {
        let next = grow_to(l, l + ulen);
        if next > len {
            return (l, l == len);
        }
        l = next;
    }
}

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
    /// (growing the file: the growth synced, then `clean` records the new length). A
    /// failed growth poisons the engine.
    pub(crate) fn allocate(
        &mut self,
        io: &mut dyn Backend,
        poison: &Poison,
        clean: &mut CleanRecord,
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
            let new_len = next_growth(self.len, end, class);
            let r = io
                .set_len(self.file, new_len)
                .and_then(|()| io.sync(self.file))
                .map_err(|e| Error::io(format!("growing {}", self.path.display()), e))
                .and_then(|()| clean.grown(io, class, new_len));
            if let Err(e) = r {
                self.next_slot -= 1;
                poison.set(e.to_string());
                return Err(e);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_lengths() {
        let small = 0; // 4 KiB units
        let mib = 1u64 << 20;
        assert_eq!(growth_floor(0, small), (0, true));
        assert_eq!(growth_floor(mib, small), (mib, true));
        assert_eq!(growth_floor(mib + 4096, small), (mib, false));
        assert_eq!(growth_floor(3 * mib, small), (2 * mib, false));
        assert_eq!(growth_floor(512 * mib, small), (512 * mib, true));
        assert_eq!(growth_floor(3 << 30, small), (3 << 30, true));
        assert_eq!(growth_floor((3 << 30) + mib, small), (3 << 30, false));
        // the largest class: slots of 16 MiB, so its first growth is one slot
        let big = NCLASS_LAST;
        assert_eq!(growth_floor(mib, big), (0, false));
        assert_eq!(growth_floor(16 * mib, big), (16 * mib, true));
        assert_eq!(growth_floor(48 * mib, big), (32 * mib, false));
    }

    #[test]
    fn growth_from_a_length_of_the_sequence_is_one_step_and_any_other_rejoins_it() {
        let mib = 1u64 << 20;
        for class in [0, 3, NCLASS_LAST - 1, NCLASS_LAST] {
            let ulen = unit_len(class) as u64;
            let mut len = 0;
            for _ in 0..14 {
                let next = next_growth(len, len + ulen, class);
                assert_eq!(next, grow_to(len, len + ulen), "class {class} from {len}");
                assert_eq!(growth_floor(next, class), (next, true));
                len = next;
            }
        }
        // 3 pages (a slab extended by hand): the next growth is 1 MiB
        assert_eq!(next_growth(3 * 4096, 4 * 4096, 0), mib);
        assert_eq!(next_growth(mib + 4096, mib + 8192, 0), 2 * mib);
    }

    const NCLASS_LAST: usize = SMALL.len() + LARGE_PAGES.len() - 1;
}
