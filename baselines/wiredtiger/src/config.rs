//! The `wiredtiger.*` options and the WiredTiger configuration strings made from
//! them: the connection (`wiredtiger_open`), the table (`WT_SESSION::create`), the
//! sessions and cursors. Every string is stated in the engine's info as it is
//! passed, so a reader of a result sees exactly what ran.

use kvapi::{Durability, Error, Limits, Options, Result};
use std::path::PathBuf;

/// The one table: a row-store B+ tree of raw byte keys and values.
pub(crate) const TABLE: &str = "table:kv";
/// The file of [`TABLE`], whose metadata holds the configuration it was created with.
pub(crate) const TABLE_FILE: &str = "file:kv.wt";
/// Sessions: snapshot isolation, so that concurrent writes to one key conflict.
///
/// Decision: under WiredTiger's default, `read-committed`, a write does no conflict
/// check at all (`__wt_txn_update_check` returns at once for any isolation but
/// snapshot, txn.i in 3.2.1): two concurrent writes to one key both go into its
/// update chain, in one order, and commit, each writing its log record, in the other
/// order if the first one's commit is slower. The store then answers with the
/// chain's order while the log, which recovery replays, says the other: the
/// durability audit caught a kill reviving a value that an acknowledged delete,
/// issued after it was acknowledged, had removed (cycle 782 of 2000, class
/// `process`, 2026-12-02: the put's commit record 90 KB after the remove's in the
/// log). Under snapshot isolation the second write meets the first, uncommitted,
/// one, rolls back and is retried until the first commits (WiredTiger retries an
/// autocommit cursor write on `WT_ROLLBACK` itself: `TXN_API_END_RETRY`, api.h), so
/// a key's update chain and its log records are in commit order. The retries are
/// the counter `write_conflicts`. Since the adapter serialises a key's writers
/// before they enter WiredTiger (`keylocks`), such meetings no longer happen in
/// the adapter's own calls; snapshot isolation stays as the guarantee that does not
/// depend on the adapter.
pub(crate) const SESSION_CONFIG: &str = "isolation=snapshot";
/// Cursors: insert is an upsert and remove of a missing key succeeds.
pub(crate) const CURSOR_CONFIG: &str = "overwrite=true";
/// The subdirectory of the data directory that is WiredTiger's home.
pub(crate) const HOME: &str = "db";
/// The unit of file allocation (WiredTiger's default, the device page).
const ALLOCATION_SIZE: u64 = 4096;

/// Keys up to 64 KiB (WiredTiger stores keys over a tenth of a page as overflow
/// items) and values up to 64 MiB, as for RocksDB. WiredTiger refuses the empty key
/// ("Empty keys not permitted"), so the interface does too.
pub(crate) const LIMITS: Limits = Limits {
    max_key: 64 * 1024,
    max_value: 64 * 1024 * 1024,
    empty_key: false,
};

/// The resolved options.
pub(crate) struct Config {
    /// The data directory the engine claims (marker and lock files).
    pub(crate) dir: PathBuf,
    /// WiredTiger's home, a subdirectory of `dir`.
    pub(crate) home: PathBuf,
    pub(crate) durability: Durability,
    /// The memory budget (`wiredtiger.memory`), which sizes the cache unless
    /// `wiredtiger.cache` is given.
    pub(crate) memory: Option<u64>,
    pub(crate) cache_bytes: u64,
    pub(crate) direct_io: bool,
    pub(crate) checkpoint_secs: u64,
    pub(crate) session_max: u64,
    pub(crate) log_file_max: u64,
    /// `wiredtiger.log_os_cache`: drop the log files' pages from the OS page cache
    /// (`drop`, the default) or leave them to the kernel (`keep`).
    pub(crate) log_os_cache_drop: bool,
    pub(crate) leaf_page_max: u64,
    pub(crate) internal_page_max: u64,
    pub(crate) eviction_threads_min: u64,
    pub(crate) eviction_threads_max: u64,
    /// `wiredtiger.write_tickets`: at most this many writes inside WiredTiger at
    /// once (0: no limit).
    pub(crate) write_tickets: usize,
}

