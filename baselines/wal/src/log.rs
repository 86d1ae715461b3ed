//! The log's state: admission of writers (FIFO tickets, log space promised), the
//! reservation of transaction ids, the queue of encoded transactions for the
//! committer, what is written and complete, the completions of asynchronous writes,
//! and the engine's poisoning (the first failed write or sync).
//!
//! Positions are linear unit counts (`abs`, 16 bytes a unit); see
//! [`crate::format::id_of`]. A writer reserves its transaction at the head, which
//! may lie inside a block: the transactions queued for one group commit are packed
//! back to back, and the committer closes the batch by moving the head to the next
//! block boundary, so no block is ever written twice (rewriting a block to append
//! to it could tear transactions already acknowledged). Every method takes the log
//! lock itself; a poisoned lock is [`Error::Poisoned`].

use crate::format::{BLOCK, UNIT, UNITS_PER_BLOCK, ceil_block, floor_block, id_of};
use crate::io::aligned::AlignedBuf;
use crate::io::ring::Wake;
use crate::stats::{Stat, Stats};
use crate::txn::{Entry, MAX_START, blocks_for, complete_back, encode};
use kvapi::sync::wait_timeout;
use kvapi::sync::{lock, wait};
use kvapi::{Completion, Error, Reply, Result};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

const LOG: &str = "the log state";

/// Completions of asynchronous writes, by transaction end.
pub type Acks = BTreeMap<u64, Vec<Completion>>;

/// What [`Log::take_batch`] found.
pub enum Take {
    /// A batch starting at this unit, in the caller's buffer.
    Batch(u64),
    /// Nothing queued.
    Empty,
    /// Stopped with nothing queued, or poisoned.
    Stop,
}

struct LogState {
    /// The next transaction starts here.
    head: u64,
    /// Replay start recorded in the WAL header (log space before it is free).
    tail: u64,
    /// Every block before this is written (and synced, per the durability mode).
    written: u64,
    /// The end of the last batch handed to the committer (a block boundary): the
    /// batches between `written` and here are in flight.
    taken: u64,
    /// Transactions whose large-value data write is still in flight, by start.
    data_pending: BTreeSet<u64>,
    /// Encoded transactions waiting for the committer, in id order.
    queue: VecDeque<(u64, Vec<u8>)>,
    /// Log units promised to admitted writers that have not reserved yet (whole
    /// blocks each).
    reserved: u64,
    /// FIFO admission: tickets handed out and the one being served.
    next_ticket: u64,
    serving: u64,
    acks: Acks,
    stop: bool,
    /// Set by the first failed write or sync: the engine is poisoned.
    error: Option<String>,
}

impl LogState {
    /// Every transaction before this is complete: WAL blocks and data durable. They
    /// complete (and are acknowledged) strictly in id order.
    fn complete(&self) -> u64 {
        match self.data_pending.first() {
            Some(&p) => p.min(self.written),
            None => self.written,
        }
    }

    /// Log units neither used nor promised, in a log of `n` units. The block the
    /// head is in counts as used (the rest of it is padding once the batch closes)
    /// and so does the block the checkpoint is in (transactions after the
    /// checkpoint may lie in it): the committer writes whole blocks.
    fn free(&self, n: u64) -> u64 {
        n.saturating_sub(ceil_block(self.head) - floor_block(self.tail))
            .saturating_sub(self.reserved)
    }

    fn used(&self) -> u64 {
        self.head - self.tail
    }

    /// Takes the completions of the transactions that are complete.
    fn take_ready(&mut self) -> Acks {
        let later = self.acks.split_off(&(self.complete() + 1));
        std::mem::replace(&mut self.acks, later)
    }
}

/// A transaction reserved in the log.
pub struct Reserved {
    pub start: u64,
    pub end: u64,
    /// Log use passed the checkpoint threshold.
    pub over: bool,
}

