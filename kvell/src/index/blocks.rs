//! The map over one worker's index blocks: which block holds a key.
//!
//! Each block's first key (its first entry, stored whole) is represented here by an
//! 8-byte fingerprint: the 8 bytes that follow the prefix every block's first key
//! shares, big-endian and zero-padded, so that fingerprints order as the keys do
//! (a <= b gives fp(a) <= fp(b); equal fingerprints are told apart by the keys
//! themselves, read from the blocks). The blocks lie in segments of at most
//! `SEG_MAX`, each with its blocks' fingerprints in a few adjacent cache lines,
//! under a small array of each segment's first fingerprint: a lookup is a binary
//! search of that array (hot), then a count of the fingerprints below its own in one
//! segment (its lines read at once), then the block.
//!
//! The shared prefix is the longest prefix of every first key ever stored (it only
//! shrinks, and every fingerprint is recomputed when it does: at most once per byte
//! it loses). A key that does not start with it is below every block or above them.

use super::block::{HDR, entry_at, lcp};
use super::key::malloc_bytes;

/// Blocks per segment at most; a full segment splits in halves. Small in tests, so
/// that the model tests split, empty and merge segments.
#[cfg(not(test))]
const SEG_MAX: usize = 64;
#[cfg(test)]
const SEG_MAX: usize = 8;

/// A block's place: segment and position in it. Valid until the map changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct At {
    seg: usize,
    i: usize,
}

/// Up to `SEG_MAX` blocks in key order, their fingerprints in adjacent cache lines
/// (one allocation): a lookup counts the fingerprints below its own, which asks for
/// the lines at once, where a binary search waits for one line after another.
struct Seg {
    n: usize,
    fps: [u64; SEG_MAX],
    blocks: [Option<Box<[u8]>>; SEG_MAX],
}

impl Seg {
    fn new() -> Box<Seg> {
        Box::new(Seg {
            n: 0,
            fps: [0; SEG_MAX],
            blocks: std::array::from_fn(|_| None),
        })
    }

    #[expect(clippy::expect_used, reason = "the slots below n hold blocks")]
    fn block(&self, i: usize) -> &[u8] {
        self.blocks[i].as_deref().expect("a block below n")
    }

    /// How many of the blocks have first keys `<= key`, whose fingerprint is `fk`:
    /// those of smaller fingerprints, then of equal ones told apart by their keys.
    fn count_le(&self, fk: u64, key: &[u8]) -> usize {
        let fps = &self.fps[..self.n];
        let mut n = fps.iter().filter(|&&f| f < fk).count();
        while n < fps.len() && fps[n] == fk && first_key(self.block(n)) <= key {
            n += 1;
        }
        n
    }

    fn insert(&mut self, i: usize, f: u64, b: Box<[u8]>) {
        let n = self.n;
        self.fps.copy_within(i..n, i + 1);
        self.fps[i] = f;
        self.blocks[i..=n].rotate_right(1);
        self.blocks[i] = Some(b);
        self.n += 1;
    }

    #[expect(clippy::expect_used, reason = "the slots below n hold blocks")]
    fn remove(&mut self, i: usize) -> Box<[u8]> {
        let n = self.n;
        self.fps.copy_within(i + 1..n, i);
        let b = self.blocks[i].take().expect("a block below n");
        self.blocks[i..n].rotate_left(1);
        self.n -= 1;
        b
    }

    /// Moves the blocks from `at` on to the end of `to`.
    fn move_tail(&mut self, at: usize, to: &mut Seg) {
        for i in at..self.n {
            to.fps[to.n] = self.fps[i];
            to.blocks[to.n] = self.blocks[i].take();
            to.n += 1;
        }
        self.n = at;
    }
}

#[derive(Default)]
pub(super) struct Blocks {
    /// Bytes every block's first key starts with (meaningless while empty).
    prefix: Vec<u8>,
    #[expect(
        clippy::vec_box,
        reason = "a segment is 1.5 KB: a segment split moves pointers, not segments"
    )]
    segs: Vec<Box<Seg>>,
    /// The fingerprint of each segment's first block.
    tops: Vec<u64>,
}

/// The first key of a block: its first entry shares nothing with one before it.
pub(super) fn first_key(b: &[u8]) -> &[u8] {
    entry_at(b, HDR).suffix
}

