//! `docs/paper-numbers.md` and `analysis/src/paper/reference.rs` agree: every number
//! of reference.rs is a row of the document's table with the same value, every row
//! is a number of reference.rs, and nothing the analysis writes cites another source
//! for them.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

use analysis::paper::reference as paper;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn doc() -> String {
    std::fs::read_to_string(repo().join("docs/paper-numbers.md")).unwrap()
}

/// Every number of reference.rs, keyed as the document's first column names it.
fn reference() -> Vec<(String, f64)> {
    let mut out = vec![
        ("`CORES`".to_string(), paper::CORES as f64),
        ("`CACHE_FRACTION`".into(), paper::CACHE_FRACTION),
    ];
    for r in paper::YCSB_KOPS {
        for (name, v) in paper::SYSTEMS.iter().zip(r.all()) {
            out.push((format!("`YCSB_KOPS` {} {} {name}", r.workload, r.dist), v));
        }
    }
    for (name, v) in [
        ("A_KVELL_KOPS", paper::A_KVELL_KOPS),
        ("A_CEILING_KOPS", paper::A_CEILING_KOPS),
        ("A_CEILING_FRACTION", paper::A_CEILING_FRACTION),
        ("A_DEVICE_KIOPS", paper::A_DEVICE_KIOPS),
        ("A_IOS_PER_REQUEST", paper::A_IOS_PER_REQUEST),
        ("A_P99_MS_KVELL", paper::A_P99_MS_KVELL),
        ("A_P99_MS_ROCKSDB", paper::A_P99_MS_ROCKSDB),
        ("A_MAX_MS_KVELL", paper::A_MAX_MS_KVELL),
        ("A_MAX_MS_ROCKSDB", paper::A_MAX_MS_ROCKSDB),
        ("A_P99_MS_WIREDTIGER", paper::A_P99_MS_WIREDTIGER),
        ("A_MAX_MS_WIREDTIGER", paper::A_MAX_MS_WIREDTIGER),
        ("A_MAX_MS_PEBBLESDB", paper::A_MAX_MS_PEBBLESDB),
        (
            "BATCH32_BANDWIDTH_FRACTION",
            paper::BATCH32_BANDWIDTH_FRACTION,
        ),
        ("RECOVERY_S_KVELL", paper::RECOVERY_S_KVELL),
        ("RECOVERY_S_ROCKSDB", paper::RECOVERY_S_ROCKSDB),
        ("RECOVERY_S_WIREDTIGER", paper::RECOVERY_S_WIREDTIGER),
        ("RECOVERY_GB", paper::RECOVERY_GB),
        ("ITEMSIZE_KVELL_KSCANS", paper::ITEMSIZE_KVELL_KSCANS),
    ] {
        out.push((format!("`{name}`"), v));
    }
    for (b, us) in paper::BATCH_LATENCY_US {
        out.push((format!("`BATCH_LATENCY_US` batch {b}"), us));
    }
    for (pattern, k) in paper::DEVICE_KIOPS {
        out.push((format!("`DEVICE_KIOPS` {pattern}"), k));
    }
    for (qd, us) in paper::RANDWRITE_LAT_US {
        out.push((format!("`RANDWRITE_LAT_US` QD {qd}"), us));
    }
    for (m, t, q, k) in paper::IO_METHODS_KIOPS {
        out.push((format!("`IO_METHODS_KIOPS` {m} threads {t} QD {q}"), k));
    }
    for (bytes, k) in paper::ITEMSIZE_ROCKSDB_KSCANS {
        out.push((format!("`ITEMSIZE_ROCKSDB_KSCANS` {bytes} B"), k));
    }
    out
}

/// A value cell: a decimal number or a fraction `a/b`.
fn number(cell: &str) -> Option<f64> {
    match cell.split_once('/') {
        Some((a, b)) => Some(a.trim().parse::<f64>().ok()? / b.trim().parse::<f64>().ok()?),
        None => cell.parse().ok(),
    }
}

/// The rows of the document's table: first cell (a constant) -> value cell.
fn doc_rows(doc: &str) -> BTreeMap<String, String> {
    let mut rows = BTreeMap::new();
    for line in doc.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let prev = rows.insert(cells[0].to_string(), cells[1].to_string());
        assert!(
            prev.is_none(),
            "row {} twice in docs/paper-numbers.md",
            cells[0]
        );
    }
    rows
}

#[test]
fn every_number_of_reference_rs_is_in_docs_paper_numbers_with_its_value() {
    let rows = doc_rows(&doc());
    let reference = reference();
    for (key, value) in &reference {
        let cell = rows
            .get(key)
            .unwrap_or_else(|| panic!("docs/paper-numbers.md has no row {key} (= {value})"));
        let doc_value = number(cell).unwrap_or_else(|| panic!("{key}: `{cell}` is not a number"));
        assert!(
            (doc_value - value).abs() <= 1e-9 * value.abs().max(1.0),
            "{key}: reference.rs has {value}, docs/paper-numbers.md {cell}"
        );
    }
    for key in rows.keys() {
        assert!(
            reference.iter().any(|(k, _)| k == key),
            "docs/paper-numbers.md row {key} is no number of reference.rs"
        );
    }
    assert_eq!(rows.len(), reference.len());
}

#[test]
fn the_papers_machine_and_source_are_the_documents() {
    let d = doc();
    assert!(d.contains(paper::MACHINE), "{}", paper::MACHINE);
    assert!(paper::SOURCE.contains("docs/paper-numbers.md"));
    // every row says where in the paper its number comes from
    for line in d.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert!(
            cells.len() == 5 && !cells[3].is_empty(),
            "no place in the paper: {line}"
        );
    }
}

/// Files under `dir` with one of the extensions, recursively.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, exts, out);
        } else if p.extension().is_some_and(|x| exts.iter().any(|e| x == *e)) {
            out.push(p);
        }
    }
}

#[test]
fn the_code_and_the_committed_reports_cite_docs_paper_numbers_only() {
    // REFERENCE.md is not in the repository: nothing may send a reader there
    let gone = ["REFERENCE", ".md"].concat();
    let mut all = Vec::new();
    files(&repo().join("analysis/src"), &["rs"], &mut all);
    files(
        &repo().join("results/paper-small"),
        &["md", "svg"],
        &mut all,
    );
    all.push(repo().join("paper-repro.md"));
    for p in &all {
        let text = std::fs::read_to_string(p).unwrap();
        assert!(!text.contains(&gone), "{} cites {gone}", p.display());
    }
    let md = std::fs::read_to_string(repo().join("paper-repro.md")).unwrap();
    assert!(md.contains("docs/paper-numbers.md"));
    assert!(repo().join("docs/paper-numbers.md").is_file());
}
