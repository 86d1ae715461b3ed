//! One phase of a run (load, run, replay) as measured: totals, latency summaries per
//! operation kind, the per-second timeline, device use and the device's ceiling.

use crate::memory::{MemoryUse, Warmup};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one phase measured, with the engine's counters around it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Phase {
    /// `load`, `run` or `replay`.
    pub phase: String,
    /// When the phase started, milliseconds since the Unix epoch (version 3): the
    /// wall clock that `ycsb merge` aligns several clients' timelines by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_unix_ms: Option<u64>,
    /// Wall time of the measured part (after warm-up), milliseconds.
    pub runtime_ms: f64,
    /// Operations measured (after warm-up).
    pub operations: u64,
    pub throughput_ops_sec: f64,
    /// Operations that ended with an error or an unexpected value.
    pub errors: u64,
    /// CPU seconds of the whole process over the measured part.
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// CPU microseconds per measured operation (user + system), and apart.
    pub cpu_us_per_op: f64,
    pub cpu_user_us_per_op: Option<f64>,
    pub cpu_sys_us_per_op: Option<f64>,
    /// Bytes of keys and values the driver read and wrote in the measured part.
    pub user_read_bytes: u64,
    pub user_write_bytes: u64,
    /// Bytes this process read from / wrote to storage (/proc/self/io).
    pub process_read_bytes: Option<u64>,
    pub process_write_bytes: Option<u64>,
    /// The data directory's device over the measured part, where it could be read.
    pub device: Option<DeviceUse>,
    /// What the device allows for this phase's I/O mix (from a `ycsb device` result).
    pub ceiling: Option<Ceiling>,
    pub ops: Vec<OpSummary>,
    pub timeline: Vec<Sample>,
    /// What the engine held over the phase (version 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryUse>,
    /// For a `warmup` phase: how long it ran and whether it reached a steady state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Warmup>,
    /// The driver's own CPU microseconds per operation: the same phase (workload,
    /// seed, driving mode) run again briefly on the null engine, counting the CPU
    /// time of the driver's threads only; on the null engine, its own. What is left
    /// of `cpu_us_per_op` is the engine's. `None` where it could not be measured (and
    /// in files written before it was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_cpu_us_per_op: Option<f64>,
    /// The engine's counters around the phase; `None` where the engine cannot count.
    pub counters_before: BTreeMap<String, Option<u64>>,
    pub counters_after: BTreeMap<String, Option<u64>>,
}

impl Phase {
    /// How much an engine counter grew over the phase.
    pub fn counter_delta(&self, name: &str) -> Option<u64> {
        let a = (*self.counters_after.get(name)?)?;
        let b = self
            .counters_before
            .get(name)
            .copied()
            .flatten()
            .unwrap_or(0);
        Some(a.saturating_sub(b))
    }
}

/// What the device did over a phase (whole-device counters, /proc/diskstats), and
/// what it means per request.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceUse {
    pub device: String,
    pub reads: Option<u64>,
    pub writes: Option<u64>,
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    pub flushes: Option<u64>,
    /// Fraction of the time the device had I/O in flight.
    pub utilisation: Option<f64>,
    pub read_iops: Option<f64>,
    pub write_iops: Option<f64>,
    /// Device I/Os (reads + writes) per operation of the driver.
    pub ios_per_op: Option<f64>,
    /// Device bytes read per byte the driver read (keys and values returned).
    pub read_amplification: Option<f64>,
    /// Device bytes written per byte the driver wrote (keys and values).
    pub write_amplification: Option<f64>,
    /// Whole-device counters include every process's I/O on this device.
    pub note: String,
}

/// What the device could do for a phase's I/O mix, and how close the phase came.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Ceiling {
    /// The `ycsb device` result the ceiling comes from.
    pub device_result: String,
    /// Fraction of reads among the phase's device I/Os.
    pub read_fraction: Option<f64>,
    /// The device's IOPS for that mix (harmonic combination of its best random 4 KiB
    /// read and write IOPS over the queue depths probed).
    pub device_iops: Option<f64>,
    pub ios_per_op: Option<f64>,
    /// device_iops / ios_per_op: the throughput the device allows at this I/O cost.
    pub ceiling_ops_sec: Option<f64>,
    /// Measured throughput / ceiling.
    pub fraction: Option<f64>,
    pub note: String,
}

