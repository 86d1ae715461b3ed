//! Per-worker counters (relaxed atomics: each is written by one worker thread), and
//! the worker's memory gauges (bytes held now, stored once per event-loop turn).

use std::sync::atomic::AtomicU64;

#[derive(Default)]
pub struct Stats {
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    pub cache_hits: AtomicU64,
    pub cache_misses: AtomicU64,
    pub submits: AtomicU64,
    pub index_ns: AtomicU64,
    pub submit_ns: AtomicU64,
    pub wait_ns: AtomicU64,
    pub idle_ns: AtomicU64,
    /// Page cache frames resident, in bytes.
    pub mem_page_cache: AtomicU64,
    /// The index (as of the worker's last fit of its cache).
    pub mem_index: AtomicU64,
    /// The cache's bookkeeping.
    pub mem_cache_meta: AtomicU64,
    /// I/O buffers (pooled, prepared, in flight).
    pub mem_io_buffers: AtomicU64,
    /// Free lists, the worker's fixed memory (thread, ring, request tables) and the
    /// allocator's overhead on the index (estimated: `budget::worker_other`).
    pub mem_worker: AtomicU64,
    /// Microseconds the page cache's second step took beside the first requests
    /// (`PageCache::fill_beside`), once it has ended (0 before, or without one).
    pub cache_fill_us: AtomicU64,
}
