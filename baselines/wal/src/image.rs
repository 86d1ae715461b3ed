//! The meta image, paged through a bounded cache: its pages, the superblock, the
//! records in slab pages, the page CRCs of the meta file, and redo entries applied
//! to it.
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

/// A page's place in the cache: the frame it occupies, if resident, and how many
/// finished checkpoints wrote it (a read from the meta file that overlapped one is
/// thrown away; see [`Image::install`]).
#[derive(Clone, Copy)]
struct Slot {
    frame: u32,
    flushes: u32,
}

/// No frame: the page is not resident.
const NONE: u32 = u32::MAX;

/// A resident page (its bytes are the frame's page in `Image::chunks`).
struct Frame {
    page: u32,
    /// Bumped by every change applied to the page.
    version: u64,
    /// The version the meta file holds (as of the last finished checkpoint, or the
    /// load): the page is clean, and may be evicted, while `version == flushed`.
    flushed: u64,
    /// CLOCK's reference bit, set by every access (readers hold only the read lock).
    referenced: std::sync::atomic::AtomicBool,
}

/// The fewest frames a budget leaves the cache: a transaction's three pages and the
/// superblock, many times over.
pub const MIN_FRAMES: usize = 64;

/// Bytes a frame costs besides its page: its entry in the frame list (about 40 bytes),
/// the free list's share, and the room of those vectors' growth.
pub const FRAME_OVERHEAD: u64 = 128;

/// Frames are allocated in chunks of this many pages (64 KiB), and the heap's frame
/// limits are multiples of it: the cache's memory is then whole chunks, allocated as
/// it grows and freed as its limit shrinks (see [`Image::set_limit`]), never a page
/// at a time. Single 4 KiB pages, allocated and freed as pages come and go, would
/// share the allocator's small-object pages with every transient allocation of that
/// size, and the allocator would hold far more than the frames (mimalloc, the
/// driver's allocator, measured some 40 MiB more at a 162.8 MiB budget).
pub const CHUNK_FRAMES: usize = 16;

/// Bytes of the page table per meta page, counted in the budget: the frame and flush
/// count here (8), the used slots in the heap (2), and the checkpoint ids of the
/// dirty-page tracking (16), 26 bytes, with an eighth more for the growth room of
/// their vectors ([`grow_vec`]).
pub const TABLE_BYTES_PER_PAGE: u64 = 30;

/// Grows `v` to `n` elements of `fill`, reserving an eighth more room (not the
/// doubling of `Vec`'s own growth): the per-page tables grow a page at a time during
/// a load, and their room counts in the budget.
pub fn grow_vec<T: Clone>(v: &mut Vec<T>, n: usize, fill: T) {
    if n > v.len() {
        if n > v.capacity() {
            v.reserve_exact((n - v.len()).max(v.len() / 8));
        }
        v.resize(n, fill);
    }
}

/// Where a miss reads its page from: the meta file, with its path for errors.
#[derive(Clone)]
pub struct Backing {
    pub file: std::sync::Arc<dyn crate::io::Storage>,
    pub path: std::path::PathBuf,
}

/// The image: `count` pages of 4 KiB, the same bytes as the meta file once every
/// change is checkpointed. Pages are resident in frames (loaded from the meta file on
/// a miss, or new) up to a capacity the heap sets from the memory budget; a clean
/// page (the meta file holds it) may be evicted, a dirty one stays until a finished
/// checkpoint has written it. Page 0, the superblock, is always resident.
pub struct Image {
    count: usize,
    table: Vec<Slot>,
    /// One entry per frame of `chunks`: the page it holds, if any.
    frames: Vec<Option<Frame>>,
    /// The frames holding no page.
    free_frames: Vec<u32>,
    /// The frames' pages: frame `i` is page `i % CHUNK_FRAMES` of chunk
    /// `i / CHUNK_FRAMES`.
    chunks: Vec<Box<[u8]>>,
    /// CLOCK's hand over `frames`.
    hand: usize,
    /// Pages the meta file held at open or a checkpoint wrote: a page at or past it
    /// that is not resident is new (zero), not read.
    on_disk: usize,
    backing: Option<Backing>,
    /// Pages the current transaction touches, not to be evicted while it loads others.
    protect: [u32; 4],
    /// The frames the cache may hold, as the heap last set it: a page a change adds
    /// makes room under it.
    limit: usize,
    dirty_frames: usize,
    loads: u64,
    evictions: u64,
}

/// A page the cache does not hold, to be read from the meta file outside the core
/// lock and installed with [`Image::install`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Miss {
    pub page: u32,
    /// The page's flush count when the miss was found.
    pub flushes: u32,
}

