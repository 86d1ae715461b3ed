//! `kvtb-report paper`: a reproduce-paper directory built from real result files
//! (results/matrix-200k, results/device) plus small hand-written files, rendered into
//! a temporary directory.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;
use common::{TempDir, repo};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn write_json(p: &Path, v: &Value) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

fn matrix(dir: &str, engine: &str) -> Value {
    read_json(&repo().join(format!("results/matrix-200k/{dir}/{engine}.json")))
}

/// The machine of the run files the fixture is built from (results/matrix-200k), so
/// that the manifest and every result name one machine, as in a real run; the device
/// probe copied beside them (results/device) may come from another.
fn machine() -> Value {
    matrix("a-uniform", "kvell")["machine"].clone()
}

/// The run phase of a result.
fn run_phase(v: &mut Value) -> &mut Value {
    v["phases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["phase"] == "run")
        .unwrap()
}

fn manifest() -> Value {
    json!({
        "kind": "paper-run", "scale": "ci",
        "command": ["scripts/reproduce-paper", "--scale", "ci"],
        "started_unix_s": 1_796_007_484u64, "finished_unix_s": 1_796_009_284u64,
        "machine": machine(), "records": 200000, "value_bytes": 1000,
        "memory_bytes": 68266666, "queue_depth": 64, "operations": 100000,
        "scan_operations": 5000, "engines": ["kvell", "wal", "rocksdb", "sled"],
        "notes": ["a test fixture"]
    })
}

/// A reproduce-paper directory: manifest, device, iomethods, ycsb A uniform/zipfian
/// and E uniform (four engines), production1, item sizes 64 and 2048, recovery for
/// kvell and rocksdb, batches 32 and 64. Absent on purpose: ycsb B, C, D, F, E
/// zipfian, production2.
fn fixture(root: &Path) {
    write_json(&root.join("manifest.json"), &manifest());
    std::fs::create_dir_all(root.join("device")).unwrap();
    std::fs::copy(
        repo().join("results/device/device-vda.json"),
        root.join("device/device.json"),
    )
    .unwrap();
    let mut points = Vec::new();
    for (m, t, q, iops, cpu) in [
        ("mmap", 1, 1, 3000.0, 40.0),
        ("mmap", 8, 1, 9000.0, 35.0),
        ("pread", 1, 1, 25000.0, 9.0),
        ("io_uring", 1, 1, 26000.0, 6.0),
        ("io_uring", 1, 64, 100000.0, 3.0),
    ] {
        points.push(json!({
            "method": m, "op": "randwrite", "threads": t, "queue_depth": q, "iops": iops,
            "mib_per_s": iops * 4096.0 / 1048576.0, "lat_mean_us": 1e6 / iops,
            "lat_p99_us": 3e6 / iops, "cpu_us_per_io": cpu, "seconds": 2.0
        }));
    }
    write_json(
        &root.join("iomethods/iomethods.json"),
        &json!({
            "kind": "iomethods", "command": ["ycsb", "iomethods", "--size", "8G"],
            "started_unix_s": 1_796_007_500u64, "machine": machine(), "file": "data/io.dat",
            "file_bytes": 8u64 << 30, "memory_bytes": 25276063744u64, "block_bytes": 4096,
            "points": points, "notes": []
        }),
    );
    for dir in ["a-uniform", "a-zipfian", "e-uniform"] {
        for e in ["kvell", "wal", "rocksdb", "sled"] {
            write_json(&root.join(format!("ycsb/{dir}/{e}.json")), &matrix(dir, e));
        }
        std::fs::write(root.join(format!("ycsb/{dir}/table.txt")), "ignored\n").unwrap();
    }
    for e in ["kvell", "rocksdb"] {
        write_json(
            &root.join(format!("production/production1/{e}.json")),
            &matrix("production1", e),
        );
    }
    // item sizes: E uniform with the scan counts scaled (RocksDB falls with size)
    for (size, kvell_f, rocks_f) in [(64u64, 1.0, 4.0), (2048, 1.0, 0.5)] {
        for (e, f) in [("kvell", kvell_f), ("rocksdb", rocks_f)] {
            let mut v = matrix("e-uniform", e);
            let p = run_phase(&mut v);
            for o in p["ops"].as_array_mut().unwrap() {
                let n = o["operations"].as_f64().unwrap();
                o["operations"] = json!((n * f).round() as u64);
            }
            write_json(&root.join(format!("itemsize/{size}/{e}.json")), &v);
        }
    }
    for (e, secs, bytes) in [
        ("kvell", 0.25, 210_000_000u64),
        ("rocksdb", 1.0, 190_000_000),
    ] {
        let eng = matrix("a-uniform", e)["engine"].clone();
        write_json(
            &root.join(format!("recovery/{e}.json")),
            &json!({
                "kind": "recovery", "command": ["ycsb", "recovery", "--engine", e],
                "started_unix_s": 1_796_008_000u64, "machine": machine(), "engine": eng,
                "workload": "workloada", "records": 200000, "value_bytes": 1000,
                "cycles": [
                    {"run_s_before_kill": 2.0, "ops_before_kill": 50000, "data_bytes": bytes,
                     "recovery_s": secs, "verified_records": 200000, "missing_records": 0},
                    {"run_s_before_kill": 2.0, "ops_before_kill": 51000, "data_bytes": bytes,
                     "recovery_s": secs * 1.1, "verified_records": 200000, "missing_records": 0},
                    {"run_s_before_kill": 2.0, "ops_before_kill": 52000, "data_bytes": bytes,
                     "recovery_s": secs * 0.9, "verified_records": 200000, "missing_records": 0}
                ],
                "recovery_s_median": secs,
                "counters_after_open": {"items": 200000, "index_bytes": null}
            }),
        );
    }
    for (b, avg) in [(32u64, 80.0), (64, 168.0)] {
        let mut v = matrix("a-uniform", "kvell");
        v["engine"]["settings"]["batch"] = json!(b.to_string());
        v["engine"]["settings"]["queue_depth"] = json!(b.to_string());
        v["driving"]["queue_depth"] = json!(2 * b);
        let p = run_phase(&mut v);
        for o in p["ops"].as_array_mut().unwrap() {
            o["average_us"] = json!(avg);
        }
        write_json(&root.join(format!("batch/b{b}/kvell.json")), &v);
    }
}

fn run_tput(v: &Value) -> f64 {
    v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "run")
        .unwrap()["throughput_ops_sec"]
        .as_f64()
        .unwrap()
}

