//! The memory-resident meta image: its pages, the superblock, the records in slab
//! pages, the page CRCs of the meta file, and redo entries applied to it.
//!
//! The image is an array of 4 KiB pages, the same bytes as the meta file. Page 0 is
//! the superblock; every other page is free (slot size 0) or a slab page of one slot
//! size holding records (a key and either its small value or the extent of its large
//! value in the data file). Transactions change the image only through redo entries
//! ([`Image::apply`]), so replaying the WAL reproduces it byte for byte. The slab
//! heap and the index over these pages are built on top (heap.rs).

use crate::extent::Extent;
use crate::format::{BLOCK, rd_u16, rd_u32, wr_u16, wr_u32};
use crate::txn::{Entry, Kind};

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

pub fn class_of(len: usize) -> Option<usize> {
    CLASSES.iter().position(|&c| c >= len)
}

pub fn record_len(key: usize, v: &Stored) -> usize {
    match v {
        Stored::Inline(x) => REC_INLINE_HDR + key + x.len(),
        Stored::Extent(_) => REC_EXTENT_HDR + key,
    }
}

pub fn encode_record(key: &[u8], v: &Stored) -> Vec<u8> {
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
pub fn decode_record(slot: &[u8]) -> Option<(&[u8], Stored<'_>)> {
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
