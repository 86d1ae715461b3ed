//! The WAL engine after an unclean shutdown, on the in-memory file system: a `wal`
//! file truncated after a crash, a creation killed at every step, a missing header
//! over a log that holds data, names and sizes that a power cut takes back until
//! synced, and the engine's isolation (a read may see a write that is not yet
//! acknowledged, which a crash then loses). Each case gives a clear error or a
//! stated, counted repair; none loses an acknowledged write without a word.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::Gated;
use kvapi::{Engine, Error};
use kvtestkit::faults::{extra_counter, write_row};
use std::collections::BTreeMap;

use std::path::Path;
use std::sync::{Arc, Mutex};

use wal_engine::format::BLOCK;
use wal_engine::{Config, MemVfs, Vfs, WalEngine};

fn cfg() -> Config {
    let mut c = Config::with_dir(Path::new("/mem/wal"));
    c.log_size = 1025 * BLOCK as u64;
    c.checkpoint_ms = 3_600_000; // checkpoints only when asked or when the log fills
    c
}

fn counter(e: &WalEngine, name: &str) -> u64 {
    extra_counter(&e.counters(), name).unwrap()
}

fn note(e: &WalEngine, starts: &str) -> Option<String> {
    e.info().notes.into_iter().find(|n| n.starts_with(starts))
}

/// One row of the fault matrix (results/durability/faults.jsonl).
fn row(fault: &str, cases: usize, intact: usize, refused: usize) {
    write_row("wal", "wal-unclean-shutdown", fault, cases, intact, refused);
}

#[test]
fn a_wal_truncated_after_a_crash_is_refused_not_replayed_short() {
    let vfs = MemVfs::new();
    let e = WalEngine::open_with(&vfs, cfg()).unwrap();
    for i in 0..200u32 {
        e.insert(format!("key{i:04}").as_bytes(), &[i as u8; 300])
            .unwrap();
    }
    // Everything acknowledged is in the log only (no checkpoint since the open).
    let img = vfs.crash_image(None);
    drop(e);
    let whole = WalEngine::open_with(&img.crash_image(None), cfg()).unwrap();
    assert_eq!(whole.counters().items, Some(200));
    drop(whole);
    let cuts = [8 * BLOCK, 2 * BLOCK, BLOCK + 512, 1024 * BLOCK];
    for keep in cuts {
        let cut = img.crash_image(None);
        let mut b = cut.file("wal").durable();
        b.truncate(keep);
        cut.file("wal").set_contents(b);
        match WalEngine::open_with(&cut, cfg()) {
            Err(Error::Corruption {
                file,
                offset,
                detail,
            }) => {
                assert!(file.ends_with("wal"), "{file:?}");
                assert_eq!(offset, keep as u64);
                assert!(detail.contains("truncated"), "{detail}");
            }
            Err(other) => panic!("truncated to {keep}: {other:?}"),
            Ok(_) => panic!("a WAL truncated to {keep} bytes opened"),
        }
    }
    row(
        "wal truncated after a crash (refused)",
        cuts.len(),
        0,
        cuts.len(),
    );
}

/// Operations (writes, syncs, resizes, directory syncs) a first open makes.
fn creation_ops() -> u64 {
    let vfs = MemVfs::new();
    let e = WalEngine::open_with(&vfs, cfg()).unwrap();
    let n = vfs.ops();
    drop(e);
    n
}

#[test]
fn a_creation_killed_at_any_step_is_redone_and_counted() {
    let ops = creation_ops();
    assert!(ops >= 4, "{ops}");
    let (mut redone, mut cases) = (0, 0);
    for k in 0..ops {
        for seed in [None, Some(k + 1), Some(k + 77)] {
            let vfs = MemVfs::new();
            vfs.fail_at(k);
            assert!(WalEngine::open_with(&vfs, cfg()).is_err(), "step {k}");
            let img = vfs.crash_image(seed);
            cases += 1;
            let had_meta = img.file("meta").durable().len();
            let e = WalEngine::open_with(&img, cfg())
                .unwrap_or_else(|err| panic!("open after a creation killed at {k}: {err:?}"));
            let header_was_written = counter(&e, "creations_redone") == 0;
            if !header_was_written {
                redone += 1;
                assert!(had_meta > 0);
                let stop = note(&e, "last replay: created again").unwrap();
                assert!(stop.contains("interrupted"), "{stop}");
            }
            e.insert(b"after", b"the reopen").unwrap();
            e.close().unwrap();
            drop(e);
            let again = WalEngine::open_with(&img.crash_image(None), cfg()).unwrap();
            assert_eq!(
                again.get(b"after").unwrap().as_deref(),
                Some(&b"the reopen"[..])
            );
            assert_eq!(counter(&again, "creations_redone"), 0);
        }
    }
    assert!(redone > 0, "no step left an interrupted creation");
    row(
        &format!("creation killed at each step ({redone} redone and counted)"),
        cases,
        cases,
        0,
    );
}

