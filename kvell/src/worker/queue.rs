//! The worker's I/O queue, between its units and the backend's ring: units whose
//! I/O is ready wait here in order; `submit` hands them to the backend in batches of
//! at most `batch` per system call while fewer than `queue_depth` are in flight, and
//! `reap` takes the completions that have arrived (waiting for one only when the
//! worker has nothing else to do). The C code waits for a whole batch
//! (`io_getevents(min_nr = batch)`), idling the disk.
//!
//! Writes of consecutive pages of one slab queued one behind the other (appends) leave
//! as one I/O of up to `RUN` pages, copied into a pooled run buffer: one request
//! instead of one per page, which the block layer would merge anyway but only after
//! the kernel's per-I/O cost for each page. The completion is split back per page
//! (`complete.rs`), so each page still has one I/O in flight at a time; it counts as
//! one I/O against `queue_depth`.

use super::units::Units;
use crate::io::buf::HUGE_PAGE;
use crate::io::{Backend, BufPool, IoDone, IoKind, IoReq, PAGE, RUN};
use crate::poison::Poison;
use crate::slab::{self, Slab, Unit};
use crate::stats::Stats;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

pub(super) struct IoQueue {
    /// Units whose I/O is ready to hand to the backend, in order, each with the start
    /// of the turn that queued it.
    to_submit: VecDeque<(Unit, IoKind, Instant)>,
    /// I/Os handed to the backend and not yet reaped.
    inflight: usize,
    queue_depth: usize,
    batch: usize,
    /// Page and run buffers, reused so the hot path does not allocate.
    pub(super) pool: BufPool,
    /// The completions vector, reused between reaps.
    completions: Vec<IoDone>,
    /// When the worker's turn began: it came back from a reap, or from waiting for a
    /// request (`Stats::slowest_turn`).
    turn: Instant,
}

/// Run buffers cut from a worker's arena (the pool keeps up to 8).
const ARENA_RUNS: usize = 8;

/// A worker's buffer pool, its first buffers cut from one arena for the backend to
/// register (`Backend::register`): 8 run buffers (2 MiB) and at least four page
/// buffers per I/O the queue keeps in flight (a get's read, a write's prepared
/// image), as many as fill the arena's last 2 MiB page: 512 at a queue depth of 64,
/// 4 MiB in all, resident from the start and counted as the pool's. None (a pool
/// without an arena, its buffers from the heap as they are needed) under a worker's
/// budget below 64 times that, where 4 MiB would be felt: 1/64 of the budget, the
/// rule of recovery's read-ahead (`recovery::piece_len`).
pub(crate) fn buffer_pool(queue_depth: usize, budget: Option<u64>) -> BufPool {
    let runs = ARENA_RUNS * RUN * PAGE;
    let bytes = (4 * queue_depth.max(1) * PAGE + runs).next_multiple_of(HUGE_PAGE);
    match budget {
        Some(b) if b < 64 * bytes as u64 => BufPool::default(),
        _ => BufPool::with_arena((bytes - runs) / PAGE, ARENA_RUNS),
    }
}

impl IoQueue {
    pub(super) fn new(queue_depth: usize, batch: usize, pool: BufPool) -> IoQueue {
        IoQueue {
            to_submit: VecDeque::new(),
            inflight: 0,
            queue_depth: queue_depth.max(1),
            batch: batch.max(1),
            pool,
            completions: Vec::new(),
            turn: Instant::now(),
        }
    }

    /// The worker's turn ends at `now`: it is about to wait for a request.
    pub(super) fn end_turn(&self, now: Instant, stats: &Stats) {
        stats
            .slowest_turn
            .note(now.saturating_duration_since(self.turn));
    }

    /// A turn begins at `now`: the worker came back from waiting for a request.
    pub(super) fn begin_turn(&mut self, now: Instant) {
        self.turn = now;
    }

    pub(super) fn depth(&self) -> usize {
        self.queue_depth
    }

    /// Queues the I/O of a unit (a read, or the write of its prepared image).
    pub(super) fn push(&mut self, unit: Unit, kind: IoKind) {
        self.to_submit.push_back((unit, kind, self.turn));
    }

    pub(super) fn inflight(&self) -> usize {
        self.inflight
    }

    /// I/O queued and not yet handed to the backend.
    pub(super) fn has_queued(&self) -> bool {
        !self.to_submit.is_empty()
    }

    /// Nothing queued, nothing in flight.
    pub(super) fn is_idle(&self) -> bool {
        self.inflight == 0 && self.to_submit.is_empty()
    }

