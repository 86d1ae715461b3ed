//! The subset of the driver's result file (`ycsb` JSON) that the analysis reads.
//!
//! Written against the driver's `RunReport` but deliberately independent of it
//! (dependencies point one way: driver <- analysis). Every field has a default, so
//! files from older or newer drivers load; unknown fields are ignored. Only
//! `engine.name` and `phases` are required: a JSON file without them is not a
//! result file and is skipped with a warning.

use crate::error::{Error, IoOp, ParseError, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One result file: one engine on one workload.
#[derive(Clone, Debug, Deserialize)]
pub struct RunFile {
    #[serde(default)]
    pub format: u32,
    #[serde(default)]
    pub testbed_version: String,
    /// The command line that produced the result.
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default)]
    pub started_unix_s: u64,
    #[serde(default)]
    pub machine: Machine,
    pub engine: Engine,
    #[serde(default)]
    pub workload: String,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    #[serde(default)]
    pub workload_resolved: BTreeMap<String, String>,
    #[serde(default)]
    pub driving: Driving,
    pub phases: Vec<Phase>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Machine {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: Option<u64>,
    pub kernel: String,
    pub os: String,
    pub disk: Option<Disk>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Disk {
    pub device: String,
    pub model: Option<String>,
    pub rotational: Option<bool>,
    pub size_bytes: Option<u64>,
    pub filesystem: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Engine {
    pub name: String,
    /// `none`, `process` or `power`.
    #[serde(default)]
    pub durability: String,
    #[serde(default)]
    pub durability_setting: String,
    #[serde(default)]
    pub cache_bytes: Option<u64>,
    #[serde(default)]
    pub direct_io: Option<bool>,
    /// The engine's resolved options (`batch`, `queue_depth`, ...), as the engine
    /// reported them.
    #[serde(default)]
    pub settings: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Engine {
    /// A setting as a number (`"64"` and `64` both read as 64).
    pub fn setting_f64(&self, key: &str) -> Option<f64> {
        match self.settings.get(key)? {
            serde_json::Value::Number(n) => n.as_f64(),
            serde_json::Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Driving {
    pub threads: usize,
    pub queue_depth: Option<usize>,
    pub target_ops: Option<f64>,
    pub warmup_s: f64,
    pub max_time_s: Option<f64>,
    pub seed: u64,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Phase {
    pub phase: String,
    pub runtime_ms: f64,
    pub operations: u64,
    pub throughput_ops_sec: f64,
    pub errors: u64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub cpu_us_per_op: f64,
    pub cpu_user_us_per_op: Option<f64>,
    pub cpu_sys_us_per_op: Option<f64>,
    /// The data directory's device over the measured part, where it could be read.
    pub device: Option<DeviceUse>,
    /// What the device allows for this phase's I/O mix (from a `ycsb device` result).
    pub ceiling: Option<Ceiling>,
    pub ops: Vec<OpSummary>,
    pub timeline: Vec<Sample>,
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

/// Device counters over a phase (whole device, from /proc/diskstats).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct DeviceUse {
    pub device: String,
    pub reads: Option<u64>,
    pub writes: Option<u64>,
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    /// Fraction of the time the device had I/O in flight.
    pub utilisation: Option<f64>,
    pub read_iops: Option<f64>,
    pub write_iops: Option<f64>,
    /// Device I/Os per driver operation.
    pub ios_per_op: Option<f64>,
    pub read_amplification: Option<f64>,
    pub write_amplification: Option<f64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Ceiling {
    /// The `ycsb device` result the ceiling comes from.
    pub device_result: String,
    pub read_fraction: Option<f64>,
    /// The device's IOPS for the phase's read/write mix.
    pub device_iops: Option<f64>,
    pub ios_per_op: Option<f64>,
    pub ceiling_ops_sec: Option<f64>,
    /// Measured throughput / ceiling.
    pub fraction: Option<f64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct OpSummary {
    /// YCSB op name (`READ`, `UPDATE`, ...); `Intended-READ` etc. hold the latency
    /// measured from the intended start (open loop, coordinated omission corrected).
    pub name: String,
    pub operations: u64,
    pub average_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    /// Nanoseconds, HdrHistogram V2 deflate serialization, base64 (standard).
    pub histogram_v2_base64: String,
}

impl OpSummary {
    pub fn is_intended(&self) -> bool {
        self.measure().0 == Measure::Intended
    }
}

/// One interval (about a second) of a phase.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Sample {
    /// Seconds since the phase started, at the end of the interval.
    pub t: f64,
    pub warmup: bool,
    pub total_ops: u64,
    pub ops_per_sec: f64,
    pub errors: u64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// Fraction of the interval the data directory's device was busy.
    pub dev_util: Option<f64>,
    pub dev_read_iops: Option<f64>,
    pub dev_write_iops: Option<f64>,
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
}

impl RunFile {
    pub fn phase(&self, name: &str) -> Option<&Phase> {
        self.phases.iter().find(|p| p.phase == name)
    }

    pub fn run(&self) -> Option<&Phase> {
        self.phase("run")
    }

    pub fn load(&self) -> Option<&Phase> {
        self.phase("load")
    }

    /// A property of the workload (`recordcount`, ...), from the resolved values first.
    pub fn prop(&self, key: &str) -> Option<&str> {
        self.workload_resolved
            .get(key)
            .or_else(|| self.properties.get(key))
            .map(String::as_str)
    }

    /// A short name of the workload (`workloada`; a file's stem).
    pub fn workload_name(&self) -> String {
        let w = if self.workload.is_empty() {
            "workload"
        } else {
            &self.workload
        };
        Path::new(w)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| w.to_string())
    }
}

/// One point of a `ycsb device` probe.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ProbePoint {
    /// `randread`, `randwrite`, `mixed` or `seqread`.
    pub pattern: String,
    pub queue_depth: usize,
    pub block_bytes: usize,
    pub read_fraction: f64,
    pub iops: f64,
    pub mib_per_s: f64,
    pub lat_mean_us: f64,
    pub lat_p50_us: f64,
    pub lat_p99_us: f64,
}

/// A `ycsb device` result (`"kind": "device"`): what the disk can do.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct DeviceProbe {
    pub command: Vec<String>,
    pub started_unix_s: u64,
    pub file_bytes: u64,
    pub machine: Machine,
    pub fill_mib_per_s: f64,
    pub points: Vec<ProbePoint>,
}

/// A result file as loaded, with where it came from.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub path: PathBuf,
    pub run: RunFile,
}

/// Result files found under a directory, and the files that were skipped.
#[derive(Clone, Debug, Default)]
pub struct Found {
    pub runs: Vec<Loaded>,
    /// `ycsb device` results found beside the runs.
    pub probes: Vec<(PathBuf, DeviceProbe)>,
    /// `path: reason` for each `.json` file that was not a readable result file.
    pub skipped: Vec<String>,
}

/// Parses one result file. The error says why it is not one.
pub fn parse_run(text: &str) -> Result<RunFile, ParseError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(ParseError::NotJson)?;
    let obj = v.as_object().ok_or(ParseError::NotAnObject)?;
    for key in ["engine", "phases"] {
        if !obj.contains_key(key) {
            return Err(ParseError::MissingField(key));
        }
    }
    serde_json::from_value(v).map_err(ParseError::NotARunFile)
}

/// A `ycsb device` result, if the text is one.
pub fn parse_probe(text: &str) -> Option<DeviceProbe> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    if v.get("kind")?.as_str()? != "device" {
        return None;
    }
    serde_json::from_value(v).ok()
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let ft = e.file_type()?;
        if ft.is_dir() {
            json_files(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    Ok(())
}

/// Loads every `*.json` result file under `dir` (recursively). Files that cannot be
/// read or are not result files are listed in `skipped`; an unreadable directory is
/// an error.
pub fn load_dir(dir: &Path) -> Result<Found> {
    let mut files = Vec::new();
    json_files(dir, &mut files).map_err(|e| Error::io(IoOp::ReadDir, dir, e))?;
    let mut found = Found::default();
    for path in files {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                found
                    .skipped
                    .push(Error::io(IoOp::ReadFile, &path, e).to_string());
                continue;
            }
        };
        if let Some(probe) = parse_probe(&text) {
            found.probes.push((path, probe));
            continue;
        }
        match parse_run(&text) {
            Ok(run) => found.runs.push(Loaded { path, run }),
            Err(why) => found.skipped.push(format!("{}: {why}", path.display())),
        }
    }
    Ok(found)
}

/// `manifest.json` of a reproduce-paper run (`"kind": "paper-run"`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Manifest {
    pub kind: String,
    /// `ci`, `small` or `paper`.
    pub scale: String,
    pub command: Vec<String>,
    pub started_unix_s: u64,
    pub finished_unix_s: u64,
    pub machine: Machine,
    pub records: u64,
    pub value_bytes: u64,
    #[serde(deserialize_with = "null_as_zero")]
    pub memory_bytes: u64,
    pub queue_depth: u64,
    pub operations: u64,
    pub scan_operations: u64,
    /// Runs limited by time rather than by count: seconds per run, and for the
    /// timeline runs (YCSB A and E uniform).
    #[serde(default)]
    pub run_seconds: Option<f64>,
    #[serde(default)]
    pub timeline_seconds: Option<f64>,
    pub engines: Vec<String>,
    pub notes: Vec<String>,
}

/// One point of an I/O methods comparison.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct IoPoint {
    /// `mmap`, `pread` or `io_uring`.
    pub method: String,
    /// `randread` or `randwrite`.
    pub op: String,
    pub threads: usize,
    pub queue_depth: usize,
    pub iops: f64,
    pub mib_per_s: f64,
    pub lat_mean_us: f64,
    pub lat_p99_us: f64,
    pub cpu_us_per_io: f64,
    /// Page faults that went to the disk per I/O (mmap points).
    pub major_faults_per_io: Option<f64>,
    pub seconds: f64,
}

