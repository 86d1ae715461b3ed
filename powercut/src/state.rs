//! A crash state: one directory a power cut could leave, as the choices that make
//! it within what [`crate::persistence`] allows: how many of the volatile changes
//! of names made it, each file's durable size, and each volatile change's fate.
//!
//! Three kinds are drawn at each cut:
//! - `synced`: only what the model guarantees (every volatile change dropped, every
//!   size and name at its durable minimum): the state that loses the most;
//! - `all`: every change made it (what a killed process leaves: the page cache
//!   written out), the state that loses nothing;
//! - `random`: each volatile change kept, dropped or torn at random, a random
//!   durable size per file and a random prefix of the volatile names.

use crate::history::History;
use crate::persistence::Durable;
use crate::rng::Rng;

/// What becomes of one change not yet durable at the cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Durable by a sync: on disk whole.
    Synced,
    /// On disk whole.
    Kept,
    /// Not on disk (a sector it shares with a later kept change still carries it).
    Dropped,
    /// Some of its sectors on disk: sector `s` is when bit 0 of `mix(seed, s)` is
    /// set.
    Torn(u64),
}

/// One file's choices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileState {
    /// The durable size is the size after this many changes.
    pub size_point: usize,
    /// One per change before the cut.
    pub fates: Vec<Fate>,
}

/// Which draw a state is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Synced,
    All,
    Random,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::Synced => "synced",
            Variant::All => "all",
            Variant::Random => "random",
        }
    }
}

/// A crash state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    pub cut: usize,
    pub variant: Variant,
    /// The durable names are the base names changed by this many changes.
    pub names: usize,
    /// Indexed like `History::files`.
    pub files: Vec<FileState>,
}

/// Whether sector `s` of a change torn with `seed` reached the disk.
pub fn torn_keeps(seed: u64, s: u64) -> bool {
    crate::rng::mix(seed ^ s.wrapping_mul(0x9E37_79B9_7F4A_7C15)) & 1 == 1
}

impl State {
    fn build(d: &Durable, variant: Variant, rng: &mut Rng) -> State {
        let files = d
            .files
            .iter()
            .map(|f| {
                let size_point = match variant {
                    Variant::Synced => f.size_points[0],
                    Variant::All => f.changes,
                    Variant::Random => {
                        f.size_points[rng.below(f.size_points.len() as u64) as usize]
                    }
                };
                let fates = f
                    .durable
                    .iter()
                    .map(|&durable| match (durable, variant) {
                        (true, _) => Fate::Synced,
                        (false, Variant::Synced) => Fate::Dropped,
                        (false, Variant::All) => Fate::Kept,
                        (false, Variant::Random) => match rng.below(3) {
                            0 => Fate::Kept,
                            1 => Fate::Dropped,
                            _ => Fate::Torn(rng.next_u64()),
                        },
                    })
                    .collect();
                FileState { size_point, fates }
            })
            .collect();
        let names = match variant {
            Variant::Synced => d.names_durable,
            Variant::All => d.names,
            Variant::Random => {
                d.names_durable + rng.below((d.names - d.names_durable) as u64 + 1) as usize
            }
        };
        State {
            cut: d.cut,
            variant,
            names,
            files,
        }
    }

    /// Only what the model guarantees at the cut.
    pub fn synced(d: &Durable) -> State {
        State::build(d, Variant::Synced, &mut Rng::new(0))
    }

    /// Everything recorded before the cut.
    pub fn all(d: &Durable) -> State {
        State::build(d, Variant::All, &mut Rng::new(0))
    }

    /// A random state the model allows at the cut.
    pub fn random(d: &Durable, rng: &mut Rng) -> State {
        State::build(d, Variant::Random, rng)
    }

    /// The changes this state loses against `all` (dropped or torn), for reports.
    pub fn volatile_lost(&self) -> usize {
        self.files
            .iter()
            .flat_map(|f| &f.fates)
            .filter(|f| matches!(f, Fate::Dropped | Fate::Torn(_)))
            .count()
    }

    /// A one-line description of the state, for reports and kept images.
    pub fn describe(&self, h: &History, d: &Durable) -> String {
        let (mut kept, mut dropped, mut torn, mut synced) = (0, 0, 0, 0);
        for f in &self.files {
            for fate in &f.fates {
                match fate {
                    Fate::Synced => synced += 1,
                    Fate::Kept => kept += 1,
                    Fate::Dropped => dropped += 1,
                    Fate::Torn(_) => torn += 1,
                }
            }
        }
        let short = self
            .files
            .iter()
            .zip(&d.files)
            .filter(|(s, f)| f.size_points.last().is_some_and(|&l| s.size_point < l))
            .count();
        let record = h
            .recording
            .records
            .get(self.cut.saturating_sub(1))
            .map_or("start", |r| r.kind.name());
        format!(
            "{} state at the cut after record {} ({record}): names {} of {} ({} durable), \
             changes {synced} synced, {kept} kept, {dropped} dropped, {torn} torn; \
             {short} files shorter than their last size",
            self.variant.name(),
            self.cut.saturating_sub(1),
            self.names,
            d.names,
            d.names_durable
        )
    }
}
