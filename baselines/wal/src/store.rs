//! The in-memory pool that readers and writers share: the heap (image, index,
//! allocators) with its dirty pages and the data extents waiting to be freed, under
//! one read-write lock (the core lock); the large values whose data write is in
//! flight; and the close gate (whether the engine is closed, and the writers
//! between their closed check and their transaction's reservation, which `close`
//! waits for).
//!
//! Lock order: the core lock, then the log's (writers reserve their transaction
//! while they hold the core lock, so ids follow the order changes were applied),
//! then the in-flight map.

use crate::checkpoint::{DirtyPages, PageCopies};
use crate::extent::Extent;
use crate::format::BLOCK;
use crate::heap::{Heap, Lookup, record_in};
use crate::image::{Backing, Image, Installed, Miss, Stored};
use crate::io::aligned::AlignedBuf;
use crate::stats::{Stat, Stats};
use crate::txn::TxBuild;
use kvapi::Result;
use kvapi::sync;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

const CORE: &str = "the meta image";
const INFLIGHT: &str = "the in-flight large values";

/// What the core lock guards.
pub struct Core {
    heap: Heap,
    dirty: DirtyPages,
    /// Data extents freed by transactions (by their end) not yet recorded complete
    /// by a header write: they may not be reused before.
    pending_free: Vec<(u64, Extent)>,
}

/// A key's value as a lookup finds it.
pub enum Found {
    Missing,
    Value(Vec<u8>),
    /// A large value to read from the data file.
    Extent(Extent),
}

/// A lookup that did not read ([`Store::lookup_now`]).
pub enum Now {
    Found(Found),
    /// The record (at the location given) is on a page not resident.
    Miss(Miss, u64),
}

/// The record at location `l` of a page read after a miss, if it is still `key`'s
/// (an evicted page is clean: its record is the key's value as of the lookup; no
/// write to it was in flight, which would have held it resident). `None`: the key
/// moved or went while the page was read; look again.
pub fn found_in(page: &[u8], l: u64, key: &[u8]) -> Option<Found> {
    match record_in(page, l)? {
        (k, Stored::Inline(v)) if k == key => Some(Found::Value(v.to_vec())),
        (k, Stored::Extent(x)) if k == key => Some(Found::Extent(x)),
        _ => None,
    }
}

/// A scan between its halves ([`Store::range_now`], [`Store::range_end`]): the keys
/// with their values so far, and the records still to take from pages not resident
/// (sorted by page).
pub struct RangeScan {
    out: Vec<(Vec<u8>, Option<ScanValue>)>,
    missing: Vec<(usize, Miss, u64)>,
}

impl RangeScan {
    /// The pages to read, each once, in the order [`Store::range_end`] asks for them.
    pub fn pages(&self) -> Vec<Miss> {
        let mut p: Vec<Miss> = self.missing.iter().map(|&(_, m, _)| m).collect();
        p.dedup_by_key(|m| m.page);
        p
    }
}

/// A scanned key with its value, or the extent to read it from.
pub type ScanItem = (Vec<u8>, ScanValue);

/// A scanned value, or the extent to read it from.
pub type ScanValue = std::result::Result<Vec<u8>, Extent>;

pub struct Store {
    core: RwLock<Core>,
    /// Large values whose data write is in flight, by first block: reads see them
    /// here until the data file has them.
    inflight: Mutex<HashMap<u32, Arc<[u8]>>>,
    /// The close gate: [`CLOSED`], and below it the writers inside [`Store::enter`].
    gate: AtomicU64,
    /// The meta file and its path, where pages not resident are read.
    backing: Option<Backing>,
    /// Aligned page buffers for the reads of misses, reused (see [`PageRead`]).
    read_bufs: Mutex<Vec<AlignedBuf>>,
    stats: Arc<Stats>,
}

/// The most page buffers kept for the reads of misses: as many as requests may be in
/// flight at once through one engine (more are allocated and freed when needed).
const KEEP_READ_BUFS: usize = 64;

/// A page read after a miss, in a buffer borrowed from the store's pool (an aligned
/// page: the O_DIRECT read lands in it directly) and given back when dropped.
pub struct PageRead<'a> {
    buf: AlignedBuf,
    pool: &'a Mutex<Vec<AlignedBuf>>,
}

impl std::ops::Deref for PageRead<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf
    }
}

