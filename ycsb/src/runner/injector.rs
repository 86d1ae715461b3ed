//! The asynchronous driver: one injector keeps up to `qd` requests in flight. It
//! submits until the window is full, then handles completions (pushed by the
//! engine's threads into a [`DoneQueue`], one per injector thread) and refills.
//! With a target rate (or a timed trace), a request is not submitted before its
//! scheduled time, and its intended latency counts from that time.

use super::ahead::with_ops_ahead;
use super::arrivals::Arrivals;
use super::outcome::{Verify, reply_outcome};
use super::phase::Measured;
use super::versions::Versions;
use crate::donequeue::DoneQueue;
use crate::error::{Error, Result};
use crate::generator::AckCounter;
use crate::measure::{Outcome, Recorder};
use crate::record;
use crate::workload::{Op, OpKind};
use kvapi::{AsyncEngine, Engine, Reply, Request};
use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the injector drives a phase.
pub(super) struct Plan<'a> {
    /// Requests in flight.
    pub(super) qd: usize,
    /// A target rate and whether its arrivals are Poisson.
    pub(super) target: Option<(f64, bool)>,
    /// Whether reads verify the values they get.
    pub(super) verify: bool,
    /// The run phase's insert acknowledgements (inserts of new keys).
    pub(super) acks: Option<&'a AckCounter>,
    /// Whether to watch for the end of the warm-up (phases with one).
    pub(super) poll_mark: bool,
}

/// Submissions between two looks at the phase's clock (each look reads the time).
const CLOCK_EVERY: u32 = 32;

thread_local! {
    /// The completion queue of the injector on this thread, kept for the thread's
    /// life and used by each of its phases in turn: a push may still read its queue
    /// after the injector took the completion (`DoneQueue::push`), so a queue is
    /// never freed. A deeper window takes a larger one (slots in powers of two), and
    /// a phase that unwinds leaves its queue to the completions still coming.
    static QUEUE: Cell<Option<&'static DoneQueue<Done>>> = const { Cell::new(None) };
}

/// This thread's completion queue, with at least `slots` slots.
fn thread_queue(slots: usize) -> &'static DoneQueue<Done> {
    QUEUE.with(|q| match q.get() {
        Some(x) if x.slots() >= slots => x,
        _ => {
            let x: &'static DoneQueue<Done> =
                Box::leak(Box::new(DoneQueue::new(slots.next_power_of_two())));
            q.set(Some(x));
            x
        }
    })
}

/// Takes this thread's queue out of use if the injector unwinds: requests in flight
/// may still complete into it, so the next phase must not take their completions
/// for its own.
struct RetireOnUnwind;

impl Drop for RetireOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            QUEUE.with(|q| q.set(None));
        }
    }
}

/// Drives `ops` through the engine's asynchronous path (native, or a thread pool of
/// `qd` threads) until they run out or the phase is over.
/// The operations are drawn ahead on a thread of their own (see `ahead`).
pub(super) fn drive(
    engine: Arc<dyn Engine>,
    ops: &mut (dyn Iterator<Item = Op> + Send),
    plan: &Plan<'_>,
    m: &Measured<'_>,
) -> Result<Recorder> {
    let (a, _) = kvapi::async_path(engine, plan.qd)
        .map_err(|e| Error::engine("starting the asynchronous path", e))?;

    let cpu = &m.driver_cpu;
    cpu.track(|| with_ops_ahead(ops, cpu, |ahead| inject(a.as_ref(), ahead, plan, m)))
}

