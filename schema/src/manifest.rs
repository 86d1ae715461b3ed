//! `manifest.json` of a reproduce-paper run (written by `scripts/reproduce-paper`).

use crate::codec::{null_as_zero, zero_as_null};
use crate::machine::Machine;
use crate::version::{SCHEMA_VERSION, version_1};
use serde::{Deserialize, Serialize};

/// The manifest of a reproduce-paper run (`"kind": "paper-run"`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Manifest {
    /// The schema version ([`SCHEMA_VERSION`]); 1 where absent.
    #[serde(default = "version_1")]
    pub format: u32,
    /// Always [`Manifest::KIND`].
    pub kind: String,
    /// `ci`, `small` or `paper`.
    pub scale: String,
    pub command: Vec<String>,
    /// The testbed's git commit the binary was built from (`-dirty` when the tree had
    /// uncommitted changes); empty in files older than schema version 3.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub commit: String,
    pub started_unix_s: u64,
    pub finished_unix_s: u64,
    pub machine: Machine,
    pub records: u64,
    pub value_bytes: u64,
    /// The memory budget; 0 where not known (`null`).
    #[serde(deserialize_with = "null_as_zero", serialize_with = "zero_as_null")]
    pub memory_bytes: u64,
    pub queue_depth: u64,
    pub operations: u64,
    pub scan_operations: u64,
    /// Runs limited by time rather than by count: seconds per run, and for the
    /// timeline runs (YCSB A and E uniform).
    pub run_seconds: Option<f64>,
    pub timeline_seconds: Option<f64>,
    pub engines: Vec<String>,
    pub notes: Vec<String>,
}

impl Default for Manifest {
    fn default() -> Manifest {
        Manifest {
            format: SCHEMA_VERSION,
            kind: Manifest::KIND.into(),
            scale: String::new(),
            command: Vec::new(),
            commit: String::new(),
            started_unix_s: 0,
            finished_unix_s: 0,
            machine: Machine::default(),
            records: 0,
            value_bytes: 0,
            memory_bytes: 0,
            queue_depth: 0,
            operations: 0,
            scan_operations: 0,
            run_seconds: None,
            timeline_seconds: None,
            engines: Vec::new(),
            notes: Vec::new(),
        }
    }
}

impl Manifest {
    /// The `kind` of a reproduce-paper manifest.
    pub const KIND: &'static str = "paper-run";
}
