//! What travels from a client to a worker: a request ([`WReq`]) with the completion
//! that answers it ([`Done`]), inside a message ([`Msg`]) on the worker's bounded
//! queue.

use crate::slab::Loc;
use kvapi::{Error, Reply, Result};
use std::sync::mpsc::Sender;

/// A completion that runs exactly once: one dropped without being run (a request
/// left in a queue at shutdown) answers `Error::Closed`.
pub(crate) struct Done(Option<kvapi::Completion>);

impl Done {
    pub(crate) fn new(f: impl FnOnce(Result<Reply>) + Send + 'static) -> Done {
        Done(Some(Box::new(f)))
    }
    pub(crate) fn from_box(f: kvapi::Completion) -> Done {
        Done(Some(f))
    }
    pub(crate) fn call(mut self, r: Result<Reply>) {
        if let Some(f) = self.0.take() {
            f(r)
        }
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f(Err(Error::Closed))
        }
    }
}

/// A request of one key, as a worker runs it.
pub(crate) enum WReq {
    Get(Vec<u8>),
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

impl WReq {
    pub(crate) fn key(&self) -> &[u8] {
        match self {
            WReq::Get(k) | WReq::Put(k, _) | WReq::Delete(k) => k,
        }
    }
}

/// A message on a worker's queue.
pub(crate) enum Msg {
    Op(WReq, Done),
    /// Several requests in one message (the reads of a scan), each get with the
    /// location the scan's walk of the index found for its key, if any (see
    /// `Op::at`).
    Ops(Vec<(WReq, Option<Loc>, Done)>),
    /// Finish every request, sync, record a clean close, and answer.
    Close(Sender<Result<()>>),
}
