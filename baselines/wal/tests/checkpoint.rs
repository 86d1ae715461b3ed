//! Checkpoints that let writers go on: a checkpoint copies its pages one slice at a
//! time, holding the core lock for that slice's copy alone, so a slice copied after
//! the checkpoint began may hold changes of later transactions. It writes a slice
//! only once the log is complete up to the newest change the slice holds, and replay
//! from the checkpoint's start applies those changes again. Crash images taken at
//! any moment while writers and checkpoints run must open, hold every write
//! acknowledged before the image, and hold no torn change (a record moved between
//! pages whose old page was written without the new one is a key stored twice,
//! which the open refuses).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::{Gated, counter};
use kvapi::Engine;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wal_engine::{Config, MemVfs, WalEngine};

const KEYS: u64 = 3_000;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// A value that names its key and sequence number; its length varies with both, so
/// updates move records between size classes (and pages) as well as in place.
fn value(i: u64, seq: u64) -> Vec<u8> {
    let mut v = format!("{i}:{seq}:").into_bytes();
    let len = 600 + ((i * 7 + seq * 13) % 5) * 100;
    v.resize(len as usize, b'x');
    v
}

fn parse(i: u64, v: &[u8]) -> u64 {
    let s = std::str::from_utf8(&v[..v.iter().position(|&b| b == b'x').unwrap_or(v.len())])
        .expect("a value of ours");
    let mut parts = s.split(':');
    assert_eq!(
        parts.next().and_then(|p| p.parse().ok()),
        Some(i),
        "value of another key"
    );
    let seq = parts
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a sequence");
    assert_eq!(v, value(i, seq).as_slice(), "a damaged value");
    seq
}

#[test]
fn crash_images_while_sliced_checkpoints_and_writers_run_lose_nothing_acknowledged() {
    crash_images_while_checkpoints_run(None);
}

/// The same under a budget of a quarter of the data: pages are evicted and read
/// back while checkpoints run, and writers wait at the dirty limit.
#[test]
fn crash_images_while_checkpoints_run_with_pages_evicted_lose_nothing_acknowledged() {
    crash_images_while_checkpoints_run(Some(3 << 20));
}

fn crash_images_while_checkpoints_run(memory: Option<u64>) {
    let vfs = MemVfs::new();
    let mut c = Config::with_dir(Path::new("/mem/wal"));
    c.log_size = 8 << 20;
    c.checkpoint_ms = 3_600_000; // checkpoints when this test asks (or the log fills)
    c.memory = memory;
    let e = WalEngine::open_with(&vfs, c.clone()).unwrap();
    for i in 0..KEYS {
        e.insert(&key(i), &value(i, 0)).unwrap();
    }
    // every page dirty: the first checkpoint below has several slices of 256 pages
    let acked: Arc<Mutex<HashMap<u64, u64>>> =
        Arc::new(Mutex::new((0..KEYS).map(|i| (i, 0)).collect()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let (e, acked, stop) = (e.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut seq = 0u64;
                let mut x = w + 1;
                while !stop.load(Ordering::Relaxed) {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    // each writer its own keys: acknowledged order is per key
                    let i = (x >> 33) % (KEYS / 2) * 2 + w;
                    seq += 1;
                    e.update(&key(i), &value(i, seq)).unwrap();
                    acked.lock().unwrap().insert(i, seq);
                }
            })
        })
        .collect();
    let checkpoints = {
        let (e, stop) = (e.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                e.checkpoint_now().unwrap();
                n += 1;
            }
            n
        })
    };
    let mut images = Vec::new();
    for k in 0..40 {
        std::thread::sleep(std::time::Duration::from_millis(5));
        // what was acknowledged before the image: the image must hold it (or newer)
        let before = acked.lock().unwrap().clone();
        images.push((before, vfs.crash_image((k % 3 == 0).then_some(k))));
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let n = checkpoints.join().unwrap();
    assert!(n >= 2, "only {n} checkpoints ran");
    if memory.is_some() {
        assert!(
            counter(&e, "page_loads") > 0,
            "no page was evicted and read back"
        );
    }
    let copies = counter(&e, "memory.checkpoint_copies");
    assert!(
        copies <= (2 << 20),
        "the checkpoint's buffers hold {copies} bytes: more than a slice and its lists"
    );
    drop(e);
    for (n, (before, img)) in images.into_iter().enumerate() {
        let e = WalEngine::open_with(&img, c.clone())
            .unwrap_or_else(|err| panic!("image {n} does not open: {err}"));
        let all = e.scan(b"", usize::MAX).unwrap();
        assert_eq!(all.len() as u64, KEYS, "image {n}: keys lost or added");
        for (k, v) in all {
            let i: u64 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            let seq = parse(i, &v);
            assert!(
                seq >= before[&i],
                "image {n}: key {i} at {seq}, acknowledged at {} before the image",
                before[&i]
            );
        }
    }
}