#[test]
fn a_missing_header_over_a_log_with_data_is_refused() {
    let vfs = MemVfs::new();
    let e = WalEngine::open_with(&vfs, cfg()).unwrap();
    e.insert(b"acknowledged", b"in the log only").unwrap();
    let img = vfs.crash_image(None);
    drop(e);
    // block 0 zeroed: the header's other copy (written by the open) is used
    let one = img.crash_image(None);
    let mut b = one.file("wal").durable();
    b[..BLOCK].fill(0);
    one.file("wal").set_contents(b);
    let e = WalEngine::open_with(&one, cfg()).expect("the other header copy");
    assert_eq!(
        e.get(b"acknowledged").unwrap().as_deref(),
        Some(&b"in the log only"[..])
    );
    assert_eq!(counter(&e, "header_copy_repairs"), 1);
    drop(e);
    row(
        "header copy at block 0 zeroed (the other copy used, counted)",
        1,
        1,
        0,
    );
    // both copies zeroed over a log that holds data: refused
    let mut b = img.file("wal").durable();
    let second = b.len() - BLOCK;
    b[..BLOCK].fill(0);
    b[second..].fill(0);
    img.file("wal").set_contents(b);
    match WalEngine::open_with(&img, cfg()) {
        Err(Error::Corruption { detail, .. }) => {
            assert!(detail.contains("holds log data"), "{detail}");
            assert!(detail.contains("refusing"), "{detail}");
        }
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("a database whose header was zeroed was created again"),
    }
    // A data file that holds anything rules out an interrupted creation too.
    let img2 = img.crash_image(None);
    let mut w = img2.file("wal").durable();
    w[BLOCK..].fill(0);
    img2.file("wal").set_contents(w);
    img2.file("data").set_contents(vec![7u8; BLOCK]);
    match WalEngine::open_with(&img2, cfg()) {
        Err(Error::Corruption { detail, .. }) => {
            assert!(detail.contains("data file holds"), "{detail}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    row(
        "both header copies zeroed over a log or data file (refused)",
        2,
        0,
        2,
    );
}

#[test]
fn names_and_sizes_are_durable_only_once_synced() {
    let vfs = MemVfs::new();
    let f = vfs.open("new", false).unwrap();
    f.write_at(b"abc", 0).unwrap();
    f.sync().unwrap();
    assert!(
        vfs.crash_image(None).file("new").durable().is_empty(),
        "a file whose directory was not synced survived a power cut"
    );
    vfs.sync_dir().unwrap();
    assert_eq!(vfs.crash_image(None).file("new").durable(), b"abc");
    f.set_len(10).unwrap();
    assert_eq!(f.len().unwrap(), 10);
    assert_eq!(vfs.crash_image(None).file("new").durable().len(), 3);
    f.sync().unwrap();
    assert_eq!(vfs.crash_image(None).file("new").durable().len(), 10);
}

#[test]
fn a_read_may_see_a_write_not_yet_acknowledged_which_a_crash_then_loses() {
    // The engine's stated isolation (DESIGN.md, "Write path"; EngineInfo notes): a
    // write is visible once applied to the image, before its WAL record is durable.
    let g = Gated::new();
    let e = WalEngine::open_with(&g, cfg()).unwrap();
    e.insert(b"k", b"acknowledged").unwrap();
    assert!(
        e.info()
            .notes
            .iter()
            .any(|n| n.contains("visible to readers once applied")),
        "the isolation is not stated"
    );
    g.log.set(true);
    let acked = Arc::new(Mutex::new(false));
    let writer = {
        let (e, acked) = (e.clone(), acked.clone());
        std::thread::spawn(move || {
            e.update(b"k", b"in flight").unwrap();
            *acked.lock().unwrap() = true;
        })
    };
    g.log.wait_for_waiter();
    // The update waits in its WAL sync, unacknowledged; a reader sees it already.
    assert!(!*acked.lock().unwrap());
    assert_eq!(e.get(b"k").unwrap().as_deref(), Some(&b"in flight"[..]));
    // A power cut now: the reopened store has the acknowledged value, not the one
    // the reader saw.
    let img = g.inner.crash_image(None);
    let after = WalEngine::open_with(&img, cfg()).unwrap();
    assert_eq!(
        after.get(b"k").unwrap().as_deref(),
        Some(&b"acknowledged"[..])
    );
    drop(after);
    g.log.set(false);
    writer.join().unwrap();
    assert!(*acked.lock().unwrap());
    e.close().unwrap();
}

#[test]
fn an_open_on_a_full_disk_serves_reads_and_refuses_writes_with_the_reason() {
    let c = cfg();
    let vfs = MemVfs::new();
    let e = WalEngine::open_with(&vfs, c.clone()).unwrap();
    for i in 0..300u32 {
        e.insert(format!("key{i:04}").as_bytes(), &[i as u8; 300])
            .unwrap();
    }
    // The writes are in the log only: the open checkpoint must grow the meta file.
    let img = vfs.crash_image(None);
    drop(e);
    img.set_space(Some(img.used_bytes()));
    let ro = WalEngine::open_with(&img, c.clone()).unwrap();
    let why = note(&ro, "opened for reads only").expect("not said to be read-only");
    assert!(why.contains("no space"), "{why}");
    for i in 0..300u32 {
        assert_eq!(
            ro.get(format!("key{i:04}").as_bytes()).unwrap().as_deref(),
            Some(&[i as u8; 300][..])
        );
    }
    match ro.insert(b"more", b"x") {
        Err(Error::Poisoned(m)) => assert!(m.contains("no space"), "{m}"),
        other => panic!("a write to a read-only open: {other:?}"),
    }
    ro.close().unwrap();
    drop(ro);
    // With space again, a normal open with every write.
    let img2 = img.crash_image(None);
    img2.set_space(None);
    let e = WalEngine::open_with(&img2, c).unwrap();
    assert!(note(&e, "opened for reads and writes").is_some());
    assert_eq!(e.counters().items, Some(300));
    e.insert(b"more", b"x").unwrap();
    e.close().unwrap();
    row("open on a full disk (reads only, said)", 1, 1, 0);
}

#[test]
fn every_failed_io_during_open_and_replay_is_an_error_and_loses_nothing() {
    let vfs = MemVfs::new();
    let e = WalEngine::open_with(&vfs, cfg()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..120u32 {
        let k = format!("key{:04}", i % 90).into_bytes();
        let v = vec![i as u8; 100 + (i as usize * 97) % 9000];
        e.insert(&k, &v).unwrap();
        model.insert(k, v);
        if i == 60 {
            e.checkpoint_now().unwrap();
        }
    }
    // Half of it checkpointed, the rest in the log: open loads, replays, checkpoints.
    let img = vfs.crash_image(None);
    drop(e);
    let ops = {
        let probe = img.crash_image(None);
        probe.count_reads(true);
        let e = WalEngine::open_with(&probe, cfg()).unwrap();
        let n = probe.ops();
        drop(e);
        n
    };
    assert!(ops > 5, "{ops}");
    let (mut failed, mut opened) = (0, 0);
    for k in 0..ops {
        let try_img = img.crash_image(None);
        try_img.count_reads(true);
        try_img.fail_at(k);
        match WalEngine::open_with(&try_img, cfg()) {
            Err(Error::Io { .. }) | Err(Error::Poisoned(_)) => failed += 1,
            Err(other) => panic!("a failed I/O at step {k} of the open gave {other:?}"),
            Ok(e) => {
                opened += 1;
                drop(e);
            }
        }
        // Whatever the failure left, the next open has every acknowledged write.
        let after = WalEngine::open_with(&try_img.crash_image(Some(k + 5)), cfg())
            .unwrap_or_else(|err| panic!("reopen after a failure at step {k}: {err:?}"));
        for (key, v) in &model {
            assert_eq!(after.get(key).unwrap().as_ref(), Some(v), "step {k}");
        }
        assert_eq!(after.counters().items, Some(model.len() as u64));
    }
    assert!(failed > 0);
    row(
        &format!("an I/O failing during open and replay ({failed} errors, {opened} opened)"),
        ops as usize,
        ops as usize,
        0,
    );
}