/// Latency summary of one operation kind, in microseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OpSummary {
    /// YCSB op name (`READ`, `UPDATE`, ...); `Intended-READ` etc. hold the latency
    /// measured from the intended start (open loop, coordinated omission corrected),
    /// `Queue-READ` etc. the delay between the intended and the actual start.
    pub name: String,
    pub operations: u64,
    pub average_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    /// Count per status (`OK`, `NOT_FOUND`, error kinds, `UNEXPECTED_VALUE`).
    pub status: BTreeMap<String, u64>,
    /// The histogram (nanoseconds), HdrHistogram V2 deflate serialization in base64
    /// (standard), so runs can be merged later.
    pub histogram_v2_base64: String,
}

/// What an op summary measures, from its name's prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Measure {
    /// From the actual start of the operation (`READ`).
    Service,
    /// From the intended start under a target rate (`Intended-READ`): coordinated
    /// omission corrected.
    Intended,
    /// Delay between the intended and the actual start (`Queue-READ`).
    Queue,
}

impl OpSummary {
    /// What the summary measures and the op kind it is about.
    pub fn measure(&self) -> (Measure, &str) {
        if let Some(b) = self.name.strip_prefix("Intended-") {
            (Measure::Intended, b)
        } else if let Some(b) = self.name.strip_prefix("Queue-") {
            (Measure::Queue, b)
        } else {
            (Measure::Service, &self.name)
        }
    }

    pub fn is_intended(&self) -> bool {
        self.measure().0 == Measure::Intended
    }
}

/// One interval (about a second) of a phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Sample {
    /// Seconds since the phase started, at the end of the interval.
    pub t: f64,
    /// Whether the interval ended inside the warm-up.
    pub warmup: bool,
    /// Operations completed in the interval, per YCSB op name.
    pub ops: BTreeMap<String, u64>,
    pub total_ops: u64,
    pub ops_per_sec: f64,
    pub errors: u64,
    pub avg_latency_us: f64,
    /// CPU seconds used by the process in the interval (user, system).
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// Bytes the process read from / wrote to storage in the interval.
    pub proc_read_bytes: Option<u64>,
    pub proc_write_bytes: Option<u64>,
    /// The data directory's block device in the interval (whole-device counters).
    pub dev_read_iops: Option<f64>,
    pub dev_write_iops: Option<f64>,
    pub dev_read_bytes: Option<u64>,
    pub dev_write_bytes: Option<u64>,
    /// Fraction of the interval the device had I/O in flight.
    pub dev_util: Option<f64>,
    /// Page faults of the process that read the disk, in the interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub major_faults: Option<u64>,
    /// Seconds of the interval in which some task of the machine waited for a CPU
    /// (/proc/pressure/cpu, `some`; machine-wide, this process included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_pressure_s: Option<f64>,
    /// Seconds of the interval in which some task of the machine stalled on memory
    /// (/proc/pressure/memory, `some`: reclaim, compaction, refaults).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_pressure_s: Option<f64>,
    /// CPU seconds the hypervisor took from the machine's virtual CPUs in the
    /// interval (/proc/stat `steal`, all CPUs): a second in which the VM's host held
    /// it shows here, and not in the process's own CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steal_s: Option<f64>,
    /// The process's resident memory at the end of the interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// The OS page cache held by the engine's files at the end of the interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_cache_bytes: Option<u64>,
    /// What the process's memory cgroup was charged, when it ran in one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup_bytes: Option<u64>,
    /// The sum of the engine's own `memory.*` gauges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_memory_bytes: Option<u64>,
    /// The engine's cache hit ratio over the interval, where it counts hits and misses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_hit_ratio: Option<f64>,
    /// The engine's cache capacity at the end of the interval, when the driver's
    /// memory governor holds it (an engine whose cache can be resized, under a budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_capacity_bytes: Option<u64>,
    /// Latency percentiles of the interval per YCSB op name (HDR, 2 significant
    /// digits; version 3).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub latency: BTreeMap<String, IntervalLatency>,
}

/// The latency of one operation kind over one interval, in microseconds: what YCSB's
/// `-s` status line prints per interval.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct IntervalLatency {
    pub count: u64,
    pub min_us: f64,
    pub max_us: f64,
    pub avg_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
}
