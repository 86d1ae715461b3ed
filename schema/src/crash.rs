//! The durability audit (`ycsb crash`): kill-and-check cycles of a writing child.

use crate::machine::Machine;
use crate::run::Engine;
use crate::version::version_1;
use serde::{Deserialize, Serialize};

/// One kill-and-check cycle.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CrashCycle {
    pub cycle: u64,
    /// Writes the child acknowledged in this cycle.
    pub acknowledged: u64,
    /// Writes issued but not acknowledged when the child was killed (at most one).
    pub pending_at_kill: u64,
    pub keys_checked: u64,
    /// Keys that lost an acknowledged write.
    pub lost: u64,
    /// Keys holding a value that was never written or fails its check.
    pub corrupt: u64,
    pub recovery_s: f64,
    /// First few problems, for the reader.
    pub problems: Vec<String>,
}

/// A durability audit result (`"kind": "crash"`). `kind`, `engine` and `cycles` are
/// required.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Crash {
    /// The schema version ([`crate::SCHEMA_VERSION`]); 1 where absent.
    #[serde(default = "version_1")]
    pub format: u32,
    /// Always [`Crash::KIND`].
    pub kind: String,
    #[serde(default)]
    pub command: Vec<String>,
    /// The testbed's git commit the binary was built from (`-dirty` when the tree had
    /// uncommitted changes); empty in files older than schema version 3.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub commit: String,
    #[serde(default)]
    pub machine: Machine,
    pub engine: Engine,
    pub cycles: Vec<CrashCycle>,
    #[serde(default)]
    pub acknowledged: u64,
    #[serde(default)]
    pub lost: u64,
    #[serde(default)]
    pub corrupt: u64,
    #[serde(default)]
    pub recovery_p50_s: f64,
    #[serde(default)]
    pub recovery_max_s: f64,
}

impl Crash {
    /// The `kind` of a durability audit result.
    pub const KIND: &'static str = "crash";
}
