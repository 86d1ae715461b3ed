//! The write path (DESIGN.md, "Write path, step by step"): check, admission (the
//! back-pressure), apply the change to the image under the core write lock while
//! recording its redo entries, reserve the transaction's id and queue it for the
//! committer, write a large value's data (before the record above `data_first`, in
//! parallel with it below), then wait until the transaction is complete. The pages a
//! change needs are read before the write lock (`Store::prefetch`) and made resident
//! under it (`Heap::prepare`) before anything is applied; while dirty pages fill more
//! than a quarter of the page cache, writers wait for a checkpoint first. Under a memory
//! budget (`wal.memory`) a new key whose index entry would leave the page cache less
//! than its least is refused with `Error::OverBudget` before anything is applied.

use crate::checkpoint::Checkpointer;
use crate::config::{Config, OVER_BUDGET, limits};
use crate::extent::Extent;
use crate::files::DataFile;
use crate::format::BLOCK;
use crate::heap::PageError;
use crate::image::{MAX_RECORD, Miss, REC_INLINE_HDR, Stored, record_len};
use crate::log::Log;
use crate::stats::{Stat, Stats};
use crate::store::{Core, Store};
use crate::txn::{TxBuild, blocks_for};
use kvapi::{Error, Result};
use std::sync::Arc;

/// A change to one key.
pub enum Op<'a> {
    Put(&'a [u8]),
    Delete,
}

impl<'a> Op<'a> {
    fn value(&self) -> &'a [u8] {
        match self {
            Op::Put(v) => v,
            Op::Delete => &[],
        }
    }
}

/// A transaction applied and reserved.
pub struct Begun {
    pub start: u64,
    pub end: u64,
    /// A large value whose data the caller writes in parallel with the WAL record
    /// (then clears the transaction's `data_pending`).
    pub parallel: Option<Extent>,
}

/// What the writers share.
#[derive(Clone)]
pub struct Writer {
    store: Arc<Store>,
    log: Arc<Log>,
    data: Arc<DataFile>,
    checkpointer: Arc<Checkpointer>,
    stats: Arc<Stats>,
    /// Values of this many bytes or more go to the data file.
    large_value: usize,
    /// Large values above this many bytes are written before the WAL record.
    data_first: usize,
    /// The meta file, named in errors about its pages.
    meta_path: std::path::PathBuf,
    /// Whether the page cache is bounded (`wal.memory` or `wal.cache`): then writers
    /// wait while dirty pages fill a quarter of it.
    bounded: bool,
    /// A checkpoint is asked for when dirty pages pass this percentage of the
    /// dirty limit (`wal.checkpoint_dirty_pct`).
    early_pct: u64,
    /// Test hook: runs after each admission, before the change is applied.
    #[cfg(test)]
    pub(crate) after_admit: Arc<std::sync::Mutex<Option<Hook>>>,
}

/// A test hook of the write path.
#[cfg(test)]
pub(crate) type Hook = Box<dyn Fn() + Send + Sync>;

/// Log blocks to admit a transaction writing a record of `rec` bytes for: at most
/// three pages change (superblock, old page, new page), in at most 12 entries.
fn need(rec: usize) -> u64 {
    blocks_for(12, rec + 64) as u64
}

impl Writer {
    /// The writers over these parts, with `cfg`'s large-value thresholds and
    /// memory budget.
    pub fn new(
        store: Arc<Store>,
        log: Arc<Log>,
        data: Arc<DataFile>,
        checkpointer: Arc<Checkpointer>,
        stats: Arc<Stats>,
        cfg: &Config,
    ) -> Writer {
        Writer {
            store,
            log,
            data,
            checkpointer,
            stats,
            large_value: cfg.large_value,
            data_first: cfg.data_first,
            meta_path: cfg.dir.join("meta"),
            bounded: cfg.memory.is_some() || cfg.cache > 0,
            early_pct: cfg.checkpoint_dirty_pct,
            #[cfg(test)]
            after_admit: Arc::default(),
        }
    }

    /// The data file (the native path's data writer writes to it).
    pub fn data(&self) -> &Arc<DataFile> {
        &self.data
    }

    /// Refuses a put of a new key whose index entry would leave the page cache less
    /// than its least under the memory budget (checked under the core write lock,
    /// before anything is applied).
    fn fits(&self, core: &Core, key: &[u8]) -> Result<()> {
        let heap = core.heap();
        if let Some((needed, budget)) = heap.fixed_fits(heap.index_growth(key)) {
            return Err(Error::OverBudget {
                what: OVER_BUDGET.into(),
                needed,
                budget,
            });
        }
        Ok(())
    }

