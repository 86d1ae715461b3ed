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
/// index and their keys, in one buffer, and where each worker's entries begin.
#[derive(Default)]
struct Walk {
    keys: Vec<u8>,
    found: Vec<Found>,
    /// Where each worker's entries begin in `found`, and where the last end.
    runs: Vec<usize>,
    /// Each run's next entry while merging.
    heads: Vec<usize>,
}

/// The keys of a scan (each `Some` until its read takes it) and where the index walk
/// found them.
type Keys = (Vec<Option<Vec<u8>>>, Vec<Loc>);

/// The first `count` keys >= `start` over all workers, in order, each with its
/// location then. Up to `count` entries come from each worker, already in order;
/// their runs are merged (a key lives in one worker's index only) and only the keys
/// kept are allocated.
fn collect(shared: &Shared, start: &[u8], count: usize, walk: &mut Walk) -> Result<Keys> {
    if count == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    walk.keys.clear();
    walk.found.clear();
    walk.runs.clear();
    for w in &shared.workers {
        walk.runs.push(walk.found.len());
        let idx = crate::index::lock(&w.index)?;
        idx.entries_into(start, count, &mut walk.keys, &mut walk.found);
    }
    walk.runs.push(walk.found.len());
    let Walk {
        keys,
        found,
        runs,
        heads,
    } = walk;
    heads.clear();
    heads.extend_from_slice(&runs[..runs.len() - 1]);
    let n = count.min(found.len());
    let mut out_keys = Vec::with_capacity(n);
    let mut out_locs = Vec::with_capacity(n);
    merge_runs(found, keys, heads, &runs[1..], n, |f| {
        out_keys.push(Some(f.key(keys).to_vec()));
        out_locs.push(f.loc);
    });
    Ok((out_keys, out_locs))
}

/// Hands `take(f)` the first `n` entries of the sorted runs `found[heads[i]..ends[i]]`
/// in key order (`heads` moves along). A scan took 100 entries from two workers and
/// sorted them (about 700 key comparisons; the sort and part of its `memcmp` about 1%
/// of YCSB E's samples, results/kvell-4m-ab/registered-buffers/profile-e-base.txt);
/// merging the two runs for the first 50 takes at most 50 comparisons, and with more
/// workers each step picks the least head of the few runs.
fn merge_runs(
    found: &[Found],
    keys: &[u8],
    heads: &mut [usize],
    ends: &[usize],
    n: usize,
    mut take: impl FnMut(&Found),
) {
    for _ in 0..n {
        let mut best: Option<usize> = None;
        for (r, &h) in heads.iter().enumerate() {
            if h < ends[r] && best.is_none_or(|b| found[h].key(keys) < found[heads[b]].key(keys)) {
                best = Some(r);
            }
        }
        let Some(b) = best else { return };
        take(&found[heads[b]]);
        heads[b] += 1;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs as the workers' index walks give them: each sorted, keys disjoint.
    fn runs(sets: &[&[&str]]) -> (Vec<Found>, Vec<u8>, Vec<usize>) {
        let (mut found, mut keys, mut bounds) = (Vec::new(), Vec::new(), Vec::new());
        for (w, set) in sets.iter().enumerate() {
            bounds.push(found.len());
            for (i, k) in set.iter().enumerate() {
                found.push(Found::new(keys.len(), k.len(), Loc::new(w, i as u64)));
                keys.extend_from_slice(k.as_bytes());
            }
        }
        bounds.push(found.len());
        (found, keys, bounds)
    }

    fn merged(sets: &[&[&str]], n: usize) -> Vec<String> {
        let (found, keys, bounds) = runs(sets);
        let mut heads = bounds[..bounds.len() - 1].to_vec();
        let mut out = Vec::new();
        merge_runs(&found, &keys, &mut heads, &bounds[1..], n, |f| {
            out.push(String::from_utf8(f.key(&keys).to_vec()).unwrap())
        });
        out
    }

    #[test]
    fn the_workers_runs_merge_in_key_order_up_to_the_count() {
        let sets: &[&[&str]] = &[&["a", "d", "e", "k"], &["b", "c", "f"], &[], &["ab", "z"]];
        assert_eq!(
            merged(sets, 100),
            ["a", "ab", "b", "c", "d", "e", "f", "k", "z"]
        );
        assert_eq!(merged(sets, 4), ["a", "ab", "b", "c"]);
        assert_eq!(merged(sets, 0), Vec::<String>::new());
        // a prefix sorts first, as in the index
        assert_eq!(merged(&[&["user1"], &["user"]], 2), ["user", "user1"]);
        assert_eq!(merged(&[&[], &[]], 5), Vec::<String>::new());
    }
}
