//! `ycsb load` and `ycsb run`: one engine through the workload's load and/or run
//! phase, or through a trace (`run --trace`); the summary printed, the run file
//! written with --out, and a failed engine made a failed command.

use super::args::{DriveArgs, OnOff, WorkloadArgs};
use super::engine_run::{Replay, Target, Work, run_engine};
use super::memory::{Held, hold};
use super::session::{memory, session};
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use ycsb::results::write_json;
use ycsb::{Error, Result, engines, runner, trace};

#[derive(Args, Debug)]
pub(super) struct PhaseArgs {
    /// Engine: kvell, wal, rocksdb, sled, wiredtiger or null (`ycsb engines` lists those of this build).
    #[arg(long)]
    pub(super) engine: String,
    #[command(flatten)]
    pub(super) workload: WorkloadArgs,
    #[command(flatten)]
    pub(super) drive: DriveArgs,
    /// Remove the engine's existing data directory first (only if it holds data of
    /// that same engine).
    #[arg(long)]
    pub(super) fresh: bool,
    /// Write the JSON result here.
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(super) struct RunArgs {
    #[command(flatten)]
    pub(super) phase: PhaseArgs,
    /// Load the records first, in the same process.
    #[arg(long)]
    pub(super) load: bool,
    /// Replay this trace (our CSV or binary form; see `ycsb trace convert`) instead
    /// of a workload. Keys read before they are written are loaded first.
    #[arg(long)]
    pub(super) trace: Option<PathBuf>,
    /// Replay at the trace's recorded times divided by this factor (2 = twice as
    /// fast); without it the replay is closed loop.
    #[arg(long)]
    pub(super) speed: Option<f64>,
    /// Value size for keys whose size the trace does not give.
    #[arg(long, default_value_t = 100)]
    pub(super) default_value_size: usize,
}

/// `ycsb load` (`load`) or `ycsb run` (`run`, and `load` with --load).
pub(super) fn phases(a: &PhaseArgs, load: bool, run: bool) -> Result<()> {
    if !engines::ALL.contains(&a.engine.as_str()) {
        return Err(Error::usage(format!(
            "unknown engine '{}' (known: {})",
            a.engine,
            engines::built().join(", ")
        )));
    }
    let s = session(&a.workload, &a.drive, engines::ALL)?;
    let budget = memory(&a.drive)?;
    let bound = match hold(budget, a.drive.memory_limit, &a.engine, a.out.as_deref())? {
        Held::Child(code) => return child_exit(code),
        Held::Here(b) => b,
    };
    let target = Target {
        engine: &a.engine,
        data: &a.drive.data,
        memory: budget,
        bound: &bound,
        fresh: a.fresh,
        govern: a.drive.memory_governor == OnOff::On,
    };
    let report = match run_engine(&s, &target, Work::Workload { load, run }) {
        Err(Error::Engine {
            source: source @ kvapi::Error::OverBudget { .. },
            ..
        }) => {
            return Err(refused_over_budget(
                &a.engine,
                budget,
                &source,
                a.out.as_deref(),
            ));
        }
        other => other?,
    };
    if let Some(out) = &a.out {
        write_json(out, &report)?;
        eprintln!("result written to {}", out.display());
    }
    let errors: u64 = report.phases.iter().map(|p| p.errors).sum();
    if errors > 0 {
        eprintln!("warning: {errors} operations failed; see the Return= lines");
    }
    // An I/O error, a refusal after one, or corruption means the store failed: the
    // run is not a measurement, so the command fails (results are written first).
    let fatal: u64 = report
        .phases
        .iter()
        .flat_map(|p| &p.ops)
        .flat_map(|o| &o.status)
        .filter(|(s, _)| matches!(s.as_str(), "IO_ERROR" | "POISONED" | "CORRUPTION" | "ERROR"))
        .map(|(_, n)| n)
        .sum();
    if let Some(why) = runner::over_budget() {
        return Err(Error::OverBudget(format!(
            "{} did not fit its memory budget: {why}",
            a.engine
        )));
    }
    let close = report
        .close_error
        .as_ref()
        .map(|why| format!("; then its close failed: {why}"))
        .unwrap_or_default();
    if fatal > 0 {
        return Err(Error::failed(format!(
            "the engine failed: {fatal} operations ended in IO_ERROR, POISONED, CORRUPTION or \
             ERROR; the first: {}{close}",
            runner::first_error().unwrap_or("(no message)")
        )));
    }
    if let Some(why) = &report.close_error {
        return Err(Error::failed(format!(
            "the engine's close failed (the phases are written as measured): {why}"
        )));
    }
    Ok(())
}

/// An engine that refused its budget at open (the budget is below what it must hold):
/// a run file with no phases that says so, so that `ycsb compare` shows the engine
/// apart as over budget; the command exits as over budget.
fn refused_over_budget(
    engine: &str,
    budget: Option<u64>,
    why: &kvapi::Error,
    out: Option<&Path>,
) -> Error {
    let msg = format!("{engine} refused its memory budget at open: {why}");
    if let Some(out) = out {
        let mut r = ycsb::results::stub_run(engine, &msg);
        r.memory.budget_bytes = budget;
        r.memory.enforcement = "refused by the engine at open: over budget".into();
        r.memory.refused_at_open = true;
        if let Err(e) = write_json(out, &r) {
            return e;
        }
        eprintln!("result (the refusal) written to {}", out.display());
    }
    Error::OverBudget(msg)
}

/// `ycsb run --trace FILE`: replays the trace.
pub(super) fn replay(a: &RunArgs, file: &Path) -> Result<()> {
    if let Some(sp) = a.speed
        && !(sp.is_finite() && sp > 0.0)
    {
        return Err(Error::usage(format!(
            "--speed must be a positive factor, got {sp}"
        )));
    }
    let t = trace::read(file)?;
    if t.records.is_empty() {
        return Err(Error::usage(format!(
            "{} holds no request this testbed can replay",
            file.display()
        )));
    }
    let replay = Replay {
        description: trace::describe(&t.records),
        preload: Arc::new(trace::preload_set(&t.records, a.default_value_size)),
        ops: Arc::new(trace::to_ops(&t.records, a.speed, a.default_value_size)),
        unknown_ops: t.unknown_ops,
        speed: a.speed,
        file: file.to_path_buf(),
    };
    for (op, n) in &replay.unknown_ops {
        eprintln!("warning: {n} requests with op '{op}' are not replayed");
    }
    let mut w = a.phase.workload.clone();
    if w.workload.is_none() && w.property_files.is_empty() {
        // engine options may still come with -p; the workload itself is the trace
        w.workload = Some("C".into());
    }
    let mut s = session(&w, &a.phase.drive, engines::ALL)?;
    s.name = format!("trace:{}", replay.file.display());
    let budget = memory(&a.phase.drive)?;
    let limit = a.phase.drive.memory_limit;
    let bound = match hold(budget, limit, &a.phase.engine, a.phase.out.as_deref())? {
        Held::Child(code) => return child_exit(code),
        Held::Here(b) => b,
    };
    let target = Target {
        engine: &a.phase.engine,
        data: &a.phase.drive.data,
        memory: budget,
        bound: &bound,
        fresh: a.phase.fresh,
        govern: a.phase.drive.memory_governor == OnOff::On,
    };
    let report = run_engine(&s, &target, Work::Replay(&replay))?;
    if let Some(out) = &a.phase.out {
        write_json(out, &report)?;
        eprintln!("result written to {}", out.display());
    }
    if let Some(why) = &report.close_error {
        return Err(Error::failed(format!(
            "the engine's close failed (the phases are written as measured): {why}"
        )));
    }
    Ok(())
}

/// The end of a run that ran in a child inside its memory cgroup: its exit code is
/// this command's (the child printed everything).
fn child_exit(code: i32) -> Result<()> {
    match code {
        0 => Ok(()),
        _ => std::process::exit(code),
    }
}
