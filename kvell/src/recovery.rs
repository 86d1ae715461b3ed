//! Recovery: a worker scans each of its slab files with large sequential reads,
//! rebuilds its index (keeping the copy of a key with the highest timestamp) and its
//! free lists (tombstones, torn large items, never-written slots below the end,
//! and older copies of a key, which get a tombstone on disk before the engine opens,
//! so they cannot come back after a later delete). After an unclean shutdown, a slot
//! whose header or checksum fails is a write torn inside a page (a device whose atomic
//! unit is a 512 B sector): it gets a tombstone too and is counted in `torn_items`.
#![deny(unsafe_code)]

use crate::freelist::FreeList;
use crate::index::{Index, Key};
use crate::io::{AlignedBuf, Backend, FileId, IoDone, IoKind, IoReq, PAGE};
use crate::slab::{self, Format, Loc, NCLASS, NO_NEXT, Slot};
use crate::worker::Slab;
use kvapi::{Error, Result};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

/// Bytes per sequential recovery read.
pub const CHUNK: usize = 2 << 20;

pub struct Recovered {
    pub slabs: Vec<Slab>,
    /// The worker's clean-shutdown record (see [`write_clean`]).
    pub clean_file: FileId,
    pub index: Index,
    pub max_ts: u64,
    pub bytes_read: u64,
    pub stale: u64,
    pub torn: u64,
    /// Slots whose header or checksum failed after an unclean shutdown: torn writes,
    /// freed (see DESIGN.md, Recovery).
    pub torn_items: u64,
}

/// Magic of a clean-shutdown record ("KVCLEAN1").
const CLEAN_MAGIC: u64 = u64::from_le_bytes(*b"KVCLEAN1");

/// Name of a worker's clean-shutdown record.
pub fn clean_name(worker: usize) -> String {
    format!("w{worker:03}.clean")
}

/// Writes (and syncs) the worker's clean-shutdown record: one page holding the magic,
/// a state (1 = closed cleanly, 0 = open), the slot where each slab's appends continue,
/// and a CRC32. Written with state 1 by a clean close, and with state 0 by the open
/// before any write.
pub fn write_clean(
    io: &mut dyn Backend,
    file: FileId,
    ends: Option<&[u64]>,
) -> std::io::Result<()> {
    let mut page = AlignedBuf::new(PAGE);
    page.fill(0);
    page[0..8].copy_from_slice(&CLEAN_MAGIC.to_le_bytes());
    page[8..16].copy_from_slice(&(ends.is_some() as u64).to_le_bytes());
    for (c, e) in ends.unwrap_or(&[]).iter().enumerate() {
        page[16 + 8 * c..24 + 8 * c].copy_from_slice(&e.to_le_bytes());
    }
    let n = 16 + 8 * NCLASS;
    let crc = crc32fast::hash(&page[..n]);
    page[n..n + 4].copy_from_slice(&crc.to_le_bytes());
    io.write(file, 0, &page)?;
    io.sync(file)
}

