//! Per-worker counters (relaxed atomics: each is written by one worker thread).

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
}
