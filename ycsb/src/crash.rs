//! The durability audit (`ycsb crash`): a child process writes and reports each write
//! as pending before it and acknowledged after it, over a pipe that outlives the child;
//! the parent kills the child with SIGKILL at a random moment, reopens the engine (the
//! recovery time) and checks every key against what was acknowledged.
//!
//! A key passes if it holds the state of its last acknowledged write, or of the one
//! write issued after it that was still pending (the child writes from one thread, so
//! at most one is). A key that lost an acknowledged write is LOST; a value that was
//! never written, or that fails its checksum, is CORRUPT.

use crate::error::{Error, Result};
use crate::rng::Rng;
use crate::value;
use kvapi::Engine;
use kvtb_schema::CrashCycle as Cycle;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the child does per write, on one line of `out` (its standard output, a pipe
/// to the parent): `P <key> <version> <len>` pending put, `D <key> <version>` pending
/// delete, `A <version>` acknowledged, `READY` once the engine is open.
pub fn child(
    engine: Arc<dyn Engine>,
    keys: u64,
    seed: u64,
    cycle: u64,
    out: &mut dyn Write,
) -> Result<()> {
    let mut rng = Rng::derive(seed, cycle);
    let io = |e: std::io::Error| Error::io("writing to the parent", e);
    writeln!(out, "READY").map_err(io)?;
    out.flush().map_err(io)?;
    let mut n = 0u64;
    loop {
        n += 1;
        let version = (cycle << 32) | n;
        let key = format!("crash{:06}", rng.below(keys));
        if rng.below(10) == 0 {
            writeln!(out, "D {key} {version}").map_err(io)?;
            out.flush().map_err(io)?;
            engine
                .delete(key.as_bytes())
                .map_err(|e| Error::engine("delete", e))?;
        } else {
            let len = 16 + rng.below(2000) as usize;
            writeln!(out, "P {key} {version} {len}").map_err(io)?;
            out.flush().map_err(io)?;
            engine
                .update(key.as_bytes(), &value::make(key.as_bytes(), version, len))
                .map_err(|e| Error::engine("put", e))?;
        }
        writeln!(out, "A {version}").map_err(io)?;
        out.flush().map_err(io)?;
    }
}

/// The state a key may be in: absent, or holding a version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Absent,
    Version(u64),
}

/// The model the parent keeps across cycles: each key's last acknowledged state.
#[derive(Default)]
pub struct Model {
    state: HashMap<String, State>,
    /// Every version ever written to a key (acknowledged or pending at a kill): a
    /// version found that was once written is an older state (a lost write, which
    /// class `none` allows), one never written for the key is corrupt.
    written: HashMap<String, std::collections::HashSet<u64>>,
}

struct Event {
    key: String,
    state: State,
    acked: bool,
}

fn parse_events(lines: &[String]) -> Result<Vec<Event>> {
    let mut ev: Vec<Event> = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.as_slice() {
            ["READY"] => {}
            ["P", key, v, _] | ["D", key, v] => {
                let v: u64 = v
                    .parse()
                    .map_err(|_| Error::failed(format!("bad line from the child: {l}")))?;
                let state = if f[0] == "P" {
                    State::Version(v)
                } else {
                    State::Absent
                };
                ev.push(Event {
                    key: key.to_string(),
                    state,
                    acked: false,
                });
            }
            ["A", v] => {
                let _: u64 = v
                    .parse()
                    .map_err(|_| Error::failed(format!("bad line from the child: {l}")))?;
                if let Some(last) = ev.last_mut() {
                    last.acked = true;
                }
            }
            _ if l.starts_with("error") => {
                return Err(Error::failed(format!("the child failed: {l}")));
            }
            _ => {} // a line cut by the kill
        }
    }
    Ok(ev)
}

impl Model {
    /// Checks the reopened engine against the model and this cycle's events, then
    /// moves the model to what was found.
    fn check(&mut self, engine: &dyn Engine, events: &[Event], c: &mut Cycle) -> Result<()> {
        let mut pending: HashMap<&str, State> = HashMap::new();
        for e in events {
            if let State::Version(v) = e.state {
                self.written.entry(e.key.clone()).or_default().insert(v);
            }
            if e.acked {
                self.state.insert(e.key.clone(), e.state);
                c.acknowledged += 1;
            } else {
                pending.insert(&e.key, e.state);
                c.pending_at_kill += 1;
            }
        }
        let keys: Vec<String> = self
            .state
            .keys()
            .cloned()
            .chain(pending.keys().map(|k| k.to_string()))
            .collect();
        let mut seen = std::collections::HashSet::new();
        for key in keys {
            if !seen.insert(key.clone()) {
                continue;
            }
            c.keys_checked += 1;
            let found = engine
                .get(key.as_bytes())
                .map_err(|e| Error::engine(format!("get {key} after recovery"), e))?;
            let found_state = match &found {
                None => State::Absent,
                Some(v) => {
                    if !value::verify(key.as_bytes(), v) {
                        c.corrupt += 1;
                        if c.problems.len() < 5 {
                            c.problems
                                .push(format!("{key}: value fails its check ({} bytes)", v.len()));
                        }
                        continue;
                    }
                    State::Version(value::version_of(v).unwrap_or(0))
                }
            };
            let acked = self.state.get(&key).copied().unwrap_or(State::Absent);
            let allowed = found_state == acked || pending.get(key.as_str()) == Some(&found_state);
            if !allowed {
                // An older state of the key (a write or a delete lost) or a value
                // that was never written for it.
                let older = match found_state {
                    State::Absent => true,
                    State::Version(f) => self.written.get(&key).is_some_and(|w| w.contains(&f)),
                };
                if older {
                    c.lost += 1;
                } else {
                    c.corrupt += 1;
                }
                if c.problems.len() < 5 {
                    c.problems.push(format!(
                        "{key}: found {found_state:?}, acknowledged {acked:?}"
                    ));
                }
            }
            self.state.insert(key, found_state);
        }
        Ok(())
    }
}

