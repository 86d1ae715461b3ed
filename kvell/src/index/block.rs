//! The front-coded block: the index's unit of storage, one exact-size heap
//! allocation of up to `MAX_ENTRIES` sorted entries, and the scratch space blocks are
//! decoded into and re-encoded from when they split, merge or change format.
//!
//! ```text
//! count u8 | class u8 (MIXED: one class byte per entry) | width u8 (bytes per slot)
//! entry*:  h u8 | [shared varint | len varint if h >> 4 == 15] | suffix | slot (width, LE) | [class u8]
//!          h = shared << 4 | len when shared < 15 and len < 16
//! ```
//! `shared` bytes come from the previous key, `suffix` follows. The class is stored
//! once when every entry of the block has it, slots in the fewest whole bytes that
//! hold the block's largest. A lookup ([`search`]) walks a block without rebuilding
//! keys: it tracks how many bytes the search key shares with the last smaller entry
//! and only compares suffixes of entries that share exactly that much.

use crate::hint::prefetch;
use crate::slab::Loc;

/// Entries per block at most; a full block splits in two halves (or, at the end of
/// the last block, starts a new block so that sorted inserts leave full blocks).
/// 32, not 128 as until 2026-12-07: on uniform keys a lookup's block is cold, and
/// asking for all of a 128-entry block's lines at once (about 2 KB) kept more
/// misses in flight than a core holds (kvell/DESIGN.md, Index).
pub(super) const MAX_ENTRIES: usize = 32;
/// A block below this many entries is merged with a neighbour.
pub(super) const MIN_ENTRIES: usize = 8;
/// A block over this many bytes splits too (long keys), unless it holds one entry.
pub(super) const MAX_BYTES: usize = 4096;
/// The class byte of a block whose entries have different classes.
pub(super) const MIXED: u8 = 0xFF;
/// Bytes of a block's header (count, class, width).
pub(super) const HDR: usize = 3;

/// The bytes `a` and `b` share from their start, compared eight at a time: a lookup
/// compares each suffix it meets with the key (most differ in their first word), and
/// recovery's block build compares each key with the one before it (neighbouring
/// YCSB keys of a worker's 2M share about 10 bytes: two words where the byte loop
/// took about ten steps).
pub(super) fn lcp(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = word(a, i) ^ word(b, i);
        if x != 0 {
            // Little-endian: the first byte that differs is the lowest set one.
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// The eight bytes of `s` from `i`, as a little-endian word (one unaligned load).
fn word(s: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&s[i..i + 8]);
    u64::from_le_bytes(w)
}

fn put_varint(out: &mut Vec<u8>, mut v: usize) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], p: &mut usize) -> usize {
    let mut v = 0;
    let mut shift = 0;
    loop {
        let x = b[*p];
        *p += 1;
        v |= ((x & 0x7f) as usize) << shift;
        if x < 0x80 {
            return v;
        }
        shift += 7;
    }
}

fn varint_len(v: usize) -> usize {
    (usize::BITS - v.max(1).leading_zeros()).div_ceil(7) as usize
}

/// How entries of a block store their location.
#[derive(Clone, Copy, PartialEq)]
pub(super) struct Format {
    /// The class of every entry, or MIXED.
    pub(super) class: u8,
    /// Bytes per slot number.
    pub(super) width: usize,
}

impl Format {
    pub(super) fn of(b: &[u8]) -> Format {
        Format {
            class: b[1],
            width: b[2] as usize,
        }
    }
    pub(super) fn fits(self, loc: Loc) -> bool {
        (self.class == MIXED || self.class as usize == loc.class())
            && (self.width >= 8 || loc.slot() >> (8 * self.width) == 0)
    }
    pub(super) fn entry_len(self, shared: usize, len: usize) -> usize {
        let h = if shared < 15 && len < 16 {
            1
        } else {
            1 + varint_len(shared) + varint_len(len)
        };
        h + len + self.width + (self.class == MIXED) as usize
    }
    pub(super) fn put(self, out: &mut Vec<u8>, shared: usize, suffix: &[u8], loc: Loc) {
        if shared < 15 && suffix.len() < 16 {
            out.push((shared << 4 | suffix.len()) as u8);
        } else {
            out.push(0xF0);
            put_varint(out, shared);
            put_varint(out, suffix.len());
        }
        out.extend_from_slice(suffix);
        out.extend_from_slice(&loc.slot().to_le_bytes()[..self.width]);
        if self.class == MIXED {
            out.push(loc.class() as u8);
        }
    }
}

