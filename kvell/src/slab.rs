//! Slab layout: size classes, slot positions and the on-disk item format.
//! See kvell/DESIGN.md for the byte-level diagrams.
#![deny(unsafe_code)]

use crate::io::PAGE;

/// Bytes of item (header + key + value) per slot of the small classes.
pub const SMALL: [usize; 9] = [100, 128, 256, 400, 512, 1024, 1365, 2048, 4096];
/// Pages per slot of the large classes (items over one page).
pub const LARGE_PAGES: [usize; 12] = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
pub const NCLASS: usize = SMALL.len() + LARGE_PAGES.len();

/// Item header: ts u64 | key_len u16 | flags u16 | value_len u32.
pub const HEADER: usize = 16;
/// Header of every page of a large item after the first: ts u64.
pub const CONT_HEADER: usize = 8;
/// `key_len` of a tombstone.
pub const TOMB: u16 = 0xFFFF;
/// End of a free-slot chain.
pub const NO_NEXT: u64 = u64::MAX;
/// Largest key accepted.
pub const MAX_KEY: usize = 1024;
/// Largest value accepted (fits the largest class with the largest key).
pub const MAX_VALUE: usize = 8 << 20;

/// A slot location packed in a u64: class in the top 6 bits, slot number below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loc(pub u64);

impl Loc {
    pub fn new(class: usize, slot: u64) -> Loc {
        debug_assert!(slot < 1 << 58);
        Loc(((class as u64) << 58) | slot)
    }
    pub fn class(self) -> usize {
        (self.0 >> 58) as usize
    }
    pub fn slot(self) -> u64 {
        self.0 & ((1 << 58) - 1)
    }
    /// The I/O unit holding the slot: a page (small) or the slot itself (large).
    pub fn unit(self) -> Unit {
        let c = self.class();
        let u = if is_large(c) {
            self.slot()
        } else {
            self.slot() / per_page(c) as u64
        };
        Unit::new(c, u)
    }
    /// Byte offset of the slot inside its unit.
    pub fn offset_in_unit(self) -> usize {
        let c = self.class();
        if is_large(c) {
            0
        } else {
            (self.slot() % per_page(c) as u64) as usize * SMALL[c]
        }
    }
}

/// An I/O unit: (class, page) for small classes, (class, slot) for large ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Unit(pub u64);

impl Unit {
    pub fn new(class: usize, n: u64) -> Unit {
        Unit(((class as u64) << 58) | n)
    }
    pub fn class(self) -> usize {
        (self.0 >> 58) as usize
    }
    pub fn n(self) -> u64 {
        self.0 & ((1 << 58) - 1)
    }
    pub fn file_offset(self) -> u64 {
        self.n() * unit_len(self.class()) as u64
    }
}

pub fn is_large(class: usize) -> bool {
    class >= SMALL.len()
}

/// Slots per page of a small class.
pub fn per_page(class: usize) -> usize {
    PAGE / SMALL[class]
}

/// Bytes of one I/O unit of the class.
pub fn unit_len(class: usize) -> usize {
    if is_large(class) {
        LARGE_PAGES[class - SMALL.len()] * PAGE
    } else {
        PAGE
    }
}

/// Bytes of key + value a large slot of `pages` pages holds.
pub fn large_capacity(pages: usize) -> usize {
    pages * PAGE - HEADER - (pages - 1) * CONT_HEADER
}

/// The class of an item, or None if too large.
pub fn class_of(key_len: usize, value_len: usize) -> Option<usize> {
    let n = HEADER + key_len + value_len;
    if let Some(c) = SMALL.iter().position(|&s| n <= s) {
        return Some(c);
    }
    LARGE_PAGES
        .iter()
        .position(|&p| key_len + value_len <= large_capacity(p))
        .map(|i| SMALL.len() + i)
}

/// Name of a slab file.
pub fn file_name(worker: usize, class: usize) -> String {
    if is_large(class) {
        format!(
            "w{worker:03}-large-{}p.slab",
            LARGE_PAGES[class - SMALL.len()]
        )
    } else {
        format!("w{worker:03}-{}.slab", SMALL[class])
    }
}

/// What a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Never written (all zero).
    Empty,
    /// Freed; `next` continues the free chain.
    Tomb { ts: u64, next: u64 },
    Item {
        ts: u64,
        key_len: usize,
        value_len: usize,
    },
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Bytes of the checksum trailer of an item or tombstone in a checksummed slab.
pub const CSUM: usize = 4;
/// Header flag of a checksummed item or tombstone.
pub const FLAG_CSUM: u16 = 1;

/// The item format of a database: with or without a CRC32 per item (recorded in
/// `kvell.layout` at creation; see kvell/DESIGN.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Format {
    /// Every item and tombstone carries a CRC32 (IEEE, crc32fast) trailer over its
    /// header, key and value (tombstone: header and `next`), and header flag 1.
    pub checksum: bool,
}

