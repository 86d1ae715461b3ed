//! The driver's memory governor: it holds an engine whose cache can be resized to its
//! budget as measured, not only as its cache counts it.
//!
//! Why: an engine's cache accounting counts the bytes it asked for, not what the
//! process holds for them. RocksDB at 64 requests in flight (its 64 pool threads
//! allocating blocks through glibc's per-thread arenas; YCSB A, 500K x 1 KiB, a budget
//! of 162.8 MiB) had a live C++ heap of 152 MiB (heaptrack) inside a resident memory
//! that grew by 218 MiB: blocks of about 4 KiB evicted in LRU order leave holes the
//! allocator keeps, and jemalloc and mimalloc held as much as glibc did
//! (results/memory-budget/measurements.md). Sizing the cache by a fixed factor would
//! guess at a ratio that changes with the workload and the item size; the governor
//! measures instead, each second, the figure the budget is checked against (resident
//! memory less the driver's own, plus the page cache of the engine's files) and moves
//! the cache's capacity to keep it at 92% of the budget (the samples are a second
//! apart, and compactions and the WAL's page cache come and go between them): the
//! engine pays for its allocator's overhead with cache, as a deployment with a memory
//! limit would.
//!
//! Resident memory follows the allocator's high-water mark, not the cache: glibc kept
//! 30 MiB resident for 8 MiB of live C++ heap once RocksDB's cache had filled and been
//! shrunk (heaptrack, YCSB C, 100K x 1 KiB, a budget of 32.6 MiB). So the governor
//! approaches the budget from below: the engine starts with half the capacity its own
//! rule gives, and the cache grows only while the measured memory leaves room.
//!
//! The rule, each sample: above 96% of the budget, shrink by the excess over 92% (at once:
//! the next seconds' allocations must find room); since resident memory falls only as
//! freed holes are reused or returned, shrink again only if the memory kept growing
//! since the last shrink or five samples went by; below 83% of the budget, with the
//! cache full (its gauges within a tenth of the capacity) and two samples after the
//! last growth, grow by half the gap to 92%, never beyond the capacity the engine
//! opened with. The capacity never goes below a
//! sixteenth of that. After a shrink, glibc's free memory is handed back
//! (`malloc_trim`), since RocksDB's and WiredTiger's C and C++ code allocate with it.

/// The governor's state for one engine, over the whole run (its phases share it).
#[derive(Clone, Debug)]
pub struct Governor {
    budget: u64,
    open: u64,
    floor: u64,
    cap: u64,
    samples: u32,
    /// The used memory and the sample number of the last shrink.
    shrunk: Option<(u64, u32)>,
    /// The sample number of the last growth.
    grown: u32,
    adjustments: u32,
    phase_start: (u64, u32),
    phase_min: u64,
}

impl Governor {
    /// A governor of an engine that opened with a cache of `open` bytes under a budget
    /// of `budget` bytes.
    /// It starts the cache at half that capacity ([`Governor::capacity`]), to be set
    /// before the engine does any work.
    pub fn new(budget: u64, open: u64) -> Governor {
        let floor = (open / 16).max(1 << 20).min(open);
        let cap = (open / 2).max(floor);
        Governor {
            budget,
            open,
            floor,
            cap,
            samples: 0,
            shrunk: None,
            grown: 0,
            adjustments: 0,
            phase_start: (cap, 0),
            phase_min: cap,
        }
    }

    /// The capacity now.
    pub fn capacity(&self) -> u64 {
        self.cap
    }

    /// A phase starts: what it reports counts from here.
    pub fn begin_phase(&mut self) {
        self.phase_start = (self.cap, self.adjustments);
        self.phase_min = self.cap;
    }

    /// What the governor did over the phase so far.
    pub fn phase(&self) -> kvtb_schema::Governed {
        kvtb_schema::Governed {
            open_bytes: self.open,
            start_bytes: self.phase_start.0,
            end_bytes: self.cap,
            min_bytes: self.phase_min,
            adjustments: self.adjustments - self.phase_start.1,
        }
    }

