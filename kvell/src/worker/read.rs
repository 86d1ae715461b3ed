//! The read path. A get looks its key up in the index; a cached page answers at once;
//! otherwise the unit is read (a 4 KiB page, or a large item's whole slot) and the
//! get is answered when the read completes. The index is updated when a write is
//! dispatched, the cache when it completes, so a get that finds another item where
//! the index points waits for the pending write of that unit (`mismatch`); gets are
//! answered from the cache while an in-place write of the same page is pending (the
//! acknowledged value), never from a buffer not yet written.

use super::op::Stage;
use super::state::Worker;
use super::units::{Busy, BusyState};
use crate::io::IoKind;
use crate::request::WReq;
use crate::slab::{self, Format, Loc, Slot, Unit};
use kvapi::{Error, Reply, Result};
use std::collections::VecDeque;

pub(super) enum LargeGet {
    Answer(Result<Reply>),
    /// The slot holds another item (a write to it is pending).
    Mismatch,
}

impl Worker {
    pub(super) fn get(&mut self, id: usize) {
        // Where the item was last seen, if known: no index lookup when the slot there
        // still holds the key (`Op::at`).
        if let Some(loc) = self.ops.get_mut(id).at.take()
            && self.get_at(id, loc)
        {
            return;
        }
        let t = self.index_clock();
        let loc = {
            let WReq::Get(key) = &self.ops.get(id).req else {
                unreachable!()
            };
            crate::index::lock(&self.index).map(|idx| idx.get(key))
        };
        self.index_time(t);
        let loc = match loc {
            Ok(loc) => loc,
            Err(e) => return self.finish(id, Err(e)),
        };
        let Some(loc) = loc else {
            return self.finish(id, Ok(Reply::Value(None)));
        };
        let unit = loc.unit();
        if !slab::is_large(loc.class())
            && let Some(page) = self.cache.get(unit)
        {
            let WReq::Get(key) = &self.ops.get(id).req else {
                unreachable!()
            };
            let v = small_value(self.fmt, page, loc, key);
            // The index is ahead of the cache while a write to the slot is pending:
            // wait for it (see `mismatch`).
            if matches!(v, Ok(Some(_))) || !self.mismatch(id, unit) {
                self.count_cache(id, true);
                self.reply_get(id, loc, v);
            }
            return;
        }
        self.get_page(id, loc);
    }

    /// A get whose page is not cached: it waits for the I/O already on the page, or
    /// reads it. A small item's get then looks at `loc` first, not in the index again
    /// (a large one asks the index when its read completes, `large_get`).
    fn get_page(&mut self, id: usize, loc: Loc) {
        self.count_cache(id, false);
        if !slab::is_large(loc.class()) {
            self.ops.get_mut(id).at = Some(loc);
        }
        let unit = loc.unit();
        if self.units.contains(unit) {
            self.units.wait_on(id, unit);
        } else {
            self.start_read(id, unit);
        }
    }

    /// A get by a known location (`Op::at`): answers it if the slot at `loc` holds its
    /// key, in the cache or after reading the page; returns false when the index must
    /// be asked (a large item, another item or no item there, a damaged slot: the
    /// lookup reports what the index says about it, a damaged slot included).
    ///
    /// Why a location known from before is as good as a lookup: a location is only
    /// taken from the index, and a key leaves a slot only by a write that changes the
    /// index first and the slot later (a move's tombstone follows the new copy's
    /// completion). The item still in that slot was the key's current value when the
    /// location was found, which is after the get (or the scan) began: the get is
    /// linearized there. A newer value in the slot (an in-place update completed
    /// meanwhile) is found too, as the page enters the cache when its write completes.
    fn get_at(&mut self, id: usize, loc: Loc) -> bool {
        if slab::is_large(loc.class()) {
            return false;
        }
        let Some(page) = self.cache.get(loc.unit()) else {
            // A scan's location not yet checked: read the page, then check.
            self.get_page(id, loc);
            return true;
        };
        let WReq::Get(key) = &self.ops.get(id).req else {
            unreachable!()
        };
        match small_value(self.fmt, page, loc, key) {
            Ok(Some(v)) => {
                self.count_cache(id, true);
                self.finish(id, Ok(Reply::Value(Some(v))));
                true
            }
            _ => false,
        }
    }

