//! Opening the engine: every data directory is claimed and its layout checked; then
//! each worker, on its own thread and in parallel with the others, opens its backend,
//! recovers its slabs while a helper thread sets up its page cache (under a memory
//! budget: then, beside its first requests, to the frames the budget leaves beside
//! the index), marks its clean-shutdown record open and starts serving; the scan
//! thread starts last.

use crate::budget::worker_other;
use crate::cache::{META_PER_FRAME, PageCache};
use crate::config::{CacheSetup, Config};
use crate::index::Index;
use crate::poison::Poison;
use crate::recovery::Repairs;
use crate::request::Msg;
use crate::route::{Shared, WorkerHandle};
use crate::scan;
use crate::stats::Stats;
use crate::wake::Wake;
use crate::worker::{Parts, Worker};
use crate::{index, layout, recovery, slab};
use kvapi::{DirLock, EngineInfo, Error, Result};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Sender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// An engine opened: its workers serving, its scan thread started.
pub(crate) struct Opened {
    pub(crate) shared: Arc<Shared>,
    pub(crate) info: EngineInfo,
    pub(crate) scan_tx: Sender<scan::Event>,
    pub(crate) scan_thread: JoinHandle<()>,
    pub(crate) locks: Vec<DirLock>,
    pub(crate) recovery_us: u64,
    pub(crate) recovery_bytes: u64,
    /// What recovery repaired, over all workers.
    pub(crate) repairs: Repairs,
}

/// What a worker reports once open.
struct WorkerOpened {
    /// Slab bytes read by recovery.
    bytes: u64,
    /// What recovery repaired (counted and described).
    repairs: Repairs,
    /// Its open's times, in microseconds, by the names the engine reports them under
    /// (`EngineInfo.settings`): the page cache's setup (beside recovery, in
    /// parallel) and of it the part after recovery, in series (under a budget: the
    /// heap trimmed and `fill_beside` started); recovery's scan of the slabs, the
    /// worker's CPU time during it, and what follows it (newest copies, repairs,
    /// index build: `Recovered`).
    times: Times,
    /// The worker's I/O backend as it was set up (`Backend::name`): an io_uring set up
    /// with less than `kvell.ring` asked for, where the kernel refused a flag, says so.
    backend: String,
}