/// Runs `cycles` crash cycles; `spawn_child(cycle)` builds the child command, `open`
/// reopens the engine in this process.
pub fn audit(
    cycles: u64,
    seed: u64,
    kill_after: (u64, u64),
    spawn_child: &dyn Fn(u64) -> Command,
    open: &dyn Fn() -> Result<Arc<dyn Engine>>,
) -> Result<Vec<Cycle>> {
    let mut rng = Rng::derive(seed, 0xC4A5);
    let mut model = Model::default();
    let mut out = Vec::new();
    for cycle in 1..=cycles {
        let mut cmd = spawn_child(cycle);
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null());
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io("starting the child", e))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::failed("the child's standard output is not a pipe"))?;
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for l in BufReader::new(stdout).lines() {
                let Ok(l) = l else { break };
                if l == "READY" {
                    let _ = tx.send(l.clone());
                }
                lines.push(l);
            }
            lines
        });
        // wait for the engine to be open, then let it write for a random while
        if rx.recv_timeout(Duration::from_secs(120)).is_err() {
            let _ = child.kill();
            let _ = child.wait();
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return Err(Error::failed(format!(
                "the child did not open the engine: {}",
                err.trim()
            )));
        }
        let wait_ms = kill_after.0 + rng.below(kill_after.1.saturating_sub(kill_after.0).max(1));
        std::thread::sleep(Duration::from_millis(wait_ms));
        let _ = child.kill(); // SIGKILL
        let status = child
            .wait()
            .map_err(|e| Error::io("waiting for the child", e))?;
        let lines = reader
            .join()
            .map_err(|_| Error::failed("the reader thread panicked"))?;
        if status.success() {
            return Err(Error::failed(
                "the child exited by itself instead of being killed",
            ));
        }
        let events = parse_events(&lines)?;
        let t = Instant::now();
        let engine = open()?;
        let mut c = Cycle {
            cycle,
            recovery_s: t.elapsed().as_secs_f64(),
            ..Cycle::default()
        };
        model.check(engine.as_ref(), &events, &mut c)?;
        engine
            .close()
            .map_err(|e| Error::engine("closing after the check", e))?;
        drop(engine);
        out.push(c);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn events_pair_pending_and_acknowledged() {
        let ev = parse_events(&lines(&[
            "READY",
            "P k1 5 100",
            "A 5",
            "D k1 6",
            "A 6",
            "P k2 7 10",
            "A",
        ]))
        .unwrap();
        assert_eq!(ev.len(), 3);
        assert!(ev[0].acked && ev[1].acked && !ev[2].acked);
        assert_eq!(ev[1].state, State::Absent);
        assert!(parse_events(&lines(&["P k x 1"])).is_err());
    }

    #[test]
    fn an_older_state_is_lost_and_a_never_written_value_corrupt() {
        let dir = kvtestkit::conformance::TempDir::new("crash-model");
        let p = crate::props::Properties::new();
        let opts = crate::engines::options("sled", &p, dir.path(), None);
        let engine = crate::engines::open("sled", &opts).unwrap();
        // k1: written at 5, then deleted at 6 (both acknowledged), found at 5: a lost
        // delete. k2: acknowledged at 7, found at 3, which was never written to it.
        // k3: acknowledged at 8 and found at 8.
        engine.update(b"k1", &value::make(b"k1", 5, 64)).unwrap();
        engine.update(b"k2", &value::make(b"k2", 3, 64)).unwrap();
        engine.update(b"k3", &value::make(b"k3", 8, 64)).unwrap();
        let ev = parse_events(&lines(&[
            "P k1 5 64",
            "A 5",
            "D k1 6",
            "A 6",
            "P k2 7 64",
            "A 7",
            "P k3 8 64",
            "A 8",
        ]))
        .unwrap();
        let mut m = Model::default();
        let mut c = Cycle::default();
        m.check(engine.as_ref(), &ev, &mut c).unwrap();
        assert_eq!(
            (c.keys_checked, c.lost, c.corrupt),
            (3, 1, 1),
            "{:?}",
            c.problems
        );
        engine.close().unwrap();
    }
}
