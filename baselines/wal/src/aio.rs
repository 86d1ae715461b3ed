//! The native asynchronous path: `submit` applies and reserves a write at once (after
//! admission, which is its back-pressure) and files the completion under the
//! transaction's end position; the completer thread runs completions as the
//! committer's group commits make transactions complete, in id order. Reads are
//! answered inside `submit` (the image is in memory; a large value is one pread).
//! Large values take the data-first path here, so no request waits on a data write
//! after `submit` returns.

use crate::log::Log;
use crate::read::Reader;
use crate::write::{Op, Writer};
use kvapi::{AsyncEngine, Error, Reply, Request};
use std::sync::Arc;

/// The asynchronous handle. `E` is the engine it came from, held so that its
/// threads and directory claim live as long as this handle.
pub struct AsyncWal<E> {
    _engine: Arc<E>,
    reader: Reader,
    writer: Writer,
    log: Arc<Log>,
}

impl<E> AsyncWal<E> {
    pub fn new(engine: Arc<E>, reader: Reader, writer: Writer, log: Arc<Log>) -> AsyncWal<E> {
        AsyncWal {
            _engine: engine,
            reader,
            writer,
            log,
        }
    }
}

impl<E: Send + Sync> AsyncEngine for AsyncWal<E> {
    fn submit(&self, request: Request, done: kvapi::Completion) {
        let (key, op) = match &request {
            Request::Get { key } => return done(self.reader.get(key).map(Reply::Value)),
            Request::Scan { start, count } => {
                return done(self.reader.scan(start, *count).map(Reply::Pairs));
            }
            Request::Insert { key, value } | Request::Update { key, value } => {
                (key, Op::Put(value))
            }
            Request::Delete { key } => (key, Op::Delete),
        };
        match self.writer.begin(key, &op, true) {
            Err(e) => done(Err(e)),
            Ok(b) => self.log.when_complete(b.end, done),
        }
    }
}

/// The completer thread: runs the completions of asynchronous writes once their
/// transactions complete, until the log is stopped with none left (or its lock is
/// poisoned).
pub fn completer(log: &Log) {
    while let Ok(Some((ready, err))) = log.next_acks() {
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
