//! Per-page checkpoint ids: which image pages the meta file lacks.
//!
//! For every page, `page_txn` is the end position (linear block count) of the
//! newest transaction that changed it and `page_ckpt` that of the newest one whose
//! change the meta file holds; a page is dirty while `page_txn > page_ckpt`. A list
//! of the dirty pages spares a checkpoint the scan of every page.

use crate::format::BLOCK;
use crate::image::{Image, grow_vec, seal};
use crate::io::aligned::AlignedBuf;

/// Copies of pages for a checkpoint, one slice of its pages at a time, in page
/// order: the page numbers, the version of each copied (for [`Image::flushed`] once
/// written), and their bytes one after the other, sealed (CRC set) as the meta file
/// holds them, in one aligned buffer of at most [`SLICE`] pages that the
/// checkpointer keeps from one checkpoint to the next.
/// Pages a checkpoint copies under one hold of the core lock (1 MiB: a copy of
/// about a tenth of a millisecond), then writes before it copies the next slice.
pub const SLICE: usize = 256;

#[derive(Default)]
pub struct PageCopies {
    pub pages: Vec<u32>,
    pub versions: Vec<u64>,
    pub bytes: AlignedBuf,
}

impl PageCopies {
    /// Bytes of memory the buffers hold.
    pub fn held(&self) -> u64 {
        (self.bytes.held() + self.pages.capacity() * 4 + self.versions.capacity() * 8) as u64
    }
}

/// A taken list in page order, each page once (the checkpoint's writes then run
/// over consecutive pages).
pub fn sort_list(d: &mut Vec<u32>) {
    d.sort_unstable();
    d.dedup();
}

#[derive(Default)]
pub struct DirtyPages {
    page_txn: Vec<u64>,
    page_ckpt: Vec<u64>,
    dirty: Vec<u32>,
}

impl DirtyPages {
    /// Marks the pages a transaction changed with its end position.
    pub fn touch(&mut self, pages: &[u32], end: u64) {
        for &p in pages {
            let p = p as usize;
            if p >= self.page_txn.len() {
                // A page the transaction added to the image.
                grow_vec(&mut self.page_txn, p + 1, 0);
                grow_vec(&mut self.page_ckpt, p + 1, 0);
            }
            if self.page_txn[p] <= self.page_ckpt[p] {
                self.dirty.push(p as u32);
            }
            self.page_txn[p] = end;
        }
    }

    /// The pages changed since the last call, in the order they were first changed
    /// (the caller sorts them, outside the core lock: [`sort_list`]), for a
    /// checkpoint to copy in slices ([`DirtyPages::copy`]). Until a page is copied, a
    /// change to it does not list it again (it is still dirty): the checkpoint
    /// copies it with that change. Once copied, a change lists it for the next
    /// checkpoint.
    pub fn take_list(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.dirty)
    }

    /// Gives a taken list's memory back for the next checkpoint's.
    pub fn give_back(&mut self, mut d: Vec<u32>) {
        if self.dirty.is_empty() && d.capacity() > self.dirty.capacity() {
            d.clear();
            self.dirty = d;
        }
    }

    /// Copies `pages` (part of a taken list) of `image` into `c` (its buffers
    /// reused), sealed, with their versions; from then on they count as
    /// checkpointed up to their newest transaction, whose end is returned (the
    /// largest): the checkpoint may write the copies once the log is complete up
    /// to it. A dirty page is always resident (a page is evicted only clean); one
    /// that is not would be a bug, and is left out.
    pub fn copy(&mut self, image: &Image, pages: &[u32], c: &mut PageCopies) -> u64 {
        c.pages.clear();
        c.versions.clear();
        c.bytes.set_len(pages.len() * BLOCK);
        let mut newest = 0;
        for &p in pages {
            if let Some((bytes, v)) = image.copy_for_checkpoint(p) {
                let txn = self.page_txn[p as usize];
                self.page_ckpt[p as usize] = txn;
                newest = newest.max(txn);
                let at = c.pages.len() * BLOCK;
                let to = &mut c.bytes[at..at + BLOCK];
                to.copy_from_slice(bytes);
                seal(to, p as usize);
                c.pages.push(p);
                c.versions.push(v);
            }
        }
        let n = c.pages.len() * BLOCK;
        c.bytes.set_len(n);
        newest
    }
}
