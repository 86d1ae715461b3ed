//! The engine: configuration, open (create or replay), the write path (admission,
//! reserve, commit, wait), reads, checkpoints and close.

use crate::format::{BLOCK, WalHeader, id_of};
use crate::image::{Extent, Heap, Image, MAX_RECORD, REC_INLINE_HDR, Stored, TxBuild, record_len};
use crate::io::{FileVfs, Storage, Vfs};
use crate::replay::replay;
use crate::txn::{blocks_for, encode};
use crate::wal::{LogState, committer};
use kvapi::{
    Counters, DirLock, Durability, Engine, EngineInfo, Error, Limits, Options, Pair, Result,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const ENGINE_NAME: &str = "wal";
pub const MAX_KEY: usize = 1024;
pub const MAX_VALUE: usize = 64 << 20;

/// How an acknowledged write reaches the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// pwrite a batch of transactions, then fdatasync (power).
    Fdatasync,
    /// WAL and data files opened with O_DSYNC (power).
    Dsync,
    /// pwrite only: survives a killed process, not a power loss.
    NoneProcess,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Fdatasync => "fdatasync",
            Mode::Dsync => "dsync",
            Mode::NoneProcess => "none-process",
        }
    }
}

/// Resolved options.
#[derive(Clone, Debug)]
pub struct Config {
    pub dir: PathBuf,
    /// WAL file bytes (header block included), used only when the WAL is created.
    pub log_size: u64,
    pub mode: Mode,
    pub checkpoint_pct: u64,
    pub checkpoint_ms: u64,
    /// Values of this many bytes or more go to the data file.
    pub large_value: usize,
    /// Large values above this many bytes are written (and synced) before the WAL
    /// record; smaller large values are written in parallel with it.
    pub data_first: usize,
    /// Memory budget (0 = none given); see the notes in [`EngineInfo`].
    pub cache: u64,
    /// Every option as resolved, for the result file.
    pub settings: Vec<(String, String)>,
}

impl Config {
    pub fn from_options(opts: &Options) -> Result<Config> {
        let dir = opts.path("dir", "data/wal");
        let log_size = opts.bytes("log_size", 256 << 20)?;
        let mode = match opts
            .choice(
                "durability",
                "fdatasync",
                &["fdatasync", "dsync", "none-process"],
            )?
            .as_str()
        {
            "dsync" => Mode::Dsync,
            "none-process" => Mode::NoneProcess,
            _ => Mode::Fdatasync,
        };
        let checkpoint_pct = opts.u64("checkpoint_pct", 50)?;
        let checkpoint_ms = opts.u64("checkpoint_ms", 5000)?;
        let large_value = opts.bytes("large_value", 4096)? as usize;
        let data_first = opts.bytes("data_first", 32 << 10)? as usize;
        let cache = opts.bytes("cache", 0)?;
        opts.finish()?;
        if log_size < 17 * BLOCK as u64 {
            return Err(Error::InvalidArgument(format!(
                "wal.log_size must be at least {} bytes (16 log blocks and the header)",
                17 * BLOCK
            )));
        }
        if log_size / BLOCK as u64 - 1 > u32::MAX as u64 {
            return Err(Error::InvalidArgument("wal.log_size is too large".into()));
        }
        if !(1..=95).contains(&checkpoint_pct) {
            return Err(Error::InvalidArgument(
                "wal.checkpoint_pct must be between 1 and 95".into(),
            ));
        }
        Ok(Config {
            dir,
            log_size,
            mode,
            checkpoint_pct,
            checkpoint_ms: checkpoint_ms.max(1),
            large_value,
            data_first,
            cache,
            settings: opts.resolved(),
        })
    }

    /// The defaults for `dir`, as if no option were given.
    pub fn with_dir(dir: &std::path::Path) -> Config {
        let d = dir.to_string_lossy().into_owned();
        Config::from_options(&Options::new(ENGINE_NAME, &[("dir", &d)])).expect("defaults")
    }
}

pub struct Files {
    pub wal: Arc<dyn Storage>,
    pub meta: Arc<dyn Storage>,
    pub data: Arc<dyn Storage>,
}

#[derive(Default)]
pub struct Stats {
    pub wal_bytes: AtomicU64,
    pub checkpoint_bytes: AtomicU64,
    pub header_bytes: AtomicU64,
    pub data_bytes: AtomicU64,
    pub bytes_read: AtomicU64,
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub group_commits: AtomicU64,
    pub txns: AtomicU64,
    pub checkpoints: AtomicU64,
    pub admission_waits: AtomicU64,
    /// Transactions that run past the end of the log and continue at its start.
    pub split_txns: AtomicU64,
    /// Whole open: meta load, log replay, rebuild, open checkpoint.
    pub replay_us: AtomicU64,
    pub open_meta_load_us: AtomicU64,
    pub open_log_replay_us: AtomicU64,
    pub open_rebuild_us: AtomicU64,
    pub open_checkpoint_us: AtomicU64,
    pub replayed_txns: AtomicU64,
    pub user_bytes: AtomicU64,
}

