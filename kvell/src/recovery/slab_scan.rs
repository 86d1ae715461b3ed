//! The scan of one slab file: its length checked (a multiple of its slot, at least
//! what the clean-shutdown record says, one growth makes or with nothing written past
//! the last length growth makes), every slot parsed in file order, the copy of each
//! key with the highest timestamp kept (the others are stale), tombstones free,
//! never-written slots noted. A slot that fails its checks is `Corruption` unless a
//! write in flight at an unclean shutdown could have left it (see `torn_slot`, and
//! DESIGN.md, Recovery: the rule for torn writes); such a slot is freed, counted and
//! described, never served.

use super::readahead::{ReadAhead, Reads};
use super::report::{Kind, Repairs};
use super::runs::Runs;
use crate::index::{Key, ShortKey};
use crate::io::{Backend, FileId, MappedVec, PAGE};
use crate::slab::{self, Format, Loc, Slot};
use kvapi::{Error, Result};
use std::cmp::Ordering;
use std::path::Path;

/// A copy of a key found by the scan: (key, where, timestamp).
pub(super) type Found = (ShortKey, Loc, u64);

/// The order that decides which copy of a key is kept: by key, then the newest
/// first, then (equal timestamps) the first scanned (a `Loc` orders as the scan went:
/// class, then slot). A total order: no two copies share a location.
pub(super) fn copy_order<K: Ord>(a: &(K, Loc, u64), b: &(K, Loc, u64)) -> Ordering {
    a.0.cmp(&b.0)
        .then_with(|| b.2.cmp(&a.2))
        .then_with(|| a.1.0.cmp(&b.1.0))
}

pub(super) fn corrupt(path: &Path, offset: u64, detail: impl Into<String>) -> Error {
    Error::Corruption {
        file: path.to_path_buf(),
        offset,
        detail: detail.into(),
    }
}

/// Whether the bytes `at..at + span` cross a boundary of `unit`-byte atomic writes.
fn crosses(at: u64, span: usize, unit: usize) -> bool {
    span > 1 && at / unit as u64 != (at + span as u64 - 1) / unit as u64
}

/// What the scan of a worker's slabs gathers, over all of them.
pub(super) struct Scan {
    fmt: Format,
    /// The last close was clean (nothing was in flight).
    clean: bool,
    /// The bytes the device writes whole or not at all (`kvell.atomic_write`).
    atomic: usize,
    /// The shape of the sequential reads (`readahead::Reads`).
    reads: Reads,
    /// Every copy of every key, in scan order: (key, where, timestamp). `newest`
    /// keeps the copy of each key with the highest timestamp. (A vector, sorted
    /// once, where a `BTreeMap` took about 70 B per key and, freed, left the index
    /// built beside it on fragmented heap pages that stayed resident; in a mapping
    /// of its own, given back to the OS when dropped: see `io::MappedVec`.) Keys too
    /// long to be stored inline, rare, in `found_long`.
    found: MappedVec<Found>,
    found_long: Vec<(Key, Loc, u64)>,
    /// `found` is sorted in runs as the scan goes, and the runs merged, while the
    /// next reads are in flight (the worker's CPU is mostly idle then: 0.4 of 3 s per
    /// 2M items measured), so that what is left after the scan is a merge of two
    /// runs, not a sort of all copies (`runs.rs`).
    runs: Runs,
    /// Older copies of a key.
    pub(super) stale: Vec<Loc>,
    /// Slots a write in flight at an unclean shutdown could have torn.
    pub(super) torn_slots: Vec<Loc>,
    /// Repairs counted and described.
    pub(super) repairs: Repairs,
    pub(super) max_ts: u64,
    pub(super) bytes_read: u64,
}

/// One slab file as scanned.
pub(super) struct ScannedSlab {
    pub(super) file: FileId,
    pub(super) len: u64,
    /// Tombstones.
    pub(super) free: Vec<u64>,
    /// Never-written slots.
    pub(super) empty: Vec<u64>,
    /// One past the last non-empty slot.
    pub(super) end_slot: u64,
    class: usize,
    /// Key+value capacity of a slot.
    room: usize,
    /// The length is not one growth makes: from this offset (the last length growth
    /// makes below it) the file must hold only never-written slots.
    tail_from: u64,
}

