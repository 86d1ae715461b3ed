//! The memory-resident meta image and the slab heap inside it.
//!
//! The image is an array of 4 KiB pages, the same bytes as the meta file. Page 0 is
//! the superblock; every other page is free (slot size 0) or a slab page of one slot
//! size holding records (a key and either its small value or the extent of its large
//! value in the data file). Transactions change the image only through redo entries
//! ([`TxBuild`]), so replaying the WAL reproduces it byte for byte. The ordered index,
//! the slot allocator and the data extent allocator are derived from the image, and
//! rebuilt from it on open.

use crate::extent::Extents;
use crate::format::{BLOCK, rd_u16, rd_u32, wr_u16, wr_u32};
use crate::txn::{Entry, Kind};
use std::collections::{BTreeMap, BTreeSet};

pub const META_MAGIC: u32 = 0x5445_4d57; // "WMET"
/// Version 2: every page of the meta file carries a CRC32 (see [`seal`]).
pub const META_VERSION: u32 = 2;
/// Superblock field: pages in the image (u32 at byte 16 of page 0).
pub const SB_PAGE_COUNT: usize = 16;
pub const PAGE_HEADER: usize = 32;
/// Slab page: bitmap of used slots at byte 8, 16 bytes (up to 128 slots).
pub const BITMAP_AT: usize = 8;
/// Slot sizes: chosen so that slots fill a page's 4064 usable bytes closely.
pub const CLASSES: [usize; 17] = [
    32, 48, 64, 96, 128, 192, 256, 338, 406, 508, 580, 677, 812, 1016, 1354, 2032, 4064,
];
pub const MAX_RECORD: usize = 4064;
pub const REC_INLINE_HDR: usize = 8;
pub const REC_EXTENT_HDR: usize = 24;
const KIND_INLINE: u8 = 1;
const KIND_EXTENT: u8 = 2;

/// A value as stored in a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored<'a> {
    Inline(&'a [u8]),
    Extent(Extent),
}

/// A large value's place in the data file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// First 4 KiB block.
    pub start: u32,
    pub blocks: u32,
    /// Value length in bytes.
    pub len: u32,
    /// CRC32 of the value.
    pub crc: u32,
}

pub fn class_of(len: usize) -> Option<usize> {
    CLASSES.iter().position(|&c| c >= len)
}

pub fn record_len(key: usize, v: &Stored) -> usize {
    match v {
        Stored::Inline(x) => REC_INLINE_HDR + key + x.len(),
        Stored::Extent(_) => REC_EXTENT_HDR + key,
    }
}

fn encode_record(key: &[u8], v: &Stored) -> Vec<u8> {
    let mut r = vec![0u8; record_len(key.len(), v)];
    wr_u16(&mut r, 0, key.len() as u16);
    match v {
        Stored::Inline(x) => {
            r[2] = KIND_INLINE;
            wr_u32(&mut r, 4, x.len() as u32);
            r[8..8 + key.len()].copy_from_slice(key);
            r[8 + key.len()..].copy_from_slice(x);
        }
        Stored::Extent(e) => {
            r[2] = KIND_EXTENT;
            wr_u32(&mut r, 4, e.len);
            wr_u32(&mut r, 8, e.start);
            wr_u32(&mut r, 12, e.blocks);
            wr_u32(&mut r, 16, e.crc);
            r[24..].copy_from_slice(key);
        }
    }
    r
}

/// Decodes the record in `slot` (a slot's bytes): key and value.
fn decode_record(slot: &[u8]) -> Option<(&[u8], Stored<'_>)> {
    let klen = rd_u16(slot, 0) as usize;
    let vlen = rd_u32(slot, 4) as usize;
    match slot[2] {
        KIND_INLINE => {
            let k = slot.get(8..8 + klen)?;
            let v = slot.get(8 + klen..8 + klen + vlen)?;
            Some((k, Stored::Inline(v)))
        }
        KIND_EXTENT => {
            let k = slot.get(24..24 + klen)?;
            Some((
                k,
                Stored::Extent(Extent {
                    start: rd_u32(slot, 8),
                    blocks: rd_u32(slot, 12),
                    len: vlen as u32,
                    crc: rd_u32(slot, 16),
                }),
            ))
        }
        _ => None,
    }
}

