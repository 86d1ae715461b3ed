//! `ycsb compare`: several engines loaded and run one after another on the same
//! seeded workload (in alternating order when repeated), each in a child `ycsb run` of
//! its own so that what one engine held is measured (and bounded) apart from the
//! others, one table with the engines as columns.

use super::args::{DriveArgs, WorkloadArgs, forward_args};
use super::memory::EXIT_OVER_BUDGET;
use super::session::{memory, session};
use clap::Args;
use kvtb_schema::RunFile;
use std::path::{Path, PathBuf};
use std::process::Command;
use ycsb::{Error, Result, engines, report};

#[derive(Args, Debug)]
pub(super) struct CompareArgs {
    /// Engines to compare, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "sled,null")]
    pub(super) engines: Vec<String>,
    #[command(flatten)]
    pub(super) workload: WorkloadArgs,
    #[command(flatten)]
    pub(super) drive: DriveArgs,
    /// Directory for the per-engine JSON results.
    #[arg(long, default_value = "results/compare")]
    pub(super) out_dir: PathBuf,
    /// Run the whole comparison this many times, alternating the engine order; the
    /// table shows each engine's median run and the spread.
    #[arg(long, default_value_t = 1)]
    pub(super) repeat: usize,
}

pub(super) fn compare(a: &CompareArgs) -> Result<()> {
    if a.engines.is_empty() {
        return Err(Error::usage("--engines: give at least one engine"));
    }
    for e in &a.engines {
        if !engines::is_built(e) {
            return Err(Error::usage(format!(
                "unknown or unbuilt engine '{e}' (built: {})",
                engines::built().join(", ")
            )));
        }
    }
    // every engine is measured after a warm-up to a steady cache unless told otherwise
    let mut drive = a.drive.clone();
    if drive.warmup.is_none() {
        drive.warmup = Some("auto".into());
    }
    let s = session(&a.workload, &drive, engines::ALL)?;
    memory(&drive)?;
    if a.repeat == 0 {
        return Err(Error::usage("--repeat must be at least 1"));
    }
    std::fs::create_dir_all(&a.out_dir)
        .map_err(|e| Error::io_at("cannot create", &a.out_dir, e))?;
    let mut runs: Vec<Vec<RunFile>> = vec![Vec::new(); a.engines.len()];
    let mut failed = Vec::new();
    for rep in 0..a.repeat {
        // alternate the order so that no engine always runs on a warmer (or more
        // worn) disk than the others
        let mut order: Vec<usize> = (0..a.engines.len()).collect();
        if rep % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let e = &a.engines[i];
            eprintln!(
                "== {e} (repeat {}/{}): load and run {} ({})",
                rep + 1,
                a.repeat,
                s.name,
                s.drive.describe()
            );
            let name = if a.repeat == 1 {
                e.clone()
            } else {
                format!("{e}-r{}", rep + 1)
            };
            let r = run_child(a, &drive, e, &name)?;
            if let Some(why) = r.engine.notes.iter().find(|n| n.starts_with("failed: ")) {
                failed.push(format!("{e}: {why}"));
            }
            runs[i].push(r);
        }
    }
    let (reports, spread) = medians(runs);
    print_table(a, &s, &reports, &spread);
    if !failed.is_empty() {
        return Err(Error::failed(format!(
            "{} engine run(s) failed (shown in the table): {}",
            failed.len(),
            failed.join("; ")
        )));
    }
    Ok(())
}