/// `wiredtiger.write_tickets` by default: two per CPU this process may run on (4 on
/// the 2-core development VM); see DESIGN.md, "Write tickets".
fn default_write_tickets() -> u64 {
    std::thread::available_parallelism().map_or(2, |n| n.get() as u64) * 2
}

/// The cache a memory budget (`wiredtiger.memory`) gives WiredTiger: the budget,
/// rounded down to whole KiB so the configuration states it exactly.
pub(crate) fn cache_of_budget(memory: u64) -> u64 {
    memory / 1024 * 1024
}

/// A size the way WiredTiger's configuration writes it (KB, MB, GB are powers of
/// 1024), exact.
fn size(bytes: u64) -> String {
    for (unit, shift) in [("GB", 30), ("MB", 20), ("KB", 10)] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// The smallest cache WiredTiger accepts.
const MIN_CACHE: u64 = 1 << 20;

fn range(name: &str, v: u64, lo: u64, hi: u64, what: &str) -> Result<u64> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(Error::InvalidArgument(format!(
            "wiredtiger.{name} = {v} is out of range: {what}"
        )))
    }
}

fn page(name: &str, v: u64) -> Result<u64> {
    range(name, v, 512, 512 << 20, "a page is 512 B to 512 MiB")?;
    if !v.is_multiple_of(ALLOCATION_SIZE) {
        return Err(Error::InvalidArgument(format!(
            "wiredtiger.{name} = {v} must be a multiple of the 4 KiB allocation size"
        )));
    }
    Ok(v)
}

impl Config {
    /// Reads the `wiredtiger.*` options (the caller runs `Options::finish`).
    pub(crate) fn from_options(o: &Options) -> Result<Config> {
        let dir = o.path("dir", "data/wiredtiger");
        let durability = Durability::parse(&o.choice(
            "durability",
            "process",
            &["none", "process", "power"],
        )?)?;
        let memory = if o.is_set("memory") {
            Some(o.bytes("memory", 0)?)
        } else {
            None
        };
        let cache_bytes = match memory {
            // Decision: a budget below the smallest cache WiredTiger accepts cannot be
            // held, so the open refuses it as over budget (as the WAL engine refuses an
            // image larger than its budget): the driver shows the engine apart as over
            // budget instead of running it with more memory than the others.
            Some(m) if !o.is_set("cache") && cache_of_budget(m) < MIN_CACHE => {
                return Err(Error::OverBudget {
                    what: "WiredTiger's cache, whose smallest size is 1 MiB".into(),
                    needed: MIN_CACHE,
                    budget: m,
                });
            }
            Some(m) if !o.is_set("cache") => range(
                "memory",
                cache_of_budget(m),
                MIN_CACHE,
                10 << 40,
                "the cache it gives WiredTiger must be 1 MiB to 10 TiB",
            )?,
            _ => range(
                "cache",
                o.bytes("cache", 256 << 20)?,
                MIN_CACHE,
                10 << 40,
                "WiredTiger's cache is 1 MiB to 10 TiB",
            )?,
        };
        let direct_io = o.bool("direct_io", true)?;
        let checkpoint_secs = range(
            "checkpoint_secs",
            o.u64("checkpoint_secs", 60)?,
            0,
            100_000,
            "0 (no periodic checkpoints) to 100000 seconds",
        )?;
        let session_max = range(
            "session_max",
            o.u64("session_max", 1024)?,
            16,
            1 << 20,
            "at least 16 (WiredTiger's own threads use sessions too)",
        )?;
        let log_file_max = range(
            "log_file_max",
            o.bytes("log_file_max", 100 << 20)?,
            100 << 10,
            2 << 30,
            "a log file is 100 KiB to 2 GiB",
        )?;
        // Decision: drop by default. The log is written, and read only by recovery;
        // left in the page cache it is charged to the engine's budget (the driver
        // measures the page cache of an engine's files) and took 108 to 120 MiB of a
        // 162.8 MiB budget, for nothing (ffi/oscache.rs). `keep` is WiredTiger as it
        // ships.
        let log_os_cache_drop = o.choice("log_os_cache", "drop", &["drop", "keep"])? == "drop";
        let leaf_page_max = page("leaf_page_max", o.bytes("leaf_page_max", 4096)?)?;
        let internal_page_max = page("internal_page_max", o.bytes("internal_page_max", 4096)?)?;
        let eviction_threads_min = range(
            "eviction_threads_min",
            o.u64("eviction_threads_min", 1)?,
            1,
            20,
            "1 to 20 threads",
        )?;
        let eviction_threads_max = range(
            "eviction_threads_max",
            o.u64("eviction_threads_max", 8)?,
            eviction_threads_min,
            20,
            "eviction_threads_min to 20 threads",
        )?;
        let write_tickets = range(
            "write_tickets",
            o.u64("write_tickets", default_write_tickets())?,
            0,
            1 << 20,
            "0 (no limit) or the most writes inside WiredTiger at once",
        )?;
        Ok(Config {
            write_tickets: usize::try_from(write_tickets).unwrap_or(usize::MAX),
            home: dir.join(HOME),
            dir,
            durability,
            memory,
            cache_bytes,
            direct_io,
            checkpoint_secs,
            session_max,
            log_file_max,
            log_os_cache_drop,
            leaf_page_max,
            internal_page_max,
            eviction_threads_min,
            eviction_threads_max,
        })
    }

