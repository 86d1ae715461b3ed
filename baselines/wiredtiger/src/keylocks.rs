//! Writers of one key enter WiredTiger one at a time.
//!
//! Decision (2026-12-03): the sessions run under snapshot isolation (see
//! `config::SESSION_CONFIG` for why), so two sessions writing one key at once
//! conflict: the second gets `WT_ROLLBACK`, which WiredTiger retries inside the
//! autocommit call (`TXN_API_END_RETRY`) without sleeping until the first commits.
//! At 64 requests in flight on YCSB A zipfian that retry loop was the whole
//! measurement: 40.5 million conflicts and 5.5 ms of CPU per operation in a
//! small-scale reproduction at f2300b9 (results/wiredtiger-hotkeys). A database in
//! front of WiredTiger serialises such writers in its own lock manager (MongoDB
//! takes a document lock and backs off on a write conflict); the adapter does the
//! same with a striped lock over the key's hash, held across the whole write
//! (search, update, commit and its log write or sync). A waiting writer sleeps on
//! the lock instead of spinning. Snapshot isolation stays, so a key's update chain
//! and its log records stay in commit order. Reads and scans take no lock.
//!
//! Two keys on one stripe wait for each other needlessly: with [`STRIPES`] stripes
//! and 64 writers that is about 1.5% of writes. `key_lock_waits` counts every write
//! that found its stripe taken, hot key or not.
//!
//! Then, holding its key, a writer takes one of [`WriteTickets`]: at most that many
//! writes are inside WiredTiger at once (`wiredtiger.write_tickets`), the others
//! sleep here. A writer waiting for a ticket holds only its own key, and a ticket's
//! holder never waits for a key, so the two never wait for each other in a circle.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, TryLockError};

/// The number of stripes (a power of two): 32 KiB of locks.
const STRIPES: usize = 4096;

pub(crate) struct KeyLocks {
    stripes: Box<[Mutex<()>]>,
    waits: AtomicU64,
}

impl KeyLocks {
    pub(crate) fn new() -> KeyLocks {
        KeyLocks {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            waits: AtomicU64::new(0),
        }
    }

    /// Holds `key`'s stripe until the guard is dropped. The lock guards no state (a
    /// writer that panicked left nothing half-done in it), so a poisoned stripe is
    /// taken over.
    pub(crate) fn hold(&self, key: &[u8]) -> MutexGuard<'_, ()> {
        let stripe = &self.stripes[stripe_of(key)];
        match stripe.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                self.waits.fetch_add(1, Ordering::Relaxed);
                kvapi::sync::lock_handoff(stripe)
            }
        }
    }

    /// Writes that waited for their stripe.
    pub(crate) fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }
}

/// At most `max` writes inside WiredTiger at once, as MongoDB's write tickets admit
/// them to it (see DESIGN.md, "Write tickets"); `0` admits every writer.
pub(crate) struct WriteTickets {
    max: usize,
    inside: Mutex<usize>,
    freed: Condvar,
    waits: AtomicU64,
}

/// A write's place inside WiredTiger, given back when dropped.
pub(crate) struct Ticket<'a>(Option<&'a WriteTickets>);

impl WriteTickets {
    pub(crate) fn new(max: usize) -> WriteTickets {
        WriteTickets {
            max,
            inside: Mutex::new(0),
            freed: Condvar::new(),
            waits: AtomicU64::new(0),
        }
    }

    /// Waits for a ticket. The count guards no engine state (only this type changes
    /// it, by one, under the lock), so a poisoned lock is taken over.
    pub(crate) fn take(&self) -> Ticket<'_> {
        if self.max == 0 {
            return Ticket(None);
        }
        let mut inside = kvapi::sync::lock_handoff(&self.inside);
        if *inside >= self.max {
            self.waits.fetch_add(1, Ordering::Relaxed);
            while *inside >= self.max {
                inside = self
                    .freed
                    .wait(inside)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
        *inside += 1;
        Ticket(Some(self))
    }

    /// Writes that waited for a ticket.
    pub(crate) fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.0 {
            *kvapi::sync::lock_handoff(&t.inside) -= 1;
            t.freed.notify_one();
        }
    }
}

/// FNV-1a over the key, its high bits mixed down: the stripe of `key`.
fn stripe_of(key: &[u8]) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 32;
    h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // the top bits, the best mixed; STRIPES is a power of two
    usize::try_from(h >> (64 - STRIPES.trailing_zeros())).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ycsb_keys_spread_over_the_stripes() {
        let mut count = vec![0u32; STRIPES];
        let n = 200_000u32;
        for i in 0..n {
            count[stripe_of(format!("user{i:020}").as_bytes())] += 1;
        }
        let mean = f64::from(n) / STRIPES as f64;
        let max = f64::from(*count.iter().max().unwrap_or(&0));
        let empty = count.iter().filter(|&&c| c == 0).count();
        // a uniform spread: the fullest stripe well under twice the mean, none empty
        assert!(max < 2.0 * mean, "fullest stripe {max}, mean {mean}");
        assert_eq!(empty, 0);
    }

    #[test]
    fn a_held_stripe_makes_its_key_wait_and_counts_it() {
        let locks = std::sync::Arc::new(KeyLocks::new());
        let g = locks.hold(b"k1");
        let l2 = locks.clone();
        let t = std::thread::spawn(move || {
            drop(l2.hold(b"k1"));
        });
        while locks.waits() == 0 {
            std::thread::yield_now();
        }
        drop(g);
        t.join().unwrap_or_else(|_| panic!("the waiter panicked"));
        assert_eq!(locks.waits(), 1);
        // another stripe is free
        let other = (0..100u32)
            .map(|i| format!("other{i}"))
            .find(|k| stripe_of(k.as_bytes()) != stripe_of(b"k1"))
            .unwrap_or_default();
        let _g = locks.hold(b"k1");
        drop(locks.hold(other.as_bytes()));
        assert_eq!(locks.waits(), 1);
    }

    #[test]
    fn no_more_writers_than_tickets_are_inside_at_once() {
        let tickets = WriteTickets::new(3);
        let inside = AtomicU64::new(0);
        let most = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..12 {
                s.spawn(|| {
                    for _ in 0..200 {
                        let _t = tickets.take();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 3);
        assert!(tickets.waits() > 0);
        // 0: no limit, nothing waits
        let open = WriteTickets::new(0);
        let held: Vec<_> = (0..100).map(|_| open.take()).collect();
        assert_eq!(held.len(), 100);
        assert_eq!(open.waits(), 0);
    }
}