/// One decoded entry of a block: bytes `start..end` of it.
pub(super) struct Entry<'a> {
    pub(super) shared: usize,
    pub(super) suffix: &'a [u8],
    pub(super) loc: Loc,
    /// Offset of the slot field.
    pub(super) slot_at: usize,
    pub(super) end: usize,
}

pub(super) fn entry_at(b: &[u8], start: usize) -> Entry<'_> {
    let f = Format::of(b);
    let h = b[start] as usize;
    let mut p = start + 1;
    let (shared, len) = if h >> 4 == 15 {
        let s = get_varint(b, &mut p);
        (s, get_varint(b, &mut p))
    } else {
        (h >> 4, h & 15)
    };
    let suffix = &b[p..p + len];
    p += len;
    let slot_at = p;
    let mut s = [0u8; 8];
    s[..f.width].copy_from_slice(&b[p..p + f.width]);
    p += f.width;
    let class = if f.class == MIXED {
        p += 1;
        b[p - 1]
    } else {
        f.class
    };
    Entry {
        shared,
        suffix,
        loc: Loc::new(class as usize, u64::from_le_bytes(s)),
        slot_at,
        end: p,
    }
}

pub(super) fn count(b: &[u8]) -> usize {
    b[0] as usize
}

/// Where a key is, or would go, in a block.
pub(super) enum Pos {
    /// Entry `i` at byte `at` holds the key.
    Found { i: usize, at: usize },
    /// The key would be entry `i` at byte `at`; it shares `m` bytes with the entry
    /// before and `next_shared` with the entry now at `i` (if any).
    Missing {
        i: usize,
        at: usize,
        m: usize,
        next_shared: usize,
    },
}

pub(super) fn search(b: &[u8], key: &[u8]) -> Pos {
    // The walk reads the block front to back, each entry's place known only once the
    // one before is decoded: one cache miss after another where a block is cold (a
    // load's random keys: 18% of its CPU in this function, half of that on the loads
    // of the walk). Asked for at once, the block's lines arrive together: fresh loads
    // of 4M items alternating with the build before, 454-481K items/s against
    // 425-441K, 3.44-3.58 us of CPU per item against 3.76-3.86
    // (results/kvell-4m-ab/index-prefetch/ab.md).
    for line in b.chunks(64).skip(1) {
        prefetch(&line[0]);
    }
    let f = Format::of(b);
    let tail = f.width + (f.class == MIXED) as usize;
    let mut at = HDR;
    // Bytes `key` shares with the last entry found smaller than it.
    let mut m = 0;
    for i in 0..count(b) {
        // The header alone says whether the entry must be compared.
        let h = b[at] as usize;
        let mut p = at + 1;
        let (shared, len) = if h >> 4 == 15 {
            let s = get_varint(b, &mut p);
            (s, get_varint(b, &mut p))
        } else {
            (h >> 4, h & 15)
        };
        if shared > m {
            // Equal to the smaller entry beyond m, so still smaller than key.
            at = p + len + tail;
            continue;
        }
        if shared < m {
            // Greater than the smaller entry at a byte where that equals key.
            return Pos::Missing {
                i,
                at,
                m,
                next_shared: shared,
            };
        }
        let suffix = &b[p..p + len];
        let rest = &key[m..];
        let l = lcp(suffix, rest);
        if l == len {
            if l == rest.len() {
                return Pos::Found { i, at };
            }
        } else if l == rest.len() || suffix[l] > rest[l] {
            return Pos::Missing {
                i,
                at,
                m,
                next_shared: m + l,
            };
        }
        m += l;
        at = p + len + tail;
    }
    Pos::Missing {
        i: count(b),
        at,
        m,
        next_shared: 0,
    }
}

/// Decoded entries of one or more blocks, reused between rebuilds.
#[derive(Default)]
pub(super) struct Scratch {
    pub(super) keys: Vec<u8>,
    ends: Vec<usize>,
    pub(super) locs: Vec<Loc>,
}

