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
mod scan;
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
use std::sync::mpsc::{Sender, SyncSender, sync_channel};
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

    /// Sends several requests of one worker in one message.
    fn send_many(&self, w: usize, ops: Vec<(WReq, Done)>) {
        if self.closed.load(Relaxed) {
            return ops
                .into_iter()
                .for_each(|(_, d)| d.call(Err(Error::Closed)));
        }
        if let Err(e) = self.workers[w].tx.send(Msg::Ops(ops))
            && let Msg::Ops(ops) = e.0
        {
            ops.into_iter()
                .for_each(|(_, d)| d.call(Err(Error::Closed)));
        }
    }

    fn closed(&self) -> bool {
        self.closed.load(Relaxed)
    }
}

/// The engine. Cloning the `Arc` shares it; `close` (or dropping the last handle)
/// finishes every request, syncs the files and releases the directories.
pub struct Kvell {
    shared: Arc<Shared>,
    info: EngineInfo,
    scan_tx: Mutex<Option<Sender<scan::Event>>>,
    scan_thread: Mutex<Option<JoinHandle<()>>>,
    locks: Mutex<Vec<DirLock>>,
    recovery_us: u64,
    recovery_bytes: u64,
    /// Items freed at open as torn writes (header or CRC failed after an unclean
    /// shutdown).
    recovery_torn_items: u64,
}

/// What a worker reports once open.
struct Opened {
    /// Slab bytes read by recovery.
    bytes: u64,
    /// Slots repaired or freed by recovery.
    repaired: u64,
    torn_items: u64,
    /// Time to allocate and touch its page cache (during recovery, in parallel).
    cache_us: u64,
}

/// A one-shot rendezvous for the blocking calls.
struct Oneshot(Mutex<Option<Result<Reply>>>, Condvar);

impl Oneshot {
    fn call(shared: &Shared, req: WReq) -> Result<Reply> {
        Oneshot::wait(|done| shared.send(req, done))
    }

