//! The KVell engine (SOSP 2019): shared-nothing workers, size-class slab files of
//! unsorted items updated in place, a per-worker in-memory ordered index, a per-worker
//! page cache, free lists chained through on-disk tombstones, batched io_uring I/O
//! with a bounded queue depth, no commit log, recovery by scanning the slabs.
//!
//! Entry points: [`open_engine`] (the driver, from `kvell.*` options) and
//! [`Kvell::open`] (tests, from a [`Config`]). See kvell/DESIGN.md.
#![deny(unsafe_code)]

mod cache;
mod config;
mod freelist;
mod index;
pub mod io;
mod recovery;
pub mod slab;
mod stats;
mod worker;

pub use config::{Config, IoMode, Mode};
pub use io::sim::{Crash, SimDisk};

use index::Index;
use kvapi::{
    AsyncEngine, Completion, Counters, DirLock, Engine, EngineInfo, Error, Limits, Pair, Reply,
    Request, Result,
};
use stats::Stats;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;
use worker::{Done, Msg, Poison, WReq};

/// Opens the engine from `kvell.*` options (without the prefix).
pub fn open_engine(opts: &kvapi::Options) -> Result<Arc<dyn Engine>> {
    let cfg = Config::from_options(opts)?;
    Ok(Kvell::open(cfg)?)
}

/// The limits of this engine.
pub const LIMITS: Limits = Limits {
    max_key: slab::MAX_KEY,
    max_value: slab::MAX_VALUE,
    empty_key: true,
};

struct WorkerHandle {
    tx: SyncSender<Msg>,
    index: Arc<Mutex<Index>>,
    stats: Arc<Stats>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    workers: Vec<WorkerHandle>,
    closed: AtomicBool,
}

impl Shared {
    fn worker_of(&self, key: &[u8]) -> usize {
        // FNV-1a, then a multiplicative mix so that similar keys spread.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in key {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        h ^= h >> 32;
        h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h >> 32) % self.workers.len() as u64) as usize
    }

    fn send(&self, req: WReq, done: Done) {
        if self.closed.load(Relaxed) {
            return done.call(Err(Error::Closed));
        }
        let key = match &req {
            WReq::Get(k) | WReq::Put(k, _) | WReq::Delete(k) => k,
        };
        let w = self.worker_of(key);
        if let Err(e) = self.workers[w].tx.send(Msg::Op(req, done))
            && let Msg::Op(_, done) = e.0
        {
            done.call(Err(Error::Closed));
        }
    }

    /// Scan: up to `count` keys from every worker's index (each locked briefly),
    /// merged; then the items are read through their workers with a bounded number
    /// of reads in flight. Keys deleted in between are skipped (no snapshot).
    fn scan(&self, start: &[u8], count: usize, in_flight: usize) -> Result<Vec<Pair>> {
        if self.closed.load(Relaxed) {
            return Err(Error::Closed);
        }
        if count == 0 {
            return Ok(Vec::new());
        }
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for w in &self.workers {
            let idx = w.index.lock().unwrap_or_else(|e| e.into_inner());
            keys.extend(idx.keys_from(start, count));
        }
        keys.sort_unstable();
        keys.truncate(count);
        let n = keys.len();
        let mut values: Vec<Option<Vec<u8>>> = vec![None; n];
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Reply>)>();
        let mut next = 0;
        let mut pending = 0;
        let mut err = None;
        while next < n || pending > 0 {
            while next < n && pending < in_flight.max(1) {
                let tx = tx.clone();
                let i = next;
                self.send(
                    WReq::Get(keys[i].clone()),
                    Done::new(move |r| {
                        let _ = tx.send((i, r));
                    }),
                );
                next += 1;
                pending += 1;
            }
            let (i, r) = rx.recv().map_err(|_| Error::Closed)?;
            pending -= 1;
            match r {
                Ok(Reply::Value(v)) => values[i] = v,
                Ok(_) => {}
                Err(e) => err = Some(e),
            }
        }
        if let Some(e) = err {
            return Err(e);
        }
        Ok(keys
            .into_iter()
            .zip(values)
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect())
    }
}

type ScanJob = (Vec<u8>, usize, Done);

/// The engine. Cloning the `Arc` shares it; `close` (or dropping the last handle)
/// finishes every request, syncs the files and releases the directories.
pub struct Kvell {
    shared: Arc<Shared>,
    info: EngineInfo,
    scan_tx: Mutex<Option<SyncSender<ScanJob>>>,
    scan_thread: Mutex<Option<JoinHandle<()>>>,
    locks: Mutex<Vec<DirLock>>,
    scan_in_flight: usize,
    recovery_us: u64,
    recovery_bytes: u64,
}

/// A one-shot rendezvous for the blocking calls.
struct Oneshot(Mutex<Option<Result<Reply>>>, Condvar);

