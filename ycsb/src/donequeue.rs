//! The injector's completion queue: engine threads hand back finished requests, the
//! injector takes them in batches.
//!
//! A channel (`std::sync::mpsc`) woke the waiting injector on every completion: one
//! futex wake and one context switch per request, which on a 2-core machine cost
//! about a sixth of a KVell worker's CPU time and left requests waiting for the
//! injector to be scheduled. Here the injector says how many completions it wants
//! before it is woken (a fraction of the queue depth; the completion time of each
//! request is taken by the engine thread when it finishes, so latencies are not
//! changed by the batching) and a push wakes it only when that many are queued.
//!
//! Each request in flight has a slot of its own (the injector's window): a completion
//! is written into its slot's cell and the slot pushed on a stack whose head word
//! also counts the slots on it, so that a push is one compare-and-swap and the
//! injector takes everything queued with one swap. A mutex around a vector took two
//! atomic operations per completion, and engine threads finishing at once waited
//! for each other and for the injector's take; each request also took a reference
//! to the queue (`Arc`) to keep it alive until its push returned: two more, on a
//! counter that moved between the injector's core and the engine's. Now an
//! injector thread keeps one queue for its life and its requests borrow it.

use std::cell::UnsafeCell;
use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// The head word: the number of slots on the stack in the high half, the top slot
/// plus one (0: empty) in the low half.
const COUNT: u64 = 1 << 32;

pub struct DoneQueue<T> {
    head: AtomicU64,
    /// The slot below each one on the stack, plus one (0: the bottom).
    next: Box<[AtomicU32]>,
    /// Each slot's completion, between its push and the take that returns it.
    cells: Box<[UnsafeCell<Option<T>>]>,
    /// The taker sleeps until this many are queued (0: not sleeping).
    want: AtomicUsize,
    /// The thread that takes (the one that made the queue), woken by pushes.
    taker: Thread,
}

// SAFETY: a cell is written only by the push of its slot and read only by the take
// that follows it (the contract of `push`), ordered by the head word: a push's
// compare-and-swap releases the cell's write, and since every write of the head word
// is a read-modify-write, the pushes after it continue its release sequence, so the
// take's swap acquires the cells of every slot on the stack it takes. Items move
// between threads but are never shared: `T: Send` suffices.
#[expect(
    unsafe_code,
    reason = "the queue's cells are handed between threads by the head word's atomics"
)]
unsafe impl<T: Send> Sync for DoneQueue<T> {}

impl<T> DoneQueue<T> {
    /// A queue for completions of slots `0..slots`, taken by the calling thread.
    pub fn new(slots: usize) -> DoneQueue<T> {
        assert!(slots < u32::MAX as usize, "slots fit the head word");
        DoneQueue {
            head: AtomicU64::new(0),
            next: (0..slots).map(|_| AtomicU32::new(0)).collect(),
            cells: (0..slots).map(|_| UnsafeCell::new(None)).collect(),
            want: AtomicUsize::new(0),
            taker: std::thread::current(),
        }
    }

    /// Slots the queue has.
    pub fn slots(&self) -> usize {
        self.cells.len()
    }

    /// Completions queued now.
    fn queued(&self) -> usize {
        (self.head.load(SeqCst) / COUNT) as usize
    }

