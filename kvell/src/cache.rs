//! Per-worker page cache: a preallocated array of 4 KiB frames, an LRU list threaded
//! through the frames by index, and a lookup table from I/O unit to frame: a chained
//! hash table whose buckets and chain links are preallocated for the cache's fixed
//! number of frames, so it never grows and never rehashes (no stall). The cache never
//! holds dirty data: a page enters it after a read completes or after its write
//! completed (write-through). I/O never targets a frame (it uses its own buffers), so
//! evicting a frame can never pull memory from under an I/O in flight.
//!
//! Under a memory budget (`kvell.memory`) the cache has a capacity (its frames,
//! allocated once) and a limit, the frames it may hold now, which the worker lowers
//! as its index grows ([`PageCache::set_limit`]): the least recently used pages are
//! evicted and their frames' memory given back to the OS (`io::release`), and those
//! frames are not used again until the limit rises. Without a budget the limit is
//! the capacity and never changes.

use crate::hint::prefetch;
use crate::io::{PAGE, PageMem};
use crate::slab::Unit;
use kvapi::{Error, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

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

/// Bookkeeping bytes per frame at most: its `Meta`, up to four bucket heads (the
/// buckets are the next power of two above two per frame) and its place in the
/// list of released frames.
pub const META_PER_FRAME: u64 = size_of::<Meta>() as u64 + 4 * 4 + 4;

pub struct PageCache {
    /// The frames: a mapping of their own, so that a frame's memory can be given
    /// back to the OS and what is resident is exactly what was touched.
    frames: PageMem,
    meta: Vec<Meta>,
    /// Frame at the head of each bucket's chain.
    buckets: Vec<u32>,
    mask: u64,
    /// Frames handed out so far: each frame below is in the LRU list (holding a
    /// page), in `released` or in `idle`.
    used: u32,
    cap: u32,
    /// Frames that may hold pages now (`cap` without a budget).
    limit: u32,
    /// Frames holding a page.
    live: u32,
    /// Frames `used..touched` are resident though not handed out yet (touched at
    /// open).
    touched: u32,
    /// Evicted frames whose memory went back to the OS, taken again (first) when the
    /// limit rises.
    released: Vec<u32>,
    /// Evicted frames whose release failed: still resident, taken before `released`.
    idle: Vec<u32>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    /// The second step of a cache set up in two, under way (`fill_beside`).
    fill: Option<Fill>,
    /// The limit last asked for while a fill is under way: the limit applied stays
    /// at most `touched` until it has ended (`settle`).
    wanted: u32,
}

/// Frames `from..to` being made resident by a helper thread, so that the open does
/// not wait for them (`fill_beside`). The helper counts the frames it has made
/// resident so far (`made`, from `from`, one at a time), which the cache takes as
/// they come (`settle`); it returns the microseconds it took (a helper that
/// panicked returns nothing, and the frames past those it counted stay untouched).
///
/// A limit that falls meanwhile stops it: it may make frames resident only below
/// the lowest limit asked for since it began (`bound`, told to it through `end`),
/// and what it made past that is given back at once (up to `gone`). It used to go on
/// to `to` and leave the frames past the limit for its end: in the idle scheduling
/// class, on busy cores, it ended long after the limit had fallen, and 200K-item
/// loads into a 24 MiB budget (the `memory_budget` test) held up to 4.6 MiB of frames
/// the cache did not count, at the load's end.
struct Fill {
    from: u32,
    to: u32,
    made: Arc<AtomicUsize>,
    /// Frames from `from` the helper may make resident (`Populator::end`).
    end: Arc<AtomicUsize>,
    /// The same, as last told to the helper: it only falls.
    bound: u32,
    /// Frames below this one that the helper made past `from + bound` have been
    /// given back.
    gone: u32,
    thread: JoinHandle<u64>,
}

impl Fill {
    /// The frame after the last one the helper has made resident.
    fn reach(&self) -> u32 {
        reach(self.from, self.to, &self.made)
    }
}

/// The frame after the last one a helper filling `from..to` has made resident, by its
/// count `made` (also read once the fill is taken apart to join its thread).
fn reach(from: u32, to: u32, made: &AtomicUsize) -> u32 {
    from + made.load(Ordering::Acquire).min((to - from) as usize) as u32
}

impl PageCache {
    /// A cache of `bytes` (at least 16 frames). Every frame is touched here, as the
    /// authors' code memsets its cache at start-up: the first touch of a page costs a
    /// fault and the kernel's zeroing (0.5 s per GiB on the development VM, 1.7 s
    /// with transparent huge pages, which mimalloc asks for), and left to the hot path
    /// it took 8% of all CPU during a load. The cost is paid at open, by a helper
    /// thread during recovery (`Kvell::open` reports it as `cache_setup_us`).
    pub fn new(bytes: u64) -> Result<PageCache> {
        let cap = (bytes / PAGE as u64).clamp(16, u32::MAX as u64 / 2) as u32;
        PageCache::alloc(cap, cap, true)
    }

    /// As [`PageCache::new`], but no frame is touched yet: `fill_beside` makes them
    /// resident after the open (`kvell.cache_setup=after`).
    pub fn untouched(bytes: u64) -> Result<PageCache> {
        let cap = (bytes / PAGE as u64).clamp(16, u32::MAX as u64 / 2) as u32;
        PageCache::alloc(cap, 0, true)
    }

    /// A cache of `cap` frames (at least 16) under a memory budget, which may hold
    /// `limit` of them now: frames up to the limit are touched as in
    /// [`PageCache::new`], the others stay out of memory. Its frames are 4 KiB pages
    /// (no transparent huge pages, which would make a 2 MiB page resident for one
    /// frame and could not be released frame by frame), and its list of released
    /// frames is allocated here, so a falling limit never allocates.
    pub fn with_limit(cap: u32, limit: u32) -> Result<PageCache> {
        let mut c = PageCache::alloc(cap, limit, false)?;
        c.released.reserve_exact(c.cap as usize);
        c.set_limit(limit);
        Ok(c)
    }

    /// `cap` frames (at least 16), the first `touch` of them touched; `huge`: the
    /// kernel may back them with transparent huge pages.
    fn alloc(cap: u32, touch: u32, huge: bool) -> Result<PageCache> {
        let cap = cap.clamp(16, u32::MAX / 2);
        let nb = (cap as usize * 2).next_power_of_two();
        let empty = Meta {
            key: Unit(0),
            prev: NIL,
            next: NIL,
            chain: NIL,
        };
        let frames = PageMem::new(cap as usize, huge)
            .map_err(|e| Error::io("mapping the page cache's frames", e))?;
        let mut c = PageCache {
            frames,
            meta: vec![empty; cap as usize],
            buckets: vec![NIL; nb],
            mask: nb as u64 - 1,
            used: 0,
            cap,
            limit: cap,
            live: 0,
            touched: 0,
            released: Vec::new(),
            idle: Vec::new(),
            head: NIL,
            tail: NIL,
            fill: None,
            wanted: cap,
        };
        c.touch_to(touch.min(cap))?;
        Ok(c)
    }

    /// Makes frames `touched..n` resident. Frames are handed out in order (`used` of
    /// them so far, never past `touched` before it rises), so those have never held
    /// a page.
    fn touch_to(&mut self, n: u32) -> Result<()> {
        if n > self.touched {
            self.frames
                .populate(self.touched as usize..n as usize)
                .map_err(|e| Error::io("making the page cache's frames resident", e))?;
            self.touched = n;
        }
        Ok(())
    }

    /// Whether a helper is still making frames resident (`fill_beside`) that
    /// `settle` has not taken in.
    pub fn filling(&self) -> bool {
        self.fill.is_some()
    }

    /// Frames the cache may hold now.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Frames allocated.
    pub fn capacity(&self) -> u32 {
        self.cap
    }

    /// Bytes of frames resident in memory: those holding a page, those touched at
    /// open and not used yet, and evicted ones whose release failed.
    pub fn resident_bytes(&self) -> u64 {
        let spare = self.touched.saturating_sub(self.used) as u64;
        // A fill's frames made resident and not taken yet (below its bound), and
        // those past its bound not given back yet.
        let filling = self.fill.as_ref().map_or(0, |f| {
            let (reach, top) = (f.reach(), f.from + f.bound);
            reach.min(top).saturating_sub(self.touched.max(f.from))
                + reach.saturating_sub(f.gone.max(top).max(self.touched))
        });
        (self.live as u64 + spare + self.idle.len() as u64 + filling as u64) * PAGE as u64
    }

    /// Bytes of the cache's bookkeeping (frame records, buckets, released list).
    pub fn meta_bytes(&self) -> u64 {
        (self.meta.capacity() * size_of::<Meta>()
            + (self.buckets.capacity() + self.released.capacity() + self.idle.capacity()) * 4)
            as u64
    }

    /// Gives the memory of frames `from..from + n` back to the OS.
    fn release(&mut self, from: u32, n: u32) -> bool {
        let from = from as usize;
        self.frames.release(from..from + n as usize).is_ok()
    }

    /// Sets the frames the cache may hold: when that is fewer than it holds, the
    /// frames touched and never used are given back first, then the least recently
    /// used pages are evicted and their frames given back (one `madvise` each).
    pub fn set_limit(&mut self, limit: u32) {
        let mut limit = limit.min(self.cap);
        if let Some(f) = self.fill.as_mut() {
            // Frames past `touched` are the helper's until it has ended, and it may
            // make none past this limit from now on.
            self.wanted = limit;
            let bound = limit.saturating_sub(f.from).min(f.bound);
            if bound < f.bound {
                f.bound = bound;
                f.end.store(bound as usize, Ordering::Release);
            }
            limit = limit.min(self.touched);
        }
        self.limit = limit;
        let spare = self.touched.saturating_sub(self.used);
        let over = (self.live + spare).saturating_sub(limit).min(spare);
        if over > 0 && self.release(self.touched - over, over) {
            self.touched -= over;
        }
        while self.live > limit {
            let victim = self.tail;
            self.unlink(victim);
            self.map_remove(victim);
            self.live -= 1;
            if self.release(victim, 1) {
                self.released.push(victim);
            } else {
                self.idle.push(victim);
            }
        }
        self.give_back_overshoot();
    }

    /// Gives back what a fill under way has made resident past its bound (frames no
    /// limit since has let the cache hold), not given back yet.
    fn give_back_overshoot(&mut self) {
        let Some(f) = self.fill.as_ref() else {
            return;
        };
        let reach = f.reach();
        let from = f.gone.max(f.from + f.bound).max(self.touched);
        if reach > from
            && self.release(from, reach - from)
            && let Some(f) = self.fill.as_mut()
        {
            f.gone = reach;
        }
    }

    /// Sets the limit to `limit` (at most the capacity), making the frames up to it
    /// resident now, as at open, where a rise of the limit ([`PageCache::set_limit`])
    /// leaves them to their first use: a cache set up in two steps, part of it
    /// beside recovery and the rest once the index is known (`open.rs`).
    pub fn fill_to(&mut self, limit: u32) -> Result<()> {
        self.settle(true);
        let limit = limit.min(self.cap);
        self.touch_to(limit)?;
        self.set_limit(limit);
        Ok(())
    }

    /// As [`PageCache::fill_to`], but a rise is made resident by a helper thread
    /// while the worker serves: until it has ended the cache holds at most the frames
    /// touched so far (`settle`, at each of the worker's turns, takes those the helper
    /// has made resident, and once it has ended applies the limit
    /// last asked for). A cache that opens empty loses nothing by this: it fills from
    /// reads, far slower than the kernel makes frames resident. The open used to wait
    /// for this step: 37-48 ms of each open of 4M items, and 410-490 ms where the
    /// VM's host had taken back the memory recovery had just freed (first touches at
    /// 0.4 GB/s, 2026-12-05), a tenth of the open after the scan. A fall is applied at
    /// once.
    pub fn fill_beside(&mut self, limit: u32) -> Result<()> {
        self.settle(true);
        let limit = limit.min(self.cap);
        if limit <= self.touched {
            self.set_limit(limit);
            return Ok(());
        }
        let pop = self
            .frames
            .populator(self.touched as usize..limit as usize)
            .map_err(|e| Error::io("making the page cache's frames resident", e))?;
        let (made, end) = (pop.made(), pop.end());
        let spawned = std::thread::Builder::new()
            .name("kvell-cache-fill".into())
            .spawn(move || {
                idle_priority();
                let t = std::time::Instant::now();
                pop.run();
                t.elapsed().as_micros() as u64
            });
        let Ok(thread) = spawned else {
            return self.fill_to(limit);
        };
        self.fill = Some(Fill {
            from: self.touched,
            to: limit,
            made,
            end,
            bound: limit - self.touched,
            gone: self.touched,
            thread,
        });
        self.set_limit(limit);
        Ok(())
    }

    /// Ends a fill under way (`fill_beside`) if its helper has ended, or, with
    /// `wait`, once it has: the frames it made resident count as touched, and the
    /// limit last asked for applies (giving back what is over it). Returns the
    /// helper's microseconds when it ends one. Without `wait`, while the helper is
    /// still at work, the frames it has made resident so far count as touched (up
    /// to the limit last asked for) and the cache may hold them.
    pub fn settle(&mut self, wait: bool) -> Option<u64> {
        let f = self.fill.as_ref()?;
        if !wait && !f.thread.is_finished() {
            // The frames the helper has made resident so far are the cache's now
            // (the helper only goes on past them), up to its bound (the lowest
            // limit asked for since it began); any past that go back at once
            // (`set_limit`).
            let made = f.reach().min(f.from + f.bound);
            if made > self.touched {
                self.touched = made;
                self.set_limit(self.wanted);
            } else {
                self.give_back_overshoot();
            }
            return None;
        }
        let Fill {
            from,
            to,
            made,
            bound,
            gone,
            thread,
            ..
        } = self.fill.take()?;
        let joined = thread.join();
        // Once the helper has ended, it has counted every frame it made resident:
        // those up to its bound are the cache's, and any past it (at most one,
        // where the bound fell as the helper reached it) go back; if that fails
        // they count as touched, and the limit gives them back as spare below.
        let reach = reach(from, to, &made);
        self.touched = self.touched.max(reach.min(from + bound));
        let back = gone.max(self.touched);
        if reach > back && !self.release(back, reach - back) {
            self.touched = reach;
        }
        self.set_limit(self.wanted);
        Some(joined.unwrap_or(0))
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

    /// Frame `f`'s page (a slice of that page only: a helper may be making other
    /// frames resident, `fill_beside`).
    fn frame(&self, f: u32) -> &[u8] {
        self.frames.page(f as usize)
    }

    /// Asks the CPU for the lookup table's line of `unit` ahead of a `get`, the first
    /// of two steps: a worker taking in a batch of gets (a scan's reads) looks them up
    /// with their misses overlapping, not one after another (on YCSB E, `get` took 7%
    /// of the process's CPU, most of it waiting for these two lines; kvell/DESIGN.md,
    /// Scans).
    pub fn prefetch_bucket(&self, unit: Unit) {
        prefetch(&self.buckets[self.bucket(unit)]);
    }

    /// The second step: the record of the first frame in `unit`'s bucket (which
    /// holds the unit when it is cached, as chains are short).
    pub fn prefetch_frame(&self, unit: Unit) {
        let f = self.buckets[self.bucket(unit)];
        if f != NIL {
            prefetch(&self.meta[f as usize]);
        }
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
    /// recently used page if the cache holds its limit. (Nothing is stored under a
    /// limit of 0; a worker keeps at least `budget::MIN_FRAMES`, since a request
    /// waiting for a read takes the page from the cache.)
    pub fn put(&mut self, unit: Unit, page: &[u8]) {
        let f = match self.find(unit) {
            Some(f) => {
                self.unlink(f);
                f
            }
            None => {
                let f = if self.live < self.limit {
                    self.live += 1;
                    // Resident frames first: idle ones, then those touched at open;
                    // then released ones, then fresh ones (`used` counts the live,
                    // idle and released frames, and live < limit <= cap).
                    if let Some(f) = self.idle.pop() {
                        f
                    } else if self.used < self.touched {
                        self.used += 1;
                        self.used - 1
                    } else if let Some(f) = self.released.pop() {
                        f
                    } else {
                        debug_assert!(self.used < self.cap);
                        self.used += 1;
                        self.used - 1
                    }
                } else if self.live > 0 {
                    let victim = self.tail;
                    self.unlink(victim);
                    self.map_remove(victim);
                    victim
                } else {
                    return;
                };
                self.map_insert(unit, f);
                f
            }
        };
        self.frames
            .page_mut(f as usize)
            .copy_from_slice(&page[..PAGE]);
        self.push_front(f);
    }
}

/// Puts the calling thread in the idle scheduling class (`SCHED_IDLE`): it runs
/// only on a core nothing else wants, so that the second step of one worker's cache
/// (`fill_beside`) does not slow another worker still building its index, nor the
/// first requests. Refused, it changes nothing.
#[cfg_attr(
    target_os = "linux",
    expect(unsafe_code, reason = "sched_setscheduler is a libc call")
)]
fn idle_priority() {
    #[cfg(target_os = "linux")]
    {
        let p = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread; the call reads `p` and changes only
        // that thread's scheduling class.
        let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) };
    }
}

impl Drop for PageCache {
    fn drop(&mut self) {
        // The helper works on the frames' mapping: it ends before the mapping goes.
        if let Some(f) = self.fill.take() {
            let _ = f.thread.join();
        }
    }
}

#[cfg(test)]
mod tests;