    /// Waits while dirty pages fill more than a quarter of the page cache, asking for
    /// a checkpoint (which writes them and makes them evictable). Counted as an
    /// admission wait.
    fn wait_dirty(&self) -> Result<()> {
        if !self.bounded {
            return Ok(());
        }
        let mut waited: Option<std::time::Instant> = None;
        loop {
            let (dirty, limit) = {
                let core = self.store.read().map_err(|e| self.log.record(e))?;
                let h = core.heap();
                (
                    h.image().dirty_bytes() / BLOCK as u64,
                    h.dirty_limit() as u64,
                )
            };
            if dirty <= limit {
                // Past half the limit (`wal.checkpoint_dirty_pct`) a checkpoint
                // starts, so that it has written pages back before writers reach the
                // limit and wait (without this, YCSB A at 1M records and a third of
                // the data in memory had writers waiting up to 0.14 s for a
                // checkpoint begun only at the limit).
                match waited {
                    None if dirty * 100 > limit * self.early_pct => self.checkpointer.request(),
                    None => {}
                    Some(t0) => self.stats.max_us_since(Stat::AdmissionMaxWaitUs, t0),
                }
                return Ok(());
            }
            self.log.check()?;
            if waited.is_none() {
                waited = Some(std::time::Instant::now());
                self.stats.add(Stat::AdmissionWaits, 1);
            }
            self.checkpointer.request();
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
    }

    /// Makes the pages of a change resident under the write lock; nothing is
    /// applied yet, so a failure is this write's error only.
    fn prepare(&self, core: &mut Core, key: &[u8], rec: Option<usize>) -> Result<()> {
        core.heap_mut()
            .prepare(key, rec)
            .map_err(|e| page_error(&self.meta_path, e))
    }

    /// An error met before anything was applied: a poisoned lock (a panic while it
    /// was held) is the engine's poisoning; a page that could not be read is this
    /// write's error only.
    fn lock_err(&self, e: Error) -> Error {
        if matches!(e, Error::Poisoned(_)) {
            self.log.record(e)
        } else {
            e
        }
    }

    /// A change failed half-way (a page missing under the lock, which `prepare`
    /// rules out): the image may be changed without a log record, so the engine is
    /// poisoned.
    fn half_applied(&self, e: PageError) -> Error {
        self.log
            .poison(format!("a change failed after it began: {e}"))
    }

    /// The blocking write: begin it, write a large value's data while the committer
    /// writes the WAL record, wait until it is complete.
    pub fn write(&self, key: &[u8], op: Op) -> Result<()> {
        let b = self.begin(key, &op, false)?;
        if let Some(x) = b.parallel {
            // The data write runs while the committer writes the WAL record.
            let r = self.data.write(&x, op.value());
            let ended = self.store.end_inflight(x.start);
            if let Err(e) = r {
                return Err(self.log.poison(format!("data write failed: {e}")));
            }
            ended.map_err(|e| self.log.record(e))?;
            self.log.data_written(b.start)?;
        }
        self.log.wait_complete(b.end)
    }

    /// Checks, admits, applies and reserves a write. With `force_data_first`, every
    /// large value is written before the record. The delete of a missing key logs
    /// nothing, but is complete only with every transaction reserved before it: the
    /// key may be missing because of a delete not yet durable, and acknowledging
    /// the second delete at once would promise what a crash can still undo (the
    /// durability audit found that: a key back at its value from before both).
    pub fn begin(&self, key: &[u8], op: &Op, force_data_first: bool) -> Result<Begun> {
        // inside the close gate until the transaction is reserved: close waits
        let _entered = self.store.enter()?;
        self.log.check()?;
        let limits = limits();
        match *op {
            Op::Put(v) => limits.check_put(key, v)?,
            Op::Delete => limits.check_key(key)?,
        }
        self.wait_dirty()?;
        let b = match *op {
            Op::Delete => {
                let need = need(0);
                self.store
                    .prefetch(key, None)
                    .map_err(|e| self.lock_err(e))?;
                self.admit(need)?;
                let mut core = self.core()?;
                if let Err(e) = self.prepare(&mut core, key, None) {
                    drop(core);
                    self.log.unadmit(need)?;
                    return Err(e);
                }
                let mut tb = TxBuild::default();
                let (existed, ext) = core
                    .heap_mut()
                    .delete(&mut tb, key)
                    .map_err(|e| self.half_applied(e))?;
                if !existed {
                    let head = self.log.head()?;
                    drop(core);
                    self.log.unadmit(need)?;
                    return Ok(Begun {
                        start: head,
                        end: head,
                        parallel: None,
                    });
                }
                self.reserve(&mut core, &tb, need, false, ext)?
            }
            Op::Put(v) => {
                self.stats
                    .add(Stat::UserBytes, (key.len() + v.len()) as u64);
                if self.inline(key, v) {
                    let rec = record_len(key.len(), &Stored::Inline(v));
                    let need = need(rec);
                    self.store
                        .prefetch(key, Some(rec))
                        .map_err(|e| self.lock_err(e))?;
                    self.admit(need)?;
                    let mut core = self.core()?;
                    let ready = self
                        .fits(&core, key)
                        .and_then(|()| self.prepare(&mut core, key, Some(rec)));
                    if let Err(e) = ready {
                        drop(core);
                        self.log.unadmit(need)?;
                        return Err(e);
                    }
                    let mut tb = TxBuild::default();
                    let old = core
                        .heap_mut()
                        .put(&mut tb, key, &Stored::Inline(v))
                        .map_err(|e| self.half_applied(e))?;
                    self.reserve(&mut core, &tb, need, false, old)?
                } else {
                    self.begin_large(key, v, force_data_first)?
                }
            }
        };
        Ok(b)
    }

    /// The pages `op` on `key` will change that are not resident (none without a
    /// meta file), found without reading: the native asynchronous path has the
    /// miss loader read them before it calls [`Writer::begin`], whose own reads
    /// (`Store::prefetch`) then find them resident unless evicted in between.
    pub fn misses(&self, key: &[u8], op: &Op) -> Result<Vec<Miss>> {
        if self.store.backing().is_none() {
            return Ok(Vec::new());
        }
        let rec = match *op {
            Op::Delete => None,
            Op::Put(v) if self.inline(key, v) => Some(record_len(key.len(), &Stored::Inline(v))),
            Op::Put(v) => Some(record_len(
                key.len(),
                &Stored::Extent(Extent {
                    start: 0,
                    blocks: v.len().div_ceil(BLOCK).max(1) as u32,
                    len: v.len() as u32,
                    crc: 0,
                }),
            )),
        };
        Ok(self.store.read()?.heap().misses_for(key, rec))
    }

    /// Whether `v` under `key` is stored in its record (else in the data file): what
    /// `begin` does and what `misses` predicts must agree.
    fn inline(&self, key: &[u8], v: &[u8]) -> bool {
        v.len() < self.large_value && REC_INLINE_HDR + key.len() + v.len() <= MAX_RECORD
    }

    /// A value that goes to the data file: written first (and synced) above
    /// `data_first`, else published in the in-flight map and written by the caller
    /// in parallel with the WAL record.
    fn begin_large(&self, key: &[u8], v: &[u8], force_data_first: bool) -> Result<Begun> {
        if !(force_data_first || v.len() > self.data_first) {
            return self.begin_extent(key, v, None);
        }
        // Data first: write and sync it, then log the record.
        let x = self.alloc_large(key, v)?;
        if let Err(e) = self.data.write(&x, v) {
            self.free_large(&x)?;
            return Err(self.log.poison(format!("data write failed: {e}")));
        }
        self.begin_extent(key, v, Some(x))
    }

    /// Whether a put of `v` under `key` writes its value to the data file before its
    /// transaction (a large value above `data_first`): the native path then writes
    /// it through its data ring ([`Writer::alloc_large`]) and begins the transaction
    /// with [`Writer::begin_written`] once it is durable.
    pub fn data_first(&self, key: &[u8], v: &[u8]) -> bool {
        !self.inline(key, v) && v.len() > self.data_first
    }

    /// The extent the large value `v` of a put of `key`, written before its
    /// transaction, will take (inside the close gate, refused when closed or
    /// poisoned, and after the put's checks, so that nothing is written for a write
    /// that will be refused).
    pub fn alloc_large(&self, key: &[u8], v: &[u8]) -> Result<Extent> {
        let _entered = self.store.enter()?;
        self.log.check()?;
        limits().check_put(key, v)?;
        let blocks = v.len().div_ceil(BLOCK).max(1) as u32;
        let crc = crc32fast::hash(v);
        let start = self.core()?.heap_mut().alloc_extent(blocks);
        Ok(Extent {
            start,
            blocks,
            len: v.len() as u32,
            crc,
        })
    }

    /// An extent from [`Writer::alloc_large`] that no transaction will point at
    /// (its write failed, or the write was refused after it): free again.
    pub fn free_large(&self, x: &Extent) -> Result<()> {
        self.core()?.heap_mut().free_extent(x);
        Ok(())
    }

    /// [`Writer::begin`] for a put whose value is already durable in extent `x` of
    /// the data file (from [`Writer::alloc_large`]); on an error `x` is free again.
    pub fn begin_written(&self, key: &[u8], v: &[u8], x: Extent) -> Result<Begun> {
        let _entered = match self.store.enter() {
            Ok(g) => g,
            Err(e) => {
                self.free_large(&x)?;
                return Err(e);
            }
        };
        if let Err(e) = self.log.check().and_then(|()| self.wait_dirty()) {
            self.free_large(&x)?;
            return Err(e);
        }
        self.stats
            .add(Stat::UserBytes, (key.len() + v.len()) as u64);
        self.begin_extent(key, v, Some(x))
    }

    /// The transaction of a large value: its record points at extent `pre`, whose
    /// data is written already, or (without one) at a new extent whose data the
    /// caller writes in parallel with the WAL record (published in the in-flight
    /// map until then). On an error `pre` is free again.
    fn begin_extent(&self, key: &[u8], v: &[u8], pre: Option<Extent>) -> Result<Begun> {
        let blocks = v.len().div_ceil(BLOCK).max(1) as u32;
        let crc = pre.map_or_else(|| crc32fast::hash(v), |x| x.crc);
        let need = need(record_len(key.len(), &Stored::Inline(&[])) + 24);
        // the record the image will hold: the key and the extent
        let rec = record_len(
            key.len(),
            &Stored::Extent(Extent {
                start: 0,
                blocks,
                len: v.len() as u32,
                crc,
            }),
        );
        if let Err(e) = self
            .store
            .prefetch(key, Some(rec))
            .map_err(|e| self.lock_err(e))
            .and_then(|()| self.admit(need))
        {
            if let Some(x) = pre {
                self.free_large(&x)?;
            }
            return Err(e);
        }
        let mut core = self.core()?;
        let ready = self
            .fits(&core, key)
            .and_then(|()| self.prepare(&mut core, key, Some(rec)));
        if let Err(e) = ready {
            // Nothing points at the data written first: its blocks are free again.
            if let Some(x) = pre {
                core.heap_mut().free_extent(&x);
            }
            drop(core);
            self.log.unadmit(need)?;
            return Err(e);
        }
        let x = match pre {
            Some(x) => x,
            None => {
                let x = Extent {
                    start: core.heap_mut().alloc_extent(blocks),
                    blocks,
                    len: v.len() as u32,
                    crc,
                };
                self.store
                    .start_inflight(x.start, v)
                    .map_err(|e| self.log.record(e))?;
                x
            }
        };
        let mut tb = TxBuild::default();
        core.heap_mut()
            .csum(&mut tb, &x)
            .map_err(|e| self.half_applied(e))?;
        let old = core
            .heap_mut()
            .put(&mut tb, key, &Stored::Extent(x))
            .map_err(|e| self.half_applied(e))?;
        let mut b = self.reserve(&mut core, &tb, need, pre.is_none(), old)?;
        b.parallel = pre.is_none().then_some(x);
        Ok(b)
    }

    /// The core write lock; a poisoned one poisons the engine.
    fn core(&self) -> Result<std::sync::RwLockWriteGuard<'_, Core>> {
        self.store.write().map_err(|e| self.log.record(e))
    }

