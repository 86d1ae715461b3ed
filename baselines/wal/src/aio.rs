//! The native asynchronous path: `submit` applies and reserves a write at once (after
//! admission, which is its back-pressure) and files the completion under the
//! transaction's end position; the completer thread runs completions as the
//! committer's group commits make transactions complete, in id order. Reads are
//! answered inside `submit` (the image is in memory; a large value is one pread).
//! Large values take the data-first path here, so no request waits on a data write
//! after `submit` returns.

use crate::engine::{Op, Shared, WalEngine};
use kvapi::{AsyncEngine, Completion, Error, Reply, Request};
use std::sync::Arc;
use std::time::Duration;

pub struct AsyncWal {
    pub engine: Arc<WalEngine>,
}

impl AsyncEngine for AsyncWal {
    fn submit(&self, request: Request, done: Completion) {
        let sh = self.engine.shared();
        let (key, op) = match &request {
            Request::Get { key } => return done(sh.get(key).map(Reply::Value)),
            Request::Scan { start, count } => {
                return done(sh.scan(start, *count).map(Reply::Pairs));
            }
            Request::Insert { key, value } | Request::Update { key, value } => {
                (key, Op::Put(value))
            }
            Request::Delete { key } => (key, Op::Delete),
        };
        match sh.begin_write(key, &op, true) {
            Err(e) => done(Err(e)),
            Ok(None) => done(Ok(Reply::Done)),
            Ok(Some((_, end, _))) => {
                let mut log = sh.log.lock().unwrap();
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
        }
    }
}

/// Runs the completions of asynchronous writes once their transactions complete.
pub fn completer(sh: &Shared) {
    loop {
        let (ready, err) = {
            let mut log = sh.log.lock().unwrap();
            loop {
                if let Some(e) = &log.error {
                    if !log.acks.is_empty() {
                        let e = e.clone();
                        break (std::mem::take(&mut log.acks), Some(Error::Poisoned(e)));
                    }
                    if log.stop {
                        return;
                    }
                }
                let c = log.complete();
                let later = log.acks.split_off(&(c + 1));
                let ready = std::mem::replace(&mut log.acks, later);
                if !ready.is_empty() {
                    break (ready, None);
                }
                if log.stop && log.queue.is_empty() && log.written == log.head {
                    // Nothing more will complete: whatever is left fails.
                    let left = std::mem::take(&mut log.acks);
                    if left.is_empty() {
                        return;
                    }
                    break (left, Some(Error::Closed));
                }
                log = sh
                    .done_cv
                    .wait_timeout(log, Duration::from_millis(100))
                    .unwrap()
                    .0;
            }
        };
        for (_, dones) in ready {
            for d in dones {
                d(match &err {
                    None => Ok(Reply::Done),
                    Some(Error::Poisoned(m)) => Err(Error::Poisoned(m.clone())),
                    Some(_) => Err(Error::Closed),
                });
            }
        }
    }
}
