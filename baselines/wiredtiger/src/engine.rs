//! The WiredTiger engine: opening the connection and the table, the operations of
//! the interface and close.

use crate::config::{self, Config, LIMITS};
use crate::ffi::{Connection, EINVAL, Session};
use crate::keylocks::{KeyLocks, WriteTickets};
use crate::sessions::Sessions;
use crate::{counters, error, info};
use kvapi::{Counters, DirLock, Engine, EngineInfo, Error, Options, Pair, Result, claim_dir};

/// An open WiredTiger database.
pub struct WiredTigerEngine {
    sessions: Sessions,
    /// Writers of one key, one at a time (see `keylocks`).
    writers: KeyLocks,
    /// How many writes are inside WiredTiger at once (`wiredtiger.write_tickets`).
    tickets: WriteTickets,
    info: EngineInfo,
    trimmer: Trimmer,
    /// `cache_size` now: set at open, changed by the driver's memory governor
    /// (`Engine::set_cache_capacity`).
    capacity: std::sync::atomic::AtomicU64,
    /// The least `cache_size` the governor may set under a budget: the opening
    /// size, at most [`GOVERNED_FLOOR`] (none without a budget).
    floor: u64,
}

/// WiredTiger's smallest `cache_size`.
const MIN_CACHE: u64 = 1 << 20;

/// Below this the governor does not shrink WiredTiger's cache: with 64 sessions
/// writing, a cache of a few MiB left every writer waiting in
/// `__wt_cache_eviction_worker` for good (a CI run of reproduce-paper at ci scale,
/// 20K records, hung 8 minutes there); an engine held above its share this way is
/// measured and flagged over budget, not hung.
const GOVERNED_FLOOR: u64 = 8 << 20;

/// How often the trimmer drops the log's pages from the OS page cache
/// (`wiredtiger.log_os_cache=drop`): at 30 MB/s of log, about 3 MB a tick.
const LOG_DROP_EVERY: std::time::Duration = std::time::Duration::from_millis(100);
/// The C heap is trimmed every this many ticks (once a second).
const HEAP_TRIM_TICKS: u32 = 10;

/// A thread that, while the engine is open, trims the C heap once a second (see
/// `ffi::heap`) and, with a log whose page cache is dropped, drops it every
/// [`LOG_DROP_EVERY`] (see `ffi::oscache`).
struct Trimmer {
    stop: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Trimmer {
    /// `log_home`: WiredTiger's home, whose log files are dropped from the page
    /// cache; `None` keeps them.
    fn start(log_home: Option<std::path::PathBuf>) -> Result<Trimmer> {
        let stop = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let s2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("wt-heap-trim".into())
            .spawn(move || {
                let (lock, cv) = &*s2;
                let mut stopped = kvapi::sync::lock_handoff(lock);
                let mut tick = 0u32;
                while !*stopped {
                    stopped = kvapi::sync::wait_timeout_handoff(cv, stopped, LOG_DROP_EVERY);
                    if let Some(home) = &log_home {
                        crate::ffi::oscache::drop_log_pages(home);
                    }
                    tick += 1;
                    if tick.is_multiple_of(HEAP_TRIM_TICKS) {
                        crate::ffi::heap::trim();
                    }
                }
            })
            .map_err(|e| Error::io("starting the heap trimmer", e))?;
        Ok(Trimmer {
            stop,
            thread: std::sync::Mutex::new(Some(thread)),
        })
    }

    fn stop(&self) {
        let (lock, cv) = &*self.stop;
        *kvapi::sync::lock_handoff(lock) = true;
        cv.notify_all();
        if let Some(t) = kvapi::sync::lock_handoff(&self.thread).take() {
            let _ = t.join();
        }
    }
}

impl WiredTigerEngine {
    /// Opens (creating if needed) the database in `wiredtiger.dir`.
    pub fn open(o: &Options) -> Result<WiredTigerEngine> {
        let cfg = Config::from_options(o)?;
        o.finish()?;
        let lock = claim_dir(&cfg.dir, "wiredtiger")?;
        std::fs::create_dir_all(&cfg.home)
            .map_err(|e| Error::io(format!("creating {}", cfg.home.display()), e))?;
        let (conn, direct_io, notes) = connect(&cfg, lock)?;
        open_table(&conn, &cfg)?;
        let info = info::engine_info(o, &cfg, direct_io, notes);
        Ok(WiredTigerEngine {
            sessions: Sessions::new(conn, cfg.home.clone()),
            writers: KeyLocks::new(),
            tickets: WriteTickets::new(cfg.write_tickets),
            info,
            trimmer: Trimmer::start(cfg.drops_log_pages().then(|| cfg.home.clone()))?,
            capacity: std::sync::atomic::AtomicU64::new(cfg.cache_bytes),
            // the governor acts only on an engine opened with a budget
            floor: if cfg.memory.is_some() {
                cfg.cache_bytes.min(GOVERNED_FLOOR)
            } else {
                0
            },
        })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        LIMITS.check_put(key, value)?;
        let _writer = self.writers.hold(key);
        let _ticket = self.tickets.take();
        self.sessions.with("insert", |s| s.put(key, value))
    }
}

/// `wiredtiger_open`, with direct I/O for data files if asked; a file system that
/// refuses O_DIRECT (EINVAL) gets buffered I/O and a note saying so.
fn connect(cfg: &Config, lock: DirLock) -> Result<(Connection, bool, Vec<String>)> {
    let e = match Connection::open(&cfg.home, &cfg.open_config(cfg.direct_io), lock) {
        Ok(conn) => return Ok((conn, cfg.direct_io, Vec::new())),
        Err((e, lock)) if cfg.direct_io && e.code == EINVAL => {
            match Connection::open(&cfg.home, &cfg.open_config(false), lock) {
                Ok(conn) => {
                    let note = format!(
                        "direct_io=[data] was refused on this file system ({}); data files use \
                     buffered I/O, so the OS page cache also caches data, outside the budget",
                        e.message
                    );
                    return Ok((conn, false, vec![note]));
                }
                // the retry failing too says the first error was not about O_DIRECT
                Err(_) => e,
            }
        }
        Err((e, _lock)) => e,
    };
    Err(error::map("open", &cfg.home, e))
}

/// Creates the table on first open (a no-op later, whatever the configuration, so
/// the one it was created with is checked). Opening its cursor reads the tree's root:
/// a damaged file fails here.
fn open_table(conn: &Connection, cfg: &Config) -> Result<()> {
    let map = |what: &'static str| move |e| error::map(what, &cfg.home, e);
    let mut first = Session::open(
        conn,
        config::SESSION_CONFIG,
        config::TABLE,
        Some(&cfg.table_config()),
        config::CURSOR_CONFIG,
    )
    .map_err(map("opening the table"))?;
    let created = first
        .metadata(config::TABLE_FILE)
        .map_err(map("reading the metadata"))?;
    first.close().map_err(map("opening the table"))?;
    cfg.check_created(created.as_deref())
}

impl Engine for WiredTigerEngine {
    fn info(&self) -> EngineInfo {
        self.info.clone()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        LIMITS.check_key(key)?;
        self.sessions.with("search", |s| s.get(key))
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put(key, value)
    }