/// A worker's open times: (name, microseconds).
type Times = [(&'static str, u64); 5];

/// Opens (creating or recovering) the engine's directories and starts its threads.
pub(crate) fn open(cfg: Config) -> Result<Opened> {
    cfg.validate()?;
    let t0 = Instant::now();
    let mut locks = Vec::new();
    for d in &cfg.dirs {
        locks.push(kvapi::claim_dir(d, "kvell")?);
        layout::check_layout(d, &cfg)?;
    }
    let poison = Arc::new(Poison::default());
    let per_worker_cache = cfg.cache_bytes / cfg.workers as u64;
    // Recovery runs on every worker in parallel.
    let mut opening = Vec::new();
    for w in 0..cfg.workers {
        let cfg = cfg.clone();
        let poison = poison.clone();
        let (ready_tx, ready_rx) = sync_channel::<Result<WorkerOpened>>(1);
        let (tx, rx) = sync_channel::<Msg>(cfg.queue_capacity());
        let index = Arc::new(Mutex::new(Index::default()));
        let stats = Arc::new(Stats::default());
        // Without an eventfd a worker just sleeps until its next completion.
        let wake = Wake::new().ok().map(Arc::new);
        let (i2, s2, wake2) = (index.clone(), stats.clone(), wake.clone());
        let thread = std::thread::Builder::new()
            .name(format!("kvell-worker-{w}"))
            .spawn(
                move || match open_worker(w, &cfg, i2, s2, poison, per_worker_cache, wake2) {
                    Ok((worker, opened)) => {
                        let _ = ready_tx.send(Ok(opened));
                        worker.run(rx);
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                },
            )
            .map_err(|e| Error::io("spawning a worker thread", e))?;
        opening.push((
            WorkerHandle {
                tx,
                index,
                stats,
                thread: Mutex::new(Some(thread)),
                wake,
            },
            ready_rx,
        ));
    }
    let mut workers = Vec::new();
    let mut first_err = None;
    let mut recovery_bytes = 0;
    let mut repairs = Repairs::default();
    let mut times: Option<Times> = None;
    let mut backends: Vec<String> = Vec::new();
    for (h, ready) in opening {
        match ready.recv() {
            Ok(Ok(o)) => {
                recovery_bytes += o.bytes;
                repairs.merge(workers.len(), o.repairs);
                if !backends.contains(&o.backend) {
                    backends.push(o.backend);
                }
                // Workers open in parallel: each time is the slowest worker's.
                times = Some(match times {
                    None => o.times,
                    Some(mut t) => {
                        for (a, b) in t.iter_mut().zip(o.times) {
                            a.1 = a.1.max(b.1);
                        }
                        t
                    }
                });
            }
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(Error::Engine("a kvell worker died while opening".into()));
            }
        }
        workers.push(h);
    }
    let shared = Arc::new(Shared {
        workers,
        closed: AtomicBool::new(false),
    });
    if let Some(e) = first_err {
        let _ = shared.shutdown_workers();
        return Err(e);
    }
    let recovery_us = t0.elapsed().as_micros() as u64;
    let mut info = cfg.info(recovery_us, recovery_bytes);
    info.notes.extend(repairs.summary());
    info.notes.extend(repairs.notes.iter().cloned());
    info.settings
        .push(("recovery_torn_items".into(), repairs.torn.to_string()));
    info.settings
        .push(("recovery_torn_large".into(), repairs.torn_large.to_string()));
    info.settings
        .push(("recovery_holes".into(), repairs.holes.to_string()));
    info.settings
        .push(("recovery_stale".into(), repairs.stale.to_string()));
    // The parts of recovery_us, and the cache's setup: where an open's time goes
    // (issue 18: recovery against the disk's sequential reads).
    for (name, us) in times.into_iter().flatten() {
        info.settings.push((name.into(), us.to_string()));
    }
    // What the workers' backends are, as set up: `ring` above is what was asked for.
    info.settings
        .push(("io_backend".into(), backends.join(", ")));
    if matches!(cfg.io, crate::config::IoMode::Uring)
        && backends
            .iter()
            .any(|b| !cfg.ring.backend_names().any(|n| n == *b))
    {
        info.notes.push(format!(
            "kvell.ring={} was asked for, but the kernel refused a flag: the workers run {}",
            cfg.ring.name(),
            backends.join(", ")
        ));
    }
    let (scan_tx, scan_rx) = std::sync::mpsc::channel();
    let s2 = shared.clone();
    let tx2 = scan_tx.clone();
    let scan_in_flight = cfg.scan_in_flight;
    let scan_thread = std::thread::Builder::new()
        .name("kvell-scan".into())
        .spawn(move || scan::run(&s2, scan_rx, tx2, scan_in_flight))
        .map_err(|e| Error::io("spawning the scan thread", e))?;
    Ok(Opened {
        shared,
        info,
        scan_tx,
        scan_thread,
        locks,
        recovery_us,
        recovery_bytes,
        repairs,
    })
}

/// Opens worker `w` on its thread: its backend, the recovery of its slabs (with its
/// page cache set up beside it), its clean-shutdown record marked open.
fn open_worker(
    w: usize,
    cfg: &Config,
    index: Arc<Mutex<Index>>,
    stats: Arc<Stats>,
    poison: Arc<Poison>,
    cache_bytes: u64,
    wake: Option<Arc<Wake>>,
) -> Result<(Worker, WorkerOpened)> {
    let dir = cfg.dir_of(w);
    let mut io = cfg.backend()?;
    let (mut rec, (cache, cache_us), cache_after_us) = match cfg.budget() {
        // Under a budget the cache is set up in two steps: beside recovery (by a
        // helper thread, while this one waits for its reads), the frames the budget
        // leaves besides an upper bound of what recovery holds (`recovery_bound`);
        // after it, once its key map is freed and the index known, the rest of what
        // the budget leaves, made resident by a helper thread while the worker
        // already serves, 1 MiB at a time (`PageCache::fill_beside`), or it gives
        // back what is over.
        // The first step stays in the open, beside the scan, though it slows the
        // scan: with 16 MiB there and the rest after the open the scans of 4M items
        // took less in each of 11 alternating pairs of opens (2026-12-05, 17:20-
        // 17:45 UTC; in the 8 pairs where the disk held its rate 1.62-1.91 s against
        // 1.74-1.99 s, medians 1.68 and 1.82: the VM's disk slows when its CPUs are
        // busy, and the scan's faults waited on the mmap lock the helper held), but
        // the kernel's zeroing is the same work either way and after the open it
        // lands on the first requests (YCSB C zipfian, 10 s after the open, three
        // alternating pairs: 286-291K ops/s against 293-298K). The authors' C code
        // zeroes its whole cache before its recovery, inside the time it reports: so
        // does our open, and the two recovery times compare like for like.
        //
        // With `kvell.cache_setup=after` the first step makes nothing resident (the
        // cache's least, `budget::MIN_FRAMES`, is touched in its place) and the second
        // does it all, after the open: the open shorter in most of the alternating
        // opens of 4M items, the requests after it slower, their tail longer
        // (results/kvell-4m-ab/cache-setup/README.md), so it is not the default.
        Some(b) => {
            let cap = b.cache_frames();
            let bound = recovery_bound(&dir, w, cfg.recovery_reads());
            let early = match cfg.cache_setup {
                CacheSetup::Open => b.cache_limit(bound + cap as u64 * META_PER_FRAME),
                CacheSetup::After => crate::budget::MIN_FRAMES,
            };
            let (rec, (mut c, early_us)) = recover_beside(io.as_mut(), &dir, w, cfg, || {
                PageCache::with_limit(cap, early)
            })?;
            let t = Instant::now();
            // The key map recovery freed leaves the heap before more is touched.
            crate::io::pagemem::trim_heap();
            let free = rec.slabs.iter().map(|s| s.free.bytes()).sum();
            let index = rec.index.bytes();
            let other = index + cap as u64 * META_PER_FRAME + worker_other(index, free);
            c.fill_beside(b.cache_limit(other))?;
            let after_us = t.elapsed().as_micros() as u64;
            (rec, (c, early_us + after_us), after_us)
        }
        // The cache is touched (see `PageCache::new`) by a helper thread while this
        // one scans the slabs: recovery waits for its reads, the touching is kernel
        // work.
        None => match cfg.cache_setup {
            CacheSetup::Open => {
                let (rec, c) =
                    recover_beside(io.as_mut(), &dir, w, cfg, || PageCache::new(cache_bytes))?;
                (rec, c, 0)
            }
            // Made resident after the open, as under a budget with `after`.
            CacheSetup::After => {
                let (rec, (mut c, map_us)) = recover_beside(io.as_mut(), &dir, w, cfg, || {
                    PageCache::untouched(cache_bytes)
                })?;
                let t = Instant::now();
                let all = c.capacity();
                c.fill_beside(all)?;
                let after_us = t.elapsed().as_micros() as u64;
                (rec, (c, map_us + after_us), after_us)
            }
        },
    };
    // The worker's I/O buffers, their arena registered with the ring where the
    // backend and the kernel allow (the backend's name then says so); refused, the
    // pool gives its arena up and takes buffers from the heap as they are needed.
    let mut pool = crate::worker::buffer_pool(cfg.queue_depth, cfg.budget().map(|b| b.bytes));
    if !pool.arena().is_some_and(|a| io.register(a)) {
        pool = crate::io::BufPool::default();
    }
    let backend = io.name();
    let opened = WorkerOpened {
        backend,
        bytes: rec.bytes_read,
        repairs: std::mem::take(&mut rec.repairs),
        times: [
            ("cache_setup_us", cache_us),
            ("recovery_scan_us", rec.scan_us),
            ("recovery_scan_cpu_us", rec.scan_cpu_us),
            ("cache_setup_after_recovery_us", cache_after_us),
            ("recovery_index_us", rec.index_us),
        ],
    };
    let index_bytes = rec.index.bytes();
    *index::lock(&index)? = rec.index;
    let parts = Parts {
        io,
        slabs: rec.slabs,
        clean: rec.clean,
        index,
        cache,
        stats,
        poison,
        ts: rec.max_ts,
        index_bytes,
        wake,
        pool,
    };
    Ok((Worker::new(parts, cfg), opened))
}

/// Recovers worker `w` from `dir` and marks its record open (from here on the slabs
/// change: the record says "open" until a clean close), while a helper thread sets
/// up its page cache with `setup` (recovery waits for its reads, the touching is
/// kernel work); the cache comes back with the microseconds its setup took.
fn recover_beside(
    io: &mut dyn crate::io::Backend,
    dir: &std::path::Path,
    w: usize,
    cfg: &Config,
    setup: impl FnOnce() -> Result<PageCache> + Send,
) -> Result<(recovery::Recovered, (PageCache, u64))> {
    std::thread::scope(|s| {
        let cache = std::thread::Builder::new()
            .name(format!("kvell-cache-{w}"))
            .spawn_scoped(s, || {
                let t = Instant::now();
                setup().map(|c| (c, t.elapsed().as_micros() as u64))
            });
        let (fmt, reads) = (cfg.format(), cfg.recovery_reads());
        let rec = recovery::recover(io, dir, w, cfg.freelist, fmt, cfg.atomic_write, reads)
            .and_then(|mut r| r.mark_open(io).map(|()| r));
        let cache = match cache {
            Ok(h) => h
                .join()
                .map_err(|_| Error::Engine("setting up the page cache panicked".into()))
                .and_then(|c| c),
            Err(e) => Err(Error::io("spawning the page-cache thread", e)),
        };
        rec.and_then(|r| cache.map(|c| (r, c)))
    })
}

/// Bytes recovery holds at most at once for each slot of its slabs: its copy of the
/// key (48, `slab_scan::Found`), the key's index entry with the allocator's overhead
/// on it (at most 40 for an inline key of 24 bytes, a 8-byte location and the varints
/// of a block entry), and a free-list or stale-copy entry (8). During the scan, before
/// the index is built, the merges of the copies' runs hold at most half of the copies
/// besides (24: `recovery/runs.rs`), given back before the build.
const RECOVERY_PER_SLOT: u64 = 48 + 40 + 8;

/// What recovery holds whatever the slabs hold, besides its read-ahead buffers
/// (`recovery::Reads::held`: 4 or 8 MiB by default, two slots for a large class whose
/// slot is longer than that).
const RECOVERY_FIXED: u64 = 4 << 20;

/// An upper bound of what recovery of worker `w` holds at once, from the lengths of
/// its slab files in `dir` (a slot per `slab::unit_len`, or `per_page` of them in a
/// page of a small class; a file that is not there holds nothing): what the page
/// cache leaves beside it while recovery runs. Keys too long to be inline are rare
/// and not bounded here; the budget's second step (`fill_beside`) takes back what is
/// over once the index is known.
fn recovery_bound(dir: &std::path::Path, w: usize, reads: recovery::Reads) -> u64 {
    let mut slots = 0;
    // the read-ahead's buffers: one slab at a time, the largest of them (a large
    // class's slot may be longer than a piece: two of them in flight)
    let mut buffers = reads.in_flight() as u64;
    for class in 0..slab::NCLASS {
        let len = std::fs::metadata(dir.join(slab::file_name(w, class))).map_or(0, |m| m.len());
        if len > 0 {
            let chunk = (reads.piece as u64).max(slab::unit_len(class) as u64);
            buffers = buffers.max(reads.held(chunk));
        }
        let per = if slab::is_large(class) {
            1
        } else {
            slab::per_page(class) as u64
        };
        slots += len / slab::unit_len(class) as u64 * per;
    }
    slots * RECOVERY_PER_SLOT + RECOVERY_FIXED + buffers
}