    /// Queues the completion of `slot`, waking the taker if it now has what it waits
    /// for.
    ///
    /// After its compare-and-swap has queued the item, the push still reads `want`
    /// and may wake the taker: the taker, which may have taken the item already,
    /// must not free the queue under it (the injector keeps one queue per thread for
    /// the thread's life).
    ///
    /// # Panics
    /// If `slot` is not below the queue's slots.
    ///
    /// # Safety
    /// `slot` is not pushed again until a `take` that returned this item has returned
    /// (one completion per slot in the queue: the injector reuses a slot only after
    /// it took the slot's completion).
    #[expect(
        unsafe_code,
        reason = "the cell of a slot is written here without a lock (the caller's contract)"
    )]
    pub unsafe fn push(&self, slot: u32, item: T) {
        let i = slot as usize;
        // SAFETY: no other push writes this cell before the take that returns it has
        // ended (the caller's contract), and that take reads it only after this
        // push's compare-and-swap below.
        unsafe { *self.cells[i].get() = Some(item) };
        let mut h = self.head.load(Relaxed);
        loop {
            self.next[i].store(h as u32, Relaxed);
            let new = (h & !(COUNT - 1)) + COUNT + slot as u64 + 1;
            // SeqCst: with the load of `want` below, against the taker's store of
            // `want` and load of the head, one of the two sees the other.
            match self.head.compare_exchange_weak(h, new, SeqCst, Relaxed) {
                Ok(_) => {
                    h = new;
                    break;
                }
                Err(x) => h = x,
            }
        }
        let want = self.want.load(SeqCst);
        if want != 0 && (h / COUNT) as usize >= want && self.want.swap(0, SeqCst) != 0 {
            self.taker.unpark();
        }
    }

    /// Moves the queued completions into `out` (which should be empty), first
    /// waiting until at least `want` are queued when `want > 0`, or until `timeout`.
    ///
    /// # Panics
    /// If called by another thread than the one that made the queue (pushes wake
    /// that one: another taker could sleep for ever).
    #[expect(
        unsafe_code,
        reason = "the cells of the slots taken are read without a lock (`push`'s contract)"
    )]
    pub fn take(&self, want: usize, timeout: Option<Duration>, out: &mut Vec<T>) {
        debug_assert!(out.is_empty());
        assert_eq!(
            std::thread::current().id(),
            self.taker.id(),
            "a completion queue is taken from by the thread that made it"
        );
        if want > 0 {
            let deadline = timeout.map(|t| Instant::now() + t);
            loop {
                // Stored again after every wake-up: a push that finished after the
                // taker had moved on (a queue outlives its phase, see `push`) may
                // have cleared it, and a wake-up meant for an earlier wait returns
                // from `park` early: the count decides.
                self.want.store(want, SeqCst);
                if self.queued() >= want {
                    break;
                }
                match deadline {
                    None => std::thread::park(),
                    Some(d) => {
                        let now = Instant::now();
                        if now >= d {
                            break;
                        }
                        std::thread::park_timeout(d - now);
                    }
                }
            }
            self.want.store(0, SeqCst);
        }
        let h = self.head.swap(0, Acquire);
        let mut top = h as u32;
        // The walk is bounded by the count the head word gave: a slot pushed twice
        // (a broken contract) would otherwise link to itself.
        for _ in 0..h / COUNT {
            debug_assert_ne!(top, 0, "the count matches the links");
            let i = (top - 1) as usize;
            top = self.next[i].load(Relaxed);
            // SAFETY: slot i was pushed (its cell written before the push's
            // compare-and-swap, which the swap above acquired) and is not pushed
            // again before this take has returned (`push`'s contract).
            let x = unsafe { (*self.cells[i].get()).take() };
            debug_assert!(x.is_some(), "a slot on the stack holds its completion");
            out.extend(x);
        }
        debug_assert_eq!(top, 0, "the links end with the count");
        // The stack is last in, first out: completions in the order they came.
        out.reverse();
    }
}

