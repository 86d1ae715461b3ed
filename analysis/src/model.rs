//! The result documents this crate reads. Their types are defined once, in
//! `kvtb-schema`, which the driver writes with: there is no mirror to keep in step.
//! This module adds only the directory loader with this crate's error type.

use crate::error::{Error, IoOp, Result};
use std::path::Path;

pub use kvtb_schema::{
    Ceiling, DeviceProbe, DeviceUse, Disk, Driving, Engine, Found, IntervalLatency, IoMethods,
    IoPoint, Loaded, Machine, Manifest, Measure, MemoryBound, MemoryUse, OVER_BUDGET, OpSummary,
    Phase, ProbePoint, Recovery, RecoveryCycle, RunFile, Sample, Warmup, parse_kind, parse_probe,
    parse_run,
};

/// Loads every `*.json` result file under `dir` (recursively). Files that cannot be
/// read or are not result files are listed in `skipped`; an unreadable directory is
/// an error.
pub fn load_dir(dir: &Path) -> Result<Found> {
    kvtb_schema::load_dir(dir).map_err(|e| match e {
        kvtb_schema::Error::Io { path, source } => Error::io(IoOp::ReadDir, &path, source),
        other => Error::parse(dir, other),
    })
}
