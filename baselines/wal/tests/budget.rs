//! The memory budget (`wal.memory`): the engine keeps its whole image in memory, so a
//! write that would grow the image and its index beyond the budget is refused
//! (`Error::OverBudget`, nothing applied, nothing acknowledged lost), and so is an
//! open whose image does not fit.
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

fn gauge(e: &WalEngine, name: &str) -> u64 {
    e.counters()
        .extra
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no {name}"))
}

fn held(e: &WalEngine) -> u64 {
    gauge(e, "memory.image") + gauge(e, "memory.index")
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
                m.contains("keeps its whole image in memory")
                    && m.contains("MiB needed, budget")
                    && e.kind() == "OVER_BUDGET",
                "{m}"
            );
            needed
        }
        other => panic!("expected OVER_BUDGET, got {other:?}"),
    }
}

/// A load into a budget smaller than its image is refused at the first write that
/// does not fit (the gauges say it would not), the refused write is not applied,
/// everything acknowledged before reads back (before and after a reopen), updates
/// in place and deletes still go through; a reopen with a smaller budget is refused.
#[test]
fn a_load_beyond_the_budget_is_refused_and_loses_nothing() {
    let vfs = MemVfs::new();
    let budget = 1u64 << 20;
    let e = WalEngine::open_with(&vfs, cfg(Some(budget))).unwrap();
    let mut model = BTreeMap::new();
    let mut refused = None;
    for i in 0..100_000u64 {
        let before = held(&e);
        assert!(before <= budget, "{before} held before item {i}");
        match e.insert(&key(i), &value(i, 200)) {
            Ok(()) => {
                model.insert(key(i), value(i, 200));
            }
            r => {
                let needed = over_budget(r, budget);
                // Nothing changed, and the write would have taken the image past
                // the budget: it was the first that did not fit.
                assert_eq!(held(&e), before);
                assert!(needed > budget && before <= budget);
                // ... and refused for what it really needed: a new page and its
                // index entry (a 16-byte key and 48 bytes), no more.
                assert_eq!(needed - before, 4096 + 16 + 48, "{needed} after {before}");
                refused = Some(i);
                break;
            }
        }
    }
    let first = refused.expect("the load outgrew the budget");
    assert!(first > 1_000, "refused only at item {first}");
    assert_eq!(
        e.get(&key(first)).unwrap(),
        None,
        "the refused write is not applied"
    );
    // Later writes that grow the image are refused too; what does not grow it goes on.
    over_budget(e.insert(&key(first + 1), &value(0, 200)), budget);
    e.update(&key(3), &value(7, 200)).unwrap();
    model.insert(key(3), value(7, 200));
    e.delete(&key(5)).unwrap();
    model.remove(&key(5));
    for (k, v) in &model {
        assert_eq!(e.get(k).unwrap().as_ref(), Some(v));
    }
    assert_eq!(e.counters().items, Some(model.len() as u64));
    assert!(
        e.info()
            .notes
            .iter()
            .any(|n| n.contains("refused with OVER_BUDGET")),
        "{:?}",
        e.info().notes
    );
    let image = held(&e);
    e.close().unwrap();
    drop(e);
    // Reopened with the same budget: everything acknowledged is there.
    let e = WalEngine::open_with(&vfs, cfg(Some(budget))).unwrap();
    for (k, v) in &model {
        assert_eq!(e.get(k).unwrap().as_ref(), Some(v));
    }
    e.close().unwrap();
    drop(e);
    // A smaller budget cannot hold the replayed image: the open fails, saying so.
    let small = image / 2;
    let needed = over_budget(
        WalEngine::open_with(&vfs, cfg(Some(small))).map(|_| ()),
        small,
    );
    assert_eq!(needed, image);
    // Without a budget it opens as before.
    let e = WalEngine::open_with(&vfs, cfg(None)).unwrap();
    assert_eq!(e.counters().items, Some(model.len() as u64));
    e.close().unwrap();
}

/// Large values (in the data file) count by their record and index entry, and are
/// refused the same way (after their data was written first, above `data_first`).
#[test]
fn large_values_are_refused_the_same_way() {
    let vfs = MemVfs::new();
    let budget = 64u64 << 10;
    let e = WalEngine::open_with(&vfs, cfg(Some(budget))).unwrap();
    let mut stored = 0u64;
    let refused = (0..10_000u64).find(|&i| {
        // above data_first (32 KiB): written to the data file before the record
        match e.insert(&key(i), &value(i, 40_000)) {
            Ok(()) => {
                stored += 1;
                false
            }
            r => {
                over_budget(r, budget);
                true
            }
        }
    });
    assert!(refused.is_some(), "the index outgrew the budget");
    for i in 0..stored {
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
        info.settings
            .iter()
            .any(|(k, v)| k == "memory_split" && v.contains("must fit")),
        "{:?}",
        info.settings
    );
    assert!(info.notes.iter().any(|n| n.contains("OS page cache")));
    e.close().unwrap();
}