/// The slab ends recorded by a clean close, if the record says so (anything else,
/// including a damaged record, means "not known clean": no check).
fn read_clean(io: &mut dyn Backend, file: FileId) -> std::io::Result<Option<Vec<u64>>> {
    if io.len(file)? < PAGE as u64 {
        return Ok(None);
    }
    let mut page = AlignedBuf::new(PAGE);
    io.read(file, 0, &mut page)?;
    let n = 16 + 8 * NCLASS;
    let u = |at: usize| u64::from_le_bytes(page[at..at + 8].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(page[n..n + 4].try_into().expect("4 bytes"));
    if u(0) != CLEAN_MAGIC || u(8) != 1 || crc32fast::hash(&page[..n]) != crc {
        return Ok(None);
    }
    Ok(Some((0..NCLASS).map(|c| u(16 + 8 * c)).collect()))
}

fn corrupt(path: &Path, offset: u64, detail: impl Into<String>) -> Error {
    Error::Corruption {
        file: path.to_path_buf(),
        offset,
        detail: detail.into(),
    }
}

/// Opens and scans the slab files of `worker` in `dir`.
pub fn recover(
    io: &mut dyn Backend,
    dir: &Path,
    worker: usize,
    freelist: usize,
    fmt: Format,
) -> Result<Recovered> {
    let mut found: BTreeMap<Key, (Loc, u64)> = BTreeMap::new();
    let mut slabs = Vec::with_capacity(NCLASS);
    let mut frees: Vec<Vec<u64>> = Vec::with_capacity(NCLASS);
    let mut stale: Vec<Loc> = Vec::new();
    let mut max_ts = 0;
    let mut bytes_read = 0;
    let mut torn = 0;
    let mut torn_slots: Vec<Loc> = Vec::new();
    let clean_path = dir.join(clean_name(worker));
    let clean_io = |e| Error::io(format!("reading {}", clean_path.display()), e);
    let clean_file = io.open(&clean_path).map_err(clean_io)?;
    let clean = read_clean(io, clean_file).map_err(clean_io)?;
    // Never-written slots below a slab's end (a crash lost an append): they get a
    // tombstone, so a cleanly closed slab has none and one found later is damage.
    let mut holes: Vec<Loc> = Vec::new();
    for class in 0..NCLASS {
        let path: PathBuf = dir.join(slab::file_name(worker, class));
        let file = io
            .open(&path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let len = io
            .len(file)
            .map_err(|e| Error::io(format!("reading the length of {}", path.display()), e))?;
        let ulen = slab::unit_len(class) as u64;
        if len % PAGE as u64 != 0 {
            return Err(corrupt(
                &path,
                len,
                format!("file length {len} is not a multiple of {PAGE}: truncated slab"),
            ));
        }
        if len % ulen != 0 {
            // Large slabs grow by whole slots (see `Worker::allocate`).
            return Err(corrupt(
                &path,
                len - len % ulen,
                format!(
                    "file length {len} is not a multiple of the {ulen}-byte slot: truncated slab"
                ),
            ));
        }
        let room = slab::room(class);
        let mut free = Vec::new();
        let mut empty = Vec::new();
        let mut end_slot = 0u64; // one past the last non-empty slot
        let chunk = (CHUNK as u64).max(ulen);
        let mut ra = ReadAhead::new(file, len, chunk);
        while let Some((off, buf)) = ra
            .next(io)
            .map_err(|(at, e)| Error::io(format!("reading {} at offset {at}", path.display()), e))?
        {
            let n = buf.len();
            bytes_read += n as u64;
            let mut consider = |slot: u64, at: u64, b: &[u8], large: bool| -> Result<()> {
                // After an unclean shutdown a slot that fails its header or checksum is
                // a write torn inside a page (512 B sectors): free it, never serve it.
                // After a clean close nothing was in flight: it is corruption.
                macro_rules! torn_here {
                    ($d:expr) => {{
                        let d: String = $d;
                        if clean.is_some() {
                            return Err(corrupt(&path, at, d));
                        }
                        eprintln!(
                            "kvell: recovery: {} at offset {at}: {d}; treated as a write torn \
                             by the crash, slot freed",
                            path.display()
                        );
                        torn_slots.push(Loc::new(class, slot));
                        end_slot = end_slot.max(slot + 1);
                        return Ok(());
                    }};
                }
                let parsed = match fmt.parse(b, room) {
                    Ok(p) => p,
                    Err(d) => torn_here!(d),
                };
                match parsed {
                    Slot::Empty => empty.push(slot),
                    Slot::Tomb { ts, .. } => {
                        max_ts = max_ts.max(ts);
                        free.push(slot);
                        end_slot = slot + 1;
                    }
                    Slot::Item {
                        ts,
                        key_len,
                        value_len,
                    } => {
                        max_ts = max_ts.max(ts);
                        end_slot = slot + 1;
                        let key = if large {
                            // An item running past the end of the file, or with a page of
                            // another timestamp, is a torn write: its slot is free.
                            let read = match fmt.read_large(b, ts, key_len, value_len) {
                                Ok(r) => r,
                                Err(d) => torn_here!(d),
                            };
                            match read {
                                Some((k, _)) => Key::new(&k),
                                None if clean.is_some() => {
                                    // no write was in flight at a clean close
                                    return Err(corrupt(
                                        &path,
                                        at,
                                        "large item with pages of different timestamps in a \
                                         cleanly closed slab",
                                    ));
                                }
                                None => {
                                    torn += 1;
                                    free.push(slot);
                                    return Ok(());
                                }
                            }
                        } else {
                            Key::new(slab::small_kv(b, key_len, value_len).0)
                        };
                        let loc = Loc::new(class, slot);
                        match found.get_mut(&key) {
                            Some(prev) if prev.1 >= ts => stale.push(loc),
                            Some(prev) => stale.push(std::mem::replace(prev, (loc, ts)).0),
                            None => {
                                found.insert(key, (loc, ts));
                            }
                        }
                    }
                }
                Ok(())
            };
            if slab::is_large(class) {
                let mut u = 0;
                while (u as u64) * ulen < n as u64 {
                    let start = u * ulen as usize;
                    let stop = (start + ulen as usize).min(n);
                    let slot = off / ulen + u as u64;
                    consider(slot, off + start as u64, &buf[start..stop], true)?;
                    u += 1;
                }
            } else {
                let size = slab::SMALL[class];
                let per = slab::per_page(class);
                for p in 0..n / PAGE {
                    for i in 0..per {
                        let at = p * PAGE + i * size;
                        let slot = (off as usize / PAGE + p) as u64 * per as u64 + i as u64;
                        consider(slot, off + at as u64, &buf[at..at + size], false)?;
                    }
                }
            }
            ra.recycle(buf);
        }
        let holes_here: Vec<u64> = empty.into_iter().filter(|&s| s < end_slot).collect();
        if let Some(ends) = &clean {
            // A cleanly closed slab ends where its appends stopped and has no holes;
            // otherwise items were lost (a page zeroed, the file cut at a page).
            let ulen = slab::unit_len(class) as u64;
            let per = if slab::is_large(class) {
                1
            } else {
                slab::per_page(class) as u64
            };
            let slot_offset = |slot: u64| {
                (slot / per) * ulen
                    + (slot % per) * slab::SMALL[class.min(slab::SMALL.len() - 1)] as u64
            };
            if let Some(&h) = holes_here.first() {
                return Err(corrupt(
                    &path,
                    slot_offset(h),
                    format!("slot {h} is empty below the end of a cleanly closed slab: items lost"),
                ));
            }
            if end_slot != ends[class] {
                return Err(corrupt(
                    &path,
                    slot_offset(end_slot.min(ends[class])),
                    format!(
                        "the slab ends at slot {end_slot}, its clean-shutdown record says {}: \
                         items lost (page zeroed or file cut)",
                        ends[class]
                    ),
                ));
            }
        }
        holes.extend(holes_here.into_iter().map(|s| Loc::new(class, s)));
        frees.push(free);
        slabs.push(Slab {
            file,
            path,
            len,
            next_slot: end_slot,
            free: FreeList::new(freelist, !slab::is_large(class)),
        });
    }
    // Older copies and holes: write a tombstone over each, then reuse the slot.
    let nstale = stale.len() as u64;
    let torn_items = torn_slots.len() as u64;
    let repairs = nstale + holes.len() as u64 + torn_items;
    for loc in stale.into_iter().chain(holes).chain(torn_slots) {
        max_ts += 1;
        let class = loc.class();
        let s = &slabs[class];
        let unit = loc.unit();
        let mut page = AlignedBuf::new(PAGE);
        let off = loc.offset_in_unit();
        let at = unit.file_offset();
        let ctx = |e| Error::io(format!("repairing {} at offset {at}", s.path.display()), e);
        if !slab::is_large(class) {
            io.read(s.file, at, &mut page).map_err(ctx)?;
        }
        let size = if slab::is_large(class) {
            PAGE
        } else {
            slab::SMALL[class]
        };
        fmt.write_tomb(&mut page[off..off + size], max_ts, NO_NEXT);
        io.write(s.file, at, &page).map_err(ctx)?;
        frees[class].push(loc.slot());
    }
    if repairs > 0 {
        for s in &slabs {
            io.sync(s.file)
                .map_err(|e| Error::io(format!("syncing {}", s.path.display()), e))?;
        }
    }
    // From here on the slabs change: the record says "open" until a clean close.
    // Written at every open, so its block is allocated before the disk can fill.
    write_clean(io, clean_file, None)
        .map_err(|e| Error::io(format!("writing {}", clean_path.display()), e))?;
    for (s, f) in slabs.iter_mut().zip(frees) {
        s.free.set_recovered(f);
    }
    let index = Index::from_sorted(found.into_iter().map(|(k, (loc, _))| (k, loc)));
    Ok(Recovered {
        slabs,
        clean_file,
        index,
        max_ts,
        bytes_read,
        stale: nstale,
        torn,
        torn_items,
    })
}

/// Reads a file front to back in `chunk`-sized pieces through the backend's
/// asynchronous path, keeping the next piece in flight while one is parsed.
struct ReadAhead {
    file: FileId,
    len: u64,
    chunk: u64,
    next_off: u64,
    pending: VecDeque<u64>,
    spare: Vec<AlignedBuf>,
    done: Vec<IoDone>,
}

const AHEAD: usize = 2;

impl ReadAhead {
    fn new(file: FileId, len: u64, chunk: u64) -> ReadAhead {
        ReadAhead {
            file,
            len,
            chunk,
            next_off: 0,
            pending: VecDeque::new(),
            spare: Vec::new(),
            done: Vec::new(),
        }
    }

    /// The next piece (offset, bytes), or None at the end of the file.
    fn next(
        &mut self,
        io: &mut dyn Backend,
    ) -> Result<Option<(u64, AlignedBuf)>, (u64, std::io::Error)> {
        while self.pending.len() < AHEAD && self.next_off < self.len {
            let n = self.chunk.min(self.len - self.next_off);
            let buf = match self.spare.pop() {
                Some(b) if b.len() as u64 == n => b,
                _ => AlignedBuf::new(n as usize),
            };
            let req = IoReq {
                file: self.file,
                offset: self.next_off,
                kind: IoKind::Read,
                buf,
                tag: self.next_off,
            };
            if let Err(req) = io.push(req) {
                self.spare.push(req.buf);
                break;
            }
            self.pending.push_back(self.next_off);
            self.next_off += n;
        }
        let Some(&front) = self.pending.front() else {
            return Ok(None);
        };
        io.submit().map_err(|e| (front, e))?;
        loop {
            if let Some(pos) = self.done.iter().position(|d| d.tag == front) {
                let d = self.done.swap_remove(pos);
                self.pending.pop_front();
                d.result.map_err(|e| (front, e))?;
                return Ok(Some((front, d.buf)));
            }
            io.reap(true, &mut self.done).map_err(|e| (front, e))?;
        }
    }

    fn recycle(&mut self, buf: AlignedBuf) {
        if buf.len() as u64 == self.chunk {
            self.spare.push(buf);
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // An error left reads in flight: their buffers are owned by the backend,
        // which completes (uring: waits for) them before it is dropped.
        self.pending.clear();
    }
}
