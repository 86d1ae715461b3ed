//! The real sled crate (0.34.7, the stable release) behind the engine interface.
//!
//! Durability settings (`sled.flush`):
//! - `periodic` (default): sled's background flusher writes its log every
//!   `sled.flush_ms` milliseconds; an acknowledged write lives only in sled's memory
//!   until then, so a killed process can lose it: class `none`.
//! - `every`: `Db::flush()` (which fsyncs) after every write: class `power`.
//! - `never`: no background flush at all (only on close): class `none`.
//!
//! sled has no direct I/O: its reads and writes go through the OS page cache, which
//! neither `sled.cache` (sled's own cache) nor `sled.memory` can bound: only the
//! driver's memory cgroup does. Results say so.
//!
//! Memory budget (`sled.memory`): sled's cache is an eighth of it (`sled.cache`, when
//! given, overrides that), the rest left to the OS page cache of its files. sled holds
//! much more than its cache, and none of it can be reclaimed under a cgroup's limit,
//! where the page cache can: with 1 KiB items, 100K of them grew the resident memory
//! by 75.5 / 75.7 / 83.5 / 87.8 / 93.5 MiB at a cache of 8 / 16 / 32 / 64 / 100 MiB,
//! and 300K by 87.7 / 91.1 / 100.6 / 118.4 / 140.4 MiB (each after the load and a
//! read of every 7th item, in a process of its own: `SLED_MEM_ITEMS=100000 cargo test
//! --release -p baselines --test sled_memory measure -- --ignored --nocapture`, and
//! the default of 300000). So about 70 to 85 MiB at these sizes is sled's own,
//! whatever its cache, and each cache byte adds about 0.6 byte more: the smaller
//! share gives sled the best chance to stay within a budget (at 100 MiB and 300K
//! items, an eighth gives about 89 MiB resident, a quarter about 96), and a larger
//! one only adds memory that a cgroup would have to kill the process to take back.
//! sled exposes no memory figures (only `size_on_disk`), so it reports no `memory.*`
//! gauges.

use kvapi::{
    Counters, DirLock, Durability, Engine, EngineInfo, Error, Limits, Options, Pair, Result,
    claim_dir,
};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

const LIMITS: Limits = Limits {
    max_key: 64 * 1024,
    max_value: 16 * 1024 * 1024,
    empty_key: true,
};

/// An open sled database.
pub struct SledEngine {
    db: RwLock<Option<sled::Db>>,
    lock: Mutex<Option<DirLock>>,
    flush_each_write: bool,
    info: EngineInfo,
    dir: PathBuf,
    flushes: AtomicU64,
}

/// How long an open waits for sled's own file lock after this process dropped the
/// previous handle.
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Opens sled, waiting up to [`RELEASE_WAIT`] for sled's own lock on its files.
///
/// Decision: sled releases that lock only when the last reference to its state
/// drops, and its background threads can hold one for a moment after `Db` is
/// dropped, so a close followed at once by an open in the same process can find the
/// lock still taken (`WouldBlock`). Another process cannot be the holder: the
/// directory lock (`claim_dir`), taken before this call, refuses a second process;
/// so retrying is safe, and a lock still held after the wait is reported.
fn open_when_released(config: &sled::Config) -> Result<sled::Db> {
    let start = std::time::Instant::now();
    loop {
        match config.open() {
            Err(sled::Error::Io(io))
                if io.to_string().contains("could not acquire lock")
                    && start.elapsed() < RELEASE_WAIT =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other.map_err(|e| sled_err("open", e)),
        }
    }
}

fn sled_err(what: &str, e: sled::Error) -> Error {
    match e {
        sled::Error::Io(io) => Error::io(format!("sled {what}"), io),
        sled::Error::Corruption { at, .. } => Error::Corruption {
            file: PathBuf::from("sled"),
            offset: at.map(|p| p.lid()).unwrap_or(0),
            detail: format!("sled reports corruption during {what}"),
        },
        other => Error::Engine(format!("sled {what}: {other}")),
    }
}

/// Opens sled with the `sled.*` options.
pub fn open_engine(opts: &Options) -> Result<Arc<dyn Engine>> {
    Ok(Arc::new(SledEngine::open(opts)?))
}

