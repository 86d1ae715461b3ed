//! The memory budget (`wiredtiger.memory`) sizes WiredTiger's cache; what WiredTiger
//! allocates outside it is measured here in a child process that does nothing else
//! (`/proc/self/status`: the peak, VmHWM, against the resident memory before the
//! open): `cargo test --release -p wiredtiger-engine --test memory_budget --
//! --nocapture` prints it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test (helpers outside #[test] too)"
)]
#![cfg(not(wt_missing))]

use kvapi::Options;
use kvtestkit::TempDir;
use kvtestkit::child::{ChildRun, mib, proc_status, run_ignored};
use kvtestkit::extra as gauge;
use std::path::Path;

const BUDGET: u64 = 64 << 20;
const ITEMS: u64 = 300_000;

fn key(i: u64) -> Vec<u8> {
    format!("user{:020}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).into_bytes()
}

/// The child: 300K items of 1 KiB (about 300 MiB) into a 64 MiB budget, then a read
/// of every 7th; prints the cache's use and the resident memory's growth.
#[test]
#[ignore = "run by the_cache_is_the_budget in a process of its own"]
fn wt_child() {
    let dir = std::env::var("WT_MEM_DIR").expect("run by the parent test");
    let before = proc_status("VmRSS");
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let d = Path::new(&dir).display().to_string();
    let e = wiredtiger_engine::open_engine(&Options::new(
        "wiredtiger",
        &[("dir", &d), ("memory", "64M")],
    ))
    .unwrap();
    assert_eq!(e.info().cache_bytes, Some(BUDGET));
    let value = |i: u64| kvtestkit::value(i, 1024);
    let mut most = 0;
    for i in 0..ITEMS {
        e.insert(&key(i), &value(i)).unwrap();
        if i % 10_000 == 0 {
            most = most.max(gauge(&*e, "memory.cache_bytes"));
        }
    }
    for i in (0..ITEMS).step_by(7) {
        assert_eq!(e.get(&key(i)).unwrap(), Some(value(i)));
        if i % 7_000 == 0 {
            most = most.max(gauge(&*e, "memory.cache_bytes"));
        }
    }
    let (peak, now) = (proc_status("VmHWM") - before, proc_status("VmRSS") - before);
    println!(
        "\nwiredtiger: {ITEMS} x 1 KiB into a {:.0} MiB budget (cache_size): the cache held \
         at most {:.1} MiB; RSS peak growth {:.1} MiB ({:.2} x the budget), growth now {:.1} \
         MiB",
        mib(BUDGET),
        mib(most),
        mib(peak),
        peak as f64 / BUDGET as f64,
        mib(now)
    );
    assert!(most <= BUDGET, "WiredTiger's cache held {most} bytes");
    e.close().unwrap();
}

/// `wiredtiger.memory` is the cache (unless `wiredtiger.cache` is given), the cache
/// stays within it, and the child states how much more the process held.
#[test]
fn the_cache_is_the_budget() {
    let dir = TempDir::new("wt-budget");
    let ChildRun { ok, text } = run_ignored("wt_child", &[("WT_MEM_DIR", dir.path().into())]);
    assert!(ok, "the child failed:\n{text}");
    assert!(text.contains("1 passed"), "the child ran nothing:\n{text}");
    for l in text.lines().filter(|l| l.starts_with("wiredtiger:")) {
        println!("{l}");
    }
    let d = TempDir::new("wt-budget-override");
    let p = d.path().display().to_string();
    let e = wiredtiger_engine::open_engine(&Options::new(
        "wiredtiger",
        &[("dir", &p), ("memory", "64M"), ("cache", "8M")],
    ))
    .unwrap();
    assert_eq!(e.info().cache_bytes, Some(8 << 20));
    e.close().unwrap();
}