    /// Admission; while this writer waits for log space, a checkpoint is asked for.
    fn admit(&self, need: u64) -> Result<()> {
        self.log.admit(need, || self.checkpointer.request())?;
        #[cfg(test)]
        if let Some(hook) = &*kvapi::sync::lock(&self.after_admit, "the test hook")? {
            hook();
        }
        Ok(())
    }

    /// Reserves the built transaction in the log (with the core lock held), marks
    /// its pages dirty and files the extent it freed.
    fn reserve(
        &self,
        core: &mut Core,
        tb: &TxBuild,
        admitted: u64,
        data_pending: bool,
        freed: Option<Extent>,
    ) -> Result<Begun> {
        let r = self
            .log
            .reserve(&tb.entries, &tb.payload, admitted, data_pending)?;
        core.logged(tb, r.end, freed);
        self.stats.add(Stat::Txns, 1);
        if r.over {
            self.checkpointer.request();
        }
        Ok(Begun {
            start: r.start,
            end: r.end,
            parallel: None,
        })
    }
}

/// A page that could not be made resident, as the interface's error.
pub fn page_error(meta: &std::path::Path, e: PageError) -> Error {
    match e {
        PageError::Io(p, e) => Error::io(format!("reading meta page {p}"), e),
        PageError::Checksum(p) => Error::Corruption {
            file: meta.to_path_buf(),
            offset: p as u64 * BLOCK as u64,
            detail: format!("meta page {p} fails its checksum"),
        },
        PageError::NotResident(p) => {
            Error::Engine(format!("meta page {p} was not loaded for a change"))
        }
    }
}
