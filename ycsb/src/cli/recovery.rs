//! `ycsb recovery` (the paper's section 6.5): the records loaded, then per cycle a child
//! `ycsb run` killed with SIGKILL mid-run and the engine reopened (timed) and checked.

use super::args::{DriveArgs, OnOff, WorkloadArgs, forward_args};
use super::engine_run::{Target, Work, run_engine};
use super::memory::Bound;
use super::session::{memory, session};
use clap::Args;
use kvtb_schema::{Recovery, SCHEMA_VERSION};
use std::path::PathBuf;
use ycsb::recovery::{CycleDone, Plan};
use ycsb::results::write_json;
use ycsb::{Error, Result, engines};

#[derive(Args, Debug)]
pub(super) struct RecoveryArgs {
    /// Engine to crash and reopen.
    #[arg(long)]
    pub(super) engine: String,
    #[command(flatten)]
    pub(super) workload: WorkloadArgs,
    #[command(flatten)]
    pub(super) drive: DriveArgs,
    /// Seconds the workload runs in the child before the kill.
    #[arg(long, default_value_t = 5.0)]
    pub(super) run_seconds: f64,
    /// Kill-and-reopen cycles.
    #[arg(long, default_value_t = 1)]
    pub(super) cycles: u64,
    /// Records read back after each reopen (evenly spaced over the key space; 0 = all).
    #[arg(long, default_value_t = 10000)]
    pub(super) verify: u64,
    /// Write the JSON result here.
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
}

pub(super) fn recovery(a: &RecoveryArgs) -> Result<()> {
    if !engines::is_built(&a.engine) || a.engine == "null" {
        return Err(Error::usage(format!(
            "unknown, unbuilt or stateless engine '{}' (built: {})",
            a.engine,
            engines::built().join(", ")
        )));
    }
    if !(a.run_seconds.is_finite() && a.run_seconds > 0.0) || a.cycles == 0 {
        return Err(Error::usage(
            "--run-seconds must be positive and --cycles at least 1",
        ));
    }
    let mut s = session(&a.workload, &a.drive, engines::ALL)?;
    s.progress = false;
    let mem = memory(&a.drive)?;
    eprintln!(
        "loading {} records into {} ...",
        s.workload.recordcount, a.engine
    );
    // recovery times the engine's open; the budget sizes its caches, and what it holds
    // is measured, not bounded by a cgroup of its own
    let bound = Bound::Unbounded {
        why: "ycsb recovery measures the time to reopen; memory is measured, not held".into(),
        asked: true,
    };
    let target = Target {
        engine: &a.engine,
        data: &a.drive.data,
        memory: mem,
        bound: &bound,
        fresh: true,
        govern: a.drive.memory_governor == OnOff::On,
    };
    let load = run_engine(
        &s,
        &target,
        Work::Workload {
            load: true,
            run: false,
        },
    )?;
    if let Some(why) = &load.close_error {
        return Err(Error::failed(format!(
            "the load's close failed, so there is no store to recover: {why}"
        )));
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("locating ycsb", e))?;
    let mut child_args = vec!["run".to_string(), "--engine".into(), a.engine.clone()];
    child_args.extend(forward_args(&a.workload, &a.drive));
    // The writer that is killed is held like the reopen: its memory is measured, not
    // bounded (a cgroup kill before the SIGKILL would end the cycle without one).
    if let Some(i) = child_args.iter().position(|x| x == "--memory-limit") {
        child_args[i + 1] = "none".into();
    }
    // The child runs far longer than the kill comes, reporting every second.
    child_args.extend([
        "--duration".into(),
        "1000000".into(),
        "-p".into(),
        "operationcount=1000000000000".into(),
    ]);
    let opts = engines::options(&a.engine, &s.props, &a.drive.data, mem);
    let r = ycsb::recovery::measure(
        &Plan {
            exe,
            child_args,
            run_seconds: a.run_seconds,
            cycles: a.cycles,
            verify: a.verify,
        },
        &s.workload,
        &|| engines::open(&a.engine, &opts),
        &opts.path("dir", ""),
        &mut show,
    )?;
    let value_bytes = s.workload.max_value_len() as u64;
    println!(
        "engine    durability  records  cycles  data MiB  recovery median  max       verified  missing"
    );
    let max = r.cycles.iter().map(|c| c.recovery_s).fold(0.0, f64::max);
    let missing: u64 = r.cycles.iter().map(|c| c.missing_records).sum();
    println!(
        "{:<9} {:<11} {:>7} {:>7} {:>9.0} {:>15.3}s {:>8.3}s {:>9} {:>8}",
        a.engine,
        load.engine.durability,
        s.workload.recordcount,
        a.cycles,
        r.cycles.last().map_or(0, |c| c.data_bytes) as f64 / (1 << 20) as f64,
        r.median_s,
        max,
        r.cycles.iter().map(|c| c.verified_records).sum::<u64>(),
        missing
    );
    if let Some(out) = &a.out {
        let doc = Recovery {
            format: SCHEMA_VERSION,
            kind: Recovery::KIND.into(),
            command: std::env::args().collect(),
            commit: env!("KVTB_COMMIT").into(),
            started_unix_s: load.started_unix_s,
            machine: load.machine,
            engine: load.engine,
            workload: s.name.clone(),
            records: s.workload.recordcount as u64,
            value_bytes,
            cycles: r.cycles,
            recovery_s_median: r.median_s,
            counters_after_open: r.counters_after_open,
        };
        write_json(out, &doc)?;
        println!("result written to {}", out.display());
    }
    if missing > 0 {
        return Err(Error::failed(format!(
            "{missing} loaded records were missing after recovery"
        )));
    }
    Ok(())
}

/// A cycle's line on standard error.
fn show(c: CycleDone<'_>) {
    let r = c.result;
    eprintln!(
        "cycle {}: killed after {:.0} s ({} operations), {} MiB on disk, reopened in {:.3} s, {} records read back, {} missing{}",
        c.cycle,
        r.run_s_before_kill,
        r.ops_before_kill,
        r.data_bytes >> 20,
        r.recovery_s,
        r.verified_records,
        r.missing_records,
        if c.missing_examples.is_empty() {
            String::new()
        } else {
            format!(" (e.g. {})", c.missing_examples.join(", "))
        }
    );
}