impl Scan {
    pub(super) fn new(fmt: Format, clean: bool, atomic: usize, reads: Reads) -> Result<Scan> {
        Ok(Scan {
            fmt,
            clean,
            atomic,
            reads,
            found: MappedVec::new()
                .map_err(|e| Error::io("mapping recovery's list of items", e))?,
            found_long: Vec::new(),
            runs: Runs::new(),
            stale: Vec::new(),
            torn_slots: Vec::new(),
            repairs: Repairs::default(),
            max_ts: 0,
            bytes_read: 0,
        })
    }

    /// Opens the slab of `class` at `path` and scans it front to back; `recorded` is
    /// the length the clean-shutdown record says it has at least.
    pub(super) fn slab(
        &mut self,
        io: &mut dyn Backend,
        path: &Path,
        class: usize,
        recorded: Option<u64>,
    ) -> Result<ScannedSlab> {
        let file = io
            .open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let len = io
            .len(file)
            .map_err(|e| Error::io(format!("reading the length of {}", path.display()), e))?;
        let ulen = slab::unit_len(class) as u64;
        if len % PAGE as u64 != 0 {
            return Err(corrupt(
                path,
                len,
                format!("file length {len} is not a multiple of {PAGE}: truncated slab"),
            ));
        }
        if len % ulen != 0 {
            // Large slabs grow by whole slots (see `Slab::allocate`).
            return Err(corrupt(
                path,
                len - len % ulen,
                format!(
                    "file length {len} is not a multiple of the {ulen}-byte slot: truncated slab"
                ),
            ));
        }
        if let Some(r) = recorded
            && len < r
        {
            return Err(corrupt(
                path,
                len,
                format!(
                    "the slab is {len} bytes, its clean-shutdown record says it grew to \
                     {r}: the file was cut, items lost past offset {len}"
                ),
            ));
        }
        let (floor, exact) = slab::growth_floor(len, class);
        let mut s = ScannedSlab {
            file,
            len,
            free: Vec::new(),
            empty: Vec::new(),
            end_slot: 0,
            class,
            room: slab::room(class),
            tail_from: if exact { len } else { floor },
        };
        let chunk = (self.reads.piece as u64).max(ulen);
        let mut ra = ReadAhead::new(file, len, chunk, self.reads);
        while let Some((off, buf)) = ra
            .next(io)
            .map_err(|(at, e)| Error::io(format!("reading {} at offset {at}", path.display()), e))?
        {
            let n = buf.len();
            self.bytes_read += n as u64;
            if slab::is_large(class) {
                let mut u = 0;
                while (u as u64) * ulen < n as u64 {
                    let start = u * ulen as usize;
                    let stop = (start + ulen as usize).min(n);
                    let slot = off / ulen + u as u64;
                    self.slot(
                        &mut s,
                        path,
                        slot,
                        off + start as u64,
                        &buf[start..stop],
                        true,
                    )?;
                    u += 1;
                }
            } else {
                let size = slab::SMALL[class];
                let per = slab::per_page(class);
                for p in 0..n / PAGE {
                    for i in 0..per {
                        let at = p * PAGE + i * size;
                        let slot = (off as usize / PAGE + p) as u64 * per as u64 + i as u64;
                        self.slot(
                            &mut s,
                            path,
                            slot,
                            off + at as u64,
                            &buf[at..at + size],
                            false,
                        )?;
                    }
                }
            }
            // The next reads in flight, this piece's buffer among them: sort what this
            // one added, once a run's worth, and merge runs for a while.
            ra.recycle(io, buf).map_err(|(at, e)| {
                Error::io(format!("reading {} at offset {at}", path.display()), e)
            })?;
            self.sort_run()?;
        }
        Ok(s)
    }

    /// Sorts the copies found since the last run into a run of their own, once a
    /// run's worth, and merges runs in proportion to the copies found.
    fn sort_run(&mut self) -> Result<()> {
        self.runs.sort(&mut self.found, self.runs.run_len);
        self.runs
            .work(&mut self.found)
            .map_err(|e| Error::io("merging recovery's list of items", e))
    }

