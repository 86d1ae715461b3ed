//! The engine facade: open (the parts assembled, the open checkpoint, the threads
//! started), the [`Engine`] impl over the read and write paths, close and drop.
//!
//! The parts and who holds them: the [`Log`] (committer, completer, writers,
//! checkpointer), the [`Store`] (readers, writers, checkpointer), the three files
//! (the committer and the checkpointer the WAL, the checkpointer the meta file,
//! readers and writers the data file) and the [`Checkpointer`] (its thread, the
//! writers asking for checkpoints).

use crate::aio::{AsyncWal, completer};
use crate::checkpoint::Checkpointer;
use crate::commit::committer;
use crate::config::{Config, ENGINE_NAME, Mode, OVER_BUDGET, limits};
use crate::files::{DataFile, MetaFile, WalFile};
use crate::io::{FileVfs, Vfs};
use crate::log::Log;
use crate::open::open_files;
use crate::read::Reader;
use crate::stats::{Stat, Stats};
use crate::store::Store;
use crate::write::{Op, Writer};
use kvapi::sync::lock_handoff;
use kvapi::{Counters, DirLock, Durability, Engine, EngineInfo, Error, Pair, Result};
use std::io::ErrorKind;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The WAL engine. [`open_engine`](crate::open_engine) gives it as a `dyn Engine`;
/// tests use [`WalEngine::open_with`] to run it on a [`crate::MemVfs`].
pub struct WalEngine {
    cfg: Config,
    log: Arc<Log>,
    store: Arc<Store>,
    checkpointer: Arc<Checkpointer>,
    stats: Arc<Stats>,
    reader: Reader,
    writer: Writer,
    /// Why the last replay stopped, for the notes.
    replay_stop: String,
    /// Whether the files bypass the OS page cache (O_DIRECT).
    direct: bool,
    /// Why this open serves reads only: its checkpoint found no space on the device.
    read_only: Option<String>,
    /// Hand-off slots: the threads' join handles and the directory claim.
    threads: Mutex<Vec<JoinHandle<()>>>,
    lock: Mutex<Option<DirLock>>,
}

fn spawn(name: &str, what: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| Error::io(what, e))
}

impl WalEngine {
    /// Opens on real files in `cfg.dir`, claiming the directory.
    pub fn open(cfg: Config) -> Result<Arc<WalEngine>> {
        let lock = kvapi::claim_dir(&cfg.dir, ENGINE_NAME)?;
        let vfs = FileVfs::new(&cfg.dir);
        let e = WalEngine::open_with(&vfs, cfg)?;
        *lock_handoff(&e.lock) = Some(lock);
        Ok(e)
    }

