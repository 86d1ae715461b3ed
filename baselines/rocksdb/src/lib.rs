//! The real RocksDB behind the engine interface, configured the way a RocksDB expert
//! would for a fair comparison with KVell (see `open` for every setting and why).
//!
//! Durability (`rocksdb.durability`), named as for every engine:
//! - `none`: WAL disabled; an acknowledged write lives in the memtable only.
//! - `process` (default): WAL written (to the OS) before the acknowledgement, not
//!   synced: survives a killed process, not a power loss.
//! - `power`: WAL synced before the acknowledgement; concurrent writers share a sync
//!   (RocksDB's group commit).
#![deny(unsafe_code)]

use kvapi::{
    Counters, DirLock, Durability, Engine, EngineInfo, Error, Limits, Options, Pair, Result,
    claim_dir,
};
use rocksdb::statistics::Ticker;
use rocksdb::{
    BlockBasedOptions, Cache, DB, DBCompressionType, Direction, IteratorMode, WriteBufferManager,
    WriteOptions,
};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

const LIMITS: Limits = Limits {
    max_key: 64 * 1024,
    max_value: 64 * 1024 * 1024,
    empty_key: true,
};

/// An open RocksDB database.
pub struct RocksEngine {
    db: RwLock<Option<DB>>,
    opts: rocksdb::Options,
    write: WriteOptions,
    lock: Mutex<Option<DirLock>>,
    info: EngineInfo,
    path: PathBuf,
    cache: Cache,
    /// The block cache's capacity now: set at open, changed by the driver's memory
    /// governor through [`Engine::set_cache_capacity`].
    capacity: AtomicU64,
    /// Under a memory budget: the write buffer manager charging memtables to the
    /// block cache.
    wbm: Option<WriteBufferManager>,
}

/// The split of a memory budget (`rocksdb.memory`): one total for the block cache
/// and the memtables, which are charged to it.
struct Split {
    cache: u64,
    write_buffer: u64,
    write_buffers: usize,
    /// The write buffer manager's limit on all memtables.
    memtables: u64,
    /// Read-ahead of each input file of a compaction, and the buffer of each file
    /// a flush or compaction writes.
    readahead: u64,
    file_buffer: u64,
}

impl Split {
    /// The rule: the block cache is 7/8 of the budget, and holds the memtables too
    /// (a write buffer manager built with the cache charges them to it), limited to
    /// a quarter of the budget, writers stalling beyond; each memtable is
    /// min(64 MiB, budget / 8), two of them. The last eighth is for what RocksDB
    /// holds outside its cache (table readers, iterators, flush and compaction
    /// buffers) and for the C allocator's overhead on it all: loading 300K x 1 KiB
    /// into a cache of the whole 64 MiB budget, RocksDB's blocks and memtables took
    /// 63.8 MiB of it, glibc had 65.2 MiB allocated and 5.7 MiB free in its arenas,
    /// and the resident memory grew by 72.7 MiB (1.14 x the budget;
    /// `tests/memory_budget.rs`). Flushes and compactions buffer min(1 MiB, budget
    /// / 256) per file written and read ahead min(2 MiB, budget / 256) per input file
    /// (RocksDB's defaults are 1 and 2 MiB): with the defaults, the same load's
    /// resident memory peaked 10 to 27 MiB above the cache's usage, as compactions of
    /// ten-odd files came and went (1.03 to 1.30 x the budget over five runs), with
    /// 256 KiB 8 to 17 MiB above it (1.00 to 1.03 x over three). Explicit options
    /// win over the split.
    fn of(memory: u64, o: &Options) -> Result<Split> {
        Ok(Split {
            cache: if o.is_set("cache") {
                o.bytes("cache", memory)?
            } else {
                memory - memory / 8
            },
            write_buffer: o.bytes("write_buffer_size", (64 << 20).min(memory / 8))?,
            write_buffers: o.usize("max_write_buffer_number", 2)?,
            memtables: memory / 4,
            readahead: (2 << 20).min(memory / 256),
            file_buffer: (1 << 20).min(memory / 256),
        })
    }
}

