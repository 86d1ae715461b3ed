//! The worker's event loop: take requests in, step each as far as it can go, hand
//! queued I/O to the backend, reap completions as they arrive, and at close finish
//! every request, sync and record the clean close.

use super::op::Stage;
use super::state::Worker;
use crate::request::{Msg, WReq};
use kvapi::{Error, Reply, Result};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::{Duration, Instant};

/// How long an idle worker sleeps at most while its page cache's helper is still
/// making frames resident (`PageCache::fill_beside`): each turn takes what the
/// helper has made, gives back what a fallen limit no longer allows and publishes the
/// memory gauges, so that they do not wait for the first request. Before, an open
/// followed by no request reported 8.5 MiB of a 24 MiB budget while the process held
/// 25.5 MiB more than before the open (the `memory_budget` test, 2026-12-06).
const FILL_TICK: Duration = Duration::from_millis(10);

impl Worker {
    /// The event loop; returns when closed (after finishing every request).
    pub(crate) fn run(mut self, rx: Receiver<Msg>) {
        // Requests a worker takes in at once: 4 x the queue depth, as the C code's
        // MAX_NB_PENDING_CALLBACKS_PER_WORKER, so that with cache hits among them the
        // worker still has `queue_depth` I/Os to keep in flight. The rest wait in the
        // bounded channel.
        let max_active = (self.queue.depth() * 4).max(64);
        let mut closing: Option<Sender<Result<()>>> = None;
        let mut disconnected = false;
        loop {
            // The page cache gives way to the index as it grows (memory budget).
            self.fit_memory();
            let mut got = false;
            if closing.is_none() && !disconnected {
                if self.ops.active() == 0 && self.queue.is_idle() {
                    let t = Instant::now();
                    self.queue.end_turn(t, &self.stats);
                    let r = if self.cache.filling() {
                        rx.recv_timeout(FILL_TICK)
                    } else {
                        rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
                    };
                    let back = Instant::now();
                    self.queue.begin_turn(back);
                    if !matches!(r, Err(RecvTimeoutError::Disconnected)) {
                        self.stats
                            .idle_ns
                            .fetch_add((back - t).as_nanos() as u64, Relaxed);
                    }
                    match r {
                        Ok(m) => {
                            got = true;
                            self.handle(m, &mut closing);
                        }
                        Err(RecvTimeoutError::Timeout) => continue,
                        Err(RecvTimeoutError::Disconnected) => disconnected = true,
                    }
                }
                while closing.is_none() && self.ops.active() < max_active {
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
            self.submit_queued();
            if self.queue.inflight() > 0 {
                let mut wait =
                    !got || self.ops.active() >= max_active || closing.is_some() || disconnected;
                // Sleeping until a completion, the worker would leave the requests
                // sent meanwhile waiting for it, cache hits among them: it asks to be
                // woken by them too (`crate::wake`), and looks at its queue once more
                // first. Not when it takes no more requests now (at `max_active`, or
                // closing). Arming always cost no CPU that showed where the disk is
                // the limit, and shortened YCSB A's tail at 64 in flight
                // (results/kvell-4m/measurements.md).
                let armed = match &self.wake {
                    Some(w)
                        if wait
                            && closing.is_none()
                            && !disconnected
                            && self.ops.active() < max_active =>
                    {
                        w.arm();
                        true
                    }
                    _ => false,
                };
                if armed {
                    match rx.try_recv() {
                        Ok(m) => {
                            wait = false;
                            self.handle(m, &mut closing);
                        }
                        Err(TryRecvError::Empty) => {}
                        Err(TryRecvError::Disconnected) => {
                            wait = false;
                            disconnected = true;
                        }
                    }
                }
                let mut done = self
                    .queue
                    .reap(self.io.as_mut(), wait, &self.stats, &self.poison);
                if armed && let Some(w) = &self.wake {
                    w.disarm();
                }
                self.queue.completed(done.len());
                // The I/O already queued goes to the device as soon as slots are free,
                // before the completions' CPU work (parsing, checksums, replies), so
                // that the disk keeps `queue_depth` I/Os rather than waiting for it.
                // Safe: a queued I/O's unit has no other I/O in flight (`units.rs`),
                // so handling these completions first could not change it.
                if !done.is_empty() && self.queue.has_queued() {
                    self.submit_queued();
                }
                for d in done.drain(..) {
                    self.complete(d);
                }
                self.queue.reaped(done);
            } else if self.queue.has_queued() {
                continue;
            }
            if (closing.is_some() || disconnected) && self.ops.active() == 0 && self.queue.is_idle()
            {
                let r = self.close();
                if let Some(tx) = closing {
                    let _ = tx.send(r);
                }
                return;
            }
        }
    }

    /// Hands the queued I/O to the backend while under the queue depth.
    fn submit_queued(&mut self) {
        self.queue.submit(
            self.io.as_mut(),
            &mut self.units,
            &self.slabs,
            &self.stats,
            &self.poison,
        );
    }

    /// Every request is finished: syncs every slab and, if all is well, records
    /// where each slab ends, so the next open can tell lost pages from never-written
    /// ones.
    fn close(&mut self) -> Result<()> {
        let mut r = Ok(());
        for s in &self.slabs {
            if let Err(e) = self.io.sync(s.file) {
                r = Err(Error::io(format!("syncing {}", s.path.display()), e));
            }
        }
        if r.is_ok() && self.poison.check().is_ok() {
            let ends: Vec<u64> = self.slabs.iter().map(|s| s.next_slot).collect();
            r = self.clean.mark_closed(self.io.as_mut(), &ends);
        }
        r
    }

    fn handle(&mut self, m: Msg, closing: &mut Option<Sender<Result<()>>>) {
        match m {
            Msg::Close(tx) => *closing = Some(tx),
            Msg::Ops(ops) => {
                // A scan's reads: their pages' lookups brought in together first.
                for (_, at, _) in &ops {
                    if let Some(at) = at {
                        self.cache.prefetch_bucket(at.unit());
                    }
                }
                for (_, at, _) in &ops {
                    if let Some(at) = at {
                        self.cache.prefetch_frame(at.unit());
                    }
                }
                for (req, at, done) in ops {
                    let id = self.ops.admit(req, at, done);
                    self.step(id);
                }
            }
            Msg::Op(req, done) => {
                let id = self.ops.admit(req, None, done);
                self.step(id);
            }
        }
    }

    /// Advances a request as far as it can go without waiting.
    pub(super) fn step(&mut self, id: usize) {
        let stage = std::mem::replace(&mut self.ops.get_mut(id).stage, Stage::Start);
        match stage {
            Stage::Start => {
                match self.ops.get(id).req {
                    WReq::Get(_) => self.get(id),
                    WReq::Put(..) => self.start_put(id),
                    WReq::Delete(_) => {
                        if self.acquire_key(id, false) {
                            self.start_delete(id)
                        }
                        // else waits for the key's earlier writes (`Keys::release`)
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
            s @ (Stage::Written { .. } | Stage::Freed { .. }) => self.ops.get_mut(id).stage = s,
        }
    }

    pub(super) fn run_deferred(&mut self) {
        while !self.deferred.is_empty() {
            for id in std::mem::take(&mut self.deferred) {
                self.step(id);
            }
        }
    }

    /// Answers request `id` and lets go of it: its key, if it held one, passes to the
    /// next write waiting for it, which is started from the deferred list (not from
    /// here: `finish` runs inside completion loops).
    pub(super) fn finish(&mut self, id: usize, r: Result<Reply>) {
        if let Some(mut op) = self.ops.retire(id) {
            let hold = op.hold;
            if let Some(done) = op.done.take() {
                done.call_ran(r, op.req);
            }
            if let Some((next, hold)) = self.keys.release(hold) {
                self.ops.get_mut(next).hold = hold;
                self.deferred.push(next);
            }
        }
    }
}