fn assert_png(path: &Path) {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        b.len() > 5_000,
        "{} is only {} bytes",
        path.display(),
        b.len()
    );
    assert_eq!(
        &b[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        path.display()
    );
}

fn svg(path: &Path) -> String {
    let s = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(s.starts_with("<svg"), "{} is not an SVG", path.display());
    s
}

const ALL_CHARTS: [&str; 17] = [
    "table1-device",
    "table2-device-qd",
    "table3-iomethods",
    "fig3-cpu-device-a-uniform",
    "fig4-timeline-a-uniform",
    "fig7-timeline-e-uniform",
    "fig5-ycsb-uniform",
    "fig8-ycsb-zipfian",
    "table5-tail-a",
    "table5-cdf-a-uniform",
    "table5-cdf-a-zipfian",
    "fig9-production",
    "fig10-itemsize",
    "recovery",
    "batch-kvell",
    "beyond-wal-vs-kvell",
    "beyond-cpu-per-request",
];

#[test]
fn renders_every_paper_figure_with_numbers_from_the_files() {
    let tmp = TempDir::new("paper", "full");
    let dir = tmp.0.join("run");
    fixture(&dir);
    let files = analysis::paper::render_paper(&dir, None, None)
        .unwrap()
        .files;
    let m = machine();
    let machine_text = format!(
        "{}, {} cores",
        m["cpu_model"].as_str().unwrap(),
        m["cores"].as_u64().unwrap()
    );
    for stem in ALL_CHARTS {
        let png = dir.join(format!("charts/{stem}.png"));
        assert!(files.contains(&png), "{stem}.png not listed");
        assert_png(&png);
        let s = svg(&dir.join(format!("charts/{stem}.svg")));
        // the caption: machine and scale
        assert!(s.contains(&machine_text), "{stem}.svg: no machine");
        assert!(
            s.contains("Scale ci: 200000 records"),
            "{stem}.svg: no scale"
        );
    }
    // titles, axis labels with units, legends
    let s = svg(&dir.join("charts/fig5-ycsb-uniform.svg"));
    assert!(s.contains("YCSB throughput, uniform (Fig. 5)"));
    // a linear axis (the ratios visible), E's scans on an axis of their own
    assert!(s.contains("run-phase throughput (ops/s)"));
    assert!(!s.contains("log scale"), "Fig. 5 has a log axis");
    assert!(s.contains("YCSB A, uniform keys") && s.contains("YCSB E: a scale of its own"));
    assert!(s.contains("kvell (process)") && s.contains("sled (none)"));
    assert!(s.contains("device ceiling of the run"));
    let s = svg(&dir.join("charts/table2-device-qd.svg"));
    assert!(s.contains("queue depth (log scale)") && s.contains("mean latency (µs, log scale)"));
    let s = svg(&dir.join("charts/fig10-itemsize.svg"));
    assert!(s.contains("value size (bytes, log scale)") && s.contains("scans per second"));
    let s = svg(&dir.join("charts/batch-kvell.svg"));
    assert!(s.contains("paper: batch 32, 76 µs"));

    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    for stem in ALL_CHARTS {
        assert!(
            readme.contains(&format!("](charts/{stem}.png)")),
            "README lacks {stem}"
        );
    }
    assert!(readme.contains("ycsb recovery --engine kvell"), "{readme}");
    assert!(readme.contains("--qds 1,16,64,256"));

    let md = std::fs::read_to_string(dir.join("paper-repro.md")).unwrap();
    assert!(md.contains("Generated by `kvtb-report paper"));
    assert!(md.contains("Do not edit by hand"));
    assert!(md.contains("**Scale ci: 200000 records x 1000 B values"));
    assert!(md.contains("](charts/fig5-ycsb-uniform.png)"));
    // ours from the files: YCSB A uniform, KVell/RocksDB
    let k = run_tput(&matrix("a-uniform", "kvell"));
    let r = run_tput(&matrix("a-uniform", "rocksdb"));
    let row = md
        .lines()
        .find(|l| l.starts_with("| A | ") && l.contains(&analysis::human_count(k)))
        .unwrap_or_else(|| panic!("no YCSB A row with {k}:\n{md}"));
    assert!(row.contains(&format!("{:.2}x", k / r)), "{row}");
    assert!(row.contains(&format!("{:.2}x", 419.0 / 52.0)), "{row}");
    // the device: best random-read IOPS
    let dev = read_json(&dir.join("device/device.json"));
    let (best, best_qd) = dev["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pattern"] == "randread")
        .map(|p| {
            (
                p["iops"].as_f64().unwrap(),
                p["queue_depth"].as_u64().unwrap(),
            )
        })
        .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a });
    assert!(
        md.contains(&format!(
            "| randread | 4.0 KiB | {best_qd} | {} |",
            separated(best)
        )),
        "{md}"
    );
    assert!(md.contains(&format!("{:.2}x", best / 575_000.0)));
    // recovery, batch, item size
    let dura = matrix("a-uniform", "kvell")["engine"]["durability"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        md.contains(&format!("| kvell | {dura} | 200.3 MiB | 0.250 s | 3 |")),
        "{md}"
    );
    assert!(md.contains("4.00x here against 2.73x -> **holds**"), "{md}");
    assert!(md.contains("| 32 | 32 | 64 | 80 µs |"), "{md}");
    assert!(md.contains("| 64 | 64 | 128 | 168 µs |"));
    assert!(md.contains("2.10x here against 2.08x -> **holds**"), "{md}");
    assert!(md.contains("## Fig. 10: item size on YCSB E"));
    // verdict rules stated, summary present
    assert!(md.contains("## How the verdicts are decided"));
    assert!(md.contains("| Fig. 5: YCSB uniform, KVell/RocksDB | holds on "));
    // files before schema 3: verdicts as before, with the memory note
    assert!(md.contains("- **Memory rule**: verdicts are computed only between engines"));
    assert!(
        md.contains("## Memory\n\nMemory not measured (results before schema 3): the result files"),
        "{md}"
    );
    assert!(md.contains(" workloads; memory not measured |"), "{md}");
    assert!(md.contains(
        "**Memory:** not measured (results before schema 3): the engines are not known to be \
         within the same budget; verdicts are computed as before."
    ));
    assert!(md.contains("**Memory:** not measured (recovery results carry no memory figures)"));
    // "not compared" only in the rule's own words
    assert_eq!(md.matches("not compared").count(), 1, "{md}");
    assert!(readme.contains("## Memory\n\nMemory not measured (results before schema 3)"));
    // absent parts noted, not errors
    assert!(
        md.contains("ycsb/: absent: b-uniform, b-zipfian, c-uniform"),
        "{md}"
    );
    assert!(md.contains("production/production2: absent"));
    assert!(md.contains("production/production1: no result for wal, sled"));
}

