//! The engine's counters: bytes and operations per file, transactions, group
//! commits, checkpoints, admission waits and the open timings. Each part of the
//! engine adds to the counters of what it does; [`Stats::counters`] reports them.

use kvapi::Counters;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    /// WAL blocks written by the committer.
    WalBytes,
    /// Meta pages written by checkpoints.
    CheckpointBytes,
    /// WAL header blocks written.
    HeaderBytes,
    /// Large values written to the data file.
    DataBytes,
    /// Key + value bytes of puts.
    UserBytes,
    /// Every byte read: meta load, replay, data reads.
    BytesRead,
    /// Data reads.
    Reads,
    /// pwrite calls on any file.
    Writes,
    GroupCommits,
    Txns,
    Checkpoints,
    AdmissionWaits,
    /// Transactions that run past the end of the log and continue at its start.
    SplitTxns,
    /// Whole open: meta load, log replay, rebuild, open checkpoint.
    ReplayUs,
    OpenMetaLoadUs,
    OpenLogReplayUs,
    OpenRebuildUs,
    OpenCheckpointUs,
    ReplayedTxns,
    /// 1 when the last replay cut the log at a transaction of this log that failed
    /// its checks (torn by a crash, or damaged with nothing after it to say so).
    ReplayTornTxns,
    /// Valid transactions past the last replay's cut, never acknowledged, dropped.
    ReplayDroppedTxns,
    /// Creations killed before their header write, found at open and redone.
    CreationsRedone,
    /// A gauge: bytes the checkpoint copy buffers hold (a checkpoint copies the dirty
    /// pages into them and writes from them; they are kept between checkpoints).
    CheckpointCopyBytes,
    /// Meta pages the miss loader of the native asynchronous path read.
    LoaderReads,
    /// A gauge: the most page reads the miss loader had in flight at once.
    LoaderPeak,
    /// A gauge: 1 when the miss loader reads with an io_uring, 0 when it reads one
    /// page at a time (a file without a descriptor, or no ring from the kernel).
    LoaderRing,
    /// Opens that found one WAL header copy failing its checks and used the other.
    HeaderCopyRepairs,
    /// A gauge: the longest a writer waited at admission (log space, or dirty pages
    /// at their limit), in microseconds.
    AdmissionMaxWaitUs,
    /// A gauge: the longest a checkpoint held the core lock at once, in
    /// microseconds (the pause it makes writers and readers wait).
    CheckpointMaxHoldUs,
    /// A gauge: the most group-commit batches the committer had in flight at once.
    LogPeak,
    /// A gauge: 1 when the committer writes the WAL through an io_uring, 0 when
    /// through the seam (a file without a descriptor, `wal.uring=off`, or no ring).
    LogRing,
    /// A gauge: 1 when the data writer of the native path writes through an
    /// io_uring, 0 when one value at a time (a file without a descriptor,
    /// `wal.uring=off`, or no ring).
    DataRing,
    /// A gauge: the most data writes the data writer had in flight at once.
    DataPeak,
    /// Records that gets and scans found on a resident page.
    ReadHits,
    /// Records that gets and scans found on a page not resident (read from the meta
    /// file, by the reader or the miss loader).
    ReadMisses,
}

const COUNT: usize = Stat::ReadMisses as usize + 1;

/// What the image says of itself, for the counters (`None` where it could not be
/// read: a panic poisoned its lock).
#[derive(Default, Clone, Copy)]
pub struct ImageGauges {
    pub items: u64,
    pub index_bytes: u64,
    /// Resident pages.
    pub image_bytes: u64,
    pub table_bytes: u64,
    pub dirty_bytes: u64,
    /// Pages read from the meta file (after a miss, or under the lock) and evicted,
    /// since open.
    pub page_loads: u64,
    pub page_evictions: u64,
}

