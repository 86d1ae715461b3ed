//! The audit's cycles: start the writer, kill it, optionally start and kill a child
//! in the middle of its recovery, reopen the engine (timed), check every key, keep
//! the evidence of a cycle that lost or corrupted anything.

use super::keep;
use super::model::Model;
use super::plan::Plan;
use super::power::{FREEZE_TIMEOUT, MODEL, Power};
use super::process::{End, Ended, Running};
use super::protocol::{self, OPENED, OPENING, READY};
use crate::error::Result;
use crate::rng::Rng;
use kvapi::Engine;
use kvtb_schema::{CrashCycle as Cycle, CrashPower, RecoveryKill};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a child may take to open the engine before it is given up.
const OPEN_TIMEOUT: Duration = Duration::from_secs(120);

/// Which child to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Writes until killed (the hidden `crash-child`).
    Writer,
    /// Only reopens the engine (`crash-child --recover-only`).
    Recover,
}

/// One audit.
pub struct Audit<'a> {
    pub plan: Plan,
    pub cycles: u64,
    /// The writer is killed between these many milliseconds after it said READY.
    pub kill_after_ms: (u64, u64),
    /// The fraction of cycles in which a recovering child is killed too.
    pub recovery_kills: f64,
    /// Whether the engine's durability class allows losing acknowledged writes to a
    /// killed process (`none`): a lost write then does not stop the audit.
    pub loss_allowed: bool,
    /// The directory holding all the engine's files: copied as the kill left it
    /// before each reopen while it holds at most `snapshot_max` bytes, and kept aside
    /// when a cycle fails.
    pub data: PathBuf,
    pub snapshot_max: u64,
    /// The command of `role`'s child for cycle `n`.
    pub spawn: &'a dyn Fn(Role, u64) -> Command,
    /// Opens the engine in this process.
    pub open: &'a dyn Fn() -> Result<Arc<dyn Engine>>,
    /// Power cuts besides the kills (`--power`): the writer recorded, images checked.
    pub power: Option<Power<'a>>,
}

/// What failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A child ended other than by the audit's SIGKILL, or never got going.
    Child,
    /// The writer's report does not read, or disagrees with the plan.
    Report,
    /// The engine does not reopen after the kill.
    Reopen,
    /// The check found lost writes the class does not allow, or corrupt values (or
    /// could not read the engine, or close it).
    Check,
    /// A power-cut image lost what the class promises, held a corrupt value or did
    /// not open; or the recording could not stand for the run.
    Power,
}

/// Why an audit failed.
#[derive(Debug)]
pub struct Failure {
    pub cycle: u64,
    pub kind: Kind,
    pub what: String,
    /// The last lines of the failing child's standard error.
    pub stderr: Vec<String>,
}

impl Failure {
    /// The failure without the child's standard error.
    pub fn summary(&self) -> String {
        format!("cycle {}: {}", self.cycle, self.what)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary())?;
        if !self.stderr.is_empty() {
            write!(f, "; the child's standard error ended with:")?;
            for l in &self.stderr {
                write!(f, "\n    {l}")?;
            }
        }
        Ok(())
    }
}

/// What an audit found.
#[derive(Debug, Default)]
pub struct Report {
    /// The cycles checked (a cycle whose child misbehaved is not among them).
    pub cycles: Vec<Cycle>,
    pub failure: Option<Failure>,
    /// Where cycles that lost or corrupted anything were kept: the first one, and
    /// the one the audit stopped at.
    pub kept: Vec<PathBuf>,
    /// The asynchronous path the writer used (`none`, `native`, `pool`).
    pub path: Option<String>,
    /// Cycles whose data directory was too large to copy as the kill left it.
    pub not_snapshot: u64,
    /// Cycles whose copy met a full file system (the partial copy removed).
    pub snapshot_no_space: u64,
    /// What the power cuts checked (`--power`).
    pub power: Option<CrashPower>,
}

/// Keeps the evidence of `cycle` aside (`keep::keep`). Failing to (a full file system,
/// most often: the kept copy lies beside the data directory) must not end the audit
/// without its report: the reason is returned, to be said with the cycle's finding.
fn keep_aside(report: &mut Report, data: &Path, cycle: u64, stop: bool) -> Option<String> {
    match keep::keep(data, cycle, stop) {
        Ok(dir) => {
            report.kept.push(dir);
            None
        }
        Err(e) => Some(format!(
            "the cycle's data could not be kept aside ({e}): what is left of it is in {} and beside it",
            data.display()
        )),
    }
}

