//! What recovery repaired, counted by kind and described slot by slot (the first few
//! of each kind per worker): the engine's counters and `EngineInfo.notes` say it, so
//! no repair is silent.

/// Slots described one by one per kind and worker; the rest are counted.
const NOTES_PER_KIND: usize = 8;

/// The kinds of repair described slot by slot (older copies of a key, left by a crash
/// between a move's two writes, are the expected trace of one: only counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A slot whose header or checksum fails where a write in flight at the crash
    /// could have torn it (across a boundary of the device's atomic unit).
    Torn,
    /// A large item with a page of another timestamp: one multi-page write to a fresh
    /// slot that a power loss kept in part (any atomic unit).
    TornLarge,
    /// A never-written slot below a slab's end: an append the crash lost, or a
    /// zeroed page.
    Hole,
}

/// A worker's repairs.
#[derive(Debug, Default)]
pub(crate) struct Repairs {
    /// Older copies buried.
    pub(crate) stale: u64,
    pub(crate) torn: u64,
    pub(crate) torn_large: u64,
    pub(crate) holes: u64,
    /// The first slots of each kind, described.
    pub(crate) notes: Vec<String>,
}

impl Repairs {
    /// Counts one repair of `kind`, described by `note` (made only if it is kept).
    pub(crate) fn add(&mut self, kind: Kind, note: impl FnOnce() -> String) {
        let n = match kind {
            Kind::Torn => &mut self.torn,
            Kind::TornLarge => &mut self.torn_large,
            Kind::Hole => &mut self.holes,
        };
        *n += 1;
        if *n <= NOTES_PER_KIND as u64 {
            self.notes.push(format!("recovery: {}", note()));
        }
    }

    /// Adds another worker's repairs.
    pub(crate) fn merge(&mut self, worker: usize, o: Repairs) {
        self.notes.extend(o.notes);
        for (n, what) in [
            (o.torn, "slots freed as writes the crash could have torn"),
            (
                o.torn_large,
                "large items freed as writes a power loss kept in part",
            ),
            (o.holes, "never-written slots below a slab's end tombstoned"),
        ] {
            if n > NOTES_PER_KIND as u64 {
                self.notes.push(format!(
                    "recovery: worker {worker}: {} more {what}",
                    n - NOTES_PER_KIND as u64
                ));
            }
        }
        self.stale += o.stale;
        self.torn += o.torn;
        self.torn_large += o.torn_large;
        self.holes += o.holes;
    }

    /// The summary note, if anything was repaired.
    pub(crate) fn summary(&self) -> Option<String> {
        (self.stale + self.torn + self.torn_large + self.holes > 0).then(|| {
            format!(
                "recovery repairs: {} older copies buried (recovery_stale), {} slots freed \
                 as writes the crash could have torn (recovery_torn_items), {} large items \
                 freed as writes a power loss kept in part (recovery_torn_large), {} \
                 never-written slots below a slab's end tombstoned (recovery_holes: appends \
                 the crash lost, or pages zeroed since; an item that was there is gone)",
                self.stale, self.torn, self.torn_large, self.holes
            )
        })
    }
}