/// An I/O methods result (`"kind": "iomethods"`): the paper's Table 3.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct IoMethods {
    pub kind: String,
    pub command: Vec<String>,
    pub started_unix_s: u64,
    pub machine: Machine,
    pub file: String,
    pub file_bytes: u64,
    /// The machine's memory; 0 where the driver could not read it (`null`).
    #[serde(deserialize_with = "null_as_zero")]
    pub memory_bytes: u64,
    pub block_bytes: u64,
    pub points: Vec<IoPoint>,
    pub notes: Vec<String>,
}

/// One kill-and-reopen cycle of a recovery test.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct RecoveryCycle {
    pub run_s_before_kill: f64,
    pub ops_before_kill: u64,
    /// Bytes of the engine's data directory when it was killed.
    pub data_bytes: u64,
    pub recovery_s: f64,
    pub verified_records: u64,
    pub missing_records: u64,
}

/// A recovery result (`"kind": "recovery"`): reopen time after a SIGKILL.
#[derive(Clone, Debug, Deserialize)]
pub struct Recovery {
    pub kind: String,
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default)]
    pub started_unix_s: u64,
    #[serde(default)]
    pub machine: Machine,
    pub engine: Engine,
    #[serde(default)]
    pub workload: String,
    #[serde(default)]
    pub records: u64,
    #[serde(default)]
    pub value_bytes: u64,
    pub cycles: Vec<RecoveryCycle>,
    #[serde(default)]
    pub recovery_s_median: f64,
    #[serde(default)]
    pub counters_after_open: BTreeMap<String, Option<u64>>,
}

fn null_as_zero<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Option::<u64>::deserialize(d).map(Option::unwrap_or_default)
}

/// Parses a JSON file of a given `kind`; the error says what is wrong with it.
pub fn parse_kind<T: serde::de::DeserializeOwned>(text: &str, kind: &str) -> Result<T, ParseError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(ParseError::NotJson)?;
    let found = v
        .as_object()
        .ok_or(ParseError::NotAnObject)?
        .get("kind")
        .and_then(|k| k.as_str())
        .ok_or_else(|| ParseError::NoKind {
            expected: kind.to_string(),
        })?;
    if found != kind {
        return Err(ParseError::WrongKind {
            found: found.to_string(),
            expected: kind.to_string(),
        });
    }
    serde_json::from_value(v).map_err(|source| ParseError::Invalid {
        kind: kind.to_string(),
        source,
    })
}