/// The heap plus the data extents freed by transactions not yet recorded complete by
/// a header write (they may not be reused before).
pub struct Core {
    pub heap: Heap,
    pub pending_free: Vec<(u64, Extent)>,
}

pub struct Shared {
    pub cfg: Config,
    pub files: Files,
    pub pool_id: u32,
    pub core: RwLock<Core>,
    pub log: Mutex<LogState>,
    /// Wakes the committer.
    pub work_cv: Condvar,
    /// Progress: transactions complete, log space freed, or an error.
    pub done_cv: Condvar,
    /// Admission: a ticket served, log space reclaimed or given back, an error.
    pub space_cv: Condvar,
    /// Large values whose data write is in flight, by first block: reads see them
    /// here until the data file has them.
    pub inflight: Mutex<HashMap<u32, Arc<[u8]>>>,
    /// Serialises checkpoints and header writes.
    pub ckpt_lock: Mutex<()>,
    pub ckpt_req: Mutex<(bool, bool)>,
    pub ckpt_cv: Condvar,
    pub closed: AtomicBool,
    pub stats: Stats,
    pub data_path: PathBuf,
    /// Why the last replay stopped, for the notes.
    pub replay_stop: String,
    /// The header as last written (a checkpoint rewrites it with `ckpt_pending` set
    /// before it writes meta pages).
    pub last_header: Mutex<WalHeader>,
}

/// The WAL engine. [`open_engine`](crate::open_engine) gives it as a `dyn Engine`;
/// tests use [`WalEngine::open_with`] to run it on a [`crate::MemVfs`].
pub struct WalEngine {
    sh: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    lock: Mutex<Option<DirLock>>,
}

fn pool_id() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    (h.finish() as u32) | 1
}

impl WalEngine {
    /// Opens on real files in `cfg.dir`, claiming the directory.
    pub fn open(cfg: Config) -> Result<Arc<WalEngine>> {
        let lock = kvapi::claim_dir(&cfg.dir, ENGINE_NAME)?;
        let vfs = FileVfs::new(&cfg.dir);
        let e = WalEngine::open_with(&vfs, cfg)?;
        *e.lock.lock().unwrap() = Some(lock);
        Ok(e)
    }