fn separated(x: f64) -> String {
    let s = format!("{x:.0}");
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Every section of paper-repro.md that reports result files shows the commands
/// that wrote them: a `sh` block of `ycsb` command lines, none empty, none "not
/// recorded". Returns how many sections were checked.
fn assert_every_section_shows_its_commands(md: &str) -> usize {
    let mut sections: Vec<(&str, String)> = Vec::new();
    for line in md.lines() {
        if line.starts_with("## ") || line.starts_with("### ") {
            sections.push((line, String::new()));
        } else if let Some((_, body)) = sections.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    let mut checked = 0;
    for (head, body) in &sections {
        let of_files = [
            "## Table",
            "## Fig. ",
            "### Fig. ",
            "## Recovery",
            "## KVell's batch",
            "### The WAL engine",
            "### CPU microseconds",
        ]
        .iter()
        .any(|p| head.starts_with(p));
        if !of_files || body.trim_start().starts_with("Skipped") {
            continue;
        }
        assert!(
            !body.contains("not recorded in the files"),
            "{head}: its commands are not recorded"
        );
        let block = body
            .split("```sh\n")
            .nth(1)
            .and_then(|b| b.split("```").next())
            .unwrap_or_else(|| panic!("{head}: no command block:\n{body}"));
        let lines: Vec<&str> = block.lines().collect();
        assert!(
            !lines.is_empty() && lines.iter().all(|l| l.contains("ycsb ")),
            "{head}: command block {block:?}"
        );
        checked += 1;
    }
    checked
}

#[test]
fn every_section_shows_the_commands_that_wrote_its_files() {
    let tmp = TempDir::new("paper", "commands");
    let dir = tmp.0.join("run");
    fixture(&dir);
    analysis::paper::render_paper(&dir, None, None).unwrap();
    let md = std::fs::read_to_string(dir.join("paper-repro.md")).unwrap();
    // Tables 1 and 2, Table 3, Figs. 3, 4, 7, 5, 8, Table 5, Figs. 9, 10, recovery,
    // batch, and the two sections beyond the paper
    let n = assert_every_section_shows_its_commands(&md);
    assert_eq!(n, 14, "{md}");
    // the sections name their own files' commands
    let production = section(&md, "## Fig. 9");
    assert!(production.contains("-w production1"), "{production}");
    let recovery = section(&md, "## Recovery");
    assert!(
        recovery.contains("ycsb recovery --engine kvell"),
        "{recovery}"
    );
    assert!(
        recovery.contains("ycsb recovery --engine rocksdb"),
        "{recovery}"
    );
    let wal = section(&md, "### The WAL engine");
    assert!(wal.contains("ycsb recovery --engine kvell"), "{wal}");
    // and the committed report too
    let committed = std::fs::read_to_string(repo().join("paper-repro.md")).unwrap();
    assert_eq!(assert_every_section_shows_its_commands(&committed), 14);
}

#[test]
fn fig3_busy_axis_ends_at_100_and_says_what_was_clamped() {
    let tmp = TempDir::new("paper", "fig3");
    let dir = tmp.0.join("run");
    fixture(&dir);
    analysis::paper::render_paper(&dir, None, None).unwrap();
    // plotters writes each text element's content on a line of its own
    let text = |s: &str, t: &str| s.lines().any(|l| l.trim() == t);
    let s = svg(&dir.join("charts/fig3-cpu-device-a-uniform.svg"));
    assert!(text(&s, "100") && !text(&s, "120"), "{s}");
    assert!(!s.contains("drawn at 100%"));
    // a device busy over 100% (counters read apart) is drawn at 100% and said
    let p = dir.join("ycsb/a-uniform/kvell.json");
    let mut v = read_json(&p);
    run_phase(&mut v)["timeline"][0]["dev_util"] = json!(1.3);
    write_json(&p, &v);
    analysis::paper::render_paper(&dir, None, None).unwrap();
    let s = svg(&dir.join("charts/fig3-cpu-device-a-uniform.svg"));
    assert!(s.contains("1 sample above 100%"), "no clamp note");
    assert!(text(&s, "100") && !text(&s, "120") && !text(&s, "110"));
}

#[test]
fn a_partial_directory_renders_what_it_can_and_notes_the_rest() {
    let tmp = TempDir::new("paper", "partial");
    let dir = &tmp.0;
    write_json(&dir.join("manifest.json"), &manifest());
    for e in ["kvell", "rocksdb"] {
        write_json(
            &dir.join(format!("ycsb/a-uniform/{e}.json")),
            &matrix("a-uniform", e),
        );
    }
    let files = analysis::paper::render_paper(dir, None, Some("Partial run"))
        .unwrap()
        .files;
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for present in [
        "fig3-cpu-device-a-uniform.png",
        "fig5-ycsb-uniform.svg",
        "table5-tail-a.png",
    ] {
        assert!(
            names.contains(&present.to_string()),
            "{present} missing: {names:?}"
        );
    }
    for absent in [
        "table1-device.png",
        "recovery.png",
        "batch-kvell.png",
        "fig8-ycsb-zipfian.png",
    ] {
        assert!(
            !names.contains(&absent.to_string()),
            "{absent} drawn without data"
        );
    }
    let md = std::fs::read_to_string(dir.join("paper-repro.md")).unwrap();
    assert!(md.starts_with("# Partial run\n"));
    for note in [
        "device/device.json: absent; Tables 1 and 2 skipped",
        "iomethods/iomethods.json: absent; Table 3 skipped",
        "recovery/: absent",
        "batch/: absent",
        "itemsize/: absent; Fig. 10 skipped",
        "production/: absent; Fig. 9 skipped",
        "ycsb/a-uniform: no result for wal, sled",
        "Fig. 8 (YCSB zipfian): not drawn",
    ] {
        assert!(
            md.contains(note),
            "paper-repro.md lacks the note {note:?}:\n{md}"
        );
    }
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("## Skipped"));
}

#[test]
fn a_malformed_file_is_an_error_naming_it() {
    let cases: [(&str, &str); 5] = [
        ("ycsb/a-uniform/kvell.json", "{ not json"),
        ("manifest.json", r#"{"kind": "device"}"#),
        (
            "recovery/kvell.json",
            r#"{"kind": "recovery", "engine": {"name": "kvell"}}"#,
        ),
        (
            "iomethods/iomethods.json",
            r#"{"kind": "iomethods", "points": [{"iops": "many"}]}"#,
        ),
        ("batch/b32/kvell.json", r#"{"engine": {"name": "kvell"}}"#),
    ];
    for (rel, text) in cases {
        let tmp = TempDir::new("paper", "bad");
        let dir = &tmp.0;
        write_json(&dir.join("manifest.json"), &manifest());
        write_json(
            &dir.join("ycsb/a-uniform/rocksdb.json"),
            &matrix("a-uniform", "rocksdb"),
        );
        std::fs::create_dir_all(dir.join(rel).parent().unwrap()).unwrap();
        std::fs::write(dir.join(rel), text).unwrap();
        let err = analysis::paper::render_paper(dir, None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains(rel), "error for {rel} does not name it: {err}");
    }
}

#[test]
fn an_empty_directory_is_an_error() {
    let tmp = TempDir::new("paper", "empty");
    let err = analysis::paper::render_paper(&tmp.0, None, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no part of a reproduce-paper run"), "{err}");
}

#[test]
fn cli_writes_paper_repro_where_told_with_links_that_resolve() {
    let tmp = TempDir::new("paper", "cli");
    let dir = tmp.0.join("run");
    write_json(&dir.join("manifest.json"), &manifest());
    for e in ["kvell", "rocksdb"] {
        write_json(
            &dir.join(format!("ycsb/a-uniform/{e}.json")),
            &matrix("a-uniform", e),
        );
    }
    let md = tmp.0.join("docs/paper-repro.md");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kvtb-report"))
        .arg("paper")
        .arg(&dir)
        .arg("--md")
        .arg(&md)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("paper-repro.md") && stdout.contains("README.md"));
    let text = std::fs::read_to_string(&md).unwrap();
    let link = "](../run/charts/fig5-ycsb-uniform.png)";
    assert!(text.contains(link), "{text}");
    assert!(
        tmp.0
            .join("docs/../run/charts/fig5-ycsb-uniform.png")
            .is_file()
    );
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("](../docs/paper-repro.md)"), "{readme}");
    // a malformed file: exit status 1 and the file named on stderr
    std::fs::write(dir.join("ycsb/a-uniform/kvell.json"), "[1, 2").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kvtb-report"))
        .args(["paper".as_ref(), dir.as_os_str()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ycsb/a-uniform/kvell.json"));
}

const MIB: u64 = 1 << 20;

/// Gives a run file memory figures (schema version 3): a budget held by a cgroup and,
/// in every phase, `used` bytes at its peak.
fn with_memory(v: &mut Value, budget: u64, used: u64) {
    v["format"] = json!(3);
    v["memory"] = json!({
        "budget_bytes": budget, "limit_bytes": budget + 11 * MIB,
        "enforcement": "memory cgroup v2, memory.max of this run (/sys/fs/cgroup/kvtb)",
        "driver_rss_bytes": 11 * MIB, "uses_os_page_cache": false
    });
    for p in v["phases"].as_array_mut().unwrap() {
        p["memory"] = json!({
            "peak_rss_bytes": used + 11 * MIB, "mean_rss_bytes": used + 11 * MIB,
            "peak_page_cache_bytes": 0, "end_page_cache_bytes": 0, "peak_used_bytes": used,
            "used_over_budget": used as f64 / budget as f64
        });
    }
}

/// Every run result under `dir`, recursively.
fn run_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            run_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
}

/// The lines of `md` from the heading `from` to the next heading of that level.
fn section<'a>(md: &'a str, from: &str) -> &'a str {
    let start = md
        .find(from)
        .unwrap_or_else(|| panic!("no {from:?} in:\n{md}"));
    let rest = &md[start + from.len()..];
    let end = rest.find("\n## ").map(|e| e + 1).unwrap_or(rest.len());
    &rest[..end]
}

fn line_of<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{text}"))
}

