//! The clean-shutdown record (`wNNN.clean`, one per worker): one 4 KiB page, written
//! through the backend like the slabs, that tells the next open whether the last
//! close was clean and, if so, where each slab's appends stopped, so that recovery
//! can tell items lost (a zeroed page, a file cut at a page) from writes a crash never
//! finished; and, in every state, how long each slab is known to be (its length as of
//! the last growth, made durable before the record says it), so that a slab cut short
//! is found after a crash too. The open writes it "open" before serving any request
//! (so its block is allocated before a full disk could refuse the close), each growth
//! of a slab writes it again (after the growth is synced), the worker's clean close
//! writes it "closed" after every slab is synced; recovery only reads it.
//!
//! ```text
//!  0   8     magic "KVCLEAN2" ("KVCLEAN1": the first version, without lengths)
//!  8   8     state: 1 closed cleanly, 0 open
//! 16   8*21  per class: the slot where appends continue (`next_slot`), u64 LE
//!            (state 1; zeros in state 0)
//! 184  8*21  per class: the slab's length in bytes, at least (version 2)
//! 352  4     CRC32 of bytes 0..352 (version 1: of bytes 0..184, at 184)
//! ```
//! The record fits one 512 B sector, so even a device that tears sectors writes it
//! whole or not at all. A record whose magic or CRC does not match means "not known
//! clean" and no lengths known.

use crate::io::{AlignedBuf, Backend, FileId, PAGE};
use crate::slab::NCLASS;
use kvapi::{Error, Result};
use std::path::{Path, PathBuf};

/// Magic of a clean-shutdown record ("KVCLEAN2").
const MAGIC: u64 = u64::from_le_bytes(*b"KVCLEAN2");
/// Magic of the first version (no lengths).
const MAGIC_V1: u64 = u64::from_le_bytes(*b"KVCLEAN1");
const MAGIC_AT: usize = 0;
const STATE_AT: usize = MAGIC_AT + size_of::<u64>();
const ENDS_AT: usize = STATE_AT + size_of::<u64>();
const LENS_AT: usize = ENDS_AT + NCLASS * size_of::<u64>();
/// Where version 1 kept its CRC.
const CRC_V1_AT: usize = LENS_AT;
const CRC_AT: usize = LENS_AT + NCLASS * size_of::<u64>();
const _: () = assert!(CRC_AT + 4 <= 512, "the record fits one sector");

/// Name of a worker's clean-shutdown record.
pub fn clean_name(worker: usize) -> String {
    format!("w{worker:03}.clean")
}

/// What a record says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// The slab ends of a clean close (`None`: not known clean).
    pub(crate) ends: Option<Vec<u64>>,
    /// Each slab's length, at least (`None`: unknown: no record, a damaged one, or
    /// the first version).
    pub(crate) lens: Option<Vec<u64>>,
}

