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

use super::driver_cost::DriverCpu;
use crate::error::{Error, Result};
use crate::workload::Op;
use std::sync::mpsc::{Receiver, sync_channel};

/// Operations per batch.
const BATCH: usize = 1024;
/// Batches the generator may be ahead of the injector.
const AHEAD: usize = 2;

/// The operations of a generator thread, batch after batch.
pub(super) struct Ahead {
    rx: Receiver<Vec<Op>>,
    batch: std::vec::IntoIter<Op>,
}

impl Iterator for Ahead {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        loop {
            if let Some(op) = self.batch.next() {
                return Some(op);
            }
            // the generator's end (its channel closed) is the end of the operations
            self.batch = self.rx.recv().ok()?.into_iter();
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
        std::thread::Builder::new()
            .name("ops-ahead".into())
            .spawn_scoped(s, move || {
                cpu.track(|| {
                    loop {
                        let mut batch = Vec::with_capacity(BATCH);
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
            batch: Vec::new().into_iter(),
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
