//! What several of the WAL engine's test files share: an engine counter by name, and
//! a file system whose WAL syncs and meta writes wait while a gate is shut (a write
//! held unacknowledged, or a checkpoint held at its first meta write, for as long as
//! a test wants).
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "each test file uses part of it; a failed step is a failed test"
)]

use kvapi::{Engine, Reply, Request};
use std::io;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use wal_engine::format::BLOCK;
use wal_engine::{Config, MemVfs, Storage, Vfs, WalEngine};

/// The defaults at `/mem/wal` with a log of `log_blocks` blocks, checkpoints only
/// when asked or when the log fills.
pub fn cfg(log_blocks: u64) -> Config {
    let mut c = Config::with_dir(Path::new("/mem/wal"));
    c.log_size = (log_blocks + 1) * BLOCK as u64;
    c.checkpoint_ms = 3_600_000;
    c
}

pub fn open(vfs: &MemVfs, c: &Config) -> Arc<WalEngine> {
    WalEngine::open_with(vfs, c.clone()).expect("open")
}

/// The engine's counter `name` (an extra counter or gauge); panics if it has none.
pub fn counter(e: &WalEngine, name: &str) -> u64 {
    kvtestkit::faults::extra_counter(&e.counters(), name)
        .unwrap_or_else(|| panic!("no counter {name}"))
}

/// A gate: what passes it waits while it is shut.
#[derive(Clone, Default)]
pub struct Gate {
    shut: Arc<(Mutex<bool>, Condvar)>,
    waiting: Arc<(Mutex<u32>, Condvar)>,
}

impl Gate {
    pub fn set(&self, shut: bool) {
        *self.shut.0.lock().unwrap() = shut;
        self.shut.1.notify_all();
    }

    fn pass(&self) {
        let (m, c) = &*self.shut;
        let mut shut = m.lock().unwrap();
        if *shut {
            *self.waiting.0.lock().unwrap() += 1;
            self.waiting.1.notify_all();
            while *shut {
                shut = c.wait(shut).unwrap();
            }
        }
    }

    /// Waits until something waits at the gate (20 s at most, else panics).
    pub fn wait_for_waiter(&self) {
        let (m, c) = &*self.waiting;
        let mut n = m.lock().unwrap();
        while *n == 0 {
            let (g, t) = c.wait_timeout(n, Duration::from_secs(20)).unwrap();
            assert!(!t.timed_out(), "nothing came to the gate");
            n = g;
        }
        *n = 0;
    }
}

/// A `MemVfs` whose `wal` syncs pass the `log` gate and whose `meta` writes pass
/// the `meta` gate.
#[derive(Clone)]
pub struct Gated {
    pub inner: MemVfs,
    pub log: Gate,
    pub meta: Gate,
}

impl Gated {
    /// Both gates open.
    pub fn new() -> Gated {
        Gated {
            inner: MemVfs::new(),
            log: Gate::default(),
            meta: Gate::default(),
        }
    }
}

struct GatedFile {
    file: Arc<dyn Storage>,
    sync_gate: Option<Gate>,
    write_gate: Option<Gate>,
}

impl Storage for GatedFile {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        self.file.read_at(buf, off)
    }
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<()> {
        if let Some(g) = &self.write_gate {
            g.pass();
        }
        self.file.write_at(buf, off)
    }
    fn sync(&self) -> io::Result<()> {
        if let Some(g) = &self.sync_gate {
            g.pass();
        }
        self.file.sync()
    }
    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
}

impl Vfs for Gated {
    fn open(&self, name: &str, dsync: bool) -> io::Result<Arc<dyn Storage>> {
        let file = self.inner.open(name, dsync)?;
        Ok(Arc::new(GatedFile {
            file,
            sync_gate: (name == "wal").then(|| self.log.clone()),
            write_gate: (name == "meta").then(|| self.meta.clone()),
        }))
    }
    fn sync_dir(&self) -> io::Result<()> {
        self.inner.sync_dir()
    }
}

/// Submits `reqs` all at once (64 in flight, as the driver keeps them) and returns
/// the replies in request order; a request that fails fails the test.
pub fn burst(a: &Arc<dyn kvapi::AsyncEngine>, reqs: Vec<Request>) -> Vec<Reply> {
    burst_results(a, reqs)
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.unwrap_or_else(|e| panic!("request {i}: {e}")))
        .collect()
}

/// [`burst`], each request's result as it came.
pub fn burst_results(
    a: &Arc<dyn kvapi::AsyncEngine>,
    reqs: Vec<Request>,
) -> Vec<kvapi::Result<Reply>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let n = reqs.len();
    for (i, r) in reqs.into_iter().enumerate() {
        let tx = tx.clone();
        a.submit(
            r,
            Box::new(move |res| {
                tx.send((i, res)).unwrap();
            }),
        );
    }
    let mut out: Vec<Option<kvapi::Result<Reply>>> = (0..n).map(|_| None).collect();
    for _ in 0..n {
        let (i, r) = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("a request was never answered");
        out[i] = Some(r);
    }
    out.into_iter().map(Option::unwrap).collect()
}
