//! The durability audit (`ycsb crash`): kill-and-check cycles of a writing child.
//!
//! The fields after the first ones (`recovery_kill`, `audit`, `pending_at_kills`,
//! `kills_in_recovery`, `failure`, `child_stderr`, `kept`) came with the audit that
//! can fail (many writers, kills during recovery); they are optional and absent from
//! older files, which read and write back unchanged.

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
    /// Writes issued but not acknowledged when the child was killed (in flight).
    pub pending_at_kill: u64,
    pub keys_checked: u64,
    /// Keys found in an older written state (an acknowledged write lost).
    pub lost: u64,
    /// Keys holding a value that was never written, or not byte for byte what was
    /// written for its version (a torn or truncated value).
    pub corrupt: u64,
    /// The timed reopen by the parent, after the kills.
    pub recovery_s: f64,
    /// First few problems, for the reader.
    pub problems: Vec<String>,
    /// A second child that only reopened the engine was killed before the parent's
    /// reopen (`--recovery-kills`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_kill: Option<RecoveryKill>,
    /// Power-cut images of this cycle checked (`ycsb crash --power`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_images: Option<u64>,
}

/// The kill of a child that was reopening the engine (recovering it).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RecoveryKill {
    /// Seconds after the child said it was opening the engine.
    pub after_s: f64,
    /// Whether its open had not returned yet: a kill during recovery (otherwise it
    /// came just after the open).
    pub during_recovery: bool,
}

/// How the audit drove the engine.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CrashAudit {
    /// Client threads issuing blocking calls.
    pub writers: u64,
    /// Requests kept in flight through the asynchronous path (0: none).
    pub qd: u64,
    /// Whether that path was the engine's own (`false`: the thread-pool adapter);
    /// absent when `qd` is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub native_async: Option<bool>,
    /// Distinct keys written.
    pub keys: u64,
    /// Value sizes drawn, log-uniform, between these (bytes).
    pub value_bytes: [u64; 2],
    /// Fraction of writes that are deletes.
    pub delete_fraction: f64,
    /// The writer is killed this many milliseconds after its engine opened.
    pub kill_after_ms: [u64; 2],
    /// Fraction of cycles with a kill during recovery.
    pub recovery_kills: f64,
    pub seed: u64,
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
    /// How the audit drove the engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<CrashAudit>,
    /// Writes in flight at the kills, over all cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_at_kills: Option<u64>,
    /// Cycles whose recovery was killed while the open had not returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kills_in_recovery: Option<u64>,
    /// Why the audit failed, when it did: a child that ended other than by the
    /// parent's SIGKILL, a broken promise, a protocol error. Absent when it passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The last lines the failing child wrote to its standard error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub child_stderr: Vec<String>,
    /// Where the data directories of cycles that lost or corrupted anything were kept
    /// (as the kill left them and after the parent's recovery): the first such cycle
    /// and the one the audit stopped at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    /// The power-cut images (`ycsb crash --power`); absent when the rows are process
    /// kills only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<CrashPower>,
}

/// What `ycsb crash --power` checked besides the kills: the writer's file calls were
/// recorded (the powercut layer), and at cuts (after syncs and acknowledgements, at
/// random records, at the end) the directories a power cut could leave, by an ext4
/// data=ordered model, were built and the engine reopened and checked on each.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CrashPower {
    /// The persistence model the images follow.
    pub model: String,
    /// Cuts, over all cycles.
    pub cuts: u64,
    /// Images checked, over all cycles.
    pub images: u64,
    /// Images per state: `synced` (only what was synced), `all` (everything written:
    /// what a process kill leaves), `random` (unsynced changes kept, dropped or torn).
    pub images_by_state: std::collections::BTreeMap<String, u64>,
    /// Writes acknowledged before their cut, summed over the images.
    pub acknowledged_at_cuts: u64,
    /// Keys found in an older written state, summed over the images.
    pub lost: u64,
    /// Keys holding a value never written or not byte for byte, over the images.
    pub corrupt: u64,
    /// Images the engine refused with an error (at open or at a read), for a class
    /// that promises nothing across a power cut: a clear error, counted; for class
    /// `power` such an image fails the audit.
    pub refused: u64,
    /// Of those, images on which the engine panicked instead of returning an error
    /// (caught, counted).
    pub panicked: u64,
    /// Whether the engine's class allows losing acknowledged writes at a power cut
    /// (anything below `power`): lost keys are then counted, not failures.
    pub loss_allowed: bool,
    /// File calls and bytes recorded, over all cycles.
    pub recorded_ops: u64,
    pub recorded_bytes: u64,
}

impl Crash {
    /// The `kind` of a durability audit result.
    pub const KIND: &'static str = "crash";
}
