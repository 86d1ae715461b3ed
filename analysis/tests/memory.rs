//! `kvtb-report charts` on result files with memory figures (schema version 3): the
//! memory rows of report.md, the over-budget flag, no star for an engine over budget
//! or the null engine, the memory chart where the samples exist and none where not.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;
use common::TempDir;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

fn fixtures(set: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(set)
}

fn read(engine: &str) -> Value {
    let p = fixtures("memory").join(format!("{engine}.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn write(dir: &Path, name: &str, v: &Value) {
    std::fs::write(
        dir.join(format!("{name}.json")),
        serde_json::to_string(v).unwrap(),
    )
    .unwrap();
}

/// Gives a run file a budget, each phase's used / budget from its peak.
fn set_budget(v: &mut Value, budget: u64, enforcement: &str) {
    v["memory"]["budget_bytes"] = json!(budget);
    v["memory"]["enforcement"] = json!(enforcement);
    for p in v["phases"].as_array_mut().unwrap() {
        let used = p["memory"]["peak_used_bytes"].as_f64().unwrap();
        p["memory"]["used_over_budget"] = json!(used / budget as f64);
    }
}

fn run_phase(v: &mut Value) -> &mut Value {
    v["phases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["phase"] == "run")
        .unwrap()
}

fn row<'a>(md: &'a str, name: &str) -> &'a str {
    md.lines()
        .find(|l| l.starts_with(&format!("| {name} |")))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{md}"))
}

/// kvell over its budget and the fastest of all, wal (sled's numbers, slower) and
/// sled within theirs, null without one: kvell is flagged and never bold, the best
/// cell goes to one of the engines that count.
#[test]
fn an_engine_over_budget_is_flagged_and_not_starred() {
    let dir = TempDir::new("memory", "over");
    let mut kvell = read("kvell");
    set_budget(&mut kvell, 163 * MIB, "none: measured only; no cgroup");
    run_phase(&mut kvell)["throughput_ops_sec"] = json!(10_000_000.0);
    let mut sled = read("sled");
    set_budget(
        &mut sled,
        400 * MIB,
        "memory cgroup v2, memory.max of this run (/sys/fs/cgroup/kvtb): budget plus the \
         driver's own charge at engine open",
    );
    let mut wal = sled.clone();
    wal["engine"]["name"] = json!("wal");
    run_phase(&mut wal)["throughput_ops_sec"] = json!(100_000.0);
    write(&dir.0, "kvell", &kvell);
    write(&dir.0, "sled", &sled);
    write(&dir.0, "wal", &wal);
    write(&dir.0, "null", &read("null"));
    analysis::render_dir(&dir.0, Some("Over budget")).unwrap();
    let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
    assert!(
        md.contains("| metric | kvell [over budget] | wal | sled | null |"),
        "{md}"
    );
    // kvell's 10M ops/s is the highest, but not starred; sled's is, among those that count
    assert_eq!(
        row(&md, "run ops/s"),
        "| run ops/s | 10,000,000 | 100,000 | **194,931** | 388,467 |"
    );
    // kvell's p50 is the lowest and null's lower still: neither starred
    let p50 = row(&md, "p50 µs (worst op)");
    assert!(p50.starts_with("| p50 µs (worst op) | 23.36 | "), "{p50}");
    assert!(p50.ends_with(" | 10.39 |"), "{p50}");
    assert_eq!(p50.matches("**").count(), 4, "{p50}");
    assert_eq!(
        row(&md, "memory budget"),
        "| memory budget | 163.0 MiB | 400.0 MiB | 400.0 MiB | none |"
    );
    assert_eq!(
        row(&md, "memory used (peak of the phases)"),
        "| memory used (peak of the phases) | 288.2 MiB | 292.5 MiB | 292.5 MiB | 12.9 MiB |"
    );
    assert!(row(&md, "of it OS page cache").contains("| 8.0 KiB | 104.8 MiB |"));
    assert_eq!(
        row(&md, "used / budget"),
        "| used / budget | 1.77 | 0.73 | 0.73 | N/A |"
    );
    assert_eq!(
        row(&md, "memory bound"),
        "| memory bound | measured | cgroup | cgroup | no budget |"
    );
    assert_eq!(
        row(&md, "warm-up"),
        "| warm-up | 17 s, steady | 4 s, steady | 4 s, steady | 4 s, steady |"
    );
    assert!(
        row(&md, "cache hit ratio (run, mean)")
            .starts_with("| cache hit ratio (run, mean) | 100.0% | N/A |")
    );
    assert_eq!(
        row(&md, "memory standing"),
        "| memory standing | **over budget: 288.2 MiB of 163.0 MiB** | within budget | \
         within budget | no budget |"
    );
    assert!(
        md.contains(
            "among the engines that count: not kvell (over budget: 288.2 MiB of 163.0 MiB), \
             null (the driver's own ceiling)."
        ),
        "{md}"
    );
    // the charts flag it too
    let svg = std::fs::read_to_string(dir.0.join("throughput.svg")).unwrap();
    assert!(svg.contains("kvell (over budget)"));
    let svg = std::fs::read_to_string(dir.0.join("timeline.svg")).unwrap();
    assert!(svg.contains("[over budget: 288.2 MiB of 163.0 MiB]"));
    let svg = std::fs::read_to_string(dir.0.join("memory.svg")).unwrap();
    assert!(svg.contains("kvell: OVER BUDGET, peak used 288.2 MiB of a 163.0 MiB budget (1.77)"));
    assert!(svg.contains("sled: peak used 292.5 MiB of a 400.0 MiB budget (0.73); bound: cgroup"));
}

/// An engine killed at its memory limit leaves a run file without phases or a
/// workload: it joins the other runs of its directory, flagged.
#[test]
fn an_engine_killed_at_its_limit_is_flagged_with_its_workload() {
    let dir = TempDir::new("memory", "killed");
    let killed = json!({
        "format": 3,
        "command": ["target/release/ycsb", "run", "--engine", "kvell", "--memory", "163M"],
        "engine": {"name": "kvell",
                   "notes": ["killed by the kernel at its memory limit: over budget"]},
        "workload": "",
        "memory": {"budget_bytes": 163 * MIB, "limit_bytes": 175 * MIB,
                   "enforcement": "memory cgroup of this run: the kernel killed the engine at its limit",
                   "killed_at_limit": true},
        "phases": []
    });
    write(&dir.0, "kvell", &killed);
    let mut sled = read("sled");
    set_budget(&mut sled, 400 * MIB, "memory cgroup v2");
    write(&dir.0, "sled", &sled);
    let files = analysis::render_dir(&dir.0, None).unwrap().files;
    let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
    assert_eq!(
        md.matches("\n## workload").count(),
        1,
        "one workload:\n{md}"
    );
    assert!(
        md.contains("## workloadc\n\nworkloadc: 50000 records"),
        "{md}"
    );
    assert!(
        md.contains("| metric | kvell [over budget] | sled |"),
        "{md}"
    );
    assert!(
        row(&md, "memory standing")
            .contains("**over budget: killed at its memory limit (163.0 MiB budget)**"),
        "{md}"
    );
    assert_eq!(
        row(&md, "memory bound"),
        "| memory bound | killed | cgroup |"
    );
    assert_eq!(
        row(&md, "used / budget"),
        "| used / budget | killed | 0.73 |"
    );
    assert!(files.iter().any(|f| f.ends_with("memory.png")));
    let svg = std::fs::read_to_string(dir.0.join("memory.svg")).unwrap();
    assert!(svg.contains("kvell: OVER BUDGET, killed at its memory limit (163.0 MiB budget)"));
}

/// The memory chart: one panel row per engine with the budget, the 110% line, the
/// phases and the hit ratio, PNG and SVG, written only where samples exist.
#[test]
fn the_memory_chart_is_drawn_where_samples_exist_and_skipped_where_not() {
    let dir = TempDir::new("memory", "chart");
    let mut kvell = read("kvell");
    set_budget(&mut kvell, 400 * MIB, "memory cgroup v2");
    write(&dir.0, "kvell", &kvell);
    write(&dir.0, "null", &read("null"));
    let files = analysis::render_dir(&dir.0, Some("Memory chart"))
        .unwrap()
        .files;
    for ext in ["png", "svg"] {
        let f = dir.0.join(format!("memory.{ext}"));
        assert!(files.contains(&f), "memory.{ext} not listed");
        assert!(std::fs::metadata(&f).unwrap().len() > 10_000);
    }
    let png = std::fs::read(dir.0.join("memory.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((w, h), (1280, 720));
    let svg = std::fs::read_to_string(dir.0.join("memory.svg")).unwrap();
    for text in [
        "Memory chart: memory over time, workloadc",
        "memory (MiB)",
        "budget 400.0 MiB",
        "110% of budget",
        "memory used",
        "of it OS page cache",
        "cache hit ratio (%)",
        "no hit ratio reported",
        "warm-up",
        "time since the first phase started (s)",
        "null: peak used 12.9 MiB, no budget",
    ] {
        assert!(svg.contains(text), "memory.svg lacks {text:?}");
    }
    // beside the throughput timeline in report.md
    let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
    let t = md.find("](timeline.png)").unwrap();
    let m = md.find("](memory.png)").unwrap();
    let c = md.find("](cpu.png)").unwrap();
    assert!(t < m && m < c, "{md}");

    // files before schema 3: no chart, no memory rows, no error
    let old = TempDir::new("memory", "old");
    for n in ["sled", "null"] {
        std::fs::copy(
            fixtures("workloada").join(format!("{n}.json")),
            old.0.join(format!("{n}.json")),
        )
        .unwrap();
    }
    let w = analysis::render_dir(&old.0, None).unwrap();
    assert!(
        !w.files.iter().any(|f| f
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("memory")),
        "{:?}",
        w.files
    );
    assert!(!old.0.join("memory.png").exists());
    assert!(w.warnings.is_empty(), "{:?}", w.warnings);
    let md = std::fs::read_to_string(old.0.join("report.md")).unwrap();
    assert!(!md.contains("| memory budget |"), "{md}");
}