fn rerr(what: &str, path: &std::path::Path, e: rocksdb::Error) -> Error {
    match e.kind() {
        rocksdb::ErrorKind::Corruption => Error::Corruption {
            file: path.to_path_buf(),
            offset: 0,
            detail: format!("RocksDB {what}: {}", e.into_string()),
        },
        rocksdb::ErrorKind::IOError => Error::io(
            format!("RocksDB {what} in {}", path.display()),
            std::io::Error::other(e.into_string()),
        ),
        rocksdb::ErrorKind::InvalidArgument => {
            Error::InvalidArgument(format!("RocksDB {what}: {}", e.into_string()))
        }
        _ => Error::Engine(format!(
            "RocksDB {what} in {}: {}",
            path.display(),
            e.into_string()
        )),
    }
}

/// Opens RocksDB with the `rocksdb.*` options.
pub fn open_engine(opts: &Options) -> Result<Arc<dyn Engine>> {
    Ok(Arc::new(RocksEngine::open(opts)?))
}

impl RocksEngine {
    pub fn open(o: &Options) -> Result<RocksEngine> {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let dir = o.path("dir", "data/rocksdb");
        let memory = if o.is_set("memory") {
            Some(o.bytes("memory", 0)?)
        } else {
            None
        };
        let split = match memory {
            Some(m) => Some(Split::of(m, o)?),
            None => None,
        };
        let (cache_bytes, write_buffer, write_buffers) = match &split {
            Some(s) => (s.cache, s.write_buffer, s.write_buffers),
            None => (
                o.bytes("cache", 256 << 20)?,
                o.bytes("write_buffer_size", 64 << 20)?,
                o.usize("max_write_buffer_number", 2)?,
            ),
        };
        let durability = o.choice("durability", "process", &["none", "process", "power"])?;
        let direct_reads = o.bool("direct_reads", true)?;
        let direct_bg = o.bool("direct_flush_compaction", true)?;
        let bloom_bits = o.f64("bloom_bits", 10.0)?;
        let compression = o.choice("compression", "none", &["none", "lz4"])?;
        let level_base = o.bytes("max_bytes_for_level_base", 256 << 20)?;
        let file_base = o.bytes("target_file_size_base", 64 << 20)?;
        let jobs = o.usize("max_background_jobs", cores.max(2))?;
        let block_size = o.bytes("block_size", 4096)?;
        o.finish()?;
        if write_buffers < 1 || jobs < 1 || block_size < 512 {
            return Err(Error::InvalidArgument(
                "rocksdb.max_write_buffer_number and max_background_jobs must be at least 1, block_size at least 512".into(),
            ));
        }
        let lock = claim_dir(&dir, "rocksdb")?;
        let path = dir.join("db");
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.set_max_background_jobs(jobs as i32);
        opts.set_write_buffer_size(write_buffer as usize);
        opts.set_max_write_buffer_number(write_buffers as i32);
        opts.set_max_bytes_for_level_base(level_base);
        opts.set_target_file_size_base(file_base);
        opts.set_level_compaction_dynamic_level_bytes(true);
        opts.set_compression_type(if compression == "lz4" {
            DBCompressionType::Lz4
        } else {
            DBCompressionType::None
        });
        opts.set_use_direct_reads(direct_reads);
        opts.set_use_direct_io_for_flush_and_compaction(direct_bg);
        opts.set_bytes_per_sync(1 << 20);
        opts.enable_statistics();

        let cache = Cache::new_lru_cache(cache_bytes as usize);
        // Under a budget the memtables are charged to the block cache, so one
        // capacity bounds both; writers stall while they exceed their share.
        let wbm = split.as_ref().map(|s| {
            WriteBufferManager::new_write_buffer_manager_with_cache(
                s.memtables as usize,
                true,
                cache.clone(),
            )
        });
        if let Some(w) = &wbm {
            opts.set_write_buffer_manager(w);
        }
        if let Some(s) = &split {
            opts.set_compaction_readahead_size(s.readahead as usize);
            opts.set_writable_file_max_buffer_size(s.file_buffer);
        }
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_block_size(block_size as usize);
        if bloom_bits > 0.0 {
            table.set_bloom_filter(bloom_bits, false);
        }
        // index and filter blocks live in the block cache, so the cache budget bounds them
        table.set_cache_index_and_filter_blocks(true);
        table.set_pin_l0_filter_and_index_blocks_in_cache(true);
        opts.set_block_based_table_factory(&table);
        let db = DB::open(&opts, &path).map_err(|e| rerr("open", &path, e))?;
        let mut write = WriteOptions::default();
        let (class, setting) = match durability.as_str() {
            "none" => {
                write.disable_wal(true);
                (
                    Durability::None,
                    "WAL disabled: acknowledged in the memtable".to_string(),
                )
            }
            "power" => {
                write.set_sync(true);
                (
                    Durability::Power,
                    "WAL fsync before every acknowledgement (group commit across writers)"
                        .to_string(),
                )
            }
            _ => (
                Durability::Process,
                "WAL written to the OS before the acknowledgement, not synced".to_string(),
            ),
        };
        let mut settings = o.resolved();
        settings.push(("compaction".into(), "leveled, dynamic level bytes".into()));
        settings.push((
            "cache_index_and_filter_blocks".into(),
            "true (pinned for L0)".into(),
        ));
        let memtables = write_buffer * write_buffers as u64;
        let mut notes = Vec::new();
        match (&split, memory) {
            (Some(s), Some(_)) => {
                settings.push((
                    "memory_split".into(),
                    format!(
                        "block cache {} bytes{} holding data, index and filter blocks and \
                         the memtables, charged to it by a write buffer manager (limit {} \
                         bytes = memory / 4, writers stall beyond it); {} memtables of {} \
                         bytes{}; the last eighth of memory for what RocksDB holds outside \
                         its cache (table readers, iterators, flush and compaction buffers) \
                         and the allocator's overhead",
                        s.cache,
                        if o.is_set("cache") {
                            " (rocksdb.cache overrides 7/8 of memory)"
                        } else {
                            " (7/8 of memory)"
                        },
                        s.memtables,
                        s.write_buffers,
                        s.write_buffer,
                        if o.is_set("write_buffer_size") {
                            " (rocksdb.write_buffer_size overrides min(64 MiB, memory / 8))"
                        } else {
                            " (min(64 MiB, memory / 8))"
                        }
                    ),
                ));
                settings.push((
                    "compaction_readahead_size".into(),
                    format!("{} (min(2 MiB, memory / 256))", s.readahead),
                ));
                settings.push((
                    "writable_file_max_buffer_size".into(),
                    format!("{} (min(1 MiB, memory / 256))", s.file_buffer),
                ));
                settings.push((
                    "strict_capacity_limit".into(),
                    "false: with it a block read that cannot be cached fails instead of \
                     exceeding the capacity (and rust-rocksdb does not expose it)"
                        .into(),
                ));
                notes.push(format!(
                    "rocksdb.memory: memtables (up to {} MiB) are charged to the {} MiB block \
                     cache, so the cache's capacity bounds blocks and memtables together; \
                     outside it, in the budget's last eighth: table readers \
                     (memory.table_readers), iterators, compaction and flush buffers, \
                     RocksDB's threads and glibc's fragmentation (RocksDB's C++ code \
                     allocates with glibc malloc)",
                    s.memtables >> 20,
                    s.cache >> 20
                ));
            }
            _ => notes.push(format!(
                "memtables (up to {} MiB: {} x {} MiB) come on top of the block cache (no \
                 rocksdb.memory budget)",
                memtables >> 20,
                write_buffers,
                write_buffer >> 20
            )),
        }
        notes.push(if direct_reads {
            "direct reads: data is cached only in the block cache".into()
        } else {
            "buffered reads: the OS page cache also caches data, outside the budget (bounded \
             only by the driver's memory cgroup)"
                .into()
        });
        notes.push(
            "the WAL is written through the OS page cache: its pages are outside the \
             engine's accounting, bounded only by the driver's memory cgroup"
                .into(),
        );
        let info = EngineInfo {
            engine: "rocksdb".into(),
            durability: class,
            durability_setting: setting,
            cache_bytes: Some(cache_bytes),
            direct_io: Some(direct_reads),
            settings,
            notes,
            limits: LIMITS,
        };
        Ok(RocksEngine {
            db: RwLock::new(Some(db)),
            opts,
            write,
            lock: Mutex::new(Some(lock)),
            info,
            path,
            cache,
            capacity: AtomicU64::new(cache_bytes),
            wbm,
        })
    }