/// RocksDB over its budget on YCSB A uniform (and the fastest there), every other
/// run within its budget: each comparison with RocksDB on A uniform reads "not
/// compared", RocksDB is flagged and not starred; A zipfian and E uniform keep their
/// verdicts.
#[test]
fn an_engine_over_budget_is_not_compared_and_a_pair_within_budget_is() {
    let tmp = TempDir::new("paper", "budget");
    let dir = tmp.0.join("run");
    fixture(&dir);
    let mut files = Vec::new();
    for part in ["ycsb", "production", "itemsize", "batch"] {
        run_files(&dir.join(part), &mut files);
    }
    for f in &files {
        let mut v = read_json(f);
        with_memory(&mut v, 163 * MIB, 150 * MIB);
        write_json(f, &v);
    }
    let over = dir.join("ycsb/a-uniform/rocksdb.json");
    let mut v = read_json(&over);
    with_memory(&mut v, 163 * MIB, 412 * MIB);
    run_phase(&mut v)["throughput_ops_sec"] = json!(10_000_000.0);
    write_json(&over, &v);
    analysis::paper::render_paper(&dir, None, None).unwrap();
    let md = std::fs::read_to_string(dir.join("paper-repro.md")).unwrap();
    let flag = "over budget: 412.0 MiB of 163.0 MiB";
    let not_compared = "not compared: rocksdb over budget (412.0 MiB of 163.0 MiB)";

    // Fig. 5, A uniform: not compared, the ratio flagged, RocksDB flagged, not bold
    let fig5 = section(&md, "## Fig. 5: YCSB A-F, uniform");
    let a = line_of(fig5, "| A |");
    assert!(a.contains(not_compared), "{a}");
    assert!(a.contains("x [over budget] |"), "{a}");
    assert!(
        a.contains("10.00M (") && a.contains(&format!("[{flag}]")),
        "{a}"
    );
    assert!(!a.contains("**10.00M"), "{a}");
    assert!(
        a.contains("**"),
        "another engine is the best of the row: {a}"
    );
    let e = line_of(fig5, "| E |");
    assert!(!e.contains("not compared"), "{e}");
    assert!(fig5.contains(
        "**Memory:** rocksdb over budget (412.0 MiB of 163.0 MiB): shown flagged, 1 comparison \
         not compared."
    ));
    // Fig. 8, A zipfian: both within budget, a verdict by the ratio rule
    let fig8 = section(&md, "## Fig. 8: YCSB A-F, zipfian");
    let a = line_of(fig8, "| A |");
    assert!(
        !a.contains("not compared") && !a.contains("over budget"),
        "{a}"
    );
    assert!(
        [
            "| holds |",
            "| order holds, ratio off |",
            "| does not hold |"
        ]
        .iter()
        .any(|v| a.ends_with(v)),
        "{a}"
    );
    assert!(fig8.contains("**Memory:** every engine compared held within 110% of its budget."));
    // Table 5: A uniform not compared, A zipfian judged
    let t5 = section(&md, "## Table 5: tail latency on YCSB A");
    for stat in ["p99", "max"] {
        assert!(line_of(t5, &format!("| a-uniform | {stat} |")).contains(not_compared));
        assert!(!line_of(t5, &format!("| a-zipfian | {stat} |")).contains("not compared"));
    }
    assert!(line_of(t5, "| a-uniform | rocksdb [").contains(flag));
    // Figs. 3 and 4 (A uniform) not compared; Fig. 7 (E uniform) judged
    let summary = section(&md, "## Summary");
    let fig3 = line_of(summary, "| Fig. 3:");
    assert!(fig3.contains(not_compared), "{fig3}");
    assert!(line_of(summary, "| Fig. 4:").contains(not_compared));
    assert!(!line_of(summary, "| Fig. 7:").contains("not compared"));
    assert!(line_of(summary, "| Fig. 5:").ends_with("; 1 not compared (over budget) |"));
    let fig8 = line_of(summary, "| Fig. 8:");
    assert!(
        !fig8.contains("not compared") && !fig8.contains("memory"),
        "{fig8}"
    );
    // schema 3 files: no "memory not measured" note but in the rule and for recovery
    assert_eq!(
        md.matches("memory not measured (results before schema 3)")
            .count(),
        1
    );
    assert!(md.contains("not measured (recovery results carry no memory figures)"));
    // the memory table, in paper-repro.md and README.md
    for text in [
        md.clone(),
        std::fs::read_to_string(dir.join("README.md")).unwrap(),
    ] {
        let mem = section(&text, "## Memory\n");
        let row = line_of(mem, "| a-uniform | rocksdb |");
        assert!(
            row.starts_with(
                "| a-uniform | rocksdb | 163.0 MiB | 412.0 MiB | 0 B | 2.53 | cgroup |"
            ),
            "{row}"
        );
        assert!(row.ends_with(&format!("| **{flag}** |")), "{row}");
        let row = line_of(mem, "| a-zipfian | kvell |");
        assert!(row.contains("| 150.0 MiB | 0 B | 0.92 | cgroup |"), "{row}");
        assert!(row.ends_with("| within budget |"), "{row}");
    }
}