    /// Whether the engine drops its log's pages from the OS page cache: a log, and
    /// `log_os_cache=drop`.
    pub(crate) fn drops_log_pages(&self) -> bool {
        self.durability != Durability::None && self.log_os_cache_drop
    }

    /// How the durability class is made: the log and commit settings.
    pub(crate) fn durability_config(&self) -> String {
        match self.durability {
            Durability::None => "log=(enabled=false),transaction_sync=(enabled=false)".into(),
            Durability::Process => format!(
                "log=(enabled=true,file_max={}),transaction_sync=(enabled=true,method=none)",
                size(self.log_file_max)
            ),
            Durability::Power => format!(
                "log=(enabled=true,file_max={}),transaction_sync=(enabled=true,method=fsync)",
                size(self.log_file_max)
            ),
        }
    }

    /// The configuration of `wiredtiger_open`, with or without direct I/O.
    pub(crate) fn open_config(&self, direct_io: bool) -> String {
        format!(
            "create,config_base=false,use_environment=false,cache_size={},session_max={},\
             eviction=(threads_min={},threads_max={}),direct_io=[{}],statistics=(fast),\
             checkpoint=(wait={}),checkpoint_sync=true,{}",
            size(self.cache_bytes),
            self.session_max,
            self.eviction_threads_min,
            self.eviction_threads_max,
            if direct_io { "data" } else { "" },
            self.checkpoint_secs,
            self.durability_config()
        )
    }

    /// The configuration of `WT_SESSION::create` for [`TABLE`].
    pub(crate) fn table_config(&self) -> String {
        format!(
            "key_format=u,value_format=u,allocation_size={},leaf_page_max={},\
             internal_page_max={},block_compressor=,checksum=on",
            size(ALLOCATION_SIZE),
            size(self.leaf_page_max),
            size(self.internal_page_max)
        )
    }

    /// Checks that the table was created with [`Config::table_config`] (WiredTiger
    /// ignores the configuration of `create` for a table that exists): `created` is
    /// its file's metadata entry.
    pub(crate) fn check_created(&self, created: Option<&str>) -> Result<()> {
        let Some(created) = created else {
            return Err(Error::Engine(format!(
                "WiredTiger's metadata in {} has no entry for {TABLE_FILE}",
                self.home.display()
            )));
        };
        let have: Vec<&str> = created.split(',').collect();
        let table = self.table_config();
        for want in table.split(',') {
            if !have.contains(&want) {
                let name = want.split('=').next().unwrap_or(want);
                let found = have
                    .iter()
                    .find(|h| h.split('=').next() == Some(name))
                    .unwrap_or(&"nothing");
                return Err(Error::InvalidArgument(format!(
                    "the table in {} was created with {found}, this configuration asks for \
                     {want}; use a new directory (WiredTiger cannot change it)",
                    self.home.display()
                )));
            }
        }
        Ok(())
    }

