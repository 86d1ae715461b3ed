//! Replay on open: from the header's checkpoint id forward, apply every transaction
//! that passes its checks; the first one that fails ends the log, unless it lies
//! before the header's commit id, which is corruption.

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

pub fn replay(
    wal: &dyn Storage,
    data: &dyn Storage,
    h: &WalHeader,
    image: &mut Image,
    wal_path: &Path,
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
                    image.apply(e, &txn.payload[at..at + len]);
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
    pages.sort_unstable();
    pages.dedup();
    Ok(Replayed {
        end: pos,
        txns,
        pages,
        bytes_read: r.bytes_read,
        stop,
    })
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