    /// One slot, `b` its bytes at file offset `at`.
    fn slot(
        &mut self,
        s: &mut ScannedSlab,
        path: &Path,
        slot: u64,
        at: u64,
        b: &[u8],
        large: bool,
    ) -> Result<()> {
        let parsed = self.fmt.parse(b, s.room);
        if at >= s.tail_from && parsed != Ok(Slot::Empty) {
            return Err(corrupt(
                path,
                at,
                format!(
                    "the slab is {} bytes, a length growth never gives (it stops at {} \
                     below that), and holds a written slot at offset {at} past {}: the \
                     file was cut or extended",
                    s.len, s.tail_from, s.tail_from
                ),
            ));
        }
        let parsed = match parsed {
            Ok(p) => p,
            Err(d) => {
                // A large slot's header fails alone (its checksum is read_large's);
                // the header lies in the slot's first sector.
                let span = if large {
                    slab::HEADER
                } else {
                    self.fmt.failed_span(b, s.room)
                };
                let tear = crosses(at, span, self.atomic).then_some(Kind::Torn);
                return self.torn_slot(s, path, slot, at, d, tear);
            }
        };
        match parsed {
            Slot::Empty => s.empty.push(slot),
            Slot::Tomb { ts, .. } => {
                self.max_ts = self.max_ts.max(ts);
                s.free.push(slot);
                s.end_slot = slot + 1;
            }
            Slot::Item {
                ts,
                key_len,
                value_len,
            } => {
                self.max_ts = self.max_ts.max(ts);
                s.end_slot = slot + 1;
                let key: Vec<u8>;
                let key: &[u8] = if large {
                    match self.fmt.read_large(b, ts, key_len, value_len) {
                        Ok(Some((k, _))) => {
                            key = k;
                            &key
                        }
                        // Every used page carries the item's timestamp: one write
                        // made them all, so only a device tearing inside a page
                        // could have left a checksum that fails.
                        Err(d) => {
                            let tear = (self.atomic < PAGE).then_some(Kind::Torn);
                            return self.torn_slot(s, path, slot, at, d, tear);
                        }
                        // A page of another timestamp: a large item is always
                        // written to a fresh slot in one write of several pages,
                        // which a power loss may keep in part (the key's older copy,
                        // if any, is still there).
                        Ok(None) => {
                            let d = "large item with a page of another timestamp".into();
                            let tear = Some(Kind::TornLarge);
                            return self.torn_slot(s, path, slot, at, d, tear);
                        }
                    }
                } else {
                    slab::small_kv(b, key_len, value_len).0
                };
                let loc = Loc::new(s.class, slot);
                match ShortKey::new(key) {
                    Some(k) => self
                        .found
                        .push((k, loc, ts))
                        .map_err(|e| Error::io("growing recovery's list of items", e))?,
                    None => self.found_long.push((Key::new(key), loc, ts)),
                }
            }
        }
        Ok(())
    }

    /// The copy of each key with the highest timestamp, in key order (of equal
    /// timestamps, the one scanned first), as the returned list is iterated; every
    /// other copy goes to `stale` (long keys' now, short keys' as the iteration
    /// passes them: [`NewestInOrder::into_stale`]).
    pub(super) fn newest(&mut self) -> Result<Newest> {
        let runs = self
            .runs
            .finish(&mut self.found)
            .map_err(|e| Error::io("merging recovery's list of items", e))?;
        let short = std::mem::replace(
            &mut self.found,
            MappedVec::new().map_err(|e| Error::io("mapping recovery's list of items", e))?,
        );
        let mut long = std::mem::take(&mut self.found_long);
        long.sort_unstable_by(copy_order);
        let stale = &mut self.stale;
        long.dedup_by(|later, kept| {
            let dup = later.0 == kept.0;
            if dup {
                stale.push(later.1);
            }
            dup
        });
        Ok(Newest {
            short: Merge::new(short, &runs),
            long,
        })
    }

    /// A slot that failed its checks (`detail`). After a clean close nothing was in
    /// flight: `Corruption`. After an unclean shutdown it is taken for a write the
    /// crash tore only if one could have (`tear`, the kind of repair: the bytes that
    /// failed cross a boundary of the device's atomic writes, or a large item's pages
    /// disagree): then the slot is freed (buried before the engine opens), counted and
    /// described; otherwise (`None`) `Corruption`.
    fn torn_slot(
        &mut self,
        s: &mut ScannedSlab,
        path: &Path,
        slot: u64,
        at: u64,
        detail: String,
        tear: Option<Kind>,
    ) -> Result<()> {
        if self.clean {
            return Err(corrupt(path, at, detail));
        }
        let Some(kind) = tear else {
            let why = if self.atomic < PAGE {
                format!(
                    "the bytes that fail lie in one {}-byte sector, which the device \
                     writes whole or not at all (kvell.atomic_write={})",
                    self.atomic, self.atomic
                )
            } else {
                format!(
                    "the device writes a {PAGE}-byte page whole or not at all \
                     (kvell.atomic_write={}); on a device that tears 512-byte sectors, \
                     reopen with kvell.atomic_write=512",
                    self.atomic
                )
            };
            return Err(corrupt(
                path,
                at,
                format!(
                    "{detail}: damaged, not a torn write (after an unclean shutdown, but \
                     {why})"
                ),
            ));
        };
        self.repairs.add(kind, || {
            format!(
                "{} at offset {at}: {detail}; a write in flight at the crash could have \
                 torn it: slot freed (if it held an item no write was changing, that \
                 item is gone)",
                path.display()
            )
        });
        self.torn_slots.push(Loc::new(s.class, slot));
        s.end_slot = s.end_slot.max(slot + 1);
        Ok(())
    }
}

