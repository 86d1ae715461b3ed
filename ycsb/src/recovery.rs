//! Recovery time after a crash (`ycsb recovery`; the paper's section 6.5): the
//! records are loaded and the engine closed cleanly; then, per cycle, a child
//! `ycsb run` drives the workload, the parent kills it with SIGKILL once the run has
//! gone on for the set time, reopens the engine (the recovery time is the open) and
//! reads back a sample of the loaded records, each checked against the value format
//! the driver writes (a record must exist and hold a value that was written for it).

use crate::error::{Error, Result};
use crate::workload::Workload;
use kvapi::Engine;
use kvtb_schema::RecoveryCycle;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What to run.
pub struct Plan {
    pub exe: PathBuf,
    /// `run --engine E ...`: the child's arguments.
    pub child_args: Vec<String>,
    pub run_seconds: f64,
    pub cycles: u64,
    /// Records read back after each reopen (0: all).
    pub verify: u64,
}

/// What every cycle measured.
pub struct Outcome {
    pub cycles: Vec<RecoveryCycle>,
    pub median_s: f64,
    pub counters_after_open: BTreeMap<String, Option<u64>>,
}

/// Bytes of the files under `dir` (sizes, recursively).
pub fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// Parses the child's `[run] N s: M operations; ...` status line.
fn status(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("[run] ")?;
    let (secs, rest) = rest.split_once(" s: ")?;
    let (ops, _) = rest.split_once(" operations")?;
    Some((secs.trim().parse().ok()?, ops.trim().parse().ok()?))
}

/// Runs the child until it has run `secs` seconds, then kills it; returns the
/// seconds and operations of its last report.
fn run_and_kill(p: &Plan) -> Result<(f64, u64)> {
    let mut child = Command::new(&p.exe)
        .args(&p.child_args)
        .env("YCSB_STATUS_INTERVAL", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::io_at("starting", &p.exe, e))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| Error::failed("the child's standard error is not a pipe"))?;
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The child opens the engine (itself a recovery) before the run starts: allow
    // generously for it.
    let give_up = Instant::now() + Duration::from_secs_f64(p.run_seconds + 600.0);
    let mut last = (0u64, 0u64);
    let mut tail: Vec<String> = Vec::new();
    let result = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                if let Some(s) = status(&line) {
                    last = s;
                    if s.0 as f64 >= p.run_seconds {
                        break Ok(());
                    }
                } else {
                    tail.push(line);
                    if tail.len() > 20 {
                        tail.remove(0);
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if Instant::now() > give_up {
                    break Err(Error::failed("the child did not report progress in time"));
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let msg = format!("the child exited before the kill: {}", tail.join(" | "));
                // exit 3: the engine did not fit its memory budget (`ycsb run`'s code),
                // an outcome to report as such, not a failure of the engine
                break Err(match child.wait().ok().and_then(|s| s.code()) {
                    Some(3) => Error::OverBudget(msg),
                    _ => Error::failed(msg),
                });
            }
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    drop(rx);
    let _ = reader.join();
    result.map(|()| (last.0 as f64, last.1))
}

/// The record numbers read back: `n` evenly spaced over the key space (all if 0).
fn sample(records: i64, n: u64) -> Vec<i64> {
    if n == 0 || n as i64 >= records {
        return (0..records).collect();
    }
    (0..n as i64).map(|i| i * records / n as i64).collect()
}

/// A cycle just measured, and up to three of the records it found missing.
pub struct CycleDone<'a> {
    /// Counted from 1.
    pub cycle: u64,
    pub result: &'a RecoveryCycle,
    pub missing_examples: &'a [String],
}

/// Runs every cycle, telling `on_cycle` of each as it ends.
pub fn measure(
    p: &Plan,
    w: &Workload,
    open: &dyn Fn() -> Result<Arc<dyn Engine>>,
    dir: &Path,
    on_cycle: &mut dyn FnMut(CycleDone<'_>),
) -> Result<Outcome> {
    let mut cycles = Vec::new();
    let mut counters = BTreeMap::new();
    for cycle in 0..p.cycles {
        let (ran, ops) = run_and_kill(p)?;
        let data_bytes = dir_bytes(dir);
        let t = Instant::now();
        let engine = open().map_err(|e| e.context("reopening after the kill"))?;
        let recovery_s = t.elapsed().as_secs_f64();
        counters = crate::results::counters_map(&engine.counters());
        let mut missing = 0;
        let mut checked = 0;
        let mut problems = Vec::new();
        for i in sample(w.recordcount, p.verify) {
            let key = w.key(w.insertstart + i);
            checked += 1;
            match engine.get(key.as_bytes()) {
                Ok(Some(v)) if crate::record::verify(key.as_bytes(), &v, w.fields) => {}
                Ok(Some(_)) => {
                    return Err(Error::failed(format!(
                        "{key} holds a value that was never written for it after recovery"
                    )));
                }
                Ok(None) => {
                    missing += 1;
                    if problems.len() < 3 {
                        problems.push(key);
                    }
                }
                Err(e) => return Err(Error::engine(format!("reading {key} after recovery"), e)),
            }
        }
        engine.close().map_err(|e| Error::engine("closing", e))?;
        drop(engine);
        let result = RecoveryCycle {
            run_s_before_kill: ran,
            ops_before_kill: ops,
            data_bytes,
            recovery_s,
            verified_records: checked,
            missing_records: missing,
        };
        on_cycle(CycleDone {
            cycle: cycle + 1,
            result: &result,
            missing_examples: &problems,
        });
        cycles.push(result);
    }
    let mut r: Vec<f64> = cycles.iter().map(|c| c.recovery_s).collect();
    r.sort_by(f64::total_cmp);
    let median_s = r[r.len() / 2];
    Ok(Outcome {
        cycles,
        median_s,
        counters_after_open: counters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_status_line() {
        assert_eq!(
            status("[run] 3 s: 12345 operations; 4000 current ops/sec"),
            Some((3, 12345))
        );
        assert_eq!(status("[load] 3 s: 12 operations; 4 current ops/sec"), None);
        assert_eq!(status("warning: something"), None);
    }

    #[test]
    fn samples_evenly() {
        assert_eq!(sample(10, 0).len(), 10);
        assert_eq!(sample(10, 20).len(), 10);
        assert_eq!(sample(100, 4), vec![0, 25, 50, 75]);
    }
}
