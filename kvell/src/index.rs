//! Per-worker in-memory index: an ordered map from the full key to its slot, kept
//! compact (about 19 B per YCSB key instead of 64 B for a `BTreeMap<Key, Loc>`).
//!
//! Entries live in sorted blocks of at most `MAX_ENTRIES` (128) entries (and about
//! `MAX_BYTES` = 4096 bytes), each one exact-size heap allocation, under a `BTreeMap` from
//! a block's first key to the block. Inside a block keys are front-coded (length of
//! the prefix shared with the previous key, then the rest) and slots are stored in
//! a per-block fixed width, with the size class stored once when every entry of the
//! block has the same class. Keys are whole (keys sharing any prefix, keys that are
//! prefixes of others and binary keys are distinct entries; the authors' index kept
//! only the first 8 bytes), in plain byte order, so scans see keys sorted as the
//! interface requires.
//!
//! Block layout:
//! ```text
//! count u8 | class u8 (MIXED: one class byte per entry) | width u8 (bytes per slot)
//! entry*:  h u8 | [shared varint | len varint if h >> 4 == 15] | suffix | slot (width, LE) | [class u8]
//!          h = shared << 4 | len when shared < 15 and len < 16
//! ```
//! A lookup walks a block without rebuilding keys: it tracks how many bytes the
//! search key shares with the last smaller entry and only compares suffixes of
//! entries that share exactly that much.
#![deny(unsafe_code)]

use crate::slab::Loc;
use std::cmp::Ordering;
use std::collections::BTreeMap;

const INLINE: usize = 24;

/// Entries per block at most; a full block splits in two halves (or, at the end of
/// the last block, starts a new block so that sorted inserts leave full blocks).
const MAX_ENTRIES: usize = 128;
/// A block below this many entries is merged with a neighbour.
const MIN_ENTRIES: usize = 32;
/// A block over this many bytes splits too (long keys), unless it holds one entry.
const MAX_BYTES: usize = 4096;
const MIXED: u8 = 0xFF;
const HDR: usize = 3;
/// Estimated map cost per block: a `BTreeMap` leaf of 11 (32 B key, 16 B pointer)
/// pairs is 544 B (560 B from malloc), about 70% full, plus internal nodes (1/8).
const MAP_BYTES_PER_BLOCK: f64 = 560.0 / (11.0 * 0.70) * 1.125;

/// A key stored inline when short (no heap allocation for typical YCSB keys).
#[derive(Clone)]
pub enum Key {
    Inline(u8, [u8; INLINE]),
    Heap(Box<[u8]>),
}

impl Key {
    pub fn new(k: &[u8]) -> Key {
        if k.len() <= INLINE {
            let mut b = [0u8; INLINE];
            b[..k.len()].copy_from_slice(k);
            Key::Inline(k.len() as u8, b)
        } else {
            Key::Heap(k.into())
        }
    }
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline(n, b) => &b[..*n as usize],
            Key::Heap(b) => b,
        }
    }
    fn heap_bytes(&self) -> u64 {
        match self {
            Key::Inline(..) => 0,
            Key::Heap(b) => malloc_bytes(b.len()),
        }
    }
}

fn word(b: &[u8; INLINE], i: usize) -> u64 {
    u64::from_be_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
}

impl PartialEq for Key {
    fn eq(&self, o: &Key) -> bool {
        match (self, o) {
            (Key::Inline(la, a), Key::Inline(lb, b)) => la == lb && a == b,
            _ => self.as_bytes() == o.as_bytes(),
        }
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Key) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Key) -> Ordering {
        match (self, o) {
            // Zero padding makes word order equal byte order; equal words then
            // mean one key is a prefix of the other (plus zeros): shorter first.
            (Key::Inline(la, a), Key::Inline(lb, b)) => (0..3)
                .map(|i| word(a, i).cmp(&word(b, i)))
                .find(|c| c.is_ne())
                .unwrap_or_else(|| la.cmp(lb)),
            _ => self.as_bytes().cmp(o.as_bytes()),
        }
    }
}