/// The two sorted runs `Runs::finish` leaves of the scan's copies merged, each key
/// once (its first copy in [`copy_order`], the newest), the others' locations kept
/// in `stale`: the same list and the same stale copies a sort of all the copies and
/// a pass over it give. (A binary heap over the 62 runs of 2M copies, before the runs
/// were merged during the scan, took 72 ns a copy; two cursors take a comparison.)
pub(super) struct Merge {
    copies: MappedVec<Found>,
    /// The next copy of each run and one past the first run's last.
    a: usize,
    a_end: usize,
    b: usize,
    /// The copy returned last.
    last: Option<usize>,
    stale: Vec<Loc>,
}

impl Merge {
    /// `ends`: where each run ends, at most two runs.
    fn new(copies: MappedVec<Found>, ends: &[usize]) -> Merge {
        assert!(
            ends.len() <= 2,
            "recovery merges at most two runs after its scan"
        );
        let a_end = ends.first().copied().unwrap_or(0);
        Merge {
            copies,
            a: 0,
            a_end,
            b: a_end,
            last: None,
            stale: Vec::new(),
        }
    }

    /// The next key's newest copy.
    fn next_key(&mut self) -> Option<Found> {
        let v = self.copies.as_slice();
        loop {
            // The lesser head; where the runs tie on a key the newer copy comes
            // first (`copy_order`), so the older ones follow it and are stale.
            let at = if self.a < self.a_end
                && (self.b >= v.len() || copy_order(&v[self.b], &v[self.a]) != Ordering::Less)
            {
                self.a += 1;
                self.a - 1
            } else if self.b < v.len() {
                self.b += 1;
                self.b - 1
            } else {
                return None;
            };
            // By reference: copying the 25-byte keys about cost a stalled load
            // each (perf, an open of 4M items, 2026-12-06).
            if self.last.is_some_and(|l| v[l].0 == v[at].0) {
                self.stale.push(v[at].1);
                continue;
            }
            self.last = Some(at);
            return Some(v[at]);
        }
    }
}

/// The newest copy of every key, in key order: short keys (sorted runs, merged as
/// they are iterated) and long ones (sorted, older copies already stale).
pub(super) struct Newest {
    short: Merge,
    long: Vec<(Key, Loc, u64)>,
}

impl IntoIterator for Newest {
    type Item = (Key, Loc);
    type IntoIter = NewestInOrder;
    fn into_iter(self) -> NewestInOrder {
        NewestInOrder {
            short: self.short,
            head: None,
            long: self.long.into_iter().peekable(),
        }
    }
}

/// Every key of a [`Newest`] with its location, in key order (the two lists merged).
pub(super) struct NewestInOrder {
    short: Merge,
    /// The short list's next copy, taken from the merge and not yet returned.
    head: Option<Found>,
    long: std::iter::Peekable<std::vec::IntoIter<(Key, Loc, u64)>>,
}

impl NewestInOrder {
    /// The older copies of short keys met so far (all of them once the iteration
    /// has ended).
    pub(super) fn into_stale(self) -> Vec<Loc> {
        self.short.stale
    }
}

impl Iterator for NewestInOrder {
    type Item = (Key, Loc);
    fn next(&mut self) -> Option<(Key, Loc)> {
        if self.head.is_none() {
            if self.long.peek().is_none() {
                // No long key left (YCSB has none): the short ones straight through.
                return self.short.next_key().map(|(k, loc, _)| (k.key(), loc));
            }
            self.head = self.short.next_key();
        }
        match (self.head, self.long.peek()) {
            (Some((k, _, _)), Some((l, _, _))) if l.as_bytes() < k.as_bytes() => {
                self.long.next().map(|(l, loc, _)| (l, loc))
            }
            (Some((k, loc, _)), _) => {
                self.head = None;
                Some((k.key(), loc))
            }
            (None, _) => self.long.next().map(|(l, loc, _)| (l, loc)),
        }
    }
}

#[cfg(test)]
mod benches;

#[cfg(test)]
mod tests {
    use super::*;

