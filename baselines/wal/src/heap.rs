//! The slab heap inside the meta image and the ordered index over its records.
//!
//! Every change goes through a redo entry that is applied to the image at once and
//! recorded in a [`TxBuild`]. The ordered index (key -> page and slot), the pages
//! with free slots per slot size, the free pages and the data extent allocator are
//! derived from the image and rebuilt from it on open ([`Heap::rebuild`]).
//!
//! The image is paged (image.rs): a page may not be resident. Lookups return the
//! [`Miss`]es to read outside the core lock; a change first makes its pages resident
//! ([`Heap::prepare`]), so applying it cannot fail half-way for want of a page.

use crate::extent::{Extent, Extents};
use crate::format::{BLOCK, rd_u16, wr_u16};
use crate::image::{
    BITMAP_AT, CLASSES, Image, LoadError, MAX_RECORD, MIN_FRAMES, Miss, PAGE_HEADER, SB_PAGE_COUNT,
    Stored, TABLE_BYTES_PER_PAGE, class_of, decode_record, encode_record, unseal,
};
use crate::txn::{Entry, Kind, TxBuild};
use std::collections::{BTreeMap, BTreeSet};

/// Estimated bytes of an index entry besides its key: the location, the key's box
/// and the `BTreeMap`'s share of a node.
const INDEX_ENTRY: u64 = 48;

fn loc(page: u32, slot: usize) -> u64 {
    ((page as u64) << 8) | slot as u64
}

fn loc_split(l: u64) -> (u32, usize) {
    ((l >> 8) as u32, (l & 0xff) as usize)
}

/// Records found by a range: key, location, and the value or the page to read.
pub type Records<'a> = Vec<(&'a [u8], u64, Result<Stored<'a>, Miss>)>;

/// The record at location `l` in a page's bytes (read from the meta file): its key
/// and value.
pub fn record_in(page: &[u8], l: u64) -> Option<(&[u8], Stored<'_>)> {
    let (_, s) = loc_split(l);
    let size = rd_u16(page, 0) as usize;
    if size == 0 {
        return None;
    }
    let at = PAGE_HEADER + s * size;
    decode_record(page.get(at..at + size)?)
}

/// What a lookup found.
pub enum Lookup<'a> {
    Missing,
    Found(Stored<'a>),
    /// The record's page is not resident: read it (the record is at the location
    /// given), install it, look again.
    Miss(Miss, u64),
}

/// Why a change could not be made: a page it needs could not be loaded.
#[derive(Debug)]
pub enum PageError {
    Io(u32, std::io::Error),
    Checksum(u32),
    /// A bug: a change met a page [`Heap::prepare`] did not load.
    NotResident(u32),
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageError::Io(p, e) => write!(f, "reading meta page {p}: {e}"),
            PageError::Checksum(p) => write!(f, "meta page {p} fails its checksum"),
            PageError::NotResident(p) => write!(f, "meta page {p} was not loaded for a change"),
        }
    }
}

fn load_err(p: u32) -> impl FnOnce(LoadError) -> PageError {
    move |e| match e {
        LoadError::Io(e) => PageError::Io(p, e),
        LoadError::Checksum(q) => PageError::Checksum(q),
    }
}

/// Why the heap could not be rebuilt from the image.
#[derive(Debug)]
pub enum RebuildError {
    /// Reading the meta file failed.
    Io(std::io::Error),
    /// The meta file is damaged: at this page, if one is to blame.
    Bad(Option<u32>, String),
}

/// The part of a budget left for what the engine holds and does not count: the
/// allocator's overhead on the index's small objects (the estimate of an entry is a
/// floor), the I/O buffers (a bounce buffer per thread, the page read buffers, the
/// log blocks in flight), thread stacks. One twelfth (8%): at 500K records of 1 KiB
/// and a 162.8 MiB budget, with everything the engine counts at the budget, the
/// driver measured 9-10 MiB more (6%; see DESIGN.md, "Paged image").
pub fn uncounted_allowance(budget: u64) -> u64 {
    budget / 12
}