fn child_failure(cycle: u64, who: &str, ended: &Ended, waited_for: Option<&str>) -> Failure {
    let what = match (ended.end, waited_for) {
        (End::Killed, Some(word)) => format!(
            "the {who} did not say {word} within {} s and was killed",
            OPEN_TIMEOUT.as_secs()
        ),
        (end, _) => format!("the {who} {end} instead of being killed by the audit's SIGKILL"),
    };
    Failure {
        cycle,
        kind: Kind::Child,
        what,
        stderr: ended.stderr.clone(),
    }
}

fn push_recent(v: &mut VecDeque<f64>, x: f64) {
    v.push_back(x);
    if v.len() > 16 {
        v.pop_front();
    }
}

fn median(v: &VecDeque<f64>) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().collect();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied()
}

/// Runs the cycles; `progress` sees each checked cycle. An error is the audit's own
/// (a child it cannot start, a directory it cannot copy); a failure of the engine or
/// of a child is in the report, with the cycles before it.
pub fn run(a: &Audit, progress: &mut dyn FnMut(&Cycle)) -> Result<Report> {
    let mut rng = Rng::derive(a.plan.seed, 0xC4A5);
    let mut model = Model::new(a.plan.clone());
    let mut report = Report::default();
    // recent recovery times: the parent's reopens, and the opens of recovering
    // children that finished before their kill (the better estimate, when known)
    let mut recent: VecDeque<f64> = VecDeque::new();
    let mut child_opens: VecDeque<f64> = VecDeque::new();
    report.power = a.power.as_ref().map(|p| CrashPower {
        model: MODEL.into(),
        loss_allowed: p.loss_allowed,
        ..CrashPower::default()
    });
    for cycle in 1..=a.cycles {
        // the writer, killed at a random moment after its engine opened (recorded by
        // the powercut layer and frozen first, with --power)
        let recorder = a.power.as_ref().map(|p| p.prepare(&a.data)).transpose()?;
        let mut cmd = (a.spawn)(Role::Writer, cycle);
        if let Some(r) = &recorder {
            r.apply(&mut cmd);
        }
        let mut w = Running::spawn(cmd)?;
        let ready = w.wait_for(READY, OPEN_TIMEOUT);
        if ready {
            let (lo, hi) = a.kill_after_ms;
            let ms = lo + rng.below(hi.saturating_sub(lo) + 1);
            w.sleep_while_alive(Duration::from_millis(ms));
        }
        let frozen = match &recorder {
            Some(r) if ready => r.freeze(FREEZE_TIMEOUT, &mut || w.alive()).err(),
            _ => None,
        };
        let ended = w.kill()?;
        if ended.end != End::Killed || !ready {
            let waited = (!ready).then_some(READY);
            report.failure = Some(child_failure(cycle, "writer", &ended, waited));
            return Ok(report);
        }
        if let Some(e) = frozen {
            report.failure = Some(Failure {
                cycle,
                kind: Kind::Power,
                what: format!("the recorded writer did not freeze: {e}"),
                stderr: ended.stderr,
            });
            return Ok(report);
        }
        let events = match protocol::parse(&ended.lines)
            .and_then(|ev| model.announce(cycle, &ev).map(|()| ev))
        {
            Ok(ev) => ev,
            Err(e) => {
                report.failure = Some(Failure {
                    cycle,
                    kind: Kind::Report,
                    what: format!("the writer's report does not read: {e}"),
                    stderr: ended.stderr,
                });
                return Ok(report);
            }
        };
        if report.path.is_none() {
            report.path = events.ready.clone();
        }
        let mut c = Cycle {
            cycle,
            ..Cycle::default()
        };
        // the power cuts, from the recording (before anything else touches the data)
        if let (Some(p), Some(r), Some(sum)) = (&a.power, &recorder, report.power.as_mut()) {
            let checked = p.check(r, &a.data, &model, cycle, a.plan.seed, &mut c, sum);
            let broken = match checked {
                Ok(None) => None,
                Ok(Some(b)) => {
                    report.kept.push(b.kept.clone());
                    Some(format!(
                        "{} (the image is kept in {})",
                        b.what,
                        b.kept.display()
                    ))
                }
                Err(e) => Some(format!("the power cuts could not be checked: {e}")),
            };
            if let Some(what) = broken {
                report.failure = Some(Failure {
                    cycle,
                    kind: Kind::Power,
                    what,
                    stderr: Vec::new(),
                });
                return Ok(report);
            }
        }
        match keep::snapshot(&a.data, a.snapshot_max)? {
            keep::Snapshot::Copied => {}
            keep::Snapshot::TooLarge => report.not_snapshot += 1,
            keep::Snapshot::NoSpace => report.snapshot_no_space += 1,
        }
        // a child killed in the middle of reopening the engine
        if a.recovery_kills > 0.0 && rng.next_f64() < a.recovery_kills {
            let mut r = Running::spawn((a.spawn)(Role::Recover, cycle))?;
            let opening = r.wait_for(OPENING, OPEN_TIMEOUT);
            let t = Instant::now();
            if opening {
                let typical = median(&child_opens)
                    .or_else(|| median(&recent))
                    .unwrap_or(0.05);
                std::thread::sleep(Duration::from_secs_f64(typical * rng.next_f64()));
            }
            let after = t.elapsed();
            let ended = r.kill()?;
            if ended.end != End::Killed || !opening {
                let waited = (!opening).then_some(OPENING);
                report.failure = Some(child_failure(cycle, "recovering child", &ended, waited));
                return Ok(report);
            }
            let opened = protocol::parse(&ended.lines).is_ok_and(|e| e.opened);
            if let (Some(a), Some(b)) = (ended.time_of(OPENING), ended.time_of(OPENED)) {
                push_recent(&mut child_opens, b.duration_since(a).as_secs_f64());
            }
            c.recovery_kill = Some(RecoveryKill {
                after_s: after.as_secs_f64(),
                during_recovery: !opened,
            });
        }
        // the parent's reopen, timed, and the check
        let t = Instant::now();
        let engine = match (a.open)() {
            Ok(e) => e,
            Err(e) => {
                let not_kept = keep_aside(&mut report, &a.data, cycle, true);
                let after = match &c.recovery_kill {
                    None => String::new(),
                    Some(k) => format!(
                        " and the kill of a child {:.1} ms into its reopen ({})",
                        k.after_s * 1e3,
                        if k.during_recovery {
                            "during recovery"
                        } else {
                            "after its open returned"
                        }
                    ),
                };
                report.failure = Some(Failure {
                    cycle,
                    kind: Kind::Reopen,
                    what: format!(
                        "the engine does not reopen after the kill{after}: {e}{}",
                        not_kept.map(|w| format!("; {w}")).unwrap_or_default()
                    ),
                    // what the killed writer said last (it may have met the cause)
                    stderr: ended.stderr.clone(),
                });
                return Ok(report);
            }
        };
        c.recovery_s = t.elapsed().as_secs_f64();
        push_recent(&mut recent, c.recovery_s);
        let checked = model.check(engine.as_ref(), cycle, &events, &mut c);
        let closed = engine.close();
        drop(engine);
        let problem = match (checked, closed) {
            (Err(e), _) => Some(format!("the check failed: {e}")),
            (Ok(()), Err(e)) => Some(format!("closing after the check failed: {e}")),
            (Ok(()), Ok(())) if c.corrupt > 0 || (c.lost > 0 && !a.loss_allowed) => Some(format!(
                "{} keys lost and {} corrupt after the kill: {}",
                c.lost,
                c.corrupt,
                c.problems.join("; ")
            )),
            _ => None,
        };
        let stop = problem.is_some();
        let mut problem = problem;
        if (stop || (c.lost > 0 && report.kept.is_empty()))
            && let Some(w) = keep_aside(&mut report, &a.data, cycle, stop)
        {
            match &mut problem {
                Some(p) => {
                    p.push_str("; ");
                    p.push_str(&w);
                }
                None => c.problems.push(w),
            }
        }
        progress(&c);
        report.cycles.push(c);
        if let Some(what) = problem {
            report.failure = Some(Failure {
                cycle,
                kind: Kind::Check,
                what,
                stderr: Vec::new(),
            });
            return Ok(report);
        }
    }
    keep::remove(&keep::killed_image(&a.data))?;
    Ok(report)
}