fn crc(parts: &[&[u8]]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for p in parts {
        h.update(p);
    }
    h.finalize()
}

impl Format {
    /// Bytes after the key and value (the checksum trailer, if any).
    pub fn trailer(self) -> usize {
        if self.checksum { CSUM } else { 0 }
    }

    fn flags(self) -> u16 {
        if self.checksum { FLAG_CSUM } else { 0 }
    }

    /// The class of an item, or None if too large.
    pub fn class_of(self, key_len: usize, value_len: usize) -> Option<usize> {
        class_of(key_len, value_len + self.trailer())
    }

    /// Parses the slot at the start of `b`. `room` is the key+value capacity of the
    /// slot; an item that does not fit, a header of the other format, or (small items
    /// and tombstones, whose bytes are all in `b`) a failed checksum is an error
    /// string. A large item's checksum is checked by [`Format::read_large`].
    pub fn parse(self, b: &[u8], room: usize) -> Result<Slot, String> {
        let ts = u64_at(b, 0);
        let key_len = u16::from_le_bytes([b[8], b[9]]);
        let flags = u16::from_le_bytes([b[10], b[11]]);
        let value_len = u32::from_le_bytes(b[12..16].try_into().expect("4 bytes")) as usize;
        if ts == 0 {
            if key_len == 0 && value_len == 0 && flags == 0 {
                return Ok(Slot::Empty);
            }
            return Err("non-empty header with timestamp 0".into());
        }
        if flags != self.flags() {
            return Err(format!(
                "header flags {flags:#x} (expected {:#x}: checksum={})",
                self.flags(),
                self.checksum
            ));
        }
        if key_len == TOMB {
            if value_len != 0 {
                return Err(format!("tombstone with value length {value_len}"));
            }
            let t = HEADER + 8;
            if self.checksum && crc(&[&b[..t]]) != u32_at(b, t) {
                return Err("tombstone checksum mismatch".into());
            }
            return Ok(Slot::Tomb {
                ts,
                next: u64_at(b, HEADER),
            });
        }
        let key_len = key_len as usize;
        if key_len > MAX_KEY || key_len + value_len + self.trailer() > room {
            return Err(format!(
                "item of key {key_len} and value {value_len} bytes does not fit its slot"
            ));
        }
        let end = HEADER + key_len + value_len;
        if self.checksum && end + CSUM <= b.len() && b.len() <= PAGE {
            // a small item: all its bytes are here
            if crc(&[&b[..end]]) != u32_at(b, end) {
                return Err("item checksum mismatch".into());
            }
        }
        Ok(Slot::Item {
            ts,
            key_len,
            value_len,
        })
    }

    /// Writes a small item into its slot bytes (`b` is the slot, `SMALL[c]` long).
    pub fn write_small(self, b: &mut [u8], ts: u64, key: &[u8], value: &[u8]) {
        put_header(b, ts, key.len() as u16, self.flags(), value.len() as u32);
        let k = HEADER + key.len();
        b[HEADER..k].copy_from_slice(key);
        let mut end = k + value.len();
        b[k..end].copy_from_slice(value);
        if self.checksum {
            let c = crc(&[&b[..end]]);
            b[end..end + CSUM].copy_from_slice(&c.to_le_bytes());
            end += CSUM;
        }
        b[end..].fill(0);
    }

    /// Writes a tombstone into slot bytes.
    pub fn write_tomb(self, b: &mut [u8], ts: u64, next: u64) {
        put_header(b, ts, TOMB, self.flags(), 0);
        b[HEADER..HEADER + 8].copy_from_slice(&next.to_le_bytes());
        if self.checksum {
            let t = HEADER + 8;
            let c = crc(&[&b[..t]]);
            b[t..t + CSUM].copy_from_slice(&c.to_le_bytes());
        }
    }

    /// Writes a large item over the whole unit buffer (the checksum trailer follows
    /// the value in the byte stream).
    pub fn write_large(self, b: &mut [u8], ts: u64, key: &[u8], value: &[u8]) {
        put_header(b, ts, key.len() as u16, self.flags(), value.len() as u32);
        let sum = crc(&[&b[..HEADER], key, value]).to_le_bytes();
        let trailer: &[u8] = if self.checksum { &sum } else { &[] };
        let mut page = 0;
        let mut pos = HEADER;
        for src in [key, value, trailer] {
            let mut src = src;
            while !src.is_empty() {
                if pos == PAGE {
                    page += 1;
                    pos = CONT_HEADER;
                    b[page * PAGE..page * PAGE + 8].copy_from_slice(&ts.to_le_bytes());
                }
                let n = src.len().min(PAGE - pos);
                b[page * PAGE + pos..page * PAGE + pos + n].copy_from_slice(&src[..n]);
                pos += n;
                src = &src[n..];
            }
        }
        let end = page * PAGE + pos;
        b[end..(page + 1) * PAGE].fill(0);
    }

