//! The native asynchronous path: `submit` applies and reserves a write at once (after
//! admission, which is its back-pressure) and files the completion under the
//! transaction's end position; the committer runs the completions its group commits
//! make ready, on its own thread, in id order (the completer thread those a data
//! write, an error or a stop makes ready). A completion must therefore not wait on
//! the engine: the driver's only queues its result. Reads are
//! answered inside `submit` when their pages are resident (a large value is then one
//! pread); a request that needs a page that is not resident goes to the miss loader
//! (`loader.rs`), which reads it with others in flight and then answers the read or
//! applies the write. A large value's data goes to the data writer
//! (`datawriter.rs`, an io_uring over the data file): up to `data_first` it is
//! written in parallel with the transaction's log commit, which is acknowledged when
//! both are durable; above, it is written first and the transaction begun (on the
//! miss loader's thread) once it is durable. No request waits on a data write in
//! `submit`.

use crate::datawriter::{DataWriter, DataWrites};
use crate::extent::Extent;
use crate::loader::{Loader, Loads};
use crate::log::Log;
use crate::read::Reader;
use crate::store::{Now, found_in};
use crate::write::{Op, Writer};
use kvapi::{AsyncEngine, Completion, Error, Reply, Request};
use std::sync::Arc;

/// The asynchronous handle. `E` is the engine it came from, held so that its
/// threads and directory claim live as long as this handle.
pub struct AsyncWal<E> {
    inner: Arc<Inner>,
    /// Dropped first: its thread finishes the writes queued (whose continuations
    /// may queue to the loader), then stops.
    _data: DataWriter,
    /// Dropped before the engine: its thread runs what is queued, then stops.
    _loader: Loader,
    _engine: Arc<E>,
}

/// What a request needs, shared with the continuations the miss loader runs.
struct Inner {
    reader: Reader,
    writer: Writer,
    log: Arc<Log>,
    loads: Loads,
    data: DataWrites,
}

impl<E> AsyncWal<E> {
    /// The handle, with its miss loader's and data writer's threads (an error if
    /// one cannot start); the data writer uses an io_uring when `uring`.
    pub fn new(
        engine: Arc<E>,
        reader: Reader,
        writer: Writer,
        log: Arc<Log>,
        uring: bool,
    ) -> std::io::Result<AsyncWal<E>> {
        let loader = Loader::start(reader.store().clone())?;
        let loads = loader.loads().clone();
        let data = DataWriter::start(writer.data().clone(), uring)?;
        Ok(AsyncWal {
            inner: Arc::new(Inner {
                reader,
                writer,
                log,
                loads,
                data: data.writes().clone(),
            }),
            _data: data,
            _loader: loader,
            _engine: engine,
        })
    }
}

impl<E: Send + Sync> AsyncEngine for AsyncWal<E> {
    fn submit(&self, request: Request, done: Completion) {
        match request {
            Request::Get { key } => self.inner.get(key, done),
            Request::Scan { start, count } => self.inner.scan(start, count, done),
            w => self.inner.write(w, done),
        }
    }
}

impl Inner {
    /// A get: answered at once when its page is resident, else by the miss loader
    /// once the page is read (and looked up again if its record moved meanwhile).
    fn get(self: &Arc<Self>, key: Vec<u8>, done: Completion) {
        let (m, l) = match self.reader.get_now(&key) {
            Err(e) => return done(Err(e)),
            Ok(Now::Found(f)) => return done(self.reader.value(&key, f).map(Reply::Value)),
            Ok(Now::Miss(m, l)) => (m, l),
        };
        let me = self.clone();
        self.loads.load(
            vec![m],
            Box::new(move |_, pages| {
                let found = match &pages {
                    Err(_) => None,
                    Ok(p) => p.first().and_then(|b| found_in(b.as_deref()?, l, &key)),
                };
                match (pages, found) {
                    (Err(e), _) => done(Err(e)),
                    (Ok(_), Some(f)) => done(me.reader.value(&key, f).map(Reply::Value)),
                    (Ok(_), None) => me.get(key, done),
                }
            }),
        );
    }

    /// A scan: its keys and resident records at once, the pages not resident read
    /// by the miss loader, which then answers.
    fn scan(self: &Arc<Self>, start: Vec<u8>, count: usize, done: Completion) {
        let r = match self.reader.scan_now(&start, count) {
            Ok(r) => r,
            Err(e) => return done(Err(e)),
        };
        let me = self.clone();
        self.loads.load(
            r.pages(),
            Box::new(move |store, pages| {
                let items = pages.and_then(|pages| {
                    let mut pages = pages.into_iter();
                    store.range_end(r, |_| Ok(pages.next().flatten()))
                });
                done(items.and_then(|i| me.reader.pairs(i)).map(Reply::Pairs))
            }),
        );
    }

