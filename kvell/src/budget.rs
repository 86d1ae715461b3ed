//! The memory budget (`kvell.memory`): what a worker may hold and how it splits.
//!
//! Every worker gets `memory / workers`, and holds within it: its page cache (the
//! frames resident), its index, the cache's bookkeeping, its I/O buffers and its
//! fixed memory (free lists, request tables, I/O ring, thread). The page cache gives
//! way to the index: its capacity is set at open from the budget, and its limit,
//! the frames it may hold now, is what the budget leaves after everything else,
//! recomputed by the worker once per event-loop turn and as its index grows
//! (`worker/memory.rs`). The
//! paper's setting (a page cache of a third of the data with the index on top) is a
//! budget of data / 3 plus the index.

use crate::cache::META_PER_FRAME;
use crate::io::PAGE;

/// A worker's fixed memory besides what it counts (the free lists, the cache's
/// bookkeeping, the I/O buffers): the thread's stack, its I/O ring, its request
/// table, busy units, key holds and queue, at the default queue depth (64).
pub(crate) const WORKER_FIXED: u64 = 256 << 10;

/// What a worker holds besides its page cache, index, cache bookkeeping and I/O
/// buffers: its free lists (`free_lists` bytes), its fixed memory and the
/// allocator's overhead on the index, estimated at an eighth of it (size classes,
/// and the holes the blocks leave as they grow by `realloc`: after loading 200K
/// items, glibc's arenas held 0.8 MiB free beside a 3.95 MiB index;
/// `tests/memory_budget.rs` checks the total against the resident memory).
pub(crate) fn worker_other(index: u64, free_lists: u64) -> u64 {
    WORKER_FIXED + free_lists + index / 8
}

/// The fewest frames the page cache keeps, however small the budget: a page read
/// for a waiting request enters the cache and the request takes it from there when
/// it is stepped again, so a cache of no frames would read it again, forever (found
/// by `tests/memory_budget.rs`: an index that outgrew its budget left the cache no
/// frames and a worker re-reading one page).
pub(crate) const MIN_FRAMES: u32 = 16;

/// One worker's budget.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// Bytes this worker may hold.
    pub(crate) bytes: u64,
}

impl Budget {
    /// The budget of each of `workers` workers sharing `memory`.
    pub(crate) fn per_worker(memory: u64, workers: usize) -> Budget {
        Budget {
            bytes: memory / workers.max(1) as u64,
        }
    }

    /// The cache's capacity in frames: what the budget holds besides the fixed
    /// memory, each frame with its bookkeeping (an empty index leaves it all to
    /// the cache).
    pub(crate) fn cache_frames(&self) -> u32 {
        let room = self.bytes.saturating_sub(WORKER_FIXED);
        (room / (PAGE as u64 + META_PER_FRAME)).min(u32::MAX as u64 / 2) as u32
    }

    /// The frames the cache may hold while the worker holds `other` bytes besides
    /// its page cache: what the budget leaves, but never fewer than [`MIN_FRAMES`].
    pub(crate) fn cache_limit(&self, other: u64) -> u32 {
        (self.bytes.saturating_sub(other) / PAGE as u64).clamp(MIN_FRAMES as u64, u32::MAX as u64)
            as u32
    }

    /// The split, for `EngineInfo.settings`.
    pub(crate) fn describe(&self, workers: usize) -> String {
        format!(
            "memory / workers = {} bytes per worker for its page cache, index, cache \
             bookkeeping, I/O buffers and fixed memory (free lists, {} bytes for the \
             thread, ring and request tables, an eighth of the index for the allocator's \
             overhead on it); the page cache ({} frames of 4 KiB \
             allocated) gives way to the index: it may hold what the budget leaves after \
             the rest, recomputed once per event-loop turn and as the index grows, the least \
             recently used frames evicted and released to the OS when that falls \
             ({workers} workers)",
            self.bytes,
            WORKER_FIXED,
            self.cache_frames()
        )
    }

    /// What a budget does not cover, for `EngineInfo.notes`.
    pub(crate) fn notes() -> [String; 3] {
        [
            "kvell.memory holds each worker's page cache + index + fixed memory within \
             memory / workers (memory.* counters); the page cache gives way as the index \
             grows, and an index larger than the budget leaves the page cache its minimum \
             (16 frames, 64 KiB, per worker) and the engine over budget"
                .into(),
            "not counted in the budget: requests in flight (the keys and values handed to \
             the engine) and a scan's merge of the workers' keys"
                .into(),
            "under kvell.memory the page cache is set up in two steps: beside recovery, \
             what the budget leaves besides recovery's bound (96 B per slot); after it, \
             the rest, made resident beside the first requests (the cache holds the \
             first step's frames until then: cache_fill_beside_us)"
                .into(),
        ]
    }
}