/// The 8 bytes of `key` after its first `p` (which the caller knows it has),
/// big-endian, zero-padded: the order of keys sharing those `p` bytes.
fn fingerprint(key: &[u8], p: usize) -> u64 {
    let rest = &key[p..];
    let mut w = [0u8; 8];
    let n = rest.len().min(8);
    w[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(w)
}

impl Blocks {
    /// Number of blocks.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.segs.iter().map(|sg| sg.n).sum()
    }

    /// Where the first block is, if any.
    pub(super) fn first(&self) -> Option<At> {
        (!self.segs.is_empty()).then_some(At { seg: 0, i: 0 })
    }

    fn last(&self) -> Option<At> {
        let seg = self.segs.len().checked_sub(1)?;
        Some(At {
            seg,
            i: self.segs[seg].n - 1,
        })
    }

    /// How many segments start with first keys `<= key` (fingerprint `fk`): a
    /// binary search over the segments' first fingerprints (a small array, hot).
    fn seg_of(&self, fk: u64, key: &[u8]) -> usize {
        let tops = &self.tops;
        let mut n = tops.partition_point(|&f| f < fk);
        while n < tops.len() && tops[n] == fk && first_key(self.segs[n].block(0)) <= key {
            n += 1;
        }
        n
    }

    /// The block that holds `key` if any does: the last block whose first key is
    /// <= key, else the first block.
    pub(super) fn find(&self, key: &[u8]) -> Option<At> {
        if self.segs.is_empty() {
            return None;
        }
        let p = self.prefix.len();
        let l = lcp(key, &self.prefix);
        if l < p {
            // Below or above every first key.
            return if l == key.len() || key[l] < self.prefix[l] {
                self.first()
            } else {
                self.last()
            };
        }
        let fk = fingerprint(key, p);
        let Some(seg) = self.seg_of(fk, key).checked_sub(1) else {
            return self.first();
        };
        let i = self.segs[seg].count_le(fk, key);
        debug_assert!(i > 0, "a segment's first block is <= the key");
        Some(At {
            seg,
            i: i.saturating_sub(1),
        })
    }

    pub(super) fn block(&self, at: At) -> &[u8] {
        self.segs[at.seg].block(at.i)
    }

    /// The block at `at`, to change in place; a change of its first key must be
    /// followed by [`Blocks::first_changed`].
    #[expect(clippy::expect_used, reason = "the slots below n hold blocks")]
    pub(super) fn block_mut(&mut self, at: At) -> &mut Box<[u8]> {
        self.segs[at.seg].blocks[at.i]
            .as_mut()
            .expect("a block below n")
    }

    /// Whether `at` is the last block.
    pub(super) fn is_last(&self, at: At) -> bool {
        at.seg + 1 == self.segs.len() && at.i + 1 == self.segs[at.seg].n
    }

    pub(super) fn next(&self, at: At) -> Option<At> {
        if at.i + 1 < self.segs[at.seg].n {
            Some(At { i: at.i + 1, ..at })
        } else {
            (at.seg + 1 < self.segs.len()).then_some(At {
                seg: at.seg + 1,
                i: 0,
            })
        }
    }

    pub(super) fn prev(&self, at: At) -> Option<At> {
        if at.i > 0 {
            Some(At { i: at.i - 1, ..at })
        } else {
            let seg = at.seg.checked_sub(1)?;
            Some(At {
                seg,
                i: self.segs[seg].n - 1,
            })
        }
    }

    /// The blocks from `at` on, in key order.
    pub(super) fn iter_from(&self, at: At) -> impl Iterator<Item = &[u8]> {
        self.segs[at.seg..]
            .iter()
            .enumerate()
            .flat_map(move |(s, sg)| (if s == 0 { at.i } else { 0 }..sg.n).map(|i| sg.block(i)))
    }

    /// Every block, in key order.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.segs
            .iter()
            .flat_map(|sg| (0..sg.n).map(|i| sg.block(i)))
    }

    /// Narrows the shared prefix to what `key` shares with it (recomputing every
    /// fingerprint if it shrinks); the first key stored sets it.
    fn admit(&mut self, key: &[u8]) {
        if self.segs.is_empty() {
            self.prefix.clear();
            self.prefix.extend_from_slice(key);
            return;
        }
        let l = lcp(key, &self.prefix);
        if l == self.prefix.len() {
            return;
        }
        self.prefix.truncate(l);
        self.prefix.shrink_to_fit();
        for (sg, top) in self.segs.iter_mut().zip(&mut self.tops) {
            for i in 0..sg.n {
                sg.fps[i] = fingerprint(first_key(sg.block(i)), l);
            }
            *top = sg.fps[0];
        }
    }

    /// The block at `at` has a new first key (it still sorts between its
    /// neighbours).
    pub(super) fn first_changed(&mut self, at: At) {
        let key = first_key(self.block(at)).to_vec();
        self.admit(&key);
        let f = fingerprint(&key, self.prefix.len());
        self.segs[at.seg].fps[at.i] = f;
        if at.i == 0 {
            self.tops[at.seg] = f;
        }
    }

    /// Stores a block where its first key sorts (no other block has that first key).
    pub(super) fn insert(&mut self, b: Box<[u8]>) {
        let key = first_key(&b);
        self.admit(key);
        let f = fingerprint(key, self.prefix.len());
        if self.segs.is_empty() {
            let mut sg = Seg::new();
            sg.insert(0, f, b);
            self.segs.push(sg);
            self.tops.push(f);
            return;
        }
        // Into the segment whose first block is before it, else the first.
        let mut seg = self.seg_of(f, key).saturating_sub(1);
        if self.segs[seg].n == SEG_MAX {
            let mut tail = Seg::new();
            if seg + 1 == self.segs.len() && self.segs[seg].count_le(f, key) == SEG_MAX {
                // After the last block of the last segment (sorted inserts, as
                // recovery's build): a new segment, so that those leave full ones.
                tail.insert(0, f, b);
                self.tops.push(f);
                self.segs.push(tail);
                return;
            }
            // Full: its upper half becomes a segment of its own.
            self.segs[seg].move_tail(SEG_MAX / 2, &mut tail);
            self.tops.insert(seg + 1, tail.fps[0]);
            self.segs.insert(seg + 1, tail);
            seg = self.seg_of(f, key).saturating_sub(1);
        }
        let sg = &mut self.segs[seg];
        let i = sg.count_le(f, key);
        debug_assert!(
            i == sg.n || first_key(sg.block(i)) != key,
            "a first key stored twice"
        );
        sg.insert(i, f, b);
        if i == 0 {
            self.tops[seg] = f;
        }
    }

    /// Takes the block at `at` out. A segment left empty goes; one left small
    /// joins its next neighbour when both fit in half a segment.
    pub(super) fn remove(&mut self, at: At) -> Box<[u8]> {
        let sg = &mut self.segs[at.seg];
        let b = sg.remove(at.i);
        if sg.n == 0 {
            self.segs.remove(at.seg);
            self.tops.remove(at.seg);
            return b;
        }
        if at.i == 0 {
            self.tops[at.seg] = sg.fps[0];
        }
        if at.seg + 1 < self.segs.len()
            && self.segs[at.seg].n + self.segs[at.seg + 1].n <= SEG_MAX / 2
        {
            let mut next = self.segs.remove(at.seg + 1);
            self.tops.remove(at.seg + 1);
            next.move_tail(0, &mut self.segs[at.seg]);
        }
        b
    }

    /// Bytes of memory the map itself takes (not the blocks): its segments and
    /// arrays as malloc rounds them, and the prefix.
    pub(super) fn bytes(&self) -> u64 {
        let some = |n: usize| if n == 0 { 0 } else { malloc_bytes(n) };
        self.segs.len() as u64 * malloc_bytes(size_of::<Seg>())
            + some(self.segs.capacity() * size_of::<Box<Seg>>())
            + some(self.tops.capacity() * 8)
            + some(self.prefix.capacity())
    }

    /// Checks the map: every first key starts with the prefix, fingerprints match
    /// the keys, segments are within their limits, tops match, keys strictly rise.
    #[cfg(test)]
    pub(super) fn check(&self) {
        let mut prev: Option<&[u8]> = None;
        let mut n = 0;
        assert_eq!(self.segs.len(), self.tops.len());
        for (sg, &top) in self.segs.iter().zip(&self.tops) {
            assert!((1..=SEG_MAX).contains(&sg.n), "segment size");
            assert!(
                sg.blocks[sg.n..].iter().all(Option::is_none),
                "slots past n empty"
            );
            assert!(
                sg.blocks[..sg.n].iter().all(Option::is_some),
                "slots below n full"
            );
            assert_eq!(top, sg.fps[0], "top");
            for i in 0..sg.n {
                let k = first_key(sg.block(i));
                assert!(k.starts_with(&self.prefix), "prefix");
                assert_eq!(sg.fps[i], fingerprint(k, self.prefix.len()), "fingerprint");
                if let Some(p) = prev {
                    assert!(p < k, "first keys rise");
                }
                prev = Some(k);
                n += 1;
            }
        }
        assert_eq!(n, self.len());
    }
}
