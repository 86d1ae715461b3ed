//! The scan's copies in sorted runs, merged two at a time while the scan waits for
//! its reads, so that what is left after the scan is a merge of a few long runs, not
//! of one run per 32768 copies.
//!
//! The copies found so far are sorted in runs of [`RUN`] as the scan goes (`sort`),
//! and after each piece read the two adjacent runs to merge next (the rightmost pair
//! whose left run is no longer than its right: a binary counter, so each copy is
//! merged about log2(runs) times) are merged a slice at a time (`work`): the left run
//! is copied out to a scratch vector and merged with the right one back into their
//! place (the writes never pass the right run's next unread copy). After the scan
//! (`finish`) the runs left are merged the same way, smallest first, until two are
//! left for the merge that feeds the index (`slab_scan::Merge`), and the scratch is
//! given back before the index is built: it held at most the left run of a merge,
//! never more than half of the copies, so recovery holds at most 48 + 24 bytes a copy
//! during the scan, within `open::RECOVERY_PER_SLOT`.

use super::slab_scan::{Found, copy_order};
use crate::io::MappedVec;
use std::cmp::Ordering;
use std::io;

/// Copies in a sorted run as the scan sorts them: 32768 of 48 bytes (1.5 MiB), sorted
/// in about 3 ms while the next reads are in flight.
pub(super) const RUN: usize = 1 << 15;

/// Copies merged per copy found since the last `work`: a binary counter merges each
/// copy about log2(runs) times (6 for 2M copies in runs of [`RUN`]), so the merges
/// keep up with the scan and the work after each piece stays small (about 0.1 ms
/// for a piece of 1024 items).
const PER_COPY: usize = 8;

pub(super) struct Runs {
    /// One past the last copy of each run; the copies past the last end are not
    /// sorted yet.
    ends: Vec<usize>,
    /// Copies a run waits for before it is sorted ([`RUN`]; smaller in tests).
    pub(super) run_len: usize,
    job: Option<Job>,
    /// The left run of the merge under way, copied out.
    scratch: Option<MappedVec<Found>>,
    /// Copies found when `work` last ran.
    seen: usize,
    /// The most copies the scratch vector held.
    #[cfg(test)]
    peak: usize,
}

/// A merge under way of the runs `left` and `left + 1` (where they lie is in `ends`,
/// which changes past them only).
struct Job {
    left: usize,
    /// The left run's next copy (in the scratch vector) and the right run's.
    i: usize,
    j: usize,
}

impl Runs {
    pub(super) fn new() -> Runs {
        Runs {
            ends: Vec::new(),
            run_len: RUN,
            job: None,
            scratch: None,
            seen: 0,
            #[cfg(test)]
            peak: 0,
        }
    }

    /// Sorts the copies found since the last run into a run of their own, if there
    /// are at least `min` of them.
    pub(super) fn sort(&mut self, found: &mut MappedVec<Found>, min: usize) {
        let (n, sorted) = (found.len(), self.ends.last().copied().unwrap_or(0));
        if n > sorted && n - sorted >= min {
            found.as_mut_slice()[sorted..n].sort_unstable_by(copy_order);
            self.ends.push(n);
        }
    }

    /// Merges for a while, in proportion to the copies found since the last call.
    pub(super) fn work(&mut self, found: &mut MappedVec<Found>) -> io::Result<()> {
        let budget = (found.len() - self.seen) * PER_COPY;
        self.seen = found.len();
        self.merge(found, budget, counter_pair)
    }

    /// After the scan: sorts what is left, merges until at most two runs are left
    /// (`smallest_pair`), gives the scratch vector back and returns where each run
    /// ends.
    pub(super) fn finish(&mut self, found: &mut MappedVec<Found>) -> io::Result<Vec<usize>> {
        self.sort(found, 1);
        self.merge(found, usize::MAX, smallest_pair)?;
        self.scratch = None;
        Ok(std::mem::take(&mut self.ends))
    }

    /// Merges up to `budget` copies: the job under way, then the pairs `pick` gives
    /// (the left run's index), until it gives none.
    fn merge(
        &mut self,
        found: &mut MappedVec<Found>,
        mut budget: usize,
        pick: fn(&[usize]) -> Option<usize>,
    ) -> io::Result<()> {
        while budget > 0 {
            if self.job.is_none() {
                let Some(left) = pick(&self.ends) else {
                    return Ok(());
                };
                self.start(left)?;
            }
            budget = self.step(found, budget)?;
        }
        Ok(())
    }

    /// Starts merging runs `left` and `left + 1`.
    fn start(&mut self, left: usize) -> io::Result<()> {
        match &mut self.scratch {
            Some(s) => s.truncate(0),
            None => self.scratch = Some(MappedVec::new()?),
        }
        self.job = Some(Job {
            left,
            i: 0,
            j: self.ends[left],
        });
        Ok(())
    }

