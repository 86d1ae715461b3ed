//! The memory budget (`wal.memory`): the image is paged through a cache bounded by
//! what the budget leaves after the ordered index and the page table, so a load
//! larger than the budget runs within it (pages read back on misses, clean pages
//! evicted, dirty ones written by checkpoints first). Only an index that would
//! leave the cache less than its least is refused (`Error::OverBudget`, nothing
//! applied, nothing acknowledged lost), and so is an open whose index does not fit.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

use kvapi::{Engine, Error, Options};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use wal_engine::{Config, MemVfs, WalEngine};

fn cfg(memory: Option<u64>) -> Config {
    let mut c = Config::with_dir(Path::new("/mem/wal"));
    c.log_size = 1025 * 4096;
    c.memory = memory;
    c
}

/// `kvtestkit::extra` through the `Arc`s the tests hold.
fn gauge(e: &WalEngine, name: &str) -> u64 {
    kvtestkit::extra(e, name)
}

fn held(e: &WalEngine) -> u64 {
    gauge(e, "memory.image")
        + gauge(e, "memory.index")
        + gauge(e, "memory.page_table")
        + gauge(e, "memory.checkpoint_copies")
}

fn key(i: u64) -> Vec<u8> {
    format!("user{i:012}").into_bytes()
}

fn value(i: u64, len: usize) -> Vec<u8> {
    kvtestkit::conformance::value(i, len)
}

fn over_budget(r: kvapi::Result<impl std::fmt::Debug>, budget: u64) -> u64 {
    match r {
        Err(
            ref e @ Error::OverBudget {
                needed, budget: b, ..
            },
        ) => {
            assert_eq!(b, budget);
            assert!(needed > budget, "{e}");
            let m = e.to_string();
            assert!(
                m.contains("keeps its ordered index and page table in memory")
                    && m.contains("MiB needed, budget")
                    && e.kind() == "OVER_BUDGET",
                "{m}"
            );
            needed
        }
        other => panic!("expected OVER_BUDGET, got {other:?}"),
    }
}

/// A load of about five times the budget (5,000 values of 1,000 bytes, 1 MiB)
/// runs within it: every write succeeds, what
/// the engine holds (resident pages, index, page table) stays within the budget
/// (plus the three pages a write in progress may add), reads of every key find
/// their pages evicted and read them back, and a reopen with the same budget reads
/// everything, within it again.
#[test]
fn a_load_larger_than_the_budget_runs_within_it() {
    let vfs = MemVfs::new();
    let budget = 1u64 << 20;
    let slack = 3 * 4096;
    let e = WalEngine::open_with(&vfs, cfg(Some(budget))).unwrap();
    let mut model = BTreeMap::new();
    let n = 5_000u64;
    let mut peak = 0;
    for i in 0..n {
        let k = key(i * 7919 % n);
        e.insert(&k, &value(i, 1000)).unwrap();
        model.insert(k, value(i, 1000));
        peak = peak.max(held(&e));
    }
    assert!(
        peak <= budget + slack,
        "held {peak} of a {budget}-byte budget"
    );
    // the data is several times the budget: pages were written back and evicted
    assert!(gauge(&e, "page_evictions") > 0);
    assert!(gauge(&e, "checkpoints") > 0);
    // updates in place and deletes of pages long evicted
    for i in (0..n).step_by(97) {
        e.update(&key(i), &value(i + 1, 1000)).unwrap();
        model.insert(key(i), value(i + 1, 1000));
    }
    for i in (0..n).step_by(101) {
        e.delete(&key(i)).unwrap();
        model.remove(&key(i));
    }
    let loads = gauge(&e, "page_loads");
    for (k, v) in &model {
        assert_eq!(e.get(k).unwrap().as_ref(), Some(v));
        peak = peak.max(held(&e));
    }
    assert!(gauge(&e, "page_loads") > loads, "no page was read back");
    assert!(
        peak <= budget + slack,
        "held {peak} of a {budget}-byte budget"
    );
    // a scan across evicted pages, in key order
    let all = e.scan(b"", usize::MAX).unwrap();
    assert_eq!(all.len(), model.len());
    assert!(
        all.iter()
            .zip(&model)
            .all(|((k, v), (mk, mv))| k == mk && v == mv)
    );
    assert_eq!(e.counters().items, Some(model.len() as u64));
    assert!(
        e.info().notes.iter().any(|n| n.contains("is paged")),
        "{:?}",
        e.info().notes
    );
    e.close().unwrap();
    drop(e);
    let e = WalEngine::open_with(&vfs, cfg(Some(budget))).unwrap();
    assert!(held(&e) <= budget, "{} held after the open", held(&e));
    for (k, v) in &model {
        assert_eq!(e.get(k).unwrap().as_ref(), Some(v));
    }
    assert!(held(&e) <= budget + slack);
    e.close().unwrap();
}

