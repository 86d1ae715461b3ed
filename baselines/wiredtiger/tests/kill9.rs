//! Real crashes: the test binary re-executes itself as a child that writes from four
//! threads and appends each acknowledged (key, version) to a file; the parent kills it
//! with SIGKILL at a pseudo-random moment, reopens the directory and checks every
//! acknowledged write (the stored version is the acknowledged one, or the write that
//! was in flight when the child died). Classes `process` and `power` alternate, with
//! checkpoints every second or not at all during the run.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]
#![cfg(not(wt_missing))]

use kvapi::Engine;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CHILD_DIR: &str = "WT_KILL9_DIR";
const CHILD_ACKS: &str = "WT_KILL9_ACKS";
const CHILD_CYCLE: &str = "WT_KILL9_CYCLE";

fn open(dir: &Path, durability: &str, checkpoint_secs: &str) -> Arc<dyn Engine> {
    let d = dir.to_string_lossy().into_owned();
    wiredtiger_engine::open_engine(&kvapi::Options::new(
        "wiredtiger",
        &[
            ("dir", &d),
            ("cache", "8M"),
            ("log_file_max", "1M"),
            ("checkpoint_secs", checkpoint_secs),
            ("durability", durability),
        ],
    ))
    .expect("open")
}

fn class(cycle: u64) -> (&'static str, &'static str) {
    match cycle % 4 {
        0 => ("process", "1"),
        1 => ("power", "0"),
        2 => ("process", "0"),
        _ => ("power", "1"),
    }
}

/// The value of a version: its number, then bytes derived from it; sizes vary so
/// that small values, values over a page and overflow items all occur.
fn value_of(version: u64) -> Vec<u8> {
    let len = match version % 10 {
        0 => 6000,
        1 => 40_000,
        _ => 50 + (version % 900) as usize,
    };
    let mut v = version.to_le_bytes().to_vec();
    v.extend(kvtestkit::conformance::value(version, len));
    v
}

fn version_in(v: &[u8]) -> u64 {
    let version = u64::from_le_bytes(v[..8].try_into().unwrap());
    assert_eq!(
        v,
        value_of(version),
        "value of version {version} is damaged"
    );
    version
}

/// The child: writes until killed. Does nothing in a normal test run.
#[test]
fn kill9_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let acks = std::env::var(CHILD_ACKS).unwrap();
    let cycle: u64 = std::env::var(CHILD_CYCLE).unwrap().parse().unwrap();
    let (durability, checkpoint_secs) = class(cycle);
    let e = open(Path::new(&dir), durability, checkpoint_secs);
    let log = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(acks)
            .unwrap(),
    ));
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let e = e.clone();
            let log = log.clone();
            s.spawn(move || {
                let mut i = 0u64;
                loop {
                    let key = format!("t{t}-k{:02}", i % 40);
                    // versions grow across cycles and are unique per write
                    let version = (cycle + 1) * 100_000_000 + t * 10_000_000 + i;
                    let line = if i % 17 == 5 {
                        e.delete(key.as_bytes()).unwrap();
                        format!("{key} del {version}\n")
                    } else {
                        e.update(key.as_bytes(), &value_of(version)).unwrap();
                        format!("{key} put {version}\n")
                    };
                    // one write(2) per line: a kill never leaves half a line
                    log.lock().unwrap().write_all(line.as_bytes()).unwrap();
                    i += 1;
                }
            });
        }
    });
}

fn cycles(n: u64) {
    let d = kvtestkit::conformance::TempDir::new("wt-kill9");
    std::fs::create_dir_all(d.path()).unwrap();
    let dir = d.path().join("db");
    let acks = d.path().join("acks");
    // key -> the state its last acknowledged write left: Some(version) or deleted
    let mut expect: HashMap<String, Option<u64>> = HashMap::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for cycle in 0..n {
        let _ = std::fs::remove_file(&acks);
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "kill9_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_DIR, &dir)
            .env(CHILD_ACKS, &acks)
            .env(CHILD_CYCLE, cycle.to_string())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::thread::sleep(Duration::from_millis(600 + x % 1400));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let text = std::fs::read_to_string(&acks).unwrap_or_default();
        let mut acked = 0;
        // per thread: the next write, in flight when the child was killed
        let mut next_i = [0u64; 4];
        // A line the kill cut short is not an acknowledgement on record: its write
        // counts as the one in flight.
        for line in text
            .split_inclusive('\n')
            .filter_map(|l| l.strip_suffix('\n'))
        {
            let mut w = line.split(' ');
            let (k, op, v) = (w.next().unwrap(), w.next().unwrap(), w.next().unwrap());
            let v: u64 = v.parse().unwrap();
            expect.insert(k.to_string(), (op == "put").then_some(v));
            let t = (v / 10_000_000 % 10) as usize;
            next_i[t] = next_i[t].max(v % 10_000_000 + 1);
            acked += 1;
        }
        assert!(acked > 0, "cycle {cycle}: the child acknowledged nothing");
        eprintln!(
            "cycle {cycle} {:?}: {acked} acknowledged writes",
            class(cycle)
        );
        let mut in_flight: HashMap<String, Option<u64>> = HashMap::new();
        for (t, &i) in next_i.iter().enumerate() {
            let version = (cycle + 1) * 100_000_000 + t as u64 * 10_000_000 + i;
            let key = format!("t{t}-k{:02}", i % 40);
            in_flight.insert(key, (i % 17 != 5).then_some(version));
        }
        let e = open(&dir, "process", "60");
        let mut keys: Vec<String> = expect.keys().chain(in_flight.keys()).cloned().collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let found = e.get(k.as_bytes()).unwrap().map(|v| version_in(&v));
            let want = expect.get(&k).copied().flatten();
            let maybe = in_flight.get(&k).copied();
            assert!(
                found == want || Some(found) == maybe,
                "cycle {cycle}: {k} holds {found:?}, acknowledged {want:?}, in flight {maybe:?}"
            );
            expect.insert(k, found);
        }
        // the engine's scan agrees with its gets
        let all = e.scan(b"", usize::MAX).unwrap();
        assert_eq!(all.len(), expect.values().filter(|v| v.is_some()).count());
        for (k, v) in &all {
            assert_eq!(e.get(k).unwrap().as_ref(), Some(v));
        }
        e.close().unwrap();
    }
}

#[test]
fn kill9_four_cycles() {
    cycles(4);
}

#[test]
#[ignore = "soak: 40 kill cycles"]
fn kill9_soak() {
    cycles(40);
}