/// The pages.
pub struct Image {
    pages: Vec<Box<[u8]>>,
}

/// Where a page keeps its CRC32 in the meta file: a reserved field (superblock byte
/// 20, other pages byte 4). The in-memory image keeps it zero, so redo entries never
/// see it.
pub fn crc_at(page: usize) -> usize {
    if page == 0 { SB_PAGE_COUNT + 4 } else { 4 }
}

/// Sets the CRC32 of a page copy about to be written to the meta file (over the whole
/// page with the field zero).
pub fn seal(bytes: &mut [u8], page: usize) {
    let at = crc_at(page);
    wr_u32(bytes, at, 0);
    let c = crc32fast::hash(bytes);
    wr_u32(bytes, at, c);
}

/// Checks the CRC32 of a page read from the meta file and zeroes the field; false if
/// it does not match (a corrupt, torn or never-written page).
pub fn unseal(bytes: &mut [u8], page: usize) -> bool {
    let at = crc_at(page);
    let c = rd_u32(bytes, at);
    wr_u32(bytes, at, 0);
    crc32fast::hash(bytes) == c
}

fn zero_page() -> Box<[u8]> {
    vec![0u8; BLOCK].into_boxed_slice()
}

impl Image {
    /// A fresh image: the superblock only.
    pub fn new(pool_id: u32) -> Image {
        let mut p = zero_page();
        wr_u32(&mut p, 0, META_MAGIC);
        wr_u32(&mut p, 4, META_VERSION);
        wr_u32(&mut p, 8, pool_id);
        wr_u32(&mut p, 12, BLOCK as u32);
        wr_u32(&mut p, SB_PAGE_COUNT, 1);
        Image { pages: vec![p] }
    }

    /// An image from the meta file's bytes (whole pages).
    pub fn from_pages(pages: Vec<Box<[u8]>>) -> Image {
        Image { pages }
    }

    /// Checks the superblock; returns the page count it records.
    pub fn check_superblock(&self, pool_id: u32) -> Result<u32, String> {
        let p = self.pages.first().ok_or("empty meta file")?;
        if rd_u32(p, 0) != META_MAGIC {
            return Err("bad meta superblock magic".into());
        }
        if rd_u32(p, 4) != META_VERSION || rd_u32(p, 12) != BLOCK as u32 {
            return Err(format!(
                "unsupported meta version {} or page size {} (this build reads version \
                 {META_VERSION}, pages of {BLOCK} bytes)",
                rd_u32(p, 4),
                rd_u32(p, 12)
            ));
        }
        if rd_u32(p, 8) != pool_id {
            return Err(format!(
                "meta file belongs to pool {:#x}, the WAL to {pool_id:#x}",
                rd_u32(p, 8)
            ));
        }
        Ok(rd_u32(p, SB_PAGE_COUNT))
    }

    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    pub fn page(&self, p: u32) -> &[u8] {
        &self.pages[p as usize]
    }

    /// Makes the image exactly `n` pages.
    pub fn resize(&mut self, n: usize) {
        self.pages.resize_with(n.max(1), zero_page);
    }