    /// Opens on the files of `vfs` (no directory claim).
    pub fn open_with(vfs: &dyn Vfs, cfg: Config) -> Result<Arc<WalEngine>> {
        let t0 = Instant::now();
        let stats = Arc::new(Stats::default());
        let o = open_files(vfs, &cfg, &stats, t0)?;
        let direct_io = o.files.direct;
        // The index and page table live in memory whatever the cache: if they leave
        // the cache less than its least, the open is refused before anything is
        // written.
        if let Some((needed, budget)) = o.heap.fixed_fits(0) {
            return Err(Error::OverBudget {
                what: format!("{OVER_BUDGET}: the index replayed at open does not fit"),
                needed,
                budget,
            });
        }
        let n = o.header.log_blocks as u64;
        let sync = cfg.mode == Mode::Fdatasync;
        let wal = Arc::new(WalFile::new(
            o.files.wal,
            n,
            sync,
            stats.clone(),
            o.header.seq,
        ));
        let meta = Arc::new(MetaFile::new(o.files.meta, stats.clone(), cfg.uring));
        let data = Arc::new(DataFile::new(
            o.files.data,
            sync,
            cfg.dir.join("data"),
            stats.clone(),
        ));
        let log = Arc::new(Log::new(
            n,
            o.generation,
            o.head,
            o.tail,
            cfg.checkpoint_pct,
            // dsync (O_DSYNC files) and fdatasync both make a write durable before
            // it completes; none-process does not, so a power cut may keep a later
            // transaction and drop an earlier one, and a stamp would prove nothing.
            cfg.mode != Mode::NoneProcess,
            stats.clone(),
        ));
        let store = Arc::new(Store::new(o.heap, o.dirty, stats.clone()));
        let checkpointer = Arc::new(Checkpointer::new(
            log.clone(),
            store.clone(),
            wal.clone(),
            meta,
            stats.clone(),
            o.header.pool_id,
            Duration::from_millis(cfg.checkpoint_ms),
            o.header,
        ));
        // Checkpoint what replay changed and write the header with the new
        // generation before any new transaction: from here on, blocks left by earlier
        // opens can never pass for transactions of this one.
        // On a full device the checkpoint cannot grow the meta file: the engine then
        // opens for reads only (the log was not touched, so the next open replays
        // the same state; nothing acknowledged is lost) instead of refusing to open.
        let t3 = Instant::now();
        // Replay applied transactions whose large values it found in the data file,
        // maybe only in the page cache of a killed writer (never acknowledged, so
        // never synced): once the checkpoint below moves the header past them, a
        // power cut must not take those values back. The modes that promise power
        // sync the data file first (found by review: without it, a reopen after a
        // kill, then a power cut, left a replayed key unreadable).
        let synced = if cfg.mode == Mode::NoneProcess {
            Ok(())
        } else {
            data.sync()
        };
        let read_only = match synced {
            // as for the checkpoint below: reads only, and the next open, with space,
            // syncs and replays the same state
            Err(e) if matches!(e.kind(), ErrorKind::StorageFull | ErrorKind::QuotaExceeded) => {
                Some(
                    log.poison(format!(
                        "syncing the data file before the open checkpoint failed: {e}: the \
                         device has no space; writes are refused until the engine is \
                         reopened with free space (everything acknowledged is in the WAL)"
                    ))
                    .to_string(),
                )
            }
            Err(e) => {
                return Err(Error::io(
                    "syncing the data file before the open checkpoint",
                    e,
                ));
            }
            Ok(()) => match checkpointer.run(true) {
                Ok(()) => None,
                Err(e) if checkpointer.out_of_space() => Some(e.to_string()),
                Err(e) => return Err(e),
            },
        };
        stats.set_us_since(Stat::OpenCheckpointUs, t3);
        stats.set_us_since(Stat::ReplayUs, t0);
        let threads = vec![
            {
                let (log, wal, uring, depth) = (log.clone(), wal, cfg.uring, cfg.log_depth);
                spawn("wal-committer", "starting the committer", move || {
                    committer(&log, &wal, uring, depth)
                })?
            },
            {
                let c = checkpointer.clone();
                spawn("wal-checkpoint", "starting the checkpointer", move || {
                    c.background()
                })?
            },
            {
                let log = log.clone();
                spawn("wal-completer", "starting the completer", move || {
                    completer(&log)
                })?
            },
        ];
        let reader = Reader::new(store.clone(), data.clone());
        let writer = Writer::new(
            store.clone(),
            log.clone(),
            data,
            checkpointer.clone(),
            stats.clone(),
            &cfg,
        );
        Ok(Arc::new(WalEngine {
            cfg,
            log,
            store,
            checkpointer,
            stats,
            reader,
            writer,
            replay_stop: o.replay_stop,
            direct: direct_io,
            read_only,
            threads: Mutex::new(threads),
            lock: Mutex::new(None),
        }))
    }

    /// Runs a checkpoint now (tests, benchmarks).
    pub fn checkpoint_now(&self) -> Result<()> {
        self.checkpointer.run(false)
    }

    /// Writes the WAL header with the current commit id, without a checkpoint: the
    /// data extents freed before it become reusable.
    pub fn flush_header(&self) -> Result<()> {
        self.checkpointer.flush_header()
    }

