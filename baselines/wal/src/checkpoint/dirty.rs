//! Per-page checkpoint ids: which image pages the meta file lacks.
//!
//! For every page, `page_txn` is the end position (linear block count) of the
//! newest transaction that changed it and `page_ckpt` that of the newest one whose
//! change the meta file holds; a page is dirty while `page_txn > page_ckpt`. A list
//! of the dirty pages spares a checkpoint the scan of every page.

use crate::format::BLOCK;
use crate::image::{Image, grow_vec, seal};
use crate::io::aligned::AlignedBuf;

/// Copies of pages for a checkpoint, in page order: the page numbers, the version of
/// each copied (for [`Image::flushed`] once written), and their bytes one after the
/// other, sealed (CRC set) as the meta file holds them, in one aligned buffer that
/// the store keeps from one checkpoint to the next (so copying frees and allocates
/// nothing; see `Store::take_dirty`).
#[derive(Default)]
pub struct PageCopies {
    pub pages: Vec<u32>,
    pub versions: Vec<u64>,
    pub bytes: AlignedBuf,
}

impl PageCopies {
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// Bytes of memory the buffers hold.
    pub fn held(&self) -> u64 {
        (self.bytes.held() + self.pages.capacity() * 4 + self.versions.capacity() * 8) as u64
    }
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

    /// Copies of every page of `image` changed since the last call, into `c` (its
    /// buffers reused), in page order; from then on they count as checkpointed. A
    /// dirty page is always resident (a page is evicted only clean); one that is not
    /// would be a bug, and is left out.
    pub fn take(&mut self, image: &Image, c: &mut PageCopies) {
        let mut d = std::mem::take(&mut self.dirty);
        d.sort_unstable();
        d.dedup();
        c.pages.clear();
        c.versions.clear();
        c.bytes.set_len(d.len() * BLOCK);
        for p in d.iter().copied() {
            if let Some((bytes, v)) = image.copy_for_checkpoint(p) {
                self.page_ckpt[p as usize] = self.page_txn[p as usize];
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
        // the list's memory is kept for the next checkpoint
        d.clear();
        self.dirty = d;
    }
}
