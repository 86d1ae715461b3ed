//! Per-worker page cache: a preallocated array of 4 KiB frames, an LRU list threaded
//! through the frames by index, and a lookup table from I/O unit to frame: a chained
//! hash table whose buckets and chain links are preallocated for the cache's fixed
//! number of frames, so it never grows and never rehashes (no stall). The cache never holds dirty data: a page enters it after a
//! read completes or after its write completed (write-through). I/O never targets a
//! frame (it uses its own buffers), so evicting a frame can never pull memory from
//! under an I/O in flight.

use crate::io::PAGE;
use crate::slab::Unit;

const NIL: u32 = u32::MAX;

/// A frame's bookkeeping in one 24-byte record (one cache line touched per frame
/// instead of one per array: a lookup plus an LRU move touched up to eight lines).
#[derive(Clone, Copy)]
struct Meta {
    key: Unit,
    prev: u32,
    next: u32,
    /// Next frame in the same bucket.
    chain: u32,
}

pub struct PageCache {
    frames: Vec<u8>,
    meta: Vec<Meta>,
    /// Frame at the head of each bucket's chain.
    buckets: Vec<u32>,
    mask: u64,
    used: u32,
    cap: u32,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
}

impl PageCache {
    /// A cache of `bytes` (at least 16 frames). Every frame is touched here, as the
    /// authors' code memsets its cache at start-up: the first touch of a page costs a
    /// fault and the kernel's zeroing (0.5 s per GiB on the development VM, 1.7 s
    /// with transparent huge pages, which mimalloc asks for), and left to the hot path
    /// it took 8% of all CPU during a load. The cost is paid at open, by a helper
    /// thread during recovery (`Kvell::open` reports it as `cache_setup_us`).
    pub fn new(bytes: u64) -> PageCache {
        let cap = (bytes / PAGE as u64).clamp(16, u32::MAX as u64 / 2) as u32;
        let nb = (cap as usize * 2).next_power_of_two();
        let empty = Meta {
            key: Unit(0),
            prev: NIL,
            next: NIL,
            chain: NIL,
        };
        let mut frames = vec![0u8; cap as usize * PAGE];
        // One write per page makes it resident; black_box keeps the writes of a
        // value the allocator already zeroed.
        for i in (0..frames.len()).step_by(PAGE) {
            frames[i] = std::hint::black_box(0);
        }
        PageCache {
            frames,
            meta: vec![empty; cap as usize],
            buckets: vec![NIL; nb],
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
            let m = &self.meta[f as usize];
            if m.key == unit {
                return Some(f);
            }
            f = m.chain;
        }
        None
    }

    fn map_insert(&mut self, unit: Unit, f: u32) {
        let b = self.bucket(unit);
        let m = &mut self.meta[f as usize];
        m.key = unit;
        m.chain = self.buckets[b];
        self.buckets[b] = f;
    }

    fn map_remove(&mut self, f: u32) {
        let b = self.bucket(self.meta[f as usize].key);
        let mut cur = self.buckets[b];
        let mut prev = NIL;
        while cur != NIL {
            if cur == f {
                let n = self.meta[f as usize].chain;
                if prev == NIL {
                    self.buckets[b] = n;
                } else {
                    self.meta[prev as usize].chain = n;
                }
                return;
            }
            prev = cur;
            cur = self.meta[cur as usize].chain;
        }
    }

    fn unlink(&mut self, f: u32) {
        let Meta {
            prev: p, next: n, ..
        } = self.meta[f as usize];
        if p != NIL {
            self.meta[p as usize].next = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.meta[n as usize].prev = p;
        } else {
            self.tail = p;
        }
    }

    fn push_front(&mut self, f: u32) {
        let head = self.head;
        let m = &mut self.meta[f as usize];
        m.prev = NIL;
        m.next = head;
        if head != NIL {
            self.meta[head as usize].prev = f;
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