    /// Drops every clean page from the page cache, as memory pressure would (tests,
    /// benchmarks): every later access to them reads the meta file.
    pub fn evict_clean_pages(&self) -> Result<()> {
        self.store.write()?.heap_mut().image_mut().evict_clean();
        Ok(())
    }

    /// Log blocks in use (between the checkpoint and the head), rounded up.
    pub fn log_used_blocks(&self) -> Result<u64> {
        Ok(self.log.used()?.div_ceil(crate::format::UNITS_PER_BLOCK))
    }

    fn stop_threads(&self) {
        self.log.stop();
        self.checkpointer.stop();
        for t in lock_handoff(&self.threads).drain(..) {
            let _ = t.join();
        }
    }
}

impl Engine for WalEngine {
    fn info(&self) -> EngineInfo {
        let cfg = &self.cfg;
        let (durability, setting) = match cfg.mode {
            Mode::Fdatasync => (
                Durability::Power,
                "WAL record fdatasync'ed before the ack (group commit: each batch written \
                 O_DIRECT, several in flight, acknowledged once a completed fdatasync \
                 covers it); large values fdatasync'ed too",
            ),
            Mode::Dsync => (
                Durability::Power,
                "WAL and data files written with O_DSYNC before the ack (group commit: one \
                 write per batch)",
            ),
            Mode::NoneProcess => (
                Durability::Process,
                "WAL record written (O_DIRECT, no sync) before the ack: survives a killed \
                 process, not a power loss",
            ),
        };
        let n = self.log.blocks();
        let held = self.store.read().map(|core| {
            let h = core.heap();
            (h.image_bytes(), h.index_bytes(), h.frame_limit())
        });
        let mut settings = cfg.settings.clone();
        settings.push(("log_blocks".into(), n.to_string()));
        settings.push(("durability_mode".into(), cfg.mode.name().into()));
        if let Some(m) = cfg.memory {
            settings.push((
                "memory_split".into(),
                format!(
                    "the budget ({m} bytes) holds the ordered index and the page table ({} \
                     bytes per meta page), always in memory, and a twelfth left for what the \
                     engine does not count (allocator overhead, I/O buffers, stacks); of the \
                     rest the page cache gets four fifths (at least {} pages) and the \
                     checkpoint copy buffers a fifth, the cache shrinking as the index grows; \
                     a write of a new key whose index entry would leave the cache less is \
                     refused (OVER_BUDGET)",
                    crate::image::TABLE_BYTES_PER_PAGE,
                    crate::image::MIN_FRAMES
                ),
            ));
        }
        let mut notes = vec![
            match cfg.memory {
                Some(m) => format!(
                    "the meta image (records and values under wal.large_value) is paged: \
                     pages are read from the meta file on a miss into a cache bounded by \
                     wal.memory ({m} bytes) less the index and page table; clean pages are \
                     evicted (CLOCK), dirty ones stay until a checkpoint wrote them, and \
                     writers wait for a checkpoint while dirty pages pass a quarter of the cache; \
                     the cache's memory is whole chunks of 16 pages, allocated as it grows and \
                     freed as its limit shrinks"
                ),
                None if cfg.cache > 0 => format!(
                    "the meta image is paged through a cache of wal.cache ({} bytes); the \
                     index and page table are outside it",
                    cfg.cache
                ),
                None => "the meta image is paged, but with neither wal.memory nor wal.cache \
                         no page is ever evicted: it grows with the data"
                    .to_string(),
            },
            match &held {
                Ok((image, index, frames)) => format!(
                    "resident meta pages now {image} bytes (cache limit {frames} pages), the \
                     index {index} bytes (memory.image, memory.index, memory.page_table)"
                ),
                Err(e) => format!("meta image size unknown: {e}"),
            },
            format!("last replay: {}", self.replay_stop),
            match &self.read_only {
                Some(why) => {
                    format!("opened for reads only: the open checkpoint could not write ({why})")
                }
                None => "opened for reads and writes".to_string(),
            },
            if self.direct {
                "the WAL, meta and data files are read and written with O_DIRECT (no OS page \
                 cache); large values are read from the data file at every get (no cache of \
                 their own)"
                    .to_string()
            } else {
                "the file system refused O_DIRECT: the WAL, meta and data files go through the \
                 OS page cache, outside the engine's own accounting, bounded only by the \
                 driver's memory cgroup"
                    .to_string()
            },
            "a checkpoint copies the dirty pages 256 at a time (under the core lock for \
             that slice's copy alone) into a buffer it writes them from, up to 64 writes in \
             flight; the buffer and the checkpoint's page lists are counted \
             (memory.checkpoint_copies)"
                .to_string(),
            "a write is visible to readers once applied to the image, before its WAL record \
             is durable; it is acknowledged only after"
                .to_string(),
            "wal.log_size applies when the WAL is created; an existing WAL keeps its size"
                .to_string(),
        ];
        if cfg.cache > 0 && cfg.memory.is_some() {
            notes.push(format!(
                "wal.cache ({} bytes) is overridden by wal.memory, which sizes the cache",
                cfg.cache
            ));
        }
        EngineInfo {
            engine: ENGINE_NAME.into(),
            durability,
            durability_setting: setting.into(),
            cache_bytes: (cfg.cache > 0).then_some(cfg.cache),
            direct_io: Some(self.direct),
            settings,
            notes,
            limits: limits(),
        }
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.reader.get(key)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.writer.write(key, Op::Put(value))
    }

