//! A small measurement of the WAL engine for its report: load, 50/50 read/update and
//! read-only uniform runs at several client thread counts, write amplification, and
//! replay time after a SIGKILL.
//!
//! cargo run --release -p wal-engine --example walbench -- \
//!     --dir /path --items 1000000 --value 1024 --secs 10 --threads 2,16
//!
//! Keys are `user<fnv64(n)>`; values carry their item number and version, and every
//! read checks them. Seeds are fixed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: a failed step ends the run with its message"
)]

use kvapi::{Engine, Options};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn fnv64(mut n: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..8 {
        h ^= n & 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
        n >>= 8;
    }
    h
}

fn key(n: u64) -> Vec<u8> {
    format!("user{}", fnv64(n)).into_bytes()
}

fn value(n: u64, version: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len.max(16)];
    v[..8].copy_from_slice(&n.to_le_bytes());
    v[8..16].copy_from_slice(&version.to_le_bytes());
    let mut x = (n ^ version.rotate_left(32)) | 1;
    for b in &mut v[16..] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    v.truncate(len.max(16));
    v
}

fn check(n: u64, v: &[u8], len: usize) {
    assert_eq!(v.len(), len.max(16), "item {n}: wrong length");
    assert_eq!(
        u64::from_le_bytes(v[..8].try_into().unwrap()),
        n,
        "item {n}: wrong item"
    );
    let version = u64::from_le_bytes(v[8..16].try_into().unwrap());
    assert_eq!(v, value(n, version, len), "item {n}: damaged value");
}

struct Args {
    dir: String,
    items: u64,
    value: usize,
    secs: u64,
    threads: Vec<usize>,
    durability: String,
    log_size: String,
    kill_after_ms: u64,
    /// Reuse the loaded directory of an earlier run: skip the load.
    reuse: bool,
    /// Skip the timed runs (load and/or kill test only).
    runs: bool,
}

fn args() -> Args {
    let mut a = Args {
        dir: "/tmp/walbench".into(),
        items: 1_000_000,
        value: 1024,
        secs: 10,
        threads: vec![2, 16],
        durability: "fdatasync".into(),
        log_size: "256M".into(),
        kill_after_ms: 3000,
        reuse: false,
        runs: true,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    for p in v.chunks(2) {
        let val = p.get(1).cloned().unwrap_or_default();
        match p[0].as_str() {
            "--dir" => a.dir = val,
            "--items" => a.items = val.parse().unwrap(),
            "--value" => a.value = val.parse().unwrap(),
            "--secs" => a.secs = val.parse().unwrap(),
            "--threads" => a.threads = val.split(',').map(|x| x.parse().unwrap()).collect(),
            "--durability" => a.durability = val,
            "--log-size" => a.log_size = val,
            "--kill-after-ms" => a.kill_after_ms = val.parse().unwrap(),
            "--reuse" => a.reuse = val == "1",
            "--runs" => a.runs = val == "1",
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn open(a: &Args) -> Arc<dyn Engine> {
    wal_engine::open_engine(&Options::new(
        "wal",
        &[
            ("dir", &a.dir),
            ("durability", &a.durability),
            ("log_size", &a.log_size),
        ],
    ))
    .expect("open")
}

fn extra(e: &dyn Engine, name: &str) -> u64 {
    e.counters()
        .extra
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| *v)
        .unwrap_or(0)
}

struct Snap {
    written: u64,
    user: u64,
    wal: u64,
    ckpt: u64,
    groups: u64,
    txns: u64,
}

fn snap(e: &dyn Engine) -> Snap {
    Snap {
        written: e.counters().device_bytes_written.unwrap(),
        user: extra(e, "user_bytes"),
        wal: extra(e, "wal_bytes"),
        ckpt: extra(e, "checkpoint_bytes"),
        groups: extra(e, "group_commits"),
        txns: extra(e, "txns"),
    }
}

fn report_writes(label: &str, a: &Snap, b: &Snap) {
    let user = (b.user - a.user).max(1) as f64;
    println!(
        "  {label}: write amplification {:.2} (device {} MiB / user {} MiB; wal {:.2}x, checkpoint {:.2}x), {:.1} txns per group commit",
        (b.written - a.written) as f64 / user,
        (b.written - a.written) >> 20,
        (b.user - a.user) >> 20,
        (b.wal - a.wal) as f64 / user,
        (b.ckpt - a.ckpt) as f64 / user,
        (b.txns - a.txns) as f64 / (b.groups - a.groups).max(1) as f64,
    );
}

/// Runs `threads` clients for `secs` with `update_pct` updates; returns ops/s.
fn run(e: &Arc<dyn Engine>, a: &Args, threads: usize, update_pct: u64, secs: u64) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (e, stop, ops) = (e.clone(), stop.clone(), ops.clone());
            let (items, len) = (a.items, a.value);
            s.spawn(move || {
                let mut x =
                    0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1).wrapping_mul(0x1234_5678_9abc_def1);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let item = x % items;
                    if (x >> 40) % 100 < update_pct {
                        e.update(&key(item), &value(item, x, len)).unwrap();
                    } else {
                        let v = e.get(&key(item)).unwrap().expect("loaded item");
                        check(item, &v, len);
                    }
                    n += 1;
                    if n.is_multiple_of(256) {
                        ops.fetch_add(256, Ordering::Relaxed);
                    }
                }
                ops.fetch_add(n % 256, Ordering::Relaxed);
            });
        }
        std::thread::sleep(Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
    });
    ops.load(Ordering::Relaxed) as f64 / t0.elapsed().as_secs_f64()
}