/// Bytes glibc malloc really takes for an allocation of `n` bytes.
fn malloc_bytes(n: usize) -> u64 {
    ((n + 8).max(32).div_ceil(16) * 16) as u64
}

fn lcp(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
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
struct Format {
    /// The class of every entry, or MIXED.
    class: u8,
    /// Bytes per slot number.
    width: usize,
}

impl Format {
    fn of(b: &[u8]) -> Format {
        Format {
            class: b[1],
            width: b[2] as usize,
        }
    }
    fn fits(self, loc: Loc) -> bool {
        (self.class == MIXED || self.class as usize == loc.class())
            && (self.width >= 8 || loc.slot() >> (8 * self.width) == 0)
    }
    fn entry_len(self, shared: usize, len: usize) -> usize {
        let h = if shared < 15 && len < 16 {
            1
        } else {
            1 + varint_len(shared) + varint_len(len)
        };
        h + len + self.width + (self.class == MIXED) as usize
    }
    fn put(self, out: &mut Vec<u8>, shared: usize, suffix: &[u8], loc: Loc) {
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
struct Entry<'a> {
    shared: usize,
    suffix: &'a [u8],
    loc: Loc,
    /// Offset of the slot field.
    slot_at: usize,
    end: usize,
}

fn entry_at(b: &[u8], start: usize) -> Entry<'_> {
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

fn count(b: &[u8]) -> usize {
    b[0] as usize
}

/// Where a key is, or would go, in a block.
enum Pos {
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

fn search(b: &[u8], key: &[u8]) -> Pos {
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
struct Scratch {
    keys: Vec<u8>,
    ends: Vec<usize>,
    locs: Vec<Loc>,
}

impl Scratch {
    fn clear(&mut self) {
        self.keys.clear();
        self.ends.clear();
        self.locs.clear();
    }
    fn len(&self) -> usize {
        self.locs.len()
    }
    fn key(&self, i: usize) -> &[u8] {
        let s = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[s..self.ends[i]]
    }
    fn decode(&mut self, b: &[u8]) {
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
    fn push(&mut self, key: &[u8], loc: Loc) {
        self.keys.extend_from_slice(key);
        self.ends.push(self.keys.len());
        self.locs.push(loc);
    }
    fn insert(&mut self, i: usize, key: &[u8], loc: Loc) {
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
    fn encode(&self, a: usize, b: usize) -> Box<[u8]> {
        let f = self.format(a, b);
        let mut size = HDR;
        for i in a..b {
            let k = self.key(i);
            let s = if i == a { 0 } else { lcp(self.key(i - 1), k) };
            size += f.entry_len(s, k.len() - s);
        }
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&[(b - a) as u8, f.class, f.width as u8]);
        for i in a..b {
            let k = self.key(i);
            let s = if i == a { 0 } else { lcp(self.key(i - 1), k) };
            f.put(&mut out, s, &k[s..], self.locs[i]);
        }
        debug_assert_eq!(out.len(), size);
        out.into_boxed_slice()
    }
    /// Encodes entries `a..b` as blocks within the limits, halving as needed.
    fn emit(&self, a: usize, b: usize, out: &mut Vec<(Key, Box<[u8]>)>) {
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
        out.push((Key::new(self.key(a)), blk));
    }
}

/// The block that holds `key` if anywhere: the last block whose first key is
/// <= key, else the first block.
fn block_of<'a>(map: &'a BTreeMap<Key, Box<[u8]>>, key: &[u8]) -> Option<(&'a Key, &'a [u8])> {
    map.range(..=Key::new(key))
        .next_back()
        .or_else(|| map.iter().next())
        .map(|(k, b)| (k, &**b))
}

#[derive(Default)]
pub struct Index {
    /// First key of each block -> the block.
    map: BTreeMap<Key, Box<[u8]>>,
    len: usize,
    /// malloc bytes of the blocks and of the map's heap keys.
    heap_bytes: u64,
    scratch: Scratch,
}

impl Index {
    /// Builds an index from entries in strictly increasing key order (recovery),
    /// in full blocks.
    pub fn from_sorted(entries: impl IntoIterator<Item = (Key, Loc)>) -> Index {
        let mut idx = Index::default();
        let mut s = Scratch::default();
        let mut out = Vec::new();
        for (k, loc) in entries {
            s.push(k.as_bytes(), loc);
            idx.len += 1;
            if s.len() == MAX_ENTRIES {
                s.emit(0, s.len(), &mut out);
                s.clear();
            }
        }
        if s.len() > 0 {
            s.emit(0, s.len(), &mut out);
        }
        for (k, b) in out {
            debug_assert!(idx.map.last_key_value().is_none_or(|(l, _)| *l < k));
            idx.put_block(k, b);
        }
        idx
    }

    pub fn get(&self, key: &[u8]) -> Option<Loc> {
        let (_, b) = block_of(&self.map, key)?;
        match search(b, key) {
            Pos::Found { at, .. } => Some(entry_at(b, at).loc),
            Pos::Missing { .. } => None,
        }
    }

    fn put_block(&mut self, k: Key, b: Box<[u8]>) {
        self.heap_bytes += malloc_bytes(b.len()) + k.heap_bytes();
        self.map.insert(k, b);
    }

    fn take_block(&mut self, k: &Key) -> Box<[u8]> {
        let b = self.map.remove(k).expect("block");
        self.heap_bytes -= malloc_bytes(b.len()) + k.heap_bytes();
        b
    }

    /// Replaces the block at `k` with a block of the same first key.
    fn set_block(&mut self, k: &Key, b: Box<[u8]>) {
        let slot = self.map.get_mut(k).expect("block");
        self.heap_bytes = self.heap_bytes + malloc_bytes(b.len()) - malloc_bytes(slot.len());
        *slot = b;
    }

    /// Inserts or replaces; returns the previous location (the engine's writes use
    /// `upsert`).
    #[cfg(test)]
    pub fn insert(&mut self, key: &[u8], loc: Loc) -> Option<Loc> {
        self.upsert(key, |_| Some(loc))
    }

    /// A write's lookup and update in one search: `decide` is given the key's
    /// current location and returns where the key lives from now on, or None to
    /// leave the index as it is. Returns the previous location.
    pub fn upsert(
        &mut self,
        key: &[u8],
        decide: impl FnOnce(Option<Loc>) -> Option<Loc>,
    ) -> Option<Loc> {
        // One descent of the map, and the block changed where it lies: a put used to
        // find its block again to store the new one (a second descent) and built
        // every insert into a fresh allocation.
        let probe = Key::new(key);
        let hit = match self.map.range_mut(..=&probe).next_back() {
            Some(x) => Some(x),
            None => self.map.iter_mut().next(),
        };
        let Some((k, blk)) = hit else {
            if let Some(loc) = decide(None) {
                self.len = 1;
                self.new_block(key, loc);
            }
            return None;
        };
        let b: &[u8] = blk;
        let pos = search(b, key);
        let old = match pos {
            Pos::Found { at, .. } => Some(entry_at(b, at).loc),
            Pos::Missing { .. } => None,
        };
        let Some(loc) = decide(old) else {
            return old;
        };
        let f = Format::of(b);
        let n = count(b);
        match pos {
            Pos::Found { at, .. } if f.fits(loc) => {
                let slot_at = entry_at(b, at).slot_at;
                blk[slot_at..slot_at + f.width]
                    .copy_from_slice(&loc.slot().to_le_bytes()[..f.width]);
                if f.class == MIXED {
                    blk[slot_at + f.width] = loc.class() as u8;
                }
                return old;
            }
            Pos::Found { i, .. } => {
                self.scratch.clear();
                self.scratch.decode(b);
                self.scratch.locs[i] = loc;
                let nb = self.scratch.encode(0, n);
                self.heap_bytes = self.heap_bytes + malloc_bytes(nb.len()) - malloc_bytes(b.len());
                *blk = nb;
                return old;
            }
            Pos::Missing {
                i,
                at,
                m,
                next_shared,
            } if n < MAX_ENTRIES && f.fits(loc) && b.len() < MAX_BYTES => {
                // Splice the new entry in where it lies; the next entry now shares
                // more with it and is re-coded. The block grows by realloc (in place
                // when the allocation has room) and its tail moves up. A new first
                // key (i == 0) then moves the block to that key.
                let splice = &mut self.scratch.keys;
                splice.clear();
                f.put(splice, m, &key[m..], loc);
                let mut end = at;
                if i < n {
                    let e = entry_at(b, at);
                    f.put(
                        splice,
                        next_shared,
                        &e.suffix[next_shared - e.shared..],
                        e.loc,
                    );
                    end = e.end;
                }
                let old_len = b.len();
                let new_len = old_len + splice.len() - (end - at);
                let mut v = std::mem::take(blk).into_vec();
                if new_len > old_len {
                    v.reserve_exact(new_len - old_len);
                    v.resize(new_len, 0);
                    v.copy_within(end..old_len, at + splice.len());
                } else {
                    v.copy_within(end..old_len, at + splice.len());
                    v.truncate(new_len);
                }
                v[at..at + splice.len()].copy_from_slice(splice);
                v[0] += 1;
                *blk = v.into_boxed_slice();
                self.heap_bytes = self.heap_bytes + malloc_bytes(new_len) - malloc_bytes(old_len);
                self.len += 1;
                if i == 0 {
                    let k = k.clone();
                    let blk = self.take_block(&k);
                    self.put_block(Key::new(key), blk);
                }
                return None;
            }
            Pos::Missing { .. } => {}
        }
        // A full block, or one that changes format: rebuilt.
        let Pos::Missing { i, .. } = pos else {
            unreachable!("found keys returned above")
        };
        let k = k.clone();
        self.len += 1;
        if i == n && n == MAX_ENTRIES && self.map.range(&k..).nth(1).is_none() {
            // Appending to a full last block (sorted inserts): a new block.
            self.new_block(key, loc);
        } else {
            let b = &self.map[&k];
            self.scratch.clear();
            self.scratch.decode(b);
            self.scratch.insert(i, key, loc);
            self.rebuild(&[k]);
        }
        None
    }

    fn new_block(&mut self, key: &[u8], loc: Loc) {
        self.scratch.clear();
        self.scratch.insert(0, key, loc);
        let blk = self.scratch.encode(0, 1);
        self.put_block(Key::new(key), blk);
    }

    /// Replaces the blocks `old` with the entries now in the scratch space.
    fn rebuild(&mut self, old: &[Key]) {
        let mut out = Vec::new();
        self.scratch.emit(0, self.scratch.len(), &mut out);
        for k in old {
            self.take_block(k);
        }
        for (k, b) in out {
            self.put_block(k, b);
        }
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Loc> {
        let (k, b) = block_of(&self.map, key)?;
        let Pos::Found { i, at } = search(b, key) else {
            return None;
        };
        let k = k.clone();
        let f = Format::of(b);
        let n = count(b);
        let e = entry_at(b, at);
        let old = e.loc;
        self.len -= 1;
        if n == 1 {
            self.take_block(&k);
            return Some(old);
        }
        // Splice the entry out; the next one may need the bytes it shared with it.
        let next = (i + 1 < n).then(|| entry_at(b, e.end));
        let mut size = b.len() - (e.end - at);
        if let Some(x) = &next
            && x.shared > e.shared
        {
            size += f.entry_len(e.shared, x.suffix.len() + x.shared - e.shared);
            size -= f.entry_len(x.shared, x.suffix.len());
        }
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&b[..at]);
        out[0] -= 1;
        match next {
            Some(x) if x.shared > e.shared => {
                let mut suffix = key[e.shared..x.shared].to_vec();
                suffix.extend_from_slice(x.suffix);
                f.put(&mut out, e.shared, &suffix, x.loc);
                out.extend_from_slice(&b[x.end..]);
            }
            Some(_) => out.extend_from_slice(&b[e.end..]),
            None => {}
        }
        debug_assert_eq!(out.len(), size);
        let blk = out.into_boxed_slice();
        let k = if i == 0 {
            self.take_block(&k);
            let nk = Key::new(entry_at(&blk, HDR).suffix);
            self.put_block(nk.clone(), blk);
            nk
        } else {
            self.set_block(&k, blk);
            k
        };
        if n - 1 < MIN_ENTRIES {
            self.merge(&k);
        }
        Some(old)
    }

    /// Merges the small block at `k` with its next neighbour (or the one before),
    /// splitting the result again if it is too large.
    fn merge(&mut self, k: &Key) {
        let next = self.map.range(k..).nth(1).map(|(x, _)| x.clone());
        let (a, b) = match next {
            Some(n) => (k.clone(), n),
            None => match self.map.range(..k).next_back() {
                Some((p, _)) => (p.clone(), k.clone()),
                None => return,
            },
        };
        self.scratch.clear();
        self.scratch.decode(&self.map[&a]);
        self.scratch.decode(&self.map[&b]);
        self.rebuild(&[a, b]);
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Up to `n` entries with keys >= `start`, in order.
    pub fn entries_from(&self, start: &[u8], n: usize) -> Vec<(Vec<u8>, Loc)> {
        let mut out = Vec::new();
        let Some((first, _)) = block_of(&self.map, start) else {
            return out;
        };
        let mut cur = Vec::new();
        for (_, b) in self.map.range(first.clone()..) {
            let mut at = HDR;
            for _ in 0..count(b) {
                let e = entry_at(b, at);
                cur.truncate(e.shared);
                cur.extend_from_slice(e.suffix);
                at = e.end;
                if out.len() == n {
                    return out;
                }
                if cur.as_slice() >= start {
                    out.push((cur.clone(), e.loc));
                }
            }
        }
        out
    }

    /// Up to `n` keys >= `start`, in order.
    pub fn keys_from(&self, start: &[u8], n: usize) -> Vec<Vec<u8>> {
        self.entries_from(start, n)
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    }

    /// Estimated bytes of memory: the blocks as malloc rounds them, heap keys of the
    /// map, and the map's nodes (see `MAP_BYTES_PER_BLOCK`), checked against glibc's
    /// count of allocated bytes by the `memory_and_speed` test.
    pub fn bytes(&self) -> u64 {
        self.heap_bytes + (self.map.len() as f64 * MAP_BYTES_PER_BLOCK) as u64
    }

    /// Number of blocks (for tests and reports).
    #[cfg(test)]
    fn blocks(&self) -> usize {
        self.map.len()
    }

    /// Checks the structure: blocks sorted, first keys match, counts and limits.
    #[cfg(test)]
    fn check(&self) {
        let mut prev: Option<Vec<u8>> = None;
        let (mut total, mut heap) = (0, 0);
        for (k, b) in &self.map {
            let n = count(b);
            assert!((1..=MAX_ENTRIES).contains(&n), "block of {n} entries");
            let mut s = Scratch::default();
            s.decode(b);
            assert_eq!(s.key(0), k.as_bytes(), "first key");
            for i in 0..n {
                if let Some(p) = &prev {
                    assert!(p.as_slice() < s.key(i), "order");
                }
                prev = Some(s.key(i).to_vec());
            }
            let f = Format::of(b);
            assert!(s.locs.iter().all(|&l| f.fits(l)), "format");
            total += n;
            heap += malloc_bytes(b.len()) + k.heap_bytes();
        }
        assert_eq!(total, self.len);
        assert_eq!(heap, self.heap_bytes, "heap bytes counted");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_is_byte_order() {
        let keys: Vec<&[u8]> = vec![
            b"",
            b"\0",
            b"\0\0",
            b"a",
            b"a\0",
            b"ab",
            b"user1",
            b"user10",
            b"user9",
            b"exactly-24-bytes-long-k",
            b"exactly-24-bytes-long-ke",
            b"exactly-24-bytes-long-key",
            b"exactly-24-bytes-long-key-and-more",
            b"\xff",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\x01",
        ];
        for a in &keys {
            for b in &keys {
                assert_eq!(Key::new(a).cmp(&Key::new(b)), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(Key::new(a) == Key::new(b), a == b);
            }
        }
    }

    /// xorshift64*, fixed seeds.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Keys from a small alphabet with long shared prefixes, prefixes of each other,
    /// binary bytes, and sometimes very long.
    fn nasty_key(r: &mut Rng) -> Vec<u8> {
        let prefixes: [&[u8]; 5] = [b"", b"user", b"\0\0\0", b"\xff\xff", &[b'p'; 40]];
        let mut k = prefixes[r.below(5) as usize].to_vec();
        let len = match r.below(10) {
            0 => r.below(1025 - k.len() as u64) as usize,
            1..=3 => r.below(4) as usize,
            _ => r.below(24) as usize,
        };
        let alphabet: [u8; 4] = [0, 1, b'a', 0xff];
        for _ in 0..len {
            k.push(if r.below(2) == 0 {
                alphabet[r.below(4) as usize]
            } else {
                r.below(256) as u8
            });
        }
        k.truncate(1024);
        k
    }

    fn rand_loc(r: &mut Rng) -> Loc {
        let class = if r.below(4) == 0 { r.below(21) } else { 5 } as usize;
        let slot = match r.below(4) {
            0 => r.below(256),
            1 => r.below(1 << 20),
            2 => r.below(1 << 40),
            _ => r.below(1 << 58),
        };
        Loc::new(class, slot)
    }

    fn model_run(seed: u64, ops: usize, key_space: usize) {
        let mut r = Rng(seed);
        let pool: Vec<Vec<u8>> = (0..key_space).map(|_| nasty_key(&mut r)).collect();
        let mut idx = Index::default();
        let mut model: BTreeMap<Vec<u8>, Loc> = BTreeMap::new();
        for step in 0..ops {
            let key = &pool[r.below(pool.len() as u64) as usize];
            match r.below(10) {
                0..=4 => {
                    let loc = rand_loc(&mut r);
                    assert_eq!(idx.insert(key, loc), model.insert(key.clone(), loc));
                }
                5..=7 => assert_eq!(idx.remove(key), model.remove(key), "step {step}"),
                8 => assert_eq!(idx.get(key), model.get(key).copied()),
                _ => {
                    let n = r.below(100) as usize;
                    let got = idx.entries_from(key, n);
                    let want: Vec<(Vec<u8>, Loc)> = model
                        .range(key.clone()..)
                        .take(n)
                        .map(|(k, l)| (k.clone(), *l))
                        .collect();
                    assert_eq!(got, want, "scan at step {step}");
                }
            }
            assert_eq!(idx.len(), model.len());
            if step % 997 == 0 {
                idx.check();
            }
        }
        idx.check();
        for (k, l) in &model {
            assert_eq!(idx.get(k), Some(*l));
        }
        let all = idx.entries_from(b"", usize::MAX);
        let bulk = Index::from_sorted(all.iter().map(|(k, l)| (Key::new(k), *l)));
        bulk.check();
        assert_eq!(bulk.entries_from(b"", usize::MAX), all);
        assert_eq!(all, model.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn model_small_key_space() {
        // Many updates and deletes of few keys: blocks empty out and merge.
        model_run(1, 20_000, 300);
    }

    #[test]
    fn model_large_key_space() {
        // Grows to thousands of keys: many splits, then merges as deletes win.
        model_run(2, 60_000, 5_000);
    }

    #[test]
    fn prefix_chains() {
        // Every key a prefix of the next: the worst case for front coding.
        let mut idx = Index::default();
        let mut model = BTreeMap::new();
        for n in (0..=1024).rev() {
            let k = vec![b'x'; n];
            idx.insert(&k, Loc::new(1, n as u64));
            model.insert(k, Loc::new(1, n as u64));
        }
        idx.check();
        assert!(idx.blocks() > 1);
        for n in (0..=1024).step_by(3) {
            assert_eq!(idx.remove(&vec![b'x'; n]), model.remove(&vec![b'x'; n]));
        }
        idx.check();
        let all = idx.entries_from(b"", usize::MAX);
        assert_eq!(all, model.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn upsert_sees_the_old_location_and_may_leave_it() {
        let mut idx = Index::default();
        let mut model = BTreeMap::new();
        let mut r = Rng(3);
        for step in 0..20_000u64 {
            let k = format!("k{}", r.below(3_000)).into_bytes();
            let new = Loc::new(r.below(9) as usize, step);
            // Keep the key where it is one time in three (an update in place).
            let keep = r.below(3) == 0;
            let mut seen = None;
            let old = idx.upsert(&k, |o| {
                seen = Some(o);
                (!keep).then_some(new)
            });
            assert_eq!(
                seen,
                Some(model.get(&k).copied()),
                "decide sees the old location"
            );
            assert_eq!(old, model.get(&k).copied());
            if !keep {
                model.insert(k, new);
            }
        }
        idx.check();
        assert_eq!(idx.len(), model.len());
        assert_eq!(
            idx.entries_from(b"", usize::MAX),
            model.into_iter().collect::<Vec<_>>()
        );
    }

    #[test]
    fn sorted_inserts_fill_blocks() {
        let mut idx = Index::default();
        for i in 0..10_000u64 {
            idx.insert(format!("key{i:08}").as_bytes(), Loc::new(5, i));
        }
        idx.check();
        assert_eq!(idx.blocks(), 10_000usize.div_ceil(MAX_ENTRIES));
    }

    /// The YCSB key of item `i` ("user" + decimal FNV hash of i).
    fn ycsb_key(i: u64) -> Vec<u8> {
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        let mut v = i;
        for _ in 0..8 {
            h ^= v & 0xff;
            v >>= 8;
            h = h.wrapping_mul(1_099_511_628_211);
        }
        format!("user{}", (h as i64).unsigned_abs()).into_bytes()
    }

    /// Bytes glibc reports as allocated.
    #[allow(unsafe_code)]
    fn allocated() -> u64 {
        // SAFETY: mallinfo2 only reads glibc's allocator statistics.
        unsafe { libc::mallinfo2() }.uordblks as u64
    }

    /// CPU time of this thread (the machine is shared: wall time is not).
    #[allow(unsafe_code)]
    fn cpu_ns() -> u64 {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid timespec for clock_gettime to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    }

    fn ns_per(n: usize, t: u64) -> f64 {
        (cpu_ns() - t) as f64 / n as f64
    }

    /// Memory and speed of this index against the `BTreeMap<Key, Loc>` it replaced,
    /// for YCSB keys in their load order (random in key order), spread over the
    /// indexes of two workers as the engine does by default; one thread.
    /// cargo test --release -p kvell --lib memory_and_speed -- --ignored --nocapture
    /// (KVELL_INDEX_ITEMS=1000000,4000000 chooses the sizes)
    #[test]
    #[ignore]
    fn memory_and_speed() {
        const W: usize = 2;
        let sizes: Vec<usize> = std::env::var("KVELL_INDEX_ITEMS")
            .unwrap_or_else(|_| "1000000,4000000".into())
            .split(',')
            .map(|s| s.parse().expect("item count"))
            .collect();
        for n in sizes {
            let keys: Vec<Vec<u8>> = (0..n as u64).map(ycsb_key).collect();
            let mut r = Rng(7);
            let probes: Vec<usize> = (0..1_000_000).map(|_| r.below(n as u64) as usize).collect();
            // Slots as appended by each worker, 1 KiB class.
            let loc = |i: usize| Loc::new(5, (i / W) as u64);

            let base = allocated();
            let t = cpu_ns();
            let mut new: Vec<Index> = (0..W).map(|_| Index::default()).collect();
            for (i, k) in keys.iter().enumerate() {
                new[i % W].insert(k, loc(i));
            }
            let ins_new = ns_per(n, t);
            let real_new = allocated() - base;
            let t = cpu_ns();
            let mut hits = 0;
            for &p in &probes {
                hits += new[p % W].get(&keys[p]).is_some() as usize;
            }
            let get_new = ns_per(probes.len(), t);
            assert_eq!(hits, probes.len());
            let est_new: u64 = new.iter().map(|x| x.bytes()).sum();
            let t = cpu_ns();
            let mut scanned = 0;
            for &p in probes.iter().take(100_000) {
                scanned += new[p % W].entries_from(&keys[p], 50).len();
            }
            let scan_new = ns_per(100_000, t);
            assert!(scanned > 0);
            let t = cpu_ns();
            for &p in probes.iter().take(100_000) {
                let i = p % W;
                let l = new[i].remove(&keys[p]);
                if let Some(l) = l {
                    new[i].insert(&keys[p], l);
                }
            }
            let remove_insert_new = ns_per(100_000, t);
            drop(new);
            // Recovery inserts each worker's keys in order.
            let mut sorted: Vec<(&Vec<u8>, Loc)> =
                keys.iter().enumerate().map(|(i, k)| (k, loc(i))).collect();
            sorted.sort_unstable();
            let t = cpu_ns();
            let rec = Index::from_sorted(sorted.iter().map(|(k, l)| (Key::new(k), *l)));
            let sorted_new = ns_per(n, t);
            let sorted_bytes = rec.bytes();
            drop(rec);
            let t = cpu_ns();
            let mut rec = BTreeMap::new();
            for (k, l) in &sorted {
                rec.insert(Key::new(k), *l);
            }
            let sorted_old = ns_per(n, t);
            drop(rec);

            let base = allocated();
            let t = cpu_ns();
            let mut old: Vec<BTreeMap<Key, Loc>> = (0..W).map(|_| BTreeMap::new()).collect();
            for (i, k) in keys.iter().enumerate() {
                old[i % W].insert(Key::new(k), loc(i));
            }
            let ins_old = ns_per(n, t);
            let real_old = allocated() - base;
            let t = cpu_ns();
            let mut hits = 0;
            for &p in &probes {
                hits += old[p % W].contains_key(&Key::new(&keys[p])) as usize;
            }
            let get_old = ns_per(probes.len(), t);
            assert_eq!(hits, probes.len());
            drop(old);

            let per = |b: u64| b as f64 / n as f64;
            println!(
                "{n} YCSB keys in {W} indexes: new {:.1} B/item allocated ({:.1} counted), \
                 insert {ins_new:.0} ns, get {get_new:.0} ns, 50-key scan {scan_new:.0} ns, \
                 remove+insert {remove_insert_new:.0} ns; old BTreeMap<Key, Loc> {:.1} B/item \
                 allocated, insert {ins_old:.0} ns, get {get_old:.0} ns; built from keys in \
                 order (recovery): new {sorted_new:.0} ns ({:.1} B/item), old {sorted_old:.0} ns",
                per(real_new),
                per(est_new),
                per(real_old),
                per(sorted_bytes)
            );
        }
    }
}
