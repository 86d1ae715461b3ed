//! sled's resident memory against its `cache_capacity`, measured in child processes
//! that do nothing else (`/proc/self/status`: the peak, VmHWM, against the resident
//! memory before the open). `measure` prints the table behind the split of
//! `sled.memory` (see `sled_engine.rs`):
//! `cargo test --release -p baselines --test sled_memory measure -- --ignored --nocapture`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test (helpers outside #[test] too)"
)]

use kvapi::Options;
use kvtestkit::child::{ChildRun, mib, proc_status, run_ignored};
use kvtestkit::conformance::TempDir;
use std::path::Path;

fn key(i: u64) -> Vec<u8> {
    format!("user{:020}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).into_bytes()
}

/// The child: opens sled in `SLED_MEM_DIR` with the option `SLED_MEM_OPTION` =
/// `SLED_MEM_BYTES` (`cache` or `memory`), loads `SLED_MEM_ITEMS` items of 1 KiB,
/// reads every 7th back, and prints its resident memory (growth over what it was
/// before the open) after the load and at the end.
#[test]
#[ignore = "run by the tests below, in a process of its own"]
fn sled_child() {
    let dir = std::env::var("SLED_MEM_DIR").expect("run by a parent test");
    let option = std::env::var("SLED_MEM_OPTION").unwrap();
    let bytes = std::env::var("SLED_MEM_BYTES").unwrap();
    let items: u64 = std::env::var("SLED_MEM_ITEMS").unwrap().parse().unwrap();
    let before = proc_status("VmRSS");
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let d = Path::new(&dir).display().to_string();
    let e = baselines::sled_engine::open_engine(&Options::new(
        "sled",
        &[("dir", &d), (&option, &bytes)],
    ))
    .unwrap();
    let value = |i: u64| kvtestkit::conformance::value(i, 1024);
    for i in 0..items {
        e.insert(&key(i), &value(i)).unwrap();
    }
    let after_load = proc_status("VmHWM") - before;
    for i in (0..items).step_by(7) {
        assert_eq!(e.get(&key(i)).unwrap(), Some(value(i)));
    }
    let (peak, now) = (proc_status("VmHWM") - before, proc_status("VmRSS") - before);
    let cache = e.info().cache_bytes.unwrap();
    println!(
        "\nsled: {option}={bytes} ({items} x 1 KiB): cache_capacity {:.1} MiB, RSS peak \
         growth {:.1} MiB after the load, {:.1} MiB with the reads ({:.2} x the cache), \
         growth now {:.1} MiB",
        mib(cache),
        mib(after_load),
        mib(peak),
        peak as f64 / cache as f64,
        mib(now)
    );
    e.close().unwrap();
}

/// Runs the child; returns its line of figures.
fn run_child(dir: &Path, option: &str, bytes: u64, items: u64) -> String {
    let ChildRun { ok, text } = run_ignored(
        "sled_child",
        &[
            ("SLED_MEM_DIR", dir.into()),
            ("SLED_MEM_OPTION", option.into()),
            ("SLED_MEM_BYTES", bytes.to_string().into()),
            ("SLED_MEM_ITEMS", items.to_string().into()),
        ],
    );
    assert!(ok, "the child failed:\n{text}");
    text.lines()
        .find(|l| l.starts_with("sled:"))
        .unwrap_or_else(|| panic!("no figures:\n{text}"))
        .to_string()
}

/// The table behind the split: sled's resident memory at several cache capacities.
#[test]
#[ignore = "a measurement (about a minute per row): run by hand"]
fn measure() {
    let items: u64 = std::env::var("SLED_MEM_ITEMS")
        .map(|s| s.parse().unwrap())
        .unwrap_or(300_000);
    for cache in [8u64 << 20, 16 << 20, 32 << 20, 64 << 20, 100 << 20] {
        let dir = TempDir::new("sled-measure");
        println!("{}", run_child(dir.path(), "cache", cache, items));
    }
}

/// `sled.memory` gives sled's cache an eighth of the budget (`sled.cache` overrides
/// it) and says where the rest goes.
#[test]
fn the_budget_gives_sled_an_eighth() {
    let dir = TempDir::new("sled-split");
    let d = dir.path().display().to_string();
    let open = |extra: &[(&str, &str)]| {
        let mut o = vec![("dir", d.as_str())];
        o.extend_from_slice(extra);
        let e = baselines::sled_engine::open_engine(&Options::new("sled", &o)).unwrap();
        let info = e.info();
        e.close().unwrap();
        info
    };
    let info = open(&[("memory", "64M")]);
    assert_eq!(info.cache_bytes, Some(8 << 20));
    let split = info.settings.iter().find(|(k, _)| k == "memory_split");
    assert!(
        split.is_some_and(|(_, v)| v.contains("memory / 8")),
        "{split:?}"
    );
    assert!(
        info.notes
            .iter()
            .any(|n| n.contains("bounded only by the driver's memory cgroup")),
        "{:?}",
        info.notes
    );
    let info = open(&[("memory", "64M"), ("cache", "20M")]);
    assert_eq!(info.cache_bytes, Some(20 << 20));
    let info = open(&[]);
    assert_eq!(info.cache_bytes, Some(256 << 20));
    assert!(!info.settings.iter().any(|(k, _)| k == "memory_split"));
}
