//! The item codec: the bytes of a slot (item, tombstone, never written), one copy for
//! the write path, the read path and recovery. Where a slot lies is `class.rs`'s.
//!
//! Small item (16-byte header), little-endian (`to_le_bytes`), with checksums:
//! ```text
//!  0        8        10       12          16         16+K         16+K+V     +4       class
//!  | ts u64 | K u16  | F u16  | V u32     | key (K)  | value (V)  | crc u32  | zeros  |
//! ```
//! `F` = 1 and `crc` = CRC32 (IEEE) of bytes 0..16+K+V in a checksummed database; `F` = 0
//! and no trailer otherwise. Empty slot: the 16 header bytes zero (`ts` = 0). Tombstone:
//! `K` = 0xFFFF, `V` = 0, bytes 16..24 the next free slot of its chain (`NO_NEXT` ends
//! it), then (checksums) the CRC32 of bytes 0..24. A large item's first page carries
//! the header, every later page starts with the same `ts` (8 bytes); key, value and CRC
//! stream through the pages' payloads. See kvell/DESIGN.md for the full diagrams.

use super::class::{CONT_HEADER, HEADER, MAX_KEY, class_of, large_pages_used};
use crate::io::PAGE;

/// `key_len` of a tombstone.
pub const TOMB: u16 = 0xFFFF;
/// End of a free-slot chain.
pub const NO_NEXT: u64 = u64::MAX;

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

/// The little-endian u64 at byte `at` (past the end it panics, as slicing does).
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
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
        let value_len = u32_at(b, 12) as usize;
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

    /// The bytes, from the slot's start, that the check [`Format::parse`] failed on
    /// covered: the 16-byte header when the header itself is wrong (or, without
    /// checksums, anything), else the item or tombstone with its checksum trailer. A
    /// write torn at a sector boundary can fail a check only if these bytes cross one.
    pub fn failed_span(self, b: &[u8], room: usize) -> usize {
        let ts = u64_at(b, 0);
        let key_len = u16::from_le_bytes([b[8], b[9]]);
        let flags = u16::from_le_bytes([b[10], b[11]]);
        let value_len = u32_at(b, 12) as usize;
        let fits = |k: usize| k <= MAX_KEY && k + value_len + self.trailer() <= room;
        let header_ok = ts != 0
            && flags == self.flags()
            && self.checksum
            && if key_len == TOMB {
                value_len == 0
            } else {
                fits(key_len as usize)
            };
        match (header_ok, key_len) {
            (false, _) => HEADER,
            (true, TOMB) => HEADER + 8 + CSUM,
            (true, k) => HEADER + k as usize + value_len + CSUM,
        }
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

/// The little-endian u32 at byte `at`.
fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
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

#[cfg(test)]
mod tests {
    use super::super::class::{MAX_VALUE, room, unit_len};
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
