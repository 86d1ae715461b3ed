//! Result documents (the schema's types) as the driver fills, writes and reads them:
//! an engine's description and counters from the engine interface, JSON files, and
//! the `ycsb device` result a run takes its ceiling from.

use crate::error::{Error, Result};
use kvapi::{Counters, EngineInfo};
use kvtb_schema::{DeviceProbe, Engine};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// An engine as configured for a run, from what it says about itself.
pub fn engine_of(i: &EngineInfo) -> Engine {
    Engine {
        name: i.engine.clone(),
        durability: i.durability.as_str().into(),
        durability_setting: i.durability_setting.clone(),
        cache_bytes: i.cache_bytes,
        direct_io: i.direct_io,
        settings: i.settings.iter().cloned().collect(),
        notes: i.notes.clone(),
        max_key: i.limits.max_key,
        max_value: i.limits.max_value,
    }
}

/// Engine counters at a point in time; `null` means the engine cannot report it.
pub fn counters_map(c: &Counters) -> BTreeMap<String, Option<u64>> {
    c.entries().into_iter().collect()
}

/// Writes a document as pretty JSON with a final newline, creating the directory.
pub fn write_json(path: &Path, doc: &impl Serialize) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io_at("cannot create", dir, e))?;
    }
    let json = serde_json::to_string_pretty(doc).map_err(|source| Error::Json {
        what: "serialising the result".into(),
        source,
    })?;
    std::fs::write(path, json + "\n").map_err(|e| Error::io_at("cannot write", path, e))
}

/// Checks before any work that `path` can be written (its directory made if
/// missing): a result that cannot be written is found at the start, not after the run.
pub fn check_writable(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io_at("cannot create", dir, e))?;
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| Error::io_at("cannot write", path, e))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Reads a `ycsb device` result.
pub fn read_device_probe(path: &Path) -> Result<DeviceProbe> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io_at("cannot read", path, e))?;
    let r: DeviceProbe = serde_json::from_str(&text).map_err(|source| Error::Json {
        what: format!("{} is not a device result", path.display()),
        source,
    })?;
    if r.kind != DeviceProbe::KIND {
        return Err(Error::Invalid {
            file: path.display().to_string(),
            problem: format!("is not a device result (kind '{}')", r.kind),
        });
    }
    kvtb_schema::check_version(r.format)
        .map_err(|e| Error::from(e).context(path.display().to_string()))?;
    Ok(r)
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The run file of an engine run that produced none of its own (killed at its memory
/// limit, failed before writing): the command, the commit, the machine, the engine's
/// name and a note; no phases.
pub fn stub_run(engine: &str, note: &str) -> kvtb_schema::RunFile {
    kvtb_schema::RunFile {
        format: kvtb_schema::SCHEMA_VERSION,
        testbed_version: env!("CARGO_PKG_VERSION").into(),
        command: std::env::args().collect(),
        commit: env!("KVTB_COMMIT").into(),
        started_unix_s: unix_now(),
        machine: crate::machine::describe(None),
        engine: kvtb_schema::Engine {
            name: engine.into(),
            durability: String::new(),
            durability_setting: String::new(),
            cache_bytes: None,
            direct_io: None,
            settings: Default::default(),
            notes: if note.is_empty() {
                vec![]
            } else {
                vec![note.into()]
            },
            max_key: 0,
            max_value: 0,
        },
        workload: String::new(),
        properties: Default::default(),
        workload_resolved: Default::default(),
        driving: Default::default(),
        memory: Default::default(),
        phases: vec![],
        close_error: None,
    }
}
