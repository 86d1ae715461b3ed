//! `recover`: a worker, at open, scans each of its slab files with large sequential
//! reads (`slab_scan.rs`), checks what the clean-shutdown record promised (a clean
//! close: where each slab ends; any state: how long each slab is), buries what must
//! not come back (`repair.rs`), counts and describes each repair (`report.rs`),
//! makes the entries of the files it created durable, and rebuilds its index
//! (keeping the copy of a key with the highest timestamp) and its free lists.

use super::repair;
use super::report::{Kind, Repairs};
use super::slab_scan::{Scan, corrupt};
use crate::clean::CleanRecord;
use crate::index::Index;
use crate::io::Backend;
use crate::slab::{self, Format, FreeList, Loc, NCLASS, Slab};
use kvapi::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A worker's state as recovered from its files.
pub(crate) struct Recovered {
    pub(crate) slabs: Vec<Slab>,
    /// The worker's clean-shutdown record (still saying how the last close went:
    /// the open marks it open before serving).
    pub(crate) clean: CleanRecord,
    pub(crate) index: Index,
    pub(crate) max_ts: u64,
    pub(crate) bytes_read: u64,
    /// Older copies buried, torn slots freed, holes tombstoned (see DESIGN.md,
    /// Recovery).
    pub(crate) repairs: Repairs,
    /// Microseconds reading and checking the slabs (first read to last slot checked),
    /// and of them the worker's CPU time: a scan whose CPU time is close to its time
    /// is bound by the checks, not by the reads.
    pub(crate) scan_us: u64,
    pub(crate) scan_cpu_us: u64,
    /// Microseconds after the scan: the newest copy of each key chosen, the repairs
    /// written, the index built from the sorted keys.
    pub(crate) index_us: u64,
}

impl Recovered {
    /// Marks the worker's record open, with the slabs' lengths as found.
    pub(crate) fn mark_open(&mut self, io: &mut dyn Backend) -> Result<()> {
        let lens: Vec<u64> = self.slabs.iter().map(|s| s.len).collect();
        self.clean.mark_open(io, &lens)
    }
}

/// Opens and scans the slab files of `worker` in `dir`; `atomic` is the bytes the
/// device writes whole or not at all (`kvell.atomic_write`), `reads` the shape of
/// its sequential reads (`readahead::Reads`).
pub(crate) fn recover(
    io: &mut dyn Backend,
    dir: &Path,
    worker: usize,
    freelist: usize,
    fmt: Format,
    atomic: usize,
    reads: super::Reads,
) -> Result<Recovered> {
    let t_scan = Instant::now();
    let cpu_scan = thread_cpu_us();
    let (clean, recorded) = CleanRecord::open(io, dir, worker)?;
    let ends = recorded.ends;
    let mut scan = Scan::new(fmt, ends.is_some(), atomic, reads)?;
    let mut slabs = Vec::with_capacity(NCLASS);
    let mut frees: Vec<Vec<u64>> = Vec::with_capacity(NCLASS);
    // Never-written slots below a slab's end (a crash lost an append): they get a
    // tombstone, so a cleanly closed slab has none and one found later is damage.
    let mut holes: Vec<Loc> = Vec::new();
    for class in 0..NCLASS {
        let path: PathBuf = dir.join(slab::file_name(worker, class));
        let recorded_len = recorded.lens.as_ref().map(|l| l[class]);
        let s = scan.slab(io, &path, class, recorded_len)?;
        let holes_here: Vec<u64> = s.empty.into_iter().filter(|&h| h < s.end_slot).collect();
        if let Some(ends) = &ends {
            check_clean(&path, class, &holes_here, s.end_slot, ends[class])?;
        }
        for &h in &holes_here {
            scan.repairs.add(Kind::Hole, || {
                format!(
                    "{} at offset {}: slot {h} was never written, below the slab's end \
                     (slot {}): an append the crash lost, or a page zeroed since (an \
                     item that was there is gone); tombstoned",
                    path.display(),
                    slot_offset(class, h),
                    s.end_slot
                )
            });
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
    // The files are open (created if new): their entries are made durable before
    // anything in them is acknowledged.
    io.sync_dir(dir)
        .map_err(|e| Error::io(format!("syncing the directory {}", dir.display()), e))?;
    let scan_us = t_scan.elapsed().as_micros() as u64;
    let scan_cpu_us = thread_cpu_us().saturating_sub(cpu_scan);
    let t_index = Instant::now();
    // The index is built as the sorted runs of copies are merged, which finds the
    // older copies of short keys (long keys' are found before).
    let mut newest = scan.newest()?.into_iter();
    let index = Index::from_sorted(&mut newest);
    scan.stale.extend(newest.into_stale());
    // Older copies, holes and torn slots: write a tombstone over each, then reuse the
    // slot.
    scan.repairs.stale += scan.stale.len() as u64;
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
    let index_us = t_index.elapsed().as_micros() as u64;
    Ok(Recovered {
        slabs,
        clean,
        index,
        max_ts: scan.max_ts,
        bytes_read: scan.bytes_read,
        repairs: scan.repairs,
        scan_us,
        scan_cpu_us,
        index_us,
    })
}

/// CPU time of the calling thread, in microseconds (0 if the clock cannot be read).
#[expect(unsafe_code, reason = "clock_gettime is a libc call")]
fn thread_cpu_us() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given and nothing else.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if r != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000 + t.tv_nsec as u64 / 1_000
}

/// A cleanly closed slab ends where its appends stopped (`end`, from the record) and
/// has no never-written slot below that; otherwise items were lost (a page zeroed,
/// the file cut at a page).
fn check_clean(path: &Path, class: usize, holes: &[u64], end_slot: u64, end: u64) -> Result<()> {
    let slot_offset = |slot| slot_offset(class, slot);
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

/// The file offset of slot `slot` of `class`.
fn slot_offset(class: usize, slot: u64) -> u64 {
    let loc = Loc::new(class, slot);
    loc.unit().file_offset() + loc.offset_in_unit() as u64
}
