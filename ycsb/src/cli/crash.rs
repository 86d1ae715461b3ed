//! `ycsb crash`, the durability audit: a child writer (`ycsb crash-child`, this same
//! binary) is killed with SIGKILL at random moments (and, with --recovery-kills, a
//! child reopening the engine in the middle of its recovery); the engine is reopened
//! and every key checked (the rule: `ycsb::crash`). One table row, the JSON result
//! with --out.

use super::engine_run::wipe_engine_dir;
use clap::Args;
use kvtb_schema::{Crash, CrashAudit, CrashCycle, SCHEMA_VERSION};
use std::path::{Path, PathBuf};
use std::process::Command;
use ycsb::crash::{Audit, Drive, Plan, Role};
use ycsb::props::{self, Properties};
use ycsb::results::{engine_of, write_json};
use ycsb::{Error, Result, engines, machine};

/// What the writer writes and how: shared by `crash` and `crash-child`, so that both
/// draw the same plan.
#[derive(Args, Debug, Clone)]
pub(super) struct WriteArgs {
    /// Distinct keys written (few, so keys are overwritten, deleted and written
    /// concurrently often).
    #[arg(long, default_value_t = 500)]
    pub(super) keys: u64,
    /// Client threads issuing blocking writes.
    #[arg(long, default_value_t = 1)]
    pub(super) writers: usize,
    /// Writes kept in flight through the asynchronous path (the engine's own, or the
    /// thread-pool adapter), besides the writers; 0: none.
    #[arg(long, default_value_t = 0)]
    pub(super) qd: usize,
    /// Value lengths, drawn log-uniform between MIN and MAX bytes (MIN >= 16: a
    /// value carries its version).
    #[arg(long, value_delimiter = ',', default_value = "16,12288")]
    pub(super) value_bytes: Vec<usize>,
    /// Fraction of writes that are deletes.
    #[arg(long, default_value_t = 0.1)]
    pub(super) delete_fraction: f64,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Engine options, <engine>.<option>=value (repeatable).
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub(super) props: Vec<String>,
}

impl WriteArgs {
    fn plan(&self) -> Plan {
        Plan {
            seed: self.seed,
            keys: self.keys,
            value_bytes: (self.value_bytes[0], self.value_bytes[1]),
            delete_fraction: self.delete_fraction,
        }
    }

    fn to_args(&self, c: &mut Command) {
        let vb = format!("{},{}", self.value_bytes[0], self.value_bytes[1]);
        c.args(["--keys", &self.keys.to_string()])
            .args(["--writers", &self.writers.to_string()])
            .args(["--qd", &self.qd.to_string()])
            .args(["--value-bytes", &vb])
            .args(["--delete-fraction", &self.delete_fraction.to_string()])
            .args(["--seed", &self.seed.to_string()]);
        for o in &self.props {
            c.arg("-p").arg(o);
        }
    }
}

#[derive(Args, Debug)]
pub(super) struct CrashArgs {
    /// Engine to audit.
    #[arg(long)]
    pub(super) engine: String,
    /// Kill-and-recover cycles.
    #[arg(long, default_value_t = 10)]
    pub(super) cycles: u64,
    #[command(flatten)]
    pub(super) write: WriteArgs,
    /// The writer is killed between these many milliseconds after its engine opened.
    #[arg(long, value_delimiter = ',', default_value = "50,400")]
    pub(super) kill_after_ms: Vec<u64>,
    /// Fraction of cycles in which, after the writer's kill, a second child reopens
    /// the engine and is killed at a random moment within the usual recovery time.
    #[arg(long, default_value_t = 0.0)]
    pub(super) recovery_kills: f64,
    /// Before each reopen the data directory is copied as the kill left it (what a
    /// failed cycle keeps as `as-killed/`) while it holds at most this many bytes (0:
    /// never).
    #[arg(long, default_value = "64M", value_parser = parse_bytes)]
    pub(super) snapshot_max: u64,
    /// Root of the data directory (the engine's is <data>/crash-<engine>, wiped first).
    #[arg(long, default_value = "data")]
    pub(super) data: PathBuf,
    /// Power cuts besides the kills: the writer's file calls are recorded (the
    /// powercut layer, LD_PRELOAD), and at cuts after syncs and acknowledgements, at
    /// random records and at the end, the directories a power cut could leave (ext4
    /// data=ordered: only what was synced, everything, random mixes of unsynced
    /// changes kept, dropped or torn) are opened and checked. For engines writing
    /// through the C library's file calls (rocksdb, sled, wiredtiger, wal), not
    /// kvell (io_uring; its power cuts are tested on its simulated disk).
    #[arg(long)]
    pub(super) power: bool,
    /// Cuts per cycle after syncs and acknowledgements (an even sample), with --power.
    #[arg(long, default_value_t = 6)]
    pub(super) power_cuts: usize,
    /// Cuts per cycle at random records, with --power.
    #[arg(long, default_value_t = 2)]
    pub(super) power_random_cuts: usize,
    /// Random crash states per cut besides `synced` and `all`, with --power.
    #[arg(long, default_value_t = 1)]
    pub(super) power_states: usize,
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
    pub(super) cycle: u64,
    /// Only reopen the engine, then wait to be killed.
    #[arg(long)]
    pub(super) recover_only: bool,
    #[command(flatten)]
    pub(super) write: WriteArgs,
}

fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    kvapi::parse_bytes(s).ok_or_else(|| format!("not a size in bytes: {s}"))
}

fn crash_props(props: &[String]) -> Result<Properties> {
    let mut p = Properties::new();
    for o in props {
        props::set_override(o, &mut p)?;
    }
    Ok(p)
}

/// The writer the audit kills, or the child it kills while it recovers: its protocol
/// goes to standard output.
pub(super) fn child(a: &CrashChildArgs) -> Result<()> {
    let p = crash_props(&a.write.props)?;
    let open = || engines::open(&a.engine, &engines::options(&a.engine, &p, &a.data, None));
    let out = Box::new(std::io::stdout());
    if a.recover_only {
        return ycsb::crash::recover(&open, out);
    }
    let drive = Drive {
        writers: a.write.writers,
        qd: a.write.qd,
    };
    ycsb::crash::writer(open()?, a.write.plan(), a.cycle, drive, out)
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
    let w = &a.write;
    if a.kill_after_ms.len() != 2
        || a.kill_after_ms[0] > a.kill_after_ms[1]
        || a.cycles == 0
        || w.keys == 0
    {
        return Err(Error::usage(
            "--kill-after-ms takes MIN,MAX with MIN <= MAX; --cycles and --keys must be positive",
        ));
    }
    if w.value_bytes.len() != 2 || w.value_bytes[0] < 16 || w.value_bytes[0] > w.value_bytes[1] {
        return Err(Error::usage(
            "--value-bytes takes MIN,MAX with 16 <= MIN <= MAX (a value carries its version)",
        ));
    }
    if w.writers == 0 && w.qd == 0 {
        return Err(Error::usage("--writers and --qd cannot both be 0"));
    }
    if a.power && a.engine == "kvell" {
        return Err(Error::usage(
            "--power records the C library's file calls, and kvell writes through io_uring, \
             which the layer cannot see: kvell's power cuts are tested on its simulated disk \
             (kvell/tests/power.rs)",
        ));
    }
    let fraction = |f: f64| (0.0..=1.0).contains(&f);
    if !fraction(w.delete_fraction) || !fraction(a.recovery_kills) {
        return Err(Error::usage(
            "--delete-fraction and --recovery-kills are fractions between 0 and 1",
        ));
    }
    Ok(())
}

/// The command of `role`'s child for cycle `cycle`.
fn child_command(exe: &Path, a: &CrashArgs, root: &Path, role: Role, cycle: u64) -> Command {
    let mut c = Command::new(exe);
    c.arg("crash-child")
        .args(["--engine", &a.engine])
        .arg("--data")
        .arg(root)
        .args(["--cycle", &cycle.to_string()]);
    if role == Role::Recover {
        c.arg("--recover-only");
    }
    a.write.to_args(&mut c);
    if let Some(o) = power_prop(a) {
        c.arg("-p").arg(o);
    }
    c
}

/// What `--power` sets for the engine unless the caller did: the WAL engine writes
/// its checkpoints' pages through io_uring, which the recording layer (the C
/// library's file calls) cannot see, and the recording would not match the
/// directory; `wal.uring=off` writes them by pwrite.
fn power_prop(a: &CrashArgs) -> Option<&'static str> {
    (a.power && a.engine == "wal" && !a.write.props.iter().any(|o| o.starts_with("wal.uring=")))
        .then_some("wal.uring=off")
}

/// A scratch directory of `--power` beside the audit's data directory `root`
/// (`<root>-power-work`: the recording; `<root>-power-image`: the image checked).
fn power_scratch(root: &Path, what: &str) -> PathBuf {
    let name = root
        .file_name()
        .map_or_else(|| "crash".into(), |n| n.to_string_lossy());
    root.with_file_name(format!("{name}-power-{what}"))
}