    /// Hands `start` a completion and waits for its reply.
    fn wait(start: impl FnOnce(Done)) -> Result<Reply> {
        let slot = Arc::new(Oneshot(Mutex::new(None), Condvar::new()));
        let s2 = slot.clone();
        start(Done::new(move |r| {
            *s2.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            s2.1.notify_one();
        }));
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
            let (ready_tx, ready_rx) = sync_channel::<Result<Opened>>(1);
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
                        // The cache is touched (see `PageCache::new`) by a helper
                        // thread while this one scans the slabs: recovery waits for
                        // its reads, the touching is kernel work.
                        let (rec, (cache, cache_us)) = std::thread::scope(|s| {
                            let cache = std::thread::Builder::new()
                                .name(format!("kvell-cache-{w}"))
                                .spawn_scoped(s, || {
                                    let t = Instant::now();
                                    let c = cache::PageCache::new(per_worker_cache);
                                    (c, t.elapsed().as_micros() as u64)
                                });
                            let rec =
                                recovery::recover(io.as_mut(), &dir, w, cfg.freelist, cfg.format());
                            let cache = match cache {
                                Ok(h) => h.join().map_err(|_| {
                                    Error::Engine("setting up the page cache panicked".into())
                                }),
                                Err(e) => Err(Error::io("spawning the page-cache thread", e)),
                            };
                            rec.and_then(|r| cache.map(|c| (r, c)))
                        })?;
                        *i2.lock().unwrap_or_else(|e| e.into_inner()) = rec.index;
                        let mut worker = worker::Worker::new(
                            w,
                            io,
                            rec.slabs,
                            i2,
                            cache,
                            s2,
                            poison,
                            rec.max_ts,
                            cfg.queue_depth,
                            cfg.batch,
                            cfg.mode == Mode::Flush,
                        );
                        worker.fmt = cfg.format();
                        worker.clean_file = Some(rec.clean_file);
                        let opened = Opened {
                            bytes: rec.bytes_read,
                            repaired: rec.stale + rec.torn + rec.torn_items,
                            torn_items: rec.torn_items,
                            cache_us,
                        };
                        Ok((worker, opened))
                    })();
                    match r {
                        Ok((worker, opened)) => {
                            let _ = ready_tx.send(Ok(opened));
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
        let mut recovery_torn_items = 0;
        let mut cache_setup_us = 0;
        for (h, ready) in opened {
            match ready.recv() {
                Ok(Ok(o)) => {
                    recovery_bytes += o.bytes;
                    repaired += o.repaired;
                    recovery_torn_items += o.torn_items;
                    // Workers set up their caches in parallel.
                    cache_setup_us = cache_setup_us.max(o.cache_us);
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
        let mut info = cfg.info(recovery_us, recovery_bytes, repaired);
        info.settings.push((
            "recovery_torn_items".into(),
            recovery_torn_items.to_string(),
        ));
        info.settings
            .push(("cache_setup_us".into(), cache_setup_us.to_string()));
        let (scan_tx, scan_rx) = std::sync::mpsc::channel();
        let s2 = shared.clone();
        let tx2 = scan_tx.clone();
        let scan_in_flight = cfg.scan_in_flight;
        let scan_thread = std::thread::Builder::new()
            .name("kvell-scan".into())
            .spawn(move || scan::run(&s2, scan_rx, tx2, scan_in_flight))
            .map_err(|e| Error::io("spawning the scan thread", e))?;
        Ok(Arc::new(Kvell {
            shared,
            info,
            scan_tx: Mutex::new(Some(scan_tx)),
            scan_thread: Mutex::new(Some(scan_thread)),
            locks: Mutex::new(locks),
            recovery_us,
            recovery_bytes,
            recovery_torn_items,
        }))
    }

    fn call(&self, req: WReq) -> Result<Reply> {
        Oneshot::call(&self.shared, req)
    }

    /// Hands a scan to the scan thread (see scan.rs).
    fn submit_scan(&self, start: Vec<u8>, count: usize, done: Done) {
        let tx = self
            .scan_tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match tx {
            Some(tx) => {
                if let Err(e) = tx.send(scan::Event::Job { start, count, done })
                    && let scan::Event::Job { done, .. } = e.0
                {
                    done.call(Err(Error::Closed));
                }
            }
            None => done.call(Err(Error::Closed)),
        }
    }

    fn shutdown(&self) -> Result<()> {
        let first = !self.shared.closed.swap(true, Relaxed);
        if let Some(tx) = self
            .scan_tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = tx.send(scan::Event::Stop);
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
        let r = Oneshot::wait(|done| self.submit_scan(start.to_vec(), count, done));
        match r? {
            Reply::Pairs(p) => Ok(p),
            other => Err(Error::Engine(format!("unexpected reply {other:?}"))),
        }
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
            ("recovery_torn_items".into(), self.recovery_torn_items),
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
                self.engine.submit_scan(start, count, Done::from_box(done))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PAGE;
    use kvtestkit::conformance::TempDir;
    use std::sync::mpsc;

    /// Appends that fill consecutive pages leave in one write: 64 items of the
    /// 1 KiB class handed to a worker at once fill 16 fresh pages, written by one
    /// I/O of 64 KiB, and read back after a reopen.
    #[test]
    fn consecutive_page_writes_leave_in_one_io() {
        let dir = TempDir::new("kvell-run");
        let disk = SimDisk::new();
        let mut cfg = Config::new(dir.path());
        cfg.io = IoMode::Sim(disk.clone());
        cfg.workers = 1;
        let key = |i: u32| format!("key{i:05}").into_bytes();
        let val = |i: u32| vec![i as u8; 990];
        {
            let kv = Kvell::open(cfg.clone()).expect("open");
            let (tx, rx) = mpsc::channel();
            let ops = (0..64)
                .map(|i| {
                    let tx = tx.clone();
                    let done = Done::new(move |r| tx.send(r.is_ok()).expect("send"));
                    (WReq::Put(key(i), val(i)), done)
                })
                .collect();
            kv.shared.send_many(0, ops);
            assert!(rx.iter().take(64).all(|ok| ok), "every put succeeded");
            let c = kv.counters();
            assert_eq!(c.device_bytes_written, Some(16 * PAGE as u64));
            assert_eq!(c.device_writes, Some(1), "16 consecutive pages, one write");
            kv.close().expect("close");
        }
        let kv = Kvell::open(cfg).expect("reopen");
        for i in 0..64 {
            assert_eq!(kv.get(&key(i)).expect("get"), Some(val(i)));
        }
    }
}
