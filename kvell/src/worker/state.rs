//! What a worker owns: its backend, slab files, index, page cache, counters, the
//! requests taken in, its busy units, its I/O queue and the keys held by writes.

use super::keys::Keys;
use super::op::Ops;
use super::queue::IoQueue;
use super::units::Units;
use crate::budget::Budget;
use crate::cache::PageCache;
use crate::clean::CleanRecord;
use crate::config::Config;
use crate::index::Index;
use crate::io::{Backend, BufPool};
use crate::poison::Poison;
use crate::slab::{Format, Slab, Unit};
use crate::stats::Stats;
use crate::wake::Wake;
use kvapi::Error;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What a worker is made of at open (recovered or set up by `open.rs`).
pub(crate) struct Parts {
    pub(crate) io: Box<dyn Backend>,
    pub(crate) slabs: Vec<Slab>,
    pub(crate) clean: CleanRecord,
    pub(crate) index: Arc<Mutex<Index>>,
    pub(crate) cache: PageCache,
    pub(crate) stats: Arc<Stats>,
    pub(crate) poison: Arc<Poison>,
    /// The largest timestamp found: the worker's writes count on from it.
    pub(crate) ts: u64,
    /// Bytes of the recovered index.
    pub(crate) index_bytes: u64,
    /// What senders wake this worker with when it sleeps in its ring (`crate::wake`).
    pub(crate) wake: Option<Arc<Wake>>,
    /// The I/O buffers, their arena registered with `io` where it could be
    /// (`queue::buffer_pool`).
    pub(crate) pool: BufPool,
}

pub(crate) struct Worker {
    pub(super) io: Box<dyn Backend>,
    pub(super) slabs: Vec<Slab>,
    /// The clean-shutdown record, written at a clean close.
    pub(super) clean: CleanRecord,
    pub(super) index: Arc<Mutex<Index>>,
    pub(super) cache: PageCache,
    pub(super) stats: Arc<Stats>,
    pub(super) poison: Arc<Poison>,
    /// Timestamp of the last item or tombstone written.
    pub(super) ts: u64,
    /// Item format (checksums or not).
    pub(super) fmt: Format,
    pub(super) ops: Ops,
    pub(super) units: Units,
    pub(super) queue: IoQueue,
    /// Gets to retry once the current wake-up's other requests are stepped, and
    /// writes whose key was just released.
    pub(super) deferred: Vec<usize>,
    pub(super) keys: Keys,
    /// Index operations so far (see `index_clock`).
    index_ticks: u32,
    /// The worker's share of the memory budget, when it sizes the cache.
    pub(super) budget: Option<Budget>,
    /// Bytes of the index, as of its last change (noted under its lock by the write
    /// path).
    pub(super) index_bytes: u64,
    /// Index bytes beyond which the cache no longer fits the budget (`fit_memory`).
    pub(super) refit_at: u64,
    /// Set when the backend can be woken by it (`Backend::wake_on`).
    pub(super) wake: Option<Arc<Wake>>,
}

/// One index operation in this many is timed.
const INDEX_SAMPLE: u32 = 16;

impl Worker {
    pub(crate) fn new(mut p: Parts, cfg: &Config) -> Worker {
        let wake = p.wake.filter(|w| p.io.wake_on(w.fd()));
        Worker {
            wake,
            io: p.io,
            slabs: p.slabs,
            clean: p.clean,
            index: p.index,
            cache: p.cache,
            stats: p.stats,
            poison: p.poison,
            ts: p.ts,
            fmt: cfg.format(),
            ops: Ops::default(),
            units: Units::default(),
            queue: IoQueue::new(cfg.queue_depth, cfg.batch, p.pool),
            deferred: Vec::new(),
            keys: Keys::default(),
            index_ticks: 0,
            budget: cfg.budget(),
            index_bytes: p.index_bytes,
            refit_at: u64::MAX,
        }
    }

    /// The start of a timed index operation: one in `INDEX_SAMPLE` is timed (a clock
    /// read costs about 40 ns here, a lookup about 1 us) and counted
    /// `INDEX_SAMPLE` times, so `phase_ns.index` is an estimate.
    pub(super) fn index_clock(&mut self) -> Option<Instant> {
        self.index_ticks = self.index_ticks.wrapping_add(1);
        self.index_ticks
            .is_multiple_of(INDEX_SAMPLE)
            .then(Instant::now)
    }

    pub(super) fn index_time(&self, t: Option<Instant>) {
        if let Some(t) = t {
            self.stats
                .index_ns
                .fetch_add(t.elapsed().as_nanos() as u64 * INDEX_SAMPLE as u64, Relaxed);
        }
    }

    pub(super) fn count_cache(&mut self, id: usize, hit: bool) {
        let op = self.ops.get_mut(id);
        if !op.counted {
            op.counted = true;
            let c = if hit {
                &self.stats.cache_hits
            } else {
                &self.stats.cache_misses
            };
            c.fetch_add(1, Relaxed);
        }
    }

    pub(super) fn corrupt(&self, unit: Unit, detail: &str) -> Error {
        Error::Corruption {
            file: self.slabs[unit.class()].path.clone(),
            offset: unit.file_offset(),
            detail: detail.into(),
        }
    }
}