    /// Merges up to `budget` copies of the job under way; returns what is left of the
    /// budget (0 if the job is not done). The left run is copied out as the merge
    /// comes to it, not at once: a copy of a long run held the scan's next reads back
    /// for milliseconds.
    #[expect(
        clippy::expect_used,
        reason = "called with a job under way, which `start` made with its scratch"
    )]
    fn step(&mut self, found: &mut MappedVec<Found>, budget: usize) -> io::Result<usize> {
        let job = self.job.as_mut().expect("a merge under way");
        let scratch = self.scratch.as_mut().expect("the scratch of a merge");
        let (start, mid, end) = (
            begin(&self.ends, job.left),
            self.ends[job.left],
            self.ends[job.left + 1],
        );
        let a_len = mid - start;
        // The merged copies lie at start..out, the right run's not yet taken at j..end,
        // and out = start + i + (j - mid) <= j: a write never passes a copy not read;
        // the left run's copies are saved before the writes reach them.
        let mut out = start + job.i + (job.j - mid);
        let saved = (out - start).saturating_add(budget).min(a_len);
        if scratch.len() < saved {
            let from = start + scratch.len();
            scratch.extend_from_slice(&found.as_slice()[from..start + saved])?;
            #[cfg(test)]
            {
                self.peak = self.peak.max(scratch.len());
            }
        }
        let a = scratch.as_slice();
        let v = found.as_mut_slice();
        let mut moved = 0;
        while moved < budget && job.i < a_len {
            if job.j < end && copy_order(&v[job.j], &a[job.i]) == Ordering::Less {
                v[out] = v[job.j];
                job.j += 1;
            } else {
                v[out] = a[job.i];
                job.i += 1;
            }
            out += 1;
            moved += 1;
        }
        if job.i < a_len {
            return Ok(0);
        }
        // The left run is all taken: the right run's rest is in place already.
        let left = job.left;
        self.job = None;
        self.ends.remove(left);
        Ok(budget - moved)
    }
}

/// The rightmost two adjacent runs whose left run is no longer than its right one
/// (so at most half of all copies).
fn counter_pair(ends: &[usize]) -> Option<usize> {
    let len = |r: usize| ends[r] - begin(ends, r);
    (0..ends.len().saturating_sub(1))
        .rev()
        .find(|&r| len(r) <= len(r + 1))
}

/// Of three runs or more, the two adjacent ones with the fewest copies together whose
/// left run holds at most half of all copies (the scratch's bound; runs 1 and 2, or
/// 2 and 3, qualify: the lesser of the first two is at most half); None for two runs
/// or fewer.
fn smallest_pair(ends: &[usize]) -> Option<usize> {
    let total = ends.last().copied().unwrap_or(0);
    (ends.len() > 2)
        .then(|| {
            (0..ends.len() - 1)
                .filter(|&r| 2 * (ends[r] - begin(ends, r)) <= total)
                .min_by_key(|&r| ends[r + 1] - begin(ends, r))
        })
        .flatten()
}

/// Where run `r` begins.
fn begin(ends: &[usize], r: usize) -> usize {
    if r == 0 { 0 } else { ends[r - 1] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::ShortKey;
    use crate::slab::Loc;

    /// Runs sorted and merged a slice at a time as the scan goes, then down to two:
    /// every copy kept, each run left in order, at most two runs, and the scratch
    /// never holding more than half of the copies (what `open::RECOVERY_PER_SLOT`
    /// counts for it), whatever the run length and the pace of the work.
    #[test]
    fn merges_keep_every_copy_in_order_within_half_the_copies() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for run_len in [1, 3, 50, 1000] {
            for n in [0u64, 1, 2, 17, 5000] {
                let mut found = MappedVec::new().unwrap();
                let mut runs = Runs::new();
                runs.run_len = run_len;
                let mut want = Vec::new();
                for i in 0..n {
                    let key = format!("k{}", rnd(n / 2 + 1));
                    let c = (
                        ShortKey::new(key.as_bytes()).unwrap(),
                        Loc::new(1, i),
                        rnd(4),
                    );
                    found.push(c).unwrap();
                    want.push(c);
                    // as the scan does after each piece (pieces of 1-5 copies here)
                    if rnd(5) == 0 {
                        runs.sort(&mut found, run_len);
                        runs.work(&mut found).unwrap();
                    }
                }
                let ends = runs.finish(&mut found).unwrap();
                let what = format!("run_len {run_len}, {n} copies, runs end at {ends:?}");
                assert!(ends.len() <= 2, "{what}");
                assert_eq!(ends.last().copied().unwrap_or(0), n as usize, "{what}");
                let v = found.as_slice();
                let mut start = 0;
                for &e in &ends {
                    let run = &v[start..e];
                    assert!(run.is_sorted_by(|a, b| copy_order(a, b).is_le()), "{what}");
                    start = e;
                }
                let mut got = v.to_vec();
                got.sort_by(copy_order);
                want.sort_by(copy_order);
                assert!(got == want, "the same copies: {what}");
                assert!(
                    2 * runs.peak as u64 <= n,
                    "scratch peak {}: {what}",
                    runs.peak
                );
                assert!(runs.scratch.is_none(), "the scratch given back: {what}");
            }
        }
        // Runs of 1, 10 and 1 copies left to the end (no work during the scan): the
        // last two would copy out 10 of 12; the first two are merged, 1 copied out.
        let mut found = MappedVec::new().unwrap();
        let mut runs = Runs::new();
        for (i, len) in [1, 10, 1].into_iter().enumerate() {
            for j in 0..len {
                let key = format!("k{}", rnd(100));
                let c = (ShortKey::new(key.as_bytes()).unwrap(), Loc::new(i, j), 0);
                found.push(c).unwrap();
            }
            runs.sort(&mut found, 1);
        }
        assert_eq!(runs.finish(&mut found).unwrap(), vec![11, 12]);
        assert_eq!(runs.peak, 1);
    }
}