/// What [`Image::install`] did with a page read after a miss.
#[derive(Debug, PartialEq, Eq)]
pub enum Installed {
    /// Now resident (or already was).
    Yes,
    /// A checkpoint wrote the page while it was being read: read it again.
    Stale,
}

impl Image {
    /// A fresh image: the superblock only, resident; not backed by a file until
    /// [`Image::back`].
    pub fn new(pool_id: u32) -> Image {
        let mut p = zero_page();
        wr_u32(&mut p, 0, META_MAGIC);
        wr_u32(&mut p, 4, META_VERSION);
        wr_u32(&mut p, 8, pool_id);
        wr_u32(&mut p, 12, BLOCK as u32);
        wr_u32(&mut p, SB_PAGE_COUNT, 1);
        let mut im = Image::empty(1);
        let i = im.free_frame();
        im.frame_page_mut(i).copy_from_slice(&p);
        im.put_frame(0, i, false);
        im
    }

    /// An image of `count` pages, none resident, read from `backing` on demand
    /// (`on_disk` pages of it hold data).
    pub fn paged(count: usize, on_disk: usize, backing: Backing) -> Image {
        let mut im = Image::empty(count.max(1));
        im.on_disk = on_disk;
        im.backing = Some(backing);
        im
    }

    fn empty(count: usize) -> Image {
        Image {
            count,
            table: vec![
                Slot {
                    frame: NONE,
                    flushes: 0
                };
                count
            ],
            frames: Vec::new(),
            free_frames: Vec::new(),
            chunks: Vec::new(),
            hand: 0,
            on_disk: 0,
            backing: None,
            protect: [NONE; 4],
            limit: usize::MAX,
            dirty_frames: 0,
            loads: 0,
            evictions: 0,
        }
    }

    /// Reads pages from `backing` from now on (the meta file of a created database).
    pub fn back(&mut self, backing: Backing, on_disk: usize) {
        self.backing = Some(backing);
        self.on_disk = on_disk;
    }

    /// Checks the superblock (resident); returns the page count it records.
    pub fn check_superblock(&self, pool_id: u32) -> Result<u32, String> {
        let p = self
            .resident(0)
            .ok_or("the meta superblock is not loaded")?;
        check_superblock(p, pool_id)
    }

    pub fn page_count(&self) -> usize {
        self.count
    }

    /// Page `p` if resident (and marks it used for CLOCK).
    pub fn resident(&self, p: u32) -> Option<&[u8]> {
        let f = self.table.get(p as usize)?.frame;
        let fr = self.frames.get(f as usize)?.as_ref()?;
        fr.referenced
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Some(self.frame_page(f as usize))
    }

    /// Frame `i`'s page.
    fn frame_page(&self, i: usize) -> &[u8] {
        let o = (i % CHUNK_FRAMES) * BLOCK;
        &self.chunks[i / CHUNK_FRAMES][o..o + BLOCK]
    }

    fn frame_page_mut(&mut self, i: usize) -> &mut [u8] {
        let o = (i % CHUNK_FRAMES) * BLOCK;
        &mut self.chunks[i / CHUNK_FRAMES][o..o + BLOCK]
    }

    /// Page `p` resident, or the miss to read it; a page past the meta file's end is
    /// new (zero) and made resident by the write path, never read.
    pub fn lookup(&self, p: u32) -> Result<&[u8], Miss> {
        match self.resident(p) {
            Some(b) => Ok(b),
            None => Err(Miss {
                page: p,
                flushes: self.table.get(p as usize).map_or(0, |s| s.flushes),
            }),
        }
    }

    /// Whether page `p` must be read from the meta file to be used (not resident,
    /// and the file holds it).
    pub fn needs_read(&self, p: u32) -> Option<Miss> {
        let s = self.table.get(p as usize)?;
        (s.frame == NONE && (p as usize) < self.on_disk).then_some(Miss {
            page: p,
            flushes: s.flushes,
        })
    }

    /// Reads page `p` from the meta file into `b` (a page) and checks its CRC
    /// (zeroing the field); `Ok(false)` if it fails the check. Needs no lock: the
    /// caller installs it.
    pub fn read_page(backing: &Backing, p: u32, b: &mut [u8]) -> std::io::Result<bool> {
        backing.file.read_at(b, p as u64 * BLOCK as u64)?;
        Ok(unseal(b, p as usize))
    }

