//! End-to-end tests of the `ycsb` command, continued from `cli.rs`: the device probe
//! and the ceiling runs take from it, open loops, compared repeats, production mixes,
//! trace replay, recovery runs and the machine's description.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::{Tmp, assert_clean_error, metric, stderr, stdout, ycsb};
use std::path::Path;

#[test]
fn device_probe_writes_a_result_that_runs_use_for_their_ceiling() {
    let t = Tmp::new("device");
    let dev = t.s("device.json");
    let o = ycsb(&[
        "device",
        "--data",
        &t.s("probe"),
        "--size",
        "16M",
        "--qds",
        "1,4",
        "--seconds",
        "0.05",
        "--out",
        &dev,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("randread") && s.contains("randwrite") && s.contains("seqread"),
        "{s}"
    );
    assert!(
        !t.0.join("probe/kvtb-device-probe.dat").exists(),
        "the probe file is removed"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&dev).unwrap()).unwrap();
    assert_eq!(j["kind"], "device");
    assert_eq!(j["points"].as_array().unwrap().len(), 8);
    // a sled run with device accounting and that device result states its ceiling
    let out = t.s("run.json");
    let o = ycsb(&[
        "run",
        "-w",
        "A",
        "--engine",
        "sled",
        "--load",
        "--data",
        &t.s("data"),
        "-p",
        "recordcount=3000",
        "-p",
        "operationcount=3000",
        "-p",
        "sled.flush=every",
        "--device-result",
        &dev,
        "--out",
        &out,
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let run = &j["phases"][1];
    let d = &run["device"];
    if !d.is_null() {
        // flushing every write must show device writes
        assert!(d["writes"].as_u64().unwrap() > 0, "{d}");
        assert!(run["user_write_bytes"].as_u64().unwrap() > 0);
        assert!(d["write_amplification"].as_f64().unwrap() > 0.0);
        let c = &run["ceiling"];
        assert!(c["fraction"].as_f64().unwrap() > 0.0, "{run}");
        assert!(stdout(&o).contains("[CEILING], FractionReached(%)"));
    }
    let tl = run["timeline"].as_array().unwrap();
    assert!(
        tl.iter()
            .all(|s| s.get("dev_util").is_some() && s.get("cpu_user_s").is_some())
    );
    // bad probe arguments
    assert_clean_error(
        &ycsb(&["device", "--data", &t.s("probe"), "--size", "1M"]),
        "at least 16 MiB",
    );
    assert_clean_error(
        &ycsb(&["device", "--data", &t.s("probe"), "--qds", "0"]),
        "--qds",
    );
    assert_clean_error(
        &ycsb(&["device", "--data", &t.s("probe"), "--read-into", "lots"]),
        "--read-into",
    );
    // a small probe of random reads with the given flags: its output and its result
    let small_probe = |name: &str, flags: &[&str]| {
        let (data, out) = (t.s("probe"), t.s(name));
        let mut args = vec![
            "device",
            "--data",
            &data,
            "--size",
            "16M",
            "--qds",
            "4",
            "--patterns",
            "randread",
            "--out",
            &out,
        ];
        args.extend_from_slice(flags);
        let o = ycsb(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        (o, j)
    };
    // reads landing in a region: the result says where
    let (o, j) = small_probe(
        "device-region.json",
        &["--seconds", "0.05", "--read-into", "8M"],
    );
    assert!(
        j["buffers"].as_str().unwrap().contains("8388608 bytes"),
        "{j}"
    );
    assert!(j["points"][0]["iops"].as_f64().unwrap() > 0.0);
    assert!(stdout(&o).contains("random patterns' reads into"));
    // under a CPU load: each point says the load it was held at and the cores it used
    let (o, j) = small_probe(
        "device-loaded.json",
        &["--seconds", "0.1", "--cpu-load", "0.5"],
    );
    let p = &j["points"][0];
    assert_eq!(p["cpu_load"].as_f64(), Some(0.5), "{p}");
    assert!(p["cpu_cores"].as_f64().unwrap() > 0.0, "{p}");
    assert!(stdout(&o).contains("held at 0.5 cores"));
    for bad in ["0", "-1", "1000", "lots"] {
        assert_clean_error(
            &ycsb(&[
                "device",
                "--data",
                &t.s("probe"),
                &format!("--cpu-load={bad}"),
            ]),
            "--cpu-load",
        );
    }
    assert_clean_error(
        &ycsb(&[
            "run",
            "-w",
            "A",
            "--engine",
            "null",
            "--device-result",
            &t.s("nothing.json"),
        ]),
        "cannot read",
    );
}

#[test]
fn open_loop_poisson_reports_queueing_apart_from_service() {
    let o = ycsb(&[
        "run",
        "-w",
        "C",
        "--engine",
        "null",
        "-p",
        "operationcount=2000",
        "--target",
        "4000",
        "--arrival",
        "poisson",
        "--qd",
        "4",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("poisson arrivals"), "{s}");
    assert_eq!(metric(&s, "Queue-READ", "Operations"), Some(2000.0), "{s}");
    assert_eq!(
        metric(&s, "Intended-READ", "Operations"),
        Some(2000.0),
        "{s}"
    );
    // intended latency = queueing + service, so it is never below the service time
    assert!(
        metric(&s, "Intended-READ", "MaxLatency(us)").unwrap()
            >= metric(&s, "READ", "MinLatency(us)").unwrap()
    );
    assert_clean_error(
        &ycsb(&[
            "run",
            "-w",
            "C",
            "--engine",
            "null",
            "--target",
            "10",
            "--arrival",
            "bursty",
        ]),
        "--arrival",
    );
}

#[test]
fn compare_repeats_alternate_and_report_spread() {
    let t = Tmp::new("repeat");
    let o = ycsb(&[
        "compare",
        "-w",
        "C",
        "--engines",
        "null,sled",
        "-p",
        "recordcount=500",
        "-p",
        "operationcount=1000",
        "--repeat",
        "2",
        "--data",
        &t.s("data"),
        "--out-dir",
        &t.s("out"),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("run ops/s min..max") && s.contains("median run of 2"),
        "{s}"
    );
    let e = stderr(&o);
    let order: Vec<&str> = e
        .lines()
        .filter(|l| l.starts_with("== "))
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(order, vec!["null", "sled", "sled", "null"], "{e}");
    for f in [
        "null-r1.json",
        "null-r2.json",
        "sled-r1.json",
        "sled-r2.json",
    ] {
        assert!(t.0.join("out").join(f).is_file(), "{f}");
    }
}

#[test]
fn production_workloads_run_with_their_mix_and_sizes() {
    let t = Tmp::new("prod");
    let out = t.s("p.csv");
    let o = ycsb(&[
        "trace",
        "-w",
        "production1",
        "-p",
        "recordcount=10000",
        "-p",
        "operationcount=20000",
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let share = |op: &str| rows.iter().filter(|r| r[1] == op).count() as f64 / rows.len() as f64;
    assert!(
        (share("PUT") - 0.57).abs() < 0.02
            && (share("GET") - 0.41).abs() < 0.02
            && (share("SCAN") - 0.02).abs() < 0.01
    );
    // 81% of accesses fall in 28.8%..62.88% of the key space
    let keynum = |r: &Vec<&str>| r[2][4..].parse::<u64>().unwrap();
    let hot = rows
        .iter()
        .filter(|r| (2880..6288).contains(&keynum(r)))
        .count() as f64
        / rows.len() as f64;
    assert!((hot - 0.8117).abs() < 0.02, "{hot}");
    // value sizes follow the key's rank
    for r in rows.iter().filter(|r| r[1] == "PUT") {
        let want = match keynum(r) * 100 / 10_000 {
            0 => "100",
            1..=81 => "400",
            82..=97 => "1024",
            _ => "4096",
        };
        assert_eq!(r[4], want, "{r:?}");
    }
    let o = ycsb(&[
        "run",
        "-w",
        "production2",
        "--engine",
        "sled",
        "--load",
        "--data",
        &t.s("data"),
        "-p",
        "recordcount=2000",
        "-p",
        "operationcount=2000",
        "-p",
        "dataintegrity=true",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert_eq!(
        metric(&s, "READ", "Return=OK"),
        metric(&s, "READ", "Operations"),
        "{s}"
    );
    assert!(metric(&s, "SCAN", "Operations").unwrap() > 0.0);
    assert_clean_error(
        &ycsb(&[
            "run",
            "-w",
            "production2",
            "--engine",
            "null",
            "-p",
            "production2.thresholds=sideways",
        ]),
        "production2.thresholds",
    );
}

#[test]
fn meta_trace_converts_and_replays() {
    let t = Tmp::new("replay");
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/meta-kvcache-sample.csv");
    let csv = t.s("meta.csv");
    let bin = t.s("meta.bin");
    let o = ycsb(&[
        "trace",
        "convert",
        "--from",
        "meta",
        sample.to_str().unwrap(),
        "--out",
        &csv,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("691 requests"), "{}", stderr(&o));
    let o = ycsb(&[
        "trace", "convert", "--from", "csv", &csv, "--out", &bin, "--format", "bin",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::metadata(&bin).unwrap().len(), 32 + 691 * 32);
    let data_dir = t.s("data");
    for (file, extra) in [
        (&csv, vec![]),
        (&bin, vec!["--qd", "4", "--speed", "100000"]),
    ] {
        let out = t.s("r.json");
        let mut args = vec![
            "run",
            "--trace",
            file.as_str(),
            "--engine",
            "sled",
            "--fresh",
            "--data",
            &data_dir,
            "--out",
            &out,
            "--quiet",
        ];
        args.extend(extra);
        let o = ycsb(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let s = stdout(&o);
        assert_eq!(metric(&s, "READ", "Operations"), Some(678.0), "{s}");
        assert_eq!(metric(&s, "UPDATE", "Operations"), Some(10.0), "{s}");
        assert_eq!(metric(&s, "DELETE", "Operations"), Some(3.0), "{s}");
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert!(
            j["workload_resolved"]["preloaded_keys"]
                .as_str()
                .unwrap()
                .starts_with("43 keys")
        );
    }
    // a closed-loop replay of one thread finds every key it reads
    let o = ycsb(&[
        "run",
        "--trace",
        &csv,
        "--engine",
        "sled",
        "--fresh",
        "--data",
        &t.s("data"),
        "--quiet",
    ]);
    assert_eq!(metric(&stdout(&o), "READ", "Return=OK"), Some(678.0));
    // bad traces
    let bad = t.s("bad.csv");
    std::fs::write(
        &bad,
        "time_us,op,key,key_size,value_size,scan_length\n0,GET,a,1,x,0\n",
    )
    .unwrap();
    assert_clean_error(
        &ycsb(&["run", "--trace", &bad, "--engine", "null"]),
        "line 2",
    );
    std::fs::write(&bad, "").unwrap();
    assert_clean_error(
        &ycsb(&["run", "--trace", &bad, "--engine", "null"]),
        "empty",
    );
    let data = std::fs::read(&bin).unwrap();
    std::fs::write(&bad, &data[..100]).unwrap();
    assert_clean_error(
        &ycsb(&["run", "--trace", &bad, "--engine", "null"]),
        "truncated",
    );
    assert_clean_error(
        &ycsb(&["trace", "convert", "--from", "nosuch", &csv, "--out", &bad]),
        "--from",
    );
}

#[test]
fn recovery_kills_a_running_workload_and_times_the_reopen() {
    let t = Tmp::new("recovery");
    let out = t.s("rec.json");
    let o = ycsb(&[
        "recovery",
        "--engine",
        "kvell",
        "-w",
        "A",
        "-p",
        "recordcount=3000",
        "--qd",
        "16",
        "--data",
        &t.s("data"),
        "--run-seconds",
        "1",
        "--cycles",
        "2",
        "--verify",
        "0",
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(j["kind"], "recovery");
    assert_eq!(j["engine"]["name"], "kvell");
    let cycles = j["cycles"].as_array().unwrap();
    assert_eq!(cycles.len(), 2);
    for c in cycles {
        // Killed mid-run: the child had reported operations, every record read back.
        assert!(c["ops_before_kill"].as_u64().unwrap() > 0, "{c}");
        assert_eq!(c["verified_records"].as_u64(), Some(3000), "{c}");
        assert_eq!(c["missing_records"].as_u64(), Some(0), "{c}");
        assert!(c["recovery_s"].as_f64().unwrap() > 0.0);
        assert!(c["data_bytes"].as_u64().unwrap() > 3000 * 1000);
    }
    assert!(j["counters_after_open"]["items"].as_u64().unwrap() >= 3000);
    // A stateless engine and a bad duration are refused up front.
    assert_clean_error(
        &ycsb(&["recovery", "--engine", "null", "-w", "A"]),
        "stateless",
    );
    assert_clean_error(
        &ycsb(&[
            "recovery",
            "--engine",
            "kvell",
            "-w",
            "A",
            "--run-seconds",
            "0",
        ]),
        "--run-seconds",
    );
}

#[test]
fn machine_prints_the_description_results_carry() {
    let o = ycsb(&["machine", "--data", "."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(j["cores"].as_u64().unwrap() >= 1);
    assert!(j["kernel"].as_str().is_some());
}
