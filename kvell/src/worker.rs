//! A worker: one thread that owns a share of the keys (chosen by key hash), its own
//! index, page cache, slab files, free lists and I/O ring. Requests arrive through a
//! bounded queue; the loop takes new requests, queues their I/O, submits it in
//! batches of at most `batch` with at most `queue_depth` in flight, and reaps
//! completions as they arrive (it never waits for a whole batch).
//!
//! Ordering rule: at most one I/O per unit (page, or large slot) is in flight, and
//! every request that needs a busy unit waits in that unit's queue, except writes,
//! which may still join a write that is prepared but not yet submitted (so several
//! updates of one page leave in one write). When no I/O is pending on a unit, its
//! cached copy (if any) is exactly what is on the device.
//!
//! Per-key rule: a write sequence that changes where a key lives (an insert, a move
//! to another size class or a large item's new location, a delete: every I/O it
//! makes, the item then the tombstone over an old copy) holds its key exclusively. A
//! later write of the same key waits in that key's queue (`keys`) and starts only
//! when the earlier one has finished, so a request is never acknowledged while an
//! earlier write of its key is incomplete (a crash could otherwise leave that earlier
//! write's old copy as the only valid one). An update in place (same slot: one I/O
//! on one unit) holds the key shared: several may be under way at once, because the
//! unit rule above already orders their writes (a later one joins the prepared
//! write or goes after the one in flight) and none of them moves the key. A write
//! that finds others waiting queues behind them, so a key's writes start in arrival
//! order. Reads are not queued: the index is updated when a write starts, and a
//! write is acknowledged only after it completes.
//! (With every write of a key exclusive, YCSB A zipfian ran at half the rate here: the
//! hottest key's updates each waited for the previous one's write.)
#![deny(unsafe_code)]

use crate::cache::PageCache;
use crate::freelist::FreeList;
use crate::index::Index;
use crate::io::{AlignedBuf, Backend, BufPool, IoDone, IoKind, IoReq, PAGE, RUN};
use crate::slab::{self, Loc, Slot, Unit};
use crate::stats::Stats;
use kvapi::{Error, Reply, Result};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A completion that runs exactly once: one dropped without being run (a request
/// left in a queue at shutdown) answers `Error::Closed`.
pub struct Done(Option<kvapi::Completion>);

impl Done {
    pub fn new(f: impl FnOnce(Result<Reply>) + Send + 'static) -> Done {
        Done(Some(Box::new(f)))
    }
    pub fn from_box(f: kvapi::Completion) -> Done {
        Done(Some(f))
    }
    pub fn call(mut self, r: Result<Reply>) {
        if let Some(f) = self.0.take() {
            f(r)
        }
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f(Err(Error::Closed))
        }
    }
}

pub enum WReq {
    Get(Vec<u8>),
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

pub enum Msg {
    Op(WReq, Done),
    /// Several requests in one message (the reads of a scan).
    Ops(Vec<(WReq, Done)>),
    Close(Sender<Result<()>>),
}

/// Shared poison flag: set after a failed write, then writes are refused.
#[derive(Default)]
pub struct Poison(Mutex<Option<String>>, std::sync::atomic::AtomicBool);

impl Poison {
    pub fn set(&self, why: String) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            *g = Some(why);
        }
        self.1.store(true, Relaxed);
    }
    pub fn check(&self) -> Result<()> {
        if !self.1.load(Relaxed) {
            return Ok(());
        }
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        Err(Error::Poisoned(g.clone().unwrap_or_default()))
    }
}

/// One slab file of the worker.
pub struct Slab {
    pub file: usize,
    pub path: PathBuf,
    pub len: u64,
    /// Next slot to append at.
    pub next_slot: u64,
    pub free: FreeList,
}

enum Stage {
    Start,
    /// The item must be written at `target`; `old` is freed after it is durable.
    Write {
        target: Loc,
        old: Option<Loc>,
        fresh: bool,
        follow_chain: bool,
    },
    /// The item write is prepared or in flight.
    Written {
        old: Option<Loc>,
    },
    /// A tombstone must be written at `loc`.
    Free {
        loc: Loc,
    },
    /// The tombstone write is prepared or in flight.
    Freed {
        loc: Loc,
    },
}

struct Op {
    req: WReq,
    done: Option<Done>,
    stage: Stage,
    counted: bool,
    retried: bool,
    /// How this write holds its key's entry in `Worker::keys` (released in `finish`).
    hold: Hold,
}

/// How a write holds its key, with the key's hash (its entry in `Worker::keys`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Hold {
    None,
    /// An update in place.
    Shared(u64),
    /// A write sequence that may change where the key lives.
    Exclusive(u64),
}