fn main() {
    let a = args();
    if std::env::var_os("WALBENCH_CHILD").is_some() {
        // The kill test's child: updates from 16 threads until killed.
        let e = open(&a);
        run(&e, &a, 16, 100, 3600);
        return;
    }
    if !a.reuse {
        let _ = std::fs::remove_dir_all(&a.dir);
    }
    println!(
        "walbench: {} items of {} bytes, durability {}, log {}, dir {}",
        a.items, a.value, a.durability, a.log_size, a.dir
    );
    let t0 = Instant::now();
    let e = open(&a);
    println!(
        "open: {:.0} ms (replay_us {})",
        t0.elapsed().as_secs_f64() * 1e3,
        extra(e.as_ref(), "replay_us")
    );
    let s0 = snap(e.as_ref());
    let t0 = Instant::now();
    let loaders = if a.reuse { 0 } else { 16u64 };
    std::thread::scope(|s| {
        for t in 0..loaders {
            let e = e.clone();
            let (items, len) = (a.items, a.value);
            s.spawn(move || {
                let mut n = t;
                while n < items {
                    e.insert(&key(n), &value(n, 0, len)).unwrap();
                    n += loaders;
                }
            });
        }
    });
    let secs = t0.elapsed().as_secs_f64();
    let s1 = snap(e.as_ref());
    if loaders > 0 {
        println!(
            "load ({loaders} threads): {:.0} ops/s in {secs:.1} s",
            a.items as f64 / secs
        );
        report_writes("load", &s0, &s1);
    }
    let c = e.counters();
    println!(
        "  items {:?}, index bytes {:?}, {}",
        c.items,
        c.index_bytes,
        e.info().notes[1]
    );
    let threads = if a.runs {
        a.threads.clone()
    } else {
        Vec::new()
    };
    for &t in &threads {
        let s0 = snap(e.as_ref());
        let r = run(&e, &a, t, 50, a.secs);
        let s1 = snap(e.as_ref());
        println!("50/50 read/update uniform, {t} threads: {r:.0} ops/s");
        report_writes("updates", &s0, &s1);
    }
    for &t in &threads {
        let r = run(&e, &a, t, 0, a.secs);
        println!("read-only uniform, {t} threads: {r:.0} ops/s");
    }
    e.close().unwrap();
    drop(e);
    // Replay after a kill: a child updates until SIGKILL, then the open is timed.
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(std::env::args().skip(1))
        .env("WALBENCH_CHILD", "1")
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(a.kill_after_ms));
    child.kill().unwrap();
    child.wait().unwrap();
    let t0 = Instant::now();
    let e = open(&a);
    let wall = t0.elapsed();
    println!(
        "open after SIGKILL ({} ms of 16-thread updates): {:.0} ms wall, replay_us {} (meta load {}, log replay {}, rebuild {}, open checkpoint {}), replayed_txns {}, items {:?}",
        a.kill_after_ms,
        wall.as_secs_f64() * 1e3,
        extra(e.as_ref(), "replay_us"),
        extra(e.as_ref(), "open_meta_load_us"),
        extra(e.as_ref(), "open_log_replay_us"),
        extra(e.as_ref(), "open_rebuild_us"),
        extra(e.as_ref(), "open_checkpoint_us"),
        extra(e.as_ref(), "replayed_txns"),
        e.counters().items
    );
    for n in (0..a.items).step_by((a.items / 1000).max(1) as usize) {
        let v = e.get(&key(n)).unwrap().expect("item survives");
        check(n, &v, a.value);
    }
    e.close().unwrap();
}
