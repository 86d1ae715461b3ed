//! Routing: which worker owns a key, and the way a request takes to it. Each worker
//! receives requests through a bounded queue (`send` blocks while it is full); once
//! the engine is closed, requests are answered `Error::Closed` here.

use crate::index::Index;
use crate::request::{Done, Msg, WReq};
use crate::slab::Loc;
use crate::stats::Stats;
use crate::wake::Wake;
use kvapi::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// What the rest of the engine holds of one worker.
pub(crate) struct WorkerHandle {
    pub(crate) tx: SyncSender<Msg>,
    /// The worker's index (the worker locks it per request, scans briefly).
    pub(crate) index: Arc<Mutex<Index>>,
    pub(crate) stats: Arc<Stats>,
    pub(crate) thread: Mutex<Option<JoinHandle<()>>>,
    /// Wakes the worker if it sleeps in its ring (`crate::wake`).
    pub(crate) wake: Option<Arc<Wake>>,
}

impl WorkerHandle {
    /// Queues a message for the worker (blocking while its queue is full) and wakes
    /// it if it sleeps for I/O; gives the message back if the worker is gone.
    fn post(&self, m: Msg) -> std::result::Result<(), Msg> {
        self.tx.send(m).map_err(|e| e.0)?;
        if let Some(w) = &self.wake {
            w.notify();
        }
        Ok(())
    }
}

/// The workers and the closed flag, shared by the engine and its scan thread.
pub(crate) struct Shared {
    pub(crate) workers: Vec<WorkerHandle>,
    pub(crate) closed: AtomicBool,
}

impl Shared {
    /// The worker owning `key`: a hash of the whole key (the C code: its first 8 bytes
    /// modulo the workers), so unscrambled hot keys and keys sharing prefixes spread.
    pub(crate) fn worker_of(&self, key: &[u8]) -> usize {
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

    /// Sends a request to the worker owning its key.
    pub(crate) fn send(&self, req: WReq, done: Done) {
        if self.closed.load(Relaxed) {
            return done.call(Err(Error::Closed));
        }
        let w = self.worker_of(req.key());
        if let Err(Msg::Op(_, done)) = self.workers[w].post(Msg::Op(req, done)) {
            done.call(Err(Error::Closed));
        }
    }

    /// Sends several requests of one worker in one message.
    pub(crate) fn send_many(&self, w: usize, ops: Vec<(WReq, Option<Loc>, Done)>) {
        if self.closed.load(Relaxed) {
            return ops
                .into_iter()
                .for_each(|(_, _, d)| d.call(Err(Error::Closed)));
        }
        if let Err(Msg::Ops(ops)) = self.workers[w].post(Msg::Ops(ops)) {
            ops.into_iter()
                .for_each(|(_, _, d)| d.call(Err(Error::Closed)));
        }
    }

    pub(crate) fn closed(&self) -> bool {
        self.closed.load(Relaxed)
    }

    /// Asks every worker to finish and sync, and joins them.
    pub(crate) fn shutdown_workers(&self) -> Result<()> {
        self.closed.store(true, Relaxed);
        let mut result = Ok(());
        for w in &self.workers {
            let (tx, rx) = std::sync::mpsc::channel();
            if w.post(Msg::Close(tx)).is_ok()
                && let Ok(Err(e)) = rx.recv()
                && result.is_ok()
            {
                result = Err(e);
            }
            // A join handle is a hand-off slot (no engine state).
            if let Some(t) = kvapi::sync::lock_handoff(&w.thread).take() {
                let _ = t.join();
            }
        }
        result
    }
}