/// Loads and runs one engine in a child `ycsb run` of its own (its memory measured and
/// bounded alone, see `memory.rs`), and reads back its run file. A child that did not
/// fit its budget is a result (its run file says so); one that failed otherwise is
/// shown as failed, with its last error line. With --quiet the child's output goes to
/// `<name>.log` beside its result.
fn run_child(a: &CompareArgs, drive: &DriveArgs, engine: &str, name: &str) -> Result<RunFile> {
    let out = a.out_dir.join(format!("{name}.json"));
    let _ = std::fs::remove_file(&out);
    let mut drive = drive.clone();
    drive.data = drive.data.join("compare");
    let mut args = vec![
        "run".to_string(),
        "--load".into(),
        "--fresh".into(),
        "--engine".into(),
        engine.into(),
        "--out".into(),
        out.display().to_string(),
    ];
    args.extend(forward_args(&a.workload, &drive));
    if drive.quiet {
        args.push("--quiet".into());
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("finding the ycsb binary", e))?;
    let mut cmd = Command::new(exe);
    cmd.args(&args);
    let log = a.out_dir.join(format!("{name}.log"));
    if drive.quiet {
        let f = std::fs::File::create(&log).map_err(|e| Error::io_at("cannot create", &log, e))?;
        let f2 = f
            .try_clone()
            .map_err(|e| Error::io_at("cannot write", &log, e))?;
        cmd.stdout(f).stderr(f2);
    }
    let status = cmd
        .status()
        .map_err(|e| Error::io(format!("starting the {engine} run"), e))?;
    let code = status.code();
    let read = std::fs::read_to_string(&out)
        .ok()
        .and_then(|t| kvtb_schema::parse_run(&t).ok());
    match (code, read) {
        (Some(0), Some(r)) => Ok(r),
        (Some(EXIT_OVER_BUDGET), Some(r)) => {
            eprintln!("   {engine} did not fit its memory budget (shown as over budget)");
            Ok(r)
        }
        (_, read) => {
            let why = if drive.quiet {
                last_error_line(&log).unwrap_or_else(|| format!("see {}", log.display()))
            } else {
                "see its output above".into()
            };
            let msg = format!("failed: exit {code:?}: {why}");
            eprintln!("   {engine} {msg}");
            let mut r = read.unwrap_or_else(|| ycsb::results::stub_run(engine, ""));
            r.engine.notes.push(msg);
            Ok(r)
        }
    }
}

/// The last `error: ...` line of a log, else its last line.
fn last_error_line(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines
        .iter()
        .rev()
        .find(|l| l.starts_with("error: "))
        .or(lines.last())
        .map(|l| l.trim_start_matches("error: ").to_string())
}

/// Each engine's median run by run throughput, and its (min, max) over the repeats.
fn medians(runs: Vec<Vec<RunFile>>) -> (Vec<RunFile>, Vec<(f64, f64)>) {
    let run_tput = |r: &RunFile| r.run().map(|p| p.throughput_ops_sec).unwrap_or(0.0);
    let mut reports = Vec::new();
    let mut spread = Vec::new();
    for mut v in runs {
        v.sort_by(|x, y| run_tput(x).total_cmp(&run_tput(y)));
        if let (Some(lo), Some(hi)) = (v.first(), v.last()) {
            spread.push((run_tput(lo), run_tput(hi)));
        }
        if !v.is_empty() {
            reports.push(v.swap_remove(v.len() / 2));
        }
    }
    (reports, spread)
}

fn print_table(
    a: &CompareArgs,
    s: &super::session::Session,
    reports: &[RunFile],
    spread: &[(f64, f64)],
) {
    // an engine that never opened (killed at its limit, refused) promises nothing
    let promised = |r: &&RunFile| r.engine.name != "null" && !r.engine.durability.is_empty();
    let classes: std::collections::BTreeSet<&str> = reports
        .iter()
        .filter(promised)
        .map(|r| r.engine.durability.as_str())
        .collect();
    println!(
        "\n== {} ({} records, {} operations, {}, seed {})",
        s.name,
        s.workload.recordcount,
        s.workload.operationcount,
        s.drive.describe(),
        s.drive.seed
    );
    print!(
        "{}",
        report::compare_table(reports, (a.repeat > 1).then_some(spread))
    );
    if a.repeat > 1 {
        println!(
            "(each column is the engine's median run of {} by run ops/s)",
            a.repeat
        );
    }
    if classes.len() > 1 {
        let list: Vec<String> = reports
            .iter()
            .filter(promised)
            .map(|r| format!("{}={}", r.engine.name, r.engine.durability))
            .collect();
        println!(
            "WARNING: the engines promise different durability ({}): this is not a like-for-like comparison",
            list.join(", ")
        );
    }
    println!("results written to {}", a.out_dir.display());
}
