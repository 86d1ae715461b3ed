//! The memory budget (`kvell.memory`): as a worker's index grows, its page cache gives
//! way, so that page cache + index + fixed memory stay within `memory / workers`.
//! Checked two ways: with the engine's own `memory.*` gauges (the simulated disk,
//! any number of tests beside it), and from outside, with the resident memory of a
//! child process that does nothing else (`/proc/self/status`: the peak, VmHWM,
//! against the resident memory before the engine opened).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test (helpers outside #[test] too)"
)]

use kvapi::{Engine, Request};
use kvell::{CacheSetup, Config, IoMode, Kvell, SimDisk};
use kvtestkit::child::{ChildRun, mib, proc_status, run_ignored};
use kvtestkit::conformance::TempDir;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::sync_channel;

/// `kvtestkit::extra` through the `Arc`s the tests hold.
fn gauge(kv: &Kvell, name: &str) -> u64 {
    kvtestkit::extra(kv, name)
}

/// The sum of the engine's `memory.*` gauges.
fn held(kv: &Kvell) -> u64 {
    kv.counters()
        .extra
        .iter()
        .filter(|(k, _)| k.starts_with("memory."))
        .map(|(_, v)| v)
        .sum()
}

fn key(i: u64) -> Vec<u8> {
    // scrambled (an odd multiplier is a bijection), so inserts land all over the index
    format!("user{:020}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).into_bytes()
}

fn value(i: u64, len: usize) -> Vec<u8> {
    kvtestkit::conformance::value(i, len)
}

/// One worker with a 3 MiB budget loads small items until its index takes more than
/// half of the budget: at every step the gauges add up to no more than the budget,
/// the page cache shrinks by what the index grew, reads stay right; deletes shrink
/// the index and the cache grows back.
#[test]
fn the_page_cache_gives_way_to_the_index() {
    let dir = TempDir::new("kvell-budget");
    let mut c = Config::new(dir.path());
    c.io = IoMode::Sim(SimDisk::new());
    c.workers = 1;
    let budget = 3u64 << 20;
    c.memory = Some(budget);
    let kv = Kvell::open(c).unwrap();
    let info = kv.info();
    assert!(
        info.settings
            .iter()
            .any(|(k, v)| k == "memory_split" && v.contains("gives way")),
        "{:?}",
        info.settings
    );
    let n = 80_000u64;
    let mut first_full = None;
    for i in 0..n {
        kv.insert(&key(i), &value(i, 40)).unwrap();
        if i % 2_000 == 1_999 {
            let (cache, index) = (gauge(&kv, "memory.page_cache"), gauge(&kv, "memory.index"));
            let total = held(&kv);
            assert!(
                total <= budget,
                "after {i} items: {total} bytes held (cache {cache}, index {index}) over {budget}"
            );
            // Once full, the cache holds what the rest leaves, within a few frames.
            if budget - total < 8 * 4096 {
                first_full.get_or_insert((cache, index));
            }
        }
    }
    let (cache0, index0) = first_full.expect("the cache filled");
    let (cache1, index1) = (gauge(&kv, "memory.page_cache"), gauge(&kv, "memory.index"));
    assert!(index1 > 1 << 20, "the index grew to {index1} bytes");
    assert!(
        cache1 + (index1 - index0) <= cache0 + 8 * 4096,
        "the cache ({cache0} -> {cache1}) gave way to the index ({index0} -> {index1})"
    );
    for i in (0..n).step_by(7) {
        assert_eq!(kv.get(&key(i)).unwrap(), Some(value(i, 40)), "item {i}");
    }
    assert!(held(&kv) <= budget);
    // Deletes shrink the index: reads fill the room it leaves.
    for i in (0..n).filter(|i| i % 4 != 0) {
        kv.delete(&key(i)).unwrap();
    }
    for i in (0..n).step_by(4) {
        assert_eq!(kv.get(&key(i)).unwrap(), Some(value(i, 40)), "item {i}");
    }
    let (cache2, index2) = (gauge(&kv, "memory.page_cache"), gauge(&kv, "memory.index"));
    assert!(index2 < index1 / 2, "index {index1} -> {index2}");
    assert!(cache2 > cache1, "the cache grew back: {cache1} -> {cache2}");
    assert!(held(&kv) <= budget);
    kv.close().unwrap();
}

/// Waits until the page cache's helper has made its frames resident after the open
/// (`cache_fill_beside_us` set: the fill ended), at most 60 s.
fn fill_ended(kv: &Kvell) {
    let t = std::time::Instant::now();
    while gauge(kv, "cache_fill_beside_us") == 0 {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(60),
            "the page cache's fill did not end"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// `kvell.cache_setup=after` makes every frame resident after the open instead of
/// beside recovery: reopened either way, the same data reads back and, once the
/// helper has ended, the cache holds what the budget leaves (within a few frames of
/// the default's), inside the budget; without a budget, the whole fixed cache.
#[test]
fn cache_setup_after_fills_the_cache_after_the_open() {
    let dir = TempDir::new("kvell-cache-after");
    let disk = SimDisk::new();
    let budget = 3u64 << 20;
    let cfg = |setup: CacheSetup, memory: Option<u64>| {
        let mut c = Config::new(dir.path());
        c.io = IoMode::Sim(disk.clone());
        c.workers = 1;
        c.memory = memory;
        c.cache_bytes = 1 << 20;
        c.cache_setup = setup;
        c
    };
    let n = 5_000u64;
    let kv = Kvell::open(cfg(CacheSetup::Open, Some(budget))).unwrap();
    for i in 0..n {
        kv.insert(&key(i), &value(i, 40)).unwrap();
    }
    kv.close().unwrap();
    let mut resident = Vec::new();
    for setup in [CacheSetup::Open, CacheSetup::After] {
        let kv = Kvell::open(cfg(setup, Some(budget))).unwrap();
        let said = kv
            .info()
            .settings
            .into_iter()
            .find(|(k, _)| k == "cache_setup");
        assert_eq!(said, Some(("cache_setup".into(), setup.name().into())));
        for i in (0..n).step_by(11) {
            assert_eq!(kv.get(&key(i)).unwrap(), Some(value(i, 40)), "item {i}");
        }
        fill_ended(&kv);
        let cache = gauge(&kv, "memory.page_cache");
        assert!(
            held(&kv) <= budget,
            "{setup:?}: {} over {budget}",
            held(&kv)
        );
        resident.push(cache);
        kv.close().unwrap();
    }
    let (open, after) = (resident[0], resident[1]);
    assert!(
        open > budget / 2 && after + 8 * 4096 >= open && after <= open + 8 * 4096,
        "resident cache after the fill: {open} bytes (open), {after} (after)"
    );
    // No budget: the fixed cache, all of it made resident after the open.
    let kv = Kvell::open(cfg(CacheSetup::After, None)).unwrap();
    assert_eq!(kv.get(&key(7)).unwrap(), Some(value(7, 40)));
    fill_ended(&kv);
    assert_eq!(gauge(&kv, "memory.page_cache"), 1 << 20);
    kv.close().unwrap();
}

/// An index that outgrows the budget leaves the page cache its minimum (16 frames)
/// and the engine over budget, as its gauges show; reads and writes go on. (With no
/// frames at all, a request waiting for a page read found the page gone from the
/// cache and read it again, forever.)
#[test]
fn an_index_larger_than_the_budget_leaves_the_cache_its_minimum() {
    let dir = TempDir::new("kvell-budget-min");
    let mut c = Config::new(dir.path());
    c.io = IoMode::Sim(SimDisk::new());
    c.workers = 1;
    let budget = 512u64 << 10;
    c.memory = Some(budget);
    let kv = Kvell::open(c).unwrap();
    let n = 40_000u64;
    for i in 0..n {
        kv.insert(&key(i), &value(i, 40)).unwrap();
    }
    for i in (0..n).step_by(3) {
        kv.insert(&key(i), &value(i + 1, 40)).unwrap();
    }
    for i in 0..n {
        let want = value(if i % 3 == 0 { i + 1 } else { i }, 40);
        assert_eq!(kv.get(&key(i)).unwrap(), Some(want), "item {i}");
    }
    assert!(gauge(&kv, "memory.index") > budget);
    assert!(gauge(&kv, "memory.page_cache") <= 16 * 4096);
    assert!(held(&kv) > budget, "the gauges show the engine over budget");
    kv.close().unwrap();
}

/// `kvell.cache` given with `kvell.memory` overrides the split: a fixed cache,
/// stated as such.
#[test]
fn an_explicit_cache_overrides_the_budget() {
    let dir = TempDir::new("kvell-budget-override");
    let d = dir.path().to_str().unwrap();
    let o = kvapi::Options::new(
        "kvell",
        &[
            ("dir", d),
            ("io", "psync"),
            ("memory", "8M"),
            ("cache", "1M"),
        ],
    );
    let kv = kvell::open_engine(&o).unwrap();
    let info = kv.info();
    assert_eq!(info.cache_bytes, Some(1 << 20));
    let split = info.settings.iter().find(|(k, _)| k == "memory_split");
    assert!(
        split.is_some_and(|(_, v)| v.contains("overrides")),
        "{split:?}"
    );
    kv.close().unwrap();
}

const BUDGET: u64 = 24 << 20;
/// What the peak RSS may hold over the budget and the engine does not count: the
/// code's pages as they are first run (file-backed: 0.5-0.6 MiB of this binary and
/// libc), the test's own requests (256 in flight), the threads' stacks and the
/// allocator's free space between reallocated index blocks.
///
/// On the 2-core development VM (2026-12-06, the fill stopped by a falling limit, see
/// `cache::Fill`), loads of the 200K items grew the peak by 24.9-25.4 MiB in 12 runs
/// on idle cores and by 24.9-25.1 MiB in 12 with both cores kept busy by two spinning
/// processes, as under CI, which runs test binaries side by side; the reopens by
/// 21.2-23.8 MiB. The bound, 27 MiB, fails what was found before that fix: the
/// page cache's helper, in the idle scheduling class, went on making frames
/// resident past a limit that had fallen and left them for its end, which on busy
/// cores came after the load (25.8-28.4 MiB in 24 runs with both cores busy, earlier
/// that day; up to 4.6 MiB of frames the engine did not count, found by reading
/// `/proc/self/smaps` after a load). A cache that does not give way (`kvell.cache`
/// fixed at the budget beside it, the engine's own checks of its count removed) grew
/// it by 31.1-31.2 MiB in 4 runs.
const TRANSIENT: u64 = 3 << 20;
const ITEMS: u64 = 200_000;
const VALUE: usize = 900;

fn open_psync(dir: &Path) -> Arc<Kvell> {
    let mut c = Config::new(dir);
    c.io = IoMode::Psync;
    c.workers = 2;
    c.memory = Some(BUDGET);
    Kvell::open(c).unwrap()
}

/// The child's work: `load` opens an empty directory and loads ITEMS items (256 in
/// flight), `reopen` recovers them and reads a sample. Either way the peak resident
/// memory may grow by at most the budget and `TRANSIENT` over what it was before the
/// open.
#[test]
#[ignore = "run by rss_stays_within_the_budget in a process of its own"]
fn rss_child() {
    let dir = std::env::var("KVELL_RSS_DIR").expect("run by rss_stays_within_the_budget");
    let phase = std::env::var("KVELL_RSS_PHASE").unwrap();
    let dir = Path::new(&dir);
    let before = proc_status("VmRSS");
    // The peak so far is forgotten (VmHWM restarts from the current RSS).
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    assert!(proc_status("VmHWM") <= before + (1 << 20));
    let kv = open_psync(dir);
    if phase == "load" {
        let a = kv.clone().native_async().unwrap();
        let (tx, rx) = sync_channel::<kvapi::Result<kvapi::Reply>>(1024);
        let mut inflight = 0;
        for i in 0..ITEMS {
            if inflight == 256 {
                rx.recv().unwrap().unwrap();
                inflight -= 1;
            }
            let tx = tx.clone();
            a.submit(
                Request::Insert {
                    key: key(i),
                    value: value(i, VALUE),
                },
                Box::new(move |r| tx.send(r).unwrap()),
            );
            inflight += 1;
            if i % 20_000 == 19_999 {
                let h = held(&kv);
                assert!(h <= BUDGET, "after {i} items the engine holds {h} bytes");
            }
        }
        for _ in 0..inflight {
            rx.recv().unwrap().unwrap();
        }
    }
    for i in (0..ITEMS).step_by(97) {
        assert_eq!(kv.get(&key(i)).unwrap(), Some(value(i, VALUE)), "item {i}");
    }
    let (peak, now) = (proc_status("VmHWM"), proc_status("VmRSS"));
    let c = kv.counters();
    assert_eq!(c.items, Some(ITEMS));
    let parts: Vec<String> = c
        .extra
        .iter()
        .filter(|(k, _)| k.starts_with("memory."))
        .map(|(k, v)| format!("{k} {:.2} MiB", *v as f64 / (1 << 20) as f64))
        .collect();
    println!(
        "\n{phase}: RSS before {:.1} MiB, peak growth {:.1} MiB, growth now {:.1} MiB, \
         budget {:.1} MiB; the engine's own accounting: {:.1} MiB ({})",
        mib(before),
        mib(peak.saturating_sub(before)),
        mib(now.saturating_sub(before)),
        mib(BUDGET),
        mib(held(&kv)),
        parts.join(", ")
    );
    assert!(held(&kv) <= BUDGET);
    assert!(
        peak.saturating_sub(before) <= BUDGET + TRANSIENT,
        "{phase}: the peak RSS grew by {:.1} MiB, over the {:.1} MiB budget and {:.1} MiB \
         of transients",
        mib(peak.saturating_sub(before)),
        mib(BUDGET),
        mib(TRANSIENT)
    );
    kv.close().unwrap();
}

/// The budget held from outside: a child process loads 200K items of 900 B (about
/// 200 MiB of slabs, an index of about 4 MiB) into a 24 MiB budget on the psync
/// backend, then another reopens them; the peak RSS of each grows by at most the
/// budget and `TRANSIENT`. A cache that did not give way (24 MiB of frames plus the
/// index) exceeds it (measured: see `TRANSIENT`).
#[test]
fn rss_stays_within_the_budget() {
    let dir = TempDir::new("kvell-rss");
    for phase in ["load", "reopen"] {
        let ChildRun { ok, text } = run_ignored(
            "rss_child",
            &[
                ("KVELL_RSS_DIR", dir.path().into()),
                ("KVELL_RSS_PHASE", phase.into()),
            ],
        );
        assert!(ok, "{phase} failed:\n{text}");
        assert!(text.contains("1 passed"), "{phase} ran nothing:\n{text}");
        for l in text.lines().filter(|l| l.starts_with(phase)) {
            println!("{l}");
        }
    }
}