    /// A frame for a page about to be made resident (its bytes unspecified): a free
    /// one, or the first of a new chunk.
    fn free_frame(&mut self) -> usize {
        if let Some(i) = self.free_frames.pop() {
            return i as usize;
        }
        let base = self.frames.len();
        self.chunks
            .push(vec![0u8; CHUNK_FRAMES * BLOCK].into_boxed_slice());
        self.frames.extend((0..CHUNK_FRAMES).map(|_| None));
        // the rest free, the lowest taken first
        self.free_frames
            .extend((base + 1..base + CHUNK_FRAMES).rev().map(|i| i as u32));
        base
    }

    /// Frame `i` holds no page any more.
    fn release(&mut self, i: usize) -> Option<Frame> {
        let f = self.frames[i].take();
        if f.is_some() {
            self.free_frames.push(i as u32);
        }
        f
    }

    /// Frees the chunks that lie wholly at or past the limit, once the resident pages
    /// fit below them: the pages of the last chunk move to free frames below it.
    fn shrink(&mut self) {
        while self.chunks.len() > 1 {
            let base = (self.chunks.len() - 1) * CHUNK_FRAMES;
            let used = self.frames.len() - self.free_frames.len();
            if base < self.limit || used > base {
                return;
            }
            let mut below: Vec<u32> = self
                .free_frames
                .iter()
                .copied()
                .filter(|&j| (j as usize) < base)
                .collect();
            for i in base..self.frames.len() {
                if self.frames[i].is_none() {
                    continue;
                }
                let Some(j) = below.pop().map(|j| j as usize) else {
                    return; // cannot happen: used <= base
                };
                let (lo, hi) = self.chunks.split_at_mut(base / CHUNK_FRAMES);
                let oj = (j % CHUNK_FRAMES) * BLOCK;
                let oi = (i % CHUNK_FRAMES) * BLOCK;
                lo[j / CHUNK_FRAMES][oj..oj + BLOCK].copy_from_slice(&hi[0][oi..oi + BLOCK]);
                let f = self.frames[i].take();
                if let Some(f) = &f {
                    self.table[f.page as usize].frame = j as u32;
                }
                self.frames[j] = f;
            }
            let frames = &self.frames;
            self.free_frames
                .retain(|&j| (j as usize) < base && frames[j as usize].is_none());
            self.frames.truncate(base);
            self.chunks.pop();
            if self.hand >= base {
                self.hand = 0;
            }
        }
    }

    pub fn backing(&self) -> Option<&Backing> {
        self.backing.as_ref()
    }

    /// Installs page `m.page`, read after miss `m`, unless it became resident
    /// meanwhile (then nothing changes) or a checkpoint wrote it since (`Stale`: the
    /// bytes read may be older than the file's).
    pub fn install(&mut self, m: Miss, bytes: &[u8], limit: usize) -> Installed {
        let Some(s) = self.table.get(m.page as usize).copied() else {
            return Installed::Yes; // the image shrank? nothing to hold
        };
        if s.frame != NONE {
            return Installed::Yes;
        }
        if s.flushes != m.flushes {
            return Installed::Stale;
        }
        self.make_room(limit);
        self.loads += 1;
        let i = self.free_frame();
        self.frame_page_mut(i).copy_from_slice(bytes);
        self.put_frame(m.page, i, false);
        Installed::Yes
    }

    /// Makes page `p` resident now, reading it under the caller's lock if needed (a
    /// page evicted between a writer's prefetch and its write lock, or replay).
    /// A page failing its CRC is `Err` with `Some(p)`; an I/O error names itself.
    pub fn load(&mut self, p: u32, limit: usize) -> Result<(), LoadError> {
        if (p as usize) >= self.count {
            // not in the image yet: a change that adds it makes it (zero)
            return Ok(());
        }
        if self.table[p as usize].frame != NONE {
            return Ok(());
        }
        self.make_room(limit);
        let i = self.free_frame();
        if (p as usize) < self.on_disk {
            let Some(backing) = self.backing.clone() else {
                self.free_frames.push(i as u32);
                return Err(LoadError::Io(std::io::Error::other(
                    "the image has no meta file to read from",
                )));
            };
            match Image::read_page(&backing, p, self.frame_page_mut(i)) {
                Ok(true) => {}
                Ok(false) => {
                    self.free_frames.push(i as u32);
                    return Err(LoadError::Checksum(p));
                }
                Err(e) => {
                    self.free_frames.push(i as u32);
                    return Err(LoadError::Io(e));
                }
            }
        } else {
            self.frame_page_mut(i).fill(0);
        }
        self.loads += 1;
        self.put_frame(p, i, false);
        Ok(())
    }

