//! A small benchmark of the KVell engine through its native asynchronous path:
//! load N items (shuffled insert order), then YCSB-A-like (50% read / 50% update,
//! uniform) and YCSB-C-like (read only, uniform) for a fixed time each, with many
//! requests in flight; then close and reopen to time recovery. Reads verify the
//! item number stored at the start of each value.
//!
//! cargo run --release -p kvell --example bench -- --dir /tmp/kvell-bench \
//!     --items 1000000 --value 980 --workers 2 --qd 64 --inflight 256 --seconds 20 --probe
//!
//! (980 B values + 23 B keys + 16 B header = 1019 B items: the 1 KiB class, 4 per page.)
//! Other flags: --psync, --flush, --no-checksum, --no-load (reuse the directory), --cache 300M,
//! --memory 300M (a memory budget: the page cache gives way to the index), --batch N.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: a failed step ends the run with its message"
)]
use kvapi::{AsyncEngine, Engine, Reply, Request};
use kvell::{Config, IoMode, Kvell};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

struct Args {
    dir: String,
    items: u64,
    value: usize,
    workers: usize,
    qd: usize,
    batch: usize,
    inflight: usize,
    seconds: u64,
    cache: Option<u64>,
    memory: Option<u64>,
    psync: bool,
    no_load: bool,
    probe: bool,
    flush: bool,
    no_checksum: bool,
}

fn parse() -> Args {
    let mut a = Args {
        dir: "/tmp/kvell-bench".into(),
        items: 1_000_000,
        value: 980,
        workers: 2,
        qd: 64,
        batch: 64,
        inflight: 256,
        seconds: 20,
        cache: None,
        memory: None,
        psync: false,
        no_load: false,
        probe: false,
        flush: false,
        no_checksum: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().expect("option value");
        match k.as_str() {
            "--dir" => a.dir = v(),
            "--items" => a.items = v().parse().unwrap(),
            "--value" => a.value = v().parse().unwrap(),
            "--workers" => a.workers = v().parse().unwrap(),
            "--qd" => a.qd = v().parse().unwrap(),
            "--batch" => a.batch = v().parse().unwrap(),
            "--inflight" => a.inflight = v().parse().unwrap(),
            "--seconds" => a.seconds = v().parse().unwrap(),
            "--cache" => a.cache = Some(kvapi::parse_bytes(&v()).unwrap()),
            "--memory" => a.memory = Some(kvapi::parse_bytes(&v()).unwrap()),
            "--psync" => a.psync = true,
            "--no-load" => a.no_load = true,
            "--probe" => a.probe = true,
            "--flush" => a.flush = true,
            "--no-checksum" => a.no_checksum = true,
            other => panic!("unknown option {other}"),
        }
    }
    a
}

fn fnv(mut v: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for _ in 0..8 {
        h ^= v & 0xff;
        v >>= 8;
        h = h.wrapping_mul(1_099_511_628_211);
    }
    h
}

fn key(i: u64) -> Vec<u8> {
    format!("user{}", fnv(i) as i64 & i64::MAX).into_bytes()
}