/// The engine-specific counters, by name, in the order the result files list them.
const EXTRA: [(&str, Stat); 29] = [
    ("wal_bytes", Stat::WalBytes),
    ("checkpoint_bytes", Stat::CheckpointBytes),
    ("header_bytes", Stat::HeaderBytes),
    ("data_bytes", Stat::DataBytes),
    ("user_bytes", Stat::UserBytes),
    ("txns", Stat::Txns),
    ("group_commits", Stat::GroupCommits),
    ("checkpoints", Stat::Checkpoints),
    ("admission_waits", Stat::AdmissionWaits),
    ("split_txns", Stat::SplitTxns),
    ("replay_us", Stat::ReplayUs),
    ("open_meta_load_us", Stat::OpenMetaLoadUs),
    ("open_log_replay_us", Stat::OpenLogReplayUs),
    ("open_rebuild_us", Stat::OpenRebuildUs),
    ("open_checkpoint_us", Stat::OpenCheckpointUs),
    ("replayed_txns", Stat::ReplayedTxns),
    ("replay_torn_txns", Stat::ReplayTornTxns),
    ("replay_dropped_txns", Stat::ReplayDroppedTxns),
    ("creations_redone", Stat::CreationsRedone),
    ("loader_reads", Stat::LoaderReads),
    ("loader_peak_in_flight", Stat::LoaderPeak),
    ("loader_ring", Stat::LoaderRing),
    ("header_copy_repairs", Stat::HeaderCopyRepairs),
    ("log_peak_in_flight", Stat::LogPeak),
    ("log_ring", Stat::LogRing),
    ("data_ring", Stat::DataRing),
    ("data_peak_in_flight", Stat::DataPeak),
    ("checkpoint_max_hold_us", Stat::CheckpointMaxHoldUs),
    ("admission_max_wait_us", Stat::AdmissionMaxWaitUs),
];

pub struct Stats {
    v: [AtomicU64; COUNT],
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            v: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl Stats {
    pub fn add(&self, s: Stat, n: u64) {
        self.v[s as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub fn set(&self, s: Stat, n: u64) {
        self.v[s as usize].store(n, Ordering::Relaxed);
    }

    /// Sets `s` to the microseconds since `t0`.
    pub fn set_us_since(&self, s: Stat, t0: Instant) {
        self.set(s, t0.elapsed().as_micros() as u64);
    }

    /// Raises the gauge `s` to the microseconds since `t0` if below.
    pub fn max_us_since(&self, s: Stat, t0: Instant) {
        self.max(s, t0.elapsed().as_micros() as u64);
    }

    /// Raises the gauge `s` to `n` if below.
    pub fn max(&self, s: Stat, n: u64) {
        self.v[s as usize].fetch_max(n, Ordering::Relaxed);
    }

    fn get(&self, s: Stat) -> u64 {
        self.v[s as usize].load(Ordering::Relaxed)
    }

    /// The counters, with the image's gauges (none when the image could not be
    /// read). The memory gauges: `memory.image` (the resident pages),
    /// `memory.index` (its index, estimated), `memory.page_table` and
    /// `memory.checkpoint_copies` (the checkpoint copy buffers, kept between checkpoints).
    pub fn counters(&self, image: Option<ImageGauges>) -> Counters {
        let mut extra: Vec<(String, u64)> = EXTRA
            .iter()
            .map(|&(name, s)| (name.to_string(), self.get(s)))
            .collect();
        if let Some(g) = image {
            extra.push(("memory.image".into(), g.image_bytes));
            extra.push(("memory.index".into(), g.index_bytes));
            extra.push(("memory.page_table".into(), g.table_bytes));
            extra.push(("dirty_page_bytes".into(), g.dirty_bytes));
            extra.push(("page_loads".into(), g.page_loads));
            extra.push(("page_evictions".into(), g.page_evictions));
        }
        extra.push((
            "memory.checkpoint_copies".into(),
            self.get(Stat::CheckpointCopyBytes),
        ));
        let written = self.get(Stat::WalBytes)
            + self.get(Stat::CheckpointBytes)
            + self.get(Stat::HeaderBytes)
            + self.get(Stat::DataBytes);
        Counters {
            device_bytes_read: Some(self.get(Stat::BytesRead)),
            device_bytes_written: Some(written),
            device_reads: Some(self.get(Stat::Reads)),
            device_writes: Some(self.get(Stat::Writes)),
            // the reads' records: on a resident page or not (page_loads counts every
            // page read, writes' and replay's too)
            cache_hits: Some(self.get(Stat::ReadHits)),
            cache_misses: Some(self.get(Stat::ReadMisses)),
            items: image.map(|g| g.items),
            index_bytes: image.map(|g| g.index_bytes),
            extra,
        }
    }
}