    /// One reading: `used` is what the budget is checked against now, `filled` what
    /// the engine's own gauges say its cache holds (`None` if it has none). Returns
    /// the new capacity to set, if it changes.
    pub fn step(&mut self, used: u64, filled: Option<u64>) -> Option<u64> {
        self.samples += 1;
        let target = self.budget - self.budget / 12;
        let high = self.budget - self.budget / 25;
        let low = self.budget - self.budget / 6;
        let new = if used > high {
            if let Some((was, at)) = self.shrunk
                && used <= was
                && self.samples - at < 5
            {
                return None;
            }
            let new = self.cap.saturating_sub(used - target).max(self.floor);
            self.shrunk = Some((used, self.samples));
            new
        } else if used < low && self.cap < self.open {
            if filled.is_some_and(|f| f < self.cap - self.cap / 10) || self.samples - self.grown < 2
            {
                return None;
            }
            self.grown = self.samples;
            (self.cap + ((target - used) / 2).max(1 << 20)).min(self.open)
        } else {
            return None;
        };
        if new.abs_diff(self.cap) < 256 << 10 {
            return None;
        }
        self.cap = new;
        self.adjustments += 1;
        self.phase_min = self.phase_min.min(new);
        Some(new)
    }
}

/// Hands glibc's free memory back to the system (`malloc_trim`), after a shrink.
#[expect(
    unsafe_code,
    reason = "malloc_trim is a libc call; it takes no pointer and only walks glibc's own \
              arenas, under their locks"
)]
pub fn trim_c_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: no argument but a size; glibc locks each arena it trims.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn it_starts_at_half_the_capacity_the_engine_opened_with() {
        let g = Governor::new(100 * MIB, 88 * MIB);
        assert_eq!(g.capacity(), 44 * MIB);
        assert_eq!(g.phase().open_bytes, 88 * MIB);
    }

    #[test]
    fn near_the_budget_it_shrinks_by_the_excess_over_92_percent() {
        let mut g = Governor::new(100 * MIB, 88 * MIB);
        assert_eq!(g.step(90 * MIB, Some(44 * MIB)), None, "within: no change");
        let new = g.step(130 * MIB, Some(44 * MIB)).expect("over: shrinks");
        assert_eq!(new, 44 * MIB - (130 * MIB - (100 * MIB - 100 * MIB / 12)));
        assert_eq!(g.capacity(), new);
        assert_eq!(g.phase().adjustments, 1);
    }

    #[test]
    fn after_a_shrink_it_waits_for_the_memory_to_respond() {
        let mut g = Governor::new(1000 * MIB, 870 * MIB);
        let first = g.step(1020 * MIB, None).unwrap();
        // still over, but not growing: the holes are being reused
        for _ in 0..4 {
            assert_eq!(g.step(1010 * MIB, None), None);
        }
        // five samples on and still over: shrinks again
        let second = g.step(1010 * MIB, None).unwrap();
        assert!(second < first);
        // over and growing since the last shrink: at once
        assert!(g.step(1030 * MIB, None).unwrap() < second);
    }

    #[test]
    fn it_never_goes_below_a_sixteenth_nor_above_the_open_capacity() {
        let mut g = Governor::new(100 * MIB, 87 * MIB);
        assert_eq!(g.step(10_000 * MIB, None), Some(87 * MIB / 16));
        assert_eq!(g.phase().min_bytes, 87 * MIB / 16);
        let mut cap = g.capacity();
        for _ in 0..100 {
            if let Some(c) = g.step(10 * MIB, Some(cap)) {
                cap = c;
            }
        }
        assert_eq!(cap, 87 * MIB, "grows back to the open capacity, no further");
    }

    #[test]
    fn it_grows_only_a_full_cache() {
        let mut g = Governor::new(100 * MIB, 87 * MIB);
        let cap = g.step(200 * MIB, None).unwrap();
        assert_eq!(g.step(50 * MIB, Some(cap / 2)), None, "half empty: no use");
        assert!(g.step(50 * MIB, Some(cap)).unwrap() > cap);
    }

    #[test]
    fn a_phase_reports_from_its_own_start() {
        let mut g = Governor::new(100 * MIB, 87 * MIB);
        g.step(150 * MIB, None).unwrap();
        g.begin_phase();
        let p = g.phase();
        assert_eq!(
            (p.start_bytes, p.end_bytes, p.adjustments),
            (g.capacity(), g.capacity(), 0)
        );
        assert_eq!(p.open_bytes, 87 * MIB);
    }
}