    fn update(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put(key, value)
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        LIMITS.check_key(key)?;
        let _writer = self.writers.hold(key);
        let _ticket = self.tickets.take();
        self.sessions.with("remove", |s| s.remove(key))
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<Vec<Pair>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        self.sessions.with("scan", |s| s.scan(start, count))
    }

    fn counters(&self) -> Counters {
        match self
            .sessions
            .with("statistics", |s| s.stats(&counters::STATS))
        {
            Ok(v) => {
                let mut c = counters::from_statistics(&v);
                c.extra
                    .push(("key_lock_waits".to_string(), self.writers.waits()));
                c.extra
                    .push(("write_ticket_waits".to_string(), self.tickets.waits()));
                c
            }
            // closed (or WiredTiger failed): nothing to report
            Err(_) => Counters::default(),
        }
    }

    fn close(&self) -> Result<()> {
        self.trimmer.stop();
        self.sessions.close()
    }

    fn cache_capacity(&self) -> Option<u64> {
        Some(self.capacity.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// `WT_CONNECTION::reconfigure("cache_size=N")`, at least WiredTiger's 1 MiB; a
    /// smaller cache makes its eviction threads write and drop pages down to it.
    fn set_cache_capacity(&self, bytes: u64) -> Result<()> {
        let bytes = bytes.max(MIN_CACHE).max(self.floor);
        self.sessions.reconfigure(&format!("cache_size={bytes}"))?;
        self.capacity
            .store(bytes, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

impl Drop for WiredTigerEngine {
    fn drop(&mut self) {
        self.trimmer.stop();
        let _ = self.sessions.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::oscache::{cached_bytes, is_log_file};

    /// The log files' bytes in the OS page cache, after 24 MB of values at durability
    /// `process` (the log written to the OS at every commit, never synced).
    fn log_cached_after_writes(keep: &str) -> u64 {
        let t = kvtestkit::TempDir::new(&format!("wt-logcache-{keep}"));
        let d = t.path().display().to_string();
        let e = WiredTigerEngine::open(&Options::new(
            "wiredtiger",
            &[
                ("dir", &d),
                ("durability", "process"),
                ("cache", "64M"),
                ("log_os_cache", keep),
            ],
        ))
        .unwrap();
        let value = vec![0x5a; 8192];
        for i in 0..3000u32 {
            e.update(format!("key{i:08}").as_bytes(), &value).unwrap();
        }
        // the dirty pages' writeback, started at one tick, done by a later one
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let home = t.path().join(config::HOME);
        let mut cached = 0;
        for f in std::fs::read_dir(&home).unwrap().flatten() {
            if f.file_name().to_str().is_some_and(is_log_file) {
                cached += cached_bytes(&f.path());
            }
        }
        e.close().unwrap();
        cached
    }

    #[test]
    fn the_log_leaves_the_page_cache_unless_kept() {
        let kept = log_cached_after_writes("keep");
        let dropped = log_cached_after_writes("drop");
        eprintln!("log bytes in the page cache: kept {kept}, dropped {dropped}");
        assert!(kept > 16 << 20, "kept: only {kept} bytes of the log cached");
        assert!(
            dropped < 8 << 20,
            "dropped: {dropped} bytes of the log cached"
        );
    }
}
