//! WiredTiger, the paper's B+ tree, as a column of the paper figures that have one
//! (Figs. 4, 5, 8, Table 5, recovery): judged against KVell where a run has its
//! results, said to be missing where it has none. The run with WiredTiger is the
//! committed small run with RocksDB's result files copied under WiredTiger's name, so
//! every KVell/WiredTiger ratio must equal the KVell/RocksDB one.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;
use common::{TempDir, copy_dir, repo};
use serde_json::Value;
use std::path::Path;

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn write_json(p: &Path, v: &Value) {
    std::fs::write(p, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

/// `from` renamed to engine `wiredtiger`, written beside it.
fn as_wiredtiger(from: &Path) {
    let mut v = read_json(from);
    v["engine"]["name"] = "wiredtiger".into();
    write_json(&from.with_file_name("wiredtiger.json"), &v);
}

/// The committed small run, with RocksDB's YCSB and recovery results copied as
/// WiredTiger's and WiredTiger in the manifest's engines.
fn with_wiredtiger(dir: &Path) {
    copy_dir(&repo().join("results/paper-small"), dir, &["charts"]);
    for e in std::fs::read_dir(dir.join("ycsb")).unwrap() {
        as_wiredtiger(&e.unwrap().path().join("rocksdb.json"));
    }
    as_wiredtiger(&dir.join("recovery/rocksdb.json"));
    let mut m = read_json(&dir.join("manifest.json"));
    let engines = m["engines"].as_array_mut().unwrap();
    if !engines.iter().any(|e| e == "wiredtiger") {
        engines.push("wiredtiger".into());
    }
    write_json(&dir.join("manifest.json"), &m);
}

/// The committed small run without WiredTiger: its result files removed and its
/// name taken out of the manifest's engines (the committed run has it since
/// 3dd7aed).
fn without_wiredtiger(dir: &Path) {
    copy_dir(&repo().join("results/paper-small"), dir, &["charts"]);
    fn strip(d: &Path) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                strip(&p);
            } else if p
                .file_stem()
                .is_some_and(|s| s.to_string_lossy() == "wiredtiger")
            {
                std::fs::remove_file(&p).unwrap();
            }
        }
    }
    strip(dir);
    let mut m = read_json(&dir.join("manifest.json"));
    m["engines"]
        .as_array_mut()
        .unwrap()
        .retain(|e| e != "wiredtiger");
    write_json(&dir.join("manifest.json"), &m);
}

fn render(dir: &Path) -> String {
    let md = dir.join("paper-repro.md");
    analysis::paper::render_paper(dir, Some(&md), None).unwrap();
    std::fs::read_to_string(md).unwrap()
}

/// The verdict cell of the summary row `what`.
fn summary<'a>(md: &'a str, what: &str) -> &'a str {
    let start = format!("| {what} | ");
    md.lines()
        .find_map(|l| l.strip_prefix(start.as_str()))
        .unwrap_or_else(|| panic!("no summary row {what}"))
        .trim_end_matches(" |")
}

#[test]
fn a_run_with_wiredtiger_judges_it_in_every_figure_with_a_b_tree_column() {
    let tmp = TempDir::new("paper-wt", "with");
    let dir = tmp.0.join("run");
    with_wiredtiger(&dir);
    let md = render(&dir);
    assert!(!md.contains("no WiredTiger result"), "{md}");
    assert!(md.contains("| KVell/WiredTiger here | paper | verdict |"));
    // the same files under both names: as many workloads judged (the verdicts may
    // differ: the paper's ratios do), the same steadiness verdict (no paper number)
    let judged = |v: &str| v.split(" of ").nth(1).unwrap().to_string();
    for fig in ["Fig. 5: YCSB uniform", "Fig. 8: YCSB zipfian"] {
        let r = summary(&md, &format!("{fig}, KVell/RocksDB"));
        let w = summary(&md, &format!("{fig}, KVell/WiredTiger"));
        assert!(w.starts_with("holds on "), "{fig}: {w}");
        assert_eq!(judged(r), judged(w), "{fig}");
    }
    assert_eq!(
        summary(&md, "Fig. 4: KVell steadier than RocksDB, YCSB A"),
        summary(&md, "Fig. 4: KVell steadier than WiredTiger, YCSB A")
    );
    // every row of Figs. 5 and 8: KVell/RocksDB here = KVell/WiredTiger here
    let head = md
        .lines()
        .find(|l| l.contains("| KVell/WiredTiger here |"))
        .unwrap();
    let cells = |l: &str| -> Vec<String> {
        l.trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let h = cells(head);
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (rc, wc) = (col("KVell/RocksDB here"), col("KVell/WiredTiger here"));
    let rows: Vec<Vec<String>> = md
        .lines()
        .filter(|l| l.starts_with("| ") && cells(l).len() == h.len())
        .map(cells)
        .filter(|c| c[0].len() == 1 && c[0].chars().all(|x| x.is_ascii_uppercase()))
        .collect();
    assert!(rows.len() >= 12, "{} rows", rows.len());
    for r in &rows {
        assert_eq!(r[rc], r[wc], "{}", r[0]);
    }
    // the same ratio here, against the paper's own for each baseline
    let ours = |what: &str| summary(&md, what).split(" vs ").next().unwrap().to_string();
    let rocksdb = ours("Recovery: RocksDB/KVell");
    assert_eq!(ours("Recovery: WiredTiger/KVell"), rocksdb);
    assert!(summary(&md, "Recovery: WiredTiger/KVell").contains(" vs 3.64x"));
    assert!(summary(&md, "Recovery: RocksDB/KVell").contains(" vs 2.73x"));
    let (r, w) = (
        summary(&md, "Table 5: p99 and max latency, RocksDB/KVell"),
        summary(&md, "Table 5: p99 and max latency, WiredTiger/KVell"),
    );
    assert_eq!(judged(r), judged(w));
    // Fig. 7 has no B+ tree column in the paper, Fig. 9 no WiredTiger run
    assert!(!md.contains("KVell steadier than WiredTiger, YCSB E"));
    assert!(md.contains("production/: wiredtiger not run"));
    assert!(!md.contains("no result for wiredtiger"));
    assert!(dir.join("charts/fig5-ycsb-uniform.png").is_file());
    assert!(dir.join("charts/recovery.svg").is_file());
}

#[test]
fn a_run_without_wiredtiger_says_its_column_is_missing() {
    let tmp = TempDir::new("paper-wt", "without");
    let dir = tmp.0.join("run");
    without_wiredtiger(&dir);
    let md = render(&dir);
    for what in [
        "Fig. 4: KVell steadier than WiredTiger, YCSB A",
        "Fig. 5: YCSB uniform, KVell/WiredTiger",
        "Fig. 8: YCSB zipfian, KVell/WiredTiger",
        "Table 5: p99 and max latency, WiredTiger/KVell",
        "Recovery: WiredTiger/KVell",
    ] {
        assert_eq!(
            summary(&md, what),
            "not comparable: no WiredTiger result in this run"
        );
    }
    assert_eq!(
        md.matches("**WiredTiger (the paper's B+ tree):** no result in this run")
            .count(),
        5
    );
    // the paper's numbers of all five systems are there all the same
    assert!(md.contains("| workload | RocksDB | PebblesDB | TokuMX | WiredTiger | KVell |"));
    assert!(!md.contains("| KVell/WiredTiger here |"));
}
