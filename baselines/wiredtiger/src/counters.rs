//! WiredTiger's connection statistics (`statistics=(fast)`) as the interface's
//! counters.

use crate::ffi::stat;
use kvapi::Counters;

/// The statistics [`from_statistics`] reads, in this order.
pub(crate) const STATS: [i32; 16] = [
    stat::BLOCK_READ,
    stat::BLOCK_WRITE,
    stat::BLOCK_BYTE_READ,
    stat::BLOCK_BYTE_WRITE,
    stat::BLOCK_BYTE_WRITE_CHECKPOINT,
    stat::CACHE_PAGES_REQUESTED,
    stat::CACHE_READ,
    stat::CACHE_WRITE,
    stat::CACHE_BYTES_INUSE,
    stat::CACHE_BYTES_DIRTY,
    stat::CACHE_BYTES_MAX,
    stat::CACHE_EVICTION_APP,
    stat::LOG_BYTES_WRITTEN,
    stat::LOG_SYNC,
    stat::TXN_CHECKPOINT,
    stat::TXN_UPDATE_CONFLICT,
];

/// The counters from the values of [`STATS`] (`None` where the library has no such
/// statistic). Device bytes written are the data files' and the log's; log writes are
/// not counted as I/Os by WiredTiger, so `device_writes` is `None`. Cache hits are
/// the pages requested from the cache less those read into it.
pub(crate) fn from_statistics(v: &[Option<i64>]) -> Counters {
    let at = |i: usize| {
        v.get(i)
            .copied()
            .flatten()
            .map(|x| u64::try_from(x).unwrap_or(0))
    };
    let [
        block_reads,
        block_writes,
        block_bytes_read,
        block_bytes_written,
        checkpoint_bytes,
        requested,
        pages_read,
        pages_written,
        cache_bytes,
        dirty_bytes,
        cache_max,
        app_evictions,
        log_bytes,
        log_syncs,
        checkpoints,
        conflicts,
    ] = std::array::from_fn(at);
    let mut extra = Vec::new();
    for (name, v) in [
        ("memory.cache_bytes", cache_bytes),
        ("cache_bytes_dirty", dirty_bytes),
        ("cache_bytes_max", cache_max),
        ("block_writes", block_writes),
        ("block_bytes_written", block_bytes_written),
        ("checkpoint_bytes_written", checkpoint_bytes),
        ("pages_written_from_cache", pages_written),
        ("pages_evicted_by_application_threads", app_evictions),
        ("log_bytes_written", log_bytes),
        ("log_syncs", log_syncs),
        ("checkpoints", checkpoints),
        // writes that met another session's uncommitted write of their key and were
        // retried by WiredTiger (autocommit operations retry WT_ROLLBACK themselves)
        ("write_conflicts", conflicts),
    ] {
        if let Some(v) = v {
            extra.push((name.to_string(), v));
        }
    }
    Counters {
        device_bytes_read: block_bytes_read,
        // data files and the log: all WiredTiger writes
        device_bytes_written: match (block_bytes_written, log_bytes) {
            (Some(b), Some(l)) => Some(b + l),
            (b, l) => b.or(l),
        },
        device_reads: block_reads,
        // log writes are not counted as I/Os by WiredTiger
        device_writes: None,
        cache_hits: match (requested, pages_read) {
            (Some(r), Some(m)) => Some(r.saturating_sub(m)),
            _ => None,
        },
        cache_misses: pages_read,
        items: None,
        index_bytes: None,
        extra,
    }
}
