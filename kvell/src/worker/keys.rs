//! Per-key write ordering. A write sequence that changes where a key lives (an
//! insert, a move to another size class or a large item's new location, a delete:
//! every I/O it makes, the item then the tombstone over an old copy) holds its key
//! exclusively. A later write of the same key waits in that key's queue and starts
//! only when the earlier one has finished, so a request is never acknowledged while
//! an earlier write of its key is incomplete (a crash could otherwise leave that
//! earlier write's old copy as the only valid one). An update in place (same slot:
//! one I/O on one unit) holds the key shared: several may be under way at once,
//! because the unit rule (`units.rs`) already orders their writes (a later one joins
//! the prepared write or goes after the one in flight) and none of them moves the
//! key. A write that finds others waiting queues behind them, so a key's writes start
//! in arrival order. Reads are not queued: the index is updated when a write starts,
//! and a write is acknowledged only after it completes.
//! (With every write of a key exclusive, YCSB A zipfian ran at half the rate: the
//! hottest key's updates each waited for the previous one's write.)

use std::collections::{HashMap, VecDeque};

/// How a write holds its key, with the key's hash (its entry in [`Keys`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Hold {
    None,
    /// An update in place.
    Shared(u64),
    /// A write sequence that may change where the key lives.
    Exclusive(u64),
}

/// The writes of one key under way, and those waiting for it.
#[derive(Default)]
struct KeyLock {
    shared: u32,
    exclusive: bool,
    waiting: VecDeque<usize>,
}

/// Keys with a write sequence under way, by a 64-bit hash of the key (so a write
/// allocates nothing here; a collision only makes an unrelated write wait), each with
/// the writes waiting for it. The queue holds only requests already taken in; nothing
/// polls.
#[derive(Default)]
pub(super) struct Keys(HashMap<u64, KeyLock>);

impl Keys {
    /// The hash of a write's key, its entry here (computed once per write, when it
    /// takes the key; the hold carries it to `release`).
    pub(super) fn hash(key: &[u8]) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        std::hash::Hasher::write(&mut h, key);
        std::hash::Hasher::finish(&h)
    }

    /// Whether writes of the key are under way.
    pub(super) fn busy(&self, key: u64) -> bool {
        self.0.contains_key(&key)
    }

    /// Takes the key for write `id` (shared for an update in place): the hold, or None
    /// if `id` must wait (it then waits in the key's queue, granted by `release`).
    pub(super) fn take(&mut self, id: usize, key: u64, shared: bool) -> Option<Hold> {
        let l = self.0.entry(key).or_default();
        let free = !l.exclusive && l.waiting.is_empty();
        if free && shared {
            l.shared += 1;
            Some(Hold::Shared(key))
        } else if free && l.shared == 0 {
            l.exclusive = true;
            Some(Hold::Exclusive(key))
        } else {
            l.waiting.push_back(id);
            None
        }
    }

    /// A write sequence of this key finished (done or failed): once no write holds
    /// the key, the next queued write of the key, if any, takes it over exclusively
    /// (returned with its hold: the caller starts it).
    pub(super) fn release(&mut self, hold: Hold) -> Option<(usize, Hold)> {
        let key = match hold {
            Hold::None => return None,
            Hold::Shared(k) | Hold::Exclusive(k) => k,
        };
        let l = self.0.get_mut(&key)?;
        match hold {
            Hold::Shared(_) => l.shared -= 1,
            _ => l.exclusive = false,
        }
        if l.shared > 0 || l.exclusive {
            return None;
        }
        match l.waiting.pop_front() {
            Some(next) => {
                l.exclusive = true;
                Some((next, Hold::Exclusive(key)))
            }
            None => {
                self.0.remove(&key);
                None
            }
        }
    }
}
