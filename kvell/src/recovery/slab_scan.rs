//! The scan of one slab file: every slot parsed in file order, the copy of each key
//! with the highest timestamp kept (the others are stale), tombstones and torn large
//! items free, never-written slots noted. After an unclean shutdown a slot whose
//! header or checksum fails is a write torn inside a page (a device whose atomic unit
//! is a 512 B sector): its slot is freed, never served. After a clean close nothing
//! was in flight, so the same failure is `Corruption`.

use super::readahead::{CHUNK, ReadAhead};
use crate::index::Key;
use crate::io::{Backend, FileId, PAGE};
use crate::slab::{self, Format, Loc, Slot};
use kvapi::{Error, Result};
use std::path::Path;

/// Torn slots described one by one in the engine's notes; the rest are counted.
const TORN_NOTES: usize = 8;

pub(super) fn corrupt(path: &Path, offset: u64, detail: impl Into<String>) -> Error {
    Error::Corruption {
        file: path.to_path_buf(),
        offset,
        detail: detail.into(),
    }
}

/// What the scan of a worker's slabs gathers, over all of them.
pub(super) struct Scan {
    fmt: Format,
    /// The last close was clean (nothing was in flight).
    clean: bool,
    /// Every copy of every key, in scan order: (key, where, timestamp). `newest`
    /// keeps the copy of each key with the highest timestamp. (A vector, sorted
    /// once, where a `BTreeMap` took about 70 B per key and, freed, left the index
    /// built beside it on fragmented heap pages that stayed resident.)
    found: Vec<(Key, Loc, u64)>,
    /// Older copies of a key.
    pub(super) stale: Vec<Loc>,
    /// Slots whose header or checksum failed after an unclean shutdown.
    pub(super) torn_slots: Vec<Loc>,
    /// The first torn slots, described (file, offset, what failed).
    pub(super) torn_notes: Vec<String>,
    pub(super) max_ts: u64,
    pub(super) bytes_read: u64,
    /// Large items with a page of another timestamp (a large write torn by a crash).
    pub(super) torn: u64,
}

/// One slab file as scanned.
pub(super) struct ScannedSlab {
    pub(super) file: FileId,
    pub(super) len: u64,
    /// Tombstones and torn large items.
    pub(super) free: Vec<u64>,
    /// Never-written slots.
    pub(super) empty: Vec<u64>,
    /// One past the last non-empty slot.
    pub(super) end_slot: u64,
    class: usize,
    /// Key+value capacity of a slot.
    room: usize,
}

impl Scan {
    pub(super) fn new(fmt: Format, clean: bool) -> Scan {
        Scan {
            fmt,
            clean,
            found: Vec::new(),
            stale: Vec::new(),
            torn_slots: Vec::new(),
            torn_notes: Vec::new(),
            max_ts: 0,
            bytes_read: 0,
            torn: 0,
        }
    }

    /// Opens the slab of `class` at `path` and scans it front to back.
    pub(super) fn slab(
        &mut self,
        io: &mut dyn Backend,
        path: &Path,
        class: usize,
    ) -> Result<ScannedSlab> {
        let file = io
            .open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let len = io
            .len(file)
            .map_err(|e| Error::io(format!("reading the length of {}", path.display()), e))?;
        let ulen = slab::unit_len(class) as u64;
        if len % PAGE as u64 != 0 {
            return Err(corrupt(
                path,
                len,
                format!("file length {len} is not a multiple of {PAGE}: truncated slab"),
            ));
        }
        if len % ulen != 0 {
            // Large slabs grow by whole slots (see `Slab::allocate`).
            return Err(corrupt(
                path,
                len - len % ulen,
                format!(
                    "file length {len} is not a multiple of the {ulen}-byte slot: truncated slab"
                ),
            ));
        }
        let mut s = ScannedSlab {
            file,
            len,
            free: Vec::new(),
            empty: Vec::new(),
            end_slot: 0,
            class,
            room: slab::room(class),
        };
        let chunk = (CHUNK as u64).max(ulen);
        let mut ra = ReadAhead::new(file, len, chunk);
        while let Some((off, buf)) = ra
            .next(io)
            .map_err(|(at, e)| Error::io(format!("reading {} at offset {at}", path.display()), e))?
        {
            let n = buf.len();
            self.bytes_read += n as u64;
            if slab::is_large(class) {
                let mut u = 0;
                while (u as u64) * ulen < n as u64 {
                    let start = u * ulen as usize;
                    let stop = (start + ulen as usize).min(n);
                    let slot = off / ulen + u as u64;
                    self.slot(
                        &mut s,
                        path,
                        slot,
                        off + start as u64,
                        &buf[start..stop],
                        true,
                    )?;
                    u += 1;
                }
            } else {
                let size = slab::SMALL[class];
                let per = slab::per_page(class);
                for p in 0..n / PAGE {
                    for i in 0..per {
                        let at = p * PAGE + i * size;
                        let slot = (off as usize / PAGE + p) as u64 * per as u64 + i as u64;
                        self.slot(
                            &mut s,
                            path,
                            slot,
                            off + at as u64,
                            &buf[at..at + size],
                            false,
                        )?;
                    }
                }
            }
            ra.recycle(buf);
        }
        Ok(s)
    }

