//! The native asynchronous path: `submit` applies and reserves a write at once (after
//! admission, which is its back-pressure) and files the completion under the
//! transaction's end position; the committer runs the completions its group commits
//! make ready, on its own thread, in id order (the completer thread those a data
//! write, an error or a stop makes ready). A completion must therefore not wait on
//! the engine: the driver's only queues its result. Reads are
//! answered inside `submit` when their pages are resident (a large value is then one
//! pread); a request that needs a page that is not resident goes to the miss loader
//! (`loader.rs`), which reads it with others in flight and then answers the read or
//! applies the write. Large values take the data-first path here, so no request
//! waits on a data write after `submit` returns.

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
}

impl<E> AsyncWal<E> {
    /// The handle, with its miss loader's thread (an error if it cannot start).
    pub fn new(
        engine: Arc<E>,
        reader: Reader,
        writer: Writer,
        log: Arc<Log>,
    ) -> std::io::Result<AsyncWal<E>> {
        let loader = Loader::start(reader.store().clone())?;
        let loads = loader.loads().clone();
        Ok(AsyncWal {
            inner: Arc::new(Inner {
                reader,
                writer,
                log,
                loads,
            }),
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

    /// A write: the pages it changes read first by the miss loader when they are not
    /// resident; then applied and reserved (`Writer::begin`, on the loader's thread
    /// in that case), and acknowledged by the committer once its transaction is
    /// complete.
    fn write(self: &Arc<Self>, request: Request, done: Completion) {
        let misses = match op_of(&request) {
            Some((key, op)) => self.writer.misses(key, &op),
            None => Err(Error::InvalidArgument("not a write".into())),
        };
        match misses {
            Err(e) => done(Err(e)),
            Ok(m) if m.is_empty() => self.begin(&request, done),
            Ok(m) => {
                let me = self.clone();
                self.loads.load(
                    m,
                    Box::new(move |_, pages| match pages {
                        Err(e) => done(Err(e)),
                        Ok(_) => me.begin(&request, done),
                    }),
                );
            }
        }
    }

    fn begin(&self, request: &Request, done: Completion) {
        let Some((key, op)) = op_of(request) else {
            return done(Err(Error::InvalidArgument("not a write".into())));
        };
        match self.writer.begin(key, &op, true) {
            Err(e) => done(Err(e)),
            Ok(b) => self.log.when_complete(b.end, done),
        }
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