/// How many frames the image may hold: from the memory budget (what the index and
/// the page table leave), from `wal.cache` without one, else unbounded.
#[derive(Clone, Copy, Debug)]
pub enum CacheLimit {
    Budget(u64),
    Bytes(u64),
    None,
}

/// The image plus what is derived from it: the ordered index, the slot allocator
/// and the data extent allocator.
pub struct Heap {
    image: Image,
    limit: CacheLimit,
    /// key -> record location (page << 8 | slot).
    index: BTreeMap<Box<[u8]>, u64>,
    partial: Vec<BTreeSet<u32>>,
    free_pages: BTreeSet<u32>,
    used: Vec<u16>,
    extents: Extents,
    key_bytes: u64,
    /// Bytes the checkpoint copy buffers kept between checkpoints hold (see
    /// [`Heap::frame_limit`]).
    copies_held: u64,
}

impl Heap {
    /// Derives the index and allocators from a replayed image: every page is read
    /// (resident ones from memory, the others from the meta file in runs of 256
    /// pages, kept resident while the cache has room). A page the file holds that
    /// fails its CRC, or a page of the image the file lacks that replay did not make,
    /// is an error naming it (`Err((page, why))`).
    pub fn rebuild(image: Image, limit: CacheLimit) -> Result<Heap, RebuildError> {
        let n = image.page_count();
        let mut h = Heap {
            image,
            limit,
            index: BTreeMap::new(),
            partial: vec![BTreeSet::new(); CLASSES.len()],
            free_pages: BTreeSet::new(),
            used: vec![0; n],
            extents: Extents::default(),
            key_bytes: 0,
            copies_held: 0,
        };
        let mut used_extents = Vec::new();
        let mut entries: Vec<(Box<[u8]>, u64)> = Vec::new();
        const RUN: usize = 256;
        let mut run: Vec<u8> = Vec::new();
        let mut run_start = 0usize;
        for p in 1..n as u32 {
            let resident = h.image.resident(p).map(|b| b.to_vec());
            let mut page = match resident {
                Some(b) => b,
                None => {
                    let pi = p as usize;
                    let Some(m) = h.image.needs_read(p) else {
                        return Err(RebuildError::Bad(
                            Some(p),
                            format!("meta page {p} is missing (the file has fewer pages)"),
                        ));
                    };
                    if run.is_empty() || pi < run_start || pi >= run_start + run.len() / BLOCK {
                        let Some(b) = h.image.backing() else {
                            return Err(RebuildError::Bad(Some(p), "no meta file to read".into()));
                        };
                        let k = RUN.min(n - pi);
                        run.clear();
                        run.resize(k * BLOCK, 0);
                        b.file
                            .read_at(&mut run, pi as u64 * BLOCK as u64)
                            .map_err(RebuildError::Io)?;
                        run_start = pi;
                    }
                    let at = (pi - run_start) * BLOCK;
                    let mut page = run[at..at + BLOCK].to_vec();
                    if !unseal(&mut page, pi) {
                        return Err(RebuildError::Bad(
                            Some(p),
                            format!("meta page {p} fails its checksum"),
                        ));
                    }
                    let lim = h.frame_limit();
                    if h.image.resident_frames() < lim / 2 {
                        // a warm start, up to half the cache: the rest for the run
                        h.image.install(m, &page, lim);
                    }
                    page
                }
            };
            let size = rd_u16(&page, 0) as usize;
            if size == 0 {
                h.free_pages.insert(p);
                continue;
            }
            let class = CLASSES.iter().position(|&c| c == size).ok_or_else(|| {
                RebuildError::Bad(Some(p), format!("page {p} has slot size {size}"))
            })?;
            let nslots = rd_u16(&page, 2) as usize;
            if nslots != MAX_RECORD / size {
                return Err(RebuildError::Bad(
                    Some(p),
                    format!("page {p} has {nslots} slots of {size} bytes"),
                ));
            }
            let mut used = 0;
            for s in 0..nslots {
                if page[BITMAP_AT + s / 8] & (1 << (s % 8)) == 0 {
                    continue;
                }
                used += 1;
                let at = PAGE_HEADER + s * size;
                let (k, v) = decode_record(&page[at..at + size]).ok_or_else(|| {
                    RebuildError::Bad(Some(p), format!("bad record in page {p} slot {s}"))
                })?;
                if let Stored::Extent(e) = v {
                    used_extents.push((e.start, e.blocks));
                }
                h.key_bytes += k.len() as u64;
                entries.push((k.into(), loc(p, s)));
            }
            page.clear();
            h.used[p as usize] = used;
            if (used as usize) < nslots {
                h.partial[class].insert(p);
            }
        }
        // Sorted first, the index is built in bulk (much faster than inserting).
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(RebuildError::Bad(
                None,
                format!("key stored twice (locations {:#x}, {:#x})", w[0].1, w[1].1),
            ));
        }
        h.index = entries.into_iter().collect();
        h.extents = Extents::rebuild(used_extents).map_err(|e| RebuildError::Bad(None, e))?;
        Ok(h)
    }

    /// Frames the image may hold now: under a budget, what the index and the page
    /// table leave of it (at least [`MIN_FRAMES`]), less the checkpoint's buffers: a
    /// slice of copies (`checkpoint::SLICE` pages) and its lists of the dirty pages
    /// (20 bytes a page, at most a quarter of the frames: half a percent is kept
    /// for them), or what they hold if more. (Before checkpoints copied in slices,
    /// 2026-12-03, a fifth was kept for copies of every dirty page.)
    pub fn frame_limit(&self) -> usize {
        let frames = match self.limit {
            CacheLimit::Budget(b) => {
                let rest = b.saturating_sub(
                    self.index_bytes() + self.table_bytes() + uncounted_allowance(b),
                );
                let reserve = (crate::checkpoint::SLICE * BLOCK) as u64 + rest / 200;
                rest.saturating_sub(reserve.max(self.copies_held))
                    / (BLOCK as u64 + crate::image::FRAME_OVERHEAD)
            }
            CacheLimit::Bytes(b) => b / BLOCK as u64,
            CacheLimit::None => return usize::MAX,
        };
        // whole chunks (see `image::CHUNK_FRAMES`)
        let c = crate::image::CHUNK_FRAMES;
        (usize::try_from(frames).unwrap_or(usize::MAX) / c * c).max(MIN_FRAMES)
    }

    /// The image's gauges for the counters.
    pub fn gauges(&self) -> crate::stats::ImageGauges {
        let (page_loads, page_evictions) = self.image.loads_and_evictions();
        crate::stats::ImageGauges {
            items: self.items(),
            index_bytes: self.index_bytes(),
            image_bytes: self.image_bytes(),
            table_bytes: self.table_bytes(),
            dirty_bytes: self.image.dirty_bytes(),
            page_loads,
            page_evictions,
        }
    }

    /// Records what the checkpoint copy buffers hold between checkpoints.
    pub fn set_copies_held(&mut self, bytes: u64) {
        self.copies_held = bytes;
    }

    /// Dirty pages the writers let the cache hold before they wait for a checkpoint:
    /// a quarter of the frames.
    pub fn dirty_limit(&self) -> usize {
        (self.frame_limit() / 4).max(MIN_FRAMES / 4)
    }

    /// Bytes of the page table (frame, flush count and used slots per page).
    pub fn table_bytes(&self) -> u64 {
        self.image.page_count() as u64 * TABLE_BYTES_PER_PAGE
    }

    pub fn items(&self) -> u64 {
        self.index.len() as u64
    }

    /// Estimated memory of the ordered index (keys, locations, tree overhead).
    pub fn index_bytes(&self) -> u64 {
        self.key_bytes + self.index.len() as u64 * INDEX_ENTRY
    }

    /// Bytes of the resident pages.
    pub fn image_bytes(&self) -> u64 {
        self.image.resident_bytes()
    }

    /// Bytes by which storing `key` grows what must stay in memory whatever the
    /// cache: an index entry for a new key, and the page table's share of a page.
    pub fn index_growth(&self, key: &[u8]) -> u64 {
        if self.index.contains_key(key) {
            0
        } else {
            key.len() as u64 + INDEX_ENTRY + TABLE_BYTES_PER_PAGE
        }
    }

    /// Under a budget: whether the index and page table, grown by `grow`, leave the
    /// cache its [`MIN_FRAMES`] (else the write is refused as over budget).
    pub fn fixed_fits(&self, grow: u64) -> Option<(u64, u64)> {
        let CacheLimit::Budget(b) = self.limit else {
            return None;
        };
        let needed = self.index_bytes()
            + self.table_bytes()
            + grow
            + (MIN_FRAMES * BLOCK) as u64
            + uncounted_allowance(b);
        (needed > b).then_some((needed, b))
    }

    pub fn image(&self) -> &Image {
        &self.image
    }

    pub fn image_mut(&mut self) -> &mut Image {
        &mut self.image
    }

    /// Installs a page read after a miss (see [`Image::install`]).
    pub fn install(&mut self, m: Miss, bytes: &[u8]) -> crate::image::Installed {
        let lim = self.frame_limit();
        self.image.install(m, bytes, lim)
    }

    /// The pages a put of `key` with a record of `rec` bytes, or a delete (`None`),
    /// will change that must be read first: the key's record page, and the page a new
    /// slot would come from. Found under the read lock, read outside it.
    pub fn misses_for(&self, key: &[u8], rec: Option<usize>) -> Vec<Miss> {
        let mut out = Vec::new();
        if let Some(&l) = self.index.get(key) {
            out.extend(self.image.needs_read(loc_split(l).0));
        }
        if let Some(class) = rec.and_then(class_of) {
            let cand = self.partial[class]
                .first()
                .or_else(|| self.free_pages.first());
            if let Some(&p) = cand {
                out.extend(self.image.needs_read(p));
            }
        }
        out
    }

    /// Makes resident (under the write lock) every page a put (`rec`: its record's
    /// bytes) or delete (`None`) of `key` changes, and keeps them from eviction while
    /// the change is applied: the superblock, the record's page and the page a new
    /// slot comes from. After it, [`Heap::put`] and [`Heap::delete`] need no read.
    pub fn prepare(&mut self, key: &[u8], rec: Option<usize>) -> Result<(), PageError> {
        let mut pages = vec![0u32];
        if let Some(&l) = self.index.get(key) {
            pages.push(loc_split(l).0);
        }
        if let Some(class) = rec.and_then(class_of)
            && let Some(&p) = self.partial[class]
                .first()
                .or_else(|| self.free_pages.first())
        {
            pages.push(p);
        }
        self.image.protect(&pages);
        let lim = self.frame_limit();
        self.image.set_limit(lim);
        for &p in &pages {
            self.image.load(p, lim).map_err(load_err(p))?;
        }
        Ok(())
    }

    /// Allocates `blocks` blocks of the data file for a large value.
    pub fn alloc_extent(&mut self, blocks: u32) -> u32 {
        self.extents.alloc(blocks)
    }

    /// Gives an extent back to the data file's allocator.
    pub fn free_extent(&mut self, x: &Extent) {
        self.extents.free(x.start, x.blocks);
    }

    /// The bytes of slot `l`, if its page is resident.
    fn slot_bytes(&self, l: u64) -> Result<&[u8], Miss> {
        let (p, s) = loc_split(l);
        let page = self.image.lookup(p)?;
        let size = rd_u16(page, 0) as usize;
        let at = PAGE_HEADER + s * size;
        Ok(&page[at..at + size])
    }

    pub fn get(&self, key: &[u8]) -> Lookup<'_> {
        let Some(&l) = self.index.get(key) else {
            return Lookup::Missing;
        };
        match self.slot_bytes(l) {
            Ok(b) => decode_record(b).map_or(Lookup::Missing, |(_, v)| Lookup::Found(v)),
            Err(m) => Lookup::Miss(m, l),
        }
    }

    /// Up to `count` records with key >= `start`, in key order: each key with its
    /// location, and its value if the page is resident, else the miss to read it (the
    /// misses of one page are adjacent when its records are).
    pub fn range(&self, start: &[u8], count: usize) -> Records<'_> {
        self.index
            .range::<[u8], _>((std::ops::Bound::Included(start), std::ops::Bound::Unbounded))
            .take(count)
            .filter_map(|(k, &l)| match self.slot_bytes(l) {
                Ok(b) => decode_record(b).map(|(_, v)| (&k[..], l, Ok(v))),
                Err(m) => Some((&k[..], l, Err(m))),
            })
            .collect()
    }

    // ---- changes, each applied and recorded in `tb` ----

    fn emit(&mut self, tb: &mut TxBuild, e: Entry, bytes: &[u8]) -> Result<(), PageError> {
        self.image
            .apply(&e, bytes)
            .map_err(PageError::NotResident)?;
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
        Ok(())
    }

    fn copy(&mut self, tb: &mut TxBuild, off: usize, bytes: &[u8]) -> Result<(), PageError> {
        let e = Entry {
            kind: Kind::Copy,
            off: off as u64,
            len: bytes.len() as u32,
            data: 0,
        };
        self.emit(tb, e, bytes)
    }

    fn assign(
        &mut self,
        tb: &mut TxBuild,
        off: usize,
        len: u32,
        data: u32,
    ) -> Result<(), PageError> {
        let e = Entry {
            kind: Kind::Assign,
            off: off as u64,
            len,
            data,
        };
        self.emit(tb, e, &[])
    }

    fn bits(
        &mut self,
        tb: &mut TxBuild,
        page: u32,
        slot: usize,
        set: bool,
    ) -> Result<(), PageError> {
        let e = Entry {
            kind: if set { Kind::SetBits } else { Kind::ClrBits },
            off: page as u64 * BLOCK as u64 + BITMAP_AT as u64,
            len: 1,
            data: slot as u32,
        };
        self.emit(tb, e, &[])
    }

    /// Records the checksum of a large value written to the data file.
    pub fn csum(&mut self, tb: &mut TxBuild, e: &Extent) -> Result<(), PageError> {
        let x = Entry {
            kind: Kind::Csum,
            off: e.start as u64 * BLOCK as u64,
            len: e.len,
            data: e.crc,
        };
        self.emit(tb, x, &[])
    }

    /// A page the change needs, resident ([`Heap::prepare`] loaded it).
    fn page(&self, p: u32) -> Result<&[u8], PageError> {
        self.image.resident(p).ok_or(PageError::NotResident(p))
    }

    fn alloc_slot(&mut self, tb: &mut TxBuild, class: usize) -> Result<u64, PageError> {
        let size = CLASSES[class];
        let nslots = MAX_RECORD / size;
        let page = match self.partial[class].first() {
            Some(&p) => p,
            None => {
                let p = match self.free_pages.pop_first() {
                    Some(p) => p,
                    None => {
                        let p = self.image.page_count() as u32;
                        self.assign(tb, SB_PAGE_COUNT, 4, p + 1)?;
                        let n = self.used.len() + 1;
                        crate::image::grow_vec(&mut self.used, n, 0);
                        p
                    }
                };
                let mut hdr = [0u8; 4];
                wr_u16(&mut hdr, 0, size as u16);
                wr_u16(&mut hdr, 2, nslots as u16);
                self.copy(tb, p as usize * BLOCK, &hdr)?;
                self.partial[class].insert(p);
                p
            }
        };
        let pg = self.page(page)?;
        // a partial page has a free slot: it leaves the set when its last is taken
        let slot = (0..nslots)
            .find(|s| pg[BITMAP_AT + s / 8] & (1 << (s % 8)) == 0)
            .ok_or(PageError::NotResident(page))?;
        self.bits(tb, page, slot, true)?;
        self.used[page as usize] += 1;
        if self.used[page as usize] as usize == nslots {
            self.partial[class].remove(&page);
        }
        Ok(loc(page, slot))
    }

    fn free_slot(&mut self, tb: &mut TxBuild, l: u64) -> Result<(), PageError> {
        let (page, slot) = loc_split(l);
        let size = rd_u16(self.page(page)?, 0) as usize;
        // an indexed record lies in a slab page, whose slot size `rebuild` checked or
        // `alloc_slot` wrote
        let class = class_of(size).ok_or(PageError::NotResident(page))?;
        self.bits(tb, page, slot, false)?;
        self.used[page as usize] -= 1;
        if self.used[page as usize] == 0 {
            // An empty page goes back to the free pages, for any class.
            self.assign(tb, page as usize * BLOCK, 4, 0)?;
            self.partial[class].remove(&page);
            self.free_pages.insert(page);
        } else {
            self.partial[class].insert(page);
        }
        Ok(())
    }

    /// The record at `l` (its page resident).
    fn record_at(&self, l: u64) -> Result<Option<Stored<'_>>, PageError> {
        let b = self
            .slot_bytes(l)
            .map_err(|m| PageError::NotResident(m.page))?;
        Ok(decode_record(b).map(|(_, v)| v))
    }

    /// Stores `key` -> `v`; returns the extent of the value it replaced, if large.
    /// Its pages must be resident ([`Heap::prepare`]); an error leaves the image
    /// changed half-way, and the engine is poisoned by the caller.
    pub fn put(
        &mut self,
        tb: &mut TxBuild,
        key: &[u8],
        v: &Stored,
    ) -> Result<Option<Extent>, PageError> {
        let rec = encode_record(key, v);
        // the write path checks every record against MAX_RECORD, the largest class
        let class = class_of(rec.len()).ok_or(PageError::NotResident(0))?;
        let old = self.index.get(key).copied();
        let mut old_extent = None;
        if let Some(l) = old {
            if let Some(Stored::Extent(e)) = self.record_at(l)? {
                old_extent = Some(e);
            }
            let (p, s) = loc_split(l);
            if rd_u16(self.page(p)?, 0) as usize == CLASSES[class] {
                // Same slot size: overwrite in place (the redo log makes it atomic).
                self.copy(
                    tb,
                    p as usize * BLOCK + PAGE_HEADER + s * CLASSES[class],
                    &rec,
                )?;
                return Ok(old_extent);
            }
        }
        let l = self.alloc_slot(tb, class)?;
        let (p, s) = loc_split(l);
        self.copy(
            tb,
            p as usize * BLOCK + PAGE_HEADER + s * CLASSES[class],
            &rec,
        )?;
        if let Some(o) = old {
            self.free_slot(tb, o)?;
        } else {
            self.key_bytes += key.len() as u64;
        }
        self.index.insert(key.into(), l);
        Ok(old_extent)
    }

    /// Removes `key`; returns whether it existed and the extent of its value. Its
    /// page must be resident ([`Heap::prepare`]).
    pub fn delete(
        &mut self,
        tb: &mut TxBuild,
        key: &[u8],
    ) -> Result<(bool, Option<Extent>), PageError> {
        let Some(&l) = self.index.get(key) else {
            return Ok((false, None));
        };
        let ext = match self.record_at(l)? {
            Some(Stored::Extent(e)) => Some(e),
            _ => None,
        };
        self.free_slot(tb, l)?;
        self.index.remove(key);
        self.key_bytes -= key.len() as u64;
        Ok((true, ext))
    }
}