/// The writes of one key under way, and those waiting for it.
#[derive(Default)]
struct KeyLock {
    shared: u32,
    exclusive: bool,
    waiting: VecDeque<usize>,
}

enum LargeGet {
    Answer(Result<Reply>),
    /// The slot holds another item (a write to it is pending).
    Mismatch,
}

enum BusyState {
    Reading,
    /// A write whose image can still take more changes.
    Prepared(AlignedBuf),
    InFlight,
}

struct Busy {
    state: BusyState,
    /// Requests finished when the current write completes.
    acks: Vec<usize>,
    /// Requests waiting for the unit to be idle.
    waiters: VecDeque<usize>,
}

pub struct Worker {
    pub io: Box<dyn Backend>,
    pub slabs: Vec<Slab>,
    pub index: Arc<Mutex<Index>>,
    pub cache: PageCache,
    pub stats: Arc<Stats>,
    pub poison: Arc<Poison>,
    pub ts: u64,
    pub queue_depth: usize,
    pub batch: usize,
    pub dsync: bool,
    /// Item format (checksums or not).
    pub fmt: slab::Format,
    /// The clean-shutdown record, written at close (see `recovery::write_clean`).
    pub clean_file: Option<usize>,
    ops: Vec<Option<Op>>,
    free_ops: Vec<usize>,
    active: usize,
    busy: BTreeMap<Unit, Busy>,
    to_submit: VecDeque<(Unit, IoKind)>,
    inflight: usize,
    pool: BufPool,
    completions: Vec<IoDone>,
    /// Gets to retry once the current wake-up's other requests are stepped, and
    /// writes whose key was just released.
    deferred: Vec<usize>,
    /// Keys with a write sequence under way (by a 64-bit hash of the key, so a write
    /// allocates nothing here; a collision only makes an unrelated write wait), each
    /// with the writes waiting for it.
    keys: HashMap<u64, KeyLock>,
    /// Index operations so far (see `index_clock`).
    index_ticks: u32,
}

/// One index operation in this many is timed.
const INDEX_SAMPLE: u32 = 16;