impl Oneshot {
    fn call(shared: &Shared, req: WReq) -> Result<Reply> {
        let slot = Arc::new(Oneshot(Mutex::new(None), Condvar::new()));
        let s2 = slot.clone();
        shared.send(
            req,
            Done::new(move |r| {
                *s2.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                s2.1.notify_one();
            }),
        );
        let mut g = slot.0.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(r) = g.take() {
                return r;
            }
            g = slot.1.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Kvell {
    /// Opens (creating or recovering) the engine.
    pub fn open(cfg: Config) -> Result<Arc<Kvell>> {
        let t0 = Instant::now();
        let mut locks = Vec::new();
        for d in &cfg.dirs {
            locks.push(kvapi::claim_dir(d, "kvell")?);
            config::check_layout(d, &cfg)?;
        }
        let poison = Arc::new(Poison::default());
        let per_worker_cache = cfg.cache_bytes / cfg.workers as u64;
        // Recovery runs on every worker in parallel.
        let mut opened = Vec::new();
        for w in 0..cfg.workers {
            let cfg = cfg.clone();
            let poison = poison.clone();
            let (ready_tx, ready_rx) = sync_channel::<Result<(u64, u64)>>(1);
            let (tx, rx) = sync_channel::<Msg>(cfg.queue_capacity());
            let index = Arc::new(Mutex::new(Index::default()));
            let stats = Arc::new(Stats::default());
            let (i2, s2) = (index.clone(), stats.clone());
            let thread = std::thread::Builder::new()
                .name(format!("kvell-worker-{w}"))
                .spawn(move || {
                    let dir = cfg.dir_of(w);
                    let r = (|| {
                        let mut io = cfg.backend()?;
                        let rec = recovery::recover(io.as_mut(), &dir, w, cfg.freelist)?;
                        *i2.lock().unwrap_or_else(|e| e.into_inner()) = rec.index;
                        let worker = worker::Worker::new(
                            w,
                            io,
                            rec.slabs,
                            i2,
                            cache::PageCache::new(per_worker_cache),
                            s2,
                            poison,
                            rec.max_ts,
                            cfg.queue_depth,
                            cfg.batch,
                            cfg.mode == Mode::Flush,
                        );
                        Ok((worker, rec.bytes_read, rec.stale + rec.torn))
                    })();
                    match r {
                        Ok((worker, bytes, repaired)) => {
                            let _ = ready_tx.send(Ok((bytes, repaired)));
                            worker.run(rx);
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                })
                .map_err(|e| Error::io("spawning a worker thread", e))?;
            opened.push((
                WorkerHandle {
                    tx,
                    index,
                    stats,
                    thread: Mutex::new(Some(thread)),
                },
                ready_rx,
            ));
        }
        let mut workers = Vec::new();
        let mut first_err = None;
        let mut recovery_bytes = 0;
        let mut repaired = 0;
        for (h, ready) in opened {
            match ready.recv() {
                Ok(Ok((b, r))) => {
                    recovery_bytes += b;
                    repaired += r;
                }
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err
                        .get_or_insert(Error::Engine("a kvell worker died while opening".into()));
                }
            }
            workers.push(h);
        }
        let shared = Arc::new(Shared {
            workers,
            closed: AtomicBool::new(false),
        });
        if let Some(e) = first_err {
            let _ = shutdown_workers(&shared);
            return Err(e);
        }
        let recovery_us = t0.elapsed().as_micros() as u64;
        let info = cfg.info(recovery_us, recovery_bytes, repaired);
        let (scan_tx, scan_rx) = sync_channel::<ScanJob>(64);
        let s2 = shared.clone();
        let scan_in_flight = cfg.scan_in_flight;
        let scan_thread = std::thread::Builder::new()
            .name("kvell-scan".into())
            .spawn(move || {
                while let Ok((start, count, done)) = scan_rx.recv() {
                    done.call(s2.scan(&start, count, scan_in_flight).map(Reply::Pairs));
                }
            })
            .map_err(|e| Error::io("spawning the scan thread", e))?;
        Ok(Arc::new(Kvell {
            shared,
            info,
            scan_tx: Mutex::new(Some(scan_tx)),
            scan_thread: Mutex::new(Some(scan_thread)),
            locks: Mutex::new(locks),
            scan_in_flight,
            recovery_us,
            recovery_bytes,
        }))
    }

    fn call(&self, req: WReq) -> Result<Reply> {
        Oneshot::call(&self.shared, req)
    }

    fn shutdown(&self) -> Result<()> {
        let first = !self.shared.closed.swap(true, Relaxed);
        if let Some(tx) = self
            .scan_tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            drop(tx);
        }
        if let Some(t) = self
            .scan_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = t.join();
        }
        let r = if first {
            shutdown_workers(&self.shared)
        } else {
            Ok(())
        };
        self.locks.lock().unwrap_or_else(|e| e.into_inner()).clear();
        r
    }
}

/// Asks every worker to finish and sync, and joins them.
fn shutdown_workers(shared: &Shared) -> Result<()> {
    shared.closed.store(true, Relaxed);
    let mut result = Ok(());
    for w in &shared.workers {
        let (tx, rx) = std::sync::mpsc::channel();
        if w.tx.send(Msg::Close(tx)).is_ok()
            && let Ok(Err(e)) = rx.recv()
            && result.is_ok()
        {
            result = Err(e);
        }
        if let Some(t) = w.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
    result
}

impl Drop for Kvell {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

fn check_put(key: &[u8], value: &[u8]) -> Result<()> {
    LIMITS.check_put(key, value)
}

impl Engine for Kvell {
    fn info(&self) -> EngineInfo {
        self.info.clone()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        LIMITS.check_key(key)?;
        match self.call(WReq::Get(key.to_vec()))? {
            Reply::Value(v) => Ok(v),
            other => Err(Error::Engine(format!("unexpected reply {other:?}"))),
        }
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_put(key, value)?;
        self.call(WReq::Put(key.to_vec(), value.to_vec()))
            .map(|_| ())
    }

    fn update(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.insert(key, value)
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        LIMITS.check_key(key)?;
        self.call(WReq::Delete(key.to_vec())).map(|_| ())
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<Vec<Pair>> {
        self.shared.scan(start, count, self.scan_in_flight)
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::default();
        let (mut br, mut bw, mut r, mut w, mut h, mut m) = (0, 0, 0, 0, 0, 0);
        let (mut items, mut ib) = (0u64, 0u64);
        let mut extra = [0u64; 6];
        for wk in &self.shared.workers {
            let s = &wk.stats;
            br += s.bytes_read.load(Relaxed);
            bw += s.bytes_written.load(Relaxed);
            r += s.reads.load(Relaxed);
            w += s.writes.load(Relaxed);
            h += s.cache_hits.load(Relaxed);
            m += s.cache_misses.load(Relaxed);
            extra[0] += s.index_ns.load(Relaxed);
            extra[1] += s.submit_ns.load(Relaxed);
            extra[2] += s.wait_ns.load(Relaxed);
            extra[3] += s.idle_ns.load(Relaxed);
            extra[4] += s.submits.load(Relaxed);
            let idx = wk.index.lock().unwrap_or_else(|e| e.into_inner());
            items += idx.len() as u64;
            ib += idx.bytes();
        }
        c.device_bytes_read = Some(br);
        c.device_bytes_written = Some(bw);
        c.device_reads = Some(r);
        c.device_writes = Some(w);
        c.cache_hits = Some(h);
        c.cache_misses = Some(m);
        c.items = Some(items);
        c.index_bytes = Some(ib);
        c.extra = vec![
            ("phase_ns.index".into(), extra[0]),
            ("phase_ns.io_submit".into(), extra[1]),
            ("phase_ns.wait".into(), extra[2]),
            ("phase_ns.idle".into(), extra[3]),
            ("io_submit_calls".into(), extra[4]),
            ("recovery_us".into(), self.recovery_us),
            ("recovery_bytes".into(), self.recovery_bytes),
        ];
        c
    }

    fn close(&self) -> Result<()> {
        if self.shared.closed.load(Relaxed) {
            return Err(Error::Closed);
        }
        self.shutdown()
    }

    fn native_async(self: Arc<Self>) -> Option<Arc<dyn AsyncEngine>> {
        Some(Arc::new(KvellAsync { engine: self }))
    }
}

/// The native asynchronous path: `submit` routes the request to its worker (blocking
/// only while that worker's queue is full); the completion runs on the worker thread
/// (scans: on the scan thread). Completions must not block.
pub struct KvellAsync {
    engine: Arc<Kvell>,
}

impl AsyncEngine for KvellAsync {
    fn submit(&self, request: Request, done: Completion) {
        let shared = &self.engine.shared;
        let wrap = Done::from_box;
        match request {
            Request::Get { key } => match LIMITS.check_key(&key) {
                Ok(()) => shared.send(WReq::Get(key), wrap(done)),
                Err(e) => done(Err(e)),
            },
            Request::Insert { key, value } | Request::Update { key, value } => {
                match check_put(&key, &value) {
                    Ok(()) => shared.send(WReq::Put(key, value), wrap(done)),
                    Err(e) => done(Err(e)),
                }
            }
            Request::Delete { key } => match LIMITS.check_key(&key) {
                Ok(()) => shared.send(WReq::Delete(key), wrap(done)),
                Err(e) => done(Err(e)),
            },
            Request::Scan { start, count } => {
                let tx = self
                    .engine
                    .scan_tx
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                match tx {
                    Some(tx) => {
                        if let Err(e) = tx.send((start, count, Done::from_box(done))) {
                            e.0.2.call(Err(Error::Closed));
                        }
                    }
                    None => done(Err(Error::Closed)),
                }
            }
        }
    }
}