    fn with_db<T>(&self, f: impl FnOnce(&DB) -> Result<T>) -> Result<T> {
        let g = self
            .db
            .read()
            .map_err(|_| Error::Poisoned("a RocksDB call panicked".into()))?;
        match g.as_ref() {
            Some(db) => f(db),
            None => Err(Error::Closed),
        }
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        LIMITS.check_put(key, value)?;
        self.with_db(|db| {
            db.put_opt(key, value, &self.write)
                .map_err(|e| rerr("put", &self.path, e))
        })
    }
}

impl Engine for RocksEngine {
    fn info(&self) -> EngineInfo {
        self.info.clone()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        LIMITS.check_key(key)?;
        self.with_db(|db| {
            db.get_pinned(key)
                .map(|v| v.map(|s| s.to_vec()))
                .map_err(|e| rerr("get", &self.path, e))
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
            db.delete_opt(key, &self.write)
                .map_err(|e| rerr("delete", &self.path, e))
        })
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<Vec<Pair>> {
        self.with_db(|db| {
            db.iterator(IteratorMode::From(start, Direction::Forward))
                .take(count)
                .map(|r| {
                    r.map(|(k, v)| (k.to_vec(), v.to_vec()))
                        .map_err(|e| rerr("scan", &self.path, e))
                })
                .collect()
        })
    }

    fn counters(&self) -> Counters {
        let t = |x: Ticker| self.opts.get_ticker_count(x);
        let mut extra = vec![
            (
                "compaction_read_bytes".to_string(),
                t(Ticker::CompactReadBytes),
            ),
            (
                "compaction_write_bytes".to_string(),
                t(Ticker::CompactWriteBytes),
            ),
            ("flush_write_bytes".to_string(), t(Ticker::FlushWriteBytes)),
            ("wal_bytes".to_string(), t(Ticker::WalFileBytes)),
            ("wal_syncs".to_string(), t(Ticker::WalFileSynced)),
            ("stall_micros".to_string(), t(Ticker::StallMicros)),
            ("user_bytes_written".to_string(), t(Ticker::BytesWritten)),
            ("user_bytes_read".to_string(), t(Ticker::BytesRead)),
        ];
        let prop = |name: &str| {
            self.with_db(|db| Ok(db.property_int_value(name).ok().flatten()))
                .ok()
                .flatten()
        };
        if let Some(n) = prop("rocksdb.estimate-num-keys") {
            extra.push(("estimate_num_keys".to_string(), n));
        }
        // Memory gauges, disjoint so that they add up: the block cache less the
        // memtables' charge in it (data, index and filter blocks), the memtables,
        // the table readers. The pinned part is within the block cache's.
        let usage = self.cache.get_usage() as u64;
        let charged = self.wbm.as_ref().map_or(0, |w| w.get_usage() as u64);
        extra.push(("memory.block_cache".into(), usage - charged.min(usage)));
        if let Some(m) = prop("rocksdb.cur-size-all-mem-tables") {
            extra.push(("memory.memtables".into(), m));
        }
        if let Some(t) = prop("rocksdb.estimate-table-readers-mem") {
            extra.push(("memory.table_readers".into(), t));
        }
        extra.push((
            "block_cache_pinned_bytes".into(),
            self.cache.get_pinned_usage() as u64,
        ));
        extra.push(("block_cache_usage_bytes".into(), usage));
        extra.push((
            "block_cache_capacity_bytes".into(),
            self.capacity.load(Ordering::Relaxed),
        ));
        // device bytes: what RocksDB itself wrote to files (WAL, flushes, compactions)
        let written =
            t(Ticker::WalFileBytes) + t(Ticker::FlushWriteBytes) + t(Ticker::CompactWriteBytes);
        Counters {
            device_bytes_written: Some(written),
            cache_hits: Some(t(Ticker::BlockCacheHit)),
            cache_misses: Some(t(Ticker::BlockCacheMiss)),
            extra,
            ..Counters::default()
        }
    }

    fn close(&self) -> Result<()> {
        let db = self
            .db
            .write()
            .map_err(|_| Error::Poisoned("a RocksDB call panicked".into()))?
            .take();
        let r = match db {
            // make memtable-only writes durable too, then close
            Some(db) => db
                .flush()
                .map_err(|e| rerr("flush on close", &self.path, e)),
            None => Ok(()),
        };
        // the directory lock is a hand-off slot: released even after a panic
        kvapi::sync::lock_handoff(&self.lock).take();
        r
    }

    fn cache_capacity(&self) -> Option<u64> {
        Some(self.capacity.load(Ordering::Relaxed))
    }

    /// `Cache::SetCapacity`: a smaller capacity evicts unpinned blocks down to it at
    /// once; the memtables' charge (the write buffer manager's dummy entries) stays
    /// in the cache and is evicted last.
    fn set_cache_capacity(&self, bytes: u64) -> Result<()> {
        let mut cache = self.cache.clone();
        cache.set_capacity(bytes as usize);
        self.capacity.store(bytes, Ordering::Relaxed);
        Ok(())
    }
}

impl Drop for RocksEngine {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
