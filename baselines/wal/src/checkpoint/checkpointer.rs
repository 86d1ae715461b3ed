//! The checkpoint: write the dirty image pages back to the meta file, then the WAL
//! header with the new checkpoint id, and only then give the log space before it
//! back (reclaiming before the header write was a real DAOS bug, fixed in 2025).
//! Also the header write without a checkpoint, and the background thread that runs
//! checkpoints every `checkpoint_ms`, when the log passes `checkpoint_pct`, or when a
//! writer waits for log space. Steps: baselines/wal/DESIGN.md, "Checkpoint".

use crate::checkpoint::{PageCopies, SLICE, sort_list};
use crate::files::{MetaFile, WalFile};
use crate::format::{WalHeader, id_of};
use crate::log::Log;
use crate::stats::{Stat, Stats};
use crate::store::{Core, Store};
use kvapi::sync::wait_timeout_handoff;
use kvapi::sync::{lock, lock_handoff};
use kvapi::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What the background thread is asked to do.
#[derive(Default)]
struct Request {
    checkpoint: bool,
    stop: bool,
}

pub struct Checkpointer {
    log: Arc<Log>,
    store: Arc<Store>,
    wal: Arc<WalFile>,
    meta: Arc<MetaFile>,
    stats: Arc<Stats>,
    pool_id: u32,
    period: Duration,
    /// The header as last written. Held for a whole checkpoint or header write:
    /// it serialises them. (A checkpoint rewrites it with `ckpt_pending` set before
    /// it writes meta pages.)
    header: Mutex<WalHeader>,
    /// A hand-off slot of two flags (asked, stop): taken over if poisoned.
    request: Mutex<Request>,
    asked: Condvar,
    /// Set when a checkpoint failed for want of space on the device.
    out_of_space: AtomicBool,
    /// The copy buffer of one slice, kept from one checkpoint to the next.
    slice: Mutex<PageCopies>,
}

