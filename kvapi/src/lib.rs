//! The engine interface of kvell-testbed.
//!
//! Every design under test (KVell, the WAL engine, RocksDB, sled, the null engine)
//! implements [`Engine`]. This crate must never depend on an engine: the driver and
//! the engines depend on it, never the other way round.
//!
//! Two ways to drive an engine:
//! - blocking calls ([`Engine::get`], [`Engine::insert`], ...) from N client threads,
//!   the YCSB way;
//! - asynchronous submission ([`AsyncEngine::submit`]) with a completion callback,
//!   many requests in flight from one injector thread, the KVell way. An engine with
//!   no native asynchronous path gets one from [`PoolAdapter`] (see [`async_path`]).
//!
//! Semantics shared by all engines:
//! - `insert` and `update` both store the value whether or not the key exists
//!   (an upsert). The driver keeps them apart for its statistics; an engine may use the
//!   hint, but must not pay a read to check existence (that would handicap LSM trees).
//! - `delete` of a missing key succeeds.
//! - `scan(start, n)` returns up to `n` pairs with key >= `start`, in ascending
//!   byte order of the keys.
//! - Keys and values are arbitrary bytes up to the engine's [`Limits`]; a key or value
//!   beyond them is refused with [`Error::InvalidArgument`] and nothing is written.
#![deny(unsafe_code)]

mod dir;
mod error;
mod options;
mod pool;
pub mod sync;

pub use dir::{DirLock, MARKER_FILE, claim_dir};
pub use error::{Error, Result};
pub use options::{Options, parse_bytes};
pub use pool::PoolAdapter;

use std::fmt;
use std::sync::Arc;

/// A key-value pair returned by a scan.
pub type Pair = (Vec<u8>, Vec<u8>);

/// What an acknowledged write survives. The same three names for every engine, so a
/// comparison never silently mixes promises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Durability {
    /// Acknowledged once in memory: a killed process may lose it.
    None,
    /// Survives the process being killed (SIGKILL), not necessarily a power loss:
    /// handed to the kernel or written with O_DIRECT into a volatile device cache.
    Process,
    /// Survives power loss: flushed from volatile caches (fsync/fdatasync, O_DSYNC,
    /// RWF_DSYNC) before the acknowledgement, assuming the device honours flushes.
    Power,
}

impl Durability {
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::None => "none",
            Durability::Process => "process",
            Durability::Power => "power",
        }
    }

    pub fn parse(s: &str) -> Result<Durability> {
        match s {
            "none" => Ok(Durability::None),
            "process" => Ok(Durability::Process),
            "power" => Ok(Durability::Power),
            other => Err(Error::InvalidArgument(format!(
                "unknown durability class '{other}' (expected none, process or power)"
            ))),
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The largest key and value an engine accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_key: usize,
    pub max_value: usize,
    /// Whether the empty key is a valid key.
    pub empty_key: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_key: 64 * 1024,
            max_value: 64 * 1024 * 1024,
            empty_key: true,
        }
    }
}

impl Limits {
    /// Checks a key against the limits.
    pub fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.is_empty() && !self.empty_key {
            return Err(Error::InvalidArgument("empty key".into()));
        }
        if key.len() > self.max_key {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes exceeds the maximum of {} bytes",
                key.len(),
                self.max_key
            )));
        }
        Ok(())
    }

    /// Checks a key and a value against the limits.
    pub fn check_put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_key(key)?;
        if value.len() > self.max_value {
            return Err(Error::InvalidArgument(format!(
                "value of {} bytes exceeds the maximum of {} bytes",
                value.len(),
                self.max_value
            )));
        }
        Ok(())
    }
}

/// What an engine is and how it was configured: everything a reader of a result needs
/// to judge whether a comparison was fair.
#[derive(Clone, Debug)]
pub struct EngineInfo {
    /// The `--engine` name.
    pub engine: String,
    /// The durability class of an acknowledged write.
    pub durability: Durability,
    /// The engine's own words for its durability setting (e.g. "direct",
    /// "flush every 500 ms", "WAL fsync per write").
    pub durability_setting: String,
    /// Bytes of memory the engine's own cache may use; `None` if it has none.
    pub cache_bytes: Option<u64>,
    /// Whether data reads bypass the OS page cache; `None` if it does not apply.
    pub direct_io: Option<bool>,
    /// Every option that matters, resolved (defaults included).
    pub settings: Vec<(String, String)>,
    /// What the engine cannot control or does differently (e.g. "uses the OS page
    /// cache on top of its own cache"): stated rather than hidden.
    pub notes: Vec<String>,
    pub limits: Limits,
}

/// Counters an engine can report. `None` means the engine cannot report it (shown as
/// N/A), never zero.
///
/// `extra` holds two kinds of entries:
/// - monotonic counters of the engine's own (compaction bytes, stall microseconds,
///   WAL bytes, nanoseconds spent per phase as `phase_ns.<name>`, ...), which only
///   grow;
/// - gauges of the memory the engine holds now, in bytes, named `memory.<part>`
///   (`memory.page_cache`, `memory.index`, `memory.block_cache`, `memory.memtables`,
///   `memory.table_readers`, `memory.image`, `memory.cache_bytes`, ...): the engine's
///   own accounting of what its memory budget (`<engine>.memory`: caches, indexes,
///   memtables, in-memory images) covers. The parts are disjoint, so their sum is
///   what the engine says it holds; the driver reports that sum beside what it
///   measures from outside (resident memory, the OS page cache of the engine's
///   files). An engine reports only the parts it can count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counters {
    pub device_bytes_read: Option<u64>,
    pub device_bytes_written: Option<u64>,
    pub device_reads: Option<u64>,
    pub device_writes: Option<u64>,
    pub cache_hits: Option<u64>,
    pub cache_misses: Option<u64>,
    pub items: Option<u64>,
    pub index_bytes: Option<u64>,
    /// Engine-specific monotonic counters and `memory.<part>` gauges (see above).
    pub extra: Vec<(String, u64)>,
}

