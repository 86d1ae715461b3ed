//! What the committer knows of its batches in flight, apart from how they are
//! written: which writes are done, which syncs cover them, and so how far the log
//! is written. Pure bookkeeping, so the rules are tested without a device:
//! - a batch is written when all its writes (two when it wraps past the end of the
//!   log) completed, in whatever order the device completed them;
//! - with a sync per group commit (`fdatasync`), a sync covers the batches written
//!   *before it was issued*: a write that completes while the sync is in flight is
//!   not covered by it, and waits for the next;
//! - the log is written up to the end of the longest run of finished batches from
//!   the oldest: a later batch finished first does not move it.

use std::collections::VecDeque;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Writes still in flight.
    Writing(u8),
    /// Written, waiting for a sync (only with a sync per group commit).
    Written,
    /// Written and covered by the sync in flight.
    Covered,
    /// Durable as the mode asks.
    Done,
}

struct Batch<B> {
    end: u64,
    state: State,
    buf: B,
}

/// The batches in flight, oldest first; `B` is each batch's buffer, kept until
/// the device is done with it.
pub struct Pipeline<B> {
    batches: VecDeque<Batch<B>>,
    /// The id of the oldest batch in `batches` (ids count batches from 0).
    first: u64,
    /// Batches need a sync after their writes.
    sync: bool,
    /// A sync is in flight.
    syncing: bool,
}

impl<B> Pipeline<B> {
    pub fn new(sync: bool) -> Pipeline<B> {
        Pipeline {
            batches: VecDeque::new(),
            first: 0,
            sync,
            syncing: false,
        }
    }

    /// A batch ending at `end`, written with `writes` writes (1 or 2), in `buf`;
    /// returns its id.
    pub fn push(&mut self, end: u64, writes: u8, buf: B) -> u64 {
        debug_assert!(writes > 0);
        self.batches.push_back(Batch {
            end,
            state: State::Writing(writes),
            buf,
        });
        self.first + self.batches.len() as u64 - 1
    }

    /// Batch `id`'s buffer, while it is in flight.
    pub fn buf(&self, id: u64) -> Option<&B> {
        let i = id.checked_sub(self.first)?;
        self.batches.get(i as usize).map(|b| &b.buf)
    }

    /// Batches in flight.
    pub fn len(&self) -> usize {
        self.batches.len()
    }

    /// Anything in flight: a batch or a sync.
    #[cfg(test)]
    pub fn busy(&self) -> bool {
        !self.batches.is_empty() || self.syncing
    }

    /// One write of batch `id` completed.
    pub fn write_done(&mut self, id: u64) {
        let Some(b) = id
            .checked_sub(self.first)
            .and_then(|i| self.batches.get_mut(i as usize))
        else {
            return;
        };
        if let State::Writing(n) = b.state {
            b.state = match (n, self.sync) {
                (1, true) => State::Written,
                (1, false) => State::Done,
                (n, _) => State::Writing(n - 1),
            };
        }
    }

    /// Whether another batch may be taken now, below the depth: always without
    /// syncs; with them, only while no batch waits for a sync not yet issued (one
    /// is being written, or is written and waits for the sync in flight to end).
    /// Transactions queued meanwhile then go out as one batch under the next sync,
    /// not as many small ones that wait for it anyway (more writes, less packing:
    /// YCSB A at 1M records with fdatasync loaded at 79-82K inserts/s so, against
    /// 112-125K with one batch at a time; results/wal/pipeline-1m).
    pub fn may_take(&self) -> bool {
        !self.sync
            || !self
                .batches
                .iter()
                .any(|b| matches!(b.state, State::Writing(_) | State::Written))
    }

    /// Whether a sync should be issued now: a batch is written and not covered, and
    /// no sync is in flight (one at a time: the writes that complete meanwhile wait
    /// for the next, a group commit of syncs).
    pub fn wants_sync(&self) -> bool {
        self.sync && !self.syncing && self.batches.iter().any(|b| b.state == State::Written)
    }

    /// A sync was issued: it covers the batches written so far.
    pub fn sync_issued(&mut self) {
        self.syncing = true;
        for b in &mut self.batches {
            if b.state == State::Written {
                b.state = State::Covered;
            }
        }
    }

