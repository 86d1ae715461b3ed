//! A session: the workload, its properties and how to drive it, resolved once from
//! the command line and shared by every engine a command runs.

use super::args::{DriveArgs, WorkloadArgs};
use super::workloads::resolve_properties;
use kvtb_schema::Driving;
use std::sync::Arc;
use ycsb::props::Properties;
use ycsb::workload::Workload;
use ycsb::{Error, Result};

pub(super) struct Session {
    /// The workload's name in the result (`workloada`, a file, `trace:FILE`).
    pub(super) name: String,
    pub(super) props: Properties,
    pub(super) workload: Arc<Workload>,
    pub(super) drive: Driving,
    /// Progress output (off with --quiet).
    pub(super) progress: bool,
    /// YCSB's status line (`-s`, or `status=true`), instead of the progress output.
    pub(super) status: Option<super::progress::Status>,
    /// YCSB's exporter (`exporter`) and where it writes (`exportfile`; else stdout).
    pub(super) exporter: ycsb::compat::Exporter,
    pub(super) exportfile: Option<std::path::PathBuf>,
    /// A `ycsb device` result to take ceilings from (else the disk's default one).
    pub(super) device_result: Option<std::path::PathBuf>,
    pub(super) command: Vec<String>,
}

/// Resolves the workload and the driving mode; unknown properties are warned about
/// (engine options of `engines` are known).
pub(super) fn session(w: &WorkloadArgs, d: &DriveArgs, engines: &[&str]) -> Result<Session> {
    let (name, props) = resolve_properties(w)?;
    warn_unknown(&props, engines)?;
    let workload = Arc::new(Workload::from_properties(&props)?);
    let drive = driving(d, &props, w.seed)?;
    let status_line = status(d, &props)?;
    let exporter = ycsb::compat::exporter(&props)?;
    let exportfile = props.get("exportfile").map(std::path::PathBuf::from);
    if let Some(f) = &exportfile {
        ycsb::results::check_writable(f)?;
    }
    Ok(Session {
        name,
        props,
        workload,
        drive,
        progress: !d.quiet,
        status: status_line,
        exporter,
        exportfile,
        device_result: d.device_result.clone(),
        command: std::env::args().collect(),
    })
}

/// YCSB's status line: `-s` or `status=true`, every `status.interval` seconds (10),
/// prefixed by `label`.
fn status(d: &DriveArgs, p: &Properties) -> Result<Option<super::progress::Status>> {
    let on = d.status
        || p.get("status")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if !on {
        return Ok(None);
    }
    let interval = match p.get("status.interval") {
        None => 10,
        Some(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                Error::usage(format!(
                    "property status.interval: expected a positive number of seconds, got '{v}'"
                ))
            })?,
    };
    Ok(Some(super::progress::Status {
        interval,
        label: p.get("label").cloned().unwrap_or_default(),
    }))
}

/// Refuses what YCSB properties ask that this driver cannot do, and warns about what
/// it does differently, ignores (with the reason) or does not know.
pub(super) fn warn_unknown(p: &Properties, engines: &[&str]) -> Result<()> {
    for w in ycsb::compat::check(p, engines)? {
        eprintln!("warning: {w}");
    }
    Ok(())
}

fn prop_f64(p: &Properties, k: &str) -> Result<Option<f64>> {
    match p.get(k) {
        None => Ok(None),
        Some(v) => match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err(Error::usage(format!(
                "property {k}: expected a non-negative number, got '{v}'"
            ))),
        },
    }
}

/// How to drive the engine: the options, else the workload's properties (YCSB's
/// threadcount, target, warmuptime, maxexecutiontime).
fn driving(d: &DriveArgs, p: &Properties, seed: u64) -> Result<Driving> {
    let threads = match d.threads {
        Some(t) => t,
        None => prop_f64(p, "threadcount")?.map(|x| x as usize).unwrap_or(1),
    };
    if threads == 0 {
        return Err(Error::usage("--threads must be at least 1"));
    }
    if d.qd == Some(0) {
        return Err(Error::usage("--qd must be at least 1"));
    }
    let target = match d.target {
        Some(t) => Some(t),
        None => prop_f64(p, "target")?.filter(|t| *t > 0.0),
    };
    if let Some(t) = target
        && !(t.is_finite() && t > 0.0)
    {
        return Err(Error::usage(format!(
            "--target must be a positive rate, got {t}"
        )));
    }
    let (warmup, until_steady) = match d.warmup.as_deref() {
        Some("auto") => {
            if !(d.warmup_max.is_finite() && d.warmup_max > 0.0) {
                return Err(Error::usage(
                    "--warmup-max must be a positive number of seconds",
                ));
            }
            (0.0, Some(d.warmup_max))
        }
        Some(w) => (
            w.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| {
                    Error::usage(format!(
                        "--warmup: expected a number of seconds or auto, got '{w}'"
                    ))
                })?,
            None,
        ),
        None => (prop_f64(p, "warmuptime")?.unwrap_or(0.0), None),
    };
    let max_time = match d.duration {
        Some(x) => Some(x),
        None => prop_f64(p, "maxexecutiontime")?.filter(|x| *x > 0.0),
    };
    if warmup < 0.0 || max_time.is_some_and(|x| x <= 0.0) {
        return Err(Error::usage(
            "--warmup must not be negative and --duration must be positive",
        ));
    }
    if d.arrival != "constant" && d.arrival != "poisson" {
        return Err(Error::usage(format!(
            "--arrival: expected constant or poisson, got '{}'",
            d.arrival
        )));
    }
    if d.adapter != "threads" && d.adapter != "pool" {
        return Err(Error::usage(format!(
            "--adapter: expected threads or pool, got '{}'",
            d.adapter
        )));
    }
    Ok(Driving {
        adapter: d.qd.map(|_| d.adapter.clone()),
        arrival: d.arrival.clone(),
        threads,
        queue_depth: d.qd,
        target_ops: target,
        warmup_s: warmup,
        warmup_until_steady_max_s: until_steady,
        max_time_s: max_time,
        seed,
        native_async: None,
    })
}

/// The --memory budget in bytes.
pub(super) fn memory(d: &DriveArgs) -> Result<Option<u64>> {
    d.memory
        .as_deref()
        .map(|m| {
            kvapi::parse_bytes(m).ok_or_else(|| {
                Error::usage(format!(
                    "--memory: expected a size such as 512M or 1G, got '{m}'"
                ))
            })
        })
        .transpose()
}
