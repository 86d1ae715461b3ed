//! `ycsb crash`, the durability audit: a child writer (`ycsb crash-child`, this same
//! binary) is killed with SIGKILL at random moments; the engine is reopened and every
//! acknowledged write checked. One table row, the JSON result with --out.

use super::engine_run::wipe_engine_dir;
use clap::Args;
use kvtb_schema::{Crash, SCHEMA_VERSION};
use std::path::{Path, PathBuf};
use ycsb::props::{self, Properties};
use ycsb::results::{engine_of, write_json};
use ycsb::{Error, Result, engines, machine};

#[derive(Args, Debug)]
pub(super) struct CrashArgs {
    /// Engine to audit.
    #[arg(long)]
    pub(super) engine: String,
    /// Kill-and-recover cycles.
    #[arg(long, default_value_t = 10)]
    pub(super) cycles: u64,
    /// Distinct keys written (small, so keys are overwritten and deleted often).
    #[arg(long, default_value_t = 500)]
    pub(super) keys: u64,
    /// The child is killed between these many milliseconds after its engine opened.
    #[arg(long, value_delimiter = ',', default_value = "50,400")]
    pub(super) kill_after_ms: Vec<u64>,
    /// Engine options, <engine>.<option>=value (repeatable).
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub(super) props: Vec<String>,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Root of the data directory (the engine's is <data>/crash-<engine>, wiped first).
    #[arg(long, default_value = "data")]
    pub(super) data: PathBuf,
    /// Write the JSON result here.
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(super) struct CrashChildArgs {
    #[arg(long)]
    pub(super) engine: String,
    #[arg(long)]
    pub(super) data: PathBuf,
    #[arg(long)]
    pub(super) keys: u64,
    #[arg(long)]
    pub(super) seed: u64,
    #[arg(long)]
    pub(super) cycle: u64,
    #[arg(short = 'p')]
    pub(super) props: Vec<String>,
}

fn crash_props(props: &[String]) -> Result<Properties> {
    let mut p = Properties::new();
    for o in props {
        props::set_override(o, &mut p)?;
    }
    Ok(p)
}

/// The writer the audit kills: its protocol goes to standard output.
pub(super) fn child(a: &CrashChildArgs) -> Result<()> {
    let p = crash_props(&a.props)?;
    let engine = engines::open(&a.engine, &engines::options(&a.engine, &p, &a.data, None))?;
    ycsb::crash::child(
        engine,
        a.keys,
        a.seed,
        a.cycle,
        &mut std::io::stdout().lock(),
    )
}

fn check(a: &CrashArgs) -> Result<()> {
    if !engines::is_built(&a.engine) || a.engine == "null" {
        return Err(Error::usage(format!(
            "unknown, unbuilt or stateless engine '{}' (auditable: {})",
            a.engine,
            engines::built()
                .iter()
                .filter(|e| **e != "null")
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if a.kill_after_ms.len() != 2
        || a.kill_after_ms[0] > a.kill_after_ms[1]
        || a.cycles == 0
        || a.keys == 0
    {
        return Err(Error::usage(
            "--kill-after-ms takes MIN,MAX with MIN <= MAX; --cycles and --keys must be positive",
        ));
    }
    Ok(())
}

/// The child command of cycle `cycle`.
fn child_command(exe: &Path, a: &CrashArgs, root: &Path, cycle: u64) -> std::process::Command {
    let mut c = std::process::Command::new(exe);
    c.arg("crash-child")
        .arg("--engine")
        .arg(&a.engine)
        .arg("--data")
        .arg(root);
    c.arg("--keys")
        .arg(a.keys.to_string())
        .arg("--seed")
        .arg(a.seed.to_string())
        .arg("--cycle")
        .arg(cycle.to_string());
    for o in &a.props {
        c.arg("-p").arg(o);
    }
    c
}

pub(super) fn crash(a: &CrashArgs) -> Result<()> {
    check(a)?;
    let p = crash_props(&a.props)?;
    let root = a.data.join(format!("crash-{}", a.engine));
    let dir = root.join(&a.engine);
    wipe_engine_dir(&a.engine, &dir)?;
    let opts = || engines::options(&a.engine, &p, &root, None);
    let engine = engines::open(&a.engine, &opts())?;
    let info = engine.info();
    engine.close()?;
    drop(engine);
    let exe = std::env::current_exe().map_err(|e| Error::io("locating ycsb", e))?;
    let spawn = |cycle: u64| child_command(&exe, a, &root, cycle);
    let open =
        || engines::open(&a.engine, &opts()).map_err(|e| e.context("reopening after a kill"));
    eprintln!(
        "auditing {} ({} class: {}), {} cycles",
        a.engine, info.durability, info.durability_setting, a.cycles
    );
    let cycles = ycsb::crash::audit(
        a.cycles,
        a.seed,
        (a.kill_after_ms[0], a.kill_after_ms[1]),
        &spawn,
        &open,
    )?;
    let sum = |f: fn(&kvtb_schema::CrashCycle) -> u64| cycles.iter().map(f).sum::<u64>();
    let (acked, lost, corrupt) = (sum(|c| c.acknowledged), sum(|c| c.lost), sum(|c| c.corrupt));
    let mut rec: Vec<f64> = cycles.iter().map(|c| c.recovery_s).collect();
    rec.sort_by(f64::total_cmp);
    let (p50, max) = (rec[rec.len() / 2], rec[rec.len() - 1]);
    println!(
        "engine    durability  cycles  acknowledged  keys checked  lost  corrupt  recovery p50  recovery max"
    );
    println!(
        "{:<9} {:<11} {:>6} {:>13} {:>13} {:>5} {:>8} {:>11.3}s {:>12.3}s",
        a.engine,
        info.durability,
        a.cycles,
        acked,
        sum(|c| c.keys_checked),
        lost,
        corrupt,
        p50,
        max
    );
    for c in cycles.iter().filter(|c| !c.problems.is_empty()).take(3) {
        for pr in &c.problems {
            println!("  cycle {}: {pr}", c.cycle);
        }
    }
    if let Some(out) = &a.out {
        let doc = Crash {
            format: SCHEMA_VERSION,
            kind: Crash::KIND.into(),
            command: std::env::args().collect(),
            commit: env!("KVTB_COMMIT").into(),
            machine: machine::describe(Some(&root)),
            engine: engine_of(&info),
            cycles,
            acknowledged: acked,
            lost,
            corrupt,
            recovery_p50_s: p50,
            recovery_max_s: max,
        };
        write_json(out, &doc)?;
    }
    let _ = std::fs::remove_dir_all(&root);
    if corrupt > 0 {
        return Err(Error::failed(format!(
            "{corrupt} keys held values that were never written or fail their checks"
        )));
    }
    if lost > 0 {
        if info.durability >= kvapi::Durability::Process {
            return Err(Error::failed(format!(
                "PROMISE BROKEN: {lost} acknowledged writes lost although {} promises durability class {}",
                a.engine, info.durability
            )));
        }
        println!("{lost} acknowledged writes lost: allowed by durability class none");
    } else {
        println!("no acknowledged write lost");
    }
    Ok(())
}