    /// The sync in flight completed.
    pub fn sync_done(&mut self) {
        self.syncing = false;
        for b in &mut self.batches {
            if b.state == State::Covered {
                b.state = State::Done;
            }
        }
    }

    /// Takes the finished batches at the front: the end of the last of them (the
    /// log is written up to it) and their buffers; `None` when the oldest batch is
    /// not finished.
    pub fn advance(&mut self) -> Option<(u64, Vec<B>)> {
        let mut end = None;
        let mut bufs = Vec::new();
        while self.batches.front().is_some_and(|b| b.state == State::Done) {
            let Some(b) = self.batches.pop_front() else {
                break;
            };
            self.first += 1;
            end = Some(b.end);
            bufs.push(b.buf);
        }
        end.map(|e| (e, bufs))
    }

    /// Every batch's buffer, the device done or not (after a failure, to leak them
    /// where the device may still write them).
    pub fn drain(&mut self) -> Vec<B> {
        self.first += self.batches.len() as u64;
        self.syncing = false;
        self.batches.drain(..).map(|b| b.buf).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_batch_written_first_does_not_move_the_log() {
        let mut p = Pipeline::new(false);
        let a = p.push(10, 1, 'a');
        let b = p.push(20, 2, 'b');
        let c = p.push(30, 1, 'c');
        p.write_done(c);
        p.write_done(b);
        assert!(p.advance().is_none(), "the oldest is still in flight");
        p.write_done(a);
        assert_eq!(p.advance(), Some((10, vec!['a'])), "b has one write left");
        p.write_done(b);
        assert_eq!(p.advance(), Some((30, vec!['b', 'c'])));
        assert!(!p.busy() && !p.wants_sync());
    }

    #[test]
    fn a_sync_covers_only_the_writes_done_before_it_was_issued() {
        let mut p = Pipeline::new(true);
        let a = p.push(10, 1, 'a');
        let b = p.push(20, 1, 'b');
        assert!(!p.wants_sync(), "nothing written yet");
        p.write_done(a);
        assert!(p.advance().is_none(), "written is not synced");
        assert!(p.wants_sync());
        p.sync_issued();
        assert!(!p.wants_sync(), "one sync at a time");
        p.write_done(b);
        assert!(!p.wants_sync(), "b waits for the sync in flight to end");
        p.sync_done();
        assert_eq!(p.advance(), Some((10, vec!['a'])), "b's write came after");
        assert!(p.wants_sync());
        p.sync_issued();
        assert!(p.busy());
        p.sync_done();
        assert_eq!(p.advance(), Some((20, vec!['b'])));
        assert!(!p.busy());
    }

    #[test]
    fn with_syncs_one_batch_at_most_waits_for_a_sync_not_yet_issued() {
        let mut p = Pipeline::new(true);
        assert!(p.may_take());
        let a = p.push(10, 1, 'a');
        assert!(!p.may_take(), "a is being written");
        p.write_done(a);
        assert!(!p.may_take(), "a waits for its sync");
        p.sync_issued();
        assert!(
            p.may_take(),
            "a's sync is in flight: b may be written meanwhile"
        );
        let b = p.push(20, 1, 'b');
        p.write_done(b);
        assert!(!p.may_take(), "b waits for the next sync");
        let mut q = Pipeline::new(false);
        q.push(10, 1, 'a');
        assert!(q.may_take(), "without syncs, up to the depth");
    }

    #[test]
    fn a_sync_done_before_the_oldest_batch_is_written_waits_for_it() {
        let mut p = Pipeline::new(true);
        let a = p.push(10, 1, 'a');
        let b = p.push(20, 1, 'b');
        p.write_done(b);
        p.sync_issued();
        p.sync_done();
        assert!(p.advance().is_none(), "a is not written");
        p.write_done(a);
        p.sync_issued();
        p.sync_done();
        assert_eq!(p.advance(), Some((20, vec!['a', 'b'])));
        assert_eq!(p.push(30, 1, 'c'), 2, "ids go on counting");
    }
}
