//! The injector's completion queue: engine threads push finished requests, the
//! injector takes them in batches.
//!
//! A channel (`std::sync::mpsc`) wakes the waiting injector on every completion: one
//! futex wake and one context switch per request, which on a 2-core machine cost
//! about a sixth of a KVell worker's CPU time and left requests waiting for the
//! injector to be scheduled. Here the injector says how many completions it wants
//! before it is woken (a fraction of the queue depth; the completion time of each
//! request is taken by the engine thread when it finishes, so latencies are not
//! changed by the batching) and a push wakes it only when that many are queued.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

pub struct DoneQueue<T> {
    state: Mutex<State<T>>,
    cv: Condvar,
}

struct State<T> {
    items: Vec<T>,
    /// The injector sleeps until `items.len() >= want` (0: not sleeping).
    want: usize,
}

impl<T> Default for DoneQueue<T> {
    fn default() -> Self {
        DoneQueue {
            state: Mutex::new(State {
                items: Vec::new(),
                want: 0,
            }),
            cv: Condvar::new(),
        }
    }
}

impl<T> DoneQueue<T> {
    /// The queue is a hand-off slot (replies on their way, no engine state): a lock a
    /// panicking thread held is taken over, here and in the waits below.
    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        kvapi::sync::lock_handoff(&self.state)
    }

    pub fn push(&self, item: T) {
        let mut s = self.lock();
        s.items.push(item);
        if s.want > 0 && s.items.len() >= s.want {
            s.want = 0;
            drop(s);
            self.cv.notify_one();
        }
    }

    /// Moves the queued completions into `out` (which should be empty), first
    /// waiting until at least `want` are queued when `want > 0`, or until `timeout`.
    pub fn take(&self, want: usize, timeout: Option<Duration>, out: &mut Vec<T>) {
        debug_assert!(out.is_empty());
        let mut s = self.lock();
        if want > 0 && s.items.len() < want {
            s.want = want;
            s = match timeout {
                None => self
                    .cv
                    .wait_while(s, |s| s.want != 0)
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
                Some(t) => {
                    self.cv
                        .wait_timeout_while(s, t, |s| s.want != 0)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0
                }
            };
            s.want = 0;
        }
        std::mem::swap(&mut s.items, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn wakes_only_when_enough_are_queued() {
        let q = Arc::new(DoneQueue::default());
        let q2 = q.clone();
        let t = std::thread::spawn(move || {
            for i in 0..10 {
                q2.push(i);
            }
        });
        let mut got = Vec::new();
        let mut out = Vec::new();
        while got.len() < 10 {
            q.take(10 - got.len(), None, &mut out);
            assert!(!out.is_empty());
            got.append(&mut out);
        }
        t.join().unwrap();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn times_out_with_what_is_there() {
        let q = DoneQueue::default();
        q.push(1);
        let mut out = Vec::new();
        q.take(5, Some(Duration::from_millis(5)), &mut out);
        assert_eq!(out, vec![1]);
        out.clear();
        q.take(0, None, &mut out);
        assert!(out.is_empty());
    }
}
