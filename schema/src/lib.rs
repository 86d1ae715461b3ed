//! The result schema of kvell-testbed, defined once: the driver (`ycsb`) writes these
//! types, the analysis reads them. Serde types only; no engine, no plotting.
//!
//! Every top-level document carries `format`, the schema version it was written with
//! ([`SCHEMA_VERSION`]); the readers ([`parse_run`], [`parse_kind`], [`load_dir`])
//! refuse a version they do not know. A file without `format` is version 1.
//!
//! Versions:
//! - 1: files written before this crate existed: run files carry `"format": 1`, the
//!   other documents no `format` at all.
//! - 2: every document carries `"format": 2`; names and shapes as in version 1.
//! - 3: run files add how the run was held to its memory budget
//!   ([`RunFile::memory`]), phases what the engine held ([`Phase::memory`]) and the
//!   warm-up that preceded a measured run ([`Phase::warmup`]); timeline samples add
//!   resident memory, page cache, the cgroup's charge, the engine's own accounting and
//!   its cache hit ratio. Every new field is optional: version 1 and 2 files read as
//!   before, with no memory figures.
//!
//! Documents, by their `kind` (run files have none):
//!
//! | document | type | written by |
//! | --- | --- | --- |
//! | run file | [`RunFile`] | `ycsb load`, `run`, `compare` |
//! | `device` | [`DeviceProbe`] | `ycsb device` |
//! | `iomethods` | [`IoMethods`] | `ycsb iomethods` |
//! | `recovery` | [`Recovery`] | `ycsb recovery` |
//! | `crash` | [`Crash`] | `ycsb crash` |
//! | `paper-run` | [`Manifest`] | `scripts/reproduce-paper` |
//!
//! Reading is lenient where older or hand-written files lack a field: every field has
//! a default except the few that make a document what it is, and unknown fields are
//! ignored. A count defaults to 0; a rate or ratio a reader must tell apart from zero
//! is an `Option` (`null`, shown as N/A).

mod codec;
mod crash;
mod device;
mod error;
mod iomethods;
mod machine;
mod manifest;
mod memory;
mod phase;
mod read;
mod recovery;
mod run;
mod version;

pub use crash::{Crash, CrashAudit, CrashCycle, CrashPower, RecoveryKill};
pub use device::{DeviceProbe, ProbePoint};
pub use error::Error;
pub use iomethods::{IoMethods, IoPoint};
pub use machine::{Disk, Machine};
pub use manifest::Manifest;
pub use memory::{Governed, MemoryBound, MemoryUse, OVER_BUDGET, Warmup};
pub use phase::{Ceiling, DeviceUse, IntervalLatency, Measure, OpSummary, Phase, Sample};
pub use read::{Found, Loaded, load_dir, parse_kind, parse_probe, parse_run};
pub use recovery::{Recovery, RecoveryCycle};
pub use run::{Driving, Engine, RunFile};
pub use version::{SCHEMA_VERSION, check_version, version_of};
