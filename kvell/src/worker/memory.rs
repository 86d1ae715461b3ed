//! The worker's memory: once per event-loop turn, and whenever a write grows the
//! index past the room the last fit left, it adds up what it holds besides its page
//! cache (the index, whose size the write path notes while it holds the index's
//! lock, the cache's bookkeeping, the I/O buffers, the free lists and the fixed
//! memory), gives the page cache what its budget leaves (`budget.rs`; the cache
//! evicts and releases frames when that falls) and stores the gauges that
//! `Kvell::counters` reports as `memory.*`. No system call, lock or allocation unless
//! the cache's limit falls (one `madvise` per frame released: about one per 200
//! inserts at 20 B per index entry).

use super::state::Worker;
use crate::budget::worker_other;
use crate::io::PAGE;
use std::sync::atomic::Ordering::Relaxed;

impl Worker {
    /// Fits the page cache to the budget (if any) and publishes the gauges. Runs at
    /// the start of every event-loop turn, and when a write grows the index past
    /// the room the last fit left (`refit_at`), so the cache gives way to the index
    /// at once: one frame per page of index.
    pub(super) fn fit_memory(&mut self) {
        if let Some(us) = self.cache.settle(false) {
            self.stats.cache_fill_us.store(us, Relaxed);
        }
        let meta = self.cache.meta_bytes();
        let io = self.queue.pool.bytes();
        let free = self.slabs.iter().map(|s| s.free.bytes()).sum();
        let worker = worker_other(self.index_bytes, free);
        if let Some(b) = self.budget {
            let other = self.index_bytes + meta + io + worker;
            let limit = b.cache_limit(other).min(self.cache.capacity());
            if limit != self.cache.limit() {
                self.cache.set_limit(limit);
            }
            // The index may grow by what the budget has left before the next fit
            // (each of its bytes counts 9/8: `worker_other`).
            let room = b
                .bytes
                .saturating_sub(other + self.cache.limit() as u64 * PAGE as u64);
            self.refit_at = self.index_bytes + room * 8 / 9;
        }
        let s = &self.stats;
        s.mem_page_cache.store(self.cache.resident_bytes(), Relaxed);
        s.mem_index.store(self.index_bytes, Relaxed);
        s.mem_cache_meta.store(meta, Relaxed);
        s.mem_io_buffers.store(io, Relaxed);
        s.mem_worker.store(worker, Relaxed);
    }

    /// The write path changed the index to `bytes`: past the room the last fit
    /// left, the cache gives way now.
    pub(super) fn index_changed(&mut self, bytes: u64) {
        self.index_bytes = bytes;
        if bytes > self.refit_at {
            self.fit_memory();
        }
    }
}
