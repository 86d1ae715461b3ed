//! Memory: the budget an engine was given, how it was held to it, and what it held,
//! measured from outside the engine (the process's resident memory, the OS page cache
//! of the engine's own files, the memory cgroup's charge) beside the engine's own
//! accounting. See DESIGN.md, "Same memory".

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An engine that held more than this fraction of its budget is over budget: flagged
/// in every table and left out of every verdict. The 10% is room for measurement
/// (page granularity, allocator slack, the driver's own growth), not an allowance.
pub const OVER_BUDGET: f64 = 1.10;

/// How a run was held to its memory budget (one per run file).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryBound {
    /// `--memory`: what the engine may hold for data and index, in bytes.
    pub budget_bytes: Option<u64>,
    /// How the budget was enforced, in words: "memory cgroup v1 (memory.limit_in_bytes)",
    /// "the enclosing cgroup's limit", "none: ..." with the reason.
    pub enforcement: String,
    /// The cgroup's limit (the budget plus the driver's own charge at engine open).
    pub limit_bytes: Option<u64>,
    /// The process's resident memory just before the engine opened: the driver's own
    /// (binary, workload, generators), subtracted from what the engine is said to use.
    pub driver_rss_bytes: u64,
    /// Bytes of the engine's files that were in the OS page cache before it opened and
    /// were dropped, so that no engine starts with pages an earlier process cached.
    pub page_cache_evicted_bytes: u64,
    /// Whether the engine reads through the OS page cache (no direct I/O), so that only
    /// the cgroup bounds that part of its memory.
    pub uses_os_page_cache: bool,
    /// Whether the kernel killed the engine's process at its limit.
    pub killed_at_limit: bool,
    /// Whether the engine refused to open within the budget (it must hold more than
    /// the budget: WiredTiger's smallest cache, say); the run has no phases.
    pub refused_at_open: bool,
}

impl MemoryBound {
    /// Whether nothing was recorded (a file older than schema version 3).
    pub fn is_unset(&self) -> bool {
        self.budget_bytes.is_none() && self.enforcement.is_empty() && self.driver_rss_bytes == 0
    }
}

/// What an engine held over one phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryUse {
    /// The process's peak resident memory over the phase (`VmHWM`, reset at its start).
    pub peak_rss_bytes: u64,
    /// The mean of the per-second resident memory samples.
    pub mean_rss_bytes: u64,
    /// The largest sampled OS page cache held by the engine's files (mincore).
    pub peak_page_cache_bytes: u64,
    /// The same at the end of the phase.
    pub end_page_cache_bytes: u64,
    /// What the budget is checked against: the peak over the phase of the resident
    /// memory less the driver's own at engine open and the driver's histograms, plus
    /// the page cache of the engine's files, at one moment: from the per-second
    /// samples, and from `VmHWM` with the least page cache of the phase. Files of builds
    /// up to 7e0a19a added the peak page cache to the peak resident memory, wherever
    /// each was seen.
    pub peak_used_bytes: u64,
    /// The peak bytes of the driver's latency histograms over the phase (they grow with
    /// its client threads): the driver's, left out of `peak_used_bytes`. Written only
    /// when counted (files from before it read back unchanged).
    #[serde(skip_serializing_if = "is_zero")]
    pub driver_histogram_bytes: u64,
    /// peak_used / budget, when there is a budget.
    pub used_over_budget: Option<f64>,
    /// The engine's own accounting at the end of the phase (its `memory.*` gauges).
    pub engine_accounting: BTreeMap<String, u64>,
    /// The memory cgroup's peak charge over the whole process life so far, when the
    /// process ran in one.
    pub cgroup_peak_bytes: Option<u64>,
    /// What the driver's memory governor did to the engine's cache over the phase,
    /// when it held one (written only then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub governor: Option<Governed>,
}

/// The driver's memory governor over one phase: it resizes the cache of an engine
/// that can resize it so that the engine's measured memory (what `peak_used_bytes`
/// counts: its resident memory and its files' page cache, not only its cache's own
/// accounting) stays within the budget. See DESIGN.md, "Same memory".
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Governed {
    /// The capacity the engine opened with (its share of the budget by its own rule).
    pub open_bytes: u64,
    /// The capacity when the phase started and when it ended.
    pub start_bytes: u64,
    pub end_bytes: u64,
    /// The smallest capacity over the phase.
    pub min_bytes: u64,
    /// Resizes over the phase.
    pub adjustments: u32,
}

impl MemoryUse {
    /// Whether this phase used more than [`OVER_BUDGET`] of the budget.
    pub fn over_budget(&self) -> bool {
        self.used_over_budget.is_some_and(|r| r > OVER_BUDGET)
    }
}

/// The warm-up before a measured run: run until the engine's cache reaches a steady
/// hit ratio, so every engine is measured from the same kind of starting state.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Warmup {
    /// How long the warm-up ran.
    pub seconds: f64,
    pub operations: u64,
    /// Whether the steady-state criterion was met (else the time limit ended it).
    pub steady: bool,
    /// The criterion, in words.
    pub criterion: String,
    /// The engine's cache hit ratio over the last interval, where it reports one.
    pub hit_ratio: Option<f64>,
    /// Bytes the process read from storage per operation over the last interval
    /// (misses of every cache, for every engine alike).
    pub read_bytes_per_op: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