impl std::ops::DerefMut for PageRead<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

impl Drop for PageRead<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.pool.lock()
            && p.len() < KEEP_READ_BUFS
        {
            p.push(std::mem::take(&mut self.buf));
        }
    }
}

/// The gate's bit for a closed engine.
const CLOSED: u64 = 1 << 63;

/// A writer inside the close gate: `close` waits until it is dropped.
pub struct Entered<'a>(&'a AtomicU64);

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Store {
    /// The pool over a rebuilt heap whose pages `dirty` the meta file lacks.
    pub fn new(heap: Heap, dirty: DirtyPages, stats: Arc<Stats>) -> Store {
        let backing = heap.image().backing().cloned();
        Store {
            backing,
            read_bufs: Mutex::new(Vec::new()),
            stats,
            core: RwLock::new(Core {
                heap,
                dirty,
                pending_free: Vec::new(),
            }),
            inflight: Mutex::new(HashMap::new()),
            gate: AtomicU64::new(0),
        }
    }

    pub fn read(&self) -> Result<RwLockReadGuard<'_, Core>> {
        sync::read(&self.core, CORE)
    }

    pub fn write(&self) -> Result<RwLockWriteGuard<'_, Core>> {
        sync::write(&self.core, CORE)
    }

    /// Marks the engine closed; true if it was already. Writers inside the gate
    /// go on: [`Store::wait_writers`] waits for them.
    pub fn close(&self) -> bool {
        self.gate.fetch_or(CLOSED, Ordering::AcqRel) & CLOSED != 0
    }

    pub fn is_closed(&self) -> bool {
        self.gate.load(Ordering::Acquire) & CLOSED != 0
    }

    /// A writer passes the closed check and stays inside the gate until the guard
    /// drops (when its transaction is reserved, or it gave up). `Closed` once the
    /// engine is closed. One counter serves both, so a writer either entered before
    /// the close (and is waited for) or sees it.
    pub fn enter(&self) -> Result<Entered<'_>> {
        if self.gate.fetch_add(1, Ordering::AcqRel) & CLOSED != 0 {
            self.gate.fetch_sub(1, Ordering::AcqRel);
            return Err(kvapi::Error::Closed);
        }
        Ok(Entered(&self.gate))
    }

    /// After [`Store::close`]: waits until no writer is inside the gate, so every
    /// transaction a writer will reserve is reserved (none is queued after the
    /// committer stopped, where no thread would write it and its writer would wait
    /// for ever). A writer inside waits at most for log space, which the
    /// checkpointer (still running) frees, or fails.
    pub fn wait_writers(&self) {
        while self.gate.load(Ordering::Acquire) & !CLOSED != 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Publishes a large value whose data write is about to run (with the core lock
    /// held, before the record pointing at it is visible).
    pub fn start_inflight(&self, start: u32, v: &[u8]) -> Result<()> {
        kvapi::sync::lock(&self.inflight, INFLIGHT)?.insert(start, v.into());
        Ok(())
    }

    /// The data write of the value at `start` is over.
    pub fn end_inflight(&self, start: u32) -> Result<()> {
        kvapi::sync::lock(&self.inflight, INFLIGHT)?.remove(&start);
        Ok(())
    }

    /// Looks `key` up under the core read lock: an inline or in-flight value is
    /// copied, a large one is named by its extent. A record whose page is not
    /// resident is read from the meta file outside the lock: the page is installed,
    /// and the record taken from the bytes read if it is still the key's (else the
    /// key is looked up again: it moved or went while the page was read).
    pub fn lookup(&self, key: &[u8]) -> Result<Found> {
        loop {
            match self.lookup_now(key)? {
                Now::Found(f) => return Ok(f),
                Now::Miss(m, l) => {
                    if let Some(f) = self.fetch(m)?.and_then(|b| found_in(&b, l, key)) {
                        return Ok(f);
                    }
                }
            }
        }
    }

    /// [`Store::lookup`] without reading: the key's value or extent, or the page
    /// to read first (then [`found_in`] on its bytes, or look again).
    pub fn lookup_now(&self, key: &[u8]) -> Result<Now> {
        let core = self.read()?;
        let found = core.heap.get(key);
        match found {
            Lookup::Miss(..) => self.stats.add(Stat::ReadMisses, 1),
            Lookup::Found(_) => self.stats.add(Stat::ReadHits, 1),
            Lookup::Missing => {}
        }
        Ok(match found {
            Lookup::Missing => Now::Found(Found::Missing),
            Lookup::Found(Stored::Inline(v)) => Now::Found(Found::Value(v.to_vec())),
            Lookup::Found(Stored::Extent(x)) => Now::Found(
                match kvapi::sync::lock(&self.inflight, INFLIGHT)?.get(&x.start) {
                    Some(v) => Found::Value(v.to_vec()),
                    None => Found::Extent(x),
                },
            ),
            Lookup::Miss(m, l) => Now::Miss(m, l),
        })
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Whether the meta file backs the image (pages may then be evicted and read).
    pub fn backing(&self) -> Option<&Backing> {
        self.backing.as_ref()
    }

    /// Reads the page of `m` from the meta file (no lock held) and installs it;
    /// returns its bytes, or `None` when they cannot be used (a read that overlapped
    /// a checkpoint's write of the page, which changed or became resident meanwhile:
    /// look again). A page failing its CRC with nothing changed is corruption.
    pub fn fetch(&self, m: Miss) -> Result<Option<PageRead<'_>>> {
        let Some(backing) = self.backing.as_ref() else {
            return Err(kvapi::Error::Engine(
                "a meta page is not resident and the image has no meta file".into(),
            ));
        };
        let mut page = self.page_buf()?;
        let ok = Image::read_page(backing, m.page, &mut page.buf)
            .map_err(|e| kvapi::Error::io(format!("reading meta page {}", m.page), e))?;
        self.loaded(m, page, ok)
    }

    /// A page buffer for the read of a miss, from the store's pool.
    pub fn page_buf(&self) -> Result<PageRead<'_>> {
        let mut page = PageRead {
            buf: sync::lock(&self.read_bufs, "the page read buffers")?
                .pop()
                .unwrap_or_default(),
            pool: &self.read_bufs,
        };
        page.buf.set_len(BLOCK);
        Ok(page)
    }

    /// The page of `m` was read into `page` (`crc_ok`: its CRC matched, and the
    /// field is zeroed): installs it, as [`Store::fetch`] says.
    pub fn loaded<'a>(
        &'a self,
        m: Miss,
        page: PageRead<'a>,
        crc_ok: bool,
    ) -> Result<Option<PageRead<'a>>> {
        self.stats.add(Stat::BytesRead, BLOCK as u64);
        self.stats.add(Stat::Reads, 1);
        let mut core = self.write()?;
        match crc_ok {
            true => match core.heap.install(m, &page) {
                Installed::Yes => Ok(Some(page)),
                Installed::Stale => Ok(None),
            },
            false if core.heap.image().needs_read(m.page) == Some(m) => {
                Err(kvapi::Error::Corruption {
                    file: self
                        .backing
                        .as_ref()
                        .map(|b| b.path.clone())
                        .unwrap_or_default(),
                    offset: m.page as u64 * BLOCK as u64,
                    detail: format!("meta page {} fails its checksum", m.page),
                })
            }
            false => Ok(None),
        }
    }

    /// A scan's first half: up to `count` keys from `start`, and the records of
    /// resident pages (values copied, or extents), under the read lock;
    /// [`RangeScan::pages`] are the pages to read, each once, and
    /// [`Store::range_end`] takes the other records from them (a record used only if
    /// it is still its key's; otherwise the key is looked up again). So a scan
    /// longer than the cache needs no page to stay resident.
    pub fn range_now(&self, start: &[u8], count: usize) -> Result<RangeScan> {
        // each key with its value, extent, or nothing yet (its page to be read)
        let mut out: Vec<(Vec<u8>, Option<ScanValue>)> = Vec::new();
        let mut missing: Vec<(usize, Miss, u64)> = Vec::new();
        {
            let core = self.read()?;
            let inflight = kvapi::sync::lock(&self.inflight, INFLIGHT)?;
            for (k, l, rec) in core.heap.range(start, count) {
                let v = match rec {
                    Ok(Stored::Inline(x)) => Some(Ok(x.to_vec())),
                    Ok(Stored::Extent(x)) => Some(match inflight.get(&x.start) {
                        Some(v) => Ok(v.to_vec()),
                        None => Err(x),
                    }),
                    Err(m) => {
                        missing.push((out.len(), m, l));
                        None
                    }
                };
                out.push((k.to_vec(), v));
            }
        }
        self.stats.add(Stat::ReadMisses, missing.len() as u64);
        self.stats
            .add(Stat::ReadHits, (out.len() - missing.len()) as u64);
        missing.sort_by_key(|&(at, m, _)| (m.page, at));
        Ok(RangeScan { out, missing })
    }

    /// A scan's second half (see [`Store::range_now`]): the records of the pages not resident,
    /// from `page` (called once for each of [`RangeScan::pages`], in that order).
    pub fn range_end<'a>(
        &'a self,
        r: RangeScan,
        mut page: impl FnMut(Miss) -> Result<Option<PageRead<'a>>>,
    ) -> Result<Vec<ScanItem>> {
        let RangeScan { mut out, missing } = r;
        let mut i = 0;
        while i < missing.len() {
            let m = missing[i].1;
            let bytes = page(m)?;
            while i < missing.len() && missing[i].1.page == m.page {
                let (at, _, l) = missing[i];
                let key = &out[at].0;
                out[at].1 = match bytes.as_deref().and_then(|b| found_in(b, l, key)) {
                    Some(Found::Value(v)) => Some(Ok(v)),
                    Some(Found::Extent(x)) => Some(Err(x)),
                    _ => match self.lookup(key)? {
                        Found::Missing => None,
                        Found::Value(v) => Some(Ok(v)),
                        Found::Extent(x) => Some(Err(x)),
                    },
                };
                i += 1;
            }
        }
        Ok(out
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect())
    }

    /// Before a writer takes the core write lock: reads the pages its change will
    /// need (`rec`: a put's record bytes; `None`: a delete) that are not resident, so
    /// that [`Heap::prepare`] under the lock rarely reads.
    pub fn prefetch(&self, key: &[u8], rec: Option<usize>) -> Result<()> {
        if self.backing.is_none() {
            return Ok(());
        }
        let misses = self.read()?.heap.misses_for(key, rec);
        for m in misses {
            self.fetch(m)?;
        }
        Ok(())
    }
}

