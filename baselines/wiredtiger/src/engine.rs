//! The WiredTiger engine: opening the connection and the table, the operations of
//! the interface, counters and close.

use crate::config::{self, Config};
use crate::error;
use crate::ffi::{self, Connection, EINVAL, Session, stat};
use crate::sessions::Sessions;
use kvapi::{
    Counters, Durability, Engine, EngineInfo, Error, Limits, Options, Pair, Result, claim_dir,
};

/// Keys up to 64 KiB (WiredTiger stores keys over a tenth of a page as overflow
/// items) and values up to 64 MiB, as for RocksDB. WiredTiger refuses the empty key
/// ("Empty keys not permitted"), so the interface does too.
pub(crate) const LIMITS: Limits = Limits {
    max_key: 64 * 1024,
    max_value: 64 * 1024 * 1024,
    empty_key: false,
};

/// An open WiredTiger database.
pub struct WiredTigerEngine {
    sessions: Sessions,
    info: EngineInfo,
}

impl WiredTigerEngine {
    /// Opens (creating if needed) the database in `wiredtiger.dir`.
    pub fn open(o: &Options) -> Result<WiredTigerEngine> {
        let cfg = Config::from_options(o)?;
        o.finish()?;
        let lock = claim_dir(&cfg.dir, "wiredtiger")?;
        std::fs::create_dir_all(&cfg.home)
            .map_err(|e| Error::io(format!("creating {}", cfg.home.display()), e))?;
        let mut notes = Vec::new();
        let (conn, direct_io) =
            match Connection::open(&cfg.home, &cfg.open_config(cfg.direct_io), lock) {
                Ok(conn) => (conn, cfg.direct_io),
                // O_DIRECT refused (EINVAL): the file system does not support it
                Err((e, lock)) if cfg.direct_io && e.code == EINVAL => {
                    match Connection::open(&cfg.home, &cfg.open_config(false), lock) {
                        Ok(conn) => {
                            notes.push(format!(
                                "direct_io=[data] was refused on this file system ({}); data files \
                             use buffered I/O, so the OS page cache also caches data, outside \
                             the budget",
                                e.message
                            ));
                            (conn, false)
                        }
                        Err(_) => return Err(error::map("open", &cfg.home, e)),
                    }
                }
                Err((e, _lock)) => return Err(error::map("open", &cfg.home, e)),
            };
        // the table, created on first open (a no-op later, whatever the configuration:
        // so the one it was created with is checked); opening its cursor reads the
        // tree's root, so a damaged file fails here
        let mut first = Session::open(
            &conn,
            config::SESSION_CONFIG,
            config::TABLE,
            Some(&cfg.table_config()),
            config::CURSOR_CONFIG,
        )
        .map_err(|e| error::map("opening the table", &cfg.home, e))?;
        let created = first
            .metadata(config::TABLE_FILE)
            .map_err(|e| error::map("reading the metadata", &cfg.home, e))?;
        first
            .close()
            .map_err(|e| error::map("opening the table", &cfg.home, e))?;
        cfg.check_created(created.as_deref())?;
        let info = info(o, &cfg, direct_io, notes);
        Ok(WiredTigerEngine {
            sessions: Sessions::new(conn, cfg.home.clone()),
            info,
        })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        LIMITS.check_put(key, value)?;
        self.sessions.with("insert", |s| s.put(key, value))
    }
}

