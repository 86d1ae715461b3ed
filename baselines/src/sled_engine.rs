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
//! the memory budget (`sled.cache`, sled's own cache) does not bound. Results say so.

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
        let cache = opts.bytes("cache", 256 << 20)?;
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
        let db = config.open().map_err(|e| sled_err("open", e))?;
        let (durability, setting) = match flush.as_str() {
            "every" => (
                Durability::Power,
                "Db::flush (fsync) after every write".to_string(),
            ),
            "periodic" => (
                Durability::None,
                format!(
                    "background flush every {flush_ms} ms; unflushed writes die with the process"
                ),
            ),
            _ => (Durability::None, "flushed only on close".to_string()),
        };
        let info = EngineInfo {
            engine: "sled".into(),
            durability,
            durability_setting: setting,
            cache_bytes: Some(cache),
            direct_io: Some(false),
            settings: opts.resolved(),
            notes: vec![
                "no direct I/O: data also sits in the OS page cache, outside the memory budget"
                    .into(),
                "sled.cache bounds sled's own page cache only".into(),
            ],
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