    /// Opens on the files of `vfs` (no directory claim).
    pub fn open_with(vfs: &dyn Vfs, cfg: Config) -> Result<Arc<WalEngine>> {
        let t0 = Instant::now();
        let dsync = cfg.mode == Mode::Dsync;
        let ioe = |what: &str| {
            let what = what.to_string();
            move |e| Error::io(what, e)
        };
        let files = Files {
            wal: vfs.open("wal", dsync).map_err(ioe("opening the WAL"))?,
            meta: vfs
                .open("meta", false)
                .map_err(ioe("opening the meta file"))?,
            data: vfs
                .open("data", dsync)
                .map_err(ioe("opening the data file"))?,
        };
        let wal_path = cfg.dir.join("wal");
        let meta_path = cfg.dir.join("meta");
        let data_path = cfg.dir.join("data");
        let stats = Stats::default();
        let mut hb = vec![0u8; BLOCK];
        files
            .wal
            .read_at(&mut hb, 0)
            .map_err(ioe("reading the WAL header"))?;
        let header = WalHeader::decode(&hb).map_err(|detail| Error::Corruption {
            file: wal_path.clone(),
            offset: 0,
            detail,
        })?;
        let mut replay_stop = "created".to_string();
        let (heap, log, pool, last_header) = match header {
            None => {
                // A zero header over a meta file that holds pages is a damaged
                // database, not a new one: creating would overwrite it.
                let meta_len = files.meta.len().map_err(ioe("reading the meta file"))?;
                if meta_len > 0 {
                    return Err(Error::Corruption {
                        file: wal_path.clone(),
                        offset: 0,
                        detail: format!(
                            "the WAL header is missing (zero) but the meta file holds \
                             {meta_len} bytes: refusing to create a database over it"
                        ),
                    });
                }
                // Create: the meta superblock first, then the header, whose presence
                // marks the database as created.
                let n = cfg.log_size / BLOCK as u64 - 1;
                let pool = pool_id();
                let image = Image::new(pool);
                let mut sb = image.page(0).to_vec();
                crate::image::seal(&mut sb, 0);
                files
                    .meta
                    .write_at(&sb, 0)
                    .and_then(|()| files.meta.sync())
                    .map_err(ioe("creating the meta file"))?;
                // Write the whole log once (zeros) so that later WAL writes overwrite
                // allocated blocks: a sync then has no file metadata to commit.
                files
                    .wal
                    .set_len((n + 1) * BLOCK as u64)
                    .map_err(ioe("sizing the WAL"))?;
                let zeros = vec![0u8; 256 * BLOCK];
                let mut b = 1;
                while b <= n {
                    let k = (n + 1 - b).min(256) as usize;
                    files
                        .wal
                        .write_at(&zeros[..k * BLOCK], b * BLOCK as u64)
                        .map_err(ioe("initialising the WAL"))?;
                    b += k as u64;
                }
                let start = n; // lap 1, offset 0: an all-zero block never matches
                let h = WalHeader {
                    pool_id: pool,
                    generation: 1,
                    log_blocks: n as u32,
                    ckpt_id: id_of(start, n),
                    commit_id: id_of(start, n),
                    ckpt_pending: false,
                };
                files
                    .wal
                    .write_at(&h.encode(), 0)
                    .and_then(|()| files.wal.sync())
                    .map_err(ioe("writing the WAL header"))?;
                let heap = Heap::rebuild(image).map_err(|d| corrupt(&meta_path, d))?;
                (heap, LogState::new(n, 1, start), pool, h)
            }
            Some(h) => {
                let n = h.log_blocks as u64;
                let len = files.meta.len().map_err(ioe("reading the meta file"))?;
                // A partial last page (an extending write torn by a crash) reads as
                // zeros past the end and fails its CRC unless replay rewrites it.
                let count = (len as usize).div_ceil(BLOCK).max(1);
                let mut pages = Vec::with_capacity(count);
                const CHUNK: usize = 256;
                let mut buf = vec![0u8; CHUNK * BLOCK];
                let mut p = 0;
                while p < count {
                    let k = CHUNK.min(count - p);
                    files
                        .meta
                        .read_at(&mut buf[..k * BLOCK], (p * BLOCK) as u64)
                        .map_err(ioe("reading the meta file"))?;
                    pages.extend(buf[..k * BLOCK].chunks(BLOCK).map(Box::<[u8]>::from));
                    p += k;
                }
                stats
                    .bytes_read
                    .fetch_add((count * BLOCK) as u64, Ordering::Relaxed);
                // Pages failing their CRC are allowed only if replay rewrites them
                // (a checkpoint torn by a crash); checked after replay.
                let bad: Vec<usize> = pages
                    .iter_mut()
                    .enumerate()
                    .filter_map(|(p, b)| (!crate::image::unseal(b, p)).then_some(p))
                    .collect();
                let mut image = Image::from_pages(pages);
                let pc0 = image
                    .check_superblock(h.pool_id)
                    .map_err(|d| corrupt(&meta_path, d))?;
                stats
                    .open_meta_load_us
                    .store(t0.elapsed().as_micros() as u64, Ordering::Relaxed);
                let t1 = Instant::now();
                let r = replay(
                    files.wal.as_ref(),
                    files.data.as_ref(),
                    &h,
                    &mut image,
                    &wal_path,
                )?;
                let pc = image
                    .check_superblock(h.pool_id)
                    .map_err(|d| corrupt(&meta_path, d))?;
                let replayed: std::collections::HashSet<u32> = r.pages.iter().copied().collect();
                // A page failing its CRC is accepted only while a checkpoint was
                // rewriting pages and replay rewrites it; a page past the end of the
                // file only if replay creates it.
                // Pages from `held` on are not in the checkpointed image (past the
                // file, or past the superblock's page count): only replay makes them.
                let held = count.min(pc0 as usize);
                let unchecked = bad.into_iter().chain(held..pc as usize).find(|&p| {
                    let replay_writes = replayed.contains(&(p as u32));
                    p < pc as usize && !(replay_writes && (p >= held || h.ckpt_pending))
                });
                if let Some(p) = unchecked {
                    return Err(Error::Corruption {
                        file: meta_path.clone(),
                        offset: (p * BLOCK) as u64,
                        detail: if p < count {
                            format!("meta page {p} fails its checksum")
                        } else {
                            format!("meta page {p} is missing (file of {count} pages)")
                        },
                    });
                }
                image.resize(pc as usize);
                stats.bytes_read.fetch_add(r.bytes_read, Ordering::Relaxed);
                stats.replayed_txns.store(r.txns, Ordering::Relaxed);
                replay_stop = r.stop;
                stats
                    .open_log_replay_us
                    .store(t1.elapsed().as_micros() as u64, Ordering::Relaxed);
                let t2 = Instant::now();
                let mut heap = Heap::rebuild(image).map_err(|d| corrupt(&meta_path, d))?;
                stats
                    .open_rebuild_us
                    .store(t2.elapsed().as_micros() as u64, Ordering::Relaxed);
                let pages: Vec<u32> = r
                    .pages
                    .into_iter()
                    .filter(|&p| (p as usize) < pc as usize)
                    .collect();
                heap.touch(&pages, r.end);
                let mut log = LogState::new(n, h.generation.wrapping_add(1), r.end);
                log.tail = crate::format::abs_of(h.ckpt_id, n);
                (heap, log, h.pool_id, h)
            }
        };
        let sh = Arc::new(Shared {
            cfg,
            files,
            pool_id: pool,
            core: RwLock::new(Core {
                heap,
                pending_free: Vec::new(),
            }),
            log: Mutex::new(log),
            work_cv: Condvar::new(),
            done_cv: Condvar::new(),
            space_cv: Condvar::new(),
            inflight: Mutex::new(HashMap::new()),
            ckpt_lock: Mutex::new(()),
            ckpt_req: Mutex::new((false, false)),
            ckpt_cv: Condvar::new(),
            closed: AtomicBool::new(false),
            stats,
            data_path,
            replay_stop,
            last_header: Mutex::new(last_header),
        });
        // Checkpoint what replay changed and write the header with the new
        // generation before any new transaction: from here on, blocks left by earlier
        // opens can never pass for transactions of this one.
        let t3 = Instant::now();
        sh.checkpoint(true)?;
        sh.stats
            .open_checkpoint_us
            .store(t3.elapsed().as_micros() as u64, Ordering::Relaxed);
        sh.stats
            .replay_us
            .store(t0.elapsed().as_micros() as u64, Ordering::Relaxed);
        let s1 = sh.clone();
        let s2 = sh.clone();
        let s3 = sh.clone();
        let threads = vec![
            std::thread::Builder::new()
                .name("wal-committer".into())
                .spawn(move || committer(&s1))
                .map_err(|e| Error::io("starting the committer", e))?,
            std::thread::Builder::new()
                .name("wal-checkpoint".into())
                .spawn(move || s2.checkpointer())
                .map_err(|e| Error::io("starting the checkpointer", e))?,
            std::thread::Builder::new()
                .name("wal-completer".into())
                .spawn(move || crate::aio::completer(&s3))
                .map_err(|e| Error::io("starting the completer", e))?,
        ];
        Ok(Arc::new(WalEngine {
            sh,
            threads: Mutex::new(threads),
            lock: Mutex::new(None),
        }))
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.sh
    }

