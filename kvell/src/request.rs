//! What travels from a client to a worker: a request ([`WReq`]) with the completion
//! that answers it ([`Done`]), inside a message ([`Msg`]) on the worker's bounded
//! queue.

use crate::slab::Loc;
use kvapi::{Error, Reply, Result};
use std::sync::Arc;
use std::sync::mpsc::Sender;

/// A completion that runs exactly once: one dropped without being run (a request
/// left in a queue at shutdown) answers `Error::Closed`.
pub(crate) struct Done(Answer);

enum Answer {
    /// Answered already.
    Gone,
    Call(kvapi::Completion),
    /// Request `i` of a batch (see [`Batched`]).
    Part(Arc<dyn Batched>, u32),
}

/// Where the replies of requests sent together go (the reads of a scan): each reply
/// with the request's key given back, so a batch neither boxes a completion per
/// request nor copies its keys.
pub(crate) trait Batched: Send + Sync {
    /// The reply to request `i`, with its key when the request ran (None when it was
    /// answered without running, `Error::Closed`).
    fn reply(&self, i: u32, key: Option<Vec<u8>>, r: Result<Reply>);
}

impl Done {
    pub(crate) fn new(f: impl FnOnce(Result<Reply>) + Send + 'static) -> Done {
        Done(Answer::Call(Box::new(f)))
    }
    pub(crate) fn from_box(f: kvapi::Completion) -> Done {
        Done(Answer::Call(f))
    }
    /// Request `i` of `batch`.
    pub(crate) fn part(batch: Arc<dyn Batched>, i: u32) -> Done {
        Done(Answer::Part(batch, i))
    }
    pub(crate) fn call(self, r: Result<Reply>) {
        self.answer(r, None)
    }
    /// Answers the request `req` that ran, giving its key back to a batch.
    pub(crate) fn call_ran(self, r: Result<Reply>, req: WReq) {
        self.answer(r, Some(req))
    }
    fn answer(mut self, r: Result<Reply>, req: Option<WReq>) {
        match std::mem::replace(&mut self.0, Answer::Gone) {
            Answer::Gone => {}
            Answer::Call(f) => f(r),
            Answer::Part(b, i) => b.reply(i, req.map(WReq::into_key), r),
        }
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.0, Answer::Gone) {
            Answer::Gone => {}
            Answer::Call(f) => f(Err(Error::Closed)),
            Answer::Part(b, i) => b.reply(i, None, Err(Error::Closed)),
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

    pub(crate) fn into_key(self) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A reply a batch received: (position, key given back, answered Ok).
    type Seen = (u32, Option<Vec<u8>>, bool);

    #[derive(Default)]
    struct Got(Mutex<Vec<Seen>>);

    impl Batched for Got {
        fn reply(&self, i: u32, key: Option<Vec<u8>>, r: Result<Reply>) {
            self.0.lock().unwrap().push((i, key, r.is_ok()));
        }
    }

    #[test]
    fn a_part_of_a_batch_gives_its_key_back_once_and_answers_closed_when_dropped() {
        let got = Arc::new(Got::default());
        let batch: Arc<dyn Batched> = got.clone();
        Done::part(batch.clone(), 3).call_ran(Ok(Reply::Done), WReq::Get(b"k3".to_vec()));
        Done::part(batch.clone(), 5).call(Err(Error::Closed));
        drop(Done::part(batch.clone(), 7));
        drop(batch);
        let got = Arc::try_unwrap(got).ok().unwrap().0.into_inner().unwrap();
        assert_eq!(
            got,
            vec![
                (3, Some(b"k3".to_vec()), true),
                (5, None, false),
                (7, None, false),
            ]
        );
    }

    #[test]
    fn a_boxed_completion_runs_once_and_answers_closed_when_dropped() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t2 = tx.clone();
        Done::new(move |r| tx.send(r.is_ok()).unwrap())
            .call_ran(Ok(Reply::Done), WReq::Delete(vec![1]));
        drop(Done::new(move |r| t2.send(r.is_ok()).unwrap()));
        assert_eq!(rx.iter().collect::<Vec<_>>(), vec![true, false]);
    }
}