impl SledEngine {
    pub fn open(opts: &Options) -> Result<SledEngine> {
        let dir = opts.path("dir", "data/sled");
        let memory = if opts.is_set("memory") {
            Some(opts.bytes("memory", 0)?)
        } else {
            None
        };
        let cache = match memory {
            Some(m) if !opts.is_set("cache") => m / 8,
            _ => opts.bytes("cache", 256 << 20)?,
        };
        let flush = opts.choice("flush", "periodic", &["periodic", "every", "never"])?;
        let flush_ms = opts.u64("flush_ms", 500)?;
        let mode = opts.choice("mode", "fast", &["fast", "small"])?;
        opts.finish()?;
        if flush == "periodic" && flush_ms == 0 {
            return Err(Error::InvalidArgument(
                "sled.flush_ms must be positive with sled.flush=periodic".into(),
            ));
        }
        let lock = claim_dir(&dir, "sled")?;
        let config = sled::Config::new()
            .path(dir.join("sled"))
            .cache_capacity(cache)
            .flush_every_ms(if flush == "periodic" {
                Some(flush_ms)
            } else {
                None
            })
            .mode(if mode == "fast" {
                sled::Mode::HighThroughput
            } else {
                sled::Mode::LowSpace
            });
        let db = open_when_released(&config)?;
        let (durability, setting) = match flush.as_str() {
            // Not `power`: sled 0.34.7 makes a flush durable on Linux with
            // sync_file_range (pagecache/iobuf.rs), which neither flushes the
            // device's write cache nor commits file metadata, so a power cut can
            // lose flushed writes: `ycsb crash --power` found 26 of 58 acknowledged
            // writes missing from the first synced image (2026-12-01).
            "every" => (
                Durability::Process,
                "Db::flush after every write (sled's flush is sync_file_range, not \
                 fsync: the write has left the process, but neither the device's cache \
                 nor the file's metadata is flushed, so a power cut can lose it)"
                    .to_string(),
            ),
            "periodic" => (
                Durability::None,
                format!(
                    "background flush every {flush_ms} ms; unflushed writes die with the process"
                ),
            ),
            _ => (Durability::None, "flushed only on close".to_string()),
        };
        let mut settings = opts.resolved();
        let mut notes = vec![
            "no direct I/O: reads and writes go through the OS page cache of sled's files, \
             which sled cannot bound: bounded only by the driver's memory cgroup"
                .to_string(),
            "sled.cache bounds sled's own cache only; sled holds much more (its page table, \
             buffers, about 70-85 MiB at 100-300K items of 1 KiB, measured) and reports no \
             memory figures"
                .to_string(),
        ];
        if let Some(m) = memory {
            if !opts.is_set("cache") {
                settings.push(("cache".into(), cache.to_string()));
            }
            settings.push((
                "memory_split".into(),
                if opts.is_set("cache") {
                    format!(
                        "sled.cache ({cache} bytes) overrides the budget's eighth; the rest of \
                         the {m} bytes to the OS page cache of sled's files"
                    )
                } else {
                    format!(
                        "sled's cache = memory / 8 ({cache} bytes); the rest of the {m} bytes \
                         to sled's own memory outside its cache and the OS page cache of its \
                         files (bounded only by the driver's memory cgroup)"
                    )
                },
            ));
            notes.push(
                "sled.memory: reads through the OS page cache: bounded only by the driver's \
                 memory cgroup"
                    .into(),
            );
        }
        let info = EngineInfo {
            engine: "sled".into(),
            durability,
            durability_setting: setting,
            cache_bytes: Some(cache),
            direct_io: Some(false),
            settings,
            notes,
            limits: LIMITS,
        };
        Ok(SledEngine {
            db: RwLock::new(Some(db)),
            lock: Mutex::new(Some(lock)),
            flush_each_write: flush == "every",
            info,
            dir,
            flushes: AtomicU64::new(0),
        })
    }

    fn with_db<T>(&self, f: impl FnOnce(&sled::Db) -> Result<T>) -> Result<T> {
        let guard = self
            .db
            .read()
            .map_err(|_| Error::Poisoned("a sled call panicked".into()))?;
        match guard.as_ref() {
            Some(db) => f(db),
            None => Err(Error::Closed),
        }
    }

    fn after_write(&self, db: &sled::Db) -> Result<()> {
        if self.flush_each_write {
            db.flush().map_err(|e| sled_err("flush", e))?;
            self.flushes.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        LIMITS.check_put(key, value)?;
        self.with_db(|db| {
            db.insert(key, value).map_err(|e| sled_err("insert", e))?;
            self.after_write(db)
        })
    }
}

impl Engine for SledEngine {
    fn info(&self) -> EngineInfo {
        self.info.clone()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        LIMITS.check_key(key)?;
        self.with_db(|db| {
            Ok(db
                .get(key)
                .map_err(|e| sled_err("get", e))?
                .map(|v| v.to_vec()))
        })
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put(key, value)
    }

    fn update(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put(key, value)
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        LIMITS.check_key(key)?;
        self.with_db(|db| {
            db.remove(key).map_err(|e| sled_err("remove", e))?;
            self.after_write(db)
        })
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<Vec<Pair>> {
        self.with_db(|db| {
            db.range(start..)
                .take(count)
                .map(|r| {
                    r.map(|(k, v)| (k.to_vec(), v.to_vec()))
                        .map_err(|e| sled_err("scan", e))
                })
                .collect()
        })
    }

    fn counters(&self) -> Counters {
        let on_disk = self.with_db(|db| Ok(db.size_on_disk().ok())).ok().flatten();
        let mut extra = vec![("flushes".to_string(), self.flushes.load(Ordering::Relaxed))];
        if let Some(b) = on_disk {
            extra.push(("size_on_disk".to_string(), b));
        }
        Counters {
            extra,
            ..Counters::default()
        }
    }

    fn close(&self) -> Result<()> {
        let db = self
            .db
            .write()
            .map_err(|_| Error::Poisoned("a sled call panicked".into()))?
            .take();
        let result = match db {
            Some(db) => db
                .flush()
                .map(|_| ())
                .map_err(|e| sled_err("flush on close", e)),
            None => Ok(()),
        };
        // the directory lock is a hand-off slot: released even after a panic
        kvapi::sync::lock_handoff(&self.lock).take();
        result.map_err(|e| match e {
            Error::Io { context, source } => Error::Io {
                context: format!("{context} ({})", self.dir.display()),
                source,
            },
            other => other,
        })
    }
}

impl Drop for SledEngine {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