    /// Runs a checkpoint now (tests, benchmarks).
    pub fn checkpoint_now(&self) -> Result<()> {
        self.sh.checkpoint(false)
    }

    /// Writes the WAL header with the current commit id, without a checkpoint: the
    /// data extents freed before it become reusable.
    pub fn flush_header(&self) -> Result<()> {
        self.sh.flush_header()
    }

    /// Log blocks in use (between the checkpoint and the head).
    pub fn log_used_blocks(&self) -> u64 {
        self.sh.log.lock().unwrap().used()
    }

    fn stop_threads(&self) {
        {
            let mut log = self.sh.log.lock().unwrap();
            log.stop = true;
            self.sh.work_cv.notify_all();
            self.sh.done_cv.notify_all();
            self.sh.space_cv.notify_all();
        }
        {
            let mut r = self.sh.ckpt_req.lock().unwrap();
            r.1 = true;
            self.sh.ckpt_cv.notify_all();
        }
        for t in self.threads.lock().unwrap().drain(..) {
            let _ = t.join();
        }
    }
}

fn corrupt(file: &std::path::Path, detail: String) -> Error {
    Error::Corruption {
        file: file.to_path_buf(),
        offset: 0,
        detail,
    }
}

/// A scanned key with its value, or the extent to read it from.
type ScanItem = (Vec<u8>, std::result::Result<Vec<u8>, Extent>);

pub(crate) enum Op<'a> {
    Put(&'a [u8]),
    Delete,
}

impl Shared {
    fn poison(&self, msg: String) -> Error {
        let mut log = self.log.lock().unwrap();
        if log.error.is_none() {
            log.error = Some(msg.clone());
        }
        self.done_cv.notify_all();
        self.space_cv.notify_all();
        self.work_cv.notify_all();
        Error::Poisoned(msg)
    }

    fn check_writable(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(e) = &self.log.lock().unwrap().error {
            return Err(Error::Poisoned(e.clone()));
        }
        Ok(())
    }

    fn request_checkpoint(&self) {
        let mut r = self.ckpt_req.lock().unwrap();
        r.0 = true;
        self.ckpt_cv.notify_all();
    }

    /// Waits, in FIFO order, until `need` log blocks can be promised to this writer.
    fn admit(&self, need: u64) -> Result<()> {
        let mut log = self.log.lock().unwrap();
        let ticket = log.next_ticket;
        log.next_ticket += 1;
        let mut waited = false;
        loop {
            if let Some(e) = &log.error {
                let e = e.clone();
                if log.serving == ticket {
                    log.serving += 1;
                }
                self.space_cv.notify_all();
                return Err(Error::Poisoned(e));
            }
            if log.stop {
                return Err(Error::Closed);
            }
            if log.serving == ticket && log.free() >= need {
                log.serving += 1;
                log.reserved += need;
                if log.next_ticket > log.serving {
                    self.space_cv.notify_all();
                }
                return Ok(());
            }
            if log.serving == ticket {
                drop(log);
                self.request_checkpoint();
                log = self.log.lock().unwrap();
                if log.free() >= need {
                    continue;
                }
            }
            if !waited {
                waited = true;
                self.stats.admission_waits.fetch_add(1, Ordering::Relaxed);
            }
            log = self
                .space_cv
                .wait_timeout(log, Duration::from_millis(50))
                .unwrap()
                .0;
        }
    }

