//! The write path.
//! - Update, same class (small): the page image (cache copy, or read first) gets the
//!   new item at the same slot; the page is written; acknowledged when the write
//!   completed (`complete.rs`), and the page enters the cache.
//! - Insert, or update that changes class (or any large item): a slot is taken (free
//!   list, else appended) and the index pointed at it in the same index walk
//!   (`Index::upsert`); the item is written (a page at the start of a fresh appended
//!   page needs no read), then a tombstone over the old slot; acknowledged after both,
//!   so a crash never leaves the old copy as the only one after the update was
//!   acknowledged, and a later delete cannot uncover it.
//! - Delete: removed from the index, a tombstone written (page read first if
//!   uncached), the slot put on the free list when that write completed.
//! - Several updates of one page join its prepared write while it is not yet handed
//!   to the backend (`units.rs`). A failed write poisons the engine: later writes get
//!   `Error::Poisoned`.

use super::keys::{Hold, Keys};
use super::op::Stage;
use super::state::Worker;
use super::units::{Busy, BusyState};
use crate::io::{AlignedBuf, IoKind, PAGE};
use crate::request::WReq;
use crate::slab::{self, Loc, Slot, Unit};
use kvapi::{Error, Reply};
use std::collections::VecDeque;

/// The hash of a write's key (its entry in the worker's `keys`).
fn write_key(req: &WReq) -> u64 {
    debug_assert!(!matches!(req, WReq::Get(_)), "a get takes no key lock");
    Keys::hash(req.key())
}

impl Worker {
    /// Takes the key of write `id` for its sequence (shared for an update in place);
    /// false if it must wait (then `id` waits in the key's queue and is started again
    /// when `finish` hands it the key). A write that waited is granted the key
    /// exclusively.
    pub(super) fn acquire_key(&mut self, id: usize, shared: bool) -> bool {
        let op = self.ops.get(id);
        if op.hold != Hold::None {
            return true;
        }
        let key = write_key(&op.req);
        self.take_key(id, key, shared)
    }

    /// `acquire_key` for a write that holds nothing yet, its key's hash computed.
    fn take_key(&mut self, id: usize, key: u64, shared: bool) -> bool {
        match self.keys.take(id, key, shared) {
            Some(hold) => {
                self.ops.get_mut(id).hold = hold;
                true
            }
            None => false,
        }
    }

