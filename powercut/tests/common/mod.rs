//! The harness the tests share: record a run of the crate's own child program
//! (`powercut-child`), freeze and kill it, read the history, and build the crash
//! states a cut allows.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test; each test file uses a part of the harness"
)]

use powercut::cuts::{self, Cut, Plan};
use powercut::image::{self, read_tree};
use powercut::layer::remove_tree;
use powercut::rng::Rng;
use powercut::{Durable, History, Recorder, State};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A directory tree: each path, `None` for a directory, a file's bytes.
pub type Tree = BTreeMap<String, Option<Vec<u8>>>;

/// A fresh directory for test `name` under KVTESTBED_TMP (else the system's).
pub fn scratch(name: &str) -> PathBuf {
    let top = std::env::var_os("KVTESTBED_TMP")
        .map_or_else(std::env::temp_dir, PathBuf::from)
        .join("powercut")
        .join(name);
    remove_tree(&top).unwrap();
    std::fs::create_dir_all(&top).unwrap();
    top
}

/// One recorded run.
pub struct Run {
    pub dir: PathBuf,
    pub root: PathBuf,
    pub recorder: Recorder,
    pub history: History,
    /// What the child printed before `done`, in order.
    pub printed: Vec<String>,
}

/// Runs the child on `ops` against a root holding `base` (files, as durable
/// before the run), freezes and kills it, and reads its history (not verified).
pub fn record(name: &str, base: &[(&str, &[u8])], ops: &[&str]) -> Run {
    record_env(name, base, ops, &[])
}

/// [`record`] with environment variables for the child (the layer's test hooks).
pub fn record_env(name: &str, base: &[(&str, &[u8])], ops: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = scratch(name);
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    for (p, bytes) in base {
        std::fs::write(root.join(p), bytes).unwrap();
    }
    let recorder = Recorder::prepare(&root, &dir.join("work")).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_powercut-child"));
    cmd.arg(&root)
        .args(ops)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .envs(env.iter().copied());
    recorder.apply(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let out = child.stdout.take().unwrap();
    let mut printed = Vec::new();
    let mut done = false;
    for line in BufReader::new(out).lines() {
        let line = line.unwrap();
        if line == "done" {
            done = true;
            break;
        }
        printed.push(line);
    }
    assert!(
        done,
        "the child ended before its script did: {:?}",
        child.wait()
    );
    recorder
        .freeze(Duration::from_secs(20), &mut || {
            matches!(child.try_wait(), Ok(None))
        })
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let history = History::new(recorder.recording().unwrap(), &recorder.base()).unwrap();
    Run {
        dir,
        root,
        recorder,
        history,
        printed,
    }
}

/// [`record`], then the check that the recording replays to the directory left.
pub fn record_verified(name: &str, base: &[(&str, &[u8])], ops: &[&str]) -> Run {
    let mut run = record(name, base, ops);
    run.history.verify(&run.root).unwrap();
    run
}

/// The index of the record that completed the printed line `text`.
pub fn line(h: &History, text: &str) -> usize {
    h.lines()
        .into_iter()
        .find(|(t, _)| t == text)
        .unwrap_or_else(|| panic!("no line {text:?} in {:?}", h.lines()))
        .1
}

/// The index of the n-th record of `kind` (0-based).
pub fn nth(h: &History, kind: powercut::recording::Kind, n: usize) -> usize {
    h.recording
        .records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.kind == kind)
        .nth(n)
        .unwrap_or_else(|| panic!("no {} record number {n}", kind.name()))
        .0
}

/// Every cut of the run: after each record from the first of the run on.
pub fn every_cut(h: &History) -> Vec<usize> {
    let first = h
        .recording
        .records
        .iter()
        .position(|r| {
            !matches!(
                r.kind,
                powercut::recording::Kind::Root | powercut::recording::Kind::Base
            )
        })
        .unwrap_or(h.recording.records.len());
    (first..=h.recording.records.len()).collect()
}

/// The states drawn at `cut`: `synced`, `all` and `random` random ones.
pub fn states_at(h: &History, cut: usize, random: usize, seed: u64) -> Vec<State> {
    let d = Durable::at(h, cut);
    let mut rng = Rng::new(seed ^ cut as u64);
    let mut v = vec![State::synced(&d), State::all(&d)];
    v.extend((0..random).map(|_| State::random(&d, &mut rng)));
    v
}

/// The directory of `state`, built at `dest` and read back.
pub fn image(h: &History, state: &State, dest: &Path) -> Tree {
    remove_tree(dest).unwrap();
    image::build(h, state, dest).unwrap();
    let t = read_tree(dest).unwrap();
    remove_tree(dest).unwrap();
    t
}

/// Every state at every cut: (cut, state, its tree).
pub fn all_images(run: &Run, random: usize) -> Vec<(usize, State, Tree)> {
    let dest = run.dir.join("image");
    let mut out = Vec::new();
    for cut in every_cut(&run.history) {
        for s in states_at(&run.history, cut, random, 7) {
            let t = image(&run.history, &s, &dest);
            out.push((cut, s, t));
        }
    }
    out
}

/// The cuts the crate's own planner picks, with `acks` the records of the lines.
pub fn planned(h: &History, acks: &[usize]) -> Vec<Cut> {
    cuts::choose(
        h,
        acks,
        Plan {
            at_events: usize::MAX,
            random: 8,
            seed: 3,
        },
    )
}

/// The bytes of file `p` in `t` (panics when it is missing or a directory).
pub fn file<'a>(t: &'a Tree, p: &str) -> &'a [u8] {
    match t.get(p) {
        Some(Some(b)) => b,
        other => panic!(
            "{p} is not a file in the image: {other:?}; image {:?}",
            t.keys()
        ),
    }
}