    fn unadmit(&self, need: u64) {
        let mut log = self.log.lock().unwrap();
        log.reserved -= need;
        self.space_cv.notify_all();
    }

    /// Reserves the next id for the built transaction, encodes it and queues it for
    /// the committer. Called with the core lock held, so ids follow the order in
    /// which changes were applied to the image. Returns (start, end).
    fn reserve(
        &self,
        core: &mut Core,
        tb: &TxBuild,
        admitted: u64,
        data_pending: bool,
    ) -> (u64, u64) {
        let blocks = blocks_for(tb.entries.len(), tb.payload.len()) as u64;
        assert!(blocks <= admitted, "transaction larger than its admission");
        let mut log = self.log.lock().unwrap();
        let start = log.head;
        let bytes = encode(
            log.generation,
            id_of(start, log.n),
            &tb.entries,
            &tb.payload,
        );
        log.head += blocks;
        log.reserved -= admitted;
        if data_pending {
            log.data_pending.insert(start);
        }
        log.queue.push_back((start, bytes));
        if start % log.n + blocks > log.n {
            self.stats.split_txns.fetch_add(1, Ordering::Relaxed);
        }
        let over = log.used() * 100 > log.n * self.cfg.checkpoint_pct;
        drop(log);
        self.work_cv.notify_one();

        core.heap.touch(&tb.pages, start + blocks);
        self.stats.txns.fetch_add(1, Ordering::Relaxed);
        if over {
            self.request_checkpoint();
        }
        (start, start + blocks)
    }

    /// Waits until every transaction before `end` is complete.
    fn wait_complete(&self, end: u64) -> Result<()> {
        let mut log = self.log.lock().unwrap();
        loop {
            if let Some(e) = &log.error {
                return Err(Error::Poisoned(e.clone()));
            }
            if log.complete() >= end {
                return Ok(());
            }
            log = self.done_cv.wait(log).unwrap();
        }
    }

