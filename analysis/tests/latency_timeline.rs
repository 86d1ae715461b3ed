//! The latency-percentile timeline of `kvtb-report charts`: drawn for result files
//! whose run-phase samples carry per-interval latencies (schema version 3), left out
//! without an error for those that do not.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;
use common::TempDir;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures(set: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(set)
}

fn copy(set: &str, to: &Path) {
    for e in std::fs::read_dir(fixtures(set)).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

fn names(files: &[PathBuf]) -> Vec<String> {
    files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// The run phase's samples of a result file.
fn run_samples(v: &mut Value) -> &mut Vec<Value> {
    v["phases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["phase"] == "run")
        .unwrap()["timeline"]
        .as_array_mut()
        .unwrap()
}

#[test]
fn drawn_per_engine_and_operation_beside_the_throughput_timeline() {
    let dir = TempDir::new("lattl", "drawn");
    copy("latency", &dir.0);
    let written = analysis::render_dir(&dir.0, Some("Interval latency")).unwrap();
    let names = names(&written.files);
    for n in ["latency-timeline.png", "latency-timeline.svg"] {
        assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
    }
    let svg = std::fs::read_to_string(dir.0.join("latency-timeline.svg")).unwrap();
    assert!(svg.contains("run-phase latency over time"));
    assert!(svg.contains("latency (µs, log scale)"));
    for panel in [
        "kvell: READ",
        "kvell: UPDATE",
        "sled: READ",
        "sled: UPDATE",
        "null: READ",
    ] {
        assert!(svg.contains(panel), "no panel {panel}");
    }
    // plotters writes each text element's content on a line of its own
    let text = |t: &str| svg.lines().any(|l| l.trim() == t);
    for legend in ["p50", "p99", "p99.9", "max"] {
        assert!(text(legend), "no legend entry {legend}");
    }
    // the log axis spans the data: the fixture's maxima reach tens of milliseconds
    let max_us = |f: &str| -> f64 {
        let mut v: Value =
            serde_json::from_str(&std::fs::read_to_string(fixtures("latency").join(f)).unwrap())
                .unwrap();
        run_samples(&mut v)
            .iter()
            .flat_map(|s| s["latency"].as_object().unwrap().values())
            .map(|l| l["max_us"].as_f64().unwrap())
            .fold(0.0, f64::max)
    };
    let top = ["kvell.json", "sled.json", "null.json"]
        .iter()
        .map(|f| max_us(f))
        .fold(0.0, f64::max);
    let decade = 10f64.powf((top * 1.1).log10().ceil());
    let label = if decade >= 1e6 {
        format!("{}M", decade / 1e6)
    } else {
        format!("{}k", decade / 1e3)
    };
    assert!(text(&label), "no tick {label} above the maximum {top} µs");
    // report.md shows it right after the throughput timeline
    let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
    let (t, l) = (
        md.find("](timeline.png)").unwrap(),
        md.find("](latency-timeline.png)").unwrap(),
    );
    assert!(t < l && md[t..l].matches("![").count() == 1, "{md}");
}

#[test]
fn an_engine_without_interval_latencies_gets_a_panel_saying_so() {
    let dir = TempDir::new("lattl", "partial");
    copy("latency", &dir.0);
    let p = dir.0.join("sled.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    for s in run_samples(&mut v) {
        s.as_object_mut().unwrap().remove("latency");
    }
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    analysis::render_dir(&dir.0, None).unwrap();
    let svg = std::fs::read_to_string(dir.0.join("latency-timeline.svg")).unwrap();
    assert!(svg.contains("no per-interval READ latency in this result"));
    assert!(svg.contains("kvell: READ"));
}

#[test]
fn files_without_interval_latencies_are_skipped_without_error() {
    let dir = TempDir::new("lattl", "none");
    copy("workloada", &dir.0);
    let written = analysis::render_dir(&dir.0, None).unwrap();
    let names = names(&written.files);
    assert!(
        !names.iter().any(|n| n.starts_with("latency-timeline")),
        "{names:?}"
    );
    assert!(names.contains(&"timeline.png".to_string()));
    assert!(written.warnings.is_empty(), "{:?}", written.warnings);
}
