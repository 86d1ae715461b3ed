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

use kvapi::Engine;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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
    let vfs = MemVfs::new();
    let mut c = Config::with_dir(Path::new("/mem/wal"));
    c.log_size = 8 << 20;
    c.checkpoint_ms = 3_600_000; // checkpoints when this test asks (or the log fills)
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
    let copies = e
        .counters()
        .extra
        .iter()
        .find(|(k, _)| k == "memory.checkpoint_copies")
        .map(|(_, v)| *v)
        .unwrap();
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
