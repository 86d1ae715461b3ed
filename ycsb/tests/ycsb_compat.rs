//! The driver as a YCSB user meets it: property files in Java's syntax, YCSB's
//! properties honoured or refused with a reason, the `-s` status line, the JSON
//! exporters, one-field updates, `ycsb shell`, `ycsb merge`, and output paths checked
//! before the work.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::{Tmp, stderr, stdout, ycsb};
use std::process::{Command, Stdio};

/// A workload file in the syntax of YCSB's own (separators, comments, a property YCSB
/// knows that has no effect here).
const YCSB_STYLE: &str = "# a comment\n! another\nrecordcount 400\noperationcount : 600\nworkload=site.ycsb.workloads.CoreWorkload\nreadallfields=true\nreadproportion=0.5\nupdateproportion=0.5\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian\nhistogram.buckets=1000\n";

#[test]
fn a_java_syntax_workload_file_runs_and_what_has_no_effect_is_said() {
    let t = Tmp::new("compat-file");
    let f = t.s("workload");
    std::fs::write(&f, YCSB_STYLE).unwrap();
    let o = ycsb(&[
        "run",
        "-P",
        &f,
        "--engine",
        "sled",
        "--load",
        "--data",
        &t.s("d"),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // `recordcount 400` and `operationcount : 600` were read
    assert!(out.contains("[INSERT], Operations, 400"), "{out}");
    let reads: u64 = out
        .lines()
        .filter(|l| l.starts_with("[READ], Operations,") || l.starts_with("[UPDATE], Operations,"))
        .filter_map(|l| l.rsplit(", ").next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(reads, 600, "{out}");
    assert!(
        stderr(&o).contains("histogram.buckets=1000 has no effect here"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn ycsb_properties_that_cannot_be_honoured_are_refused_with_the_reason() {
    let t = Tmp::new("compat-refuse");
    let run = |extra: &[&str]| {
        let mut a = vec!["run", "-w", "C", "--engine", "null", "--quiet"];
        a.extend_from_slice(extra);
        ycsb(&a)
    };
    let o = run(&["-p", "db=site.ycsb.BasicDB"]);
    assert!(
        !o.status.success() && stderr(&o).contains("--engine"),
        "{}",
        stderr(&o)
    );
    let o = run(&["-p", "exporter=site.ycsb.NoSuchExporter"]);
    assert!(
        !o.status.success() && stderr(&o).contains("unknown exporter"),
        "{}",
        stderr(&o)
    );
    // YCSB's habits point to --engine
    let o = ycsb(&["run", "-db", "sled"]);
    assert!(
        !o.status.success() && stderr(&o).contains("--engine"),
        "{}",
        stderr(&o)
    );
    let o = ycsb(&["load", "basic", "-P", "x"]);
    assert!(
        !o.status.success() && stderr(&o).contains("--engine"),
        "{}",
        stderr(&o)
    );
    // an output that cannot be written fails before the run, not after it
    let ro = t.0.join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let o = run(&[
        "--out",
        "/proc/no/such/dir/r.json",
        "-p",
        "operationcount=100000000",
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("cannot"),
        "{}",
        stderr(&o)
    );
    assert!(
        !stdout(&o).contains("[OVERALL]"),
        "the run must not have started"
    );
    // operationcount=0 is no limit: the time limit ends the run
    let o = run(&["-p", "operationcount=0", "--duration", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("operationcount=0: no limit"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_status_line_is_ycsbs_with_per_interval_percentiles() {
    let o = ycsb(&[
        "run",
        "-w",
        "A",
        "--engine",
        "null",
        "-p",
        "operationcount=0",
        "--duration",
        "2.5",
        "-s",
        "-p",
        "status.interval=1",
        "--qd",
        "4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    let lines: Vec<&str> = e.lines().filter(|l| l.contains(" sec: ")).collect();
    assert!(lines.len() >= 2, "{e}");
    for l in &lines {
        assert!(
            l.contains(" operations; ") && l.contains(" current ops/sec; "),
            "{l}"
        );
        assert!(l.contains("[READ: Count=") && l.contains(", 99.9="), "{l}");
        assert!(l.contains("[UPDATE: Count="), "{l}");
    }
}

#[test]
fn the_json_array_exporter_writes_ycsbs_rows() {
    let t = Tmp::new("compat-export");
    let f = t.s("export.json");
    let o = ycsb(&[
        "run",
        "-w",
        "C",
        "--engine",
        "null",
        "-p",
        "operationcount=1000",
        "--quiet",
        "-p",
        "exporter=site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter",
        "-p",
        &format!("exportfile={f}"),
        "-p",
        "hdrhistogram.percentiles=95,99.9",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    let find = |m: &str, me: &str| {
        rows.iter()
            .find(|r| r["metric"] == m && r["measurement"] == me)
            .map(|r| r["value"].clone())
    };
    assert!(find("OVERALL", "RunTime(ms)").is_some());
    assert!(find("OVERALL", "Throughput(ops/sec)").unwrap().is_number());
    assert_eq!(find("READ", "Operations").unwrap(), 1000);
    assert!(find("READ", "95thPercentileLatency(us)").is_some());
    assert!(find("READ", "99.9PercentileLatency(us)").is_some());
    assert!(
        find("READ", "99thPercentileLatency(us)").is_none(),
        "only the chosen percentiles"
    );
    // and the result file names the commit that produced it
    let out = t.s("r.json");
    let o = ycsb(&[
        "run",
        "-w",
        "C",
        "--engine",
        "null",
        "-p",
        "operationcount=10",
        "--quiet",
        "--out",
        &out,
    ]);
    assert!(o.status.success());
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(
        r["commit"].as_str().is_some_and(|c| !c.is_empty()),
        "{}",
        r["commit"]
    );
}

#[test]
fn one_field_updates_keep_the_other_fields_and_values_verify() {
    let t = Tmp::new("compat-fields");
    let o = ycsb(&[
        "run",
        "-w",
        "A",
        "--engine",
        "sled",
        "--load",
        "--data",
        &t.s("d"),
        "--quiet",
        "-p",
        "recordcount=300",
        "-p",
        "operationcount=3000",
        "-p",
        "dataintegrity=true",
        "-p",
        "requestdistribution=uniform",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains("UNEXPECTED_VALUE"), "{out}");
    assert!(out.contains("[UPDATE], Return=OK"), "{out}");
    // and the records read back field by field after the partial updates
    let o = ycsb(&[
        "run",
        "-w",
        "C",
        "--engine",
        "sled",
        "--data",
        &t.s("d"),
        "--quiet",
        "-p",
        "recordcount=300",
        "-p",
        "operationcount=2000",
        "-p",
        "dataintegrity=true",
        "-p",
        "requestdistribution=uniform",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("UNEXPECTED_VALUE"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("[READ], Return=OK, 2000"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn the_shell_reads_writes_scans_and_deletes() {
    let t = Tmp::new("compat-shell");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ycsb"))
        .args(["shell", "--engine", "sled", "--data", &t.s("d")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"insert a1 first value\nupdate a2 second\nread a1\nscan a 5\ndelete a1\nread a1\nscan a x\nquit\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("a1 (11 bytes): first value"), "{s}");
    assert!(s.contains("2 pairs"), "{s}");
    assert!(s.contains("a1: not found"), "{s}");
    assert!(s.contains("error: scan a x: expected a count"), "{s}");
}

#[test]
fn merge_adds_clients_exactly() {
    let t = Tmp::new("compat-merge");
    let run = |n: &str| {
        let o = ycsb(&[
            "run",
            "-w",
            "C",
            "--engine",
            "null",
            "-p",
            "operationcount=5000",
            "--qd",
            "4",
            "--quiet",
            "--out",
            &t.s(n),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    run("a.json");
    run("b.json");
    let o = ycsb(&[
        "merge",
        &t.s("a.json"),
        &t.s("b.json"),
        "--out",
        &t.s("m.json"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.s("m.json")).unwrap()).unwrap();
    let run_phase = m["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "run")
        .unwrap();
    assert_eq!(run_phase["operations"], 10_000);
    let read = &run_phase["ops"].as_array().unwrap()[0];
    assert_eq!(read["operations"], 10_000, "the histograms were merged");
    let o = ycsb(&["merge", &t.s("a.json")]);
    assert!(!o.status.success());
}
