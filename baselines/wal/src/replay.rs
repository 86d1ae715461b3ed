//! Replay on open: from the header's checkpoint id forward, apply every transaction
//! that passes its checks; the first one that fails ends the log, unless it lies
//! before the header's commit id, which is corruption.
//!
//! Where replay stops, the log is scanned on (DESIGN.md, "Open and replay"): a
//! later transaction of this log whose stamp says the failed one was complete when
//! it was reserved proves damage to an acknowledged transaction, which is
//! corruption; later transactions without that proof were never acknowledged and
//! are dropped, counted like a torn last transaction.

use crate::format::{BLOCK, WalHeader, abs_of, id_of};
use crate::image::Image;
use crate::io::Storage;
use crate::txn::{Kind, TxHeader, blocks_of_header, decode};
use kvapi::{Error, Result};
use std::path::Path;

pub struct Replayed {
    /// Position after the last replayed transaction.
    pub end: u64,
    pub txns: u64,
    /// Pages the replayed transactions changed (the meta file lacks those changes).
    pub pages: Vec<u32>,
    pub bytes_read: u64,
    /// Why replay stopped.
    pub stop: String,
    /// Replay stopped at a transaction of this log that failed its checks (torn or
    /// unfinished by the crash): it was cut off.
    pub torn: bool,
    /// Transactions of this log found after the stop, never acknowledged (no later
    /// transaction proves the failed one complete), dropped.
    pub dropped: u64,
}

/// Reads the log in 64-block windows.
struct Reader<'a> {
    wal: &'a dyn Storage,
    n: u64,
    win_start: u64,
    win: Vec<u8>,
    bytes_read: u64,
}

const WINDOW: u64 = 64;

impl Reader<'_> {
    /// Block at physical log offset `phys`.
    fn block(&mut self, phys: u64) -> Result<&[u8]> {
        let blocks = self.win.len() as u64 / BLOCK as u64;
        if self.win.is_empty() || phys < self.win_start || phys >= self.win_start + blocks {
            let k = WINDOW.min(self.n - phys);
            self.win = vec![0u8; k as usize * BLOCK];
            self.wal
                .read_at(&mut self.win, (1 + phys) * BLOCK as u64)
                .map_err(|e| Error::io("reading the WAL", e))?;
            self.bytes_read += self.win.len() as u64;
            self.win_start = phys;
        }
        let at = (phys - self.win_start) as usize * BLOCK;
        Ok(&self.win[at..at + BLOCK])
    }

    fn blocks(&mut self, pos: u64, count: usize) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(count * BLOCK);
        for i in 0..count as u64 {
            let b = self.block((pos + i) % self.n)?;
            out.extend_from_slice(b);
        }
        Ok(out)
    }
}

/// Replays the log into `image`; `load` makes a page that an entry touches resident
/// (replay reads the meta file's pages on demand, and the open decides what a page
/// failing its CRC means).
pub fn replay(
    wal: &dyn Storage,
    data: &dyn Storage,
    h: &WalHeader,
    image: &mut Image,
    wal_path: &Path,
    load: &mut dyn FnMut(&mut Image, u32) -> Result<()>,
) -> Result<Replayed> {
    let n = h.log_blocks as u64;
    let start = abs_of(h.ckpt_id, n);
    let commit = abs_of(h.commit_id, n);
    let mut r = Reader {
        wal,
        n,
        win_start: 0,
        win: Vec::new(),
        bytes_read: 0,
    };
    let mut pos = start;
    let mut txns = 0;
    let mut pages = Vec::new();
    let stop = loop {
        if pos - start >= n {
            break "the whole log was replayed".to_string();
        }
        let id = id_of(pos, n);
        let why = match check_one(&mut r, data, h, pos, id, commit)? {
            Ok(txn) => {
                let mut at = 0;
                for e in &txn.entries {
                    let len = if e.kind == Kind::Copy {
                        e.len as usize
                    } else {
                        0
                    };
                    let payload = &txn.payload[at..at + len];
                    while let Err(p) = image.apply(e, payload) {
                        load(image, p)?;
                    }
                    at += len;
                    if e.kind != Kind::Csum {
                        let first = (e.off / BLOCK as u64) as u32;
                        let last = ((e.off + e.len.max(1) as u64 - 1) / BLOCK as u64) as u32;
                        pages.extend(first..=last);
                    }
                }
                pos += txn.blocks as u64;
                txns += 1;
                continue;
            }
            Err(why) => why,
        };
        if pos < commit {
            return Err(Error::Corruption {
                file: wal_path.to_path_buf(),
                offset: (1 + pos % n) * BLOCK as u64,
                detail: format!(
                    "transaction {id:#x} is before the header's commit id {:#x} but {why}",
                    h.commit_id
                ),
            });
        }
        break format!("transaction {id:#x}: {why}");
    };
    let torn = starts_txn(&mut r, h, pos)?;
    let after = scan_after(&mut r, h, pos, start)?;
    if let Some((p, c)) = after.proof {
        return Err(Error::Corruption {
            file: wal_path.to_path_buf(),
            offset: (1 + pos % n) * BLOCK as u64,
            detail: format!(
                "{stop}, but transaction {:#x}, written after it, was reserved when the \
                 log was complete up to {:#x}: the failed transaction was acknowledged \
                 and is damaged, not torn by a crash",
                id_of(p, n),
                id_of(c, n)
            ),
        });
    }
    let stop = match (torn, after.dropped) {
        (false, 0) => stop,
        (_, d) => format!(
            "{stop}; cut there: {} torn transaction and {d} later, never acknowledged, \
             dropped",
            u8::from(torn)
        ),
    };
    pages.sort_unstable();
    pages.dedup();
    Ok(Replayed {
        end: pos,
        txns,
        pages,
        bytes_read: r.bytes_read,
        stop,
        torn,
        dropped: after.dropped,
    })
}

