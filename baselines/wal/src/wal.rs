//! The log: reservation of transaction ids and log space, the queue of encoded
//! transactions, and the committer thread that writes them in id order, several per
//! write and sync (group commit).

use crate::engine::{Mode, Shared};
use crate::format::BLOCK;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::Ordering;

/// Positions are linear block counts (`abs`); see [`crate::format::id_of`].
pub struct LogState {
    /// Blocks in the circular log.
    pub n: u64,
    /// Generation written into every transaction of this open.
    pub generation: u32,
    /// The next transaction starts here.
    pub head: u64,
    /// Replay start recorded in the WAL header (log space before it is free).
    pub tail: u64,
    /// Every block before this is written (and synced, per the durability mode).
    pub written: u64,
    /// Transactions whose large-value data write is still in flight, by start.
    pub data_pending: BTreeSet<u64>,
    /// Encoded transactions waiting for the committer, in id order.
    pub queue: VecDeque<(u64, Vec<u8>)>,
    /// Log blocks promised to admitted writers that have not reserved yet.
    pub reserved: u64,
    /// FIFO admission: tickets handed out and the one being served.
    pub next_ticket: u64,
    pub serving: u64,
    /// Completions of asynchronous writes, by transaction end.
    pub acks: BTreeMap<u64, Vec<kvapi::Completion>>,
    pub stop: bool,
    /// Set by the first failed write or sync: the engine is poisoned.
    pub error: Option<String>,
}

impl LogState {
    pub fn new(n: u64, generation: u32, start: u64) -> LogState {
        LogState {
            n,
            generation,
            head: start,
            tail: start,
            written: start,
            data_pending: BTreeSet::new(),
            queue: VecDeque::new(),
            reserved: 0,
            next_ticket: 0,
            serving: 0,
            acks: BTreeMap::new(),
            stop: false,
            error: None,
        }
    }

    /// Every transaction before this is complete: WAL blocks and data durable. They
    /// complete (and are acknowledged) strictly in id order.
    pub fn complete(&self) -> u64 {
        match self.data_pending.first() {
            Some(&p) => p.min(self.written),
            None => self.written,
        }
    }

    /// Log blocks neither used nor promised.
    pub fn free(&self) -> u64 {
        self.n - (self.head - self.tail) - self.reserved
    }

    pub fn used(&self) -> u64 {
        self.head - self.tail
    }
}

/// The committer: takes every queued transaction, writes them with one or two
/// writes (two when the batch wraps past the end of the log), syncs once, and marks
/// them written. While it syncs, new transactions queue up for the next batch.
pub fn committer(sh: &Shared) {
    loop {
        let (start, batch) = {
            let mut log = sh.log.lock().unwrap();
            while log.queue.is_empty() && !log.stop {
                log = sh.work_cv.wait(log).unwrap();
            }
            if log.queue.is_empty() {
                return;
            }
            if log.error.is_some() {
                return;
            }
            let start = log.queue.front().unwrap().0;
            let mut bytes = Vec::new();
            while let Some((_, b)) = log.queue.pop_front() {
                if bytes.is_empty() {
                    bytes = b;
                } else {
                    bytes.extend_from_slice(&b);
                }
            }
            (start, bytes)
        };
        let res = write_blocks(sh, start, &batch);
        let mut log = sh.log.lock().unwrap();
        match res {
            Ok(()) => log.written = start + (batch.len() / BLOCK) as u64,
            Err(e) => {
                log.error = Some(format!("WAL write failed: {e}"));
                sh.done_cv.notify_all();
                return;
            }
        }
        sh.done_cv.notify_all();
    }
}

fn write_blocks(sh: &Shared, start: u64, bytes: &[u8]) -> std::io::Result<()> {
    let n = sh.log.lock().unwrap().n;
    let blocks = (bytes.len() / BLOCK) as u64;
    let phys = start % n;
    let first = blocks.min(n - phys) as usize * BLOCK;
    sh.files
        .wal
        .write_at(&bytes[..first], (1 + phys) * BLOCK as u64)?;
    sh.stats.writes.fetch_add(1, Ordering::Relaxed);
    if first < bytes.len() {
        sh.files.wal.write_at(&bytes[first..], BLOCK as u64)?;
        sh.stats.writes.fetch_add(1, Ordering::Relaxed);
    }
    if sh.cfg.mode == Mode::Fdatasync {
        sh.files.wal.sync()?;
    }
    sh.stats
        .wal_bytes
        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
    sh.stats.group_commits.fetch_add(1, Ordering::Relaxed);
    Ok(())
}
