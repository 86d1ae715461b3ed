//! Units and their I/O. A unit is a page of a small class or a whole large slot.
//! Invariant: at most one I/O per unit is in flight, and every request that needs a
//! busy unit waits in that unit's queue, except writes, which may still join a write
//! that is prepared but not yet handed to the backend (so several updates of one page
//! leave in one write). When no I/O is pending on a unit, its cached copy (if any) is
//! exactly what is on the device.

use crate::io::AlignedBuf;
use crate::slab::Unit;
use std::collections::{BTreeMap, VecDeque};

pub(super) enum BusyState {
    Reading,
    /// A write whose image can still take more changes.
    Prepared(AlignedBuf),
    InFlight,
}

/// A unit with I/O pending.
pub(super) struct Busy {
    pub(super) state: BusyState,
    /// Requests finished when the current write completes.
    pub(super) acks: Vec<usize>,
    /// Requests waiting for the unit to be idle.
    pub(super) waiters: VecDeque<usize>,
}

/// The busy units of a worker.
#[derive(Default)]
pub(super) struct Units(BTreeMap<Unit, Busy>);

impl Units {
    pub(super) fn contains(&self, unit: Unit) -> bool {
        self.0.contains_key(&unit)
    }

    pub(super) fn get_mut(&mut self, unit: Unit) -> Option<&mut Busy> {
        self.0.get_mut(&unit)
    }

    pub(super) fn insert(&mut self, unit: Unit, busy: Busy) {
        self.0.insert(unit, busy);
    }

    /// The unit becomes idle (its I/O completed).
    pub(super) fn remove(&mut self, unit: Unit) -> Option<Busy> {
        self.0.remove(&unit)
    }

    /// A unit known to be busy.
    #[inline]
    #[expect(
        clippy::expect_used,
        reason = "callers name a unit they just found busy or made busy"
    )]
    pub(super) fn busy(&mut self, unit: Unit) -> &mut Busy {
        self.0.get_mut(&unit).expect("busy unit")
    }

    /// Request `id` waits for the busy `unit` to be idle.
    pub(super) fn wait_on(&mut self, id: usize, unit: Unit) {
        self.busy(unit).waiters.push_back(id);
    }

    /// The image of a unit whose write is prepared, not yet handed to the backend.
    pub(super) fn prepared(&mut self, unit: Unit) -> &mut AlignedBuf {
        match &mut self.busy(unit).state {
            BusyState::Prepared(b) => b,
            _ => unreachable!("unit not prepared"),
        }
    }

    /// The prepared image of a unit whose write is handed to the backend now.
    pub(super) fn take_prepared(&mut self, unit: Unit) -> AlignedBuf {
        match std::mem::replace(&mut self.busy(unit).state, BusyState::InFlight) {
            BusyState::Prepared(buf) => buf,
            _ => unreachable!("write not prepared"),
        }
    }

    /// A write the backend refused goes back to prepared.
    pub(super) fn restore_prepared(&mut self, unit: Unit, buf: AlignedBuf) {
        self.busy(unit).state = BusyState::Prepared(buf);
    }
}
