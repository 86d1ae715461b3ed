//! The run file: one engine on one workload (`ycsb load`, `run`, `compare`).

use crate::machine::Machine;
use crate::memory::{MemoryBound, MemoryUse, OVER_BUDGET};
use crate::phase::Phase;
use crate::version::version_1;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// One result file: everything needed to judge and reproduce a run. Only `engine` and
/// `phases` are required: a JSON file without them is not a run file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunFile {
    /// The schema version ([`crate::SCHEMA_VERSION`]); 1 where absent.
    #[serde(default = "version_1")]
    pub format: u32,
    #[serde(default)]
    pub testbed_version: String,
    /// The command line that produced the result.
    #[serde(default)]
    pub command: Vec<String>,
    /// The testbed's git commit the binary was built from (`-dirty` when the tree had
    /// uncommitted changes); empty in files older than schema version 3.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub commit: String,
    /// Seconds since the Unix epoch when the run started.
    #[serde(default)]
    pub started_unix_s: u64,
    #[serde(default)]
    pub machine: Machine,
    pub engine: Engine,
    /// The workload's name (`workloada`, a file, `trace:FILE`).
    #[serde(default)]
    pub workload: String,
    /// Every resolved property.
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// Derived workload parameters (value size, mix, distribution; a trace's contents).
    #[serde(default)]
    pub workload_resolved: BTreeMap<String, String>,
    #[serde(default)]
    pub driving: Driving,
    /// How the engine was held to its memory budget (version 3; absent in older files).
    #[serde(default, skip_serializing_if = "MemoryBound::is_unset")]
    pub memory: MemoryBound,
    pub phases: Vec<Phase>,
    /// Why the engine's close failed (a full disk, a failed final sync), when it did:
    /// the phases stand as measured, and the command failed after writing them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_error: Option<String>,
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

    /// The memory the engine used in its run phase (else its last phase), and the
    /// budget, when both are known.
    pub fn memory_use(&self) -> Option<&MemoryUse> {
        self.run()
            .or(self.phases.last())
            .and_then(|p| p.memory.as_ref())
    }

    /// `Some((used, budget))` when the engine held more than [`OVER_BUDGET`] of its
    /// budget in any phase, or was killed at its memory limit (then `used` is the
    /// limit's figure, the budget plus the driver's share).
    pub fn over_budget(&self) -> Option<(u64, u64)> {
        let budget = self.memory.budget_bytes?;
        if self.memory.killed_at_limit {
            return Some((self.memory.limit_bytes.unwrap_or(budget), budget));
        }
        self.phases
            .iter()
            .filter_map(|p| p.memory.as_ref())
            .filter(|m| m.used_over_budget.is_some_and(|r| r > OVER_BUDGET))
            .map(|m| m.peak_used_bytes)
            .max()
            .map(|used| (used, budget))
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

/// An engine as configured for a run. Only `name` is required.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Engine {
    pub name: String,
    /// `none`, `process` or `power`.
    #[serde(default)]
    pub durability: String,
    /// The engine's own words for its durability setting.
    #[serde(default)]
    pub durability_setting: String,
    #[serde(default)]
    pub cache_bytes: Option<u64>,
    #[serde(default)]
    pub direct_io: Option<bool>,
    /// The engine's resolved options (`batch`, `queue_depth`, ...), as the engine
    /// reported them, and the driver's `open_seconds`.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub max_key: usize,
    #[serde(default)]
    pub max_value: usize,
}

impl Engine {
    /// A setting as a number (`"64"` reads as 64).
    pub fn setting_f64(&self, key: &str) -> Option<f64> {
        self.settings.get(key)?.trim().parse().ok()
    }
}

/// How the driver drove the engine.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Driving {
    /// Client threads in closed-loop mode.
    pub threads: usize,
    /// Requests in flight from one injector thread in asynchronous mode.
    pub queue_depth: Option<usize>,
    /// Target rate in operations per second (all threads together).
    pub target_ops: Option<f64>,
    /// Arrivals at the target rate: `constant` (evenly spaced, YCSB's) or `poisson`
    /// (exponential gaps).
    pub arrival: String,
    /// Seconds at the start of the run phase excluded from the measurement.
    pub warmup_s: f64,
    /// With `--warmup auto`: a warm-up phase runs before the measured run until the
    /// engine's cache is steady, for at most this many seconds (version 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup_until_steady_max_s: Option<f64>,
    /// Time limit of the run phase in seconds (YCSB's maxexecutiontime).
    pub max_time_s: Option<f64>,
    pub seed: u64,
    /// Whether the engine's native asynchronous path was used (async mode only).
    pub native_async: Option<bool>,
    /// How `queue_depth` requests were kept in flight in an engine without a native
    /// asynchronous path: `threads` (that many closed-loop client threads) or `pool`
    /// (one injector through the thread-pool adapter). Absent in files from before
    /// the choice existed, which all used the adapter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
}

impl Driving {
    /// The driving mode in words (`closed loop, 2 client thread(s)`, ...).
    pub fn describe(&self) -> String {
        let threads = self.adapter.as_deref() == Some("threads");
        let mut s = match self.queue_depth {
            Some(qd) if threads && self.native_async == Some(false) => format!(
                "{qd} requests in flight as {qd} closed-loop client threads (no native async path)"
            ),
            Some(qd) => format!(
                "async, {qd} requests in flight from 1 injector ({})",
                match (self.native_async, threads) {
                    (Some(true), _) => "engine's native async path",
                    (Some(false), _) => "thread-pool adapter",
                    (None, true) => "native async path, else as many client threads",
                    (None, false) => "native async path, else a thread-pool adapter",
                }
            ),
            None => format!("closed loop, {} client thread(s)", self.threads),
        };
        if let Some(t) = self.target_ops {
            s.push_str(&format!(", target {t} ops/s ({} arrivals)", self.arrival));
        }
        if let Some(m) = self.warmup_until_steady_max_s {
            s.push_str(&format!(", warm-up until steady (at most {m} s)"));
        }
        s
    }
}
