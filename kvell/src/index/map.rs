//! The index of one worker: an ordered map from the full key to its slot, kept
//! compact (about 18 B per YCSB key instead of 64 B for a `BTreeMap<Key, Loc>`):
//! sorted front-coded blocks (`block.rs`) of at most `MAX_ENTRIES` entries, under a
//! map from each block's first key to the block (`blocks.rs`: sorted arrays of
//! fingerprints, searched in two binary searches). Keys are whole (keys sharing any
//! prefix, keys that are prefixes of others and binary keys are distinct entries; the
//! authors' index kept only the first 8 bytes), in plain byte order, so scans see
//! keys sorted as the interface requires.
//!
//! The worker locks its index per request; scans lock each worker's briefly.

use super::block::{
    Format, HDR, MAX_BYTES, MAX_ENTRIES, MIN_ENTRIES, MIXED, Pos, Scratch, count, entry_at, search,
};
use super::blocks::{At, Blocks};
use super::key::{Key, malloc_bytes};
use crate::slab::Loc;
use kvapi::Result;
use std::sync::{Mutex, MutexGuard};

/// Locks a worker's index (shared by its worker and the scans): a poisoned lock is
/// `Error::Poisoned`, since a panic may have left the index half-updated.
pub(crate) fn lock(index: &Mutex<Index>) -> Result<MutexGuard<'_, Index>> {
    kvapi::sync::lock(index, "a worker's index")
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
    map: Blocks,
    len: usize,
    /// malloc bytes of the blocks.
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
        for b in out {
            idx.put_block(b);
        }
        idx
    }

    pub(crate) fn get(&self, key: &[u8]) -> Option<Loc> {
        let b = self.map.block(self.map.find(key)?);
        match search(b, key) {
            Pos::Found { at, .. } => Some(entry_at(b, at).loc),
            Pos::Missing { .. } => None,
        }
    }

    fn put_block(&mut self, b: Box<[u8]>) {
        self.heap_bytes += malloc_bytes(b.len());
        self.map.insert(b);
    }

    fn take_block(&mut self, at: At) -> Box<[u8]> {
        let b = self.map.remove(at);
        self.heap_bytes -= malloc_bytes(b.len());
        b
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
        let Some(here) = self.map.find(key) else {
            if let Some(loc) = decide(None) {
                self.len = 1;
                self.new_block(key, loc);
            }
            return None;
        };
        let blk = self.map.block_mut(here);
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
                    self.map.first_changed(here);
                }
                return None;
            }
            Pos::Missing { .. } => {}
        }
        // A full block, or one that changes format: rebuilt.
        let Pos::Missing { i, .. } = pos else {
            unreachable!("found keys returned above")
        };
        self.len += 1;
        if i == n && n == MAX_ENTRIES && self.map.is_last(here) {
            // Appending to a full last block (sorted inserts): a new block.
            self.new_block(key, loc);
        } else {
            self.scratch.clear();
            self.scratch.decode(self.map.block(here));
            self.scratch.insert(i, key, loc);
            self.rebuild(here, None);
        }
        None
    }

    fn new_block(&mut self, key: &[u8], loc: Loc) {
        self.scratch.clear();
        self.scratch.insert(0, key, loc);
        let blk = self.scratch.encode(0, 1);
        self.put_block(blk);
    }

    /// Replaces the block at `a` (and the next one, `b`) with the entries now in the
    /// scratch space.
    fn rebuild(&mut self, a: At, b: Option<At>) {
        let mut out = Vec::new();
        self.scratch.emit(0, self.scratch.len(), &mut out);
        // The later block first, so that `a` still says where the other is.
        if let Some(b) = b {
            self.take_block(b);
        }
        self.take_block(a);
        for blk in out {
            self.put_block(blk);
        }
    }

    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Loc> {
        let here = self.map.find(key)?;
        let b = self.map.block(here);
        let Pos::Found { i, at } = search(b, key) else {
            return None;
        };
        let f = Format::of(b);
        let n = count(b);
        let e = entry_at(b, at);
        let old = e.loc;
        self.len -= 1;
        if n == 1 {
            self.take_block(here);
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
        let slot = self.map.block_mut(here);
        self.heap_bytes = self.heap_bytes + malloc_bytes(blk.len()) - malloc_bytes(slot.len());
        *slot = blk;
        if i == 0 {
            self.map.first_changed(here);
        }
        if n - 1 < MIN_ENTRIES {
            self.merge(here);
        }
        Some(old)
    }

    /// Merges the small block at `at` with its next neighbour (or the one before),
    /// splitting the result again if it is too large.
    fn merge(&mut self, at: At) {
        let (a, b) = match self.map.next(at) {
            Some(n) => (at, n),
            None => match self.map.prev(at) {
                Some(p) => (p, at),
                None => return,
            },
        };
        self.scratch.clear();
        self.scratch.decode(self.map.block(a));
        self.scratch.decode(self.map.block(b));
        self.rebuild(a, Some(b));
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
        let Some(first) = self.map.find(start) else {
            return;
        };
        let mut cur = Vec::new();
        let mut found = 0;
        for b in self.map.iter_from(first) {
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

    /// Bytes of memory: the blocks and the map's arrays as malloc rounds them,
    /// checked against glibc's count of allocated bytes by the `memory_and_speed`
    /// test.
    pub(crate) fn bytes(&self) -> u64 {
        self.heap_bytes + self.map.bytes()
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
        self.map.check();
        for b in self.map.iter() {
            let n = count(b);
            assert!((1..=MAX_ENTRIES).contains(&n), "block of {n} entries");
            let mut s = Scratch::default();
            s.decode(b);
            for i in 0..n {
                if let Some(p) = &prev {
                    assert!(p.as_slice() < s.key(i), "order");
                }
                prev = Some(s.key(i).to_vec());
            }
            let f = Format::of(b);
            assert!(s.locs.iter().all(|&l| f.fits(l)), "format");
            total += n;
            heap += malloc_bytes(b.len());
        }
        assert_eq!(total, self.len);
        assert_eq!(heap, self.heap_bytes, "heap bytes counted");
    }
}
