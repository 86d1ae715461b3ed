//! Per-page checkpoint ids: which image pages the meta file lacks.
//!
//! For every page, `page_txn` is the end position (linear block count) of the
//! newest transaction that changed it and `page_ckpt` that of the newest one whose
//! change the meta file holds; a page is dirty while `page_txn > page_ckpt`. A list
//! of the dirty pages spares a checkpoint the scan of every page.

use crate::image::Image;

/// Copies of pages for a checkpoint, in page order: page number and bytes.
pub type PageCopies = Vec<(u32, Box<[u8]>)>;

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
                self.page_txn.resize(p + 1, 0);
                self.page_ckpt.resize(p + 1, 0);
            }
            if self.page_txn[p] <= self.page_ckpt[p] {
                self.dirty.push(p as u32);
            }
            self.page_txn[p] = end;
        }
    }

    /// Copies of every page of `image` changed since the last call, in page order,
    /// with the version of each copied (for [`Image::flushed`] once written); from
    /// then on they count as checkpointed. A dirty page is always resident (a page
    /// is evicted only clean); one that is not would be a bug, and is left out.
    pub fn take(&mut self, image: &Image) -> (PageCopies, Vec<u64>) {
        let mut d = std::mem::take(&mut self.dirty);
        d.sort_unstable();
        d.dedup();
        let mut pages = Vec::with_capacity(d.len());
        let mut versions = Vec::with_capacity(d.len());
        for p in d {
            if let Some((bytes, v)) = image.copy_for_checkpoint(p) {
                self.page_ckpt[p as usize] = self.page_txn[p as usize];
                pages.push((p, bytes));
                versions.push(v);
            }
        }
        (pages, versions)
    }
}
