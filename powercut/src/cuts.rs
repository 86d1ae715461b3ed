//! Where the power is cut: after every sync (the points where durability changes),
//! after every acknowledgement the caller names (the points where a promise begins),
//! at random records between, and at the end. When there are more than the plan
//! allows, an even sample of them is taken.

use crate::history::History;
use crate::recording::Kind;
use crate::rng::Rng;

/// Why a cut is where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Why {
    /// Just after a completed sync.
    Sync,
    /// Just after an acknowledgement.
    Ack,
    /// At a random record.
    Random,
    /// After the last record.
    End,
}

impl Why {
    pub fn name(self) -> &'static str {
        match self {
            Why::Sync => "sync",
            Why::Ack => "ack",
            Why::Random => "random",
            Why::End => "end",
        }
    }
}

/// A cut: the power fails after record `index - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cut {
    pub index: usize,
    pub why: Why,
}

/// How many cuts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// At most this many cuts after syncs and acknowledgements together.
    pub at_events: usize,
    /// And this many at random records.
    pub random: usize,
    pub seed: u64,
}

/// An even sample of `n` of `v` (all of them if there are fewer), starting at a
/// random offset.
fn sample<T: Copy>(v: &[T], n: usize, rng: &mut Rng) -> Vec<T> {
    if v.len() <= n {
        return v.to_vec();
    }
    if n == 0 {
        return Vec::new();
    }
    let step = v.len() as f64 / n as f64;
    let off = (rng.below(1 << 20) as f64 / f64::from(1 << 20)) * step;
    (0..n)
        .map(|i| v[((off + i as f64 * step) as usize).min(v.len() - 1)])
        .collect()
}

/// The cuts of `h`; `acks` are the indices of records that completed an
/// acknowledgement. Sorted by index, one per index (the first reason wins).
pub fn choose(h: &History, acks: &[usize], plan: Plan) -> Vec<Cut> {
    let mut rng = Rng::new(plan.seed ^ 0x4355_5453);
    let n = h.recording.records.len();
    // the records of the base and the root are not the run's: no cut among them
    let first = h
        .recording
        .records
        .iter()
        .position(|r| !matches!(r.kind, Kind::Root | Kind::Base))
        .unwrap_or(n);
    let mut events: Vec<Cut> = h
        .syncs
        .iter()
        .map(|s| Cut {
            index: s.index + 1,
            why: Why::Sync,
        })
        .chain(acks.iter().map(|&i| Cut {
            index: i + 1,
            why: Why::Ack,
        }))
        .filter(|c| c.index > first)
        .collect();
    events.sort();
    events.dedup_by_key(|c| c.index);
    let mut cuts = sample(&events, plan.at_events, &mut rng);
    if n > first {
        for _ in 0..plan.random {
            cuts.push(Cut {
                index: first + 1 + rng.below((n - first) as u64) as usize,
                why: Why::Random,
            });
        }
    }
    cuts.push(Cut {
        index: n,
        why: Why::End,
    });
    cuts.sort();
    cuts.dedup_by_key(|c| c.index);
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_even_and_takes_all_when_few() {
        let v: Vec<usize> = (0..100).collect();
        let mut r = Rng::new(1);
        let s = sample(&v, 10, &mut r);
        assert_eq!(s.len(), 10);
        assert!(
            s.windows(2).all(|w| w[1] - w[0] >= 9 && w[1] - w[0] <= 11),
            "{s:?}"
        );
        assert_eq!(sample(&v[..5], 10, &mut r), v[..5]);
        assert!(sample(&v, 0, &mut r).is_empty());
    }
}