    pub(super) fn start_put(&mut self, id: usize) {
        if let Err(e) = self.poison.check() {
            return self.finish(id, Err(e));
        }
        let t = self.index_clock();
        let op = self.ops.get(id);
        let WReq::Put(key, value) = &op.req else {
            unreachable!()
        };
        let Some(class) = self.fmt.class_of(key.len(), value.len()) else {
            // Not reached: `LIMITS` is checked at submit, and the largest class holds
            // the largest key with the largest value.
            let e = Error::InvalidArgument(format!(
                "an item of a {}-byte key and a {}-byte value fits no size class",
                key.len(),
                value.len()
            ));
            return self.finish(id, Err(e));
        };
        let in_place = |old: Option<Loc>| matches!(old, Some(o) if o.class() == class && !slab::is_large(class));
        // The key this write takes once the index walk below has decided how (no
        // other write of the key is under way, so it is granted either way).
        let mut take = None;
        if op.hold == Hold::None {
            let hash = write_key(&op.req);
            if self.keys.busy(hash) {
                // Other writes of the key are under way: whether this one is an
                // update in place decides whether it may go beside them.
                let old = match crate::index::lock(&self.index).map(|idx| idx.get(key)) {
                    Ok(old) => old,
                    Err(e) => return self.finish(id, Err(e)),
                };
                if !self.take_key(id, hash, in_place(old)) {
                    // waits for the key's earlier writes, then starts again holding
                    // the key exclusively
                    return self.index_time(t);
                }
            } else {
                take = Some(hash);
            }
        }
        // One index walk finds the old copy and, for a new slot, allocates and
        // inserts it. With the key held, the old copy is the one seen when it was
        // taken: only this write may move it.
        let mut got = None;
        let mut failed = None;
        let (slabs, io, poison, clean) =
            (&mut self.slabs, &mut self.io, &self.poison, &mut self.clean);
        let mut index_bytes = self.index_bytes;
        let WReq::Put(key, _) = &self.ops.get(id).req else {
            unreachable!()
        };
        let old = crate::index::lock(&self.index).map(|mut index| {
            let old = index.upsert(key, |old| {
                if in_place(old) {
                    return None;
                }
                match slabs[class].allocate(io.as_mut(), poison, clean, class) {
                    Ok(a) => {
                        got = Some(a);
                        Some(a.loc)
                    }
                    Err(e) => {
                        failed = Some(e);
                        None
                    }
                }
            });
            index_bytes = index.bytes();
            old
        });
        self.index_time(t);
        self.index_changed(index_bytes);
        let old = match old {
            Ok(old) => old,
            Err(e) => return self.finish(id, Err(e)),
        };
        if let Some(e) = failed {
            return self.finish(id, Err(e));
        }
        if let Some(hash) = take {
            let granted = self.take_key(id, hash, got.is_none());
            debug_assert!(granted, "a key no write held");
        }
        let (target, old, fresh, follow_chain) = match got {
            Some(a) => (a.loc, old, a.fresh, a.follow_chain),
            None => {
                #[expect(
                    clippy::expect_used,
                    reason = "no slot was taken and none failed, so `upsert` found the key \
                              in place: `old` is its slot"
                )]
                let target = old.expect("in place");
                (target, None, false, false)
            }
        };
        self.write_item(id, target, old, fresh, follow_chain);
    }

    pub(super) fn start_delete(&mut self, id: usize) {
        if let Err(e) = self.poison.check() {
            return self.finish(id, Err(e));
        }
        let WReq::Delete(key) = &self.ops.get(id).req else {
            unreachable!()
        };
        let old =
            match crate::index::lock(&self.index).map(|mut idx| (idx.remove(key), idx.bytes())) {
                Ok((old, bytes)) => {
                    self.index_changed(bytes);
                    old
                }
                Err(e) => return self.finish(id, Err(e)),
            };
        match old {
            None => self.finish(id, Ok(Reply::Done)),
            Some(loc) => self.write_tomb(id, loc),
        }
    }

    /// Gets a writable image of `unit` for a change, or arranges to be stepped again.
    /// Returns None if the request now waits.
    fn image_for(&mut self, id: usize, unit: Unit, fresh: bool) -> Option<()> {
        if let Some(b) = self.units.get_mut(unit) {
            if matches!(b.state, BusyState::Prepared(_)) && !slab::is_large(unit.class()) {
                return Some(());
            }
            b.waiters.push_back(id);
            return None;
        }
        if slab::is_large(unit.class()) {
            return Some(()); // the caller builds the image
        }
        let mut buf = self.queue.pool.get(PAGE);
        if let Some(page) = self.cache.get(unit) {
            buf[..PAGE].copy_from_slice(page);
            self.count_cache(id, true);
        } else if fresh {
            buf.fill(0);
        } else {
            self.queue.pool.put(buf);
            self.count_cache(id, false);
            self.start_read(id, unit);
            return None;
        }
        self.prepare(unit, buf, Vec::new());
        Some(())
    }

    /// `unit` gets a prepared write of image `buf`, queued for the backend.
    fn prepare(&mut self, unit: Unit, buf: AlignedBuf, acks: Vec<usize>) {
        self.units.insert(
            unit,
            Busy {
                state: BusyState::Prepared(buf),
                acks,
                waiters: VecDeque::new(),
            },
        );
        self.queue.push(unit, IoKind::Write);
    }

    pub(super) fn write_item(
        &mut self,
        id: usize,
        target: Loc,
        old: Option<Loc>,
        fresh: bool,
        follow: bool,
    ) {
        let unit = target.unit();
        let class = target.class();
        self.ops.get_mut(id).stage = Stage::Write {
            target,
            old,
            fresh,
            follow_chain: follow,
        };
        if self.image_for(id, unit, fresh).is_none() {
            return;
        }
        self.ts += 1;
        let ts = self.ts;
        let off = target.offset_in_unit();
        if slab::is_large(class) {
            let WReq::Put(key, value) = &self.ops.get(id).req else {
                unreachable!()
            };
            let used = self.fmt.large_pages(key.len(), value.len());
            let mut buf = self.queue.pool.large(used * PAGE);
            self.fmt.write_large(&mut buf, ts, key, value);
            self.prepare(unit, buf, vec![id]);
        } else {
            let size = slab::SMALL[class];
            if follow {
                let fmt = self.fmt;
                let b = &self.units.prepared(unit)[off..off + size];
                if let Ok(Slot::Tomb { next, .. }) = fmt.parse(b, slab::room(class)) {
                    self.slabs[class].free.continue_chain(next);
                }
            }
            let WReq::Put(key, value) = &self.ops.get(id).req else {
                unreachable!()
            };
            let busy = self.units.busy(unit);
            let BusyState::Prepared(b) = &mut busy.state else {
                unreachable!("unit not prepared")
            };
            self.fmt
                .write_small(&mut b[off..off + size], ts, key, value);
            busy.acks.push(id);
        }
        self.ops.get_mut(id).stage = Stage::Written { old };
    }

    pub(super) fn write_tomb(&mut self, id: usize, loc: Loc) {
        let unit = loc.unit();
        self.ops.get_mut(id).stage = Stage::Free { loc };
        if self.image_for(id, unit, false).is_none() {
            return;
        }
        self.ts += 1;
        let ts = self.ts;
        let class = loc.class();
        let next = self.slabs[class].free.next_for_tombstone();
        if slab::is_large(class) {
            let mut buf = self.queue.pool.large(PAGE);
            self.fmt.write_tomb(&mut buf, ts, next);
            self.prepare(unit, buf, vec![id]);
        } else {
            let off = loc.offset_in_unit();
            let fmt = self.fmt;
            let busy = self.units.busy(unit);
            let BusyState::Prepared(b) = &mut busy.state else {
                unreachable!("unit not prepared")
            };
            fmt.write_tomb(&mut b[off..off + slab::SMALL[class]], ts, next);
            busy.acks.push(id);
        }
        self.ops.get_mut(id).stage = Stage::Freed { loc };
    }
}
