//! I/O failures during KVell's open and recovery, on the simulated disk: a store left
//! by a kill (so the open scans every slab and repairs what the kill left), then each
//! I/O of the open failed in turn. The open must fail with an I/O error (or succeed),
//! never panic or lose an acknowledged write, and the next open must have every
//! acknowledged write. Rows go to the fault matrix (results/durability/faults.jsonl).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test (helpers outside #[test] too)"
)]

mod common;

use common::{Rng, value};
use kvapi::{Engine, Error};
use kvell::{Config, Crash, IoMode, Kvell, Mode, SimDisk};
use kvtestkit::conformance::TempDir;
use kvtestkit::faults::{count_panics, panics, write_row};
use std::collections::BTreeMap;
use std::path::Path;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn config(dir: &Path, disk: &SimDisk, mode: Mode) -> Config {
    let mut c = Config::new(dir);
    c.io = IoMode::Sim(disk.clone());
    c.mode = mode;
    c.workers = 2;
    c.cache_bytes = 64 << 10;
    c.freelist = 4;
    c
}

/// The same store every time: items of every size class and over 4 KiB, updates
/// that change class, deletes; then a kill (the clean-shutdown record says "open").
fn killed_store(dir: &Path, disk: &SimDisk, mode: Mode) -> Model {
    let e = Kvell::open(config(dir, disk, mode)).unwrap();
    let mut rng = Rng::new(11);
    let mut model = Model::new();
    for i in 0..160u64 {
        let k = format!("k{:03}", rng.below(90)).into_bytes();
        if i % 9 == 4 {
            e.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = value(i, rng.value_len());
            e.insert(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
    disk.crash(Crash::Process);
    let _ = e.close();
    drop(e);
    disk.restart();
    model
}

fn check(e: &Kvell, model: &Model, what: &str) {
    for (k, v) in model {
        assert_eq!(
            e.get(k).unwrap().as_ref(),
            Some(v),
            "{what}: key {}",
            String::from_utf8_lossy(k)
        );
    }
    assert_eq!(
        e.scan(b"", usize::MAX).unwrap().len(),
        model.len(),
        "{what}: scan"
    );
}

fn failed_io_during_recovery(mode: Mode, name: &str) {
    count_panics();
    let d = TempDir::new("kvell-recovery-io-dry");
    let disk = SimDisk::new();
    let model = killed_store(d.path(), &disk, mode);
    let base = disk.ops();
    let e = Kvell::open(config(d.path(), &disk, mode)).unwrap();
    let total = disk.ops() - base;
    check(&e, &model, "dry run");
    e.close().unwrap();
    drop(e);
    assert!(total > 10, "{total} I/Os in the open");
    let (mut errors, mut opened) = (0, 0);
    for n in 0..total {
        let d = TempDir::new("kvell-recovery-io");
        let disk = SimDisk::new();
        let m = killed_store(d.path(), &disk, mode);
        assert_eq!(m, model);
        disk.fail_op(Some(disk.ops() + n));
        match Kvell::open(config(d.path(), &disk, mode)) {
            Err(Error::Io { .. }) | Err(Error::Poisoned(_)) => errors += 1,
            Err(other) => panic!("{name}: I/O {n} of the open failed and gave {other:?}"),
            Ok(e) => {
                // The failure fell on something the open does not need to succeed
                // (or it was retried): what it serves must be right.
                opened += 1;
                disk.fail_op(None);
                check(&e, &model, &format!("{name}: opened despite I/O {n}"));
                let _ = e.close();
            }
        }
        disk.fail_op(None);
        let e = Kvell::open(config(d.path(), &disk, mode))
            .unwrap_or_else(|err| panic!("{name}: reopen after I/O {n} failed: {err}"));
        check(&e, &model, &format!("{name}: reopen after I/O {n}"));
        e.insert(b"after", b"x").unwrap();
        e.close().unwrap();
    }
    assert_eq!(panics(), 0);
    assert!(errors > 0, "{name}: no failed I/O made the open fail");
    eprintln!(
        "kvell {name}: {total} I/Os of a recovery failed one at a time: {errors} errors, {opened} opened"
    );
    write_row(
        "kvell",
        &format!("kvell-recovery-io-errors-{name}"),
        &format!("an I/O failing during recovery after a kill ({errors} errors, {opened} opened)"),
        total as usize,
        total as usize,
        0,
    );
}

#[test]
fn every_failed_io_during_recovery_is_an_error_and_loses_nothing_direct() {
    failed_io_during_recovery(Mode::Direct, "direct");
}

#[test]
fn every_failed_io_during_recovery_is_an_error_and_loses_nothing_flush() {
    failed_io_during_recovery(Mode::Flush, "flush");
}

/// A power cut (or a kill) at every step of a store's first open: the directory it
/// leaves opens again (as a new store: nothing had been acknowledged), takes writes
/// and keeps them.
#[test]
fn a_first_open_cut_at_every_step_opens_again() {
    count_panics();
    let dry = TempDir::new("kvell-create-dry");
    let disk = SimDisk::new();
    let e = Kvell::open(config(dry.path(), &disk, Mode::Flush)).unwrap();
    let total = disk.ops();
    drop(e);
    assert!(total > 3, "{total} I/Os in a first open");
    let mut cases = 0;
    for n in 0..=total {
        for crash in [
            Crash::Process,
            Crash::Power(n + 1),
            Crash::PowerSectors(n + 9),
        ] {
            let d = TempDir::new("kvell-create-cut");
            let disk = SimDisk::new();
            disk.cut_power_at(n, crash);
            let first = Kvell::open(config(d.path(), &disk, Mode::Flush));
            if let Ok(e) = first {
                let _ = e.close();
            }
            disk.restart();
            let e = Kvell::open(config(d.path(), &disk, Mode::Flush)).unwrap_or_else(|err| {
                panic!(
                    "a first open cut at I/O {n} ({crash:?}) left a store that does not open: {err}"
                )
            });
            assert_eq!(e.counters().items, Some(0));
            e.insert(b"k", b"v").unwrap();
            e.close().unwrap();
            drop(e);
            let e = Kvell::open(config(d.path(), &disk, Mode::Flush)).unwrap();
            assert_eq!(e.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
            e.close().unwrap();
            cases += 1;
        }
    }
    assert_eq!(panics(), 0);
    write_row(
        "kvell",
        "kvell-unclean-shutdown",
        "first open cut (kill, power, torn sectors) at every step",
        cases,
        cases,
        0,
    );
}