impl Worker {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: usize,
        io: Box<dyn Backend>,
        slabs: Vec<Slab>,
        index: Arc<Mutex<Index>>,
        cache: PageCache,
        stats: Arc<Stats>,
        poison: Arc<Poison>,
        ts: u64,
        queue_depth: usize,
        batch: usize,
        dsync: bool,
    ) -> Worker {
        let _ = id;
        Worker {
            io,
            slabs,
            index,
            cache,
            stats,
            poison,
            ts,
            queue_depth: queue_depth.max(1),
            batch: batch.max(1),
            dsync,
            fmt: slab::Format::default(),
            clean_file: None,
            ops: Vec::new(),
            free_ops: Vec::new(),
            active: 0,
            busy: BTreeMap::new(),
            to_submit: VecDeque::new(),
            inflight: 0,
            pool: BufPool::default(),
            completions: Vec::new(),
            deferred: Vec::new(),
            keys: HashMap::new(),
            index_ticks: 0,
        }
    }

    /// The start of a timed index operation: one in `INDEX_SAMPLE` is timed (a clock
    /// read costs about 40 ns here, a lookup about 1 us) and counted
    /// `INDEX_SAMPLE` times, so `phase_ns.index` is an estimate.
    fn index_clock(&mut self) -> Option<Instant> {
        self.index_ticks = self.index_ticks.wrapping_add(1);
        self.index_ticks
            .is_multiple_of(INDEX_SAMPLE)
            .then(Instant::now)
    }

    fn index_time(&self, t: Option<Instant>) {
        if let Some(t) = t {
            self.stats
                .index_ns
                .fetch_add(t.elapsed().as_nanos() as u64 * INDEX_SAMPLE as u64, Relaxed);
        }
    }

    fn index(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The event loop; returns when closed (after finishing every request).
    pub fn run(mut self, rx: Receiver<Msg>) {
        // Requests a worker takes in at once: 4 x the queue depth, as the C code's
        // MAX_NB_PENDING_CALLBACKS_PER_WORKER, so that with cache hits among them the
        // worker still has `queue_depth` I/Os to keep in flight. The rest wait in the
        // bounded channel.
        let max_active = (self.queue_depth * 4).max(64);
        let mut closing: Option<Sender<Result<()>>> = None;
        let mut disconnected = false;
        loop {
            let mut got = false;
            if closing.is_none() && !disconnected {
                if self.active == 0 && self.inflight == 0 && self.to_submit.is_empty() {
                    let t = Instant::now();
                    match rx.recv() {
                        Ok(m) => {
                            self.stats
                                .idle_ns
                                .fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
                            got = true;
                            self.handle(m, &mut closing);
                        }
                        Err(_) => disconnected = true,
                    }
                }
                while closing.is_none() && self.active < max_active {
                    match rx.try_recv() {
                        Ok(m) => {
                            got = true;
                            self.handle(m, &mut closing);
                        }
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            disconnected = true;
                            break;
                        }
                    }
                }
            }
            // Gets deferred while handling new requests (a cached page that does not
            // hold the indexed key, with no write pending: after a failed write)
            // must not wait for a completion that may never come.
            self.run_deferred();
            self.submit();
            if self.inflight > 0 {
                let wait = !got || self.active >= max_active || closing.is_some() || disconnected;
                let t = Instant::now();
                let mut done = std::mem::take(&mut self.completions);
                if let Err(e) = self.io.reap(wait, &mut done) {
                    self.poison.set(format!("reaping I/O completions: {e}"));
                }
                self.stats
                    .wait_ns
                    .fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
                for d in done.drain(..) {
                    self.inflight -= 1;
                    self.complete(d);
                }
                self.completions = done;
            } else if !self.to_submit.is_empty() {
                continue;
            }
            if (closing.is_some() || disconnected)
                && self.active == 0
                && self.inflight == 0
                && self.to_submit.is_empty()
            {
                let mut r = Ok(());
                for s in &self.slabs {
                    if let Err(e) = self.io.sync(s.file) {
                        r = Err(Error::io(format!("syncing {}", s.path.display()), e));
                    }
                }
                // Everything is on disk: record where each slab ends, so the next
                // open can tell lost pages from never-written ones.
                if let Some(f) = self.clean_file
                    && r.is_ok()
                    && self.poison.check().is_ok()
                {
                    let ends: Vec<u64> = self.slabs.iter().map(|s| s.next_slot).collect();
                    if let Err(e) = crate::recovery::write_clean(self.io.as_mut(), f, Some(&ends)) {
                        r = Err(Error::io("writing the clean-shutdown record", e));
                    }
                }
                if let Some(tx) = closing {
                    let _ = tx.send(r);
                }
                return;
            }
        }
    }

    fn handle(&mut self, m: Msg, closing: &mut Option<Sender<Result<()>>>) {
        match m {
            Msg::Close(tx) => *closing = Some(tx),
            Msg::Ops(ops) => {
                for (req, done) in ops {
                    self.handle(Msg::Op(req, done), closing);
                }
            }
            Msg::Op(req, done) => {
                let op = Op {
                    req,
                    done: Some(done),
                    stage: Stage::Start,
                    counted: false,
                    retried: false,
                    hold: Hold::None,
                };
                let id = match self.free_ops.pop() {
                    Some(i) => {
                        self.ops[i] = Some(op);
                        i
                    }
                    None => {
                        self.ops.push(Some(op));
                        self.ops.len() - 1
                    }
                };
                self.active += 1;
                self.step(id);
            }
        }
    }

    fn finish(&mut self, id: usize, r: Result<Reply>) {
        if let Some(mut op) = self.ops[id].take() {
            self.free_ops.push(id);
            self.active -= 1;
            if let Some(done) = op.done.take() {
                done.call(r);
            }
            self.release_key(op.hold);
        }
    }

    /// The hash of a write's key, its entry in `keys` (computed once per write, when
    /// it takes the key; the hold carries it to `release_key`).
    fn write_key(req: &WReq) -> u64 {
        let (WReq::Put(k, _) | WReq::Delete(k)) = req else {
            unreachable!("a get takes no key lock")
        };
        let mut h = std::hash::DefaultHasher::new();
        std::hash::Hasher::write(&mut h, k);
        std::hash::Hasher::finish(&h)
    }

    /// Takes the key of write `id` for its sequence (shared for an update in place);
    /// false if it must wait (then `id` waits in the key's queue, started by
    /// `release_key`). A write that waited is granted the key exclusively.
    fn acquire_key(&mut self, id: usize, shared: bool) -> bool {
        let op = self.ops[id].as_ref().expect("live op");
        if op.hold != Hold::None {
            return true;
        }
        let key = Self::write_key(&op.req);
        self.take_key(id, key, shared)
    }

    /// `acquire_key` for a write that holds nothing yet, its key's hash computed.
    fn take_key(&mut self, id: usize, key: u64, shared: bool) -> bool {
        let op = self.ops[id].as_mut().expect("live op");
        let l = self.keys.entry(key).or_default();
        let free = !l.exclusive && l.waiting.is_empty();
        if free && shared {
            l.shared += 1;
            op.hold = Hold::Shared(key);
            true
        } else if free && l.shared == 0 {
            l.exclusive = true;
            op.hold = Hold::Exclusive(key);
            true
        } else {
            l.waiting.push_back(id);
            false
        }
    }

    /// A write sequence of this key finished (done or failed): once no write holds
    /// the key, the next queued write of the key, if any, takes it over and is
    /// started from the deferred list (not from here: `finish` runs inside
    /// completion loops).
    fn release_key(&mut self, hold: Hold) {
        let key = match hold {
            Hold::None => return,
            Hold::Shared(k) | Hold::Exclusive(k) => k,
        };
        let Some(l) = self.keys.get_mut(&key) else {
            return;
        };
        match hold {
            Hold::Shared(_) => l.shared -= 1,
            _ => l.exclusive = false,
        }
        if l.shared > 0 || l.exclusive {
            return;
        }
        match l.waiting.pop_front() {
            Some(next) => {
                l.exclusive = true;
                self.op(next).hold = Hold::Exclusive(key);
                self.deferred.push(next);
            }
            None => {
                self.keys.remove(&key);
            }
        }
    }

    fn req(&self, id: usize) -> &WReq {
        &self.ops[id].as_ref().expect("live op").req
    }

    fn op(&mut self, id: usize) -> &mut Op {
        self.ops[id].as_mut().expect("live op")
    }

    fn count_cache(&mut self, id: usize, hit: bool) {
        let op = self.op(id);
        if !op.counted {
            op.counted = true;
            let c = if hit {
                &self.stats.cache_hits
            } else {
                &self.stats.cache_misses
            };
            c.fetch_add(1, Relaxed);
        }
    }

    /// Advances a request as far as it can go without waiting.
    fn step(&mut self, id: usize) {
        let stage = std::mem::replace(&mut self.op(id).stage, Stage::Start);
        match stage {
            Stage::Start => {
                match self.req(id) {
                    WReq::Get(_) => self.get(id),
                    WReq::Put(..) => self.start_put(id),
                    WReq::Delete(_) => {
                        if self.acquire_key(id, false) {
                            self.start_delete(id)
                        }
                        // else waits for the key's earlier writes (`release_key`)
                    }
                }
            }
            Stage::Write {
                target,
                old,
                fresh,
                follow_chain,
            } => self.write_item(id, target, old, fresh, follow_chain),
            Stage::Free { loc } => self.write_tomb(id, loc),
            s @ (Stage::Written { .. } | Stage::Freed { .. }) => self.op(id).stage = s,
        }
    }

    fn wait_on(&mut self, id: usize, unit: Unit) {
        self.busy
            .get_mut(&unit)
            .expect("busy unit")
            .waiters
            .push_back(id);
    }

    fn start_read(&mut self, id: usize, unit: Unit) {
        self.busy.insert(
            unit,
            Busy {
                state: BusyState::Reading,
                acks: Vec::new(),
                waiters: VecDeque::from([id]),
            },
        );
        self.to_submit.push_back((unit, IoKind::Read));
    }

    fn get(&mut self, id: usize) {
        let t = self.index_clock();
        let loc = {
            let WReq::Get(key) = self.req(id) else {
                unreachable!()
            };
            self.index().get(key)
        };
        self.index_time(t);
        let Some(loc) = loc else {
            return self.finish(id, Ok(Reply::Value(None)));
        };
        let unit = loc.unit();
        if !slab::is_large(loc.class())
            && let Some(page) = self.cache.get(unit)
        {
            let kv = Self::small_value(self.fmt, page, loc);
            let WReq::Get(key) = self.req(id) else {
                unreachable!()
            };
            let found = matches!(&kv, Ok((k, _)) if k == key);
            // The index is ahead of the cache while a write to the slot is pending:
            // wait for it (see `mismatch`).
            if found || !self.mismatch(id, unit) {
                self.count_cache(id, true);
                self.reply_get(id, loc, kv);
            }
            return;
        }
        self.count_cache(id, false);
        if self.busy.contains_key(&unit) {
            return self.wait_on(id, unit);
        }
        self.start_read(id, unit);
    }

    /// A get found another item than its key where the index points. That is normal
    /// while a write to the unit is pending (the index is updated when a write is
    /// dispatched, the cache when it completes): wait for it. Right after a read
    /// completes, the write may still be queued behind the get in the same wake-up,
    /// so the get is retried once after them. Returns false when none of this
    /// applies: a real inconsistency, reported by the caller.
    fn mismatch(&mut self, id: usize, unit: Unit) -> bool {
        if self.busy.contains_key(&unit) {
            self.op(id).retried = false;
            self.wait_on(id, unit);
            return true;
        }
        if !self.op(id).retried {
            self.op(id).retried = true;
            self.deferred.push(id);
            return true;
        }
        false
    }

    fn run_deferred(&mut self) {
        while !self.deferred.is_empty() {
            for id in std::mem::take(&mut self.deferred) {
                self.step(id);
            }
        }
    }

    fn small_value(fmt: slab::Format, page: &[u8], loc: Loc) -> Result<(Vec<u8>, Vec<u8>), String> {
        let off = loc.offset_in_unit();
        let b = &page[off..off + slab::SMALL[loc.class()]];
        match fmt.parse(b, slab::room(loc.class()))? {
            Slot::Item {
                key_len, value_len, ..
            } => {
                let (k, v) = slab::small_kv(b, key_len, value_len);
                Ok((k.to_vec(), v.to_vec()))
            }
            other => Err(format!("indexed slot holds {other:?}")),
        }
    }

    fn reply_get(&mut self, id: usize, loc: Loc, kv: Result<(Vec<u8>, Vec<u8>), String>) {
        let WReq::Get(key) = self.req(id) else {
            unreachable!()
        };
        let r = match kv {
            Ok((k, v)) if k == *key => Ok(Reply::Value(Some(v))),
            Ok((k, _)) => Err(format!(
                "index points at a slot holding another key ({} bytes)",
                k.len()
            )),
            Err(e) => Err(e),
        };
        let r = r.map_err(|detail| {
            let s = &self.slabs[loc.class()];
            Error::Corruption {
                file: s.path.clone(),
                offset: loc.unit().file_offset() + loc.offset_in_unit() as u64,
                detail,
            }
        });
        self.finish(id, r);
    }

    fn start_put(&mut self, id: usize) {
        if let Err(e) = self.poison.check() {
            return self.finish(id, Err(e));
        }
        let t = self.index_clock();
        let op = self.ops[id].as_ref().expect("live op");
        let WReq::Put(key, value) = &op.req else {
            unreachable!()
        };
        let class = self
            .fmt
            .class_of(key.len(), value.len())
            .expect("checked at submit");
        let in_place = |old: Option<Loc>| matches!(old, Some(o) if o.class() == class && !slab::is_large(class));
        // The key this write takes once the index walk below has decided how (no
        // other write of the key is under way, so it is granted either way).
        let mut take = None;
        if op.hold == Hold::None {
            let hash = Self::write_key(&op.req);
            if self.keys.contains_key(&hash) {
                // Other writes of the key are under way: whether this one is an
                // update in place decides whether it may go beside them.
                let old = self.index().get(key);
                if !self.take_key(id, hash, in_place(old)) {
                    // waits for the key's earlier writes (`release_key`), then starts
                    // again holding the key exclusively
                    return self.index_time(t);
                }
            } else {
                take = Some(hash);
            }
        }
        // One index walk finds the old copy and, for a new slot, allocates and
        // inserts it. With the key held, the old copy is the one seen when it was
        // taken: only this write may move it.
        let mut got = None;
        let mut failed = None;
        let (slabs, io, poison, dsync) = (&mut self.slabs, &mut self.io, &self.poison, self.dsync);
        let WReq::Put(key, _) = &self.ops[id].as_ref().expect("live op").req else {
            unreachable!()
        };
        let old = self
            .index
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .upsert(key, |old| {
                if in_place(old) {
                    return None;
                }
                match allocate(&mut slabs[class], io.as_mut(), poison, dsync, class) {
                    Ok(a) => {
                        got = Some(a);
                        Some(a.0)
                    }
                    Err(e) => {
                        failed = Some(e);
                        None
                    }
                }
            });
        self.index_time(t);
        if let Some(e) = failed {
            return self.finish(id, Err(e));
        }
        if let Some(hash) = take {
            let granted = self.take_key(id, hash, got.is_none());
            debug_assert!(granted, "a key no write held");
        }
        let (target, old, fresh, follow_chain) = match got {
            Some((target, fresh, follow)) => (target, old, fresh, follow),
            None => (old.expect("in place"), None, false, false),
        };
        self.write_item(id, target, old, fresh, follow_chain);
    }

    fn start_delete(&mut self, id: usize) {
        if let Err(e) = self.poison.check() {
            return self.finish(id, Err(e));
        }
        let WReq::Delete(key) = self.req(id) else {
            unreachable!()
        };
        let old = self
            .index
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
        match old {
            None => self.finish(id, Ok(Reply::Done)),
            Some(loc) => self.write_tomb(id, loc),
        }
    }

    /// Gets a writable image of `unit` for a change, or arranges to be stepped again.
    /// Returns None if the request now waits.
    fn image_for(&mut self, id: usize, unit: Unit, fresh: bool) -> Option<()> {
        if let Some(b) = self.busy.get_mut(&unit) {
            if matches!(b.state, BusyState::Prepared(_)) && !slab::is_large(unit.class()) {
                return Some(());
            }
            b.waiters.push_back(id);
            return None;
        }
        if slab::is_large(unit.class()) {
            return Some(()); // the caller builds the image
        }
        let mut buf = self.pool.get(PAGE);
        if let Some(page) = self.cache.get(unit) {
            buf[..PAGE].copy_from_slice(page);
            self.count_cache(id, true);
        } else if fresh {
            buf.fill(0);
        } else {
            self.pool.put(buf);
            self.count_cache(id, false);
            self.start_read(id, unit);
            return None;
        }
        self.busy.insert(
            unit,
            Busy {
                state: BusyState::Prepared(buf),
                acks: Vec::new(),
                waiters: VecDeque::new(),
            },
        );
        self.to_submit.push_back((unit, IoKind::Write));
        Some(())
    }

    fn prepared(&mut self, unit: Unit) -> &mut AlignedBuf {
        match &mut self.busy.get_mut(&unit).expect("busy").state {
            BusyState::Prepared(b) => b,
            _ => unreachable!("unit not prepared"),
        }
    }

    fn write_item(&mut self, id: usize, target: Loc, old: Option<Loc>, fresh: bool, follow: bool) {
        let unit = target.unit();
        let class = target.class();
        self.op(id).stage = Stage::Write {
            target,
            old,
            fresh,
            follow_chain: follow,
        };
        if self.image_for(id, unit, fresh).is_none() {
            return;
        }
        self.ts += 1;
        let ts = self.ts;
        let off = target.offset_in_unit();
        if slab::is_large(class) {
            let WReq::Put(key, value) = self.req(id) else {
                unreachable!()
            };
            let used = self.fmt.large_pages(key.len(), value.len());
            let mut buf = AlignedBuf::new(used * PAGE);
            self.fmt.write_large(&mut buf, ts, key, value);
            self.busy.insert(
                unit,
                Busy {
                    state: BusyState::Prepared(buf),
                    acks: vec![id],
                    waiters: VecDeque::new(),
                },
            );
            self.to_submit.push_back((unit, IoKind::Write));
        } else {
            let size = slab::SMALL[class];
            if follow {
                let fmt = self.fmt;
                let b = &self.prepared(unit)[off..off + size];
                if let Ok(Slot::Tomb { next, .. }) = fmt.parse(b, slab::room(class)) {
                    self.slabs[class].free.continue_chain(next);
                }
            }
            let op = self.ops[id].as_ref().expect("live op");
            let WReq::Put(key, value) = &op.req else {
                unreachable!()
            };
            let b = match &mut self.busy.get_mut(&unit).expect("busy").state {
                BusyState::Prepared(b) => b,
                _ => unreachable!(),
            };
            self.fmt
                .write_small(&mut b[off..off + size], ts, key, value);
            self.busy.get_mut(&unit).expect("busy").acks.push(id);
        }
        self.op(id).stage = Stage::Written { old };
    }

    fn write_tomb(&mut self, id: usize, loc: Loc) {
        let unit = loc.unit();
        self.op(id).stage = Stage::Free { loc };
        if self.image_for(id, unit, false).is_none() {
            return;
        }
        self.ts += 1;
        let ts = self.ts;
        let class = loc.class();
        let next = self.slabs[class].free.next_for_tombstone();
        if slab::is_large(class) {
            let mut buf = AlignedBuf::new(PAGE);
            self.fmt.write_tomb(&mut buf, ts, next);
            self.busy.insert(
                unit,
                Busy {
                    state: BusyState::Prepared(buf),
                    acks: vec![id],
                    waiters: VecDeque::new(),
                },
            );
            self.to_submit.push_back((unit, IoKind::Write));
        } else {
            let off = loc.offset_in_unit();
            let fmt = self.fmt;
            let b = self.prepared(unit);
            fmt.write_tomb(&mut b[off..off + slab::SMALL[class]], ts, next);
            self.busy.get_mut(&unit).expect("busy").acks.push(id);
        }
        self.op(id).stage = Stage::Freed { loc };
    }

    /// Hands queued I/O to the backend while under the queue depth, in batches.
    fn submit(&mut self) {
        while self.inflight < self.queue_depth && !self.to_submit.is_empty() {
            let t = Instant::now();
            let mut n = 0;
            while n < self.batch && self.inflight < self.queue_depth {
                let Some((unit, kind)) = self.to_submit.pop_front() else {
                    break;
                };
                let class = unit.class();
                let mut buf = match kind {
                    IoKind::Read => {
                        if slab::is_large(class) {
                            AlignedBuf::new(slab::unit_len(class))
                        } else {
                            self.pool.get(PAGE)
                        }
                    }
                    IoKind::Write => self.take_prepared(unit),
                };
                // Writes of the following pages of the same slab, queued right
                // behind this one (appends), leave in the same I/O: one request
                // instead of one per page, which the block layer would merge anyway
                // but only after paying the kernel's per-I/O cost for each page.
                if kind == IoKind::Write && !slab::is_large(class) {
                    let next = |w: &Worker, pages: usize| {
                        pages < RUN
                            && w.to_submit.front().is_some_and(|&(u, k)| {
                                k == IoKind::Write
                                    && u.class() == class
                                    && u.n() == unit.n() + pages as u64
                            })
                    };
                    if next(self, 1) {
                        let mut run = self.pool.get_run();
                        run[..PAGE].copy_from_slice(&buf[..PAGE]);
                        self.pool.put(buf);
                        let mut pages = 1;
                        while next(self, pages) {
                            let (u, _) = self.to_submit.pop_front().expect("front");
                            let b = self.take_prepared(u);
                            run[pages * PAGE..(pages + 1) * PAGE].copy_from_slice(&b[..PAGE]);
                            self.pool.put(b);
                            pages += 1;
                        }
                        run.set_len(pages * PAGE);
                        buf = run;
                    }
                }
                let req = IoReq {
                    file: self.slabs[class].file,
                    offset: unit.file_offset(),
                    kind,
                    buf,
                    tag: unit.0,
                };
                match self.io.push(req) {
                    Ok(()) => {
                        self.inflight += 1;
                        n += 1;
                    }
                    Err(req) => {
                        if kind == IoKind::Write {
                            // Back to one prepared image per page, in queue order.
                            let pages = req.buf.len() / PAGE;
                            for i in (0..pages).rev() {
                                let u = Unit::new(class, unit.n() + i as u64);
                                let mut b = self.pool.get(PAGE);
                                b[..PAGE].copy_from_slice(&req.buf[i * PAGE..(i + 1) * PAGE]);
                                self.busy.get_mut(&u).expect("busy").state = BusyState::Prepared(b);
                                self.to_submit.push_front((u, kind));
                            }
                            self.pool.put(req.buf);
                        } else {
                            self.to_submit.push_front((unit, kind));
                        }
                        break;
                    }
                }
            }
            if n == 0 {
                break;
            }
            if let Err(e) = self.io.submit() {
                self.poison.set(format!("submitting I/O: {e}"));
            }
            self.stats
                .submit_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
            self.stats.submits.fetch_add(1, Relaxed);
        }
    }

    /// The prepared image of a unit whose write is handed to the backend now.
    fn take_prepared(&mut self, unit: Unit) -> AlignedBuf {
        let b = self.busy.get_mut(&unit).expect("busy write");
        match std::mem::replace(&mut b.state, BusyState::InFlight) {
            BusyState::Prepared(buf) => buf,
            _ => unreachable!("write not prepared"),
        }
    }

    fn complete(&mut self, d: IoDone) {
        let unit = Unit(d.tag);
        let class = unit.class();
        let len = d.buf.len() as u64;
        match d.kind {
            IoKind::Read => {
                self.stats.reads.fetch_add(1, Relaxed);
                self.stats.bytes_read.fetch_add(len, Relaxed);
            }
            IoKind::Write => {
                self.stats.writes.fetch_add(1, Relaxed);
                self.stats.bytes_written.fetch_add(len, Relaxed);
            }
        }
        let large = slab::is_large(class);
        let unit_len = if large { d.buf.len() } else { PAGE };
        for i in 0..d.buf.len() / unit_len {
            let u = Unit::new(class, unit.n() + i as u64);
            let page = &d.buf[i * unit_len..(i + 1) * unit_len];
            self.complete_unit(u, d.kind, page, d.result.as_ref().err());
        }
        if !large {
            self.pool.put(d.buf);
        }
        self.run_deferred();
    }

    /// Completion of one unit's I/O (a coalesced write completes several).
    fn complete_unit(
        &mut self,
        unit: Unit,
        kind: IoKind,
        buf: &[u8],
        err: Option<&std::io::Error>,
    ) {
        let class = unit.class();
        let Some(busy) = self.busy.remove(&unit) else {
            return;
        };
        if let Some(e) = err {
            let path = self.slabs[class].path.display().to_string();
            let m = format!(
                "{:?} of {} at offset {}: {e}",
                kind,
                path,
                unit.file_offset()
            );
            self.poison.set(m.clone());
            for id in busy.acks.into_iter().chain(busy.waiters) {
                self.finish(
                    id,
                    Err(Error::io(
                        m.clone(),
                        std::io::Error::new(e.kind(), e.to_string()),
                    )),
                );
            }
            return;
        }
        let large = slab::is_large(class);
        if !large {
            self.cache.put(unit, buf);
        }
        for id in busy.acks {
            match std::mem::replace(&mut self.op(id).stage, Stage::Start) {
                Stage::Written { old: Some(old) } => self.write_tomb(id, old),
                Stage::Freed { loc } => {
                    self.slabs[loc.class()].free.freed(loc.slot());
                    self.finish(id, Ok(Reply::Done));
                }
                _ => self.finish(id, Ok(Reply::Done)),
            }
        }
        for id in busy.waiters {
            if large && kind == IoKind::Read {
                match self.large_get(id, unit, buf) {
                    Some(LargeGet::Answer(r)) => {
                        self.finish(id, r);
                        continue;
                    }
                    Some(LargeGet::Mismatch) => {
                        if !self.mismatch(id, unit) {
                            let r = Err(self.corrupt(unit, "indexed slot holds another item"));
                            self.finish(id, r);
                        }
                        continue;
                    }
                    None => {}
                }
            }
            self.step(id);
        }
    }

    fn corrupt(&self, unit: Unit, detail: &str) -> Error {
        Error::Corruption {
            file: self.slabs[unit.class()].path.clone(),
            offset: unit.file_offset(),
            detail: detail.into(),
        }
    }

    /// Answers a get waiting on a large read if its key still lives in that slot;
    /// None if the request is not a get of this unit (it is stepped normally).
    fn large_get(&mut self, id: usize, unit: Unit, buf: &[u8]) -> Option<LargeGet> {
        let op = self.ops[id].as_ref()?;
        let WReq::Get(key) = &op.req else { return None };
        if !matches!(op.stage, Stage::Start) {
            return None;
        }
        let loc = self.index().get(key)?;
        if loc.unit() != unit {
            return None;
        }
        let class = unit.class();
        Some(match self.fmt.parse(buf, slab::room(class)) {
            Ok(Slot::Item {
                ts,
                key_len,
                value_len,
            }) => match self.fmt.read_large(buf, ts, key_len, value_len) {
                Ok(Some((k, v))) if k == *key => LargeGet::Answer(Ok(Reply::Value(Some(v)))),
                Ok(Some(_)) => LargeGet::Mismatch,
                Ok(None) => LargeGet::Answer(Err(
                    self.corrupt(unit, "large item with pages of different timestamps")
                )),
                Err(e) => LargeGet::Answer(Err(self.corrupt(unit, &e))),
            },
            Ok(_) => LargeGet::Mismatch,
            Err(e) => LargeGet::Answer(Err(self.corrupt(unit, &e))),
        })
    }
}

