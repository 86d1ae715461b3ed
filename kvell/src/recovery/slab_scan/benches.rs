//! Benchmarks of what recovery does after its scan (and of what it could do during
//! it), at a worker's share of 4M items: ignored tests, run in release by name.

use super::*;

/// A key like YCSB's ("user" and a number of up to 19 digits) from the next value
/// of a xorshift generator, for the benchmarks below.
fn ycsb_like_key(seed: &mut u64) -> ShortKey {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    let key = format!("user{}", *seed % 10_000_000_000_000_000_000);
    ShortKey::new(key.as_bytes()).unwrap()
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
        let mut scan = Scan::new(Format::default(), true, PAGE, 1 << 20).unwrap();
        for i in 0..n {
            let k = ycsb_like_key(&mut seed);
            scan.found.push((k, Loc::new(5, i as u64), 1)).unwrap();
            if i % 1024 == 1023 {
                scan.sort_run(RUN);
            }
        }
        let t = std::time::Instant::now();
        let mut newest = scan.newest().unwrap().into_iter();
        let index = crate::index::Index::from_sorted(&mut newest);
        let e = t.elapsed();
        assert_eq!(index.len(), n);
        assert!(newest.into_stale().is_empty());
        eprintln!(
            "round {round}: {n} copies in runs of {RUN} merged and indexed in {e:?} \
             ({:.1} ns a key)",
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
        let t = std::time::Instant::now();
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
            let t = std::time::Instant::now();
            let mut index =
                crate::index::Index::from_sorted(head.iter().map(|(k, l)| (k.key(), *l)));
            let build = t.elapsed();
            let t = std::time::Instant::now();
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

/// The merge of 2M YCSB-like keys in runs of `RUN`, as recovery of 4M items
/// gives each of 2 workers: every key once, in order, and the time it took (a
/// benchmark, not a timed test: `cargo test --release -p kvell --lib merge_speed
/// -- --ignored --nocapture`).
#[test]
#[ignore = "benchmark: run it in release, by name"]
fn merge_speed() {
    let n = 2_000_000usize;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut v: MappedVec<Found> = MappedVec::new().unwrap();
    let mut ends = Vec::new();
    for i in 0..n {
        let k = ycsb_like_key(&mut seed);
        v.push((k, Loc::new(3, i as u64), 1)).unwrap();
        if (i + 1) % RUN == 0 || i + 1 == n {
            let s = ends.last().copied().unwrap_or(0);
            v.as_mut_slice()[s..=i].sort_unstable_by(copy_order);
            ends.push(i + 1);
        }
    }
    let t = std::time::Instant::now();
    let mut m = Merge::new(v, &ends);
    let (mut count, mut last) = (0, None);
    while let Some(c) = m.next_key() {
        assert!(last < Some(c.0), "keys in order, each once");
        last = Some(c.0);
        count += 1;
    }
    let e = t.elapsed();
    assert_eq!(count, n);
    eprintln!(
        "{} runs of {RUN} copies merged in {e:?} ({:.1} ns a copy)",
        ends.len(),
        e.as_nanos() as f64 / n as f64
    );
}