    /// Short keys (inline, in the mapped vector) and long ones (in a plain vector)
    /// come out as one list in byte order, each key once with its newest copy (of
    /// equal timestamps, the first scanned), the older copies stale.
    #[test]
    fn newest_merges_short_and_long_keys_in_order() {
        let mut scan = Scan::new(Format::default(), false, PAGE, Reads::default_for(None)).unwrap();
        let long = |c: char| format!("{}{}", c, "x".repeat(30)).into_bytes();
        let copies: Vec<(Vec<u8>, u64, u64)> = vec![
            (b"b".to_vec(), 1, 10),
            (long('a'), 2, 10),
            (b"b".to_vec(), 3, 12), // newer copy of b
            (long('c'), 4, 10),
            (b"a".to_vec(), 5, 10),
            (long('a'), 6, 9), // older copy of the long a
            (b"d".to_vec(), 7, 10),
            (b"d".to_vec(), 8, 10), // same timestamp: the first scanned wins
            (b"bb".to_vec(), 9, 10),
        ];
        for (k, slot, ts) in &copies {
            let loc = Loc::new(0, *slot);
            match ShortKey::new(k) {
                Some(s) => scan.found.push((s, loc, *ts)).unwrap(),
                None => scan.found_long.push((Key::new(k), loc, *ts)),
            }
        }
        let mut it = scan.newest().unwrap().into_iter();
        let got: Vec<(Vec<u8>, u64)> = it
            .by_ref()
            .map(|(k, loc)| (k.as_bytes().to_vec(), loc.0))
            .collect();
        scan.stale.extend(it.into_stale());
        let slot = |s: u64| Loc::new(0, s).0;
        assert_eq!(
            got,
            vec![
                (b"a".to_vec(), slot(5)),
                (long('a'), slot(2)),
                (b"b".to_vec(), slot(3)),
                (b"bb".to_vec(), slot(9)),
                (long('c'), slot(4)),
                (b"d".to_vec(), slot(7)),
            ]
        );
        let mut stale: Vec<u64> = scan.stale.iter().map(|l| l.0).collect();
        stale.sort_unstable();
        assert_eq!(stale, vec![slot(1), slot(6), slot(8)]);
    }

    /// Copies sorted in runs as the scan goes and merged after it give what one sort
    /// of all of them gave: the same keys, the same copy of each (the newest, of equal
    /// timestamps the first scanned), the same older copies stale, whatever the runs'
    /// length (a run of one copy, runs shorter and longer than a key's copies, and
    /// copies of one key in many runs; timestamps from a small range, so they tie).
    #[test]
    fn runs_merged_give_what_one_sort_gave() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for run_len in [1, 2, 7, 64, 1000, usize::MAX] {
            for n in [0, 1, 5, 300, 3000] {
                let copies: Vec<Found> = (0..n)
                    .map(|i| {
                        let key = format!("k{}", rnd(n / 3 + 1));
                        let k = ShortKey::new(key.as_bytes()).unwrap();
                        (k, Loc::new((i % 3) as usize, i), rnd(5))
                    })
                    .collect();
                let mut scan =
                    Scan::new(Format::default(), false, PAGE, Reads::default_for(None)).unwrap();
                scan.runs.run_len = run_len;
                for (i, c) in copies.iter().enumerate() {
                    scan.found.push(*c).unwrap();
                    // as the scan does after each chunk (chunks of 1-10 copies here)
                    if i % (1 + rnd(10) as usize) == 0 {
                        scan.sort_run().unwrap();
                    }
                }
                let mut it = scan.newest().unwrap().into_iter();
                let got: Vec<(Vec<u8>, u64)> = it
                    .by_ref()
                    .map(|(k, l)| (k.as_bytes().to_vec(), l.0))
                    .collect();
                let mut stale: Vec<u64> = it.into_stale().iter().map(|l| l.0).collect();
                stale.sort_unstable();
                let mut all = copies.clone();
                all.sort_by(copy_order);
                let mut want = Vec::new();
                let mut want_stale = Vec::new();
                for (i, c) in all.iter().enumerate() {
                    if i > 0 && all[i - 1].0 == c.0 {
                        want_stale.push(c.1.0);
                    } else {
                        want.push((c.0.as_bytes().to_vec(), c.1.0));
                    }
                }
                want_stale.sort_unstable();
                assert_eq!(got, want, "run_len {run_len}, {n} copies");
                assert_eq!(stale, want_stale, "run_len {run_len}, {n} copies");
            }
        }
    }
}