/// The injector's loop: fills the window, takes completions in batches, refills.
fn inject(
    a: &dyn AsyncEngine,
    ops: &mut dyn Iterator<Item = Op>,
    plan: &Plan<'_>,
    m: &Measured<'_>,
) -> Recorder {
    let qd = plan.qd.max(1);
    let _retire = RetireOnUnwind;
    let mut inj = Injector {
        a,
        queue: thread_queue(qd),
        rec: Recorder::new(m.slot(), m.clock.measure_from),
        in_flight: 0,
        versions: Versions::new(usize::MAX >> 24),
        arrivals: plan
            .target
            .map(|(r, poisson)| Arrivals::new(m.clock.start, r, poisson, 0, 0)),
        exhausted: false,
        pending: None,
        slots: (0..qd).map(|_| Sent::default()).collect(),
        free: (0..qd as u32).rev().collect(),
    };
    // The injector is woken once an eighth of the queue depth has completed (see
    // `donequeue`): enough to refill in batches, few enough to keep the engine busy.
    let refill = (qd / 8).max(1);
    let mut batch: Vec<Done> = Vec::with_capacity(qd);
    loop {
        inj.fill_window(ops, qd, m);
        if inj.in_flight == 0 && inj.exhausted {
            break;
        }
        if inj.exhausted || (inj.arrivals.is_none() && inj.pending.is_none()) {
            let want = if inj.exhausted {
                1
            } else {
                refill.min(inj.in_flight)
            };
            inj.queue.take(want, None, &mut batch);
        } else {
            inj.queue
                .take(1, Some(Duration::from_micros(200)), &mut batch);
        }
        for done in batch.drain(..) {
            inj.complete(done, plan, m);
        }
        if plan.poll_mark {
            m.mark.poll();
        }
    }
    inj.rec.flush_interval();
    inj.rec
}

/// Where a request is in its operation.
#[derive(Clone, Copy)]
enum Stage {
    Single(OpKind),
    /// The read of a read-modify-write.
    RmwRead,
    /// The update of a read-modify-write, whose read ended at `read_done`.
    RmwUpdate {
        read_done: Instant,
    },
    /// The read of a one-field update (`writeallfields=false`).
    FieldRead,
    /// The write of a one-field update, after its read.
    FieldWrite,
}

/// A request in flight, in the injector's slot of it: what the injector needs back
/// with its reply. A slot and its key buffer are reused from request to request (no
/// allocation per request); the read and the write of a read-modify-write share one.
struct Sent {
    stage: Stage,
    keynum: i64,
    key: Vec<u8>,
    value_len: usize,
    fields: usize,
    field: Option<usize>,
    intended: Option<Instant>,
    start: Instant,
}

impl Default for Sent {
    fn default() -> Sent {
        Sent {
            stage: Stage::Single(OpKind::Read),
            keynum: 0,
            key: Vec::new(),
            value_len: 0,
            fields: 0,
            field: None,
            intended: None,
            start: Instant::now(),
        }
    }
}

/// A completed request, as the engine's thread hands it to the injector: the slot
/// it was sent from, when it ended, and its reply.
struct Done {
    slot: u32,
    end: Instant,
    result: kvapi::Result<Reply>,
}

/// The request of `op`; its key is moved from the operation (no copy).
fn request_for(op: Op, version: u64, rmw_read: bool) -> Request {
    let key = op.key.into_bytes();
    match op.kind {
        OpKind::Read => Request::Get { key },
        OpKind::ReadModifyWrite if rmw_read => Request::Get { key },
        // a one-field update reads the record first
        OpKind::Update if op.field.is_some() => Request::Get { key },
        OpKind::Insert => {
            let value = record::make(&key, version, op.value_len, op.fields);
            Request::Insert { key, value }
        }
        OpKind::Update | OpKind::ReadModifyWrite => {
            let value = record::make(&key, version, op.value_len, op.fields);
            Request::Update { key, value }
        }
        OpKind::Delete => Request::Delete { key },
        OpKind::Scan => Request::Scan {
            start: key,
            count: op.scan_len,
        },
    }
}

