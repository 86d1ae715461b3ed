//! The engine handle: blocking calls (each a request routed to its worker and a
//! wait for its reply), the native asynchronous path, counters and close.

use crate::config::{Config, LIMITS};
use crate::oneshot::Oneshot;
use crate::open;
use crate::request::{Done, WReq};
use crate::route::Shared;
use crate::scan;
use kvapi::{
    AsyncEngine, Completion, Counters, DirLock, Engine, EngineInfo, Error, Pair, Reply, Request,
    Result,
};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

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
    /// Slots freed at open as torn writes (header or CRC failed after an unclean
    /// shutdown, where a write in flight could have torn them).
    recovery_torn_items: u64,
    /// Large items freed at open: a page of another timestamp (a multi-page write a
    /// power loss kept in part).
    recovery_torn_large: u64,
    /// Never-written slots below a slab's end tombstoned at open.
    recovery_holes: u64,
    /// Older copies buried at open.
    recovery_stale: u64,
}

impl Kvell {
    /// Opens (creating or recovering) the engine (see `open.rs`).
    pub fn open(cfg: Config) -> Result<Arc<Kvell>> {
        let o = open::open(cfg)?;
        Ok(Arc::new(Kvell {
            shared: o.shared,
            info: o.info,
            scan_tx: Mutex::new(Some(o.scan_tx)),
            scan_thread: Mutex::new(Some(o.scan_thread)),
            locks: Mutex::new(o.locks),
            recovery_us: o.recovery_us,
            recovery_bytes: o.recovery_bytes,
            recovery_torn_items: o.repairs.torn,
            recovery_torn_large: o.repairs.torn_large,
            recovery_holes: o.repairs.holes,
            recovery_stale: o.repairs.stale,
        }))
    }

    fn call(&self, req: WReq) -> Result<Reply> {
        Oneshot::wait(|done| self.shared.send(req, done))
    }

    /// Hands a scan to the scan thread (see scan.rs).
    fn submit_scan(&self, start: Vec<u8>, count: usize, done: Done) {
        // The sender slot and the join handle below are hand-off slots (no engine
        // state); so are the directory locks, only ever released.
        let tx = kvapi::sync::lock_handoff(&self.scan_tx).clone();
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
        if let Some(tx) = kvapi::sync::lock_handoff(&self.scan_tx).take() {
            let _ = tx.send(scan::Event::Stop);
        }
        if let Some(t) = kvapi::sync::lock_handoff(&self.scan_thread).take() {
            let _ = t.join();
        }
        let r = if first {
            self.shared.shutdown_workers()
        } else {
            Ok(())
        };
        kvapi::sync::lock_handoff(&self.locks).clear();
        r
    }
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
        let mut mem = [0u64; 5];
        let mut fill_us = 0;
        // The slowest of each stage over the workers: (microseconds, when).
        let mut slowest = [(0u64, 0u64); 4];
        for wk in &self.shared.workers {
            let s = &wk.stats;
            for (m, x) in slowest.iter_mut().zip([
                &s.slowest_io,
                &s.slowest_queued,
                &s.slowest_turn,
                &s.slowest_wait,
            ]) {
                *m = (*m).max(x.get());
            }
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
            mem[0] += s.mem_page_cache.load(Relaxed);
            mem[1] += s.mem_cache_meta.load(Relaxed);
            mem[2] += s.mem_io_buffers.load(Relaxed);
            mem[3] += s.mem_worker.load(Relaxed);
            mem[4] += s.mem_index.load(Relaxed);
            fill_us = s.cache_fill_us.load(Relaxed).max(fill_us);
            // A poisoned index (a panic while it was held) is left out of the counts;
            // its worker's requests report `Error::Poisoned`.
            if let Ok(idx) = crate::index::lock(&wk.index) {
                items += idx.len() as u64;
                ib += idx.bytes();
            }
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
            ("recovery_torn_large".into(), self.recovery_torn_large),
            ("recovery_holes".into(), self.recovery_holes),
            ("recovery_stale".into(), self.recovery_stale),
            // The page cache's second step, after the open (the longest worker's).
            ("cache_fill_beside_us".into(), fill_us),
            // Gauges: bytes held, as of each worker's last fit of its cache to its
            // budget (budget.rs), so they add up as the worker saw them.
            ("memory.page_cache".into(), mem[0]),
            ("memory.index".into(), mem[4]),
            ("memory.cache_meta".into(), mem[1]),
            ("memory.io_buffers".into(), mem[2]),
            ("memory.worker".into(), mem[3]),
        ];
        // The longest of each stage a request's time goes to since the open, any
        // worker, and when it ended (ms since the Unix epoch): `Stats::slowest_io`
        // and the three after it. Maxima, not sums: a phase's `counters_before` and
        // `counters_after` differ only if a longer one came in the phase.
        for (name, (us, at)) in ["io", "queued", "turn", "wait"].iter().zip(slowest) {
            c.extra.push((format!("slowest.{name}_us"), us));
            c.extra.push((format!("slowest.{name}_at_ms"), at));
        }
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
    use crate::config::IoMode;
    use crate::io::PAGE;
    use crate::io::sim::SimDisk;
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
                    (WReq::Put(key(i), val(i)), None, done)
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