    /// Reads `unit` for request `id` (a get, or a write that needs the page image).
    pub(super) fn start_read(&mut self, id: usize, unit: Unit) {
        self.units.insert(
            unit,
            Busy {
                state: BusyState::Reading,
                acks: Vec::new(),
                waiters: VecDeque::from([id]),
            },
        );
        self.queue.push(unit, IoKind::Read);
    }

    /// A get found another item than its key where the index points. That is normal
    /// while a write to the unit is pending (the index is updated when a write is
    /// dispatched, the cache when it completes): wait for it. Right after a read
    /// completes, the write may still be queued behind the get in the same wake-up,
    /// so the get is retried once after them. Returns false when none of this
    /// applies: a real inconsistency, reported by the caller.
    pub(super) fn mismatch(&mut self, id: usize, unit: Unit) -> bool {
        if self.units.contains(unit) {
            self.ops.get_mut(id).retried = false;
            self.units.wait_on(id, unit);
            return true;
        }
        if !self.ops.get(id).retried {
            self.ops.get_mut(id).retried = true;
            self.deferred.push(id);
            return true;
        }
        false
    }

    fn reply_get(&mut self, id: usize, loc: Loc, v: Result<Option<Vec<u8>>, String>) {
        let r = match v {
            Ok(Some(v)) => Ok(Reply::Value(Some(v))),
            Ok(None) => Err("index points at a slot holding another key".to_string()),
            Err(e) => Err(e),
        };
        let r = r.map_err(|detail| {
            let s = &self.slabs[loc.class()];
            Error::Corruption {
                file: s.path.clone(),
                offset: loc.unit().file_offset() + loc.offset_in_unit() as u64,
                detail,
            }
        });
        self.finish(id, r);
    }

    /// Answers a get waiting on a large read if its key still lives in that slot;
    /// None if the request is not a get of this unit (it is stepped normally).
    pub(super) fn large_get(&mut self, id: usize, unit: Unit, buf: &[u8]) -> Option<LargeGet> {
        let op = self.ops.try_get(id)?;
        let WReq::Get(key) = &op.req else { return None };
        if !matches!(op.stage, Stage::Start) {
            return None;
        }
        let loc = match crate::index::lock(&self.index).map(|idx| idx.get(key)) {
            Ok(loc) => loc?,
            Err(e) => return Some(LargeGet::Answer(Err(e))),
        };
        if loc.unit() != unit {
            return None;
        }
        let class = unit.class();
        Some(match self.fmt.parse(buf, slab::room(class)) {
            Ok(Slot::Item {
                ts,
                key_len,
                value_len,
            }) => match self.fmt.read_large(buf, ts, key_len, value_len) {
                Ok(Some((k, v))) if k == *key => LargeGet::Answer(Ok(Reply::Value(Some(v)))),
                Ok(Some(_)) => LargeGet::Mismatch,
                Ok(None) => LargeGet::Answer(Err(
                    self.corrupt(unit, "large item with pages of different timestamps")
                )),
                Err(e) => LargeGet::Answer(Err(self.corrupt(unit, &e))),
            },
            Ok(_) => LargeGet::Mismatch,
            Err(e) => LargeGet::Answer(Err(self.corrupt(unit, &e))),
        })
    }
}

/// The value of `key` if the small item at `loc` in its cached `page` is that key's
/// (checksum verified); None if the slot holds another key; an error for a free slot,
/// a tombstone or a damaged slot.
fn small_value(fmt: Format, page: &[u8], loc: Loc, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let off = loc.offset_in_unit();
    let b = &page[off..off + slab::SMALL[loc.class()]];
    match fmt.parse(b, slab::room(loc.class()))? {
        Slot::Item {
            key_len, value_len, ..
        } => {
            let (k, v) = slab::small_kv(b, key_len, value_len);
            Ok((k == key).then(|| v.to_vec()))
        }
        other => Err(format!("indexed slot holds {other:?}")),
    }
}