    fn write_data(&self, e: &Extent, v: &[u8]) -> std::io::Result<()> {
        self.files.data.write_at(v, e.start as u64 * BLOCK as u64)?;
        if self.cfg.mode == Mode::Fdatasync {
            self.files.data.sync()?;
        }
        self.stats
            .data_bytes
            .fetch_add(v.len() as u64, Ordering::Relaxed);
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The blocking write: begin it, write a large value's data while the committer
    /// writes the WAL record, wait until it is complete.
    fn write(&self, key: &[u8], op: Op) -> Result<()> {
        let Some((start, end, large)) = self.begin_write(key, &op, false)? else {
            return Ok(());
        };
        if let Some(x) = large {
            // The data write runs while the committer writes the WAL record.
            let r = self.write_data(&x, op_value(&op));
            self.inflight.lock().unwrap().remove(&x.start);
            if let Err(e) = r {
                return Err(self.poison(format!("data write failed: {e}")));
            }
            let mut log = self.log.lock().unwrap();
            log.data_pending.remove(&start);
            self.done_cv.notify_all();
        }
        self.wait_complete(end)
    }

    /// Checks, admits, applies and reserves a write; returns the transaction's
    /// (start, end) and, for a large value to be written in parallel, its extent
    /// (the caller writes it and clears `data_pending`). `None`: nothing to log (the
    /// delete of a missing key). With `data_first`, every large value is written
    /// before the record.
    pub(crate) fn begin_write(
        &self,
        key: &[u8],
        op: &Op,
        force_data_first: bool,
    ) -> Result<Option<(u64, u64, Option<Extent>)>> {
        self.check_writable()?;
        let limits = limits();
        match *op {
            Op::Put(v) => limits.check_put(key, v)?,
            Op::Delete => limits.check_key(key)?,
        }
        let need = |rec: usize| blocks_for(12, rec + 64) as u64;
        let r = match *op {
            Op::Delete => {
                let need = need(0);
                self.admit(need)?;
                let mut core = self.core.write().unwrap();
                let mut tb = TxBuild::default();
                let (existed, ext) = core.heap.delete(&mut tb, key);
                if !existed {
                    drop(core);
                    self.unadmit(need);
                    return Ok(None);
                }
                let (s, e) = self.reserve(&mut core, &tb, need, false);
                if let Some(x) = ext {
                    core.pending_free.push((e, x));
                }
                (s, e, None)
            }
            Op::Put(v) => {
                self.stats
                    .user_bytes
                    .fetch_add((key.len() + v.len()) as u64, Ordering::Relaxed);
                let inline = v.len() < self.cfg.large_value
                    && REC_INLINE_HDR + key.len() + v.len() <= MAX_RECORD;
                if inline {
                    let need = need(record_len(key.len(), &Stored::Inline(v)));
                    self.admit(need)?;
                    let mut core = self.core.write().unwrap();
                    let mut tb = TxBuild::default();
                    let old = core.heap.put(&mut tb, key, &Stored::Inline(v));
                    let (s, e) = self.reserve(&mut core, &tb, need, false);
                    if let Some(x) = old {
                        core.pending_free.push((e, x));
                    }
                    (s, e, None)
                } else {
                    let blocks = v.len().div_ceil(BLOCK).max(1) as u32;
                    let crc = crc32fast::hash(v);
                    let need = need(record_len(key.len(), &Stored::Inline(&[])) + 24);
                    let data_first = force_data_first || v.len() > self.cfg.data_first;
                    let pre = if data_first {
                        // Data first: write and sync it, then log the record.
                        let start = self.core.write().unwrap().heap.extents.alloc(blocks);
                        let x = Extent {
                            start,
                            blocks,
                            len: v.len() as u32,
                            crc,
                        };
                        if let Err(e) = self.write_data(&x, v) {
                            return Err(self.poison(format!("data write failed: {e}")));
                        }
                        Some(x)
                    } else {
                        None
                    };
                    if let Err(e) = self.admit(need) {
                        if let Some(x) = pre {
                            self.core
                                .write()
                                .unwrap()
                                .heap
                                .extents
                                .free(x.start, x.blocks);
                        }
                        return Err(e);
                    }
                    let mut core = self.core.write().unwrap();
                    let x = match pre {
                        Some(x) => x,
                        None => {
                            let x = Extent {
                                start: core.heap.extents.alloc(blocks),
                                blocks,
                                len: v.len() as u32,
                                crc,
                            };
                            self.inflight.lock().unwrap().insert(x.start, v.into());
                            x
                        }
                    };
                    let mut tb = TxBuild::default();
                    core.heap.csum(&mut tb, &x);
                    let old = core.heap.put(&mut tb, key, &Stored::Extent(x));
                    let (s, e) = self.reserve(&mut core, &tb, need, !data_first);
                    if let Some(o) = old {
                        core.pending_free.push((e, o));
                    }
                    (s, e, (!data_first).then_some(x))
                }
            }
        };
        Ok(Some(r))
    }

    fn read_extent(&self, x: &Extent) -> Result<Option<Vec<u8>>> {
        let mut v = vec![0u8; x.len as usize];
        self.files
            .data
            .read_at(&mut v, x.start as u64 * BLOCK as u64)
            .map_err(|e| Error::io("reading the data file", e))?;
        self.stats
            .bytes_read
            .fetch_add(v.len() as u64, Ordering::Relaxed);
        self.stats.reads.fetch_add(1, Ordering::Relaxed);
        Ok((crc32fast::hash(&v) == x.crc).then_some(v))
    }

    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        limits().check_key(key)?;
        let mut offset = 0;
        for _ in 0..3 {
            let x = {
                let core = self.core.read().unwrap();
                match core.heap.get(key) {
                    None => return Ok(None),
                    Some(Stored::Inline(v)) => return Ok(Some(v.to_vec())),
                    Some(Stored::Extent(x)) => {
                        if let Some(v) = self.inflight.lock().unwrap().get(&x.start) {
                            return Ok(Some(v.to_vec()));
                        }
                        x
                    }
                }
            };
            // A mismatch can only be an extent freed and reused since the lookup;
            // look again.
            offset = x.start as u64 * BLOCK as u64;
            if let Some(v) = self.read_extent(&x)? {
                return Ok(Some(v));
            }
        }
        Err(Error::Corruption {
            file: self.data_path.clone(),
            offset,
            detail: format!("value of key {key:?} fails its checksum"),
        })
    }