    /// Applies one redo entry (`payload` holds a copy entry's bytes). An entry past
    /// the end grows the image; an entry never spans pages (the heap keeps every
    /// structure inside one page), but one that did would still be applied.
    pub fn apply(&mut self, e: &Entry, payload: &[u8]) {
        if e.kind == Kind::Csum {
            return;
        }
        let end = e.off as usize + e.len as usize;
        let need = end.div_ceil(BLOCK);
        if need > self.pages.len() {
            self.pages.resize_with(need, zero_page);
        }
        match e.kind {
            Kind::Copy => self.write(e.off as usize, payload),
            Kind::Assign => {
                let b = e.data.to_le_bytes();
                self.write(e.off as usize, &b[..(e.len as usize).min(4)]);
            }
            Kind::Memset => self.write(e.off as usize, &vec![e.data as u8; e.len as usize]),
            Kind::SetBits | Kind::ClrBits => {
                for bit in e.data as usize..e.data as usize + e.len as usize {
                    let at = e.off as usize + bit / 8;
                    let p = &mut self.pages[at / BLOCK][at % BLOCK];
                    if e.kind == Kind::SetBits {
                        *p |= 1 << (bit % 8);
                    } else {
                        *p &= !(1 << (bit % 8));
                    }
                }
            }
            Kind::Csum => {}
        }
    }

    fn write(&mut self, mut off: usize, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let k = (BLOCK - off % BLOCK).min(bytes.len());
            self.pages[off / BLOCK][off % BLOCK..off % BLOCK + k].copy_from_slice(&bytes[..k]);
            off += k;
            bytes = &bytes[k..];
        }
    }
}

/// A transaction being built: its entries and payload. Every change is applied to
/// the image at once and recorded here.
#[derive(Default)]
pub struct TxBuild {
    pub entries: Vec<Entry>,
    pub payload: Vec<u8>,
    pub pages: Vec<u32>,
}

fn loc(page: u32, slot: usize) -> u64 {
    ((page as u64) << 8) | slot as u64
}

fn loc_split(l: u64) -> (u32, usize) {
    ((l >> 8) as u32, (l & 0xff) as usize)
}

/// The image plus what is derived from it: the ordered index, the slot allocator,
/// per-page checkpoint tracking and the data extent allocator.
pub struct Heap {
    pub image: Image,
    /// key -> record location (page << 8 | slot).
    index: BTreeMap<Box<[u8]>, u64>,
    partial: Vec<BTreeSet<u32>>,
    free_pages: BTreeSet<u32>,
    used: Vec<u16>,
    /// Per page: end position (linear block count) of the newest transaction that
    /// changed it, and of the newest one whose change the meta file holds.
    pub page_txn: Vec<u64>,
    pub page_ckpt: Vec<u64>,
    dirty: Vec<u32>,
    pub extents: Extents,
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
            page_txn: vec![0; n],
            page_ckpt: vec![0; n],
            dirty: Vec::new(),
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
        self.key_bytes + self.index.len() as u64 * 48
    }

    pub fn image_bytes(&self) -> u64 {
        (self.image.page_count() * BLOCK) as u64
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
                        self.page_txn.push(0);
                        self.page_ckpt.push(0);
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

    fn free_slot(&mut self, tb: &mut TxBuild, l: u64) {
        let (page, slot) = loc_split(l);
        let size = rd_u16(self.image.page(page), 0) as usize;
        let class = class_of(size).unwrap();
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

    /// Marks the pages a transaction changed with its end position.
    pub fn touch(&mut self, pages: &[u32], end: u64) {
        for &p in pages {
            let p = p as usize;
            if self.page_txn[p] <= self.page_ckpt[p] {
                self.dirty.push(p as u32);
            }
            self.page_txn[p] = end;
        }
    }

    /// Dirty pages for a checkpoint: copies of every page changed since the last
    /// checkpoint, which are from then on counted as checkpointed.
    pub fn take_dirty(&mut self) -> Vec<(u32, Box<[u8]>)> {
        let mut d = std::mem::take(&mut self.dirty);
        d.sort_unstable();
        d.dedup();
        d.into_iter()
            .map(|p| {
                self.page_ckpt[p as usize] = self.page_txn[p as usize];
                (p, self.image.page(p).into())
            })
            .collect()
    }
}