    /// The durability promise in words.
    pub(crate) fn durability_setting(&self) -> String {
        let ckpt = if self.checkpoint_secs == 0 {
            "no periodic checkpoints".to_string()
        } else {
            format!("a checkpoint every {} s", self.checkpoint_secs)
        };
        match self.durability {
            Durability::None => format!(
                "log disabled: an acknowledged write lives in the cache until the next \
                 checkpoint ({ckpt}, and one at close)"
            ),
            Durability::Process => format!(
                "log written to the OS at every commit, not synced \
                 (transaction_sync=(enabled=true,method=none)); {ckpt}"
            ),
            Durability::Power => format!(
                "log fsync'ed at every commit, concurrent commits share a write and sync \
                 (transaction_sync=(enabled=true,method=fsync)); {ckpt}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_exactly() {
        assert_eq!(size(4096), "4KB");
        assert_eq!(size(256 << 20), "256MB");
        assert_eq!(size(1 << 30), "1GB");
        assert_eq!(size((1 << 20) + 1), "1048577");
        assert_eq!(size(1536 << 10), "1536KB");
    }

    #[test]
    fn options_are_checked() {
        let bad = |pairs: &[(&str, &str)]| {
            Config::from_options(&Options::new("wiredtiger", pairs)).is_err()
        };
        assert!(bad(&[("cache", "512K")]));
        assert!(bad(&[("leaf_page_max", "6K")]));
        assert!(bad(&[("durability", "sometimes")]));
        assert!(bad(&[
            ("eviction_threads_min", "4"),
            ("eviction_threads_max", "2")
        ]));
        let c = Config::from_options(&Options::new("wiredtiger", &[])).unwrap();
        assert_eq!(c.cache_bytes, 256 << 20);
        let m = Config::from_options(&Options::new("wiredtiger", &[("memory", "64M")])).unwrap();
        assert_eq!((m.cache_bytes, m.memory), (64 << 20, Some(64 << 20)));
        assert!(m.open_config(true).contains("cache_size=64MB,"));
        let both = [("memory", "64M"), ("cache", "8M")];
        let m = Config::from_options(&Options::new("wiredtiger", &both)).unwrap();
        assert_eq!(
            m.cache_bytes,
            8 << 20,
            "an explicit cache overrides the budget"
        );
        assert!(
            matches!(
                Config::from_options(&Options::new("wiredtiger", &[("memory", "100K")])),
                Err(Error::OverBudget { needed, budget, .. }) if needed == 1 << 20 && budget == 100 << 10
            ),
            "a budget under WiredTiger's 1 MiB minimum cache is refused as over budget"
        );
        assert!(c.open_config(true).contains("direct_io=[data]"));
        assert!(c.open_config(false).contains("direct_io=[],"));
        assert!(
            c.table_config()
                .contains("leaf_page_max=4KB,internal_page_max=4KB,block_compressor=,")
        );
        let created = "access_pattern_hint=none,allocation_size=4KB,block_allocation=best,\
            block_compressor=,checksum=on,format=btree,internal_page_max=4KB,key_format=u,\
            leaf_page_max=4KB,memory_page_max=5MB,value_format=u";
        c.check_created(Some(created)).unwrap();
        let other = created.replace("leaf_page_max=4KB", "leaf_page_max=32KB");
        let e = c.check_created(Some(&other)).unwrap_err().to_string();
        assert!(
            e.contains("leaf_page_max=32KB") && e.contains("leaf_page_max=4KB"),
            "{e}"
        );
        assert!(c.check_created(None).is_err());
    }
}