fn value(i: u64, len: usize) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8; len.max(8)];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Drives `ops` through the async path with `inflight` outstanding, until `ops`
/// returns None or `limit` elapses. Returns (completed, seconds).
fn drive(
    a: &Arc<dyn AsyncEngine>,
    inflight: usize,
    limit: Duration,
    mut ops: impl FnMut() -> Option<(u64, Request)>,
) -> (u64, f64) {
    // Completions count into an atomic; the injector sleeps only when the window is
    // full and is woken once `want` completions are in (not once per completion), so
    // the driver's own wake-ups stay cheap.
    struct Gate {
        done: AtomicU64,
        want: AtomicU64,
        sleeping: AtomicBool,
        m: Mutex<()>,
        cv: Condvar,
    }
    let gate = Arc::new(Gate {
        done: AtomicU64::new(0),
        want: AtomicU64::new(0),
        sleeping: AtomicBool::new(false),
        m: Mutex::new(()),
        cv: Condvar::new(),
    });
    let bad = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut submitted = 0u64;
    let mut exhausted = false;
    let batch = (inflight as u64 / 16).max(1);
    loop {
        let done = gate.done.load(Ordering::Acquire);
        while !exhausted && submitted - done < inflight as u64 {
            if start.elapsed() > limit {
                exhausted = true;
                break;
            }
            let Some((i, req)) = ops() else {
                exhausted = true;
                break;
            };
            let (gate, bad) = (gate.clone(), bad.clone());
            submitted += 1;
            a.submit(
                req,
                Box::new(move |r| {
                    match r {
                        Ok(Reply::Value(Some(v))) => {
                            if v[..8] != i.to_le_bytes() {
                                bad.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Ok(Reply::Value(None)) | Err(_) => {
                            bad.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(_) => {}
                    }
                    let d = gate.done.fetch_add(1, Ordering::AcqRel) + 1;
                    if gate.sleeping.load(Ordering::Acquire)
                        && d >= gate.want.load(Ordering::Acquire)
                    {
                        let _g = gate.m.lock().unwrap();
                        gate.cv.notify_one();
                    }
                }),
            );
        }
        let done = gate.done.load(Ordering::Acquire);
        if submitted == done {
            if exhausted {
                break;
            }
            continue;
        }
        let outstanding = submitted - done;
        let need = if exhausted {
            outstanding
        } else {
            batch.min(outstanding)
        };
        let g = gate.m.lock().unwrap();
        gate.want.store(done + need, Ordering::Release);
        gate.sleeping.store(true, Ordering::Release);
        if gate.done.load(Ordering::Acquire) < done + need {
            let _ = gate.cv.wait_timeout(g, Duration::from_millis(1)).unwrap();
        }
        gate.sleeping.store(false, Ordering::Release);
    }
    let secs = start.elapsed().as_secs_f64();
    let b = bad.load(Ordering::Relaxed);
    assert_eq!(b, 0, "{b} requests failed or read a wrong value");
    (gate.done.load(Ordering::Acquire), secs)
}

/// Process CPU seconds (user + system) so far.
fn cpu_secs() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let f: Vec<&str> = s
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn report(name: &str, e: &Kvell, before: &kvapi::Counters, n: u64, secs: f64, cpu: f64) {
    let c = e.counters();
    let d = |f: fn(&kvapi::Counters) -> Option<u64>| f(&c).unwrap_or(0) - f(before).unwrap_or(0);
    let reads = d(|c| c.device_reads);
    let writes = d(|c| c.device_writes);
    let hits = d(|c| c.cache_hits);
    let misses = d(|c| c.cache_misses);
    let extra = |k: &str| -> u64 {
        let g = |c: &kvapi::Counters| {
            c.extra
                .iter()
                .find(|(n, _)| n == k)
                .map(|x| x.1)
                .unwrap_or(0)
        };
        g(&c) - g(before)
    };
    println!(
        "{name}: {n} ops in {secs:.2} s = {:.1} Kops/s | device {:.1}K reads/s {:.1}K writes/s \
         ({:.2} I/Os per op) | CPU {:.1} us/op | cache hit {:.1}% | io_uring_enter calls {:.1}K/s | wait {:.0}% submit {:.0}% idle {:.0}% of worker time",
        n as f64 / secs / 1e3,
        reads as f64 / secs / 1e3,
        writes as f64 / secs / 1e3,
        (reads + writes) as f64 / n.max(1) as f64,
        (cpu_secs() - cpu) * 1e6 / n.max(1) as f64,
        100.0 * hits as f64 / (hits + misses).max(1) as f64,
        extra("io_submit_calls") as f64 / secs / 1e3,
        100.0 * extra("phase_ns.wait") as f64
            / (secs
                * 1e9
                * e.info()
                    .settings
                    .iter()
                    .find(|(k, _)| k == "workers")
                    .unwrap()
                    .1
                    .parse::<f64>()
                    .unwrap()),
        100.0 * extra("phase_ns.io_submit") as f64 / (secs * 1e9 * 2.0),
        100.0 * extra("phase_ns.idle") as f64 / (secs * 1e9 * 2.0),
    );
}

fn main() {
    let a = parse();
    let item = 16 + key(0).len() + a.value;
    let data = a.items * item as u64;
    let mut c = Config::new(&a.dir);
    c.workers = a.workers;
    c.queue_depth = a.qd;
    c.batch = a.batch;
    c.cache_bytes = a.cache.unwrap_or(data / 3);
    c.memory = a.memory;
    c.cache_given = a.memory.is_some() && a.cache.is_some();
    if a.psync {
        c.io = IoMode::Psync;
    }
    if a.flush {
        c.mode = kvell::Mode::Flush;
    }
    c.checksum = !a.no_checksum;
    println!(
        "items {} of {} B ({} B value), data {:.2} GiB, cache {:.2} GiB, workers {}, qd {}, batch {}, in flight {}, io {}, durability {}",
        a.items,
        item,
        a.value,
        data as f64 / (1u64 << 30) as f64,
        c.cache_bytes as f64 / (1u64 << 30) as f64,
        a.workers,
        a.qd,
        a.batch,
        a.inflight,
        if a.psync { "psync" } else { "io_uring" },
        if a.flush { "flush" } else { "direct" }
    );
    if !a.no_load {
        let _ = std::fs::remove_dir_all(&a.dir);
    }
    let e = Kvell::open(c.clone()).unwrap();
    let ae = e.clone().native_async().unwrap();
    let n = a.items;
    if !a.no_load {
        // shuffled insert order: a multiplicative permutation of 0..n
        let mut i = 0u64;
        let step = (0x9E37_79B9u64 | 1) % n.max(2);
        let step = (1..).map(|d| step + d).find(|s| gcd(*s, n) == 1).unwrap();
        let before = e.counters();
        let cpu = cpu_secs();
        let (done, secs) = drive(&ae, a.inflight, Duration::from_secs(3600), || {
            if i == n {
                return None;
            }
            let k = (i * step) % n;
            i += 1;
            Some((
                k,
                Request::Insert {
                    key: key(k),
                    value: value(k, a.value),
                },
            ))
        });
        report("load", &e, &before, done, secs, cpu);
    }
    let limit = Duration::from_secs(a.seconds);
    if a.probe {
        probe(&a, Duration::from_secs(a.seconds.min(10)));
    }
    // warm the cache a little with reads, not measured
    let mut rng = Rng(42);
    drive(&ae, a.inflight, Duration::from_secs(a.seconds / 4), || {
        let k = rng.next() % n;
        Some((k, Request::Get { key: key(k) }))
    });
    let before = e.counters();
    let cpu = cpu_secs();
    let (done, secs) = drive(&ae, a.inflight, limit, || {
        let r = rng.next();
        let k = (r >> 1) % n;
        Some(if r & 1 == 0 {
            (k, Request::Get { key: key(k) })
        } else {
            (
                u64::MAX,
                Request::Update {
                    key: key(k),
                    value: value(k, a.value),
                },
            )
        })
    });
    report("A 50/50 uniform", &e, &before, done, secs, cpu);
    let before = e.counters();
    let cpu = cpu_secs();
    let (done, secs) = drive(&ae, a.inflight, limit, || {
        let k = rng.next() % n;
        Some((k, Request::Get { key: key(k) }))
    });
    report("C read-only uniform", &e, &before, done, secs, cpu);
    let c2 = e.counters();
    println!(
        "index: {} items, {:.1} B per item (estimate)",
        c2.items.unwrap(),
        c2.index_bytes.unwrap() as f64 / c2.items.unwrap().max(1) as f64
    );
    drop(ae);
    e.close().unwrap();
    drop(e);
    let t = Instant::now();
    let e = Kvell::open(c).unwrap();
    let secs = t.elapsed().as_secs_f64();
    let rb = e
        .counters()
        .extra
        .iter()
        .find(|(k, _)| k == "recovery_bytes")
        .unwrap()
        .1;
    println!(
        "recovery: {} items in {secs:.2} s, {:.0} MiB scanned at {:.0} MiB/s",
        e.counters().items.unwrap(),
        rb as f64 / (1 << 20) as f64,
        rb as f64 / (1 << 20) as f64 / secs
    );
    e.close().unwrap();
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The device's random 4 KiB read rate at the engine's queue depth, one io_uring,
/// O_DIRECT, over the largest slab file (what "the disk can do" for this dataset).
fn probe(a: &Args, limit: Duration) {
    use kvell::io::{AlignedBuf, Backend, IoFlags, IoKind, IoReq, uring::Uring};
    let biggest = std::fs::read_dir(&a.dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".slab"))
        .max_by_key(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .unwrap()
        .path();
    let flags = IoFlags {
        direct: true,
        dsync: false,
    };
    let mut u = Uring::new(flags, a.qd as u32, kvell::io::uring::RingSetup::Defer).unwrap();
    let f = u.open(&biggest).unwrap();
    let pages = u.len(f).unwrap() / 4096;
    // Pass 1: random reads. Pass 2: read-modify-write of random pages (each read
    // page is written back unchanged), the I/O pattern of an uncached update.
    for rmw in [false, true] {
        let mut rng = Rng(7);
        let mut out = Vec::new();
        let mut retry: Vec<IoReq> = Vec::new();
        let (mut inflight, mut done) = (0, 0u64);
        let start = Instant::now();
        while start.elapsed() < limit {
            while inflight < a.qd {
                let req = retry.pop().unwrap_or_else(|| {
                    let offset = (rng.next() % pages) * 4096;
                    IoReq {
                        file: f,
                        offset,
                        kind: IoKind::Read,
                        buf: AlignedBuf::new(4096),
                        tag: offset, // for the write back
                        issued: Instant::now(),
                    }
                });
                if let Err(r) = u.push(req) {
                    retry.push(r);
                    break;
                }
                inflight += 1;
            }
            u.submit().unwrap();
            u.reap(true, &mut out).unwrap();
            inflight -= out.len();
            done += out.len() as u64;
            for d in out.drain(..) {
                d.result.unwrap();
                if rmw && d.kind == IoKind::Read {
                    retry.push(IoReq {
                        file: f,
                        offset: d.tag,
                        kind: IoKind::Write,
                        buf: d.buf,
                        tag: 0,
                        issued: Instant::now(),
                    });
                }
            }
        }
        while inflight > 0 {
            u.reap(true, &mut out).unwrap();
            inflight -= out.len();
            out.clear();
        }
        println!(
            "device probe: random 4 KiB O_DIRECT {} at QD {} on {}: {:.1}K IOPS",
            if rmw { "read-then-write-back" } else { "reads" },
            a.qd,
            biggest.display(),
            done as f64 / start.elapsed().as_secs_f64() / 1e3
        );
    }
}