/// The rule that lets writers go on during a checkpoint, tested so that it can
/// fail: a slice copied after a transaction that began after the checkpoint holds
/// that transaction's change, and must not reach the meta file before the
/// transaction is durable. The checkpoint is held at its first meta write; an update
/// of the last page's key (in the last slice) is then applied with its WAL sync
/// held; the checkpoint is let go. While the update is not durable, the meta file
/// must not hold its bytes, and a crash image must open with the old value.
#[test]
fn a_slice_waits_for_the_transactions_it_holds_to_be_durable() {
    let g = Gated::new();
    let mut c = Config::with_dir(Path::new("/mem/wal"));
    // a log long enough that no checkpoint runs but the test's: 2,400 transactions
    // stay below half of its 4,095 blocks
    c.log_size = 16 << 20;
    c.checkpoint_ms = 3_600_000;
    const KEYS: u64 = 1_200;
    let e = WalEngine::open_with(&g, c.clone()).unwrap();
    let v = |b: u8| vec![b; 1000];
    for i in 0..KEYS {
        e.insert(&key(i), &v(b'a')).unwrap();
    }
    e.checkpoint_now().unwrap();
    // every page dirty again (four records a page): the checkpoint has two slices
    for i in 0..KEYS {
        e.update(&key(i), &v(b'b')).unwrap();
    }
    let dirty = counter(&e, "dirty_page_bytes") / 4096;
    assert!(dirty > 256, "{dirty} dirty pages: one slice");
    g.meta.set(true);
    let ckpt = {
        let e = e.clone();
        std::thread::spawn(move || e.checkpoint_now())
    };
    g.meta.wait_for_waiter(); // at its first slice's write
    g.log.set(true);
    let last = key(KEYS - 1); // on the last page: in the last slice
    let writer = {
        let (e, last) = (e.clone(), last.clone());
        std::thread::spawn(move || e.update(&last, &[0xee; 1000]))
    };
    g.log.wait_for_waiter(); // the update is applied, its WAL sync held
    assert_eq!(e.get(&last).unwrap(), Some(vec![0xee; 1000]), "applied");
    g.meta.set(false);
    // the checkpoint copies the last slice, which holds the update, and must wait
    std::thread::sleep(Duration::from_millis(300));
    let img = g.inner.crash_image(None);
    let meta = img.file("meta").durable();
    assert!(
        !meta.windows(1000).any(|w| w.iter().all(|&b| b == 0xee)),
        "the meta file holds a change whose transaction is not durable"
    );
    let e2 = WalEngine::open_with(&img, c.clone()).unwrap();
    assert_eq!(e2.get(&last).unwrap(), Some(v(b'b')));
    for i in (0..KEYS).step_by(97) {
        assert_eq!(e2.get(&key(i)).unwrap(), Some(v(b'b')), "key {i}");
    }
    drop(e2);
    g.log.set(false);
    writer.join().unwrap().unwrap();
    ckpt.join().unwrap().unwrap();
    e.close().unwrap();
}
