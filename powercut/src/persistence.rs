//! The persistence model: what a power cut after a given record must keep, and
//! what it may keep. ext4 mounted with data=ordered, held to what it documents
//! (and to the minimum the literature's crash-state generators assume), never to
//! what its implementation happens to do on a good day.
//!
//! The cut falls after record `cut - 1`: every call recorded before it returned,
//! none after it began (a call in flight at the cut is the cut after its record
//! with that call torn or dropped, which the states include).
//!
//! - **Syncs.** An `fsync` or `fdatasync` of a file that completed before the cut
//!   makes durable every change of that file recorded before its call began (its
//!   `start`): bytes and size (fdatasync flushes the size a read needs, which is
//!   all the model tracks). A write on an O_SYNC/O_DSYNC descriptor or with
//!   RWF_(D)SYNC is durable when it returns. `sync`/`syncfs` make everything before
//!   them durable. `sync_file_range` and `msync` make nothing durable (no device
//!   flush, no metadata).
//! - **Bytes.** A change not yet made durable may be on disk whole, not at all, or
//!   torn: some of its 512-byte sectors written and others not, independently of
//!   every other change (write-back is in no particular order). A sector that
//!   reaches the disk carries the file's bytes at that moment, so a sector never
//!   holds a later write without the earlier ones to the same sector.
//! - **Sizes.** A file's durable size is its size after some change between the
//!   last one made durable and the last one before the cut. data=ordered: the bytes
//!   of every change that grew the file up to that point are on disk whole (the
//!   data of newly allocated blocks is written before the metadata that exposes
//!   them); bytes beyond the durable size are gone, bytes within it that never
//!   reached the disk read as zeros.
//! - **Names.** Creating, removing, renaming or linking a name is metadata in
//!   ext4's journal, committed in order: the durable names are the base names
//!   changed by a prefix of the changes of names, and the prefix holds every
//!   change whose directories (both, for a rename across two) were fsynced after
//!   it. An fsync of a file does not make its name durable: POSIX asks for the
//!   directory's fsync, and a store that relies on ext4 committing the name with
//!   the file's inode is not counted on here. Which files an image holds follows
//!   from its names; a file's bytes do not depend on its name.

use crate::history::{History, Target};

/// A file at the cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileAtCut {
    /// Its changes recorded before the cut (a prefix of `File::changes`).
    pub changes: usize,
    /// For each of those, whether it is durable whatever the cut does.
    pub durable: Vec<bool>,
    /// The sizes it may have: after this many changes (ascending; the first is
    /// the smallest allowed, after the last durable change).
    pub size_points: Vec<usize>,
}

impl FileAtCut {
    /// The changes a crash state may keep, drop or tear.
    pub fn volatile(&self) -> impl Iterator<Item = usize> + '_ {
        self.durable
            .iter()
            .enumerate()
            .filter(|(_, d)| !**d)
            .map(|(i, _)| i)
    }
}

/// What the model says at one cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Durable {
    pub cut: usize,
    /// Indexed like `History::files`.
    pub files: Vec<FileAtCut>,
    /// Changes of names recorded before the cut.
    pub names: usize,
    /// The prefix of those that must be durable.
    pub names_durable: usize,
}

impl Durable {
    /// The model at the cut before record `cut`.
    pub fn at(h: &History, cut: usize) -> Durable {
        // the latest start of a completed sync of each file and directory
        let mut file_start = vec![0u64; h.files.len()];
        let mut dir_start = vec![0u64; h.dirs.len()];
        let mut all_start = 0u64;
        for s in h.syncs.iter().take_while(|s| s.index < cut) {
            match s.target {
                Target::File(f) => file_start[f] = file_start[f].max(s.start),
                Target::Dir(d) => dir_start[d] = dir_start[d].max(s.start),
                Target::All => all_start = all_start.max(s.start),
            }
        }
        let files = h
            .files
            .iter()
            .enumerate()
            .map(|(f, file)| {
                let start = file_start[f].max(all_start);
                let n = file.changes.iter().take_while(|c| c.index < cut).count();
                let durable: Vec<bool> = file.changes[..n]
                    .iter()
                    .map(|c| c.seq < start || c.sync_write)
                    .collect();
                // the size after the last durable change, resizing or not: an
                // O_DSYNC write inside bytes an unsynced append exposed must read
                // back, so the size it was written under is durable with it
                let first = durable.iter().rposition(|d| *d).map_or(0, |i| i + 1);
                let mut size_points = vec![first];
                size_points.extend(
                    (first..n)
                        .filter(|&i| file.changes[i].resizes())
                        .map(|i| i + 1),
                );
                FileAtCut {
                    changes: n,
                    durable,
                    size_points,
                }
            })
            .collect();
        let names = h.names.iter().take_while(|n| n.index < cut).count();
        let names_durable = h.names[..names]
            .iter()
            .rposition(|n| n.seq < all_start || n.dirs.iter().all(|&d| n.seq < dir_start[d]))
            .map_or(0, |i| i + 1);
        Durable {
            cut,
            files,
            names,
            names_durable,
        }
    }
}