    pub(crate) fn scan(&self, start: &[u8], count: usize) -> Result<Vec<Pair>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let mut out: Vec<ScanItem> = {
            let core = self.core.read().unwrap();
            let inflight = self.inflight.lock().unwrap();
            core.heap
                .range(start, count)
                .into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        Stored::Inline(x) => Ok(x.to_vec()),
                        Stored::Extent(x) => match inflight.get(&x.start) {
                            Some(v) => Ok(v.to_vec()),
                            None => Err(x),
                        },
                    };
                    (k.to_vec(), v)
                })
                .collect()
        };
        let mut pairs = Vec::with_capacity(out.len());
        for (k, v) in out.drain(..) {
            let v = match v {
                Ok(v) => v,
                Err(x) => match self.read_extent(&x)? {
                    Some(v) => v,
                    None => match self.get(&k)? {
                        Some(v) => v,
                        None => continue,
                    },
                },
            };
            pairs.push((k, v));
        }
        Ok(pairs)
    }

    fn write_header(&self, ckpt: u64, commit: u64) -> Result<()> {
        let (n, generation) = {
            let log = self.log.lock().unwrap();
            (log.n, log.generation)
        };
        let h = WalHeader {
            pool_id: self.pool_id,
            generation,
            log_blocks: n as u32,
            ckpt_id: id_of(ckpt, n),
            commit_id: id_of(commit, n),
            ckpt_pending: false,
        };
        self.put_header(&h)?;
        *self.last_header.lock().unwrap() = h;
        Ok(())
    }

    fn put_header(&self, h: &WalHeader) -> Result<()> {
        let r = self
            .files
            .wal
            .write_at(&h.encode(), 0)
            .and_then(|()| self.files.wal.sync());
        if let Err(e) = r {
            return Err(self.poison(format!("WAL header write failed: {e}")));
        }
        self.stats
            .header_bytes
            .fetch_add(BLOCK as u64, Ordering::Relaxed);
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Data extents freed by transactions before `commit` may now be reused.
    fn release_frees(&self, commit: u64) {
        let mut core = self.core.write().unwrap();
        let Core { heap, pending_free } = &mut *core;
        pending_free.retain(|(end, x)| {
            if *end <= commit {
                heap.extents.free(x.start, x.blocks);
                false
            } else {
                true
            }
        });
    }

    fn flush_header(&self) -> Result<()> {
        let _g = self.ckpt_lock.lock().unwrap();
        self.check_writable()?;
        let (tail, commit) = {
            let log = self.log.lock().unwrap();
            (log.tail, log.complete())
        };
        self.write_header(tail, commit)?;
        self.release_frees(commit);
        Ok(())
    }

    /// A checkpoint: copy the dirty pages (under the core lock, so the copy holds
    /// exactly the transactions before `r`), wait until those are complete, write the
    /// pages to the meta file and sync it, write the WAL header with checkpoint id
    /// `r`, and only then give the log space before `r` back.
    pub fn checkpoint(&self, force: bool) -> Result<()> {
        let _g = self.ckpt_lock.lock().unwrap();
        if let Some(e) = &self.log.lock().unwrap().error {
            return Err(Error::Poisoned(e.clone()));
        }
        let (r, pages) = {
            let mut core = self.core.write().unwrap();
            let r = self.log.lock().unwrap().head;
            (r, core.heap.take_dirty())
        };
        let tail = self.log.lock().unwrap().tail;
        if !force && pages.is_empty() && r == tail {
            return Ok(());
        }
        self.wait_complete(r)?;
        if !pages.is_empty() {
            // Say that meta pages are being rewritten: only then may open accept a
            // meta page that fails its CRC (torn by a crash) and let replay repair it.
            let mut h = *self.last_header.lock().unwrap();
            h.ckpt_pending = true;
            self.put_header(&h)?;
        }
        let mut i = 0;
        let mut bytes = 0u64;
        while i < pages.len() {
            // Coalesce runs of consecutive pages, up to 1 MiB per write.
            let mut j = i + 1;
            while j < pages.len() && pages[j].0 == pages[j - 1].0 + 1 && j - i < 256 {
                j += 1;
            }
            let mut buf = Vec::with_capacity((j - i) * BLOCK);
            for (n, p) in &pages[i..j] {
                let at = buf.len();
                buf.extend_from_slice(p);
                crate::image::seal(&mut buf[at..], *n as usize);
            }
            if let Err(e) = self
                .files
                .meta
                .write_at(&buf, pages[i].0 as u64 * BLOCK as u64)
            {
                return Err(self.poison(format!("meta write failed: {e}")));
            }
            self.stats.writes.fetch_add(1, Ordering::Relaxed);
            bytes += buf.len() as u64;
            i = j;
        }
        if let Err(e) = self.files.meta.sync() {
            return Err(self.poison(format!("meta sync failed: {e}")));
        }
        self.stats
            .checkpoint_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        let commit = self.log.lock().unwrap().complete();
        self.write_header(r, commit)?;
        {
            let mut log = self.log.lock().unwrap();
            log.tail = log.tail.max(r);
            self.space_cv.notify_all();
        }
        self.release_frees(commit);
        self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn checkpointer(&self) {
        let period = Duration::from_millis(self.cfg.checkpoint_ms);
        let mut last = Instant::now();
        loop {
            {
                let mut r = self.ckpt_req.lock().unwrap();
                loop {
                    if r.1 {
                        return;
                    }
                    if r.0 || last.elapsed() >= period {
                        break;
                    }
                    let left = period.saturating_sub(last.elapsed());
                    r = self.ckpt_cv.wait_timeout(r, left).unwrap().0;
                }
                r.0 = false;
            }
            last = Instant::now();
            if self.checkpoint(false).is_err() {
                return;
            }
        }
    }
}

fn op_value<'a>(op: &Op<'a>) -> &'a [u8] {
    match op {
        Op::Put(v) => v,
        Op::Delete => &[],
    }
}

fn limits() -> Limits {
    Limits {
        max_key: MAX_KEY,
        max_value: MAX_VALUE,
        empty_key: true,
    }
}

