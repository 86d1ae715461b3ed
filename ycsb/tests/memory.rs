//! Memory held to the budget, end to end: what a run measures, a RocksDB load larger
//! than its budget staying within it, an engine over budget flagged and left out of
//! the best cells, and the WAL engine refusing an image that does not fit.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::{Tmp, stderr, stdout, ycsb};

fn json(path: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn phase<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == name)
        .unwrap_or_else(|| panic!("no {name} phase"))
}

#[test]
fn every_run_measures_memory_per_phase_and_per_second() {
    let t = Tmp::new("mem-measure");
    let out = t.s("r.json");
    let o = ycsb(&[
        "run",
        "-w",
        "C",
        "--engine",
        "kvell",
        "--load",
        "--data",
        &t.s("d"),
        "--quiet",
        "-p",
        "recordcount=20000",
        "-p",
        "operationcount=0",
        "--duration",
        "2",
        "--qd",
        "16",
        "--memory",
        "32M",
        "--warmup",
        "auto",
        "--warmup-max",
        "3",
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    for needle in [
        "[MEMORY], Budget(MiB), 32.0",
        "[MEMORY], PeakUsed(MiB)",
        "[WARMUP], Seconds",
    ] {
        assert!(s.contains(needle), "missing {needle} in {s}");
    }
    let r = json(&out);
    assert_eq!(r["memory"]["budget_bytes"], 32 << 20);
    assert!(r["memory"]["driver_rss_bytes"].as_u64().unwrap() > 0);
    let run = phase(&r, "run");
    let m = &run["memory"];
    let used = m["peak_used_bytes"].as_u64().unwrap();
    assert!(
        used > 0 && m["used_over_budget"].as_f64().unwrap() > 0.0,
        "{m}"
    );
    assert!(
        m["engine_accounting"]["page_cache"].as_u64().is_some(),
        "{m}"
    );
    let tl = run["timeline"].as_array().unwrap();
    assert!(
        tl.iter().all(|s| s["rss_bytes"].as_u64().is_some()),
        "per-second RSS"
    );
    assert!(phase(&r, "warmup")["warmup"]["seconds"].as_f64().is_some());
}

#[test]
fn a_rocksdb_load_larger_than_its_budget_stays_within_it() {
    let t = Tmp::new("mem-rocks");
    let out = t.s("r.json");
    // 250 MB of records into a 128 MiB budget
    let o = ycsb(&[
        "load",
        "-w",
        "A",
        "--engine",
        "rocksdb",
        "--data",
        &t.s("d"),
        "--quiet",
        "-p",
        "recordcount=250000",
        "--qd",
        "32",
        "--memory",
        "128M",
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json(&out);
    let m = &phase(&r, "load")["memory"];
    let ratio = m["used_over_budget"].as_f64().unwrap();
    assert!(ratio <= 1.10, "RocksDB held {ratio:.2} of its budget: {m}");
    // its own accounting is there too, and inside the budget
    let own: u64 = m["engine_accounting"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|v| v.as_u64())
        .sum();
    assert!(own > 0 && own <= 128 << 20, "{m}");
}

#[test]
fn an_engine_over_budget_is_flagged_and_not_starred() {
    let t = Tmp::new("mem-flag");
    // KVell told to keep a 64 MiB cache under a 16 MiB budget: over budget, whatever
    // else it does (held by the cgroup as root: killed at the limit; measured otherwise)
    let o = ycsb(&[
        "compare",
        "-w",
        "C",
        "--engines",
        "kvell,sled",
        "--data",
        &t.s("d"),
        "--out-dir",
        &t.s("out"),
        "--quiet",
        "-p",
        "recordcount=20000",
        "-p",
        "operationcount=20000",
        "--qd",
        "16",
        "--memory",
        "16M",
        "-p",
        "kvell.cache=64M",
        "--warmup-max",
        "2",
        "--memory-limit",
        "none",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("not counted for best: kvell: over budget"),
        "{s}"
    );
    // no starred cell in kvell's column: kvell is the first engine column
    let header = s.lines().find(|l| l.starts_with("metric")).unwrap();
    let kvell_col = header.find("kvell").unwrap();
    for l in s
        .lines()
        .filter(|l| l.starts_with("run ops/s") || l.starts_with("p99 us"))
    {
        let cell = &l[..(kvell_col + 5).min(l.len())];
        assert!(!cell.trim_end().ends_with('*'), "kvell starred: {l}");
    }
}

/// The WAL engine pages its image through a cache but keeps its ordered index in
/// memory: 50,000 keys need about 4 MiB of index, more than a 2 MiB budget leaves,
/// so the load's inserts are refused (OVER_BUDGET) once the index fills it.
#[test]
fn the_wal_engine_under_a_budget_smaller_than_its_index_is_refused() {
    let t = Tmp::new("mem-wal");
    let out = t.s("r.json");
    let o = ycsb(&[
        "load",
        "-w",
        "A",
        "--engine",
        "wal",
        "--data",
        &t.s("d"),
        "--quiet",
        "-p",
        "recordcount=50000",
        "--memory",
        "2M",
        "--memory-limit",
        "none",
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("did not fit its memory budget"),
        "{}",
        stderr(&o)
    );
    let r = json(&out);
    let insert = phase(&r, "load")["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "INSERT")
        .unwrap()
        .clone();
    assert!(
        insert["status"]["OVER_BUDGET"].as_u64().unwrap() >= 1,
        "{insert}"
    );
}

/// An engine killed by its memory cgroup leaves a record of the kill that says what
/// ran: the engine as it opened (its durability class and setting), the workload and
/// the budget. Before, the record held the budget and the kill alone, and a table of
/// killed runs could not say at which durability each engine was run.
#[test]
fn a_kill_at_the_memory_limit_is_recorded_with_the_engine_as_it_opened() {
    let t = Tmp::new("mem-kill");
    let out = t.s("r.json");
    // sled (its files read through the OS page cache, charged to the cgroup) loading
    // 100 MiB under a 16 MiB budget: it opens, then the load passes the limit
    let o = ycsb(&[
        "load",
        "-w",
        "A",
        "--engine",
        "sled",
        "--data",
        &t.s("d"),
        "--quiet",
        "-p",
        "recordcount=100000",
        "--memory",
        "16M",
        "--memory-limit",
        "cgroup",
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let r = json(&out);
    assert_eq!(r["memory"]["killed_at_limit"], true, "{r}");
    assert_eq!(r["memory"]["budget_bytes"], 16 << 20, "{r}");
    assert_eq!(r["engine"]["durability"], "none", "{r}");
    assert_eq!(r["memory"]["uses_os_page_cache"], true, "{r}");
    assert!(
        !r["engine"]["durability_setting"]
            .as_str()
            .unwrap()
            .is_empty(),
        "{r}"
    );
    assert_eq!(r["properties"]["recordcount"], "100000", "{r}");
    assert!(r["phases"].as_array().unwrap().is_empty(), "{r}");
    let notes = r["engine"]["notes"].to_string();
    assert!(
        notes.contains("killed by the kernel at its memory limit"),
        "{notes}"
    );
    assert!(
        !std::path::Path::new(&format!("{out}.opened")).exists(),
        "the child's record is removed once read"
    );
}

/// A load (`recordcount=N`) and a one-second YCSB A run on the null engine in `data`
/// by `threads` client threads, under a 64 MiB budget measured, not enforced.
fn null_run<'a>(data: &'a str, records: &'a str, threads: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "-w",
        "A",
        "--engine",
        "null",
        "--load",
        "--data",
        data,
        "--quiet",
        "-p",
        records,
        "-p",
        "operationcount=0",
        "--duration",
        "1",
        "--threads",
        threads,
        "--memory",
        "64M",
        "--memory-limit",
        "none",
    ]
}

/// The driver's histograms (up to three of about 270 KB per operation kind and
/// recorder; client threads beyond one per core share recorders) are counted and left
/// out of what the engine is said to hold, so that the null engine at 32 threads is
/// not charged for them.
#[test]
fn the_drivers_histograms_are_counted_and_left_out_of_the_engines_figure() {
    let t = Tmp::new("mem-hist");
    let d = t.s("d");
    let run = |threads: &str, name: &str| {
        let out = t.s(name);
        let mut args = null_run(&d, "recordcount=2000", threads);
        args.extend(["--out", out.as_str()]);
        let o = ycsb(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let r = json(&out);
        let m = phase(&r, "run")["memory"].clone();
        (
            m["driver_histogram_bytes"].as_u64().unwrap(),
            m["peak_used_bytes"].as_u64().unwrap(),
            m["peak_rss_bytes"].as_u64().unwrap(),
            r["memory"]["driver_rss_bytes"].as_u64().unwrap(),
        )
    };
    let (h1, ..) = run("1", "one.json");
    let (h32, used, rss, driver) = run("32", "many.json");
    // two kinds (read, update): at least one histogram each
    assert!(h1 >= 2 * 200_000, "histograms at one thread: {h1} B");
    // client threads beyond one per core share recorders: the histograms grow with
    // the cores, not with the 32 threads (they took 32 times one thread's before)
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let recorders = cores.min(32);
    assert!(
        h32 >= recorders * h1 / 2 && h32 <= recorders * h1 * 3 / 2,
        "histograms at 32 threads on {cores} cores: {h32} B, at one: {h1} B"
    );
    assert!(
        used + h32 <= rss.saturating_sub(driver) + (1 << 20),
        "left out of the engine's figure: used {used}, histograms {h32}, rss {rss}, driver {driver}"
    );
}

/// RocksDB at 64 requests in flight through the thread pool (300K x 1 KiB into 96 MiB:
/// at 150K into 48 MiB what RocksDB holds outside its cache reached 1.20 of the budget
/// with the cache at its floor in one CI run): its allocator keeps about
/// half as much again as its block cache holds, and the memory governor resizes the
/// cache so that the measured figure stays within the budget. The run records the
/// capacity per second and what the governor did per phase; with the governor off the
/// cache keeps RocksDB's own share and nothing is recorded.
#[test]
fn rocksdb_at_64_in_flight_is_governed_to_its_budget_as_measured() {
    let t = Tmp::new("mem-govern");
    let run = |governor: &str, name: &str| {
        let out = t.s(name);
        let o = ycsb(&[
            "run",
            "-w",
            "A",
            "--engine",
            "rocksdb",
            "--load",
            "--fresh",
            "--data",
            &t.s("d"),
            "--quiet",
            "-p",
            "recordcount=300000",
            "-p",
            "operationcount=0",
            "--duration",
            "8",
            "--warmup",
            "auto",
            "--warmup-max",
            "8",
            "--qd",
            "64",
            "--memory",
            "96M",
            "--memory-limit",
            "none",
            "--memory-governor",
            governor,
            "--out",
            &out,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        json(&out)
    };
    let r = run("on", "on.json");
    let open = phase(&r, "load")["memory"]["governor"]["open_bytes"]
        .as_u64()
        .unwrap();
    // RocksDB's own share is 7/8 of the budget; the governor starts it at half
    assert_eq!(open, (96 << 20) - (96 << 20) / 8);
    assert_eq!(
        phase(&r, "load")["memory"]["governor"]["start_bytes"].as_u64(),
        Some(open / 2)
    );
    let run_phase = phase(&r, "run");
    let m = &run_phase["memory"];
    let ratio = m["used_over_budget"].as_f64().unwrap();
    assert!(
        ratio <= 1.10,
        "governed RocksDB held {ratio:.2} of its budget: {m}"
    );
    let g = &m["governor"];
    let cap = g["end_bytes"].as_u64().unwrap();
    assert!(cap >= open / 16 && cap <= open, "{g}");
    // each second's capacity is the engine's own report of it
    let timeline = run_phase["timeline"].as_array().unwrap();
    assert!(!timeline.is_empty());
    assert!(
        timeline
            .iter()
            .all(|s| s["cache_capacity_bytes"].as_u64().is_some()),
        "every sample records the capacity"
    );
    let capacity = &run_phase["counters_after"]["block_cache_capacity_bytes"];
    assert_eq!(capacity.as_u64(), Some(cap), "{g}");

    let off = run("off", "off.json");
    let m = &phase(&off, "run")["memory"];
    assert!(m.get("governor").is_none(), "{m}");
    assert_eq!(
        phase(&off, "run")["counters_after"]["block_cache_capacity_bytes"].as_u64(),
        Some(open),
        "ungoverned, the cache keeps RocksDB's share"
    );
}

/// The highest resident memory of `ycsb` run with `args` (the kernel's high-water
/// mark, which no sampling misses), in bytes.
fn peak_rss_of(args: &[&str]) -> u64 {
    use std::process::{Command, Stdio};
    let child = Command::new(env!("CARGO_BIN_EXE_ycsb"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("running ycsb");
    let pid = i32::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid, and wait4 reaps our own child, whose pid
    // `child` never waits for (it is dropped without a wait)
    #[expect(
        unsafe_code,
        reason = "wait4(2) is the only way to a child's own rusage"
    )]
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut usage), pid);
        usage
    };
    drop(child);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "ycsb {args:?} failed: {status}"
    );
    u64::try_from(usage.ru_maxrss).unwrap() * 1024
}

/// What the driver allocates per client thread stays within the room the memory
/// cgroup gives it (2 MiB per recorder and 256 KiB per thread beyond one;
/// `cli/memory.rs`), by the kernel's high-water mark. The insert counter's window
/// (1 MiB) was made for each of a load's client threads, and the null-engine
/// calibration that follows every measured phase zeroed 64 of them while the
/// measured engine was still open: 64 MiB of the driver's charged to the engine.
/// WiredTiger, at 64 client threads, was killed by its memory cgroup at the start of
/// every YCSB run of reproduce-paper small at a9be173. Whether such a window is
/// touched depends on what the allocator reuses (here, with the null engine's
/// values, the old code cost 13 MiB at 64 threads, within the room), so the window
/// itself is checked in `generator.rs` (`ack_counter_advances_over_contiguous_acks`).
#[test]
fn sixty_four_client_threads_stay_within_the_drivers_room() {
    let t = Tmp::new("mem-threads");
    let d = t.s("d");
    let peak = |threads: &str| {
        let mut args = null_run(&d, "recordcount=20000", threads);
        args.push("--fresh");
        peak_rss_of(&args)
    };
    let (one, many) = (peak("1"), peak("64"));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let room = (2 << 20) * (cores.min(64) - 1) + (256 << 10) * 63;
    assert!(
        many <= one + room,
        "peak resident memory at 64 client threads {many} B, at one {one} B: more than the room of {room} B"
    );
}