    /// A write: a large value above `data_first` written first, through the data
    /// writer (the rest on the miss loader's thread once it is durable); the pages
    /// it changes read by the miss loader when they are not resident; then applied
    /// and reserved (`Writer::begin`, on the loader's thread in that case), its
    /// large value up to `data_first` written in parallel with the log commit, and
    /// acknowledged once its transaction is complete (by the committer, or by the
    /// completer when the data write finishes last).
    fn write(self: &Arc<Self>, request: Request, done: Completion) {
        let Some((key, op)) = op_of(&request) else {
            return done(Err(Error::InvalidArgument("not a write".into())));
        };
        if let Op::Put(v) = op
            && self.writer.data_first(key, v)
        {
            let x = match self.writer.alloc_large(key, v) {
                Ok(x) => x,
                Err(e) => return done(Err(e)),
            };
            let buf = self.data.buffer(x, v);
            let me = self.clone();
            self.data.write_buf(
                x,
                buf,
                Box::new(move |r| match r {
                    Err(e) => {
                        let e = me.log.poison(format!("data write failed: {e}"));
                        drop(me.writer.free_large(&x));
                        done(Err(e))
                    }
                    // not on this thread: the rest may wait for log space
                    Ok(()) => {
                        let m = me.clone();
                        me.loads
                            .defer(Box::new(move |_, _| m.after_data(request, Some(x), done)));
                    }
                }),
            );
            return;
        }
        self.after_data(request, None, done);
    }

    /// The rest of a write whose large value is in extent `pre` when it was written
    /// first: the pages it changes read when they are not resident, then begun. On
    /// an error `pre` is free again.
    fn after_data(self: &Arc<Self>, request: Request, pre: Option<Extent>, done: Completion) {
        let misses = match op_of(&request) {
            Some((key, op)) => self.writer.misses(key, &op),
            None => Err(Error::InvalidArgument("not a write".into())),
        };
        match misses {
            Err(e) => self.fail(pre, e, done),
            Ok(m) if m.is_empty() => self.begin(&request, pre, done),
            Ok(m) => {
                let me = self.clone();
                self.loads.load(
                    m,
                    Box::new(move |_, pages| match pages {
                        Err(e) => me.fail(pre, e, done),
                        Ok(_) => me.begin(&request, pre, done),
                    }),
                );
            }
        }
    }

    /// A write refused before it began: the extent its value was written to first,
    /// if any, is free again.
    fn fail(&self, pre: Option<Extent>, e: Error, done: Completion) {
        if let Some(x) = pre {
            drop(self.writer.free_large(&x));
        }
        done(Err(e))
    }

    fn begin(self: &Arc<Self>, request: &Request, pre: Option<Extent>, done: Completion) {
        let Some((key, op)) = op_of(request) else {
            return self.fail(pre, Error::InvalidArgument("not a write".into()), done);
        };
        let b = match (pre, &op) {
            (Some(x), Op::Put(v)) => self.writer.begin_written(key, v, x),
            (Some(x), Op::Delete) => {
                return self.fail(Some(x), Error::Engine("a delete with data".into()), done);
            }
            (None, op) => self.writer.begin(key, op, false),
        };
        let b = match b {
            Err(e) => return done(Err(e)),
            Ok(b) => b,
        };
        self.log.when_complete(b.end, done);
        let (Some(x), Op::Put(v)) = (b.parallel, op) else {
            return;
        };
        // The data write runs while the committer writes the WAL record; the
        // transaction is complete once both are durable.
        let me = self.clone();
        self.data.write(
            x,
            v,
            Box::new(move |r| {
                let ended = me.reader.store().end_inflight(x.start);
                let r = match r {
                    Err(e) => Err(me.log.poison(format!("data write failed: {e}"))),
                    Ok(()) => ended
                        .map_err(|e| me.log.record(e))
                        .and_then(|()| me.log.data_written(b.start)),
                };
                // an error poisoned the engine: the completer fails the acks
                drop(r);
            }),
        );
    }
}

/// A write request's key and change.
fn op_of(request: &Request) -> Option<(&[u8], Op<'_>)> {
    match request {
        Request::Insert { key, value } | Request::Update { key, value } => {
            Some((key, Op::Put(value)))
        }
        Request::Delete { key } => Some((key, Op::Delete)),
        Request::Get { .. } | Request::Scan { .. } => None,
    }
}

/// The completer thread: runs the completions of asynchronous writes that the
/// committer does not (made ready by a data write, or failed by an error or a stop),
/// until the log is stopped with none left (or its lock is poisoned).
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
