//! Packing (format version 3): the transactions of one group commit share log
//! blocks, and replay finds each where the one before it ended. A packed batch whose
//! middle transaction is damaged is cut there (the rest of the batch counted as
//! dropped) when nothing proves it was acknowledged, and refused when a later
//! batch's stamp does.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::{Gated, cfg, counter};
use kvapi::{Engine, Error};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wal_engine::format::BLOCK;
use wal_engine::{Config, MemVfs, Mode, WalEngine};

/// Writers held behind one WAL sync.
const HELD: u64 = 12;

/// A value that names its key, 100 bytes.
fn value(i: u64) -> Vec<u8> {
    let mut v = format!("packed-value-{i:04}-").into_bytes();
    v.resize(100, b'0' + (i % 10) as u8);
    v
}

fn key(i: u64) -> Vec<u8> {
    format!("p{i:04}").into_bytes()
}

fn config() -> Config {
    let mut c = cfg(1024);
    c.mode = Mode::Fdatasync;
    c
}

/// Writes key 0 and then, while the committer is held in key 0's WAL sync, keys
/// 1..=HELD from threads of their own, which all queue for the next group commit.
/// Returns the WAL bytes the held writers' batch took; every write is acknowledged.
fn held_batch(vfs: &Gated, e: &WalEngine) -> u64 {
    vfs.log.set(true);
    std::thread::scope(|s| {
        let first = s.spawn(|| e.insert(&key(0), &value(0)).unwrap());
        vfs.log.wait_for_waiter();
        let base = counter(e, "txns");
        let held: Vec<_> = (1..=HELD)
            .map(|i| s.spawn(move || e.insert(&key(i), &value(i)).unwrap()))
            .collect();
        // every held writer has reserved its transaction (queued behind the sync)
        let t0 = Instant::now();
        while counter(e, "txns") < base + HELD {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "writers did not queue"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        // key 0's batch was written before the gate held its sync
        let before = counter(e, "wal_bytes");
        vfs.log.set(false);
        first.join().unwrap();
        for h in held {
            h.join().unwrap();
        }
        counter(e, "wal_bytes") - before
    })
}

/// [`held_batch`], then key HELD + 1 alone, in a batch of its own.
fn packed_batch(vfs: &Gated, c: &Config) -> (Arc<WalEngine>, u64) {
    let e = WalEngine::open_with(vfs, c.clone()).expect("open");
    let bytes = held_batch(vfs, &e);
    e.insert(&key(HELD + 1), &value(HELD + 1)).unwrap();
    (e, bytes)
}

fn check_keys(e: &WalEngine, keys: impl Iterator<Item = u64>) {
    for i in keys {
        assert_eq!(e.get(&key(i)).unwrap(), Some(value(i)), "key {i}");
    }
}

#[test]
fn a_group_commit_packs_its_transactions_and_replay_finds_them() {
    let vfs = Gated::new();
    let c = config();
    let (e, batch_bytes) = packed_batch(&vfs, &c);
    // key 0's block, then twelve transactions of about 330 bytes in one or two
    // blocks, not twelve
    assert!(
        batch_bytes <= 3 * BLOCK as u64,
        "the held writers' batch took {batch_bytes} bytes of log"
    );
    let img = vfs.inner.crash_image(None);
    drop(e);
    let e = WalEngine::open_with(&img, c.clone()).expect("reopen");
    assert_eq!(counter(&e, "replayed_txns"), HELD + 2);
    assert_eq!(counter(&e, "replay_torn_txns"), 0);
    assert_eq!(counter(&e, "replay_dropped_txns"), 0);
    check_keys(&e, 0..=HELD + 1);
    // and the engine goes on writing after the replayed batch
    e.insert(b"after", b"replay").unwrap();
    let img2 = img.crash_image(None);
    drop(e);
    let e = WalEngine::open_with(&img2, c).expect("reopen");
    check_keys(&e, 0..=HELD + 1);
    assert_eq!(e.get(b"after").unwrap(), Some(b"replay".to_vec()));
}

/// Flips a byte of `i`'s value in the log of `img`.
fn damage_value(img: &MemVfs, i: u64) {
    let wal = img.file("wal");
    let mut b = wal.durable();
    let v = value(i);
    let at = b
        .windows(v.len())
        .position(|w| w == v.as_slice())
        .expect("the value is in the log");
    b[at + 20] ^= 0x40;
    wal.set_contents(b);
}

#[test]
fn damage_inside_a_packed_batch_is_cut_or_refused() {
    let vfs = Gated::new();
    let c = config();
    let (e, _) = packed_batch(&vfs, &c);
    let img = vfs.inner.crash_image(None);
    drop(e);
    // a transaction in the middle of the packed batch: the batch after it was
    // reserved once the packed batch was complete (its stamp says so), so the damaged
    // transaction was acknowledged: refused, not cut
    let mid = HELD / 2;
    damage_value(&img, mid);
    match WalEngine::open_with(&img, c.clone()) {
        Err(Error::Corruption { file, detail, .. }) => {
            assert!(file.ends_with("wal"), "{}", file.display());
            assert!(detail.contains("acknowledged"), "{detail}");
        }
        Err(other) => panic!("expected corruption, got {other}"),
        Ok(e) => panic!(
            "opened a damaged acknowledged transaction: {:?}",
            e.info().notes
        ),
    }

    // without the later batch nothing proves it: cut there, the transactions after
    // it in its batch counted as dropped
    let vfs = Gated::new();
    let e = WalEngine::open_with(&vfs, c.clone()).expect("open");
    held_batch(&vfs, &e);
    let img = vfs.inner.crash_image(None);
    drop(e);
    damage_value(&img, mid);
    let e = WalEngine::open_with(&img, c).expect("a torn last batch opens");
    assert_eq!(counter(&e, "replay_torn_txns"), 1);
    let replayed = counter(&e, "replayed_txns");
    let dropped = counter(&e, "replay_dropped_txns");
    // key 0, then the held ones in the order they reserved: the cut is at the damaged
    // one, whatever its place, and every one after it in the batch is counted
    assert_eq!(
        replayed + 1 + dropped,
        HELD + 1,
        "replayed {replayed}, dropped {dropped}"
    );
    assert_eq!(e.get(&key(mid)).unwrap(), None);
    assert_eq!(e.get(&key(0)).unwrap(), Some(value(0)));
}
