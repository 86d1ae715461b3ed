//! Several group-commit batches in flight (issue 21 part 2): the committer takes new
//! batches while earlier ones are being written, and the device completes them in
//! any order (the seam's writes are reaped in a pseudo-random order, as a device
//! with many writes in flight may complete them). A write is acknowledged only once
//! every batch before its own is written, and synced where the mode asks: crash
//! images taken at the moment writes are acknowledged hold every write acknowledged
//! so far. A committer that moved the log past a batch still in flight, or that
//! acknowledged a batch its sync did not cover, fails here; so does one that hands
//! its acknowledgements to another thread.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::{cfg, counter, open};
use kvapi::{Engine, Reply, Request};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use wal_engine::{MemVfs, Mode};

/// Inserts in flight at once.
const IN_FLIGHT: usize = 64;

fn key(i: u64) -> Vec<u8> {
    format!("inflight{i:06}").into_bytes()
}

/// Values of 100 bytes (in their records), or of `SIZES` in turn (in the data file,
/// written in parallel with the log commit up to 32 KiB, first above).
const SIZES: [usize; 3] = [5_000, 30_000, 40_000];

fn value(i: u64, large: bool) -> Vec<u8> {
    let mut v = format!("value-of-{i}-").into_bytes();
    let len = if large { SIZES[i as usize % 3] } else { 100 };
    v.resize(len, b'a' + (i % 26) as u8);
    v
}

/// Acknowledged keys, and the images taken as they were acknowledged (each with
/// how many keys were acknowledged before it).
#[derive(Default)]
struct Seen {
    acked: Vec<u64>,
    images: Vec<(MemVfs, usize)>,
    /// The threads acknowledgements ran on.
    threads: std::collections::BTreeSet<String>,
}

fn acknowledged_writes_are_in_every_image(mode: Mode, image: fn(&MemVfs) -> MemVfs, large: bool) {
    // inserts in all, and an image at every this many acknowledgements
    let (n_all, every) = if large { (400, 20) } else { (3000, 40) };
    let vfs = MemVfs::new();
    let mut c = cfg(256);
    c.mode = mode;
    let e = open(&vfs, &c);
    let a = e.clone().native_async().expect("a native async path");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (tx, rx) = channel();
    for i in 0..n_all {
        if i as usize >= IN_FLIGHT {
            rx.recv().unwrap();
        }
        let (seen, vfs, tx) = (seen.clone(), vfs.clone(), tx.clone());
        a.submit(
            Request::Insert {
                key: key(i),
                value: value(i, large),
            },
            Box::new(move |r| {
                assert!(matches!(r, Ok(Reply::Done)), "insert {i}: {r:?}");
                // the image is taken before any later acknowledgement is counted
                let mut s = seen.lock().unwrap();
                s.acked.push(i);
                let t = std::thread::current()
                    .name()
                    .unwrap_or("unnamed")
                    .to_string();
                s.threads.insert(t);
                if s.acked.len() % every == 0 {
                    let n = s.acked.len();
                    s.images.push((image(&vfs), n));
                }
                drop(s);
                tx.send(()).unwrap();
            }),
        );
    }
    for _ in 0..IN_FLIGHT.min(n_all as usize) {
        rx.recv().unwrap();
    }
    let peak = counter(&e, "log_peak_in_flight");
    assert!(
        peak >= 2 || large,
        "never two batches in flight (peak {peak}): the test proves nothing"
    );
    drop(a);
    e.close().unwrap();
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(seen.images.len(), n_all as usize / every);
    // group commit without a hop to another thread: the committer runs the
    // acknowledgements its writes make ready (the submitting thread runs those of
    // writes complete when submitted)
    // (large values: the data writes finish last, and the completer runs those)
    assert!(
        large || seen.threads.contains("wal-committer") && !seen.threads.contains("wal-completer"),
        "acknowledged on {:?}",
        seen.threads
    );
    for (img, n) in &seen.images {
        let r = open(img, &c);
        for &i in &seen.acked[..*n] {
            assert_eq!(
                r.get(&key(i)).unwrap(),
                Some(value(i, large)),
                "key {i}, acknowledged before an image taken after {n} acknowledgements"
            );
        }
        r.close().unwrap();
    }
}

#[test]
fn a_kill_keeps_every_write_acknowledged_with_batches_in_flight() {
    acknowledged_writes_are_in_every_image(Mode::NoneProcess, MemVfs::kill_image, false);
}

#[test]
fn a_power_cut_keeps_every_write_acknowledged_with_batches_in_flight() {
    acknowledged_writes_are_in_every_image(Mode::Fdatasync, |v| v.crash_image(Some(7)), false);
}

#[test]
fn a_kill_keeps_every_large_value_acknowledged_with_data_writes_in_flight() {
    acknowledged_writes_are_in_every_image(Mode::NoneProcess, MemVfs::kill_image, true);
}

#[test]
fn a_power_cut_keeps_every_large_value_acknowledged_with_data_writes_in_flight() {
    acknowledged_writes_are_in_every_image(Mode::Fdatasync, |v| v.crash_image(Some(7)), true);
}
