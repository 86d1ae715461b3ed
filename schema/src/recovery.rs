//! Recovery time after a crash (`ycsb recovery`; the paper's section 6.5).

use crate::machine::Machine;
use crate::run::Engine;
use crate::version::version_1;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One kill-and-reopen cycle.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RecoveryCycle {
    pub run_s_before_kill: f64,
    /// The child's own count at its last report before the kill (it reports once a
    /// second), so a lower bound.
    pub ops_before_kill: u64,
    /// Bytes of the engine's data directory when it was killed.
    pub data_bytes: u64,
    pub recovery_s: f64,
    pub verified_records: u64,
    pub missing_records: u64,
}

/// A recovery result (`"kind": "recovery"`): reopen time after a SIGKILL. `kind`,
/// `engine` and `cycles` are required.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Recovery {
    /// The schema version ([`crate::SCHEMA_VERSION`]); 1 where absent.
    #[serde(default = "version_1")]
    pub format: u32,
    /// Always [`Recovery::KIND`].
    pub kind: String,
    #[serde(default)]
    pub command: Vec<String>,
    /// The testbed's git commit the binary was built from (`-dirty` when the tree had
    /// uncommitted changes); empty in files older than schema version 3.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub commit: String,
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

impl Recovery {
    /// The `kind` of a recovery result.
    pub const KIND: &'static str = "recovery";
}
