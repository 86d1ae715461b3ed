//! One engine through the phases a command asks for, measured: the data directory
//! made fresh, the engine opened (timed), each phase run between two readings of the
//! engine's counters with its summary printed and the device's ceiling added, the
//! engine closed; the result is the run file.

use super::device::default_device_result;
use super::memory::{Bound, driver_room, set_limit, unbounded_refusal};
use super::progress;
use super::session::Session;
use kvapi::Engine;
use kvtb_schema::{DeviceProbe, Machine, MemoryBound, Phase, RunFile, SCHEMA_VERSION};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use ycsb::measure::Watch;
use ycsb::memory::{evict_page_cache, proc_mem};
use ycsb::results::{counters_map, engine_of, read_device_probe, unix_now};
use ycsb::runner::{self, Ctx};
use ycsb::workload::{Op, Workload};
use ycsb::{Error, Result, device, engines, machine, report};

/// A trace to replay, prepared once.
pub(super) struct Replay {
    pub(super) file: PathBuf,
    pub(super) ops: Arc<Vec<Op>>,
    /// Keys read before they are written, with their value sizes: loaded first.
    pub(super) preload: Arc<Vec<(String, usize)>>,
    pub(super) description: String,
    pub(super) unknown_ops: BTreeMap<String, u64>,
    pub(super) speed: Option<f64>,
}

/// What to run on the engine.
pub(super) enum Work<'a> {
    /// The workload's load phase, its run phase, or both.
    Workload { load: bool, run: bool },
    /// A trace (its keys read before written are loaded first).
    Replay(&'a Replay),
}

/// Which engine, where.
pub(super) struct Target<'a> {
    pub(super) engine: &'a str,
    /// Root of the data directories (the engine's is `<data>/<engine>` by default).
    pub(super) data: &'a Path,
    pub(super) memory: Option<u64>,
    /// How the budget is held (see `memory.rs`).
    pub(super) bound: &'a Bound,
    /// Remove the engine's data directory first (only one holding that engine's data).
    pub(super) fresh: bool,
    /// Let the memory governor resize the engine's cache (`--memory-governor`).
    pub(super) govern: bool,
}

