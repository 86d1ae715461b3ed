//! A request inside a worker ([`Op`]: the request, its completion, how far it has got)
//! and the table of the requests taken in, by id (ids are reused).

use super::keys::Hold;
use crate::request::{Done, WReq};
use crate::slab::Loc;

/// How far a request has got.
pub(super) enum Stage {
    Start,
    /// The item must be written at `target`; `old` is freed after it is durable.
    Write {
        target: Loc,
        old: Option<Loc>,
        fresh: bool,
        follow_chain: bool,
    },
    /// The item write is prepared or in flight.
    Written {
        old: Option<Loc>,
    },
    /// A tombstone must be written at `loc`.
    Free {
        loc: Loc,
    },
    /// The tombstone write is prepared or in flight.
    Freed {
        loc: Loc,
    },
}

pub(super) struct Op {
    pub(super) req: WReq,
    pub(super) done: Option<Done>,
    pub(super) stage: Stage,
    /// Counted as a cache hit or miss already.
    pub(super) counted: bool,
    /// A get retried once already after finding another item (see `mismatch`).
    pub(super) retried: bool,
    /// How this write holds its key in the worker's `keys` (released when it
    /// finishes).
    pub(super) hold: Hold,
    /// For a get of a small item: where to look for its key without asking the
    /// index, either the location a scan's walk of the index found, or the one this
    /// get's own lookup found before it waited for that page's read or write. The
    /// slot there is checked to hold the key; anything else (another item, a
    /// tombstone, a damaged slot) sends the get to the index as if it had no hint.
    /// Taken (reset to None) when used.
    pub(super) at: Option<Loc>,
}

/// The requests a worker has taken in and not finished.
#[derive(Default)]
pub(super) struct Ops {
    ops: Vec<Option<Op>>,
    free: Vec<usize>,
    active: usize,
}

impl Ops {
    /// Takes a request in; returns its id.
    pub(super) fn admit(&mut self, req: WReq, at: Option<Loc>, done: Done) -> usize {
        let op = Op {
            req,
            done: Some(done),
            stage: Stage::Start,
            counted: false,
            retried: false,
            hold: Hold::None,
            at,
        };
        let id = match self.free.pop() {
            Some(i) => {
                self.ops[i] = Some(op);
                i
            }
            None => {
                self.ops.push(Some(op));
                self.ops.len() - 1
            }
        };
        self.active += 1;
        id
    }

    /// Requests taken in and not finished.
    pub(super) fn active(&self) -> usize {
        self.active
    }

    /// The request `id`, if it is still under way.
    pub(super) fn try_get(&self, id: usize) -> Option<&Op> {
        self.ops[id].as_ref()
    }

    #[inline]
    #[expect(
        clippy::expect_used,
        reason = "ids are only held (in unit queues, acks, key queues, deferred) while \
                  their request is under way"
    )]
    pub(super) fn get(&self, id: usize) -> &Op {
        self.ops[id].as_ref().expect("live op")
    }

    #[inline]
    #[expect(
        clippy::expect_used,
        reason = "ids are only held while their request is under way"
    )]
    pub(super) fn get_mut(&mut self, id: usize) -> &mut Op {
        self.ops[id].as_mut().expect("live op")
    }

    /// Takes a finished request out (None if it finished already); its id is free.
    pub(super) fn retire(&mut self, id: usize) -> Option<Op> {
        let op = self.ops[id].take()?;
        self.free.push(id);
        self.active -= 1;
        Some(op)
    }
}
