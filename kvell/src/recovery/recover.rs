//! `recover`: a worker, at open, scans each of its slab files with large sequential
//! reads (`slab_scan.rs`), checks what a clean close promised (the clean-shutdown
//! record), buries what must not come back (`repair.rs`), and rebuilds its index
//! (keeping the copy of a key with the highest timestamp) and its free lists.

use super::repair;
use super::slab_scan::{Scan, corrupt};
use crate::clean::CleanRecord;
use crate::index::Index;
use crate::io::Backend;
use crate::slab::{self, Format, FreeList, Loc, NCLASS, Slab};
use kvapi::Result;
use std::path::{Path, PathBuf};

/// A worker's state as recovered from its files.
pub(crate) struct Recovered {
    pub(crate) slabs: Vec<Slab>,
    /// The worker's clean-shutdown record (still saying how the last close went:
    /// the open marks it open before serving).
    pub(crate) clean: CleanRecord,
    pub(crate) index: Index,
    pub(crate) max_ts: u64,
    pub(crate) bytes_read: u64,
    pub(crate) stale: u64,
    pub(crate) torn: u64,
    /// Slots whose header or checksum failed after an unclean shutdown: torn writes,
    /// freed (see DESIGN.md, Recovery).
    pub(crate) torn_items: u64,
    /// The first of those, described (file, offset, what failed).
    pub(crate) torn_notes: Vec<String>,
}

/// Opens and scans the slab files of `worker` in `dir`.
pub(crate) fn recover(
    io: &mut dyn Backend,
    dir: &Path,
    worker: usize,
    freelist: usize,
    fmt: Format,
) -> Result<Recovered> {
    let (clean, ends) = CleanRecord::open(io, dir, worker)?;
    let mut scan = Scan::new(fmt, ends.is_some());
    let mut slabs = Vec::with_capacity(NCLASS);
    let mut frees: Vec<Vec<u64>> = Vec::with_capacity(NCLASS);
    // Never-written slots below a slab's end (a crash lost an append): they get a
    // tombstone, so a cleanly closed slab has none and one found later is damage.
    let mut holes: Vec<Loc> = Vec::new();
    for class in 0..NCLASS {
        let path: PathBuf = dir.join(slab::file_name(worker, class));
        let s = scan.slab(io, &path, class)?;
        let holes_here: Vec<u64> = s.empty.into_iter().filter(|&h| h < s.end_slot).collect();
        if let Some(ends) = &ends {
            check_clean(&path, class, &holes_here, s.end_slot, ends[class])?;
        }
        holes.extend(holes_here.into_iter().map(|h| Loc::new(class, h)));
        frees.push(s.free);
        slabs.push(Slab {
            file: s.file,
            path,
            len: s.len,
            next_slot: s.end_slot,
            free: FreeList::new(freelist, !slab::is_large(class)),
        });
    }
    let newest = scan.newest();
    // Older copies, holes and torn slots: write a tombstone over each, then reuse the
    // slot.
    let nstale = scan.stale.len() as u64;
    let torn_items = scan.torn_slots.len() as u64;
    let stale = std::mem::take(&mut scan.stale);
    let torn_slots = std::mem::take(&mut scan.torn_slots);
    repair::bury(
        io,
        &slabs,
        stale.into_iter().chain(holes).chain(torn_slots),
        fmt,
        &mut scan.max_ts,
        &mut frees,
    )?;
    for (s, f) in slabs.iter_mut().zip(frees) {
        s.free.set_recovered(f);
    }
    let index = Index::from_sorted(newest.into_iter().map(|(k, loc, _)| (k, loc)));
    Ok(Recovered {
        slabs,
        clean,
        index,
        max_ts: scan.max_ts,
        bytes_read: scan.bytes_read,
        stale: nstale,
        torn: scan.torn,
        torn_items,
        torn_notes: scan.torn_notes,
    })
}

/// A cleanly closed slab ends where its appends stopped (`end`, from the record) and
/// has no never-written slot below that; otherwise items were lost (a page zeroed,
/// the file cut at a page).
fn check_clean(path: &Path, class: usize, holes: &[u64], end_slot: u64, end: u64) -> Result<()> {
    let ulen = slab::unit_len(class) as u64;
    let per = if slab::is_large(class) {
        1
    } else {
        slab::per_page(class) as u64
    };
    let slot_offset = |slot: u64| {
        (slot / per) * ulen + (slot % per) * slab::SMALL[class.min(slab::SMALL.len() - 1)] as u64
    };
    if let Some(&h) = holes.first() {
        return Err(corrupt(
            path,
            slot_offset(h),
            format!("slot {h} is empty below the end of a cleanly closed slab: items lost"),
        ));
    }
    if end_slot != end {
        return Err(corrupt(
            path,
            slot_offset(end_slot.min(end)),
            format!(
                "the slab ends at slot {end_slot}, its clean-shutdown record says {end}: \
                 items lost (page zeroed or file cut)"
            ),
        ));
    }
    Ok(())
}