#[cfg(test)]
#[expect(unsafe_code, reason = "tests push under the contract of `push`")]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn wakes_only_when_enough_are_queued() {
        let q = Arc::new(DoneQueue::new(10));
        let q2 = q.clone();
        let t = std::thread::spawn(move || {
            for i in 0..10 {
                // SAFETY: each slot pushed once
                unsafe { q2.push(i, i) };
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
        let q = DoneQueue::new(4);
        // SAFETY: slot 1 pushed once
        unsafe { q.push(1, 1) };
        let mut out = Vec::new();
        q.take(5, Some(Duration::from_millis(5)), &mut out);
        assert_eq!(out, vec![1]);
        out.clear();
        q.take(0, None, &mut out);
        assert!(out.is_empty());
    }

    /// Several threads completing at once, the taker waiting for batches and reusing
    /// each slot as soon as it took it, as the injector does: every completion
    /// arrives once, with the item its push gave. A wake-up lost between the taker's
    /// look at the count and its sleep would leave the taker asleep: it runs on a
    /// thread of its own, and the test fails if it has not finished within a minute.
    /// (On x86 a too-weak memory ordering would still pass: this checks the protocol,
    /// not the orderings, which the comments argue.)
    #[test]
    fn many_pushers_lose_nothing() {
        const SLOTS: u32 = 64;
        const ROUNDS: u64 = 2000;
        const PUSHERS: usize = 3;
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let q = Arc::new(DoneQueue::<(u32, u64)>::new(SLOTS as usize));
            // Pusher p completes the slots s with s % PUSHERS == p, fed by a channel
            // of its own, so that pushes come from several threads at once.
            let (feeds, pushers): (Vec<_>, Vec<_>) = (0..PUSHERS)
                .map(|_| {
                    let (tx, rx) = std::sync::mpsc::channel::<(u32, u64)>();
                    let q = q.clone();
                    let h = std::thread::spawn(move || {
                        for (slot, seq) in rx {
                            // SAFETY: the taker hands out a slot again only after it
                            // took the slot's completion
                            unsafe { q.push(slot, (slot, seq)) };
                        }
                    });
                    (tx, h)
                })
                .unzip();
            let send = |slot: u32, seq: u64| feeds[slot as usize % PUSHERS].send((slot, seq));
            let mut seq = 0u64;
            for s in 0..SLOTS {
                send(s, seq).unwrap();
                seq += 1;
            }
            let mut seen = vec![false; (SLOTS as u64 * ROUNDS) as usize];
            let mut in_flight = SLOTS as usize;
            let mut out = Vec::new();
            while in_flight > 0 {
                q.take((in_flight / 8).max(1), None, &mut out);
                for (slot, n) in out.drain(..) {
                    assert!(!std::mem::replace(&mut seen[n as usize], true), "{n} twice");
                    in_flight -= 1;
                    if seq < SLOTS as u64 * ROUNDS {
                        send(slot, seq).unwrap();
                        seq += 1;
                        in_flight += 1;
                    }
                }
            }
            drop(feeds);
            for p in pushers {
                p.join().unwrap();
            }
            done_tx.send(seen.iter().all(|&s| s)).unwrap();
        });
        let all = done_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the taker finished (a lost wake-up leaves it asleep)");
        assert!(all, "every completion taken");
    }

    /// The queue this one replaced, as the benchmark below's reference: a mutex
    /// around a vector, a condition variable, and a reference to the queue (`Arc`)
    /// taken for each request.
    struct Locked<T> {
        state: std::sync::Mutex<(Vec<T>, usize)>,
        cv: std::sync::Condvar,
    }

    impl<T> Locked<T> {
        fn new() -> Locked<T> {
            Locked {
                state: std::sync::Mutex::new((Vec::new(), 0)),
                cv: std::sync::Condvar::new(),
            }
        }
        fn push(&self, item: T) {
            let mut s = self.state.lock().unwrap();
            s.0.push(item);
            if s.1 > 0 && s.0.len() >= s.1 {
                s.1 = 0;
                drop(s);
                self.cv.notify_one();
            }
        }
        fn take(&self, out: &mut Vec<T>) {
            std::mem::swap(&mut self.state.lock().unwrap().0, out);
        }
    }

    /// A request's way through each queue when the engine completes it on the
    /// injector's own thread (the null engine): 64 completions pushed, then taken,
    /// over and over, the old queue with its `Arc` per request. Nanoseconds per
    /// completion, the least of 7 rounds of each, alternating (a benchmark, not a
    /// timed test: `cargo test --release -p ycsb --lib donequeue_speed -- --ignored
    /// --nocapture`).
    #[test]
    #[ignore = "benchmark: run it in release, by name"]
    fn donequeue_speed() {
        const N: usize = 2_000_000;
        type Item = (u32, Instant, u64);
        let new = DoneQueue::<Item>::new(64);
        let old = Arc::new(Locked::<Item>::new());
        let (mut a, mut b) = (Vec::with_capacity(64), Vec::with_capacity(64));
        let (mut best_new, mut best_old) = (f64::MAX, f64::MAX);
        for _ in 0..7 {
            let t = Instant::now();
            for _ in 0..N / 64 {
                for s in 0..64u32 {
                    // SAFETY: each slot pushed once before the take below
                    unsafe { new.push(s, (s, t, 1)) };
                }
                new.take(0, None, &mut a);
                assert_eq!(a.len(), 64);
                a.clear();
            }
            best_new = best_new.min(t.elapsed().as_nanos() as f64 / N as f64);
            let t = Instant::now();
            for _ in 0..N / 64 {
                for s in 0..64u32 {
                    let q = old.clone();
                    q.push((s, t, 1));
                }
                old.take(&mut b);
                assert_eq!(b.len(), 64);
                b.clear();
            }
            best_old = best_old.min(t.elapsed().as_nanos() as f64 / N as f64);
        }
        eprintln!(
            "per completion, least of 7 rounds: this queue {best_new:.1} ns, the mutex \
             and Arc it replaced {best_old:.1} ns"
        );
    }
}
