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
            let kv = small_value(self.fmt, page, loc);
            let WReq::Get(key) = &self.ops.get(id).req else {
                unreachable!()
            };
            let found = matches!(&kv, Ok((k, _)) if k == key);
            // The index is ahead of the cache while a write to the slot is pending:
            // wait for it (see `mismatch`).
            if found || !self.mismatch(id, unit) {
                self.count_cache(id, true);
                self.reply_get(id, loc, kv);
            }
            return;
        }
        self.count_cache(id, false);
        if self.units.contains(unit) {
            return self.units.wait_on(id, unit);
        }
        self.start_read(id, unit);
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

    fn reply_get(&mut self, id: usize, loc: Loc, kv: Result<(Vec<u8>, Vec<u8>), String>) {
        let WReq::Get(key) = &self.ops.get(id).req else {
            unreachable!()
        };
        let r = match kv {
            Ok((k, v)) if k == *key => Ok(Reply::Value(Some(v))),
            Ok((k, _)) => Err(format!(
                "index points at a slot holding another key ({} bytes)",
                k.len()
            )),
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

/// Key and value of the small item at `loc` in its cached `page`.
fn small_value(fmt: Format, page: &[u8], loc: Loc) -> Result<(Vec<u8>, Vec<u8>), String> {
    let off = loc.offset_in_unit();
    let b = &page[off..off + slab::SMALL[loc.class()]];
    match fmt.parse(b, slab::room(loc.class()))? {
        Slot::Item {
            key_len, value_len, ..
        } => {
            let (k, v) = slab::small_kv(b, key_len, value_len);
            Ok((k.to_vec(), v.to_vec()))
        }
        other => Err(format!("indexed slot holds {other:?}")),
    }
}
