//! The asynchronous driver: one injector keeps up to `qd` requests in flight. It
//! submits until the window is full, then handles completions (pushed by the
//! engine's threads into a [`DoneQueue`]) and refills. With a target rate (or a timed
//! trace), a request is not submitted before its scheduled time, and its intended
//! latency counts from that time.

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

/// Drives `ops` through the engine's asynchronous path (native, or a thread pool of
/// `qd` threads) until they run out or the phase is over.
pub(super) fn drive(
    engine: Arc<dyn Engine>,
    ops: &mut dyn Iterator<Item = Op>,
    plan: &Plan<'_>,
    m: &Measured<'_>,
) -> Result<Recorder> {
    let (a, _) = kvapi::async_path(engine, plan.qd)
        .map_err(|e| Error::engine("starting the asynchronous path", e))?;
    let mut inj = Injector {
        a: a.as_ref(),
        queue: Arc::new(DoneQueue::default()),
        rec: Recorder::new(m.slot(), m.clock.measure_from),
        in_flight: 0,
        versions: Versions::new(usize::MAX >> 24),
        arrivals: plan
            .target
            .map(|(r, poisson)| Arrivals::new(m.clock.start, r, poisson, 0, 0)),
        exhausted: false,
        pending: None,
    };
    // The injector is woken once an eighth of the queue depth has completed (see
    // `donequeue`): enough to refill in batches, few enough to keep the engine busy.
    let refill = (plan.qd / 8).max(1);
    let mut batch: Vec<Done> = Vec::new();
    loop {
        inj.fill_window(ops, plan.qd, m);
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
    Ok(inj.rec)
}

/// Where a request is in its operation.
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

/// A request as submitted: what the injector needs back with its reply.
struct Sent {
    stage: Stage,
    keynum: i64,
    key: String,
    value_len: usize,
    fields: usize,
    field: Option<usize>,
    intended: Option<Instant>,
    start: Instant,
}

/// A completed request, as the engine's thread hands it to the injector.
struct Done {
    sent: Sent,
    end: Instant,
    result: kvapi::Result<Reply>,
}

fn request_for(op: &Op, version: u64, rmw_read: bool) -> Request {
    let key = op.key.as_bytes().to_vec();
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
fn write_after_read(sent: &Sent, read: &kvapi::Result<Reply>, version: u64) -> Option<Request> {
    let key = sent.key.as_bytes().to_vec();
    let value = match sent.field {
        None => record::make(&key, version, sent.value_len, sent.fields),
        Some(f) => {
            let Ok(Reply::Value(Some(old))) = read else {
                return None;
            };
            let mut v = Vec::with_capacity(old.len());
            record::update_field_into(&key, old, f, version, sent.fields, &mut v);
            v
        }
    };
    Some(Request::Update { key, value })
}

/// The injector's state.
struct Injector<'e> {
    a: &'e dyn AsyncEngine,
    queue: Arc<DoneQueue<Done>>,
    rec: Recorder,
    in_flight: usize,
    versions: Versions,
    arrivals: Option<Arrivals>,
    /// No more operations to submit (the source ran out, or the phase is over).
    exhausted: bool,
    /// An operation whose scheduled time had not come when the window had room.
    pending: Option<Op>,
}

impl Injector<'_> {
    /// Submits a request; its completion is queued for the injector with the time
    /// the engine's thread finished it.
    fn submit(&self, req: Request, sent: Sent) {
        let tx = self.queue.clone();
        self.a.submit(
            req,
            Box::new(move |result| {
                tx.push(Done {
                    sent,
                    end: Instant::now(),
                    result,
                });
            }),
        );
    }

    /// Submits operations until `qd` are in flight, the source runs out, the phase is
    /// over, or the next one is not due yet while others are in flight.
    fn fill_window(&mut self, ops: &mut dyn Iterator<Item = Op>, qd: usize, m: &Measured<'_>) {
        while self.in_flight < qd && !self.exhausted {
            if m.clock.over() {
                self.exhausted = true;
                break;
            }
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
            let rmw = op.kind == OpKind::ReadModifyWrite;
            let stage = if rmw {
                Stage::RmwRead
            } else if op.kind == OpKind::Update && op.field.is_some() {
                Stage::FieldRead
            } else {
                Stage::Single(op.kind)
            };
            let req = request_for(&op, self.versions.take(), rmw);
            let sent = Sent {
                stage,
                keynum: op.keynum,
                key: op.key.clone(),
                value_len: op.value_len,
                fields: op.fields,
                field: op.field,
                intended,
                start: Instant::now(),
            };
            self.submit(req, sent);
            self.in_flight += 1;
        }
    }

    /// Records a completed request; the read of a read-modify-write is followed by
    /// its update.
    fn complete(&mut self, done: Done, plan: &Plan<'_>, m: &Measured<'_>) {
        self.in_flight -= 1;
        let Done { sent, end, result } = done;
        let key = sent.key.as_bytes();
        let check = Verify {
            on: plan.verify,
            fields: sent.fields,
        };
        let (outcome, read) = reply_outcome(key, &result, check);
        let written = (key.len() + sent.value_len) as u64;
        match sent.stage {
            Stage::Single(kind) => {
                self.rec
                    .record(kind, sent.intended, sent.start, end, outcome);
                let w = if matches!(kind, OpKind::Insert | OpKind::Update) {
                    written
                } else {
                    0
                };
                self.rec.bytes(end, read, w);
                if kind == OpKind::Insert
                    && let Some(acks) = plan.acks
                    && let Err(e) = acks.acknowledge(sent.keynum)
                {
                    m.ctx.notice(&e);
                    m.clock.stop();
                }
            }
            Stage::RmwRead => {
                self.rec.record_part(
                    OpKind::Read,
                    sent.intended,
                    sent.start,
                    end,
                    outcome.clone(),
                );
                self.rec.bytes(end, read, 0);
                let version = self.versions.take();
                let Some(req) = write_after_read(&sent, &result, version) else {
                    // one field of a key with no record: nothing to write
                    self.rec
                        .record_part(OpKind::Update, None, end, end, Outcome::NotFound);
                    self.rec.record(
                        OpKind::ReadModifyWrite,
                        sent.intended,
                        sent.start,
                        end,
                        Outcome::NotFound,
                    );
                    return;
                };
                let next = Sent {
                    stage: Stage::RmwUpdate {
                        read_done: Instant::now(),
                    },
                    // the whole operation counts from the read's start
                    ..sent
                };
                self.submit(req, next);
                self.in_flight += 1;
            }
            Stage::FieldRead => {
                let version = self.versions.take();
                let failed = !matches!(outcome, Outcome::Ok | Outcome::NotFound);
                match write_after_read(&sent, &result, version) {
                    Some(req) if !failed => {
                        self.rec.bytes(end, read, 0);
                        let next = Sent {
                            stage: Stage::FieldWrite,
                            ..sent
                        };
                        self.submit(req, next);
                        self.in_flight += 1;
                    }
                    // a failed read, or a key with no record: the update ends here
                    _ => {
                        let o = if failed { outcome } else { Outcome::NotFound };
                        self.rec
                            .record(OpKind::Update, sent.intended, sent.start, end, o);
                    }
                }
            }
            Stage::FieldWrite => {
                self.rec
                    .record(OpKind::Update, sent.intended, sent.start, end, outcome);
                self.rec.bytes(end, 0, written);
            }
            Stage::RmwUpdate { read_done } => {
                self.rec
                    .record_part(OpKind::Update, None, read_done, end, outcome.clone());
                self.rec.bytes(end, 0, written);
                self.rec.record(
                    OpKind::ReadModifyWrite,
                    sent.intended,
                    sent.start,
                    end,
                    outcome,
                );
            }
        }
    }
}