impl Scratch {
    pub(super) fn clear(&mut self) {
        self.keys.clear();
        self.ends.clear();
        self.locs.clear();
    }
    pub(super) fn len(&self) -> usize {
        self.locs.len()
    }
    pub(super) fn key(&self, i: usize) -> &[u8] {
        let s = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[s..self.ends[i]]
    }
    pub(super) fn decode(&mut self, b: &[u8]) {
        let mut at = HDR;
        let mut prev = self.keys.len();
        for _ in 0..count(b) {
            let e = entry_at(b, at);
            let start = self.keys.len();
            self.keys.extend_from_within(prev..prev + e.shared);
            self.keys.extend_from_slice(e.suffix);
            self.ends.push(self.keys.len());
            self.locs.push(e.loc);
            prev = start;
            at = e.end;
        }
    }
    pub(super) fn push(&mut self, key: &[u8], loc: Loc) {
        self.keys.extend_from_slice(key);
        self.ends.push(self.keys.len());
        self.locs.push(loc);
    }
    pub(super) fn insert(&mut self, i: usize, key: &[u8], loc: Loc) {
        let s = if i == 0 { 0 } else { self.ends[i - 1] };
        self.keys.splice(s..s, key.iter().copied());
        for e in &mut self.ends[i..] {
            *e += key.len();
        }
        self.ends.insert(i, s + key.len());
        self.locs.insert(i, loc);
    }
    fn format(&self, a: usize, b: usize) -> Format {
        let c = self.locs[a].class() as u8;
        let mixed = self.locs[a..b].iter().any(|l| l.class() as u8 != c);
        let max = self.locs[a..b].iter().map(|l| l.slot()).max().unwrap_or(0);
        Format {
            class: if mixed { MIXED } else { c },
            width: ((64 - max.leading_zeros()).div_ceil(8) as usize).max(1),
        }
    }
    /// Encodes entries `a..b` as one exact-size block.
    pub(super) fn encode(&self, a: usize, b: usize) -> Box<[u8]> {
        let f = self.format(a, b);
        // Each entry's shared prefix, found once for both passes. A block holds at
        // most MAX_ENTRIES: `emit` halves a longer range before it encodes, and a
        // block's own entries (its count a byte) are never more.
        debug_assert!(b - a <= MAX_ENTRIES);
        let mut shared = [0usize; MAX_ENTRIES];
        let mut size = HDR;
        for i in a..b {
            let k = self.key(i);
            let s = if i == a { 0 } else { lcp(self.key(i - 1), k) };
            shared[i - a] = s;
            size += f.entry_len(s, k.len() - s);
        }
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&[(b - a) as u8, f.class, f.width as u8]);
        for (i, &s) in (a..b).zip(&shared) {
            f.put(&mut out, s, &self.key(i)[s..], self.locs[i]);
        }
        debug_assert_eq!(out.len(), size);
        out.into_boxed_slice()
    }
    /// Encodes entries `a..b` as blocks within the limits, halving as needed.
    pub(super) fn emit(&self, a: usize, b: usize, out: &mut Vec<Box<[u8]>>) {
        if b - a > MAX_ENTRIES {
            let mid = a + (b - a) / 2;
            self.emit(a, mid, out);
            return self.emit(mid, b, out);
        }
        let blk = self.encode(a, b);
        if blk.len() > MAX_BYTES && b - a > 1 {
            let mid = a + (b - a) / 2;
            self.emit(a, mid, out);
            return self.emit(mid, b, out);
        }
        out.push(blk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time prefix gives what a byte-by-byte comparison gives: pairs of
    /// every length to 40 bytes (words, tails and both), the first difference at every
    /// byte, one a prefix of the other, and empty ones.
    #[test]
    fn lcp_matches_the_bytewise_prefix() {
        let bytewise = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let base: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        for la in 0..=base.len() {
            for lb in 0..=base.len() {
                let (a, b) = (&base[..la], &base[..lb]);
                assert_eq!(lcp(a, b), la.min(lb), "prefixes {la} / {lb}");
                for d in 0..la.min(lb) {
                    // One byte differs, by one bit.
                    let mut c = b.to_vec();
                    c[d] ^= 1 << (d % 8);
                    assert_eq!(lcp(a, &c), d, "lengths {la} / {lb}, differing at {d}");
                    assert_eq!(lcp(&c, a), d);
                    // Every byte from d on differs (the first difference must win
                    // over later ones in the same word).
                    let mut c = b.to_vec();
                    for x in &mut c[d..] {
                        *x ^= 0xA5;
                    }
                    assert_eq!(lcp(a, &c), d, "lengths {la} / {lb}, differing from {d}");
                    assert_eq!(lcp(a, &c), bytewise(a, &c));
                }
            }
        }
    }
}
