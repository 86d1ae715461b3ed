//! End-to-end tests of the `ycsb` command: key vectors, seeded repeatability, sled
//! and null runs with JSON results, and clear errors on bad input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::{Tmp, stderr, stdout, ycsb};
use std::path::Path;
use std::process::Output;

/// The value of `[SECTION], Name, value` in a YCSB summary.
fn metric(out: &str, section: &str, name: &str) -> Option<f64> {
    out.lines()
        .filter(|l| l.starts_with(&format!("[{section}], {name},")))
        .filter_map(|l| l.rsplit(',').next()?.trim().parse().ok())
        .next_back()
}

#[test]
fn key_names_match_ycsb_vectors() {
    let o = ycsb(&[
        "trace",
        "-w",
        "C",
        "-p",
        "recordcount=3",
        "--phase",
        "load",
        "--out",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let keys: Vec<String> = stdout(&o)
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().to_string())
        .collect();
    assert_eq!(
        keys,
        vec![
            "user6284781860667377211",
            "user8517097267634966620",
            "user1820151046732198393"
        ]
    );
    let o = ycsb(&[
        "trace",
        "-w",
        "C",
        "-p",
        "recordcount=2",
        "-p",
        "insertorder=ordered",
        "-p",
        "zeropadding=5",
        "--phase",
        "load",
        "--out",
        "-",
    ]);
    assert!(stdout(&o).contains(",user00001,"), "{}", stdout(&o));
}

#[test]
fn same_seed_gives_the_same_operations() {
    let args = |seed: &'static str| {
        [
            "trace",
            "-w",
            "E",
            "-p",
            "recordcount=1000",
            "-p",
            "operationcount=3000",
            "--seed",
            seed,
            "--out",
            "-",
        ]
    };
    let a = stdout(&ycsb(&args("7")));
    let b = stdout(&ycsb(&args("7")));
    let c = stdout(&ycsb(&args("8")));
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(a.lines().count(), 3001);
    assert!(a.lines().nth(1).unwrap().starts_with("0,"));
    assert!(a.contains(",SCAN,") && a.contains(",PUT,"));
    // and a single-threaded run issues that same mix
    let run = |seed: &str| {
        let o = ycsb(&[
            "run",
            "-w",
            "A",
            "--engine",
            "null",
            "-p",
            "operationcount=20000",
            "--seed",
            seed,
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        metric(&stdout(&o), "READ", "Operations").unwrap()
    };
    assert_eq!(run("5"), run("5"));
    assert_ne!(run("5"), run("6"));
}

#[test]
fn sled_run_prints_summary_and_writes_json() {
    let t = Tmp::new("sled-json");
    let out = t.s("r.json");
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
        "recordcount=2000",
        "-p",
        "operationcount=6000",
        "-p",
        "dataintegrity=true",
        "--threads",
        "2",
        "--out",
        &out,
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        metric(&s, "OVERALL", "Throughput(ops/sec)").unwrap() > 0.0,
        "{s}"
    );
    assert!(s.contains("# durability none"), "{s}");
    let reads = metric(&s, "READ", "Operations").unwrap();
    assert_eq!(
        metric(&s, "READ", "Return=OK"),
        Some(reads),
        "every loaded key is found and verifies: {s}"
    );
    assert!(!s.contains("UNEXPECTED_VALUE"));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(j["engine"]["name"], "sled");
    assert_eq!(j["engine"]["durability"], "none");
    assert_eq!(j["engine"]["direct_io"], false);
    assert_eq!(j["engine"]["settings"]["flush"], "periodic");
    assert_eq!(j["properties"]["recordcount"], "2000");
    assert!(j["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(
        j["command"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--load")
    );
    let phases = j["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    assert_eq!(phases[0]["phase"], "load");
    assert_eq!(phases[0]["operations"], 2000);
    assert_eq!(phases[1]["operations"], 6000);
    let ops = phases[1]["ops"].as_array().unwrap();
    assert!(
        ops.iter()
            .all(|o| o["histogram_v2_base64"].as_str().unwrap().len() > 10)
    );
    assert!(phases[1]["timeline"].is_array());
    assert!(
        phases[1]["counters_after"]
            .as_object()
            .unwrap()
            .contains_key("device_bytes_read")
    );
}

#[test]
fn load_and_run_in_separate_processes_find_the_data() {
    let t = Tmp::new("sled-two");
    let data = t.s("data");
    let common = [
        "-w",
        "B",
        "--engine",
        "sled",
        "--data",
        &data,
        "-p",
        "recordcount=1500",
        "-p",
        "operationcount=3000",
        "--quiet",
    ];
    let o = ycsb(&[&["load"][..], &common].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(metric(&stdout(&o), "INSERT", "Return=OK"), Some(1500.0));
    let o = ycsb(
        &[
            &["run", "--qd", "8", "-p", "dataintegrity=true"][..],
            &common,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    // sled has no native asynchronous path: --qd 8 is 8 client threads
    assert!(
        s.contains("8 requests in flight as 8 closed-loop client threads"),
        "{s}"
    );
    assert_eq!(
        metric(&s, "READ", "Return=OK"),
        metric(&s, "READ", "Operations"),
        "{s}"
    );
    assert!(!s.contains("NOT_FOUND"));
}

#[test]
fn target_rate_throttles_and_reports_intended_latency() {
    let o = ycsb(&[
        "run",
        "-w",
        "C",
        "--engine",
        "null",
        "-p",
        "operationcount=1000",
        "-target",
        "2000",
        "-threads",
        "2",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    // 1000 operations at 2000/s cannot finish in less than ~0.5 s
    assert!(
        metric(&s, "OVERALL", "RunTime(ms)").unwrap() >= 450.0,
        "{s}"
    );
    assert!(s.contains("[Intended-READ], Operations, 1000"), "{s}");
}

#[test]
fn warmup_is_excluded_and_duration_limits_the_run() {
    let t = Tmp::new("warm");
    let out = t.s("w.json");
    let o = ycsb(&[
        "run",
        "-w",
        "C",
        "--engine",
        "null",
        "-p",
        "operationcount=1000000000",
        "--warmup",
        "1.2",
        "--duration",
        "1",
        "-target",
        "5000",
        "--out",
        &out,
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let run = &j["phases"][0];
    let ms = run["runtime_ms"].as_f64().unwrap();
    assert!(ms >= 990.0, "measured period excludes the warm-up: {ms}");
    let ops = run["operations"].as_u64().unwrap();
    assert!(ops < 1_000_000_000 && ops > 0);
    let tl = run["timeline"].as_array().unwrap();
    assert_eq!(tl[0]["warmup"], true, "{tl:?}");
    assert_eq!(tl.last().unwrap()["warmup"], false);
    // Each second says what the VM's host took and how long the machine's tasks
    // waited for a CPU or stalled on memory: at most the second itself (the
    // pressure, a wall-clock share) or every CPU's second (steal).
    let cpus = std::thread::available_parallelism().map_or(64, |n| n.get()) as f64;
    let mut prev = 0.0;
    for s in tl {
        let t = s["t"].as_f64().unwrap();
        let dt = t - prev + 0.05;
        prev = t;
        let steal = s["steal_s"].as_f64().unwrap();
        assert!((0.0..=dt * cpus).contains(&steal), "{s}");
        for k in ["cpu_pressure_s", "memory_pressure_s"] {
            if std::path::Path::new("/proc/pressure").exists() {
                let p = s[k].as_f64().unwrap();
                assert!((0.0..=dt).contains(&p), "{k}: {s}");
            }
        }
        assert!(s["major_faults"].as_u64().is_some(), "{s}");
    }
}

#[test]
fn compare_prints_one_table_and_writes_each_result() {
    let t = Tmp::new("compare");
    let o = ycsb(&[
        "compare",
        "-w",
        "C",
        "--engines",
        "sled,null",
        "-p",
        "recordcount=1000",
        "-p",
        "operationcount=2000",
        "--data",
        &t.s("data"),
        "--out-dir",
        &t.s("out"),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    let header = s.lines().find(|l| l.starts_with("metric")).unwrap();
    assert!(header.contains("sled") && header.contains("null"), "{s}");
    assert!(
        s.contains("run ops/s") && s.contains("durability") && s.contains("(* best in row)"),
        "{s}"
    );
    assert!(t.0.join("out/sled.json").is_file() && t.0.join("out/null.json").is_file());
}

fn assert_clean_error(o: &Output, needle: &str) {
    let e = stderr(o);
    assert!(
        !o.status.success(),
        "expected failure, got success: {}",
        stdout(o)
    );
    assert!(e.contains(needle), "stderr lacks '{needle}': {e}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn bad_input_gets_a_clear_error() {
    let t = Tmp::new("bad");
    let bad_file = t.s("bad.properties");
    // property files read as Java reads them: `key value` is a property, a malformed
    // \u escape is not
    std::fs::write(&bad_file, "recordcount=10\nfieldlength=\\u12x4\n").unwrap();
    let data = t.s("data");
    let run = |extra: &[&str]| {
        let mut a = vec!["run", "--engine", "null", "--quiet"];
        a.extend_from_slice(extra);
        ycsb(&a)
    };
    assert_clean_error(
        &ycsb(&["run", "-w", "A", "--engine", "nosuch"]),
        "unknown engine 'nosuch'",
    );
    assert_clean_error(&run(&["-w", "Z"]), "unknown workload 'Z'");
    assert_clean_error(&run(&["-P", &bad_file]), "line 2");
    assert_clean_error(&run(&["-P", &t.s("missing")]), "cannot read property file");
    assert_clean_error(
        &run(&["-w", "A", "-p", "readproportion=-1"]),
        "readproportion",
    );
    assert_clean_error(
        &run(&["-w", "A", "-p", "readproportion=lots"]),
        "readproportion",
    );
    assert_clean_error(
        &run(&[
            "-w",
            "A",
            "-p",
            "readproportion=0",
            "-p",
            "updateproportion=0",
        ]),
        "all operation proportions are zero",
    );
    assert_clean_error(&run(&["-w", "A", "-p", "recordcount=-3"]), "recordcount");
    assert_clean_error(
        &run(&["-w", "A", "-p", "requestdistribution=pareto"]),
        "unknown distribution 'pareto'",
    );
    assert_clean_error(&run(&["-w", "A", "-p", "novalue"]), "expected key=value");
    assert_clean_error(&run(&["-w", "A", "--threads", "0"]), "--threads");
    assert_clean_error(&run(&["-w", "A", "--memory", "lots"]), "--memory");
    assert_clean_error(
        &run(&["-w", "A", "-p", "null.cache=1G"]),
        "unknown option null.cache",
    );
    assert_clean_error(
        &ycsb(&[
            "run",
            "-w",
            "A",
            "--engine",
            "sled",
            "--data",
            &data,
            "-p",
            "sled.flush=sometimes",
        ]),
        "sled.flush",
    );
    // a directory that holds another engine's data
    let kv = t.0.join("data/sled");
    std::fs::create_dir_all(&kv).unwrap();
    std::fs::write(kv.join(kvapi::MARKER_FILE), "kvell\n").unwrap();
    let o = ycsb(&[
        "load", "-w", "A", "--engine", "sled", "--data", &data, "--quiet",
    ]);
    assert_clean_error(&o, "holds a kvell database");
    let o = ycsb(&[
        "load", "-w", "A", "--engine", "sled", "--data", &data, "--fresh", "--quiet",
    ]);
    assert_clean_error(&o, "not removing it");
    assert!(
        kv.join(kvapi::MARKER_FILE).exists(),
        "--fresh never removes another engine's data"
    );
    // a typo in a workload property is warned about, not silently ignored
    let o = run(&["-w", "C", "-p", "readproportoin=1"]);
    assert!(o.status.success());
    assert!(
        stderr(&o).contains("unknown property 'readproportoin'"),
        "{}",
        stderr(&o)
    );
    // usage errors exit 2 (clap), runtime errors 1
    assert_eq!(ycsb(&["run", "--bogus-flag"]).status.code(), Some(2));
    assert_eq!(run(&["-w", "Z"]).status.code(), Some(1));
}

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