pub struct Log {
    state: Mutex<LogState>,
    /// Wakes the committer while it has nothing in flight.
    work: Condvar,
    /// Wakes the committer while it waits in its ring (set when it has one).
    ring_wake: OnceLock<Arc<Wake>>,
    /// Progress: transactions complete, log space freed, or an error.
    done: Condvar,
    /// Wakes the completer: a data write done, an error, a stop (the committer runs
    /// the completions its own writes make ready).
    ackers: Condvar,
    /// Admission: a ticket served, log space reclaimed or given back, an error.
    space: Condvar,
    /// Units in the circular log.
    n: u64,
    /// Generation written into every transaction of this open.
    generation: u32,
    /// Log use (percent) above which a checkpoint is asked for.
    checkpoint_pct: u64,
    /// Stamp every transaction with how far the log was complete (a log whose
    /// writes are synced: see [`crate::txn::TxHeader::complete_back`]).
    stamp: bool,
    stats: Arc<Stats>,
}

impl Log {
    /// A log of `blocks` blocks whose next transaction starts at `head` (a block
    /// boundary) and whose replay start (checkpoint) is `tail`, both in units;
    /// everything before `head` is written. `stamp`:
    /// its writes are synced, so each transaction records how far the log was
    /// complete when it was reserved.
    pub fn new(
        blocks: u64,
        generation: u32,
        head: u64,
        tail: u64,
        checkpoint_pct: u64,
        stamp: bool,
        stats: Arc<Stats>,
    ) -> Log {
        Log {
            state: Mutex::new(LogState {
                head,
                tail,
                written: head,
                taken: head,
                data_pending: BTreeSet::new(),
                queue: VecDeque::new(),
                reserved: 0,
                next_ticket: 0,
                serving: 0,
                acks: BTreeMap::new(),
                stop: false,
                error: None,
            }),
            work: Condvar::new(),
            ring_wake: OnceLock::new(),
            done: Condvar::new(),
            ackers: Condvar::new(),
            space: Condvar::new(),
            n: blocks * UNITS_PER_BLOCK,
            generation,
            checkpoint_pct,
            stamp,
            stats,
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, LogState>> {
        lock(&self.state, LOG)
    }

    pub fn blocks(&self) -> u64 {
        self.n / UNITS_PER_BLOCK
    }

    /// The log's size in units (what ids are taken modulo).
    pub fn units(&self) -> u64 {
        self.n
    }

    pub fn generation(&self) -> u32 {
        self.generation
    }

    // ---- state, errors and stopping ----

    /// Log units in use (between the checkpoint and the head).
    pub fn used(&self) -> Result<u64> {
        Ok(self.lock()?.used())
    }

    pub fn head(&self) -> Result<u64> {
        Ok(self.lock()?.head)
    }

    pub fn tail(&self) -> Result<u64> {
        Ok(self.lock()?.tail)
    }

    /// The checkpoint's position and the end of the complete transactions, read at
    /// one instant.
    pub fn tail_and_complete(&self) -> Result<(u64, u64)> {
        let log = self.lock()?;
        Ok((log.tail, log.complete()))
    }

    pub fn complete(&self) -> Result<u64> {
        Ok(self.lock()?.complete())
    }

    /// `Poisoned` once a write or sync failed.
    pub fn check(&self) -> Result<()> {
        match &self.lock()?.error {
            Some(e) => Err(Error::Poisoned(e.clone())),
            None => Ok(()),
        }
    }

    /// Poisons the engine (the first message stays) and wakes every waiter.
    pub fn poison(&self, msg: String) -> Error {
        let mut log = match self.lock() {
            Ok(g) => g,
            Err(e) => return e,
        };
        if log.error.is_none() {
            log.error = Some(msg.clone());
        }
        drop(log);
        self.done.notify_all();
        self.ackers.notify_all();
        self.space.notify_all();
        self.kick();
        Error::Poisoned(msg)
    }

    /// Records `e`, a failure a background thread or writer met (a lock poisoned by
    /// a panic), as the engine's poisoning, so that every caller gets
    /// [`Error::Poisoned`] and no waiter is left behind; returns it.
    pub fn record(&self, e: Error) -> Error {
        match e {
            Error::Poisoned(m) => self.poison(m),
            e => {
                self.poison(e.to_string());
                e
            }
        }
    }

    /// Stops the committer and the completer and fails waiting admissions with
    /// `Closed`.
    pub fn stop(&self) {
        if let Ok(mut log) = self.lock() {
            log.stop = true;
        }
        self.kick();
        self.done.notify_all();
        self.ackers.notify_all();
        self.space.notify_all();
    }

    /// Wakes the committer, wherever it waits.
    fn kick(&self) {
        self.work.notify_one();
        if let Some(w) = self.ring_wake.get() {
            w.kick();
        }
    }

    // ---- writers ----

    /// Waits, in FIFO order, until `need` log blocks can be promised to this writer;
    /// while it is served and the log has no room, `ask_checkpoint` is called.
    pub fn admit(&self, need: u64, mut ask_checkpoint: impl FnMut()) -> Result<()> {
        let need = need * UNITS_PER_BLOCK;
        let mut log = self.lock()?;
        let ticket = log.next_ticket;
        log.next_ticket += 1;
        let mut waited: Option<std::time::Instant> = None;
        loop {
            if let Some(e) = &log.error {
                let e = e.clone();
                if log.serving == ticket {
                    log.serving += 1;
                }
                self.space.notify_all();
                return Err(Error::Poisoned(e));
            }
            if log.stop {
                return Err(Error::Closed);
            }
            if log.serving == ticket && log.free(self.n) >= need {
                log.serving += 1;
                log.reserved += need;
                if log.next_ticket > log.serving {
                    self.space.notify_all();
                }
                if let Some(t0) = waited {
                    self.stats.max_us_since(Stat::AdmissionMaxWaitUs, t0);
                }
                return Ok(());
            }
            if log.serving == ticket {
                drop(log);
                ask_checkpoint();
                log = self.lock()?;
                if log.free(self.n) >= need {
                    continue;
                }
            }
            if waited.is_none() {
                waited = Some(std::time::Instant::now());
                self.stats.add(Stat::AdmissionWaits, 1);
            }
            log = wait_timeout(&self.space, log, Duration::from_millis(50), LOG)?;
        }
    }

    /// Gives back a promise of `need` blocks that was not used.
    pub fn unadmit(&self, need: u64) -> Result<()> {
        let mut log = self.lock()?;
        log.reserved -= need * UNITS_PER_BLOCK;
        self.space.notify_all();
        Ok(())
    }

    /// Reserves the next id for a transaction of `entries` and `payload` admitted
    /// with `admitted` blocks, encodes it and queues it for the committer. It goes
    /// at the head, packed after the transaction before it in the same block, or at
    /// the next block when too little of the head's block is left
    /// ([`crate::txn::MIN_ROOM`]). The caller holds the core lock, so ids follow the
    /// order in which changes were applied to the image. With `data_pending`, it
    /// does not complete before [`Log::data_written`].
    pub fn reserve(
        &self,
        entries: &[Entry],
        payload: &[u8],
        admitted: u64,
        data_pending: bool,
    ) -> Result<Reserved> {
        assert!(
            blocks_for(entries.len(), payload.len()) as u64 <= admitted,
            "transaction larger than its admission"
        );
        let mut log = self.lock()?;
        let mut start = log.head;
        let mut off = (start % UNITS_PER_BLOCK) as usize * UNIT;
        if off > MAX_START {
            start = ceil_block(start);
            off = 0;
        }
        let back = complete_back(start, self.stamp.then(|| log.complete()));
        let bytes = encode(
            self.generation,
            id_of(start, self.n),
            back,
            entries,
            payload,
            off,
        );
        let units = bytes.len().div_ceil(UNIT) as u64;
        // what the admission promised covers it wherever it starts (txn.rs,
        // `admission_covers_every_start`), the padding of its batch included
        debug_assert!(
            ceil_block(start + units) <= ceil_block(log.head) + admitted * UNITS_PER_BLOCK
        );
        log.head = start + units;
        log.reserved -= admitted * UNITS_PER_BLOCK;
        if data_pending {
            log.data_pending.insert(start);
        }
        log.queue.push_back((start, bytes));
        if start % self.n + units > self.n {
            self.stats.add(Stat::SplitTxns, 1);
        }
        let over = log.used() * 100 > self.n * self.checkpoint_pct;
        drop(log);
        self.kick();
        Ok(Reserved {
            start,
            end: start + units,
            over,
        })
    }

    /// The large-value data write of the transaction at `start` is durable.
    pub fn data_written(&self, start: u64) -> Result<()> {
        let mut log = self.lock()?;
        log.data_pending.remove(&start);
        self.done.notify_all();
        self.ackers.notify_all();
        Ok(())
    }

    /// Waits until every transaction before `end` is complete.
    pub fn wait_complete(&self, end: u64) -> Result<()> {
        let mut log = self.lock()?;
        loop {
            if let Some(e) = &log.error {
                return Err(Error::Poisoned(e.clone()));
            }
            if log.complete() >= end {
                return Ok(());
            }
            log = wait(&self.done, log, LOG)?;
        }
    }

    /// Runs `done` once every transaction before `end` is complete: now if they are
    /// (or the engine is poisoned), else from the completer.
    pub fn when_complete(&self, end: u64, done: Completion) {
        let mut log = match self.lock() {
            Ok(g) => g,
            Err(e) => return done(Err(e)),
        };
        if let Some(e) = &log.error {
            let e = e.clone();
            drop(log);
            return done(Err(Error::Poisoned(e)));
        }
        if log.complete() >= end {
            drop(log);
            return done(Ok(Reply::Done));
        }
        log.acks.entry(end).or_default().push(done);
    }

    // ---- the committer ----

    /// Wakes the committer through `w` while it waits in its ring.
    pub fn set_ring_wake(&self, w: Arc<Wake>) {
        let _ = self.ring_wake.set(w);
    }

    /// Whether the committer has something to take: queued transactions, a stop or
    /// an error (its last look before it waits in its ring).
    pub fn has_work(&self) -> bool {
        self.lock()
            .map_or(true, |l| !l.queue.is_empty() || l.stop || l.error.is_some())
    }

    /// Takes every queued transaction, packed into `buf`: the batch's blocks, the
    /// transactions at their positions and zeros around them; returns the batch's
    /// first unit. The batch closes here: the head moves to the next block boundary,
    /// so the next transaction starts a block no batch has written (several batches
    /// may be in flight: none shares a block with another). With `wait`, waits for a
    /// transaction while there is none.
    pub fn take_batch(&self, wait_for: bool, buf: &mut AlignedBuf) -> Result<Take> {
        let mut log = self.lock()?;
        while wait_for && log.queue.is_empty() && !log.stop && log.error.is_none() {
            log = wait(&self.work, log, LOG)?;
        }
        if log.error.is_some() {
            return Ok(Take::Stop);
        }
        let Some(&(first, _)) = log.queue.front() else {
            return Ok(if log.stop { Take::Stop } else { Take::Empty });
        };
        // the head was at a block boundary when this batch's first transaction was
        // reserved (the last batch closed there, or the open put it there)
        let start = floor_block(first);
        debug_assert_eq!(start, log.taken);
        let end = ceil_block(log.head);
        log.head = end;
        log.taken = end;
        buf.set_len(((end - start) / UNITS_PER_BLOCK) as usize * BLOCK);
        let mut at = 0;
        while let Some((pos, b)) = log.queue.pop_front() {
            let to = (pos - start) as usize * UNIT;
            buf[at..to].fill(0);
            buf[to..to + b.len()].copy_from_slice(&b);
            at = to + b.len();
        }
        buf[at..].fill(0);
        Ok(Take::Batch(start))
    }

    /// Every unit before `end` (a block boundary) is written (and synced, as the
    /// durability mode asks); returns the completions of asynchronous writes this
    /// made ready, for the committer to run (none once the engine is poisoned: the
    /// completer fails those).
    pub fn written(&self, end: u64) -> Result<Acks> {
        let mut log = self.lock()?;
        log.written = end;
        let ready = if log.error.is_none() {
            log.take_ready()
        } else {
            Acks::new()
        };
        let last = log.stop && log.written == log.head;
        drop(log);
        self.done.notify_all();
        if last {
            self.ackers.notify_all();
        }
        Ok(ready)
    }

    /// The committer's write or sync failed: the engine is poisoned.
    pub fn write_failed(&self, msg: String) {
        if let Ok(mut log) = self.lock()
            && log.error.is_none()
        {
            log.error = Some(msg);
        }
        self.done.notify_all();
        self.ackers.notify_all();
        self.space.notify_all();
    }

    // ---- the completer ----

    /// Waits for completions to run: those whose transactions are complete (with
    /// no error), or every one left once the engine is poisoned (with the error) or
    /// stopped with nothing more to complete (`Closed`). `None`: nothing is left
    /// and the log is stopped.
    pub fn next_acks(&self) -> Result<Option<(Acks, Option<Error>)>> {
        let mut log = self.lock()?;
        loop {
            if let Some(e) = &log.error {
                if !log.acks.is_empty() {
                    let e = e.clone();
                    return Ok(Some((
                        std::mem::take(&mut log.acks),
                        Some(Error::Poisoned(e)),
                    )));
                }
                if log.stop {
                    return Ok(None);
                }
            }
            let ready = log.take_ready();
            if !ready.is_empty() {
                return Ok(Some((ready, None)));
            }
            if log.stop && log.queue.is_empty() && log.written == log.head {
                // Nothing more will complete: whatever is left fails.
                let left = std::mem::take(&mut log.acks);
                if left.is_empty() {
                    return Ok(None);
                }
                return Ok(Some((left, Some(Error::Closed))));
            }
            log = wait_timeout(&self.ackers, log, Duration::from_millis(100), LOG)?;
        }
    }

    // ---- the checkpoint ----

    /// A checkpoint at `r` is recorded in the header: the log space before it is
    /// free.
    pub fn reclaim(&self, r: u64) -> Result<()> {
        let mut log = self.lock()?;
        log.tail = log.tail.max(r);
        self.space.notify_all();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_log_lock_is_an_error_for_every_role() {
        let u = UNITS_PER_BLOCK;
        let log = Log::new(64, 1, 64 * u, 64 * u, 50, true, Arc::new(Stats::default()));
        std::thread::scope(|s| {
            let r = s
                .spawn(|| {
                    let _g = log.state.lock().unwrap();
                    panic!("a panic while holding the log lock");
                })
                .join();
            assert!(r.is_err());
        });
        let poisoned =
            |r: Result<()>| matches!(r, Err(Error::Poisoned(m)) if m.contains("log state"));
        assert!(poisoned(log.check()));
        assert!(poisoned(log.admit(1, || {})));
        assert!(poisoned(log.wait_complete(64 * u + 1)));
        let mut b = AlignedBuf::default();
        assert!(poisoned(log.take_batch(true, &mut b).map(|_| ())));
        assert!(poisoned(log.next_acks().map(|_| ())));
        assert!(matches!(log.poison("x".into()), Error::Poisoned(m) if m.contains("log state")));
        let (tx, rx) = std::sync::mpsc::channel();
        log.when_complete(64 * u + 1, Box::new(move |r| tx.send(r).unwrap()));
        assert!(matches!(rx.recv().unwrap(), Err(Error::Poisoned(_))));
        log.stop();
        log.write_failed("y".into());
    }
}