impl Counters {
    /// Every counter as (name, value), unsupported ones as `None`.
    pub fn entries(&self) -> Vec<(String, Option<u64>)> {
        let mut v = vec![
            ("device_bytes_read".to_string(), self.device_bytes_read),
            (
                "device_bytes_written".to_string(),
                self.device_bytes_written,
            ),
            ("device_reads".to_string(), self.device_reads),
            ("device_writes".to_string(), self.device_writes),
            ("cache_hits".to_string(), self.cache_hits),
            ("cache_misses".to_string(), self.cache_misses),
            ("items".to_string(), self.items),
            ("index_bytes".to_string(), self.index_bytes),
        ];
        v.extend(self.extra.iter().map(|(k, x)| (k.clone(), Some(*x))));
        v
    }
}

/// A key-value engine under test.
///
/// All methods take `&self`: an engine is shared by the driver's threads through an
/// `Arc`. After [`Engine::close`], or after an I/O failure that may have left the
/// engine inconsistent, writes return an error ([`Error::Closed`],
/// [`Error::Poisoned`]) instead of carrying on.
pub trait Engine: Send + Sync + 'static {
    /// Configuration and promises, for the result file.
    fn info(&self) -> EngineInfo;
    /// The value stored under `key`, or `None`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Stores a value for a key expected to be new (an upsert: see the crate docs).
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Stores a new value for a key expected to exist (an upsert: see the crate docs).
    fn update(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Removes a key; succeeds if it was missing.
    fn delete(&self, key: &[u8]) -> Result<()>;
    /// Up to `count` pairs with key >= `start`, in ascending key order.
    fn scan(&self, start: &[u8], count: usize) -> Result<Vec<Pair>>;
    /// Current counters.
    fn counters(&self) -> Counters {
        Counters::default()
    }
    /// Makes everything acknowledged durable to the engine's class, stops background
    /// work and releases the data directory. Later calls fail with [`Error::Closed`].
    fn close(&self) -> Result<()>;
    /// The engine's native asynchronous path, if it has one.
    fn native_async(self: Arc<Self>) -> Option<Arc<dyn AsyncEngine>> {
        None
    }
    /// The capacity of the engine's cache, in bytes, when the engine can change it
    /// while it runs ([`Engine::set_cache_capacity`]); `None` when it cannot. The
    /// driver's memory governor uses the pair to hold the engine's measured memory
    /// (not only its cache's own accounting) to its budget: see DESIGN.md, "Same
    /// memory".
    fn cache_capacity(&self) -> Option<u64> {
        None
    }
    /// Changes the capacity of the engine's cache while it runs (an engine that shrinks
    /// evicts down to it).
    fn set_cache_capacity(&self, _bytes: u64) -> Result<()> {
        Err(Error::Unsupported(
            "this engine's cache capacity is fixed at open".into(),
        ))
    }
}

/// One request, for the asynchronous path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Get { key: Vec<u8> },
    Insert { key: Vec<u8>, value: Vec<u8> },
    Update { key: Vec<u8>, value: Vec<u8> },
    Delete { key: Vec<u8> },
    Scan { start: Vec<u8>, count: usize },
}

/// The answer to a [`Request`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A write or delete was acknowledged.
    Done,
    /// A get's answer.
    Value(Option<Vec<u8>>),
    /// A scan's answer.
    Pairs(Vec<Pair>),
}

impl Request {
    /// Runs the request through the blocking interface.
    pub fn execute(&self, engine: &dyn Engine) -> Result<Reply> {
        match self {
            Request::Get { key } => engine.get(key).map(Reply::Value),
            Request::Insert { key, value } => engine.insert(key, value).map(|()| Reply::Done),
            Request::Update { key, value } => engine.update(key, value).map(|()| Reply::Done),
            Request::Delete { key } => engine.delete(key).map(|()| Reply::Done),
            Request::Scan { start, count } => engine.scan(start, *count).map(Reply::Pairs),
        }
    }
}

/// Called exactly once with the outcome of a submitted request, possibly on another
/// thread and possibly before `submit` returns.
pub type Completion = Box<dyn FnOnce(Result<Reply>) + Send + 'static>;

/// Asynchronous submission: many requests in flight from one thread.
pub trait AsyncEngine: Send + Sync {
    /// Queues a request. `done` runs exactly once. May block while the engine's
    /// submission queue is full (back-pressure), never until the request completes.
    fn submit(&self, request: Request, done: Completion);
}

/// The asynchronous path to drive `engine` with up to `in_flight` outstanding
/// requests: the engine's native one if it has it, otherwise a [`PoolAdapter`] with
/// `in_flight` threads issuing blocking calls. The flag says which one was chosen.
pub fn async_path(
    engine: Arc<dyn Engine>,
    in_flight: usize,
) -> Result<(Arc<dyn AsyncEngine>, bool)> {
    Ok(match engine.clone().native_async() {
        Some(native) => (native, true),
        None => (Arc::new(PoolAdapter::new(engine, in_flight)?), false),
    })
}
