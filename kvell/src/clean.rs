//! The clean-shutdown record (`wNNN.clean`, one per worker): one 4 KiB page, written
//! through the backend like the slabs, that tells the next open whether the last
//! close was clean and, if so, where each slab's appends stopped, so that recovery
//! can tell items lost (a zeroed page, a file cut at a page) from writes a crash never
//! finished. The open writes it "open" before serving any request (so its block is
//! allocated before a full disk could refuse the close), the worker's clean close
//! writes it "closed" after every slab is synced; recovery only reads it.
//!
//! ```text
//!  0 8     magic "KVCLEAN1"
//!  8 8     state: 1 closed cleanly, 0 open
//! 16 8*21  per class: the slot where appends continue (`next_slot`), u64 LE
//! 184 4    CRC32 of bytes 0..184
//! ```
//! A record whose magic, state or CRC does not match means "not known clean".

use crate::io::{AlignedBuf, Backend, FileId, PAGE};
use crate::slab::NCLASS;
use kvapi::{Error, Result};
use std::path::{Path, PathBuf};

/// Magic of a clean-shutdown record ("KVCLEAN1").
const MAGIC: u64 = u64::from_le_bytes(*b"KVCLEAN1");
const MAGIC_AT: usize = 0;
const STATE_AT: usize = MAGIC_AT + size_of::<u64>();
const ENDS_AT: usize = STATE_AT + size_of::<u64>();
const CRC_AT: usize = ENDS_AT + NCLASS * size_of::<u64>();

/// Name of a worker's clean-shutdown record.
pub fn clean_name(worker: usize) -> String {
    format!("w{worker:03}.clean")
}

/// The page of a record: state 1 with the slab ends (`Some`), or state 0 (`None`).
fn encode(ends: Option<&[u64]>) -> AlignedBuf {
    let mut page = AlignedBuf::new(PAGE);
    page.fill(0);
    page[MAGIC_AT..STATE_AT].copy_from_slice(&MAGIC.to_le_bytes());
    page[STATE_AT..ENDS_AT].copy_from_slice(&(ends.is_some() as u64).to_le_bytes());
    for (c, e) in ends.unwrap_or(&[]).iter().enumerate() {
        page[ENDS_AT + 8 * c..ENDS_AT + 8 * (c + 1)].copy_from_slice(&e.to_le_bytes());
    }
    let crc = crc32fast::hash(&page[..CRC_AT]);
    page[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    page
}

/// The slab ends recorded by a clean close, if the page says so (anything else,
/// including a damaged record, means "not known clean").
fn decode(page: &[u8]) -> Option<Vec<u64>> {
    let u = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&page[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let mut crc = [0u8; 4];
    crc.copy_from_slice(&page[CRC_AT..CRC_AT + 4]);
    if u(MAGIC_AT) != MAGIC
        || u(STATE_AT) != 1
        || crc32fast::hash(&page[..CRC_AT]) != u32::from_le_bytes(crc)
    {
        return None;
    }
    Some((0..NCLASS).map(|c| u(ENDS_AT + 8 * c)).collect())
}

/// A worker's clean-shutdown record, opened through its backend.
pub(crate) struct CleanRecord {
    file: FileId,
    path: PathBuf,
}

impl CleanRecord {
    /// Opens the record of `worker` in `dir` and reads it: the slab ends of a clean
    /// close, or None (not known clean: after a crash, a new or damaged record).
    pub(crate) fn open(
        io: &mut dyn Backend,
        dir: &Path,
        worker: usize,
    ) -> Result<(CleanRecord, Option<Vec<u64>>)> {
        let path = dir.join(clean_name(worker));
        let ctx = |e| Error::io(format!("reading {}", path.display()), e);
        let file = io.open(&path).map_err(ctx)?;
        let ends = if io.len(file).map_err(ctx)? < PAGE as u64 {
            None
        } else {
            let mut page = AlignedBuf::new(PAGE);
            io.read(file, 0, &mut page).map_err(ctx)?;
            decode(&page)
        };
        Ok((CleanRecord { file, path }, ends))
    }

    /// Marks the database open (state 0): from here on the slabs change.
    pub(crate) fn mark_open(&self, io: &mut dyn Backend) -> Result<()> {
        write(io, self.file, None)
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))
    }

    /// Records a clean close: every slab is synced and ends at `ends` (by class).
    pub(crate) fn mark_closed(&self, io: &mut dyn Backend, ends: &[u64]) -> Result<()> {
        write(io, self.file, Some(ends))
            .map_err(|e| Error::io("writing the clean-shutdown record", e))
    }
}

/// Writes (and syncs) a record.
fn write(io: &mut dyn Backend, file: FileId, ends: Option<&[u64]>) -> std::io::Result<()> {
    io.write(file, 0, &encode(ends))?;
    io.sync(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_decodes_to_what_was_encoded_and_damage_is_not_clean() {
        let ends: Vec<u64> = (0..NCLASS as u64).map(|c| c * 1000 + 7).collect();
        let page = encode(Some(&ends));
        assert_eq!(CRC_AT, 184);
        assert_eq!(decode(&page), Some(ends));
        assert_eq!(decode(&encode(None)), None, "state 0 is not clean");
        let mut bad = encode(Some(&[1; NCLASS]));
        bad[ENDS_AT] ^= 1;
        assert_eq!(decode(&bad), None, "a CRC mismatch is not clean");
    }
}