impl Core {
    pub fn heap(&self) -> &Heap {
        &self.heap
    }

    /// The heap, to apply a transaction's changes.
    pub fn heap_mut(&mut self) -> &mut Heap {
        &mut self.heap
    }

    /// A transaction ending at `end` was reserved: its pages are dirty from now on,
    /// and the extent of a large value it replaced or deleted is freed once a header
    /// records it complete.
    pub fn logged(&mut self, tb: &TxBuild, end: u64, freed: Option<Extent>) {
        self.dirty.touch(&tb.pages, end);
        if let Some(x) = freed {
            self.pending_free.push((end, x));
        }
    }

    /// The pages a checkpoint starting now must write (see
    /// [`DirtyPages::take_list`]).
    pub fn take_dirty(&mut self) -> Vec<u32> {
        self.dirty.take_list()
    }

    /// Copies a slice of a checkpoint's pages into `c`; returns the end of the newest
    /// transaction they hold (see [`DirtyPages::copy`]).
    pub fn copy_dirty(&mut self, pages: &[u32], c: &mut PageCopies) -> u64 {
        self.dirty.copy(self.heap.image(), pages, c)
    }

    /// A checkpoint wrote and synced these pages at these versions: each page is
    /// clean unless changed since, and may be evicted.
    pub fn flushed(&mut self, done: &[(u32, u64)]) {
        let image = self.heap.image_mut();
        for &(p, v) in done {
            image.flushed(p, v);
        }
    }

    /// A checkpoint is over: `list` is its list, given back for the next one's
    /// memory; `held` the bytes the checkpoint's buffers hold (counted against the
    /// cache).
    pub fn checkpointed(&mut self, list: Vec<u32>, held: u64) {
        self.dirty.give_back(list);
        self.heap.set_copies_held(held);
    }

    /// Data extents freed by transactions ending at or before `commit` may now be
    /// reused.
    pub fn release_frees(&mut self, commit: u64) {
        let Core {
            heap, pending_free, ..
        } = self;
        pending_free.retain(|(end, x)| {
            if *end <= commit {
                heap.free_extent(x);
                false
            } else {
                true
            }
        });
    }
}
