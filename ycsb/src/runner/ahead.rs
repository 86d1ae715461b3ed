//! Operations generated ahead: a thread of its own draws the injector's operations
//! (keys, distributions, value sizes) in batches and hands each batch over whole, so
//! that the injector only submits and records.
//!
//! On the null engine, drawing an operation (YCSB's zipfian with its `pow`, the key's
//! hash and decimal formatting) is about a third of the injector's time; generated
//! inline it would cap the asynchronous path below the closed loop, whose client
//! thread pays the same cost but no submission machinery. The hand-over costs one
//! channel operation per batch (a wake-up only when one side waited), and the thread
//! stays at most [`AHEAD`] batches ahead, so its CPU time is what the injector would
//! have spent, moved, not added. What is drawn ahead and never submitted (the phase
//! ended) is dropped; the run phase's operation count counts operations drawn, as the
//! closed loop's does.
//!
//! Memory is freed by the thread that allocated it: the injector takes a copy of each
//! operation (its key allocated on the injector's thread) and sends each used batch
//! back, so that the generator frees the keys it drew and reuses the batch. With the
//! keys moved across instead, every operation cost a free into another thread's heap
//! (mimalloc's remote free, and its collection on the generator's side): 13% of the
//! driver's CPU time on the null engine at `--qd 64`, where YCSB C went from 3.0M to
//! 5.3M operations per second with the change (`scripts/driver-bench`).

use super::driver_cost::DriverCpu;
use crate::error::{Error, Result};
use crate::workload::Op;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Operations per batch.
const BATCH: usize = 4096;
/// Batches the generator may be ahead of the injector.
const AHEAD: usize = 2;

/// The operations of a generator thread, batch after batch.
pub(super) struct Ahead {
    rx: Receiver<Vec<Op>>,
    /// Used batches, back to the generator (which frees their keys).
    back: SyncSender<Vec<Op>>,
    batch: Vec<Op>,
    /// The next operation of `batch`.
    at: usize,
}

impl Iterator for Ahead {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        loop {
            if let Some(op) = self.batch.get(self.at) {
                self.at += 1;
                return Some(op.clone());
            }
            // the generator's end (its channel closed) is the end of the operations
            let next = self.rx.recv().ok()?;
            let used = std::mem::replace(&mut self.batch, next);
            self.at = 0;
            // if the generator is not taking them back, the batch is freed here
            let _ = self.back.try_send(used);
        }
    }
}

/// Runs `body` with the operations of `ops`, drawn ahead on a thread of its own.
/// The thread ends when `ops` runs out or when `body` returns (whatever it had drawn
/// ahead is dropped). Fails only if the thread cannot be started.
pub(super) fn with_ops_ahead<R>(
    ops: &mut (dyn Iterator<Item = Op> + Send),
    cpu: &DriverCpu,
    body: impl FnOnce(&mut Ahead) -> R,
) -> Result<R> {
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<Vec<Op>>(AHEAD);
        let (back, returned) = sync_channel::<Vec<Op>>(AHEAD + 2);
        std::thread::Builder::new()
            .name("ops-ahead".into())
            .spawn_scoped(s, move || {
                cpu.track(|| {
                    loop {
                        let mut batch = match returned.try_recv() {
                            Ok(mut used) => {
                                used.clear(); // the keys freed where they were made
                                used
                            }
                            Err(_) => Vec::with_capacity(BATCH),
                        };
                        batch.extend((&mut *ops).take(BATCH));
                        let last = batch.len() < BATCH;
                        // the injector is gone: the phase is over
                        if batch.is_empty() || tx.send(batch).is_err() || last {
                            break;
                        }
                    }
                })
            })
            .map_err(|e| Error::io("starting the thread that draws operations ahead", e))?;
        let mut ahead = Ahead {
            rx,
            back,
            batch: Vec::new(),
            at: 0,
        };
        // `ahead` (the receiver) is dropped when `body` returns, so that a generator
        // blocked on a full channel ends before the scope joins it
        Ok(body(&mut ahead))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::OpKind;

    fn op(i: usize) -> Op {
        Op {
            kind: OpKind::Read,
            keynum: i as i64,
            key: format!("user{i}"),
            value_len: 0,
            scan_len: 0,
            at: None,
            fields: 1,
            field: None,
        }
    }

    #[test]
    fn every_operation_comes_through_once_in_order() {
        for n in [0, 1, BATCH - 1, BATCH, BATCH + 1, 5 * BATCH + 17] {
            let mut src = (0..n).map(op);
            let got: Vec<i64> = with_ops_ahead(&mut src, &DriverCpu::default(), |ahead| {
                ahead.map(|o| o.keynum).collect()
            })
            .unwrap();
            assert_eq!(got, (0..n as i64).collect::<Vec<_>>(), "n = {n}");
        }
    }

    #[test]
    fn stopping_early_ends_the_generator() {
        // an endless source: the generator must end when the injector stops taking
        let mut src = (0..).map(op);
        let first: Vec<i64> = with_ops_ahead(&mut src, &DriverCpu::default(), |ahead| {
            ahead.take(10).map(|o| o.keynum).collect()
        })
        .unwrap();
        assert_eq!(first, (0..10).collect::<Vec<_>>());
    }
}
