//! Model test: random sequences of get, insert, update, delete and scan, with
//! close-and-reopen steps, against a `BTreeMap`, with fixed seeds.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]
#![cfg(not(wt_missing))]

use kvapi::{Engine, Options};
use kvtestkit::{TempDir, value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

fn open(dir: &Path, durability: &str) -> Arc<dyn Engine> {
    let d = dir.display().to_string();
    wiredtiger_engine::open_engine(&Options::new(
        "wiredtiger",
        &[
            ("dir", d.as_str()),
            ("cache", "2M"),
            ("log_file_max", "1M"),
            ("durability", durability),
        ],
    ))
    .unwrap()
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Keys from a small space (so operations meet existing keys), some sharing long
/// prefixes, some binary.
fn key(r: &mut Rng) -> Vec<u8> {
    let n = r.below(400);
    match n % 4 {
        0 => format!("user{n:06}").into_bytes(),
        1 => format!("shared-prefix-{}", "x".repeat((n % 30) as usize)).into_bytes(),
        2 => vec![0xff, (n >> 8) as u8, n as u8, 0],
        _ => n.to_be_bytes()[5..].to_vec(),
    }
}

fn size(r: &mut Rng) -> usize {
    match r.below(20) {
        0 => 0,
        1 => 20_000, // an overflow item
        2 => 4096,
        _ => r.below(1500) as usize,
    }
}

fn run(seed: u64, durability: &str, ops: usize) {
    let d = TempDir::new("wt-model");
    let mut r = Rng(seed);
    let mut e = open(d.path(), durability);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for step in 0..ops {
        match r.below(100) {
            0..30 => {
                let k = key(&mut r);
                assert_eq!(
                    e.get(&k).unwrap(),
                    model.get(&k).cloned(),
                    "seed {seed} step {step}: get {k:?}"
                );
            }
            30..50 => {
                let (k, v) = (key(&mut r), value(r.next(), size(&mut r)));
                e.insert(&k, &v).unwrap();
                model.insert(k, v);
            }
            50..70 => {
                let (k, v) = (key(&mut r), value(r.next(), size(&mut r)));
                e.update(&k, &v).unwrap();
                model.insert(k, v);
            }
            70..85 => {
                let k = key(&mut r);
                e.delete(&k).unwrap();
                model.remove(&k);
            }
            85..99 => {
                let start = if r.below(10) == 0 {
                    Vec::new()
                } else {
                    key(&mut r)
                };
                let n = r.below(60) as usize;
                let want: Vec<_> = model
                    .range(start.clone()..)
                    .take(n)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(
                    e.scan(&start, n).unwrap(),
                    want,
                    "seed {seed} step {step}: scan({start:?}, {n})"
                );
            }
            _ => {
                e.close().unwrap();
                drop(e);
                e = open(d.path(), durability);
            }
        }
    }
    e.close().unwrap();
    drop(e);
    let e = open(d.path(), durability);
    let all = e.scan(b"", usize::MAX).unwrap();
    let want: Vec<_> = model.into_iter().collect();
    assert_eq!(all, want, "seed {seed}: the whole store after reopen");
    e.close().unwrap();
}

#[test]
fn model_process() {
    for seed in [1, 0x9e37_79b9, 0xdead_beef] {
        run(seed, "process", 3000);
    }
}

#[test]
fn model_none() {
    for seed in [7, 0x1234_5678] {
        run(seed, "none", 3000);
    }
}

#[test]
fn model_power() {
    run(42, "power", 1500);
}
