//! Recovery: a worker scans each of its slab files with large sequential reads,
//! rebuilds its index (keeping the copy of a key with the highest timestamp) and its
//! free lists (tombstones, torn large items, never-written slots below the end,
//! and older copies of a key, which get a tombstone on disk before the engine opens,
//! so they cannot come back after a later delete).
#![deny(unsafe_code)]

use crate::freelist::FreeList;
use crate::index::{Index, Key};
use crate::io::{AlignedBuf, Backend, FileId, IoDone, IoKind, IoReq, PAGE};
use crate::slab::{self, Loc, NCLASS, NO_NEXT, Slot};
use crate::worker::Slab;
use kvapi::{Error, Result};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

/// Bytes per sequential recovery read.
pub const CHUNK: usize = 2 << 20;

pub struct Recovered {
    pub slabs: Vec<Slab>,
    pub index: Index,
    pub max_ts: u64,
    pub bytes_read: u64,
    pub stale: u64,
    pub torn: u64,
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
) -> Result<Recovered> {
    let mut found: BTreeMap<Key, (Loc, u64)> = BTreeMap::new();
    let mut slabs = Vec::with_capacity(NCLASS);
    let mut frees: Vec<Vec<u64>> = Vec::with_capacity(NCLASS);
    let mut stale: Vec<Loc> = Vec::new();
    let mut max_ts = 0;
    let mut bytes_read = 0;
    let mut torn = 0;
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
                match slab::parse(b, room).map_err(|d| corrupt(&path, at, d))? {
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
                            if b.len() < slab::large_pages_used(key_len + value_len) * PAGE {
                                // the item runs past the end of the file
                                torn += 1;
                                free.push(slot);
                                return Ok(());
                            }
                            match slab::read_large(b, ts, key_len, value_len) {
                                Some((k, _)) => Key::new(&k),
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
        free.extend(empty.into_iter().filter(|&s| s < end_slot));
        frees.push(free);
        slabs.push(Slab {
            file,
            path,
            len,
            next_slot: end_slot,
            free: FreeList::new(freelist, !slab::is_large(class)),
        });
    }
    // Older copies: write a tombstone over each, then reuse the slot.
    let nstale = stale.len() as u64;
    for loc in stale {
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
        slab::write_tomb(&mut page[off..off + size], max_ts, NO_NEXT);
        io.write(s.file, at, &page).map_err(ctx)?;
        frees[class].push(loc.slot());
    }
    if nstale > 0 {
        for s in &slabs {
            io.sync(s.file)
                .map_err(|e| Error::io(format!("syncing {}", s.path.display()), e))?;
        }
    }
    for (s, f) in slabs.iter_mut().zip(frees) {
        s.free.set_recovered(f);
    }
    let mut index = Index::default();
    for (k, (loc, _)) in found {
        index.insert_key(k, loc);
    }
    Ok(Recovered {
        slabs,
        index,
        max_ts,
        bytes_read,
        stale: nstale,
        torn,
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