    /// One slot, `b` its bytes at file offset `at`.
    fn slot(
        &mut self,
        s: &mut ScannedSlab,
        path: &Path,
        slot: u64,
        at: u64,
        b: &[u8],
        large: bool,
    ) -> Result<()> {
        let parsed = match self.fmt.parse(b, s.room) {
            Ok(p) => p,
            Err(d) => return self.torn_slot(s, path, slot, at, d),
        };
        match parsed {
            Slot::Empty => s.empty.push(slot),
            Slot::Tomb { ts, .. } => {
                self.max_ts = self.max_ts.max(ts);
                s.free.push(slot);
                s.end_slot = slot + 1;
            }
            Slot::Item {
                ts,
                key_len,
                value_len,
            } => {
                self.max_ts = self.max_ts.max(ts);
                s.end_slot = slot + 1;
                let key = if large {
                    // An item running past the end of the file, or with a page of
                    // another timestamp, is a torn write: its slot is free.
                    let read = match self.fmt.read_large(b, ts, key_len, value_len) {
                        Ok(r) => r,
                        Err(d) => return self.torn_slot(s, path, slot, at, d),
                    };
                    match read {
                        Some((k, _)) => Key::new(&k),
                        None if self.clean => {
                            // no write was in flight at a clean close
                            return Err(corrupt(
                                path,
                                at,
                                "large item with pages of different timestamps in a \
                                 cleanly closed slab",
                            ));
                        }
                        None => {
                            self.torn += 1;
                            s.free.push(slot);
                            return Ok(());
                        }
                    }
                } else {
                    Key::new(slab::small_kv(b, key_len, value_len).0)
                };
                self.found.push((key, Loc::new(s.class, slot), ts));
            }
        }
        Ok(())
    }

    /// The copy of each key with the highest timestamp, in key order (of equal
    /// timestamps, the one scanned first); every other copy goes to `stale`.
    pub(super) fn newest(&mut self) -> Vec<(Key, Loc, u64)> {
        let mut found = std::mem::take(&mut self.found);
        // A `Loc` orders as the scan went: class, then slot.
        found.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| b.2.cmp(&a.2))
                .then_with(|| a.1.0.cmp(&b.1.0))
        });
        let stale = &mut self.stale;
        found.dedup_by(|later, kept| {
            let dup = later.0 == kept.0;
            if dup {
                stale.push(later.1);
            }
            dup
        });
        found
    }

    /// A slot whose header or checksum failed (`detail`): corruption after a clean
    /// close, else a write torn by the crash, to be freed.
    fn torn_slot(
        &mut self,
        s: &mut ScannedSlab,
        path: &Path,
        slot: u64,
        at: u64,
        detail: String,
    ) -> Result<()> {
        if self.clean {
            return Err(corrupt(path, at, detail));
        }
        if self.torn_notes.len() < TORN_NOTES {
            self.torn_notes.push(format!(
                "recovery: {} at offset {at}: {detail}; treated as a write torn by the \
                 crash, slot freed",
                path.display()
            ));
        }
        self.torn_slots.push(Loc::new(s.class, slot));
        s.end_slot = s.end_slot.max(slot + 1);
        Ok(())
    }
}