/// The write that follows the read of a read-modify-write or of a one-field update:
/// the whole record at `version`, or the record read with its field rewritten;
/// `None` for a one-field write of a key that has no record.
fn write_after_read(
    key: &[u8],
    sent: &Sent,
    read: &kvapi::Result<Reply>,
    version: u64,
) -> Option<Request> {
    let value = match sent.field {
        None => record::make(key, version, sent.value_len, sent.fields),
        Some(f) => {
            let Ok(Reply::Value(Some(old))) = read else {
                return None;
            };
            let mut v = Vec::with_capacity(old.len());
            record::update_field_into(key, old, f, version, sent.fields, &mut v);
            v
        }
    };
    Some(Request::Update {
        key: key.to_vec(),
        value,
    })
}

/// The injector's state.
struct Injector<'e> {
    a: &'e dyn AsyncEngine,
    /// This thread's completion queue (the window's slots are its slots).
    queue: &'static DoneQueue<Done>,
    rec: Recorder,
    in_flight: usize,
    versions: Versions,
    arrivals: Option<Arrivals>,
    /// No more operations to submit (the source ran out, or the phase is over).
    exhausted: bool,
    /// An operation whose scheduled time had not come when the window had room.
    pending: Option<Op>,
    /// One per request that can be in flight, indexed by `Done::slot`.
    slots: Vec<Sent>,
    /// The slots not in flight.
    free: Vec<u32>,
}

