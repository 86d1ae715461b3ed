//! Completions. A reaped I/O is counted, split back into one completion per unit (a
//! joined write of consecutive pages completes each of its pages), and each unit
//! becomes idle: a failure poisons the engine and fails every request on the unit;
//! otherwise the page enters the cache (write-through; large items bypass it), the
//! requests the write acknowledges move on (a moved item's old slot gets its
//! tombstone, a freed slot joins the free list) and those waiting for the unit are
//! stepped again.

use super::op::Stage;
use super::read::LargeGet;
use super::state::Worker;
use crate::io::{IoDone, IoKind, PAGE};
use crate::slab::{self, Unit};
use kvapi::{Error, Reply};
use std::sync::atomic::Ordering::Relaxed;

impl Worker {
    pub(super) fn complete(&mut self, d: IoDone) {
        let unit = Unit(d.tag);
        let class = unit.class();
        let len = d.buf.len() as u64;
        match d.kind {
            IoKind::Read => {
                self.stats.reads.fetch_add(1, Relaxed);
                self.stats.bytes_read.fetch_add(len, Relaxed);
            }
            IoKind::Write => {
                self.stats.writes.fetch_add(1, Relaxed);
                self.stats.bytes_written.fetch_add(len, Relaxed);
            }
        }
        let large = slab::is_large(class);
        let unit_len = if large { d.buf.len() } else { PAGE };
        for i in 0..d.buf.len() / unit_len {
            let u = Unit::new(class, unit.n() + i as u64);
            let page = &d.buf[i * unit_len..(i + 1) * unit_len];
            self.complete_unit(u, d.kind, page, d.result.as_ref().err());
        }
        if large {
            self.queue.pool.drop_large(d.buf);
        } else {
            self.queue.pool.put(d.buf);
        }
        self.run_deferred();
    }

    /// Completion of one unit's I/O (a coalesced write completes several).
    fn complete_unit(
        &mut self,
        unit: Unit,
        kind: IoKind,
        buf: &[u8],
        err: Option<&std::io::Error>,
    ) {
        let class = unit.class();
        let Some(busy) = self.units.remove(unit) else {
            return;
        };
        if let Some(e) = err {
            let path = self.slabs[class].path.display().to_string();
            let m = format!(
                "{:?} of {} at offset {}: {e}",
                kind,
                path,
                unit.file_offset()
            );
            self.poison.set(m.clone());
            for id in busy.acks.into_iter().chain(busy.waiters) {
                self.finish(
                    id,
                    Err(Error::io(
                        m.clone(),
                        std::io::Error::new(e.kind(), e.to_string()),
                    )),
                );
            }
            return;
        }
        let large = slab::is_large(class);
        if !large {
            self.cache.put(unit, buf);
        }
        for id in busy.acks {
            match std::mem::replace(&mut self.ops.get_mut(id).stage, Stage::Start) {
                Stage::Written { old: Some(old) } => self.write_tomb(id, old),
                Stage::Freed { loc } => {
                    self.slabs[loc.class()].free.freed(loc.slot());
                    self.finish(id, Ok(Reply::Done));
                }
                _ => self.finish(id, Ok(Reply::Done)),
            }
        }
        for id in busy.waiters {
            if large && kind == IoKind::Read {
                match self.large_get(id, unit, buf) {
                    Some(LargeGet::Answer(r)) => {
                        self.finish(id, r);
                        continue;
                    }
                    Some(LargeGet::Mismatch) => {
                        if !self.mismatch(id, unit) {
                            let r = Err(self.corrupt(unit, "indexed slot holds another item"));
                            self.finish(id, r);
                        }
                        continue;
                    }
                    None => {}
                }
            }
            self.step(id);
        }
    }
}
