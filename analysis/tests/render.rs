//! Renders result files into a temporary directory and checks what comes out.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;
use common::TempDir;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/workloada")
}

fn copy_fixtures(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(fixtures()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// Width and height from a PNG's signature and IHDR chunk.
fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap();
    assert!(
        b.len() > 10_000,
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
    assert_eq!(&b[12..16], b"IHDR");
    let w = u32::from_be_bytes(b[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(b[20..24].try_into().unwrap());
    (w, h)
}

fn svg_text(path: &Path) -> String {
    let s = std::fs::read_to_string(path).unwrap();
    assert!(
        s.len() > 5_000,
        "{} is only {} bytes",
        path.display(),
        s.len()
    );
    assert!(s.starts_with("<svg"), "{} is not an SVG", path.display());
    assert!(s.trim_end().ends_with("</svg>"));
    s
}

fn names(files: &[PathBuf]) -> Vec<String> {
    files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn renders_every_chart_as_png_and_svg_with_a_report() {
    let dir = TempDir::new("analysis", "fixture");
    copy_fixtures(&dir.0);
    let files = analysis::render_dir(&dir.0, Some("Fixture run"))
        .unwrap()
        .files;
    let names = names(&files);
    for stem in ["throughput", "latency", "timeline", "cpu", "cdf"] {
        for ext in ["png", "svg"] {
            let n = format!("{stem}.{ext}");
            assert!(names.contains(&n), "{n} missing from {names:?}");
            assert!(dir.0.join(&n).is_file());
        }
        assert_eq!(png_size(&dir.0.join(format!("{stem}.png"))), (1280, 720));
        let svg = svg_text(&dir.0.join(format!("{stem}.svg")));
        // plotters writes each text element's content on a line of its own
        for engine in ["sled", "null"] {
            assert!(
                svg.lines().any(|l| l.trim().starts_with(engine)),
                "{stem}.svg has no label for {engine}"
            );
        }
        assert!(svg.contains("Fixture run"), "{stem}.svg lacks the title");
        // the caption names the machine, the workload and each engine's settings
        assert!(
            svg.contains("AMD EPYC, 2 cores"),
            "{stem}.svg lacks the machine"
        );
        assert!(svg.contains("50000 records, 100000000 operations"));
        assert!(svg.contains("durability none, cache 256.0 MiB"));
    }
    assert!(names.contains(&"report.md".to_string()));
    // files before schema 3 carry no memory samples: no memory chart
    assert!(!names.iter().any(|n| n.starts_with("memory")), "{names:?}");

    let axis = |stem: &str, label: &str| {
        let svg = std::fs::read_to_string(dir.0.join(format!("{stem}.svg"))).unwrap();
        assert!(svg.contains(label), "{stem}.svg lacks axis label {label:?}");
    };
    axis("throughput", "throughput (operations/s");
    axis("throughput", "run phase");
    axis("throughput", "load phase");
    axis("latency", "latency (µs, log scale)");
    axis("latency", "READ");
    axis("latency", "UPDATE");
    axis("latency", "p99.9");
    axis("timeline", "time since the run phase started (s)");
    axis("timeline", "warm-up (not measured)");
    axis("cpu", "CPU µs per operation (user + system)");
    // one small panel per engine, user and system CPU stacked with the device's busy
    // time on one axis (a share of the machine): no second y axis
    axis("cpu", "busy (%)");
    axis("cpu", "user CPU");
    axis("cpu", "system CPU (stacked)");
    axis("cpu", "device busy");
    axis("cpu", "sled: CPU");
    axis("cpu", "null: CPU");
    let cpu = std::fs::read_to_string(dir.0.join("cpu.svg")).unwrap();
    assert!(!cpu.contains("(%, dashed)") && !cpu.contains("(cores)"));
    axis("cdf", "latency (µs, log scale)");
    axis("cdf", "operations at or below (%)");
    axis("cdf", "fraction slower (log scale)");

    let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
    assert!(md.starts_with("# Fixture run\n"));
    assert!(md.contains("**Machine:** AMD EPYC, 2 cores"));
    assert!(md.contains("| metric | sled | null |"), "{md}");
    for row in [
        "| run ops/s | 109,108 | 2,523,060 |",
        "| load ops/s |",
        "| p50 µs (worst op) |",
        "| p99 µs (worst op) |",
        "| p99.9 µs (worst op) |",
        "| max µs (worst op) |",
        "| CPU µs/op (run) | 8.33 | 0.579 |",
        "| device busy % (run) | 65.43 | N/A |",
        "| device I/Os per op (run) | 0.0329 | N/A |",
        "| durability | none | none |",
        "| cache | 256.0 MiB | none |",
        "| direct I/O | no | N/A |",
    ] {
        assert!(md.contains(row), "report.md lacks {row:?}:\n{md}");
    }
    // the null engine (the driver's own ceiling) is never marked best, and with one
    // engine left to count nothing is
    assert!(!md.contains("| **"), "{md}");
    assert!(
        md.contains("among the engines that count: not null (the driver's own ceiling)."),
        "{md}"
    );
    for stem in ["throughput", "latency", "timeline", "cpu", "cdf"] {
        assert!(
            md.contains(&format!("]({stem}.png)")),
            "report.md lacks {stem}.png"
        );
    }
    assert!(
        md.contains("target/release/ycsb compare -w A --engines sled,null -p recordcount=50000")
    );
    // the device probe beside the runs
    assert!(md.contains("## Device"));
    assert!(md.contains("| randread | 16 | 4.0 KiB | 36,378 |"), "{md}");
    assert!(md.contains("target/release/ycsb device --data data --size 64M"));
    assert!(!md.contains("Skipped"));
}

#[test]
fn malformed_and_foreign_json_are_skipped_and_the_rest_rendered() {
    let dir = TempDir::new("analysis", "malformed");
    copy_fixtures(&dir.0);
    std::fs::write(dir.0.join("broken.json"), "{\"format\": 1, \"engine\": ").unwrap();
    std::fs::write(dir.0.join("other.json"), "{\"hello\": [1, 2, 3]}").unwrap();
    std::fs::write(dir.0.join("array.json"), "[1, 2]").unwrap();
    std::fs::write(dir.0.join("notes.txt"), "not json at all").unwrap();
    let files = analysis::render_dir(&dir.0, None).unwrap().files;
    assert!(names(&files).contains(&"throughput.png".to_string()));
    assert_eq!(png_size(&dir.0.join("cdf.png")), (1280, 720));
    let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
    assert!(md.contains("| metric | sled | null |"));
    assert!(md.contains("## Skipped files"));
    for bad in ["broken.json", "other.json", "array.json"] {
        assert!(md.contains(bad), "report.md does not list {bad}");
    }
    assert!(!md.contains("notes.txt"), "only .json files are read");

    let found = analysis::model::load_dir(&dir.0).unwrap();
    assert_eq!(found.runs.len(), 2);
    assert_eq!(found.probes.len(), 1, "the device result is read as one");
    assert_eq!(found.skipped.len(), 3);
    assert!(
        found
            .skipped
            .iter()
            .any(|s| s.contains("broken.json: not JSON"))
    );
    assert!(
        found
            .skipped
            .iter()
            .any(|s| s.contains("other.json: not a ycsb result file"))
    );
}

#[test]
fn a_directory_without_results_is_an_error() {
    let dir = TempDir::new("analysis", "empty");
    let err = analysis::render_dir(&dir.0, None).unwrap_err().to_string();
    assert!(err.contains("no ycsb result files"), "{err}");
    std::fs::write(dir.0.join("x.json"), "nonsense").unwrap();
    let err = analysis::render_dir(&dir.0, None).unwrap_err().to_string();
    assert!(err.contains("1 skipped"), "{err}");
    assert!(analysis::render_dir(&dir.0.join("missing"), None).is_err());
}

#[test]
fn several_workloads_are_grouped() {
    let dir = TempDir::new("analysis", "groups");
    copy_fixtures(&dir.0.join("a"));
    std::fs::create_dir_all(dir.0.join("c")).unwrap();
    for n in ["sled", "null"] {
        let text = std::fs::read_to_string(fixtures().join(format!("{n}.json"))).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["workload"] = "workloadc".into();
        std::fs::write(
            dir.0.join(format!("c/{n}.json")),
            serde_json::to_string(&v).unwrap(),
        )
        .unwrap();
    }
    let files = analysis::render_dir(&dir.0, None).unwrap().files;
    let names = names(&files);
    for n in [
        "throughput.png",
        "latency-workloada.png",
        "latency-workloadc.svg",
        "timeline-workloadc.png",
        "cpu-workloada.svg",
        "cdf-workloadc.png",
    ] {
        assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
    }
    let svg = svg_text(&dir.0.join("throughput.svg"));
    assert!(svg.contains("workloada") && svg.contains("workloadc"));
    assert!(svg.contains("engine, grouped by workload"));
    let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
    assert!(md.contains("## workloada") && md.contains("## workloadc"));
    assert_eq!(md.matches("| metric | sled | null |").count(), 2);
}

/// A result with only the required fields, a field this version does not know, a
/// stall in the timeline and no load phase still renders.
#[test]
fn minimal_result_with_unknown_fields_renders() {
    let dir = TempDir::new("analysis", "minimal");
    let sample = |t: f64, ops: f64| {
        serde_json::json!({
            "t": t, "warmup": t < 1.5, "ops_per_sec": ops,
            "cpu_user_s": 0.5, "cpu_sys_s": 0.25, "device_reads": 7
        })
    };
    let v = serde_json::json!({
        "format": 2,
        "engine": {"name": "kvell", "durability": "process", "cache_bytes": 1073741824u64,
                   "direct_io": true, "io_backend": "io_uring"},
        "device": {"read_iops": 100000},
        "phases": [{
            "phase": "run",
            "throughput_ops_sec": 900.0,
            "cpu_us_per_op": 12.5,
            "device": {"device": "nvme0n1", "utilisation": 0.5, "ios_per_op": 2.0},
            "ceiling": {"ceiling_ops_sec": 5000.0, "fraction": 0.18},
            "ops": [{"name": "READ", "operations": 10, "p50_us": 5.0, "p99_us": 50.0,
                     "p999_us": 80.0, "max_us": 90.0, "histogram_v2_base64": "bad"},
                    {"name": "Intended-READ", "operations": 10, "p50_us": 6.0,
                     "p99_us": 700.0, "p999_us": 800.0, "max_us": 900.0},
                    {"name": "Queue-READ", "operations": 10, "p50_us": 1.0,
                     "p99_us": 650.0, "p999_us": 720.0, "max_us": 810.0}],
            "timeline": [sample(1.0, 1000.0), sample(2.0, 1000.0), sample(3.0, 0.0),
                         sample(4.0, 900.0), sample(5.0, 950.0)]
        }]
    });
    std::fs::write(dir.0.join("kvell.json"), v.to_string()).unwrap();
    let files = analysis::render_dir(&dir.0, Some("minimal")).unwrap().files;
    assert_eq!(files.len(), 11);
    let timeline = svg_text(&dir.0.join("timeline.svg"));
    assert!(
        timeline.contains("stall"),
        "the zero sample is marked as a stall"
    );
    let cdf = std::fs::read_to_string(dir.0.join("cdf.svg")).unwrap();
    assert!(cdf.contains("no latency histograms"));
    let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
    assert!(md.contains("| load ops/s | N/A |"), "{md}");
    assert!(md.contains("| durability | process |"));
    assert!(md.contains("| cache | 1.0 GiB |"));
    assert!(md.contains("| direct I/O | yes |"));
    // service time, intended-start latency and the device columns; queueing delay
    // is not mistaken for a latency
    assert!(md.contains("| p99 µs (worst op) | 50.00 |"), "{md}");
    assert!(md.contains("| p99 µs from intended start (worst op) | 700 |"));
    assert!(md.contains("| device busy % (run) | 50.00 |"));
    assert!(md.contains("| device I/Os per op (run) | 2.00 |"));
    assert!(md.contains("| % of the device's ceiling (run) | 18.00 |"));
    let latency = svg_text(&dir.0.join("latency.svg"));
    assert!(latency.contains("READ (from intended start)"));
    assert!(!latency.contains("Queue-READ"));
    let throughput = svg_text(&dir.0.join("throughput.svg"));
    assert!(
        throughput.contains("ceiling 5.0k"),
        "the device ceiling is marked"
    );
}

#[test]
fn cli_renders_and_lists_files() {
    let dir = TempDir::new("analysis", "cli");
    copy_fixtures(&dir.0);
    let exe = env!("CARGO_BIN_EXE_kvtb-report");
    let out = std::process::Command::new(exe)
        .args(["charts", dir.0.to_str().unwrap(), "--title", "CLI run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 11, "{stdout}");
    assert!(stdout.lines().all(|l| Path::new(l).is_file()));
    assert!(stdout.contains("report.md"));

    let empty = TempDir::new("analysis", "cli-empty");
    let out = std::process::Command::new(exe)
        .args(["charts", empty.0.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("no ycsb result files"), "{stderr}");

    let out = std::process::Command::new(exe)
        .arg("plot")
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// Two runs of the same workload and engine in different folders are told apart by
/// folder; two of one engine in one folder by file name.
#[test]
fn repeated_runs_are_told_apart() {
    let dir = TempDir::new("analysis", "repeats");
    copy_fixtures(&dir.0.join("run1"));
    copy_fixtures(&dir.0.join("run2"));
    std::fs::copy(
        fixtures().join("sled.json"),
        dir.0.join("run2/sled-again.json"),
    )
    .unwrap();
    let files = analysis::render_dir(&dir.0, None).unwrap().files;
    let names = names(&files);
    for n in ["latency-run1_workloada.png", "cdf-run2_workloada.svg"] {
        assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
    }
    let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
    assert!(md.contains("## run1/workloada"), "{md}");
    assert!(md.contains("| metric | sled | null |"));
    assert!(md.contains("| metric | sled-again | sled | null |"), "{md}");
    let svg = svg_text(&dir.0.join("throughput.svg"));
    assert!(svg.contains("run2/workloada"));
}
