//! Replay on open: from the header's checkpoint id forward, apply every transaction
//! that passes its checks; the first one that fails ends the log, unless it lies
//! before the header's commit id, which is corruption.
//!
//! Where replay stops, the log is scanned on (DESIGN.md, "Open and replay"): a
//! later transaction of this log whose stamp says the failed one was complete when
//! it was reserved proves damage to an acknowledged transaction, which is
//! corruption; later transactions without that proof were never acknowledged and
//! are dropped, counted like a torn last transaction.
//!
//! Positions are units (16 bytes). The transactions of a group commit lie back to
//! back and the rest of the batch's last block is zeros: where the rest of a block
//! after a transaction is zeros, the next transaction starts the next block.

use crate::format::{BLOCK, UNIT, UNITS_PER_BLOCK, WalHeader, abs_of, ceil_block, id_of};
use crate::image::Image;
use crate::io::Storage;
use crate::txn::{Kind, MAX_START, TxHeader, Txn, decode, len_of_header};
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
    /// Blocks in the log.
    n: u64,
    win_start: u64,
    win: Vec<u8>,
    bytes_read: u64,
}

const WINDOW: u64 = 64;

impl Reader<'_> {
    /// Units in the log.
    fn units(&self) -> u64 {
        self.n * UNITS_PER_BLOCK
    }

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

    /// What the block holding position `pos` holds from `pos` on.
    fn rest_of_block(&mut self, pos: u64) -> Result<&[u8]> {
        let off = offset_in_block(pos);
        Ok(&self.block((pos / UNITS_PER_BLOCK) % self.n)?[off..])
    }

    /// `len` bytes from position `pos` on, across blocks and the log's end.
    fn bytes(&mut self, pos: u64, len: usize) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(len);
        let mut p = pos;
        while out.len() < len {
            let b = self.rest_of_block(p)?;
            let k = b.len().min(len - out.len());
            out.extend_from_slice(&b[..k]);
            p = ceil_block(p + 1);
        }
        Ok(out)
    }
}

/// The byte offset of position `pos` in its block.
fn offset_in_block(pos: u64) -> usize {
    (pos % UNITS_PER_BLOCK) as usize * UNIT
}

