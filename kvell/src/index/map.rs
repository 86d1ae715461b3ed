//! The index of one worker: an ordered map from the full key to its slot, kept
//! compact (about 19 B per YCSB key instead of 64 B for a `BTreeMap<Key, Loc>`):
//! sorted front-coded blocks (`block.rs`) of at most `MAX_ENTRIES` entries, under a
//! `BTreeMap` from a block's first key to the block. Keys are whole (keys sharing any
//! prefix, keys that are prefixes of others and binary keys are distinct entries; the
//! authors' index kept only the first 8 bytes), in plain byte order, so scans see
//! keys sorted as the interface requires.
//!
//! The worker locks its index per request; scans lock each worker's briefly.

use super::block::{
    Format, HDR, MAX_BYTES, MAX_ENTRIES, MIN_ENTRIES, MIXED, Pos, Scratch, count, entry_at, search,
};
use super::key::{Key, malloc_bytes};
use crate::slab::Loc;
use kvapi::Result;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// Estimated map cost per block: a `BTreeMap` leaf of 11 (32 B key, 16 B pointer)
/// pairs is 544 B (560 B from malloc), about 70% full, plus internal nodes (1/8).
const MAP_BYTES_PER_BLOCK: f64 = 560.0 / (11.0 * 0.70) * 1.125;

/// Locks a worker's index (shared by its worker and the scans): a poisoned lock is
/// `Error::Poisoned`, since a panic may have left the index half-updated.
pub(crate) fn lock(index: &Mutex<Index>) -> Result<MutexGuard<'_, Index>> {
    kvapi::sync::lock(index, "a worker's index")
}

/// The block that holds `key` if anywhere: the last block whose first key is
/// <= key, else the first block.
fn block_of<'a>(map: &'a BTreeMap<Key, Box<[u8]>>, key: &[u8]) -> Option<(&'a Key, &'a [u8])> {
    map.range(..=Key::new(key))
        .next_back()
        .or_else(|| map.iter().next())
        .map(|(k, b)| (k, &**b))
}

/// An entry found by [`Index::entries_into`]: its key, at `at..at + len` of the keys'
/// buffer, and its location.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    at: usize,
    len: usize,
    pub(crate) loc: Loc,
}

impl Found {
    #[cfg(test)]
    pub(crate) fn new(at: usize, len: usize, loc: Loc) -> Found {
        Found { at, len, loc }
    }

    pub(crate) fn key<'a>(&self, keys: &'a [u8]) -> &'a [u8] {
        &keys[self.at..self.at + self.len]
    }
}

#[derive(Default)]
pub(crate) struct Index {
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
    pub(crate) fn from_sorted(entries: impl IntoIterator<Item = (Key, Loc)>) -> Index {
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

    pub(crate) fn get(&self, key: &[u8]) -> Option<Loc> {
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

    #[expect(
        clippy::expect_used,
        reason = "callers pass the first key of a block they just found in the map"
    )]
    fn take_block(&mut self, k: &Key) -> Box<[u8]> {
        let b = self.map.remove(k).expect("block");
        self.heap_bytes -= malloc_bytes(b.len()) + k.heap_bytes();
        b
    }

    /// Replaces the block at `k` with a block of the same first key.
    #[expect(
        clippy::expect_used,
        reason = "callers pass the first key of a block they just found in the map"
    )]
    fn set_block(&mut self, k: &Key, b: Box<[u8]>) {
        let slot = self.map.get_mut(k).expect("block");
        self.heap_bytes = self.heap_bytes + malloc_bytes(b.len()) - malloc_bytes(slot.len());
        *slot = b;
    }

    /// Inserts or replaces; returns the previous location (the engine's writes use
    /// `upsert`).
    #[cfg(test)]
    pub(super) fn insert(&mut self, key: &[u8], loc: Loc) -> Option<Loc> {
        self.upsert(key, |_| Some(loc))
    }

    /// A write's lookup and update in one search: `decide` is given the key's
    /// current location and returns where the key lives from now on, or None to
    /// leave the index as it is. Returns the previous location.
    pub(crate) fn upsert(
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

    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Loc> {
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

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Up to `n` entries with keys >= `start`, in order.
    #[cfg(test)]
    pub(crate) fn entries_from(&self, start: &[u8], n: usize) -> Vec<(Vec<u8>, Loc)> {
        let (mut keys, mut out) = (Vec::new(), Vec::new());
        self.entries_into(start, n, &mut keys, &mut out);
        out.iter().map(|e| (e.key(&keys).to_vec(), e.loc)).collect()
    }

    /// Appends up to `n` entries with keys >= `start` to `out`, in order, their keys
    /// to `keys` (one buffer for all: a scan allocates only the keys it keeps).
    pub(crate) fn entries_into(
        &self,
        start: &[u8],
        n: usize,
        keys: &mut Vec<u8>,
        out: &mut Vec<Found>,
    ) {
        let Some((first, _)) = block_of(&self.map, start) else {
            return;
        };
        let mut cur = Vec::new();
        let mut found = 0;
        for (_, b) in self.map.range(first.clone()..) {
            let mut at = HDR;
            for _ in 0..count(b) {
                let e = entry_at(b, at);
                cur.truncate(e.shared);
                cur.extend_from_slice(e.suffix);
                at = e.end;
                if found == n {
                    return;
                }
                if cur.as_slice() >= start {
                    out.push(Found {
                        at: keys.len(),
                        len: cur.len(),
                        loc: e.loc,
                    });
                    keys.extend_from_slice(&cur);
                    found += 1;
                }
            }
        }
    }

    /// Estimated bytes of memory: the blocks as malloc rounds them, heap keys of the
    /// map, and the map's nodes (see `MAP_BYTES_PER_BLOCK`), checked against glibc's
    /// count of allocated bytes by the `memory_and_speed` test.
    pub(crate) fn bytes(&self) -> u64 {
        self.heap_bytes + (self.map.len() as f64 * MAP_BYTES_PER_BLOCK) as u64
    }

    /// Number of blocks (for tests and reports).
    #[cfg(test)]
    pub(super) fn blocks(&self) -> usize {
        self.map.len()
    }

    /// Checks the structure: blocks sorted, first keys match, counts and limits.
    #[cfg(test)]
    pub(super) fn check(&self) {
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
