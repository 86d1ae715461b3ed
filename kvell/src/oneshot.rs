//! A one-shot rendezvous: a blocking call hands a worker a completion that fills this
//! slot, and waits on it for the reply.

use crate::request::Done;
use kvapi::{Reply, Result};
use std::sync::{Arc, Condvar, Mutex};

pub(crate) struct Oneshot(Mutex<Option<Result<Reply>>>, Condvar);

impl Oneshot {
    /// Hands `start` a completion and waits for its reply.
    pub(crate) fn wait(start: impl FnOnce(Done)) -> Result<Reply> {
        let slot = Arc::new(Oneshot(Mutex::new(None), Condvar::new()));
        let s2 = slot.clone();
        // The slot holds only a reply on its way (no engine state): a hand-off slot.
        start(Done::new(move |r| {
            *kvapi::sync::lock_handoff(&s2.0) = Some(r);
            s2.1.notify_one();
        }));
        let mut g = kvapi::sync::lock_handoff(&slot.0);
        loop {
            if let Some(r) = g.take() {
                return r;
            }
            g = kvapi::sync::wait(&slot.1, g, "a blocking call's reply slot")?;
        }
    }
}