/// The page of a record: state 1 with the slab ends (`Some`), or state 0 (`None`),
/// and the slab lengths.
fn encode(ends: Option<&[u64]>, lens: &[u64]) -> AlignedBuf {
    let mut page = AlignedBuf::new(PAGE);
    page.fill(0);
    page[MAGIC_AT..STATE_AT].copy_from_slice(&MAGIC.to_le_bytes());
    page[STATE_AT..ENDS_AT].copy_from_slice(&(ends.is_some() as u64).to_le_bytes());
    for (c, e) in ends.unwrap_or(&[]).iter().enumerate() {
        page[ENDS_AT + 8 * c..ENDS_AT + 8 * (c + 1)].copy_from_slice(&e.to_le_bytes());
    }
    for (c, l) in lens.iter().enumerate() {
        page[LENS_AT + 8 * c..LENS_AT + 8 * (c + 1)].copy_from_slice(&l.to_le_bytes());
    }
    let crc = crc32fast::hash(&page[..CRC_AT]);
    page[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    page
}

/// What a record page says (anything that fails its magic or CRC says nothing).
fn decode(page: &[u8]) -> Recorded {
    let u = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&page[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let crc_at = |at: usize| {
        let mut c = [0u8; 4];
        c.copy_from_slice(&page[at..at + 4]);
        crc32fast::hash(&page[..at]) == u32::from_le_bytes(c)
    };
    let list = |at: usize| (0..NCLASS).map(|c| u(at + 8 * c)).collect::<Vec<u64>>();
    let (ok, lens) = match u(MAGIC_AT) {
        MAGIC => (crc_at(CRC_AT), Some(list(LENS_AT))),
        MAGIC_V1 => (crc_at(CRC_V1_AT), None),
        _ => (false, None),
    };
    if !ok {
        return Recorded::default();
    }
    Recorded {
        ends: (u(STATE_AT) == 1).then(|| list(ENDS_AT)),
        lens,
    }
}

/// A worker's clean-shutdown record, opened through its backend.
pub(crate) struct CleanRecord {
    file: FileId,
    path: PathBuf,
    /// The slab lengths the record says (kept with it: each growth rewrites them).
    lens: Vec<u64>,
}

impl CleanRecord {
    /// Opens the record of `worker` in `dir` and reads it.
    pub(crate) fn open(
        io: &mut dyn Backend,
        dir: &Path,
        worker: usize,
    ) -> Result<(CleanRecord, Recorded)> {
        let path = dir.join(clean_name(worker));
        let ctx = |e| Error::io(format!("reading {}", path.display()), e);
        let file = io.open(&path).map_err(ctx)?;
        let recorded = if io.len(file).map_err(ctx)? < PAGE as u64 {
            Recorded::default()
        } else {
            let mut page = AlignedBuf::new(PAGE);
            io.read(file, 0, &mut page).map_err(ctx)?;
            decode(&page)
        };
        let lens = vec![0; NCLASS];
        Ok((CleanRecord { file, path, lens }, recorded))
    }

    /// Marks the database open (state 0) with the slabs' lengths: from here on the
    /// slabs change.
    pub(crate) fn mark_open(&mut self, io: &mut dyn Backend, lens: &[u64]) -> Result<()> {
        self.lens = lens.to_vec();
        self.write(io, None)
    }

    /// Slab `class` has grown to `len` bytes, and the growth is durable.
    pub(crate) fn grown(&mut self, io: &mut dyn Backend, class: usize, len: u64) -> Result<()> {
        self.lens[class] = len;
        self.write(io, None)
    }

    /// Records a clean close: every slab is synced and ends at `ends` (by class).
    pub(crate) fn mark_closed(&mut self, io: &mut dyn Backend, ends: &[u64]) -> Result<()> {
        self.write(io, Some(ends))
    }

    /// Writes (and syncs) the record.
    fn write(&self, io: &mut dyn Backend, ends: Option<&[u64]>) -> Result<()> {
        io.write(self.file, 0, &encode(ends, &self.lens))
            .and_then(|()| io.sync(self.file))
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_decodes_to_what_was_encoded_and_damage_is_not_clean() {
        let ends: Vec<u64> = (0..NCLASS as u64).map(|c| c * 1000 + 7).collect();
        let lens: Vec<u64> = (0..NCLASS as u64).map(|c| c << 20).collect();
        let page = encode(Some(&ends), &lens);
        assert_eq!(CRC_AT, 352);
        let both = Recorded {
            ends: Some(ends),
            lens: Some(lens.clone()),
        };
        assert_eq!(decode(&page), both);
        let open = decode(&encode(None, &lens));
        assert_eq!(open.ends, None, "state 0 is not clean");
        assert_eq!(open.lens, Some(lens), "but its lengths are known");
        let mut bad = encode(Some(&[1; NCLASS]), &[0; NCLASS]);
        bad[ENDS_AT] ^= 1;
        assert_eq!(
            decode(&bad),
            Recorded::default(),
            "a CRC mismatch says nothing"
        );
    }

    /// A record of the first version (no lengths) still says a clean close.
    #[test]
    fn a_first_version_record_says_its_ends() {
        let mut page = vec![0u8; PAGE];
        page[..8].copy_from_slice(&MAGIC_V1.to_le_bytes());
        page[STATE_AT..STATE_AT + 8].copy_from_slice(&1u64.to_le_bytes());
        page[ENDS_AT..ENDS_AT + 8].copy_from_slice(&5u64.to_le_bytes());
        let crc = crc32fast::hash(&page[..CRC_V1_AT]);
        page[CRC_V1_AT..CRC_V1_AT + 4].copy_from_slice(&crc.to_le_bytes());
        let r = decode(&page);
        assert_eq!(r.lens, None);
        assert_eq!(r.ends.as_ref().map(|e| e[0]), Some(5));
    }
}