/// The byte offset of position `pos` in the WAL file (its header block first).
fn file_offset(pos: u64, log_units: u64) -> u64 {
    BLOCK as u64 + (pos % log_units) * UNIT as u64
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
    let mut r = Reader {
        wal,
        n: h.log_blocks as u64,
        win_start: 0,
        win: Vec::new(),
        bytes_read: 0,
    };
    let nu = r.units();
    let start = abs_of(h.ckpt_id, nu);
    let commit = abs_of(h.commit_id, nu);
    let mut pos = start;
    let mut txns = 0;
    let mut pages = Vec::new();
    let stop = loop {
        if pos - start >= nu {
            break "the whole log was replayed".to_string();
        }
        let id = id_of(pos, nu);
        let why = match check_one(&mut r, data, h, pos, id, commit)? {
            Found::Padding => {
                pos = ceil_block(pos);
                continue;
            }
            Found::Txn(txn) => {
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
                pos += txn.units();
                txns += 1;
                continue;
            }
            Found::Invalid(why) => why,
        };
        if pos < commit {
            return Err(Error::Corruption {
                file: wal_path.to_path_buf(),
                offset: file_offset(pos, nu),
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
            offset: file_offset(pos, nu),
            detail: format!(
                "{stop}, but transaction {:#x}, written after it, was reserved when the \
                 log was complete up to {:#x}: the failed transaction was acknowledged \
                 and is damaged, not torn by a crash",
                id_of(p, nu),
                id_of(c, nu)
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

/// The header at the start of block `b` (linear) if it is a header of a transaction
/// of this log (this generation, and an id that places the transaction where this
/// block says it started), with that transaction's start.
fn header_at_block(r: &mut Reader, h: &WalHeader, b: u64) -> Result<Option<(TxHeader, u64)>> {
    let nu = r.units();
    let Some(th) = TxHeader::decode(r.block(b % r.n)?) else {
        return Ok(None);
    };
    let k = th.block_index as u64;
    // where in its first block the transaction started, by its id
    let off = (th.id & 0xffff_ffff) % UNITS_PER_BLOCK;
    if th.generation != h.generation || b < k || (k == 0 && off != 0) {
        return Ok(None);
    }
    let s = (b - k) * UNITS_PER_BLOCK + off;
    Ok((th.id == id_of(s, nu)).then_some((th, s)))
}

/// The transaction of this log that starts at `p`, whole and valid, ending before
/// `limit`.
fn txn_at(r: &mut Reader, h: &WalHeader, p: u64, limit: u64) -> Result<Option<Txn>> {
    let nu = r.units();
    let off = offset_in_block(p);
    if off > MAX_START {
        return Ok(None);
    }
    let Some(th) = TxHeader::decode(r.rest_of_block(p)?) else {
        return Ok(None);
    };
    if th.generation != h.generation || th.block_index != 0 || th.id != id_of(p, nu) {
        return Ok(None);
    }
    let Some(len) = len_of_header(&th, off, nu * UNIT as u64) else {
        return Ok(None);
    };
    if p + len.div_ceil(UNIT) as u64 > limit {
        return Ok(None);
    }
    Ok(decode(&r.bytes(p, len)?, off).ok())
}

/// Replay stopped at `pos` on a transaction of this log (a first header with its
/// id), not at the end of what was written.
fn starts_txn(r: &mut Reader, h: &WalHeader, pos: u64) -> Result<bool> {
    if offset_in_block(pos) > MAX_START {
        return Ok(false);
    }
    let nu = r.units();
    Ok(TxHeader::decode(r.rest_of_block(pos)?).is_some_and(|th| {
        th.generation == h.generation && th.block_index == 0 && th.id == id_of(pos, nu)
    }))
}

/// Scans the log past the stop at `pos` (up to the checkpoint a lap ahead of
/// `start`, or a gap of [`GAP`] blocks) for valid transactions of this log: at each
/// block's start, and after each transaction found, where the next of its batch
/// would start.
fn scan_after(r: &mut Reader, h: &WalHeader, pos: u64, start: u64) -> Result<After> {
    let nu = r.units();
    let limit = start + nu;
    let mut out = After {
        dropped: 0,
        proof: None,
    };
    // the rest of the stop's block is probed unit by unit (the failed transaction's
    // length is not to be trusted; the rest of its batch may follow it there)
    let probe_until = ceil_block(pos + 1);
    let (mut p, mut gap) = (pos + 1, 0);
    while p < limit && gap < GAP {
        // where to go on when no transaction of this log starts at `p`
        let otherwise = if !p.is_multiple_of(UNITS_PER_BLOCK) {
            // inside a block, after a transaction: maybe the next of its batch
            if p < probe_until {
                p + 1
            } else {
                ceil_block(p)
            }
        } else {
            match header_at_block(r, h, p / UNITS_PER_BLOCK)? {
                None => {
                    gap += 1;
                    p += UNITS_PER_BLOCK;
                    continue;
                }
                Some((th, s)) if th.block_index > 0 => {
                    // the rest of a transaction that started before: go on after
                    // it if it ends in this block (more of its batch may follow)
                    gap = 0;
                    let end = len_of_header(&th, offset_in_block(s), nu * UNIT as u64)
                        .map(|len| s + len.div_ceil(UNIT) as u64);
                    p = match end {
                        Some(e) if e > p && e < p + UNITS_PER_BLOCK => e,
                        _ => p + UNITS_PER_BLOCK,
                    };
                    continue;
                }
                Some(_) => {
                    gap = 0;
                    p + UNITS_PER_BLOCK
                }
            }
        };
        match txn_at(r, h, p, limit)? {
            Some(txn) => {
                if let Some(c) = txn.header.complete_at_reserve(p)
                    && c > pos
                {
                    out.proof = Some((p, c));
                    return Ok(out);
                }
                out.dropped += 1;
                p += txn.units();
            }
            None => p = otherwise,
        }
    }
    Ok(out)
}

/// What lies at a position replay expects a transaction at.
enum Found {
    Txn(Txn),
    /// The rest of the block is zeros: the batch ended (or the next transaction
    /// did not fit in this block); the next starts the next block.
    Padding,
    /// Not a valid transaction of this log, and why.
    Invalid(String),
}

/// Checks the transaction expected at `pos`: the error is an I/O failure.
fn check_one(
    r: &mut Reader,
    data: &dyn Storage,
    h: &WalHeader,
    pos: u64,
    id: u64,
    commit: u64,
) -> Result<Found> {
    let nu = r.units();
    let off = offset_in_block(pos);
    let rest = r.rest_of_block(pos)?;
    if off > 0 && rest.iter().all(|&b| b == 0) {
        return Ok(Found::Padding);
    }
    let bad = |why: String| Ok(Found::Invalid(why));
    if off > MAX_START {
        return bad("no transaction fits where the one before ended, yet the rest of its block is not zeros".into());
    }
    let Some(th) = TxHeader::decode(rest) else {
        return bad("no transaction magic".into());
    };
    if th.generation != h.generation {
        return bad(format!(
            "generation {} is not {}",
            th.generation, h.generation
        ));
    }
    if th.id != id {
        // a transaction of an earlier lap (older sequence) or another position
        return bad(format!("holds id {:#x}", th.id));
    }
    if th.block_index != 0 {
        return bad("block is not a transaction's first".into());
    }
    let Some(len) = len_of_header(&th, off, nu * UNIT as u64) else {
        return bad("impossible size".into());
    };
    if len.div_ceil(UNIT) as u64 > nu - (pos - abs_of(h.ckpt_id, nu)) {
        return bad("runs past the log's checkpoint".into());
    }
    let bytes = r.bytes(pos, len)?;
    let txn = match decode(&bytes, off) {
        Ok(t) => t,
        Err(why) => return bad(why.to_string()),
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
                return bad(format!(
                    "data extent at byte {} fails its checksum (its write was lost)",
                    e.off
                ));
            }
        }
    }
    Ok(Found::Txn(txn))
}
