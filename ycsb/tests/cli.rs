//! End-to-end tests of the `ycsb` command: key vectors, seeded repeatability, sled
//! and null runs with JSON results, and clear errors on bad input (the device probe,
//! open loops, repeats, production mixes, traces and recovery runs: `cli_runs.rs`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::{Tmp, assert_clean_error, metric, stderr, stdout, ycsb};

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