impl Injector<'_> {
    /// Submits the request of `slot`; its completion is queued for the injector with
    /// the time the engine's thread finished it. One allocation: the completion.
    #[expect(
        unsafe_code,
        reason = "a completion is pushed into its slot's cell of the queue (`DoneQueue::push`)"
    )]
    fn submit(&mut self, slot: u32, req: Request) {
        let q = self.queue;
        self.in_flight += 1;
        self.a.submit(
            req,
            Box::new(move |result| {
                let done = Done {
                    slot,
                    end: Instant::now(),
                    result,
                };
                // SAFETY: `slot` is one of the window's, below the queue's slots; it
                // has this one request in flight (an engine runs a completion once),
                // and the injector submits from it again only after it took this
                // completion.
                unsafe { q.push(slot, done) };
            }),
        );
    }

    /// Submits operations until `qd` are in flight, the source runs out, the phase is
    /// over, or the next one is not due yet while others are in flight.
    fn fill_window(&mut self, ops: &mut dyn Iterator<Item = Op>, qd: usize, m: &Measured<'_>) {
        let mut since_clock = CLOCK_EVERY;
        while self.in_flight < qd && !self.exhausted {
            if since_clock >= CLOCK_EVERY {
                since_clock = 0;
                if m.clock.over() {
                    self.exhausted = true;
                    break;
                }
            }
            since_clock += 1;
            let Some(op) = self.pending.take().or_else(|| ops.next()) else {
                self.exhausted = true;
                break;
            };
            // a trace's own schedule, else the target rate's
            let intended = match op.at {
                Some(at) => Some(m.clock.start + at),
                None => self.arrivals.as_ref().map(Arrivals::peek),
            };
            if let Some(due) = intended
                && due > Instant::now()
            {
                if self.in_flight > 0 {
                    self.pending = Some(op);
                    break; // handle completions while waiting
                }
                std::thread::sleep(due - Instant::now());
            }
            if let Some(a) = self.arrivals.as_mut() {
                a.advance();
            }
            // fewer than `qd` in flight: a slot is free
            let Some(slot) = self.free.pop() else { break };
            let rmw = op.kind == OpKind::ReadModifyWrite;
            let stage = if rmw {
                Stage::RmwRead
            } else if op.kind == OpKind::Update && op.field.is_some() {
                Stage::FieldRead
            } else {
                Stage::Single(op.kind)
            };
            let s = &mut self.slots[slot as usize];
            s.stage = stage;
            s.keynum = op.keynum;
            s.key.clear();
            s.key.extend_from_slice(op.key.as_bytes());
            s.value_len = op.value_len;
            s.fields = op.fields;
            s.field = op.field;
            s.intended = intended;
            let req = request_for(op, self.versions.take(), rmw);
            self.slots[slot as usize].start = Instant::now();
            self.submit(slot, req);
        }
    }

    /// Records a completed request; the read of a read-modify-write is followed by
    /// its update (from the same slot).
    fn complete(&mut self, done: Done, plan: &Plan<'_>, m: &Measured<'_>) {
        self.in_flight -= 1;
        let Done { slot, end, result } = done;
        let i = slot as usize;
        // the slot's key is taken out while the recorder and the engine are used, and
        // put back before the slot is reused
        let key = std::mem::take(&mut self.slots[i].key);
        let next = self.finish_stage(i, &key, end, result, plan, m);
        self.slots[i].key = key;
        match next {
            Some(req) => self.submit(slot, req),
            None => self.free.push(slot),
        }
    }

    /// Records the stage of slot `i` that ended at `end`; the request that continues
    /// the operation, if any (the slot's stage is then already the next one).
    fn finish_stage(
        &mut self,
        i: usize,
        key: &[u8],
        end: Instant,
        result: kvapi::Result<Reply>,
        plan: &Plan<'_>,
        m: &Measured<'_>,
    ) -> Option<Request> {
        let sent = &self.slots[i];
        let (stage, intended, start) = (sent.stage, sent.intended, sent.start);
        let check = Verify {
            on: plan.verify,
            fields: sent.fields,
        };
        let (outcome, read) = reply_outcome(key, &result, check);
        let written = (key.len() + sent.value_len) as u64;
        match stage {
            Stage::Single(kind) => {
                self.rec.record(kind, intended, start, end, outcome);
                let w = if matches!(kind, OpKind::Insert | OpKind::Update) {
                    written
                } else {
                    0
                };
                self.rec.bytes(end, read, w);
                if kind == OpKind::Insert
                    && let Some(acks) = plan.acks
                    && let Err(e) = acks.acknowledge(self.slots[i].keynum)
                {
                    m.ctx.notice(&e);
                    m.clock.stop();
                }
                None
            }
            Stage::RmwRead => {
                self.rec
                    .record_part(OpKind::Read, intended, start, end, outcome.clone());
                self.rec.bytes(end, read, 0);
                let version = self.versions.take();
                let Some(req) = write_after_read(key, &self.slots[i], &result, version) else {
                    // one field of a key with no record: nothing to write
                    self.rec
                        .record_part(OpKind::Update, None, end, end, Outcome::NotFound);
                    self.rec.record(
                        OpKind::ReadModifyWrite,
                        intended,
                        start,
                        end,
                        Outcome::NotFound,
                    );
                    return None;
                };
                // the whole operation counts from the read's start
                self.slots[i].stage = Stage::RmwUpdate {
                    read_done: Instant::now(),
                };
                Some(req)
            }
            Stage::FieldRead => {
                let version = self.versions.take();
                let failed = !matches!(outcome, Outcome::Ok | Outcome::NotFound);
                match write_after_read(key, &self.slots[i], &result, version) {
                    Some(req) if !failed => {
                        self.rec.bytes(end, read, 0);
                        self.slots[i].stage = Stage::FieldWrite;
                        Some(req)
                    }
                    // a failed read, or a key with no record: the update ends here
                    _ => {
                        let o = if failed { outcome } else { Outcome::NotFound };
                        self.rec.record(OpKind::Update, intended, start, end, o);
                        None
                    }
                }
            }
            Stage::FieldWrite => {
                self.rec
                    .record(OpKind::Update, intended, start, end, outcome);
                self.rec.bytes(end, 0, written);
                None
            }
            Stage::RmwUpdate { read_done } => {
                self.rec
                    .record_part(OpKind::Update, None, read_done, end, outcome.clone());
                self.rec.bytes(end, 0, written);
                self.rec
                    .record(OpKind::ReadModifyWrite, intended, start, end, outcome);
                None
            }
        }
    }
}

#[cfg(test)]
#[path = "injector_tests.rs"]
mod tests;
