//! Per-worker page cache: a preallocated array of 4 KiB frames, an LRU list threaded
//! through the frames by index, and a lookup table from I/O unit to frame: a chained
//! hash table whose buckets and chain links are preallocated for the cache's fixed
//! number of frames, so it never grows and never rehashes (no stall). The cache never holds dirty data: a page enters it after a
//! read completes or after its write completed (write-through). I/O never targets a
//! frame (it uses its own buffers), so evicting a frame can never pull memory from
//! under an I/O in flight.
#![deny(unsafe_code)]

use crate::io::PAGE;
use crate::slab::Unit;

const NIL: u32 = u32::MAX;

pub struct PageCache {
    frames: Vec<u8>,
    keys: Vec<Unit>,
    prev: Vec<u32>,
    next: Vec<u32>,
    /// Frame at the head of each bucket's chain.
    buckets: Vec<u32>,
    /// Next frame in the same bucket.
    chain: Vec<u32>,
    mask: u64,
    used: u32,
    cap: u32,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
}

impl PageCache {
    /// A cache of `bytes` (at least 16 frames). The frame memory is zeroed lazily by
    /// the allocator (calloc), so an unused cache costs no resident memory.
    pub fn new(bytes: u64) -> PageCache {
        let cap = (bytes / PAGE as u64).clamp(16, u32::MAX as u64 / 2) as u32;
        let nb = (cap as usize * 2).next_power_of_two();
        PageCache {
            frames: vec![0u8; cap as usize * PAGE],
            keys: vec![Unit(0); cap as usize],
            prev: vec![NIL; cap as usize],
            next: vec![NIL; cap as usize],
            buckets: vec![NIL; nb],
            chain: vec![NIL; cap as usize],
            mask: nb as u64 - 1,
            used: 0,
            cap,
            head: NIL,
            tail: NIL,
        }
    }

    fn bucket(&self, unit: Unit) -> usize {
        (unit.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20 & self.mask) as usize
    }

    fn find(&self, unit: Unit) -> Option<u32> {
        let mut f = self.buckets[self.bucket(unit)];
        while f != NIL {
            if self.keys[f as usize] == unit {
                return Some(f);
            }
            f = self.chain[f as usize];
        }
        None
    }

    fn map_insert(&mut self, unit: Unit, f: u32) {
        let b = self.bucket(unit);
        self.keys[f as usize] = unit;
        self.chain[f as usize] = self.buckets[b];
        self.buckets[b] = f;
    }

    fn map_remove(&mut self, f: u32) {
        let b = self.bucket(self.keys[f as usize]);
        let mut cur = self.buckets[b];
        let mut prev = NIL;
        while cur != NIL {
            if cur == f {
                let n = self.chain[f as usize];
                if prev == NIL {
                    self.buckets[b] = n;
                } else {
                    self.chain[prev as usize] = n;
                }
                return;
            }
            prev = cur;
            cur = self.chain[cur as usize];
        }
    }

    fn unlink(&mut self, f: u32) {
        let (p, n) = (self.prev[f as usize], self.next[f as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
    }

    fn push_front(&mut self, f: u32) {
        self.prev[f as usize] = NIL;
        self.next[f as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = f;
        }
        self.head = f;
        if self.tail == NIL {
            self.tail = f;
        }
    }

    fn frame(&self, f: u32) -> &[u8] {
        &self.frames[f as usize * PAGE..(f as usize + 1) * PAGE]
    }

    /// The cached page, marked most recently used.
    pub fn get(&mut self, unit: Unit) -> Option<&[u8]> {
        let f = self.find(unit)?;
        if self.head != f {
            self.unlink(f);
            self.push_front(f);
        }
        Some(self.frame(f))
    }

    /// Stores a page (after its read or write completed), evicting the least
    /// recently used page if full.
    pub fn put(&mut self, unit: Unit, page: &[u8]) {
        let f = match self.find(unit) {
            Some(f) => {
                self.unlink(f);
                f
            }
            None => {
                let f = if self.used < self.cap {
                    self.used += 1;
                    self.used - 1
                } else {
                    let victim = self.tail;
                    self.unlink(victim);
                    self.map_remove(victim);
                    victim
                };
                self.map_insert(unit, f);
                f
            }
        };
        self.frames[f as usize * PAGE..(f as usize + 1) * PAGE].copy_from_slice(&page[..PAGE]);
        self.push_front(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_oldest() {
        let mut c = PageCache::new(16 * PAGE as u64);
        let page = |b: u8| vec![b; PAGE];
        for i in 0..16u64 {
            c.put(Unit(i), &page(i as u8));
        }
        assert_eq!(c.get(Unit(0)).unwrap()[0], 0); // 0 becomes most recent
        c.put(Unit(100), &page(100));
        assert!(c.get(Unit(1)).is_none(), "1 was least recently used");
        assert!(c.get(Unit(0)).is_some());
        assert_eq!(c.get(Unit(100)).unwrap()[5], 100);
        c.put(Unit(0), &page(9));
        assert_eq!(c.get(Unit(0)).unwrap()[0], 9);
        // churn through many more units than frames
        for i in 0..10_000u64 {
            c.put(Unit(((i % 3) << 58) | (i * 7)), &page(i as u8));
            assert_eq!(c.get(Unit(((i % 3) << 58) | (i * 7))).unwrap()[0], i as u8);
        }
        let present = (0..10_000u64)
            .filter(|&i| c.get(Unit(((i % 3) << 58) | (i * 7))).is_some())
            .count();
        assert_eq!(present, 16);
    }
}