    /// Pages a large item of this many key+value bytes uses.
    pub fn large_pages(self, key_len: usize, value_len: usize) -> usize {
        large_pages_used(key_len + value_len + self.trailer())
    }

    /// Reads key and value of a large item: `Ok(None)` if a page carries another
    /// timestamp (a torn write), `Err` if the checksum fails.
    pub fn read_large(
        self,
        b: &[u8],
        ts: u64,
        key_len: usize,
        value_len: usize,
    ) -> Result<Option<KeyValue>, String> {
        let total = key_len + value_len + self.trailer();
        let used = large_pages_used(total);
        if used * PAGE > b.len() || (1..used).any(|p| u64_at(b, p * PAGE) != ts) {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(total);
        let mut page = 0;
        let mut pos = HEADER;
        while out.len() < total {
            if pos == PAGE {
                page += 1;
                pos = CONT_HEADER;
            }
            let n = (total - out.len()).min(PAGE - pos);
            out.extend_from_slice(&b[page * PAGE + pos..page * PAGE + pos + n]);
            pos += n;
        }
        if self.checksum {
            let body = key_len + value_len;
            if crc(&[&b[..HEADER], &out[..body]]) != u32_at(&out, body) {
                return Err("large item checksum mismatch".into());
            }
            out.truncate(body);
        }
        let value = out.split_off(key_len);
        Ok(Some((out, value)))
    }
}

/// A key and its value.
pub type KeyValue = (Vec<u8>, Vec<u8>);

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Parses a slot of the plain format (no checksums); see [`Format::parse`].
pub fn parse(b: &[u8], room: usize) -> Result<Slot, String> {
    Format::default().parse(b, room)
}

fn put_header(b: &mut [u8], ts: u64, key_len: u16, flags: u16, value_len: u32) {
    b[0..8].copy_from_slice(&ts.to_le_bytes());
    b[8..10].copy_from_slice(&key_len.to_le_bytes());
    b[10..12].copy_from_slice(&flags.to_le_bytes());
    b[12..16].copy_from_slice(&value_len.to_le_bytes());
}

/// Writes a small item of the plain format into its slot bytes.
pub fn write_small(b: &mut [u8], ts: u64, key: &[u8], value: &[u8]) {
    Format::default().write_small(b, ts, key, value)
}

/// Writes a tombstone of the plain format into slot bytes.
pub fn write_tomb(b: &mut [u8], ts: u64, next: u64) {
    Format::default().write_tomb(b, ts, next)
}

/// Key and value of a small item whose header parsed as `Slot::Item`.
pub fn small_kv(b: &[u8], key_len: usize, value_len: usize) -> (&[u8], &[u8]) {
    let k = HEADER + key_len;
    (&b[HEADER..k], &b[k..k + value_len])
}

/// Pages a large item of this many key+value bytes really uses.
pub fn large_pages_used(bytes: usize) -> usize {
    if bytes <= PAGE - HEADER {
        1
    } else {
        1 + (bytes - (PAGE - HEADER)).div_ceil(PAGE - CONT_HEADER)
    }
}

/// Writes a large item of the plain format over the whole unit buffer.
pub fn write_large(b: &mut [u8], ts: u64, key: &[u8], value: &[u8]) {
    Format::default().write_large(b, ts, key, value)
}

/// Reads a large item of the plain format; None if torn.
pub fn read_large(
    b: &[u8],
    ts: u64,
    key_len: usize,
    value_len: usize,
) -> Option<(Vec<u8>, Vec<u8>)> {
    Format::default()
        .read_large(b, ts, key_len, value_len)
        .ok()
        .flatten()
}

/// Key+value capacity of a slot of the class.
pub fn room(class: usize) -> usize {
    if is_large(class) {
        large_capacity(LARGE_PAGES[class - SMALL.len()])
    } else {
        SMALL[class] - HEADER
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_large_roundtrip() {
        assert_eq!(class_of(8, 76), Some(0));
        assert_eq!(class_of(8, 77), Some(1));
        assert_eq!(class_of(0, 4080), Some(8));
        assert_eq!(class_of(0, 4081), Some(9));
        assert!(class_of(MAX_KEY, MAX_VALUE).is_some());
        for len in [4081usize, 5000, 8150, 8171, 20_000] {
            let c = class_of(5, len).unwrap();
            let mut b = vec![0u8; unit_len(c)];
            let v: Vec<u8> = (0..len).map(|i| i as u8).collect();
            write_large(&mut b, 7, b"hello", &v);
            let Ok(Slot::Item {
                ts,
                key_len,
                value_len,
            }) = parse(&b, room(c))
            else {
                panic!("parse")
            };
            assert_eq!(ts, 7);
            let (k, got) = read_large(&b, ts, key_len, value_len).unwrap();
            assert_eq!(k, b"hello");
            assert_eq!(got, v);
            if large_pages_used(len + 5) > 1 {
                b[PAGE] ^= 1;
                assert!(read_large(&b, ts, key_len, value_len).is_none());
            }
        }
    }
}