    /// Hands queued I/O to the backend while under the queue depth, in batches.
    pub(super) fn submit(
        &mut self,
        io: &mut dyn Backend,
        units: &mut Units,
        slabs: &[Slab],
        stats: &Stats,
        poison: &Poison,
    ) {
        while self.inflight < self.queue_depth && !self.to_submit.is_empty() {
            let t = Instant::now();
            let mut n = 0;
            while n < self.batch && self.inflight < self.queue_depth {
                let Some((unit, kind, queued)) = self.to_submit.pop_front() else {
                    break;
                };
                // Queued by an earlier turn: left behind the queue depth.
                if queued < self.turn {
                    stats
                        .slowest_queued
                        .note(t.saturating_duration_since(queued));
                }
                let class = unit.class();
                let mut buf = match kind {
                    IoKind::Read => {
                        if slab::is_large(class) {
                            self.pool.large(slab::unit_len(class))
                        } else {
                            self.pool.get(PAGE)
                        }
                    }
                    IoKind::Write => units.take_prepared(unit),
                };
                // Writes of the following pages of the same slab, queued right
                // behind this one (appends), leave in the same I/O.
                if kind == IoKind::Write && !slab::is_large(class) {
                    let next = |q: &VecDeque<(Unit, IoKind, Instant)>, pages: usize| {
                        pages < RUN
                            && q.front().is_some_and(|&(u, k, _)| {
                                k == IoKind::Write
                                    && u.class() == class
                                    && u.n() == unit.n() + pages as u64
                            })
                    };
                    if next(&self.to_submit, 1) {
                        let mut run = self.pool.get_run();
                        run[..PAGE].copy_from_slice(&buf[..PAGE]);
                        self.pool.put(buf);
                        let mut pages = 1;
                        while next(&self.to_submit, pages) {
                            let Some((u, _, _)) = self.to_submit.pop_front() else {
                                break;
                            };
                            let b = units.take_prepared(u);
                            run[pages * PAGE..(pages + 1) * PAGE].copy_from_slice(&b[..PAGE]);
                            self.pool.put(b);
                            pages += 1;
                        }
                        run.set_len(pages * PAGE);
                        buf = run;
                    }
                }
                let req = IoReq {
                    file: slabs[class].file,
                    offset: unit.file_offset(),
                    kind,
                    buf,
                    tag: unit.0,
                    issued: t,
                };
                match io.push(req) {
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
                                units.restore_prepared(u, b);
                                self.to_submit.push_front((u, kind, queued));
                            }
                            self.pool.put(req.buf);
                        } else {
                            self.to_submit.push_front((unit, kind, queued));
                        }
                        break;
                    }
                }
            }
            if n == 0 {
                break;
            }
            if let Err(e) = io.submit() {
                poison.set(format!("submitting I/O: {e}"));
            }
            stats
                .submit_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
            stats.submits.fetch_add(1, Relaxed);
        }
    }

    /// The completions that have arrived; with `wait`, blocks until one does. Each
    /// completion handled is `completed`; the vector goes back with `reaped`. Ends
    /// the worker's turn and begins the next; notes the longest turn, wait and I/O.
    pub(super) fn reap(
        &mut self,
        io: &mut dyn Backend,
        wait: bool,
        stats: &Stats,
        poison: &Poison,
    ) -> Vec<IoDone> {
        let t = Instant::now();
        self.end_turn(t, stats);
        let mut done = std::mem::take(&mut self.completions);
        if let Err(e) = io.reap(wait, &mut done) {
            poison.set(format!("reaping I/O completions: {e}"));
        }
        let end = Instant::now();
        let waited = end.saturating_duration_since(t);
        stats.wait_ns.fetch_add(waited.as_nanos() as u64, Relaxed);
        if wait {
            stats.slowest_wait.note(waited);
        }
        if let Some(oldest) = done.iter().map(|d| d.issued).min() {
            stats.slowest_io.note(end.saturating_duration_since(oldest));
        }
        self.turn = end;
        done
    }

    /// `n` I/Os in flight completed.
    pub(super) fn completed(&mut self, n: usize) {
        self.inflight -= n;
    }

    /// The completions vector, drained, for the next reap.
    pub(super) fn reaped(&mut self, done: Vec<IoDone>) {
        self.completions = done;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arena_is_made_where_the_budget_can_carry_it() {
        let bytes = |p: &BufPool| p.arena().map(|a| a.span().1);
        // queue depth 64: 512 page buffers and 8 runs, 4 MiB
        assert_eq!(bytes(&buffer_pool(64, None)), Some(4 << 20));
        // the C-code configuration: 682 MB a worker
        assert_eq!(bytes(&buffer_pool(64, Some(682_666_666))), Some(4 << 20));
        // under 64 x 4 MiB a worker, none
        assert_eq!(bytes(&buffer_pool(64, Some(255 << 20))), None);
        assert_eq!(bytes(&buffer_pool(64, Some(12 << 20))), None);
        // a deep queue takes more page buffers
        assert_eq!(bytes(&buffer_pool(1024, None)), Some(18 << 20));
    }
}