/// Blocks belonging to no transaction of this log after which the scan past the
/// stop ends: a log is written in order, so after a crash nothing of it lies beyond
/// such a gap (damage wider than 256 KiB followed by intact transactions is not
/// told from the log's end).
const GAP: u64 = 64;

struct After {
    dropped: u64,
    /// A transaction at `.0` reserved when the log was complete up to `.1`, past the
    /// stop.
    proof: Option<(u64, u64)>,
}

/// The header of the block at `p` if it is a block of a transaction of this log
/// (this generation and lap).
fn of_this_log(r: &mut Reader, h: &WalHeader, p: u64) -> Result<Option<TxHeader>> {
    let n = r.n;
    Ok(TxHeader::decode(r.block(p % n)?).filter(|th| {
        th.generation == h.generation
            && p >= th.block_index as u64
            && th.id == id_of(p - th.block_index as u64, n)
    }))
}

/// Replay stopped at `pos` on a transaction of this log (a first block with its
/// id), not at the end of what was written.
fn starts_txn(r: &mut Reader, h: &WalHeader, pos: u64) -> Result<bool> {
    Ok(of_this_log(r, h, pos)?.is_some_and(|th| th.block_index == 0))
}

/// Scans the log past the stop at `pos` (up to the checkpoint a lap ahead of
/// `start`, or a gap of [`GAP`] blocks) for valid transactions of this log.
fn scan_after(r: &mut Reader, h: &WalHeader, pos: u64, start: u64) -> Result<After> {
    let n = r.n;
    let mut out = After {
        dropped: 0,
        proof: None,
    };
    let (mut p, mut gap) = (pos + 1, 0);
    while p < start + n && gap < GAP {
        match of_this_log(r, h, p)? {
            None => {
                gap += 1;
                p += 1;
            }
            Some(th) if th.block_index > 0 => {
                gap = 0;
                p += 1;
            }
            Some(th) => {
                gap = 0;
                let valid = blocks_of_header(&th, n)
                    .filter(|&b| p + b as u64 <= start + n)
                    .map(|b| -> Result<_> { Ok(decode(&r.blocks(p, b)?).ok()) })
                    .transpose()?
                    .flatten();
                let Some(txn) = valid else {
                    p += 1;
                    continue;
                };
                if let Some(c) = txn.header.complete_at_reserve(p)
                    && c > pos
                {
                    out.proof = Some((p, c));
                    return Ok(out);
                }
                out.dropped += 1;
                p += txn.blocks as u64;
            }
        }
    }
    Ok(out)
}

/// Checks the transaction expected at `pos`: the outer error is an I/O failure, the
/// inner one the reason it is not valid.
fn check_one(
    r: &mut Reader,
    data: &dyn Storage,
    h: &WalHeader,
    pos: u64,
    id: u64,
    commit: u64,
) -> Result<std::result::Result<crate::txn::Txn, String>> {
    let n = r.n;
    let Some(th) = TxHeader::decode(r.block(pos % n)?) else {
        return Ok(Err("no transaction magic".into()));
    };
    if th.generation != h.generation {
        return Ok(Err(format!(
            "generation {} is not {}",
            th.generation, h.generation
        )));
    }
    if th.id != id {
        // a block of an earlier lap (older sequence) or another position
        return Ok(Err(format!("holds id {:#x}", th.id)));
    }
    if th.block_index != 0 {
        return Ok(Err("block is not a transaction's first".into()));
    }
    let Some(blocks) = blocks_of_header(&th, n) else {
        return Ok(Err("impossible size".into()));
    };
    if blocks as u64 > n - (pos - abs_of(h.ckpt_id, n)) {
        return Ok(Err("runs past the log's checkpoint".into()));
    }
    let bytes = r.blocks(pos, blocks)?;
    let txn = match decode(&bytes) {
        Ok(t) => t,
        Err(why) => return Ok(Err(why.to_string())),
    };
    if pos >= commit {
        // Newer than the last header's commit id: its large-value data writes may
        // have been lost. Transactions before it completed, data included.
        for e in txn.entries.iter().filter(|e| e.kind == Kind::Csum) {
            let mut v = vec![0u8; e.len as usize];
            data.read_at(&mut v, e.off)
                .map_err(|err| Error::io("reading the data file", err))?;
            r.bytes_read += v.len() as u64;
            if crc32fast::hash(&v) != e.data {
                return Ok(Err(format!(
                    "data extent at byte {} fails its checksum (its write was lost)",
                    e.off
                )));
            }
        }
    }
    Ok(Ok(txn))
}
