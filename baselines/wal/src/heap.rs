//! The slab heap inside the meta image and the ordered index over its records.
//!
//! Every change goes through a redo entry that is applied to the image at once and
//! recorded in a [`TxBuild`]. The ordered index (key -> page and slot), the pages
//! with free slots per slot size, the free pages and the data extent allocator are
//! derived from the image and rebuilt from it on open ([`Heap::rebuild`]).

use crate::extent::{Extent, Extents};
use crate::format::{BLOCK, rd_u16, wr_u16};
use crate::image::{
    BITMAP_AT, CLASSES, Image, MAX_RECORD, PAGE_HEADER, SB_PAGE_COUNT, Stored, class_of,
    decode_record, encode_record, record_len,
};
use crate::txn::{Entry, Kind, TxBuild};
use std::collections::{BTreeMap, BTreeSet};

/// Estimated bytes of an index entry besides its key: the location, the key's box
/// and the `BTreeMap`'s share of a node.
const INDEX_ENTRY: u64 = 48;

fn loc(page: u32, slot: usize) -> u64 {
    ((page as u64) << 8) | slot as u64
}

fn loc_split(l: u64) -> (u32, usize) {
    ((l >> 8) as u32, (l & 0xff) as usize)
}

/// The image plus what is derived from it: the ordered index, the slot allocator
/// and the data extent allocator.
pub struct Heap {
    image: Image,
    /// key -> record location (page << 8 | slot).
    index: BTreeMap<Box<[u8]>, u64>,
    partial: Vec<BTreeSet<u32>>,
    free_pages: BTreeSet<u32>,
    used: Vec<u16>,
    extents: Extents,
    key_bytes: u64,
}