fn info(o: &Options, cfg: &Config, direct_io: bool, mut notes: Vec<String>) -> EngineInfo {
    let mut settings = o.resolved();
    settings.push(("library".into(), ffi::version()));
    settings.push(("wiredtiger_open".into(), cfg.open_config(direct_io)));
    settings.push((
        "create".into(),
        format!("{} {}", config::TABLE, cfg.table_config()),
    ));
    settings.push(("open_session".into(), config::SESSION_CONFIG.into()));
    settings.push(("open_cursor".into(), config::CURSOR_CONFIG.into()));
    notes.push(
        "the paper's WiredTiger (Optane, YCSB, cache 1/3 of the data): a row-store B+ tree \
         with 4 KiB pages and no compression; its exact WiredTiger settings are not \
         published, these are ours"
            .into(),
    );
    notes.push(format!(
        "cache_size ({} MiB) bounds WiredTiger's cache (pages, updates, its own overhead \
         estimate of 8%); allocations outside it come on top: sessions and cursors, the log's \
         slot buffers when the log is on, eviction and checkpoint threads' scratch memory",
        cfg.cache_bytes >> 20
    ));
    if direct_io {
        notes.push(
            "direct I/O for data files: data is cached only in WiredTiger's cache; the log \
             (when on) is written through the OS page cache"
                .into(),
        );
    } else if !cfg.direct_io {
        notes.push(
            "buffered I/O (wiredtiger.direct_io=false): the OS page cache also caches data, \
             outside the budget"
                .into(),
        );
    }
    if cfg.durability != Durability::None {
        notes.push(
            "every operation is its own (autocommit) transaction; commits of concurrent \
             threads are written (and, at power, synced) together by WiredTiger's log slots"
                .into(),
        );
    }
    notes.push(
        "one WiredTiger session (with its cursor) per calling thread; no native asynchronous \
         path (the driver's thread pool gives it a queue depth)"
            .into(),
    );
    EngineInfo {
        engine: "wiredtiger".into(),
        durability: cfg.durability,
        durability_setting: cfg.durability_setting(),
        cache_bytes: Some(cfg.cache_bytes),
        direct_io: Some(direct_io),
        settings,
        notes,
        limits: LIMITS,
    }
}

/// The statistics [`Engine::counters`] reads, in this order.
const STATS: [i32; 15] = [
    stat::BLOCK_READ,
    stat::BLOCK_WRITE,
    stat::BLOCK_BYTE_READ,
    stat::BLOCK_BYTE_WRITE,
    stat::BLOCK_BYTE_WRITE_CHECKPOINT,
    stat::CACHE_PAGES_REQUESTED,
    stat::CACHE_READ,
    stat::CACHE_WRITE,
    stat::CACHE_BYTES_INUSE,
    stat::CACHE_BYTES_DIRTY,
    stat::CACHE_BYTES_MAX,
    stat::CACHE_EVICTION_APP,
    stat::LOG_BYTES_WRITTEN,
    stat::LOG_SYNC,
    stat::TXN_CHECKPOINT,
];

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
        self.sessions.with("remove", |s| s.remove(key))
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<Vec<Pair>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        self.sessions.with("scan", |s| s.scan(start, count))
    }

    fn counters(&self) -> Counters {
        let Ok(v) = self.sessions.with("statistics", |s| s.stats(&STATS)) else {
            return Counters::default();
        };
        let at = |i: usize| {
            v.get(i)
                .copied()
                .flatten()
                .map(|x| u64::try_from(x).unwrap_or(0))
        };
        let [
            block_reads,
            block_writes,
            block_bytes_read,
            block_bytes_written,
            checkpoint_bytes,
            requested,
            pages_read,
            pages_written,
            cache_bytes,
            dirty_bytes,
            cache_max,
            app_evictions,
            log_bytes,
            log_syncs,
            checkpoints,
        ] = std::array::from_fn(at);
        let mut extra = Vec::new();
        for (name, v) in [
            ("memory.cache_bytes", cache_bytes),
            ("cache_bytes_dirty", dirty_bytes),
            ("cache_bytes_max", cache_max),
            ("block_writes", block_writes),
            ("block_bytes_written", block_bytes_written),
            ("checkpoint_bytes_written", checkpoint_bytes),
            ("pages_written_from_cache", pages_written),
            ("pages_evicted_by_application_threads", app_evictions),
            ("log_bytes_written", log_bytes),
            ("log_syncs", log_syncs),
            ("checkpoints", checkpoints),
        ] {
            if let Some(v) = v {
                extra.push((name.to_string(), v));
            }
        }
        Counters {
            device_bytes_read: block_bytes_read,
            // data files and the log: all WiredTiger writes
            device_bytes_written: match (block_bytes_written, log_bytes) {
                (Some(b), Some(l)) => Some(b + l),
                (b, l) => b.or(l),
            },
            device_reads: block_reads,
            // log writes are not counted as I/Os by WiredTiger
            device_writes: None,
            cache_hits: match (requested, pages_read) {
                (Some(r), Some(m)) => Some(r.saturating_sub(m)),
                _ => None,
            },
            cache_misses: pages_read,
            items: None,
            index_bytes: None,
            extra,
        }
    }

    fn close(&self) -> Result<()> {
        self.sessions.close()
    }
}

impl Drop for WiredTigerEngine {
    fn drop(&mut self) {
        let _ = self.sessions.close();
    }
}
