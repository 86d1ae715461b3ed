//! `ycsb compare`: several engines loaded and run one after another on the same
//! seeded workload (in alternating order when repeated), one table with the engines
//! as columns.

use super::args::{DriveArgs, WorkloadArgs};
use super::engine_run::{Target, Work, run_engine};
use super::session::{memory, session};
use clap::Args;
use kvtb_schema::RunFile;
use std::path::PathBuf;
use ycsb::results::write_json;
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
    let s = session(&a.workload, &a.drive, engines::ALL)?;
    let mem = memory(&a.drive)?;
    if a.repeat == 0 {
        return Err(Error::usage("--repeat must be at least 1"));
    }
    let root = a.drive.data.join("compare");
    let mut runs: Vec<Vec<RunFile>> = vec![Vec::new(); a.engines.len()];
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
            let target = Target {
                engine: e,
                data: &root,
                memory: mem,
                fresh: true,
            };
            let r = run_engine(
                &s,
                &target,
                Work::Workload {
                    load: true,
                    run: true,
                },
            )?;
            let name = if a.repeat == 1 {
                format!("{e}.json")
            } else {
                format!("{e}-r{}.json", rep + 1)
            };
            write_json(&a.out_dir.join(name), &r)?;
            runs[i].push(r);
        }
    }
    let (reports, spread) = medians(runs);
    print_table(a, &s, &reports, &spread);
    Ok(())
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
    let classes: std::collections::BTreeSet<&str> = reports
        .iter()
        .filter(|r| r.engine.name != "null")
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
            .map(|r| format!("{}={}", r.engine.name, r.engine.durability))
            .collect();
        println!(
            "WARNING: the engines promise different durability ({}): this is not a like-for-like comparison",
            list.join(", ")
        );
    }
    println!("results written to {}", a.out_dir.display());
}
