//! The in-memory pool that readers and writers share: the heap (image, index,
//! allocators) with its dirty pages and the data extents waiting to be freed, under
//! one read-write lock (the core lock); the large values whose data write is in
//! flight; and the close gate (whether the engine is closed, and the writers
//! between their closed check and their transaction's reservation, which `close`
//! waits for).
//!
//! Lock order: the core lock, then the log's (writers reserve their transaction
//! while they hold the core lock, so ids follow the order changes were applied),
//! then the in-flight map.

use crate::checkpoint::DirtyPages;
use crate::extent::Extent;
use crate::heap::Heap;
use crate::image::Stored;
use crate::txn::TxBuild;
use kvapi::Result;
use kvapi::sync;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

const CORE: &str = "the meta image";
const INFLIGHT: &str = "the in-flight large values";

/// What the core lock guards.
pub struct Core {
    heap: Heap,
    dirty: DirtyPages,
    /// Data extents freed by transactions (by their end) not yet recorded complete
    /// by a header write: they may not be reused before.
    pending_free: Vec<(u64, Extent)>,
}

/// A key's value as a lookup finds it.
pub enum Found {
    Missing,
    Value(Vec<u8>),
    /// A large value to read from the data file.
    Extent(Extent),
}

/// A scanned key with its value, or the extent to read it from.
pub type ScanItem = (Vec<u8>, std::result::Result<Vec<u8>, Extent>);

pub struct Store {
    core: RwLock<Core>,
    /// Large values whose data write is in flight, by first block: reads see them
    /// here until the data file has them.
    inflight: Mutex<HashMap<u32, Arc<[u8]>>>,
    /// The close gate: [`CLOSED`], and below it the writers inside [`Store::enter`].
    gate: AtomicU64,
}

/// The gate's bit for a closed engine.
const CLOSED: u64 = 1 << 63;

/// A writer inside the close gate: `close` waits until it is dropped.
pub struct Entered<'a>(&'a AtomicU64);

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Store {
    /// The pool over a rebuilt heap whose pages `dirty` the meta file lacks.
    pub fn new(heap: Heap, dirty: DirtyPages) -> Store {
        Store {
            core: RwLock::new(Core {
                heap,
                dirty,
                pending_free: Vec::new(),
            }),
            inflight: Mutex::new(HashMap::new()),
            gate: AtomicU64::new(0),
        }
    }

    pub fn read(&self) -> Result<RwLockReadGuard<'_, Core>> {
        sync::read(&self.core, CORE)
    }

    pub fn write(&self) -> Result<RwLockWriteGuard<'_, Core>> {
        sync::write(&self.core, CORE)
    }

    /// Marks the engine closed; true if it was already. Writers inside the gate
    /// go on: [`Store::wait_writers`] waits for them.
    pub fn close(&self) -> bool {
        self.gate.fetch_or(CLOSED, Ordering::AcqRel) & CLOSED != 0
    }

    pub fn is_closed(&self) -> bool {
        self.gate.load(Ordering::Acquire) & CLOSED != 0
    }

    /// A writer passes the closed check and stays inside the gate until the guard
    /// drops (when its transaction is reserved, or it gave up). `Closed` once the
    /// engine is closed. One counter serves both, so a writer either entered before
    /// the close (and is waited for) or sees it.
    pub fn enter(&self) -> Result<Entered<'_>> {
        if self.gate.fetch_add(1, Ordering::AcqRel) & CLOSED != 0 {
            self.gate.fetch_sub(1, Ordering::AcqRel);
            return Err(kvapi::Error::Closed);
        }
        Ok(Entered(&self.gate))
    }

    /// After [`Store::close`]: waits until no writer is inside the gate, so every
    /// transaction a writer will reserve is reserved (none is queued after the
    /// committer stopped, where no thread would write it and its writer would wait
    /// for ever). A writer inside waits at most for log space, which the
    /// checkpointer (still running) frees, or fails.
    pub fn wait_writers(&self) {
        while self.gate.load(Ordering::Acquire) & !CLOSED != 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Publishes a large value whose data write is about to run (with the core lock
    /// held, before the record pointing at it is visible).
    pub fn start_inflight(&self, start: u32, v: &[u8]) -> Result<()> {
        kvapi::sync::lock(&self.inflight, INFLIGHT)?.insert(start, v.into());
        Ok(())
    }

    /// The data write of the value at `start` is over.
    pub fn end_inflight(&self, start: u32) -> Result<()> {
        kvapi::sync::lock(&self.inflight, INFLIGHT)?.remove(&start);
        Ok(())
    }

    /// Looks `key` up under the core read lock: an inline or in-flight value is
    /// copied, a large one is named by its extent.
    pub fn lookup(&self, key: &[u8]) -> Result<Found> {
        let core = self.read()?;
        Ok(match core.heap.get(key) {
            None => Found::Missing,
            Some(Stored::Inline(v)) => Found::Value(v.to_vec()),
            Some(Stored::Extent(x)) => {
                match kvapi::sync::lock(&self.inflight, INFLIGHT)?.get(&x.start) {
                    Some(v) => Found::Value(v.to_vec()),
                    None => Found::Extent(x),
                }
            }
        })
    }

    /// Up to `count` keys from `start` with their values (copied) or extents.
    pub fn range(&self, start: &[u8], count: usize) -> Result<Vec<ScanItem>> {
        let core = self.read()?;
        let inflight = kvapi::sync::lock(&self.inflight, INFLIGHT)?;
        Ok(core
            .heap
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
            .collect())
    }
}

impl Core {
    pub fn heap(&self) -> &Heap {
        &self.heap
    }

    /// The heap, to apply a transaction's changes.
    pub fn heap_mut(&mut self) -> &mut Heap {
        &mut self.heap
    }

    /// A transaction ending at `end` was reserved: its pages are dirty from now on,
    /// and the extent of a large value it replaced or deleted is freed once a header
    /// records it complete.
    pub fn logged(&mut self, tb: &TxBuild, end: u64, freed: Option<Extent>) {
        self.dirty.touch(&tb.pages, end);
        if let Some(x) = freed {
            self.pending_free.push((end, x));
        }
    }

    /// Copies of the dirty pages for a checkpoint (see [`DirtyPages::take`]).
    pub fn take_dirty(&mut self) -> Vec<(u32, Box<[u8]>)> {
        self.dirty.take(self.heap.image())
    }

    /// Data extents freed by transactions ending at or before `commit` may now be
    /// reused.
    pub fn release_frees(&mut self, commit: u64) {
        let Core {
            heap, pending_free, ..
        } = self;
        pending_free.retain(|(end, x)| {
            if *end <= commit {
                heap.free_extent(x);
                false
            } else {
                true
            }
        });
    }
}