impl Engine for WalEngine {
    fn info(&self) -> EngineInfo {
        let cfg = &self.sh.cfg;
        let (durability, setting) = match cfg.mode {
            Mode::Fdatasync => (
                Durability::Power,
                "WAL record fdatasync'ed before the ack (group commit: one write and one \
                 fdatasync per batch); large values fdatasync'ed too",
            ),
            Mode::Dsync => (
                Durability::Power,
                "WAL and data files written with O_DSYNC before the ack (group commit: one \
                 write per batch)",
            ),
            Mode::NoneProcess => (
                Durability::Process,
                "WAL record written (pwrite, no sync) before the ack: survives a killed \
                 process, not a power loss",
            ),
        };
        let n = self.sh.log.lock().unwrap().n;
        let image = self.sh.core.read().unwrap().heap.image_bytes();
        let mut settings = cfg.settings.clone();
        settings.push(("log_blocks".into(), n.to_string()));
        settings.push(("durability_mode".into(), cfg.mode.name().into()));
        let mut notes = vec![
            "the meta image (ordered index keys, records and values under wal.large_value) \
             is wholly memory-resident, loaded on open and changed in place; wal.cache does \
             not bound it: it is reported as the budget and the image size is stated here"
                .to_string(),
            format!("meta image now {} bytes", image),
            format!("last replay: {}", self.sh.replay_stop),
            "large values are read from the data file with pread through the OS page cache \
             (no direct I/O, no own cache)"
                .to_string(),
            "a write is visible to readers once applied to the image, before its WAL record \
             is durable; it is acknowledged only after"
                .to_string(),
            "wal.log_size applies when the WAL is created; an existing WAL keeps its size"
                .to_string(),
        ];
        if cfg.cache > 0 && image > cfg.cache {
            notes.push(format!(
                "the meta image ({image} bytes) exceeds wal.cache ({} bytes)",
                cfg.cache
            ));
        }
        EngineInfo {
            engine: ENGINE_NAME.into(),
            durability,
            durability_setting: setting.into(),
            cache_bytes: (cfg.cache > 0).then_some(cfg.cache),
            direct_io: Some(false),
            settings,
            notes,
            limits: limits(),
        }
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.sh.get(key)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.sh.write(key, Op::Put(value))
    }

    fn update(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.sh.write(key, Op::Put(value))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.sh.write(key, Op::Delete)
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<Vec<Pair>> {
        self.sh.scan(start, count)
    }

    fn counters(&self) -> Counters {
        let s = &self.sh.stats;
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (items, index_bytes) = {
            let core = self.sh.core.read().unwrap();
            (core.heap.items(), core.heap.index_bytes())
        };
        let written =
            ld(&s.wal_bytes) + ld(&s.checkpoint_bytes) + ld(&s.header_bytes) + ld(&s.data_bytes);
        Counters {
            device_bytes_read: Some(ld(&s.bytes_read)),
            device_bytes_written: Some(written),
            device_reads: Some(ld(&s.reads)),
            device_writes: Some(ld(&s.writes)),
            cache_hits: None,
            cache_misses: None,
            items: Some(items),
            index_bytes: Some(index_bytes),
            extra: vec![
                ("wal_bytes".into(), ld(&s.wal_bytes)),
                ("checkpoint_bytes".into(), ld(&s.checkpoint_bytes)),
                ("header_bytes".into(), ld(&s.header_bytes)),
                ("data_bytes".into(), ld(&s.data_bytes)),
                ("user_bytes".into(), ld(&s.user_bytes)),
                ("txns".into(), ld(&s.txns)),
                ("group_commits".into(), ld(&s.group_commits)),
                ("checkpoints".into(), ld(&s.checkpoints)),
                ("admission_waits".into(), ld(&s.admission_waits)),
                ("split_txns".into(), ld(&s.split_txns)),
                ("replay_us".into(), ld(&s.replay_us)),
                ("open_meta_load_us".into(), ld(&s.open_meta_load_us)),
                ("open_log_replay_us".into(), ld(&s.open_log_replay_us)),
                ("open_rebuild_us".into(), ld(&s.open_rebuild_us)),
                ("open_checkpoint_us".into(), ld(&s.open_checkpoint_us)),
                ("replayed_txns".into(), ld(&s.replayed_txns)),
            ],
        }
    }

    fn native_async(self: Arc<Self>) -> Option<Arc<dyn kvapi::AsyncEngine>> {
        Some(Arc::new(crate::aio::AsyncWal { engine: self }))
    }

    fn close(&self) -> Result<()> {
        if self.sh.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // Writers that passed the closed check finish; then a last checkpoint.
        let head = self.sh.log.lock().unwrap().head;
        let mut res = self.sh.wait_complete(head);
        if res.is_ok() {
            res = self.sh.checkpoint(false);
        }
        self.stop_threads();
        self.lock.lock().unwrap().take();
        res
    }
}

impl Drop for WalEngine {
    fn drop(&mut self) {
        // Without close: stop the threads, write nothing more (what was acknowledged
        // is in the WAL already).
        self.sh.closed.store(true, Ordering::Release);
        self.stop_threads();
    }
}