fn table(a: &CrashArgs, durability: &str, cycles: &[CrashCycle], p50: f64, max: f64) {
    let sum = |f: fn(&CrashCycle) -> u64| cycles.iter().map(f).sum::<u64>();
    let during = cycles
        .iter()
        .filter(|c| c.recovery_kill.as_ref().is_some_and(|k| k.during_recovery))
        .count();
    let kills = cycles.iter().filter(|c| c.recovery_kill.is_some()).count();
    println!(
        "engine    durability  cycles  acknowledged  in flight  keys checked   lost  corrupt  recovery p50  recovery max  recovery kills"
    );
    println!(
        "{:<9} {:<11} {:>6} {:>13} {:>10} {:>13} {:>6} {:>8} {:>12.3}s {:>12.3}s  {during}/{kills} during",
        a.engine,
        durability,
        cycles.len(),
        sum(|c| c.acknowledged),
        sum(|c| c.pending_at_kill),
        sum(|c| c.keys_checked),
        sum(|c| c.lost),
        sum(|c| c.corrupt),
        p50,
        max
    );
    for c in cycles.iter().filter(|c| !c.problems.is_empty()).take(3) {
        for pr in &c.problems {
            println!("  cycle {}: {pr}", c.cycle);
        }
    }
}

pub(super) fn crash(a: &CrashArgs) -> Result<()> {
    check(a)?;
    let mut p = crash_props(&a.write.props)?;
    if let Some(o) = power_prop(a) {
        props::set_override(o, &mut p)?;
    }
    let root = a.data.join(format!("crash-{}", a.engine));
    wipe_engine_dir(&a.engine, &root.join(&a.engine))?;
    ycsb::crash::keep::remove(&ycsb::crash::keep::killed_image(&root))?;
    let opts = || engines::options(&a.engine, &p, &root, None);
    let engine = engines::open(&a.engine, &opts())?;
    let info = engine.info();
    engine.close()?;
    drop(engine);
    let exe = std::env::current_exe().map_err(|e| Error::io("locating ycsb", e))?;
    let spawn = |role: Role, cycle: u64| child_command(&exe, a, &root, role, cycle);
    let open =
        || engines::open(&a.engine, &opts()).map_err(|e| e.context("reopening after a kill"));
    let loss_allowed = info.durability < kvapi::Durability::Process;
    eprintln!(
        "auditing {} ({} class: {}), {} cycles, {} writers, {} in flight through the asynchronous path",
        a.engine, info.durability, info.durability_setting, a.cycles, a.write.writers, a.write.qd
    );
    let open_at = |dir: &Path| {
        engines::open(&a.engine, &engines::options(&a.engine, &p, dir, None))
            .map_err(|e| e.context("opening a power-cut image"))
    };
    let power = a.power.then(|| {
        let power_loss_allowed = info.durability < kvapi::Durability::Power;
        eprintln!(
            "power cuts: the writer recorded, {} cuts at syncs and acknowledgements and {} at random records a cycle, {} random states a cut besides synced and all{}",
            a.power_cuts,
            a.power_random_cuts,
            a.power_states,
            if power_loss_allowed {
                format!(
                    "; class {} promises nothing across a power cut, so lost writes are counted, not failures",
                    info.durability
                )
            } else {
                String::new()
            }
        );
        ycsb::crash::power::Power {
            work: power_scratch(&root, "work"),
            image: power_scratch(&root, "image"),
            at_events: a.power_cuts,
            random_cuts: a.power_random_cuts,
            random_states: a.power_states,
            loss_allowed: power_loss_allowed,
            open_at: &open_at,
        }
    });
    let audit = Audit {
        plan: a.write.plan(),
        cycles: a.cycles,
        kill_after_ms: (a.kill_after_ms[0], a.kill_after_ms[1]),
        recovery_kills: a.recovery_kills,
        loss_allowed,
        data: root.clone(),
        snapshot_max: a.snapshot_max,
        spawn: &spawn,
        open: &open,
        power,
    };
    let every = (a.cycles / 20).max(1);
    let (mut acked, mut lost) = (0u64, 0u64);
    let report = ycsb::crash::run(&audit, &mut |c| {
        acked += c.acknowledged;
        lost += c.lost;
        if c.cycle % every == 0 {
            eprintln!(
                "  cycle {}/{}: {acked} acknowledged, {lost} lost so far",
                c.cycle, a.cycles
            );
        }
    })?;
    let cycles = report.cycles;
    let sum = |f: fn(&CrashCycle) -> u64| cycles.iter().map(f).sum::<u64>();
    let (acked, lost, corrupt) = (sum(|c| c.acknowledged), sum(|c| c.lost), sum(|c| c.corrupt));
    let mut rec: Vec<f64> = cycles.iter().map(|c| c.recovery_s).collect();
    rec.sort_by(f64::total_cmp);
    let (p50, max) = match rec.len() {
        0 => (0.0, 0.0),
        n => (rec[n / 2], rec[n - 1]),
    };
    table(a, info.durability.as_str(), &cycles, p50, max);
    if let Some(pw) = &report.power {
        let by: Vec<String> = pw
            .images_by_state
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        println!(
            "power cuts ({}): {} images ({}) at {} cuts, {} acknowledged writes checked in them, {} lost{}, {} corrupt, {} refused with an error ({} of them by a panic); {} file calls and {} bytes recorded",
            pw.model,
            pw.images,
            by.join(", "),
            pw.cuts,
            pw.acknowledged_at_cuts,
            pw.lost,
            if pw.loss_allowed {
                " (allowed by the class)"
            } else {
                ""
            },
            pw.corrupt,
            pw.refused,
            pw.panicked,
            pw.recorded_ops,
            pw.recorded_bytes
        );
    }
    let kept: Vec<String> = report
        .kept
        .iter()
        .map(|k| k.display().to_string())
        .collect();
    for k in &kept {
        println!("data directory kept: {k}");
    }
    if report.not_snapshot > 0 {
        eprintln!(
            "{} cycles left a data directory over {} bytes: not copied as the kill left it",
            report.not_snapshot, a.snapshot_max
        );
    }
    if report.snapshot_no_space > 0 {
        eprintln!(
            "{} cycles' copy of the data directory as the kill left it met a full file system: the partial copy was removed, the cycle checked without it",
            report.snapshot_no_space
        );
    }
    let written = match &a.out {
        None => Ok(()),
        Some(out) => {
            let during = cycles
                .iter()
                .filter(|c| c.recovery_kill.as_ref().is_some_and(|k| k.during_recovery))
                .count() as u64;
            let doc = Crash {
                format: SCHEMA_VERSION,
                kind: Crash::KIND.into(),
                command: std::env::args().collect(),
                commit: env!("KVTB_COMMIT").into(),
                machine: machine::describe(Some(&root)),
                engine: engine_of(&info),
                acknowledged: acked,
                lost,
                corrupt,
                recovery_p50_s: p50,
                recovery_max_s: max,
                audit: Some(CrashAudit {
                    writers: a.write.writers as u64,
                    qd: a.write.qd as u64,
                    native_async: match report.path.as_deref() {
                        Some("native") => Some(true),
                        Some("pool") => Some(false),
                        _ => None,
                    },
                    keys: a.write.keys,
                    value_bytes: [a.write.value_bytes[0] as u64, a.write.value_bytes[1] as u64],
                    delete_fraction: a.write.delete_fraction,
                    kill_after_ms: [a.kill_after_ms[0], a.kill_after_ms[1]],
                    recovery_kills: a.recovery_kills,
                    seed: a.write.seed,
                }),
                pending_at_kills: Some(sum(|c| c.pending_at_kill)),
                kills_in_recovery: Some(during),
                failure: report.failure.as_ref().map(|f| f.summary()),
                child_stderr: report
                    .failure
                    .as_ref()
                    .map(|f| f.stderr.clone())
                    .unwrap_or_default(),
                kept: kept.clone(),
                power: report.power.clone(),
                cycles,
            };
            write_json(out, &doc)
        }
    };
    if let Some(f) = report.failure {
        let broken = if f.kind == ycsb::crash::audit::Kind::Check && !loss_allowed && lost > 0 {
            format!(
                "PROMISE BROKEN: {} promises durability class {}: ",
                a.engine, info.durability
            )
        } else {
            String::new()
        };
        let unwritten = match written {
            Ok(()) => String::new(),
            Err(e) => format!("\n(and the result was not written: {e})"),
        };
        return Err(Error::failed(format!(
            "{broken}the audit failed at {f}\n(data left in {}){unwritten}",
            kept.last()
                .map_or_else(|| root.display().to_string(), String::clone)
        )));
    }
    written?;
    // what a cycle that lost writes left was copied aside; the rest can go
    ycsb::crash::keep::remove(&root)?;
    for scratch in ["work", "image"] {
        ycsb::crash::keep::remove(&power_scratch(&root, scratch))?;
    }
    if lost > 0 {
        println!("{lost} acknowledged writes lost: allowed by durability class none");
    } else {
        println!("no acknowledged write lost");
    }
    Ok(())
}