/// The index and page table stay in memory whatever the cache: a new key whose
/// index entry would leave the cache less than its 64 pages is refused, not
/// applied; what was acknowledged reads back, updates and deletes go on; a reopen
/// with a budget too small for the index is refused.
#[test]
fn an_index_beyond_the_budget_is_refused_and_loses_nothing() {
    let vfs = MemVfs::new();
    let budget = 512u64 << 10;
    let e = WalEngine::open_with(&vfs, cfg(Some(budget))).unwrap();
    let mut model = BTreeMap::new();
    let mut refused = None;
    for i in 0..100_000u64 {
        match e.insert(&key(i), &value(i, 20)) {
            Ok(()) => {
                model.insert(key(i), value(i, 20));
            }
            r => {
                over_budget(r, budget);
                refused = Some(i);
                break;
            }
        }
    }
    let first = refused.expect("the index outgrew the budget");
    assert!(first > 1_000, "refused only at item {first}");
    assert_eq!(
        e.get(&key(first)).unwrap(),
        None,
        "the refused write is not applied"
    );
    over_budget(e.insert(&key(first + 1), &value(0, 20)), budget);
    e.update(&key(3), &value(7, 20)).unwrap();
    model.insert(key(3), value(7, 20));
    e.delete(&key(5)).unwrap();
    model.remove(&key(5));
    for (k, v) in &model {
        assert_eq!(e.get(k).unwrap().as_ref(), Some(v));
    }
    let index = gauge(&e, "memory.index");
    e.close().unwrap();
    drop(e);
    let e = WalEngine::open_with(&vfs, cfg(Some(budget))).unwrap();
    for (k, v) in &model {
        assert_eq!(e.get(k).unwrap().as_ref(), Some(v));
    }
    e.close().unwrap();
    drop(e);
    // a budget below the index plus the least cache: the open is refused
    let small = index;
    over_budget(
        WalEngine::open_with(&vfs, cfg(Some(small))).map(|_| ()),
        small,
    );
    let e = WalEngine::open_with(&vfs, cfg(None)).unwrap();
    assert_eq!(e.counters().items, Some(model.len() as u64));
    e.close().unwrap();
}

/// Large values (in the data file) take a record in the image and an index entry;
/// under a small budget they go on being stored, and read back.
#[test]
fn large_values_under_a_small_budget() {
    let vfs = MemVfs::new();
    let budget = 512u64 << 10;
    let e = WalEngine::open_with(&vfs, cfg(Some(budget))).unwrap();
    for i in 0..300u64 {
        // above data_first (32 KiB): written to the data file before the record
        e.insert(&key(i), &value(i, 40_000)).unwrap();
    }
    for i in 0..300u64 {
        assert_eq!(e.get(&key(i)).unwrap(), Some(value(i, 40_000)));
    }
    assert!(held(&e) <= budget);
    e.close().unwrap();
}

/// `wal.memory` is read from the options and stated.
#[test]
fn the_budget_is_an_option_and_stated() {
    let c = Config::from_options(&Options::new("wal", &[("memory", "64M")])).unwrap();
    assert_eq!(c.memory, Some(64 << 20));
    assert_eq!(
        Config::from_options(&Options::new("wal", &[]))
            .unwrap()
            .memory,
        None
    );
    let vfs = MemVfs::new();
    let e: Arc<WalEngine> = WalEngine::open_with(&vfs, cfg(Some(64 << 20))).unwrap();
    let info = e.info();
    assert!(
        info.settings.iter().any(|(k, v)| k == "memory_split"
            && v.contains("the page cache gets four fifths")
            && v.contains("a twelfth left for what the engine does not count")),
        "{:?}",
        info.settings
    );
    assert!(info.notes.iter().any(|n| n.contains("OS page cache")));
    e.close().unwrap();
}
