//! The in-memory pool that readers and writers share: the heap (image, index,
//! allocators) with its dirty pages and the data extents waiting to be freed, under
//! one read-write lock (the core lock); the large values whose data write is in
//! flight; and whether the engine is closed.
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
use std::sync::atomic::{AtomicBool, Ordering};
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
    closed: AtomicBool,
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
            closed: AtomicBool::new(false),
        }
    }

    pub fn read(&self) -> Result<RwLockReadGuard<'_, Core>> {
        sync::read(&self.core, CORE)
    }

    pub fn write(&self) -> Result<RwLockWriteGuard<'_, Core>> {
        sync::write(&self.core, CORE)
    }

    /// Marks the engine closed; true if it was already.
    pub fn close(&self) -> bool {
        self.closed.swap(true, Ordering::AcqRel)
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
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