    fn update(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.writer.write(key, Op::Put(value))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.writer.write(key, Op::Delete)
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<Vec<Pair>> {
        self.reader.scan(start, count)
    }

    fn counters(&self) -> Counters {
        // Without the image (a panic poisoned its lock) the other counters stand.
        let gauges = self.store.read().ok().map(|core| core.heap().gauges());
        self.stats.counters(gauges)
    }

    fn native_async(self: Arc<Self>) -> Option<Arc<dyn kvapi::AsyncEngine>> {
        let (reader, writer, log) = (self.reader.clone(), self.writer.clone(), self.log.clone());
        // Without its miss loader's thread there is no native path: the driver then
        // drives the engine with client threads, and says so.
        let uring = self.cfg.uring;
        let a = AsyncWal::new(self, reader, writer, log, uring).ok()?;
        Some(Arc::new(a))
    }

    fn close(&self) -> Result<()> {
        if self.store.close() {
            return Ok(());
        }
        // Writers that passed the closed check reserve their transactions first.
        self.store.wait_writers();
        if self.read_only.is_some() {
            // Nothing was written since the open: the files are as open found them.
            self.stop_threads();
            lock_handoff(&self.lock).take();
            return Ok(());
        }
        // Every transaction reserved completes; then a last checkpoint.
        let mut res = self
            .log
            .head()
            .and_then(|head| self.log.wait_complete(head));
        if res.is_ok() {
            res = self.checkpointer.run(false);
        }
        self.stop_threads();
        lock_handoff(&self.lock).take();
        res
    }
}

impl Drop for WalEngine {
    fn drop(&mut self) {
        // Without close: stop the threads, write nothing more (what was acknowledged
        // is in the WAL already).
        self.store.close();
        self.stop_threads();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemVfs;
    use std::path::Path;

    fn poison_the_image_lock(e: &WalEngine) {
        std::thread::scope(|s| {
            let r = s
                .spawn(|| {
                    let _core = e.store.write().unwrap();
                    panic!("a panic while holding the image lock");
                })
                .join();
            assert!(r.is_err());
        });
    }

    #[test]
    fn a_poisoned_image_lock_is_recorded_by_the_checkpointer_and_refuses_work() {
        let vfs = MemVfs::new();
        let mut cfg = Config::with_dir(Path::new("/mem/wal"));
        cfg.checkpoint_ms = 3_600_000;
        cfg.log_size = 65 * crate::format::BLOCK as u64;
        let e = WalEngine::open_with(&vfs, cfg).unwrap();
        e.insert(b"k", b"v").unwrap();
        poison_the_image_lock(&e);
        // The background thread meets the poisoned lock, stops and records it.
        e.checkpointer.request();
        let t0 = Instant::now();
        while e.log.check().is_ok() {
            assert!(t0.elapsed() < Duration::from_secs(10), "not recorded");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(matches!(e.log.check(), Err(Error::Poisoned(m)) if m.contains("meta image")));
        assert!(matches!(e.insert(b"k", b"w"), Err(Error::Poisoned(_))));
        assert!(matches!(e.get(b"k"), Err(Error::Poisoned(_))));
        assert!(matches!(e.scan(b"", 10), Err(Error::Poisoned(_))));
        assert!(matches!(e.checkpoint_now(), Err(Error::Poisoned(_))));
        assert!(matches!(e.flush_header(), Err(Error::Poisoned(_))));
        let c = e.counters();
        assert_eq!(c.items, None);
        assert!(c.device_bytes_written.is_some());
        assert!(e.info().notes.iter().any(|n| n.contains("size unknown")));
        assert!(matches!(e.close(), Err(Error::Poisoned(_))));
    }

    #[test]
    fn close_waits_for_a_writer_between_its_closed_check_and_its_reservation() {
        // The writer passes the closed check and its admission, then pauses 300 ms
        // (the hook) while close runs. Without the close gate, close returned at once
        // and stopped the committer; the writer then queued a transaction no thread
        // would write and waited for it for ever (found by review).
        let vfs = MemVfs::new();
        let cfg = Config::with_dir(Path::new("/mem/wal"));
        let e = WalEngine::open_with(&vfs, cfg.clone()).unwrap();
        let (passed, admitted) = std::sync::mpsc::channel();
        let passed = Mutex::new(passed);
        *e.writer.after_admit.lock().unwrap() = Some(Box::new(move || {
            let _ = passed.lock().unwrap().send(());
            std::thread::sleep(Duration::from_millis(300));
        }));
        let w = {
            let e = e.clone();
            std::thread::spawn(move || e.insert(b"late", b"value"))
        };
        admitted.recv_timeout(Duration::from_secs(10)).unwrap();
        let closed = e.close();
        let t0 = Instant::now();
        while !w.is_finished() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the writer waits for ever after close"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let wrote = w.join().unwrap();
        closed.unwrap();
        wrote.unwrap();
        // a later writer is refused
        assert!(matches!(e.insert(b"after", b"v"), Err(Error::Closed)));
        drop(e);
        let e = WalEngine::open_with(&vfs, cfg).unwrap();
        assert_eq!(e.get(b"late").unwrap().as_deref(), Some(&b"value"[..]));
        assert_eq!(e.get(b"after").unwrap(), None);
        e.close().unwrap();
    }

    #[test]
    fn a_writer_meeting_a_poisoned_image_lock_poisons_the_engine() {
        let vfs = MemVfs::new();
        let mut cfg = Config::with_dir(Path::new("/mem/wal"));
        cfg.checkpoint_ms = 3_600_000;
        cfg.log_size = 65 * crate::format::BLOCK as u64;
        let e = WalEngine::open_with(&vfs, cfg).unwrap();
        poison_the_image_lock(&e);
        assert!(matches!(e.delete(b"k"), Err(Error::Poisoned(_))));
        assert!(matches!(e.log.check(), Err(Error::Poisoned(_))));
        let a = e.clone().native_async().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        a.submit(
            kvapi::Request::Insert {
                key: b"k".to_vec(),
                value: b"v".to_vec(),
            },
            Box::new(move |r| tx.send(r).unwrap()),
        );
        assert!(matches!(rx.recv().unwrap(), Err(Error::Poisoned(_))));
        drop(a);
        drop(e);
    }
}
