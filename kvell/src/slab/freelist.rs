//! Free slots of one slab. As in the paper: up to N most recently freed slots are
//! kept in memory, each the head of a chain continued through the `next` field of
//! on-disk tombstones. When the list is full, a new tombstone points at the oldest
//! in-memory head, which leaves memory. Allocating a head reads (from the page the
//! allocation rewrites anyway) the tombstone's `next` and keeps it as a new head.
//!
//! Two exceptions, both stated in DESIGN.md: slots found free by recovery are kept in
//! a plain in-memory list (their on-disk chain pointers may be stale, so they are
//! never followed), and large slabs keep every free slot in memory (a large slot is
//! at least 8 KiB, so 8 B of memory per free one is negligible and allocation needs
//! no read of the old tombstone).

use super::format::NO_NEXT;
use std::collections::VecDeque;

pub struct FreeList {
    heads: VecDeque<u64>,
    recovered: Vec<u64>,
    cap: usize,
    chained: bool,
}

/// A slot taken from a free list.
#[derive(Clone, Copy, Debug)]
pub struct Taken {
    pub slot: u64,
    /// The slot's tombstone continues a chain: read its `next` before overwriting.
    pub follow_chain: bool,
}

impl FreeList {
    pub fn new(cap: usize, chained: bool) -> FreeList {
        FreeList {
            heads: VecDeque::new(),
            recovered: Vec::new(),
            cap: cap.max(1),
            chained,
        }
    }

    /// Slots found free by recovery.
    pub fn set_recovered(&mut self, mut slots: Vec<u64>) {
        slots.sort_unstable_by(|a, b| b.cmp(a)); // pop the lowest first
        self.recovered = slots;
    }

    pub fn take(&mut self) -> Option<Taken> {
        if let Some(slot) = self.heads.pop_back() {
            return Some(Taken {
                slot,
                follow_chain: self.chained,
            });
        }
        self.recovered.pop().map(|slot| Taken {
            slot,
            follow_chain: false,
        })
    }

    /// The chain continues at `next` (read from the tombstone of a taken head).
    pub fn continue_chain(&mut self, next: u64) {
        if next != NO_NEXT {
            self.heads.push_back(next);
        }
    }

    /// The `next` to write in a new tombstone: the oldest head if the list is full
    /// (it leaves memory and lives on in the chain), else the end of chain.
    pub fn next_for_tombstone(&mut self) -> u64 {
        if self.chained && self.heads.len() >= self.cap {
            self.heads.pop_front().unwrap_or(NO_NEXT)
        } else {
            NO_NEXT
        }
    }

    /// Bytes of memory the list holds (its heads and recovered slots).
    pub fn bytes(&self) -> u64 {
        ((self.heads.capacity() + self.recovered.capacity()) * size_of::<u64>()) as u64
    }

    /// A tombstone was written at `slot`: it becomes the newest head.
    pub fn freed(&mut self, slot: u64) {
        self.heads.push_back(slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_when_full() {
        let mut f = FreeList::new(2, true);
        assert_eq!(f.next_for_tombstone(), NO_NEXT);
        f.freed(10);
        assert_eq!(f.next_for_tombstone(), NO_NEXT);
        f.freed(11);
        // full: the new tombstone (12) points at the oldest head (10)
        assert_eq!(f.next_for_tombstone(), 10);
        f.freed(12);
        let t = f.take().unwrap();
        assert_eq!(t.slot, 12);
        assert!(t.follow_chain);
        f.continue_chain(10);
        assert_eq!(f.take().unwrap().slot, 10);
        assert_eq!(f.take().unwrap().slot, 11);
        assert!(f.take().is_none());
    }
}
