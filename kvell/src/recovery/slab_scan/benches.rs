//! Benchmarks of what recovery does after its scan (and of what it could do during
//! it), at a worker's share of 4M items: ignored tests, run in release by name.

use super::*;
use crate::recovery::runs::RUN;
use std::time::{Duration, Instant};

/// A key like YCSB's ("user" and a number of up to 19 digits) from the next value
/// of a xorshift generator, for the benchmarks below.
fn ycsb_like_key(seed: &mut u64) -> ShortKey {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    let key = format!("user{}", *seed % 10_000_000_000_000_000_000);
    ShortKey::new(key.as_bytes()).unwrap()
}

/// A scan's copies of `n` YCSB-like keys in slots of `class`, gathered as the scan
/// gathers them (a piece of 1024 at a time, each followed by the scan's sort and
/// merge work), with the time of that work and its longest turn.
fn scanned(n: usize, seed: &mut u64, class: usize) -> (Scan, Duration, Duration) {
    let mut scan = Scan::new(Format::default(), true, PAGE, Reads::default_for(None)).unwrap();
    let (mut during, mut longest) = (Duration::ZERO, Duration::ZERO);
    for i in 0..n {
        let k = ycsb_like_key(seed);
        scan.found.push((k, Loc::new(class, i as u64), 1)).unwrap();
        if i % 1024 == 1023 {
            let t = Instant::now();
            scan.sort_run().unwrap();
            during += t.elapsed();
            longest = longest.max(t.elapsed());
        }
    }
    (scan, during, longest)
}

/// What recovery does after its scan, without repairs: the runs of 2M YCSB-like
/// copies (as a worker's share of 4M items) merged and the index built from them in
/// order, in full blocks; the time it took, per key (a benchmark, not a timed test:
/// `cargo test --release -p kvell --lib index_build_speed -- --ignored --nocapture`).
#[test]
#[ignore = "benchmark: run it in release, by name"]
fn index_build_speed() {
    let n = 2_000_000usize;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..3 {
        let (mut scan, during, _) = scanned(n, &mut seed, 5);
        let t = Instant::now();
        let mut newest = scan.newest().unwrap().into_iter();
        let index = crate::index::Index::from_sorted(&mut newest);
        let e = t.elapsed();
        assert_eq!(index.len(), n);
        assert!(newest.into_stale().is_empty());
        eprintln!(
            "round {round}: {n} copies sorted in runs of {RUN} and merged during the \
             scan in {during:?}, merged and indexed after it in {e:?} ({:.1} ns a key)",
            e.as_nanos() as f64 / n as f64
        );
    }
}

/// Whether the index could be built during the scan instead of after it (issue 18,
/// item 4: "index building off the read path"). A key's newest copy is known only
/// once every slot is read, so at best the index of the copies found so far is
/// built while the last reads are in flight, and the keys found later are inserted
/// into it one by one. This measures both sides at a worker's 2M YCSB-like keys:
/// the build of everything in order (what recovery does after its scan) against,
/// for a share `f` found first, the build of that share in order (the work the
/// scan's idle CPU would have to absorb) and the inserts of the rest in the order
/// a scan finds them (what would be left after the scan, or absorbed too).
/// A benchmark, not a timed test: `cargo test --release -p kvell --lib
/// build_during_scan_speed -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark: run it in release, by name"]
fn build_during_scan_speed() {
    let n = 2_000_000usize;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    // the keys in the order a scan finds them (their slots), then sorted
    let found: Vec<(ShortKey, Loc)> = (0..n)
        .map(|i| (ycsb_like_key(&mut seed), Loc::new(5, i as u64)))
        .collect();
    let sorted = |v: &[(ShortKey, Loc)]| {
        let mut v = v.to_vec();
        v.sort_unstable_by_key(|a| a.0);
        v.dedup_by(|a, b| a.0 == b.0);
        v
    };
    for round in 0..3 {
        let all = sorted(&found);
        let t = Instant::now();
        let index = crate::index::Index::from_sorted(all.iter().map(|(k, l)| (k.key(), *l)));
        let whole = t.elapsed();
        assert_eq!(index.len(), all.len());
        drop(index);
        let mut line = format!(
            "round {round}: all {} keys built in order {:.1} ns a key ({whole:?})",
            all.len(),
            whole.as_nanos() as f64 / all.len() as f64
        );
        for share in [0.6, 0.8, 0.9] {
            let first = (n as f64 * share) as usize;
            let head = sorted(&found[..first]);
            let t = Instant::now();
            let mut index =
                crate::index::Index::from_sorted(head.iter().map(|(k, l)| (k.key(), *l)));
            let build = t.elapsed();
            let t = Instant::now();
            for (k, l) in &found[first..] {
                index.upsert(k.key().as_bytes(), |old| old.is_none().then_some(*l));
            }
            let inserts = t.elapsed();
            assert_eq!(index.len(), all.len());
            line += &format!(
                "; first {share}: built {build:?}, the rest inserted {:.1} ns a key \
                 ({inserts:?})",
                inserts.as_nanos() as f64 / (n - first) as f64
            );
        }
        eprintln!("{line}");
    }
}

/// The merges of 2M YCSB-like keys, as recovery of 4M items gives each of 2 workers:
/// during the scan (runs of `RUN` sorted and merged a slice at a time, a piece of 1024
/// copies at a time), after it the runs left merged down to two (`Runs::finish`),
/// then those two merged into every key once, in order; the time of each (a
/// benchmark, not a timed test: `cargo test --release -p kvell --lib merge_speed --
/// --ignored --nocapture`).
#[test]
#[ignore = "benchmark: run it in release, by name"]
fn merge_speed() {
    let n = 2_000_000usize;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..3 {
        let (mut scan, during, longest) = scanned(n, &mut seed, 3);
        let t = Instant::now();
        let ends = scan.runs.finish(&mut scan.found).unwrap();
        let finish = t.elapsed();
        let t = Instant::now();
        let mut m = Merge::new(
            std::mem::replace(&mut scan.found, MappedVec::new().unwrap()),
            &ends,
        );
        let (mut count, mut last) = (0, None);
        while let Some(c) = m.next_key() {
            assert!(last < Some(c.0), "keys in order, each once");
            last = Some(c.0);
            count += 1;
        }
        let e = t.elapsed();
        assert_eq!(count, n);
        eprintln!(
            "round {round}: during the scan {during:?} (sorts and merges, the longest \
             turn {longest:?}); after it \
             {finish:?} to merge down to two runs, {e:?} ({:.1} ns a copy) to merge them",
            e.as_nanos() as f64 / n as f64
        );
    }
}
