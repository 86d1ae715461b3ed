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

use crate::index::Found;
use crate::request::{Batched, Done, WReq};
use crate::route::Shared;
use crate::slab::Loc;
use kvapi::{Error, Pair, Reply, Result};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};

/// A read's reply as it comes back: its position in the scan, its key (given back by
/// the worker, None if the read never ran) and the reply.
type ReadReply = (u32, Option<Vec<u8>>, Result<Reply>);

pub(crate) enum Event {
    Job {
        start: Vec<u8>,
        count: usize,
        done: Done,
    },
    /// The replies to one batch of reads.
    Reads {
        scan: usize,
        replies: Vec<ReadReply>,
    },
    /// Finish the scans in progress, then return.
    Stop,
}

/// Reads of one scan sent to one worker together: the last to complete sends all
/// their replies to the scan thread in one event (one wake-up, not one per item).
/// Each read's completion is this batch and the read's position (`Done::part`): no
/// completion boxed per read, and the key travels to the worker and back rather
/// than being copied.
struct Batch {
    scan: usize,
    tx: Sender<Event>,
    replies: Mutex<Replies>,
}

struct Replies {
    left: usize,
    got: Vec<ReadReply>,
}

impl Batched for Batch {
    fn reply(&self, i: u32, key: Option<Vec<u8>>, r: Result<Reply>) {
        // Replies on their way to the scan thread: a hand-off slot.
        let mut g = kvapi::sync::lock_handoff(&self.replies);
        g.got.push((i, key, r));
        g.left -= 1;
        if g.left == 0 {
            let replies = std::mem::take(&mut g.got);
            drop(g);
            let _ = self.tx.send(Event::Reads {
                scan: self.scan,
                replies,
            });
        }
    }
}

struct Scan {
    /// The keys (each away while its read is out) and where the index walk found
    /// them.
    keys: Vec<Option<Vec<u8>>>,
    locs: Vec<Loc>,
    values: Vec<Option<Vec<u8>>>,
    next: usize,
    pending: usize,
    err: Option<Error>,
    done: Done,
}

/// What `collect` reuses from scan to scan: the entries found in every worker's
/// index and their keys, in one buffer.
#[derive(Default)]
struct Walk {
    keys: Vec<u8>,
    found: Vec<Found>,
}

/// The keys of a scan (each `Some` until its read takes it) and where the index walk
/// found them.
type Keys = (Vec<Option<Vec<u8>>>, Vec<Loc>);

/// The first `count` keys >= `start` over all workers, in order, each with its
/// location then. Up to `count` entries come from each worker; only the keys kept
/// are allocated.
fn collect(shared: &Shared, start: &[u8], count: usize, walk: &mut Walk) -> Result<Keys> {
    if count == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    walk.keys.clear();
    walk.found.clear();
    for w in &shared.workers {
        let idx = crate::index::lock(&w.index)?;
        idx.entries_into(start, count, &mut walk.keys, &mut walk.found);
    }
    let Walk { keys, found } = walk;
    if shared.workers.len() > 1 {
        found.sort_unstable_by(|a, b| a.key(keys).cmp(b.key(keys)));
    }
    found.truncate(count);
    Ok((
        found.iter().map(|f| Some(f.key(keys).to_vec())).collect(),
        found.iter().map(|f| f.loc).collect(),
    ))
}

/// The scan thread's loop; `tx` sends to `rx` (completions use it).
pub(crate) fn run(shared: &Shared, rx: Receiver<Event>, tx: Sender<Event>, in_flight: usize) {
    let in_flight = in_flight.max(1);
    let mut scans: Vec<Option<Scan>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut active = 0;
    let mut stopping = false;
    let mut walk = Walk::default();
    // Reads issued together (positions in the scan and keys), per worker: one message
    // each.
    let mut batches: Vec<Vec<(usize, Vec<u8>)>> =
        shared.workers.iter().map(|_| Vec::new()).collect();
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
                let (keys, locs) = match collect(shared, &start, count, &mut walk) {
                    Ok(k) => k,
                    Err(e) => {
                        done.call(Err(e));
                        continue;
                    }
                };
                if keys.is_empty() {
                    done.call(Ok(Reply::Pairs(Vec::new())));
                    continue;
                }
                let scan = Scan {
                    values: vec![None; keys.len()],
                    keys,
                    locs,
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
                for (i, key, r) in replies {
                    let i = i as usize;
                    if key.is_some() {
                        s.keys[i] = key;
                    }
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
            // The key goes with the read and comes back with its reply.
            if let Some(key) = s.keys[s.next].take() {
                batches[shared.worker_of(&key)].push((s.next, key));
                s.pending += 1;
            }
            s.next += 1;
        }
        for (w, b) in batches.iter_mut().enumerate() {
            if b.is_empty() {
                continue;
            }
            let batch: Arc<dyn Batched> = Arc::new(Batch {
                scan: id,
                tx: tx.clone(),
                replies: Mutex::new(Replies {
                    left: b.len(),
                    got: Vec::with_capacity(b.len()),
                }),
            });
            // The worker reads the slot the walk found and checks that it still holds
            // the key (else it asks its index): no second lookup.
            let ops = b
                .drain(..)
                .map(|(i, key)| {
                    let done = Done::part(batch.clone(), i as u32);
                    (WReq::Get(key), Some(s.locs[i]), done)
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
                    .filter_map(|(k, v)| Some((k?, v?)))
                    .collect::<Vec<Pair>>()),
            };
            s.done.call(r.map(Reply::Pairs));
        }
    }
}
