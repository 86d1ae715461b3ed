//! Scans, on one scan thread that runs many at once. A scan takes up to `count`
//! keys >= start from every worker's index (each locked briefly), merges them and
//! keeps the first `count`, each with the location the index gave; then it reads the
//! items through their workers at those locations (a worker checks that the slot
//! still holds the key and asks its index only when it does not, as the C code reads
//! by the location its index scan returned; cache hits answered at once, misses
//! batched into the workers' rings, a page wanted by several reads read once), with
//! at most `in_flight` reads of that scan pending. No snapshot: a key deleted in
//! between is skipped, and each value is one the key held during the scan.
//!
//! The thread never waits for a scan's reads: it sends each worker the reads of a
//! scan in one message, the replies of such a batch come back as one event on the
//! thread's own unbounded channel (a worker never blocks on it), and the next reads
//! of that scan are issued then; so the reads of every scan in flight overlap.

use crate::request::{Done, WReq};
use crate::route::Shared;
use crate::slab::Loc;
use kvapi::{Error, Pair, Reply, Result};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};

pub(crate) enum Event {
    Job {
        start: Vec<u8>,
        count: usize,
        done: Done,
    },
    /// The replies to one batch of reads: (position in the scan, reply).
    Reads {
        scan: usize,
        replies: Vec<(usize, Result<Reply>)>,
    },
    /// Finish the scans in progress, then return.
    Stop,
}

/// Reads of one scan sent to one worker together: the last to complete sends all
/// their replies to the scan thread in one event (one wake-up, not one per item).
struct Batch {
    left: usize,
    replies: Vec<(usize, Result<Reply>)>,
}

struct Scan {
    /// The keys and where the index walk found them.
    keys: Vec<(Vec<u8>, Loc)>,
    values: Vec<Option<Vec<u8>>>,
    next: usize,
    pending: usize,
    err: Option<Error>,
    done: Done,
}

/// The first `count` keys >= `start` over all workers, in order, each with its
/// location then.
fn collect(shared: &Shared, start: &[u8], count: usize) -> Result<Vec<(Vec<u8>, Loc)>> {
    let mut keys = Vec::new();
    for w in &shared.workers {
        let idx = crate::index::lock(&w.index)?;
        keys.extend(idx.entries_from(start, count));
    }
    keys.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    keys.truncate(count);
    Ok(keys)
}

/// The scan thread's loop; `tx` sends to `rx` (completions use it).
pub(crate) fn run(shared: &Shared, rx: Receiver<Event>, tx: Sender<Event>, in_flight: usize) {
    let in_flight = in_flight.max(1);
    let mut scans: Vec<Option<Scan>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut active = 0;
    let mut stopping = false;
    // Reads issued together (positions in the scan), per worker: one message each.
    let mut batches: Vec<Vec<usize>> = shared.workers.iter().map(|_| Vec::new()).collect();
    while !(stopping && active == 0) {
        let Ok(ev) = rx.recv() else { return };
        let id = match ev {
            Event::Stop => {
                stopping = true;
                continue;
            }
            Event::Job { start, count, done } => {
                if shared.closed() {
                    done.call(Err(Error::Closed));
                    continue;
                }
                let keys = if count == 0 {
                    Vec::new()
                } else {
                    match collect(shared, &start, count) {
                        Ok(keys) => keys,
                        Err(e) => {
                            done.call(Err(e));
                            continue;
                        }
                    }
                };
                if keys.is_empty() {
                    done.call(Ok(Reply::Pairs(Vec::new())));
                    continue;
                }
                let scan = Scan {
                    values: vec![None; keys.len()],
                    keys,
                    next: 0,
                    pending: 0,
                    err: None,
                    done,
                };
                active += 1;
                match free.pop() {
                    Some(id) => {
                        scans[id] = Some(scan);
                        id
                    }
                    None => {
                        scans.push(Some(scan));
                        scans.len() - 1
                    }
                }
            }
            Event::Reads { scan, replies } => {
                // A batch's replies come back once, while its scan waits for them.
                let Some(s) = scans[scan].as_mut() else {
                    continue;
                };
                s.pending -= replies.len();
                for (i, r) in replies {
                    match r {
                        Ok(Reply::Value(v)) => s.values[i] = v,
                        Ok(_) => {}
                        Err(e) => {
                            s.err.get_or_insert(e);
                        }
                    }
                }
                scan
            }
        };
        let Some(s) = scans[id].as_mut() else {
            continue;
        };
        while s.next < s.keys.len() && s.pending < in_flight && s.err.is_none() {
            batches[shared.worker_of(&s.keys[s.next].0)].push(s.next);
            s.next += 1;
            s.pending += 1;
        }
        for (w, b) in batches.iter_mut().enumerate() {
            if b.is_empty() {
                continue;
            }
            let batch = Arc::new(Mutex::new(Batch {
                left: b.len(),
                replies: Vec::with_capacity(b.len()),
            }));
            let ops = b
                .drain(..)
                .map(|i| {
                    let (batch, tx) = (batch.clone(), tx.clone());
                    let done = Done::new(move |r| {
                        // Replies on their way to the scan thread: a hand-off slot.
                        let mut g = kvapi::sync::lock_handoff(&batch);
                        g.replies.push((i, r));
                        g.left -= 1;
                        if g.left == 0 {
                            let replies = std::mem::take(&mut g.replies);
                            drop(g);
                            let _ = tx.send(Event::Reads { scan: id, replies });
                        }
                    });
                    // The worker reads the slot the walk found and checks that it
                    // still holds the key (else it asks its index): no second lookup.
                    let (key, at) = &s.keys[i];
                    (WReq::Get(key.clone()), Some(*at), done)
                })
                .collect();
            shared.send_many(w, ops);
        }
        if s.pending == 0
            && (s.next == s.keys.len() || s.err.is_some())
            && let Some(s) = scans[id].take()
        {
            free.push(id);
            active -= 1;
            let r = match s.err {
                Some(e) => Err(e),
                None => Ok(s
                    .keys
                    .into_iter()
                    .zip(s.values)
                    .filter_map(|((k, _), v)| v.map(|v| (k, v)))
                    .collect::<Vec<Pair>>()),
            };
            s.done.call(r.map(Reply::Pairs));
        }
    }
}