/// A slot for a new item of `class` in its slab: a free one, or appended (growing the
/// file). Returns the slot, whether its unit is fresh (nothing on disk worth reading)
/// and whether it continues the free list's on-disk chain.
fn allocate(
    s: &mut Slab,
    io: &mut dyn Backend,
    poison: &Poison,
    dsync: bool,
    class: usize,
) -> Result<(Loc, bool, bool)> {
    if let Some(t) = s.free.take() {
        return Ok((Loc::new(class, t.slot), false, t.follow_chain));
    }
    let slot = s.next_slot;
    s.next_slot += 1;
    let loc = Loc::new(class, slot);
    let unit = loc.unit();
    let end = unit.file_offset() + slab::unit_len(class) as u64;
    if end > s.len {
        let grown = (s.len.saturating_mul(2)).min(s.len + (1 << 30));
        let new_len = end.max(grown).max(1 << 20).div_ceil(PAGE as u64) * PAGE as u64;
        let r = io
            .set_len(s.file, new_len)
            .and_then(|()| if dsync { io.sync(s.file) } else { Ok(()) });
        if let Err(e) = r {
            s.next_slot -= 1;
            let m = format!("growing {}: {e}", s.path.display());
            poison.set(m.clone());
            return Err(Error::io(m, e));
        }
        s.len = new_len;
    }
    let fresh = slab::is_large(class) || loc.offset_in_unit() == 0;
    Ok((loc, fresh, false))
}