/// Opens the engine of `t`, runs `work` and returns the run file.
pub(super) fn run_engine(s: &Session, t: &Target<'_>, work: Work<'_>) -> Result<RunFile> {
    let opts = engines::options(t.engine, &s.props, t.data, t.memory);
    let dir = opts.is_set("dir").then(|| opts.path("dir", ""));
    let dirs: Vec<PathBuf> = dir
        .iter()
        .flat_map(|d| {
            d.display()
                .to_string()
                .split(',')
                .map(|one| PathBuf::from(one.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    if t.fresh {
        for d in &dirs {
            wipe_engine_dir(t.engine, d)?;
        }
    }
    // the driver's threads: client threads, and at --qd up to one pool thread per
    // request in flight (engines without a native asynchronous path)
    let room = driver_room(s.drive.threads, s.drive.queue_depth.unwrap_or(0));
    let (driver_rss, evicted, limit) = before_open(t, &dirs, room)?;
    let started = unix_now();
    let t_open = std::time::Instant::now();
    let engine: Arc<dyn Engine> = engines::open(t.engine, &opts)?;
    let open_s = t_open.elapsed().as_secs_f64();
    let mut report = run_file(s, &engine, dir.as_deref(), started, open_s);
    in_memory_data(&mut report, dir.as_deref());
    let uses_os_page_cache = t.engine != "null" && report.engine.direct_io != Some(true);
    if t.memory.is_some()
        && uses_os_page_cache
        && let Bound::Unbounded { why, asked: false } = t.bound
    {
        let _ = engine.close();
        return Err(unbounded_refusal(t.engine, why));
    }
    report.memory = MemoryBound {
        budget_bytes: t.memory,
        enforcement: t.bound.describe(),
        limit_bytes: limit,
        driver_rss_bytes: driver_rss,
        page_cache_evicted_bytes: evicted,
        uses_os_page_cache,
        killed_at_limit: false,
        refused_at_open: false,
    };
    super::memory::opened(&report);
    let watch = Arc::new(Watch {
        engine: engine.clone(),
        dirs,
        cgroup: t.bound.cgroup().cloned(),
        budget: t.memory,
        driver_rss,
        governor: if t.govern {
            Watch::governor_for(engine.as_ref(), t.memory)
        } else {
            None
        },
    });
    let roofline = device_result(s, &report.machine)?;
    let disk = report.machine.disk.as_ref().map(|d| d.device.clone());
    let on = Phases {
        session: s,
        engine: engine.as_ref(),
        roofline: roofline.as_ref(),
        ctx: progress::ctx(s.progress, s.status.clone(), disk, Some(watch)),
    };
    match work {
        Work::Replay(rp) => on.replay(&mut report, &engine, rp)?,
        Work::Workload { load, run } => {
            if load {
                on.measure(&mut report, |d, ctx| {
                    runner::load(engine.clone(), s.workload.clone(), d, ctx)
                })?;
            }
            if run && runner::over_budget().is_none() {
                if !load && t.engine != "null" {
                    warn_if_not_loaded(engine.as_ref(), t.engine, &s.workload);
                }
                if let Some(max) = report.driving.warmup_until_steady_max_s {
                    on.measure(&mut report, |d, ctx| {
                        runner::warmup(engine.clone(), &s.workload, d, ctx, max)
                    })?;
                }
                on.measure(&mut report, |d, ctx| {
                    runner::run(engine.clone(), s.workload.clone(), d, ctx)
                })?;
            }
        }
    }
    // A close that fails (a full disk refusing the last checkpoint, a failed sync)
    // does not take the measured phases with it: the result says why, and the
    // command fails once it is written.
    if let Err(e) = engine.close() {
        let why = format!("closing {}: {e}", t.engine);
        eprintln!("error: {why}");
        report.close_error = Some(why);
    }
    Ok(report)
}

/// Before the engine opens: its files dropped from the OS page cache (no engine
/// starts with pages an earlier process cached, whatever cgroup those are charged
/// to), the driver's own resident memory read, and the run's cgroup limit set to the
/// budget plus what the process is charged now. Returns (driver RSS, bytes evicted,
/// the limit).
fn before_open(t: &Target<'_>, dirs: &[PathBuf], room: u64) -> Result<(u64, u64, Option<u64>)> {
    let mut evicted = 0;
    for d in dirs.iter().filter(|d| d.is_dir()) {
        evicted +=
            evict_page_cache(d).map_err(|e| Error::io_at("dropping the page cache of", d, e))?;
    }
    let driver_rss = proc_mem()
        .map_err(|e| Error::io("reading /proc/self/status", e))?
        .rss;
    let limit = set_limit(t.bound, t.memory, room)?;
    Ok((driver_rss, evicted, limit))
}

/// Data on a file system that lives in memory (tmpfs) reaches no disk: whatever the
/// engine promises, an acknowledged write dies with the machine, so the result says
/// class `none` and that direct I/O means nothing there.
fn in_memory_data(report: &mut RunFile, dir: Option<&Path>) {
    let Some(fs) = dir.and_then(machine::filesystem_of) else {
        return;
    };
    if !machine::in_memory_filesystem(&fs) || report.engine.name == "null" {
        return;
    }
    eprintln!(
        "warning: the data directory is on {fs}: nothing reaches a disk, so durability is class none whatever {} promises, direct I/O means nothing, and the device counters are not this engine's",
        report.engine.name
    );
    let e = &mut report.engine;
    e.durability_setting = format!(
        "{} (data on {fs}: nothing reaches a disk; promised class {})",
        e.durability_setting, e.durability
    );
    e.durability = "none".into();
    e.direct_io = None;
    e.notes.push(format!(
        "data on {fs}: held in memory, no disk I/O; class none"
    ));
}

/// The run file before its phases: the command, the machine, the engine as opened,
/// the workload and the driving mode.
fn run_file(
    s: &Session,
    engine: &Arc<dyn Engine>,
    dir: Option<&Path>,
    started: u64,
    open_s: f64,
) -> RunFile {
    let mut drive = s.drive.clone();
    if drive.queue_depth.is_some() {
        drive.native_async = Some(engine.clone().native_async().is_some());
    }
    let mut e = engine_of(&engine.info());
    e.settings
        .insert("open_seconds".into(), format!("{open_s:.3}"));
    RunFile {
        format: SCHEMA_VERSION,
        testbed_version: env!("CARGO_PKG_VERSION").into(),
        command: s.command.clone(),
        commit: env!("KVTB_COMMIT").into(),
        started_unix_s: started,
        machine: machine::describe(dir),
        engine: e,
        workload: s.name.clone(),
        properties: s.props.clone(),
        workload_resolved: resolved_workload(&s.workload),
        driving: drive,
        memory: MemoryBound::default(),
        phases: vec![],
        close_error: None,
    }
}

/// The device result a run takes its ceiling from: the one given, else the disk's
/// default one if it exists.
fn device_result(s: &Session, m: &Machine) -> Result<Option<(PathBuf, DeviceProbe)>> {
    let path = s.device_result.clone().or_else(|| {
        m.disk
            .as_ref()
            .map(|d| default_device_result(&d.device))
            .filter(|p| p.is_file())
    });
    match path {
        Some(p) => {
            let probe = read_device_probe(&p)?;
            Ok(Some((p, probe)))
        }
        None => Ok(None),
    }
}

/// Runs phases on one engine.
struct Phases<'a> {
    session: &'a Session,
    engine: &'a dyn Engine,
    roofline: Option<&'a (PathBuf, DeviceProbe)>,
    ctx: Ctx,
}

impl Phases<'_> {
    /// Runs a phase between two readings of the engine's counters, adds the device
    /// ceiling, prints the summary and keeps the result.
    fn measure(
        &self,
        report: &mut RunFile,
        phase: impl FnOnce(&kvtb_schema::Driving, &Ctx) -> Result<Phase>,
    ) -> Result<()> {
        let before = self.engine.counters();
        let mut p = phase(&report.driving, &self.ctx)?;
        p.ceiling = self
            .roofline
            .and_then(|(path, d)| device::ceiling(&p, path, d));
        p.counters_before = counters_map(&before);
        p.counters_after = counters_map(&self.engine.counters());
        let text = report::summary(report, &p);
        self.export(&text)?;
        report.phases.push(p);
        Ok(())
    }

    /// The phase's measurements as YCSB's exporter writes them: the text summary on
    /// stdout, and the exporter's form in the export file (each phase replaces the one
    /// before, so it holds the last, as YCSB's export of that command would); with a
    /// JSON exporter and no export file, the JSON on stdout instead of the text.
    fn export(&self, text: &str) -> Result<()> {
        use ycsb::compat::Exporter;
        let s = self.session;
        let json = |array| report::export_json(text, array);
        let (stdout, file) = match (s.exporter, &s.exportfile) {
            (Exporter::Text, f) => (text.to_string(), f.as_ref().map(|f| (f, text.to_string()))),
            (Exporter::JsonArray, None) => (json(true) + "\n", None),
            (Exporter::Json, None) => (json(false) + "\n", None),
            (Exporter::JsonArray, Some(f)) => (text.to_string(), Some((f, json(true)))),
            (Exporter::Json, Some(f)) => (text.to_string(), Some((f, json(false)))),
        };
        let _ = write!(std::io::stdout(), "{stdout}");
        if let Some((f, body)) = file {
            std::fs::write(f, body)
                .map_err(|e| Error::io_at("cannot write the export file", f, e))?;
        }
        Ok(())
    }

    /// Replays a trace: its keys read before written are loaded first.
    fn replay(&self, report: &mut RunFile, engine: &Arc<dyn Engine>, rp: &Replay) -> Result<()> {
        report.workload_resolved = BTreeMap::from([
            ("trace".to_string(), rp.file.display().to_string()),
            ("trace_contents".to_string(), rp.description.clone()),
            (
                "preloaded_keys".to_string(),
                format!(
                    "{} keys read before written, loaded first",
                    rp.preload.len()
                ),
            ),
            (
                "timing".to_string(),
                rp.speed.map_or("closed loop".to_string(), |sp| {
                    format!("recorded times / {sp}")
                }),
            ),
            (
                "unknown_ops_skipped".to_string(),
                format!("{:?}", rp.unknown_ops),
            ),
        ]);
        if !rp.preload.is_empty() {
            let items = rp.preload.clone();
            self.measure(report, |d, ctx| {
                runner::load_items(
                    engine.clone(),
                    items.len() as u64,
                    |_| (),
                    |_, i| items[i as usize].clone(),
                    1,
                    d,
                    ctx,
                    "load",
                )
            })?;
        }
        self.measure(report, |d, ctx| {
            runner::replay(engine.clone(), rp.ops.clone(), d, ctx)
        })
    }
}

/// A run without a load of its own warns when the first record is missing.
fn warn_if_not_loaded(engine: &dyn Engine, name: &str, w: &Workload) {
    let first = w.key(w.insertstart);
    if let Ok(None) = engine.get(first.as_bytes()) {
        eprintln!(
            "warning: the first record ({first}) is missing from {name}: load the data first (`ycsb load` with the same workload) or pass --load"
        );
    }
}

/// Derived workload parameters, for the result.
fn resolved_workload(w: &Workload) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert("recordcount".into(), w.recordcount.to_string());
    m.insert("operationcount".into(), w.operationcount.to_string());
    m.insert("value_bytes_max".into(), w.max_value_len().to_string());
    m.insert("value_length".into(), format!("{:?}", w.value_len));
    m.insert("scan_length".into(), format!("{:?}", w.scan_len));
    m.insert("requestdistribution".into(), w.request_distribution.clone());
    m.insert(
        "insertorder".into(),
        if w.ordered_inserts {
            "ordered"
        } else {
            "hashed"
        }
        .into(),
    );
    m.insert(
        "mix".into(),
        w.mix
            .iter()
            .map(|(k, x)| format!("{}={x:.4}", k.ycsb_name()))
            .collect::<Vec<_>>()
            .join(","),
    );
    m.insert("dataintegrity".into(), w.dataintegrity.to_string());
    m
}

/// Removes an engine's data directory if it holds that engine's data (or is empty).
pub(super) fn wipe_engine_dir(engine: &str, dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let marker = std::fs::read_to_string(dir.join(kvapi::MARKER_FILE)).ok();
    let empty = std::fs::read_dir(dir)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false);
    match marker {
        Some(m) if m.trim() == engine => {}
        _ if empty => {}
        Some(m) => {
            return Err(Error::usage(format!(
                "{} holds a {} database, not {engine}: not removing it",
                dir.display(),
                m.trim()
            )));
        }
        None => {
            return Err(Error::usage(format!(
                "{} holds files of no known engine: not removing it",
                dir.display()
            )));
        }
    }
    std::fs::remove_dir_all(dir).map_err(|e| Error::io_at("cannot remove", dir, e))
}
