//! A real process killed with SIGKILL at a random moment: the child re-executes this
//! test binary (selected by an environment variable), writes with many requests in
//! flight and prints every acknowledged (key, version) on stdout; the parent kills it,
//! reopens the directory and checks each acknowledged write is there, with that
//! version or a later one the child had submitted.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test (helpers outside #[test] too)"
)]
mod common;

use common::{Rng, value};
use kvapi::{Engine, Request};
use kvell::{Config, Kvell};
use kvtestkit::conformance::TempDir;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const DIR_VAR: &str = "KVELL_CRASH_CHILD_DIR";
const SEED_VAR: &str = "KVELL_CRASH_CHILD_SEED";
const KEYS: u64 = 400;

fn config(dir: &std::path::Path) -> Config {
    let mut c = Config::new(dir);
    c.cache_bytes = 1 << 20;
    c.freelist = 4;
    c
}

fn key(k: u64) -> Vec<u8> {
    format!("crash-key-{k:04}").into_bytes()
}

/// The value of version `v` of key `k`: the version, then filler of a size that
/// depends on both (so updates move between size classes, large ones included).
fn versioned(k: u64, v: u64) -> Vec<u8> {
    let mut r = Rng::new(k * 1_000_003 + v);
    let mut out = v.to_le_bytes().to_vec();
    out.extend(value(k ^ (v << 20), r.value_len()));
    out
}

/// The child: runs only when re-executed by the parent.
#[test]
fn crash_child() {
    let (Some(dir), Some(seed)) = (std::env::var_os(DIR_VAR), std::env::var_os(SEED_VAR)) else {
        return;
    };
    let seed: u64 = seed.to_str().unwrap().parse().unwrap();
    // libtest has printed "test crash_child ... " without a newline: end that line.
    println!();
    let e = Kvell::open(config(std::path::Path::new(&dir))).unwrap();
    let a = e.clone().native_async().unwrap();
    let mut rng = Rng::new(seed);
    let mut version = vec![0u64; KEYS as usize];
    let (tx, rx) = mpsc::sync_channel::<()>(64);
    let in_flight = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        while in_flight.load(std::sync::atomic::Ordering::SeqCst) >= 64 {
            let _ = rx.recv_timeout(Duration::from_millis(10));
        }
        let k = rng.below(KEYS);
        version[k as usize] += 1;
        let v = version[k as usize];
        println!("SUBMIT {k} {v}");
        in_flight.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let (tx, inf) = (tx.clone(), in_flight.clone());
        a.submit(
            Request::Update {
                key: key(k),
                value: versioned(k, v),
            },
            Box::new(move |r| {
                r.expect("write failed");
                println!("ACK {k} {v}");
                inf.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                let _ = tx.try_send(());
            }),
        );
    }
}

fn crash_once(seed: u64) {
    let d = TempDir::new("kvell-crash");
    std::fs::create_dir_all(d.path()).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(DIR_VAR, d.path())
        .env(SEED_VAR, seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (ltx, lrx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if ltx.send(line).is_err() {
                break;
            }
        }
    });
    // Kill after a seeded number of acknowledgements (so the child has done real
    // work whatever the machine's speed), plus a little random time.
    let mut rng = Rng::new(seed);
    let want_acks = 200 + rng.below(3000) as usize;
    let mut acked: HashMap<u64, u64> = HashMap::new();
    let mut submitted: HashMap<u64, u64> = HashMap::new();
    let mut acks = 0;
    let start = Instant::now();
    let record = |line: &str, acked: &mut HashMap<u64, u64>, submitted: &mut HashMap<u64, u64>| {
        let mut it = line.split_whitespace();
        let (Some(kind), Some(k), Some(v)) = (it.next(), it.next(), it.next()) else {
            return false;
        };
        let (Ok(k), Ok(v)) = (k.parse::<u64>(), v.parse::<u64>()) else {
            return false;
        };
        let m = if kind == "ACK" { acked } else { submitted };
        let e = m.entry(k).or_insert(0);
        *e = (*e).max(v);
        kind == "ACK"
    };
    while acks < want_acks && start.elapsed() < Duration::from_secs(15) {
        match lrx.recv_timeout(Duration::from_millis(100)) {
            Ok(l) => acks += record(&l, &mut acked, &mut submitted) as usize,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(_) => break,
        }
    }
    std::thread::sleep(Duration::from_micros(rng.below(3000)));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap();
    for l in lrx.try_iter() {
        record(&l, &mut acked, &mut submitted);
    }
    assert!(!acked.is_empty(), "the child acknowledged nothing");
    let e = Kvell::open(config(d.path())).unwrap();
    for (&k, &v) in &acked {
        let got = e.get(&key(k)).unwrap().unwrap_or_else(|| {
            panic!("seed {seed}: key {k} acknowledged at version {v} is missing")
        });
        let gv = u64::from_le_bytes(got[..8].try_into().unwrap());
        assert!(
            gv >= v,
            "seed {seed}: key {k} has version {gv} < acknowledged {v}"
        );
        let sub = submitted.get(&k).copied().unwrap_or(0);
        assert!(
            gv <= sub,
            "seed {seed}: key {k} has version {gv}, never submitted (last submitted {sub})"
        );
        assert_eq!(
            got,
            versioned(k, gv),
            "seed {seed}: key {k} value of version {gv}"
        );
    }
    e.close().unwrap();
}

#[test]
fn crash_sigkill_seeds() {
    for seed in 1..=3 {
        crash_once(seed);
    }
}

#[ignore]
#[test]
fn crash_sigkill_many() {
    for seed in 100..160 {
        crash_once(seed);
    }
}