    /// Makes page `p` resident with `bytes` as its content, counting it dirty (replay
    /// accepts a torn page it rewrites this way; see open.rs).
    pub fn load_dirty(&mut self, p: u32, bytes: &[u8]) {
        if (p as usize) >= self.count {
            self.grow(p as usize + 1);
        }
        if self.table[p as usize].frame == NONE {
            let i = self.free_frame();
            self.frame_page_mut(i).copy_from_slice(bytes);
            self.put_frame(p, i, true);
        }
    }

    /// Sets the frames the cache may hold (see `limit`; a multiple of
    /// [`CHUNK_FRAMES`]); chunks wholly past it are freed once their pages fit below.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
        self.shrink();
    }

    /// Pages the current transaction touches: not evicted while it loads others.
    pub fn protect(&mut self, pages: &[u32]) {
        self.protect = [NONE; 4];
        for (d, &p) in self.protect.iter_mut().zip(pages) {
            *d = p;
        }
    }

    fn grow(&mut self, n: usize) {
        grow_vec(
            &mut self.table,
            n,
            Slot {
                frame: NONE,
                flushes: 0,
            },
        );
        self.count = self.count.max(n);
    }

    /// Frame `i` (free) now holds page `p`, whose bytes are in it.
    fn put_frame(&mut self, p: u32, i: usize, dirty: bool) {
        let f = Frame {
            page: p,
            version: u64::from(dirty),
            flushed: 0,
            referenced: std::sync::atomic::AtomicBool::new(true),
        };
        if dirty {
            self.dirty_frames += 1;
        }
        self.frames[i] = Some(f);
        if (p as usize) >= self.table.len() {
            self.grow(p as usize + 1);
        }
        self.table[p as usize].frame = i as u32;
    }

    /// Evicts clean pages (CLOCK) until fewer than `limit` frames are used. Dirty
    /// pages, the superblock and protected pages stay: with every frame dirty the
    /// cache overshoots, and the write path's admission waits for a checkpoint
    /// before that goes far (see DESIGN.md, "Paged image").
    fn make_room(&mut self, limit: usize) {
        let used = self.frames.len() - self.free_frames.len();
        if used < limit {
            return;
        }
        let mut over = used + 1 - limit;
        // two sweeps: the first clears reference bits, the second finds victims
        let mut budget = 2 * self.frames.len();
        while over > 0 && budget > 0 {
            budget -= 1;
            let i = self.hand;
            self.hand = (self.hand + 1) % self.frames.len().max(1);
            let Some(f) = &self.frames[i] else { continue };
            if f.page == 0 || f.version != f.flushed || self.protect.contains(&f.page) {
                continue;
            }
            if f.referenced
                .swap(false, std::sync::atomic::Ordering::Relaxed)
            {
                continue;
            }
            let p = f.page as usize;
            self.release(i);
            self.table[p].frame = NONE;
            self.evictions += 1;
            over -= 1;
        }
    }

    /// Drops every clean page but the superblock (tests: every later access misses).
    pub fn evict_clean(&mut self) {
        for i in 0..self.frames.len() {
            if let Some(f) = &self.frames[i]
                && f.page != 0
                && f.version == f.flushed
            {
                self.table[f.page as usize].frame = NONE;
                self.release(i);
                self.evictions += 1;
            }
        }
    }

    /// Page `p`'s bytes and version, for a checkpoint's copy (a dirty page is
    /// always resident).
    pub fn copy_for_checkpoint(&self, p: u32) -> Option<(&[u8], u64)> {
        let i = self.table.get(p as usize)?.frame as usize;
        let f = self.frames.get(i)?.as_ref()?;
        Some((self.frame_page(i), f.version))
    }

    /// A finished checkpoint wrote version `version` of page `p` (and synced it): the
    /// page is clean if nothing changed it since, and a read of it that overlapped
    /// the write is stale.
    pub fn flushed(&mut self, p: u32, version: u64) {
        let Some(s) = self.table.get_mut(p as usize) else {
            return;
        };
        s.flushes = s.flushes.wrapping_add(1);
        let fi = s.frame;
        if (p as usize) >= self.on_disk {
            self.on_disk = p as usize + 1;
        }
        if let Some(Some(f)) = self.frames.get_mut(fi as usize)
            && f.flushed < version
        {
            let was_dirty = f.version != f.flushed;
            f.flushed = version;
            if was_dirty && f.version == f.flushed {
                self.dirty_frames -= 1;
            }
        }
    }

    /// Bytes of the frames' chunks (resident pages and free frames), with the frame
    /// lists' own memory.
    pub fn resident_bytes(&self) -> u64 {
        let lists = self.frames.capacity() * std::mem::size_of::<Option<Frame>>()
            + self.free_frames.capacity() * 4
            + self.chunks.capacity() * std::mem::size_of::<Box<[u8]>>();
        (self.chunks.len() * CHUNK_FRAMES * BLOCK + lists) as u64
    }

    /// Frames resident (for the cache limit: `resident_bytes` counts bytes).
    pub fn resident_frames(&self) -> usize {
        self.frames.len() - self.free_frames.len()
    }

    /// Bytes of the dirty resident pages.
    pub fn dirty_bytes(&self) -> u64 {
        (self.dirty_frames * BLOCK) as u64
    }

    /// Pages read from the meta file, and pages evicted, since open.
    pub fn loads_and_evictions(&self) -> (u64, u64) {
        (self.loads, self.evictions)
    }

    /// Makes the image exactly `n` pages (pages past it are dropped).
    pub fn resize(&mut self, n: usize) {
        let n = n.max(1);
        for p in n..self.table.len() {
            let f = self.table[p].frame;
            if f != NONE
                && let Some(fr) = self.release(f as usize)
                && fr.version != fr.flushed
            {
                self.dirty_frames -= 1;
            }
        }
        self.table.truncate(n);
        self.grow(n);
        self.count = n;
    }

    /// Applies one redo entry (`payload` holds a copy entry's bytes) to resident
    /// pages; an entry past the end grows the image (the new pages resident, zero).
    /// `Err(page)` if a page it touches is not resident: the caller loads first
    /// ([`Image::load`]), so this is a bug, and it applies nothing.
    pub fn apply(&mut self, e: &Entry, payload: &[u8]) -> Result<(), u32> {
        if e.kind == Kind::Csum {
            return Ok(());
        }
        let end = e.off as usize + e.len.max(1) as usize;
        let first = e.off as usize / BLOCK;
        let last = (end - 1) / BLOCK;
        for p in first..=last {
            if p >= self.count || (self.table[p].frame == NONE && p >= self.on_disk) {
                // new pages: zero, resident, dirty below
                self.grow(p + 1);
                if self.table[p].frame == NONE {
                    self.make_room(self.limit);
                    let i = self.free_frame();
                    self.frame_page_mut(i).fill(0);
                    self.put_frame(p as u32, i, false);
                }
            }
            if self.table[p].frame == NONE {
                return Err(p as u32);
            }
        }
        for p in first..=last {
            self.touch(p);
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
                    let b = &mut self.bytes_mut(at / BLOCK)[at % BLOCK];
                    if e.kind == Kind::SetBits {
                        *b |= 1 << (bit % 8);
                    } else {
                        *b &= !(1 << (bit % 8));
                    }
                }
            }
            Kind::Csum => {}
        }
        if first == 0 {
            // the superblock's page count is the image's
            let n = rd_u32(self.bytes_mut(0), SB_PAGE_COUNT) as usize;
            if n > self.count {
                self.grow(n);
            }
        }
        Ok(())
    }

    /// A change to resident page `p`: its version moves past what the file holds.
    fn touch(&mut self, p: usize) {
        let fi = self.table[p].frame as usize;
        if let Some(Some(f)) = self.frames.get_mut(fi) {
            if f.version == f.flushed {
                self.dirty_frames += 1;
            }
            f.version += 1;
        }
    }

    /// Resident page `p` (apply checked that every page it writes is resident).
    fn bytes_mut(&mut self, p: usize) -> &mut [u8] {
        let fi = self.table[p].frame as usize;
        debug_assert!(self.frames.get(fi).is_some_and(Option::is_some));
        self.frame_page_mut(fi)
    }

    fn write(&mut self, mut off: usize, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let k = (BLOCK - off % BLOCK).min(bytes.len());
            self.bytes_mut(off / BLOCK)[off % BLOCK..off % BLOCK + k].copy_from_slice(&bytes[..k]);
            off += k;
            bytes = &bytes[k..];
        }
    }
}

/// Why a page could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    Io(std::io::Error),
    /// The page fails its CRC.
    Checksum(u32),
}

/// Checks a superblock's bytes; returns the page count it records.
pub fn check_superblock(p: &[u8], pool_id: u32) -> Result<u32, String> {
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

pub fn zero_page() -> Box<[u8]> {
    vec![0u8; BLOCK].into_boxed_slice()
}

#[cfg(test)]
#[path = "image_tests.rs"]
mod tests;
