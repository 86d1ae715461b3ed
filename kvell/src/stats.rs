//! Per-worker counters (relaxed atomics: each is written by one worker thread), the
//! worker's memory gauges (bytes held now, stored once per event-loop turn), and the
//! slowest of each stage a request's time goes to (`Slowest`).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
    /// The slowest I/O since the open: from its batch's submit to the reap that
    /// handed its completion to the worker (the device's time, and the worker's delay
    /// in reaping, which the slowest turn bounds).
    pub slowest_io: Slowest,
    /// The longest an I/O waited in the worker's queue behind the queue depth: one
    /// the turn that queued it left unsubmitted, from the start of that turn to its
    /// submit (so it includes the rest of that turn).
    pub slowest_queued: Slowest,
    /// The worker's longest turn: from coming back from a reap (or from waiting for a
    /// request) to its next reap, its CPU work between (new requests, completions,
    /// submits), and any time it lost the CPU or waited in the kernel meanwhile (with
    /// the `psync` and `sim` backends, which do their I/O inside the submit, the
    /// device's time too). A request sent meanwhile waited up to that long in the
    /// worker's channel.
    pub slowest_turn: Slowest,
    /// The longest reap that waited for a completion: the worker had I/O in flight
    /// and none completed for that long.
    pub slowest_wait: Slowest,
}

/// The longest of one kind of event since the open, and when it ended: where a slow
/// request's time went (issue 18, item 6: the slowest of a run's operations against
/// the device's own slowest I/O). Written by its worker only; a reader may see a
/// duration with the time of the one before it while a new longest is stored.
#[derive(Default)]
pub struct Slowest {
    /// Microseconds.
    pub us: AtomicU64,
    /// When it ended, in milliseconds since the Unix epoch.
    pub at_ms: AtomicU64,
}

impl Slowest {
    /// Keeps `d` if it is the longest so far (the clock is read only then).
    #[inline]
    pub fn note(&self, d: Duration) {
        let us = d.as_micros() as u64;
        if us > self.us.load(Relaxed) {
            self.us.store(us, Relaxed);
            let at = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |t| t.as_millis() as u64);
            self.at_ms.store(at, Relaxed);
        }
    }

    /// (microseconds, milliseconds since the epoch).
    pub fn get(&self) -> (u64, u64) {
        (self.us.load(Relaxed), self.at_ms.load(Relaxed))
    }
}