impl Checkpointer {
    /// `header` is the WAL header as it is on disk now.
    #[expect(
        clippy::too_many_arguments,
        reason = "the checkpoint's parts, once at open"
    )]
    pub fn new(
        log: Arc<Log>,
        store: Arc<Store>,
        wal: Arc<WalFile>,
        meta: Arc<MetaFile>,
        stats: Arc<Stats>,
        pool_id: u32,
        period: Duration,
        header: WalHeader,
    ) -> Checkpointer {
        Checkpointer {
            log,
            store,
            wal,
            meta,
            stats,
            pool_id,
            period,
            header: Mutex::new(header),
            request: Mutex::new(Request::default()),
            asked: Condvar::new(),
            out_of_space: AtomicBool::new(false),
            slice: Mutex::new(PageCopies::default()),
        }
    }

    /// Whether a checkpoint failed because the device is full: the meta file could
    /// not grow (the WAL is written whole at creation and never needs space).
    pub fn out_of_space(&self) -> bool {
        self.out_of_space.load(Ordering::SeqCst)
    }

    /// The engine's poisoning for a failed meta write or sync: a full device says so,
    /// and what it means.
    fn meta_failed(&self, what: &str, e: &std::io::Error) -> Error {
        if matches!(
            e.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        ) {
            self.out_of_space.store(true, Ordering::SeqCst);
            return self.log.poison(format!(
                "{what} failed: {e}: the device has no space for the checkpoint's meta \
                 pages; writes are refused until the engine is reopened with free space \
                 (everything acknowledged is in the WAL)"
            ));
        }
        self.log.poison(format!("{what} failed: {e}"))
    }

    /// Asks the background thread for a checkpoint.
    pub fn request(&self) {
        let mut r = lock_handoff(&self.request);
        r.checkpoint = true;
        self.asked.notify_all();
    }

    /// Stops the background thread.
    pub fn stop(&self) {
        let mut r = lock_handoff(&self.request);
        r.stop = true;
        self.asked.notify_all();
    }

    /// A checkpoint: take the list of dirty pages and the log's head `r` (under
    /// the core lock); say in the header that meta pages are being written; then,
    /// one slice of [`SLICE`] pages at a time, copy them (under the core lock, held
    /// for that slice's copy alone, so writers and readers go on between slices),
    /// wait until the log is complete up to the newest transaction the copies hold,
    /// and write them (up to 64 writes in flight); sync the meta file, write the WAL
    /// header with checkpoint id `r`, and only then give the log space before `r`
    /// back. A slice copied after `r` may hold changes of transactions after `r`:
    /// they are complete when it is written, and replay from `r` applies them again
    /// over it, which gives the same bytes (every redo entry sets bytes, none adds to
    /// them). Without `force`, a checkpoint with nothing to do writes nothing.
    pub fn run(&self, force: bool) -> Result<()> {
        let mut last = lock(&self.header, "the WAL header")?;
        self.log.check()?;
        let (r, mut list) = self.with_core(|core| (self.log.head(), core.take_dirty()))?;
        let r = r?;
        sort_list(&mut list);
        let mut slice = lock(&self.slice, "the checkpoint's copy buffer")?;
        let tail = self.log.tail()?;
        if !force && list.is_empty() && r == tail {
            let held = slice.held();
            self.with_core(|core| core.checkpointed(list, held))?;
            return Ok(());
        }
        self.log.wait_complete(r)?;
        if !list.is_empty() {
            // Say that meta pages are being rewritten: only then may open accept a
            // meta page that fails its CRC (torn by a crash) and let replay repair it.
            let mut h = *last;
            h.ckpt_pending = true;
            *last = self.put_header(&h)?;
        }
        let mut done: Vec<(u32, u64)> = Vec::with_capacity(list.len());
        let mut bytes = 0;
        for pages in list.chunks(SLICE) {
            let newest = self.with_core(|core| core.copy_dirty(pages, &mut slice))?;
            // the meta file never holds a change whose transaction is not complete
            self.log.wait_complete(newest.max(r))?;
            bytes += match self.meta.write_pages(&slice) {
                Ok(b) => b,
                Err(e) => return Err(self.meta_failed("meta write", &e)),
            };
            done.extend(
                slice
                    .pages
                    .iter()
                    .copied()
                    .zip(slice.versions.iter().copied()),
            );
        }
        if let Err(e) = self.meta.sync() {
            return Err(self.meta_failed("meta sync", &e));
        }
        // the meta file holds these versions now: unchanged pages are clean, and may
        // be evicted (read back, they are what the memory held)
        // in slices too: marking tens of thousands of pages clean is a pause of
        // its own (about 0.1 us a page)
        for d in done.chunks(SLICE) {
            self.with_core(|core| core.flushed(d))?;
        }
        let held = slice.held();
        self.with_core(|core| core.checkpointed(list, held))?;
        self.stats.set(Stat::CheckpointCopyBytes, slice.held());
        self.stats.add(Stat::CheckpointBytes, bytes);
        let commit = self.log.complete()?;
        *last = self.write_header(r, commit)?;
        self.log.reclaim(r)?;
        self.with_core(|core| core.release_frees(commit))?;
        self.stats.add(Stat::Checkpoints, 1);
        Ok(())
    }

    /// Runs `f` under the core write lock, which writers and readers wait for:
    /// the longest hold is the checkpoint's pause (`checkpoint_max_hold_us`).
    fn with_core<R>(&self, f: impl FnOnce(&mut Core) -> R) -> Result<R> {
        let mut core = self.store.write()?;
        let t0 = Instant::now();
        let r = f(&mut core);
        drop(core);
        self.stats.max_us_since(Stat::CheckpointMaxHoldUs, t0);
        Ok(r)
    }

    /// Writes the WAL header with the current commit id, without a checkpoint: the
    /// data extents freed before it become reusable.
    pub fn flush_header(&self) -> Result<()> {
        let mut last = lock(&self.header, "the WAL header")?;
        if self.store.is_closed() {
            return Err(Error::Closed);
        }
        self.log.check()?;
        let (tail, commit) = self.log.tail_and_complete()?;
        *last = self.write_header(tail, commit)?;
        self.store.write()?.release_frees(commit);
        Ok(())
    }

    /// Writes the header with checkpoint position `ckpt` and commit position
    /// `commit`; returns it.
    fn write_header(&self, ckpt: u64, commit: u64) -> Result<WalHeader> {
        let units = self.log.units();
        let h = WalHeader {
            pool_id: self.pool_id,
            generation: self.log.generation(),
            log_blocks: self.log.blocks() as u32,
            ckpt_id: id_of(ckpt, units),
            commit_id: id_of(commit, units),
            ckpt_pending: false,
            seq: 0, // set by the write
        };
        self.put_header(&h)
    }

    fn put_header(&self, h: &WalHeader) -> Result<WalHeader> {
        self.wal
            .write_header(h)
            .map_err(|e| self.log.poison(format!("WAL header write failed: {e}")))
    }

    /// The background thread: a checkpoint every `checkpoint_ms` or when asked,
    /// until stopped. A failed checkpoint (a failed write, or a lock poisoned by a
    /// panic) is recorded as the engine's poisoning and ends the thread.
    pub fn background(&self) {
        let mut last = Instant::now();
        loop {
            {
                let mut r = lock_handoff(&self.request);
                loop {
                    if r.stop {
                        return;
                    }
                    if r.checkpoint || last.elapsed() >= self.period {
                        break;
                    }
                    let left = self.period.saturating_sub(last.elapsed());
                    r = wait_timeout_handoff(&self.asked, r, left);
                }
                r.checkpoint = false;
            }
            last = Instant::now();
            if let Err(e) = self.run(false) {
                self.log.record(e);
                return;
            }
        }
    }
}