impl Heap {
    /// Derives the index and allocators from a loaded (and replayed) image.
    pub fn rebuild(image: Image) -> Result<Heap, String> {
        let n = image.page_count();
        let mut h = Heap {
            image,
            index: BTreeMap::new(),
            partial: vec![BTreeSet::new(); CLASSES.len()],
            free_pages: BTreeSet::new(),
            used: vec![0; n],
            extents: Extents::default(),
            key_bytes: 0,
        };
        let mut used_extents = Vec::new();
        let mut entries: Vec<(Box<[u8]>, u64)> = Vec::new();
        for p in 1..n as u32 {
            let page = h.image.page(p);
            let size = rd_u16(page, 0) as usize;
            if size == 0 {
                h.free_pages.insert(p);
                continue;
            }
            let class = CLASSES
                .iter()
                .position(|&c| c == size)
                .ok_or(format!("page {p} has slot size {size}"))?;
            let nslots = rd_u16(page, 2) as usize;
            if nslots != MAX_RECORD / size {
                return Err(format!("page {p} has {nslots} slots of {size} bytes"));
            }
            let mut used = 0;
            for s in 0..nslots {
                if page[BITMAP_AT + s / 8] & (1 << (s % 8)) == 0 {
                    continue;
                }
                used += 1;
                let at = PAGE_HEADER + s * size;
                let (k, v) = decode_record(&page[at..at + size])
                    .ok_or(format!("bad record in page {p} slot {s}"))?;
                if let Stored::Extent(e) = v {
                    used_extents.push((e.start, e.blocks));
                }
                h.key_bytes += k.len() as u64;
                entries.push((k.into(), loc(p, s)));
            }
            h.used[p as usize] = used;
            if (used as usize) < nslots {
                h.partial[class].insert(p);
            }
        }
        // Sorted first, the index is built in bulk (much faster than inserting).
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(format!(
                "key stored twice (locations {:#x}, {:#x})",
                w[0].1, w[1].1
            ));
        }
        h.index = entries.into_iter().collect();
        h.extents = Extents::rebuild(used_extents)?;
        Ok(h)
    }

    pub fn items(&self) -> u64 {
        self.index.len() as u64
    }

    /// Estimated memory of the ordered index (keys, locations, tree overhead).
    pub fn index_bytes(&self) -> u64 {
        self.key_bytes + self.index.len() as u64 * INDEX_ENTRY
    }

    pub fn image_bytes(&self) -> u64 {
        (self.image.page_count() * BLOCK) as u64
    }

    /// What the engine keeps in memory for its data: the image and its index.
    pub fn memory_bytes(&self) -> u64 {
        self.image_bytes() + self.index_bytes()
    }

    /// Bytes by which storing `key` -> `v` would grow [`Heap::memory_bytes`]: a
    /// page when its record needs a slot and no page of its class has one and no
    /// page is free (the image grows by a page), and an index entry for a new key.
    /// An update in place (same slot size) grows nothing.
    pub fn growth(&self, key: &[u8], v: &Stored) -> u64 {
        let Some(class) = class_of(record_len(key.len(), v)) else {
            return 0; // refused by the write path's limits before it gets here
        };
        let old = self.index.get(key).copied();
        if let Some(l) = old {
            let (p, _) = loc_split(l);
            if rd_u16(self.image.page(p), 0) as usize == CLASSES[class] {
                return 0;
            }
        }
        let page = if self.partial[class].is_empty() && self.free_pages.is_empty() {
            BLOCK as u64
        } else {
            0
        };
        let entry = if old.is_none() {
            key.len() as u64 + INDEX_ENTRY
        } else {
            0
        };
        page + entry
    }

    pub fn image(&self) -> &Image {
        &self.image
    }

    /// Allocates `blocks` blocks of the data file for a large value.
    pub fn alloc_extent(&mut self, blocks: u32) -> u32 {
        self.extents.alloc(blocks)
    }

    /// Gives an extent back to the data file's allocator.
    pub fn free_extent(&mut self, x: &Extent) {
        self.extents.free(x.start, x.blocks);
    }

    fn slot_bytes(&self, l: u64) -> &[u8] {
        let (p, s) = loc_split(l);
        let page = self.image.page(p);
        let size = rd_u16(page, 0) as usize;
        let at = PAGE_HEADER + s * size;
        &page[at..at + size]
    }

    pub fn get(&self, key: &[u8]) -> Option<Stored<'_>> {
        let l = *self.index.get(key)?;
        decode_record(self.slot_bytes(l)).map(|(_, v)| v)
    }

    /// Up to `count` records with key >= `start`, in key order.
    pub fn range(&self, start: &[u8], count: usize) -> Vec<(&[u8], Stored<'_>)> {
        self.index
            .range::<[u8], _>((std::ops::Bound::Included(start), std::ops::Bound::Unbounded))
            .take(count)
            .filter_map(|(k, &l)| decode_record(self.slot_bytes(l)).map(|(_, v)| (&k[..], v)))
            .collect()
    }

    // ---- changes, each applied and recorded in `tb` ----

    fn emit(&mut self, tb: &mut TxBuild, e: Entry, bytes: &[u8]) {
        self.image.apply(&e, bytes);
        if e.kind != Kind::Csum {
            let first = (e.off / BLOCK as u64) as u32;
            let last = ((e.off + e.len.max(1) as u64 - 1) / BLOCK as u64) as u32;
            for p in first..=last {
                if !tb.pages.contains(&p) {
                    tb.pages.push(p);
                }
            }
        }
        tb.payload.extend_from_slice(bytes);
        tb.entries.push(e);
    }

    fn copy(&mut self, tb: &mut TxBuild, off: usize, bytes: &[u8]) {
        let e = Entry {
            kind: Kind::Copy,
            off: off as u64,
            len: bytes.len() as u32,
            data: 0,
        };
        self.emit(tb, e, bytes);
    }

    fn assign(&mut self, tb: &mut TxBuild, off: usize, len: u32, data: u32) {
        let e = Entry {
            kind: Kind::Assign,
            off: off as u64,
            len,
            data,
        };
        self.emit(tb, e, &[]);
    }

    fn bits(&mut self, tb: &mut TxBuild, page: u32, slot: usize, set: bool) {
        let e = Entry {
            kind: if set { Kind::SetBits } else { Kind::ClrBits },
            off: page as u64 * BLOCK as u64 + BITMAP_AT as u64,
            len: 1,
            data: slot as u32,
        };
        self.emit(tb, e, &[]);
    }

    /// Records the checksum of a large value written to the data file.
    pub fn csum(&mut self, tb: &mut TxBuild, e: &Extent) {
        let x = Entry {
            kind: Kind::Csum,
            off: e.start as u64 * BLOCK as u64,
            len: e.len,
            data: e.crc,
        };
        self.emit(tb, x, &[]);
    }

    #[expect(
        clippy::expect_used,
        reason = "a page in `partial` has a free slot: it leaves the set when its last slot is taken"
    )]
    fn alloc_slot(&mut self, tb: &mut TxBuild, class: usize) -> u64 {
        let size = CLASSES[class];
        let nslots = MAX_RECORD / size;
        let page = match self.partial[class].first() {
            Some(&p) => p,
            None => {
                let p = match self.free_pages.pop_first() {
                    Some(p) => p,
                    None => {
                        let p = self.image.page_count() as u32;
                        self.assign(tb, SB_PAGE_COUNT, 4, p + 1);
                        self.used.push(0);
                        p
                    }
                };
                let mut hdr = [0u8; 4];
                wr_u16(&mut hdr, 0, size as u16);
                wr_u16(&mut hdr, 2, nslots as u16);
                self.copy(tb, p as usize * BLOCK, &hdr);
                self.partial[class].insert(p);
                p
            }
        };
        let pg = self.image.page(page);
        let slot = (0..nslots)
            .find(|s| pg[BITMAP_AT + s / 8] & (1 << (s % 8)) == 0)
            .expect("a partial page has a free slot");
        self.bits(tb, page, slot, true);
        self.used[page as usize] += 1;
        if self.used[page as usize] as usize == nslots {
            self.partial[class].remove(&page);
        }
        loc(page, slot)
    }

    #[expect(
        clippy::expect_used,
        reason = "an indexed record lies in a slab page, whose slot size `rebuild` checked \
                  or `alloc_slot` wrote"
    )]
    fn free_slot(&mut self, tb: &mut TxBuild, l: u64) {
        let (page, slot) = loc_split(l);
        let size = rd_u16(self.image.page(page), 0) as usize;
        let class = class_of(size).expect("a slab page has a slot size of CLASSES");
        self.bits(tb, page, slot, false);
        self.used[page as usize] -= 1;
        if self.used[page as usize] == 0 {
            // An empty page goes back to the free pages, for any class.
            self.assign(tb, page as usize * BLOCK, 4, 0);
            self.partial[class].remove(&page);
            self.free_pages.insert(page);
        } else {
            self.partial[class].insert(page);
        }
    }

    /// Stores `key` -> `v`; returns the extent of the value it replaced, if large.
    #[expect(
        clippy::expect_used,
        reason = "the write path checks every record against MAX_RECORD, the largest class"
    )]
    pub fn put(&mut self, tb: &mut TxBuild, key: &[u8], v: &Stored) -> Option<Extent> {
        let rec = encode_record(key, v);
        let class = class_of(rec.len()).expect("records are checked against MAX_RECORD");
        let old = self.index.get(key).copied();
        let mut old_extent = None;
        if let Some(l) = old {
            if let Some((_, Stored::Extent(e))) = decode_record(self.slot_bytes(l)) {
                old_extent = Some(e);
            }
            let (p, s) = loc_split(l);
            if rd_u16(self.image.page(p), 0) as usize == CLASSES[class] {
                // Same slot size: overwrite in place (the redo log makes it atomic).
                self.copy(
                    tb,
                    p as usize * BLOCK + PAGE_HEADER + s * CLASSES[class],
                    &rec,
                );
                return old_extent;
            }
        }
        let l = self.alloc_slot(tb, class);
        let (p, s) = loc_split(l);
        self.copy(
            tb,
            p as usize * BLOCK + PAGE_HEADER + s * CLASSES[class],
            &rec,
        );
        if let Some(o) = old {
            self.free_slot(tb, o);
        } else {
            self.key_bytes += key.len() as u64;
        }
        self.index.insert(key.into(), l);
        old_extent
    }

    /// Removes `key`; returns whether it existed and the extent of its value.
    pub fn delete(&mut self, tb: &mut TxBuild, key: &[u8]) -> (bool, Option<Extent>) {
        let Some(l) = self.index.remove(key) else {
            return (false, None);
        };
        self.key_bytes -= key.len() as u64;
        let ext = match decode_record(self.slot_bytes(l)) {
            Some((_, Stored::Extent(e))) => Some(e),
            _ => None,
        };
        self.free_slot(tb, l);
        (true, ext)
    }
}
