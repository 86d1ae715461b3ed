//! The durability audit must be able to fail. Each way a real loss could hide is
//! shown failing it: at the library level (the audit's cycles with a scripted child
//! that reports writes, and a real engine holding a crafted state), and through the
//! `ycsb crash` command where the point is the process (a full disk, the JSON
//! result). Clean runs of kvell, wal and sled with many requests in flight pass.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

use kvapi::Engine;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use ycsb::crash::plan::{Op, Write, version};
use ycsb::crash::{Audit, Kind, Plan, Report, Role};

struct Tmp(PathBuf);
impl Tmp {
    fn new(label: &str) -> Tmp {
        let base = std::env::var_os("KVTESTBED_TMP")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let d = base.join(format!("ycsb-crash-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Tmp(d)
    }
    fn s(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ycsb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ycsb"))
        .args(args)
        .output()
        .expect("running ycsb")
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

// ---- the audit's cycles with a scripted child and a crafted engine state ----

/// One key, puts only: the first write of cycle 1 is a put of `crash000000`.
fn plan() -> Plan {
    Plan {
        seed: 5,
        keys: 1,
        value_bytes: (100, 3000),
        delete_fraction: 0.0,
    }
}

fn first_put() -> (Write, usize) {
    let w = plan().write(version(1, 1));
    let Op::Put { len } = w.op else {
        unreachable!("the plan has no deletes")
    };
    (w, len)
}

/// A child that runs `script` with `sh` (`exec sleep` at its end makes the killed
/// process the one holding the pipes).
fn sh(script: &str) -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", script]);
    c
}

/// A child that reports the first put as written and acknowledged, then waits for
/// the kill, writing nothing: the engine holds whatever `open` puts there.
fn reporting_child() -> String {
    let (w, len) = first_put();
    format!(
        "echo READY; echo 'P {v} crash000000 {len}'; echo 'A {v}'; exec sleep 60",
        v = w.version
    )
}

/// One cycle of the audit on a sled engine (flush=every, class process) under `dir`,
/// the child `script`, and `craft` applied to the engine at the parent's reopen.
fn audit_one(dir: &Path, script: &str, loss_allowed: bool, craft: &dyn Fn(&dyn Engine)) -> Report {
    let data = dir.join("crash-sled");
    let props = {
        let mut p = ycsb::props::Properties::new();
        ycsb::props::set_override("sled.flush=every", &mut p).unwrap();
        p
    };
    let open = || {
        let e = ycsb::engines::open("sled", &ycsb::engines::options("sled", &props, &data, None))?;
        craft(e.as_ref());
        Ok::<Arc<dyn Engine>, ycsb::Error>(e)
    };
    open().unwrap().close().unwrap();
    let spawn = |_: Role, _: u64| sh(script);
    let audit = Audit {
        plan: plan(),
        cycles: 1,
        kill_after_ms: (100, 100),
        recovery_kills: 0.0,
        loss_allowed,
        data: data.clone(),
        snapshot_max: 64 << 20,
        spawn: &spawn,
        open: &open,
        power: None,
    };
    ycsb::crash::run(&audit, &mut |_| {}).unwrap()
}

/// The evidence of a failed cycle is kept beside the data directory; when that cannot
/// be done (here a full file system: no room for the kept directory), the audit still
/// ends with its report and its finding, and says the evidence was not kept. Before,
/// the audit ended with the file system's error alone and `ycsb crash --out` wrote no
/// document (a CI run of `a_full_disk_fails_the_audit_with_the_childs_message`).
#[test]
fn evidence_that_cannot_be_kept_aside_is_said_and_the_report_still_comes() {
    let fs = match kvtestkit::testfs::SmallFs::new("ycsb-crash-keep", 16) {
        Ok(fs) => fs,
        Err(why) => return eprintln!("SKIP keep-on-a-full-disk test: {why}"),
    };
    let data = fs.path().join("crash-sled");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("data"), b"written before the disk filled").unwrap();
    // fill the file system to its last block, so that no directory can be made beside
    // the data directory
    {
        use std::io::Write as _;
        let mut f = std::fs::File::create(fs.path().join("filler")).unwrap();
        for chunk in [1 << 20, 4096, 512, 1] {
            let buf = vec![7u8; chunk];
            while f.write_all(&buf).and_then(|()| f.sync_all()).is_ok() {}
        }
    }
    assert!(
        std::fs::create_dir(fs.path().join("probe-dir")).is_err(),
        "the file system is not full: the test would not test anything"
    );
    let open = || -> ycsb::Result<Arc<dyn Engine>> { Err(ycsb::Error::failed("refused (test)")) };
    let script = reporting_child();
    let spawn = |_: Role, _: u64| sh(&script);
    let audit = Audit {
        plan: plan(),
        cycles: 1,
        kill_after_ms: (100, 100),
        recovery_kills: 0.0,
        loss_allowed: false,
        data: data.clone(),
        snapshot_max: 0,
        spawn: &spawn,
        open: &open,
        power: None,
    };
    let r = ycsb::crash::run(&audit, &mut |_| {}).expect("a report, not an error");
    let f = r.failure.expect("the reopen's failure");
    assert_eq!(f.kind, Kind::Reopen, "{f}");
    assert!(f.what.contains("refused (test)"), "{f}");
    assert!(f.what.contains("could not be kept aside"), "{f}");
    assert!(r.kept.is_empty(), "{:?}", r.kept);
    assert!(
        data.join("data").exists(),
        "the data directory stays where it was"
    );
}

fn put(e: &dyn Engine, v: &[u8]) {
    e.update(b"crash000000", v).unwrap();
}

#[test]
fn a_clean_cycle_passes() {
    let t = Tmp::new("clean");
    let (w, _) = first_put();
    let r = audit_one(&t.0, &reporting_child(), false, &|e| {
        put(e, &Plan::value(&w).unwrap())
    });
    assert!(r.failure.is_none(), "{:?}", r.failure);
    let c = &r.cycles[0];
    assert_eq!((c.acknowledged, c.lost, c.corrupt), (1, 0, 0));
    assert!(r.kept.is_empty());
}

#[test]
fn a_lost_acknowledged_write_fails_the_audit_and_keeps_the_directory() {
    let t = Tmp::new("lost");
    let r = audit_one(&t.0, &reporting_child(), false, &|_| {});
    let f = r.failure.expect("a lost write must fail the audit");
    assert_eq!(f.kind, Kind::Check);
    assert!(f.what.contains("1 keys lost"), "{f}");
    assert_eq!(r.cycles[0].lost, 1);
    assert_eq!(r.kept.len(), 1);
    assert!(
        r.kept[0].join("after-recovery/sled").is_dir(),
        "{:?}",
        r.kept
    );
    assert!(r.kept[0].join("as-killed/sled").is_dir(), "{:?}", r.kept);
    assert!(
        !t.0.join("crash-sled").exists(),
        "moved aside, not left in place"
    );
    // the same loss under class none is counted, kept, and does not fail
    let t = Tmp::new("lost-none");
    let r = audit_one(&t.0, &reporting_child(), true, &|_| {});
    assert!(r.failure.is_none(), "{:?}", r.failure);
    assert_eq!(r.cycles[0].lost, 1);
    assert_eq!(r.kept.len(), 1);
}

#[test]
fn a_truncated_value_fails_the_audit() {
    let t = Tmp::new("truncated");
    let (w, len) = first_put();
    for cut in [len - 1, 16] {
        let r = audit_one(&t.0, &reporting_child(), true, &|e| {
            put(e, &Plan::value(&w).unwrap()[..cut])
        });
        let f = r.failure.expect("a truncated value must fail the audit");
        assert_eq!(f.kind, Kind::Check);
        assert_eq!((r.cycles[0].lost, r.cycles[0].corrupt), (0, 1), "{f}");
        assert!(
            f.what
                .contains(&format!("{cut} bytes found, {len} written")),
            "{f}"
        );
        let _ = std::fs::remove_dir_all(&t.0);
    }
}

#[test]
fn a_value_never_written_fails_the_audit() {
    let t = Tmp::new("never");
    // the next version of the key, never announced; then a value of the right
    // version and length with one byte changed
    let (w, len) = first_put();
    let never = ycsb::value::make(b"crash000000", version(1, 2), 500);
    let r = audit_one(&t.0, &reporting_child(), true, &|e| put(e, &never));
    let f = r
        .failure
        .expect("a value never written must fail the audit");
    assert_eq!(r.cycles[0].corrupt, 1, "{f}");
    assert!(f.what.contains("never written"), "{f}");
    let _ = std::fs::remove_dir_all(&t.0);
    let mut flipped = Plan::value(&w).unwrap();
    flipped[len / 2] ^= 0x40;
    let r = audit_one(&t.0, &reporting_child(), true, &|e| put(e, &flipped));
    let f = r.failure.expect("wrong bytes must fail the audit");
    assert!(f.what.contains("first difference at byte"), "{f}");
}

#[test]
fn a_child_that_ends_by_itself_fails_the_audit_with_its_message() {
    let t = Tmp::new("exits");
    let cases = [
        ("echo READY; exit 0", "exited by itself with code 0", None),
        (
            "echo READY; echo 'error: write 1:7 of crash000000: No space left on device (os error 28)' >&2; exit 1",
            "exited by itself with code 1",
            Some("No space left on device"),
        ),
        // dies before it opened the engine
        (
            "echo 'error: opening: No space left on device (os error 28)' >&2; exit 1",
            "exited by itself with code 1",
            Some("No space left on device"),
        ),
        // a crash by another signal, and a panic
        ("echo READY; kill -SEGV $$", "ended by signal 11", None),
        (
            "echo READY; echo \"thread 'crash-writer-0' panicked at src/x.rs:1:1\" >&2; exit 101",
            "code 101",
            Some("panicked"),
        ),
    ];
    for (script, how, message) in cases {
        let r = audit_one(&t.0, script, true, &|_| {});
        let f = r
            .failure
            .unwrap_or_else(|| panic!("{script}: the audit passed"));
        assert_eq!(f.kind, Kind::Child, "{script}");
        assert!(f.what.contains(how), "{script}: {f}");
        assert!(r.cycles.is_empty(), "{script}: no cycle is counted");
        if let Some(m) = message {
            assert!(f.stderr.iter().any(|l| l.contains(m)), "{script}: {f}");
            assert!(f.to_string().contains(m), "{f}");
        }
        let _ = std::fs::remove_dir_all(&t.0);
    }
}

#[test]
fn a_report_outside_the_protocol_fails_the_audit() {
    let t = Tmp::new("protocol");
    let (w, len) = first_put();
    for script in [
        // an acknowledgement of a write never announced
        "echo READY; echo 'A 4294967297'; echo 'A 4294967298'; exec sleep 60".to_string(),
        // a write the plan does not make
        format!(
            "echo READY; echo 'P {} crash000000 {}'; exec sleep 60",
            w.version,
            len + 1
        ),
        // something else on the pipe
        "echo READY; echo 'hello'; echo READY; exec sleep 60".to_string(),
    ] {
        let r = audit_one(&t.0, &script, true, &|_| {});
        let f = r
            .failure
            .unwrap_or_else(|| panic!("{script}: the audit passed"));
        assert_eq!(f.kind, Kind::Report, "{script}: {f}");
        let _ = std::fs::remove_dir_all(&t.0);
    }
}

// ---- the `ycsb crash` command ----

fn json(path: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// (acknowledged, lost, corrupt) from the `ycsb crash` table.
fn crash_counts(out: &str) -> (u64, u64, u64) {
    let row = out.lines().nth(1).expect("a result row");
    let f: Vec<&str> = row.split_whitespace().collect();
    (
        f[3].parse().unwrap(),
        f[6].parse().unwrap(),
        f[7].parse().unwrap(),
    )
}

#[test]
fn clean_runs_with_many_writers_and_requests_in_flight_pass() {
    let t = Tmp::new("clean-runs");
    // sled 0.34 can refuse to open after a kill in the middle of its own recovery (a
    // snapshot left half generated; about one cycle in 300 here): the audit reports
    // it, so a test that must pass does not kill sled's recovery.
    for (engine, opts, recovery_kills) in [
        ("kvell", &["-p", "kvell.cache=4M"][..], "1"),
        (
            "wal",
            &["-p", "wal.log_size=1M", "-p", "wal.checkpoint_ms=20"][..],
            "1",
        ),
        ("sled", &["-p", "sled.flush=every"][..], "0"),
    ] {
        let out = t.s(&format!("{engine}.json"));
        let mut args = vec![
            "crash",
            "--engine",
            engine,
            "--cycles",
            "3",
            "--keys",
            "100",
            "--writers",
            "3",
            "--qd",
            "16",
            "--recovery-kills",
            recovery_kills,
            "--kill-after-ms",
            "100,200",
            "--data",
            &t.0.to_str().unwrap(),
            "--out",
            &out,
        ];
        args.extend_from_slice(opts);
        let o = ycsb(&args);
        assert!(o.status.success(), "{engine}: {}", text(&o));
        let j = json(&out);
        assert_eq!(j["cycles"].as_array().unwrap().len(), 3, "{engine}");
        assert_eq!(
            (j["lost"].as_u64(), j["corrupt"].as_u64()),
            (Some(0), Some(0))
        );
        assert!(j["acknowledged"].as_u64().unwrap() > 100, "{engine}: {j}");
        // many writes in flight at the kills, every cycle with a recovery kill
        assert!(
            j["pending_at_kills"].as_u64().unwrap() >= 3,
            "{engine}: {j}"
        );
        assert_eq!(j["audit"]["writers"], 3);
        assert_eq!(j["audit"]["qd"], 16);
        assert!(j["audit"]["native_async"].is_boolean(), "{engine}: {j}");
        for c in j["cycles"].as_array().unwrap() {
            let killed = c["recovery_kill"]["after_s"].is_number();
            assert_eq!(killed, recovery_kills == "1", "{engine}: {c}");
            assert!(c["recovery_s"].as_f64().unwrap() > 0.0);
        }
        assert!(!j["commit"].as_str().unwrap().is_empty());
        assert!(j["command"].as_array().unwrap().iter().any(|a| a == "--qd"));
        assert!(j.get("failure").is_none() && j.get("kept").is_none(), "{j}");
        assert!(!t.0.join(format!("crash-{engine}")).exists(), "{engine}");
    }
}

#[test]
fn crash_audit_passes_when_every_write_is_flushed() {
    let t = Tmp::new("crash-sled");
    let out = t.s("crash.json");
    let o = ycsb(&[
        "crash",
        "--engine",
        "sled",
        "-p",
        "sled.flush=every",
        "--cycles",
        "3",
        "--kill-after-ms",
        "100,300",
        "--data",
        &t.s("data"),
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (acked, lost, corrupt) = crash_counts(&String::from_utf8_lossy(&o.stdout));
    assert!(acked > 0, "{}", text(&o));
    assert_eq!((lost, corrupt), (0, 0));
    let j = json(&out);
    assert_eq!(j["cycles"].as_array().unwrap().len(), 3);
    assert_eq!(j["engine"]["durability"], "process");
    let bad = |args: &[&str], needle: &str| {
        let o = ycsb(args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "expected failure: {}", text(&o));
        assert!(e.contains(needle), "stderr lacks '{needle}': {e}");
        assert!(!e.contains("panicked"), "{e}");
    };
    bad(&["crash", "--engine", "null"], "stateless");
    bad(
        &["crash", "--engine", "sled", "--kill-after-ms", "5,1"],
        "--kill-after-ms",
    );
    bad(
        &["crash", "--engine", "sled", "--value-bytes", "8,100"],
        "--value-bytes",
    );
    bad(
        &["crash", "--engine", "sled", "--writers", "0"],
        "--writers",
    );
    bad(
        &["crash", "--engine", "sled", "--recovery-kills", "2"],
        "--recovery-kills",
    );
}

#[test]
fn a_full_disk_fails_the_audit_with_the_childs_message() {
    let fs = match kvtestkit::testfs::SmallFs::new("ycsb-crash", 24) {
        Ok(fs) => fs,
        Err(why) => return eprintln!("SKIP full-disk crash test: {why}"),
    };
    let data = fs.path().display().to_string();
    let t = Tmp::new("full");
    let out = t.s("crash.json");
    let o = ycsb(&[
        "crash",
        "--engine",
        "sled",
        "-p",
        "sled.flush=every",
        "--cycles",
        "3",
        "--keys",
        "5000",
        "--value-bytes",
        "4000,12288",
        "--writers",
        "2",
        // the kill should come after the child meets the full disk; the audit stops
        // waiting as soon as the child exits, so a long delay costs nothing when the
        // child fails early (here within 2 s, also with both cores busy)
        "--kill-after-ms",
        "60000,60000",
        // no copy of the directory before a reopen: on the full file system the
        // parent's copy met the full disk before the child did (a CI run failed so)
        "--snapshot-max",
        "0",
        "--data",
        &data,
        "--out",
        &out,
    ]);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(all.contains("No space left on device"), "{all}");
    assert!(!all.contains("no acknowledged write lost"), "{all}");
    assert!(!all.contains("panicked"), "{all}");
    let j = json(&out);
    // Say what the file and the output held if the result has no finding. (A CI run
    // of c1a63b8 failed in this test with the command exiting 1 on the full disk; it
    // was read then as a result without a finding, but a run of 83bd6ab showed the
    // cause below: a finding whose killed writer had said nothing.)
    let failure = j["failure"]
        .as_str()
        .unwrap_or_else(|| panic!("no finding in the result file: {j}\n{all}"));
    // Two CI runs had a sled child still running on the full disk at 5 s and at 30
    // s (its reopen then met the full disk): the audit must fail either way, naming
    // the full disk, and never pass. A writer killed before it said anything leaves
    // no `child_stderr` (the field is left out when empty; 83bd6ab's CI run panicked
    // unwrapping it), so only the writer's own exit is asked for its words.
    if failure.contains("exited by itself") {
        let err = j["child_stderr"]
            .as_array()
            .unwrap_or_else(|| panic!("the writer exited with no standard error: {j}"));
        assert!(
            err.iter().any(|l| l.as_str().unwrap().contains("No space")),
            "{j}"
        );
    } else {
        assert!(
            failure.contains("does not reopen") && failure.contains("No space"),
            "{j}"
        );
    }
}

#[cfg(feature = "rocksdb")]
#[test]
fn crash_audit_catches_lost_writes_without_a_wal_and_passes_with_one() {
    let t = Tmp::new("crash-rocks");
    let run = |durability: &str| {
        ycsb(&[
            "crash",
            "--engine",
            "rocksdb",
            "-p",
            &format!("rocksdb.durability={durability}"),
            "-p",
            "rocksdb.cache=16M",
            "--cycles",
            "2",
            "--kill-after-ms",
            "200,400",
            "--data",
            &t.s("data"),
        ])
    };
    // WAL disabled: acknowledged writes sit in the memtable and die with the process
    let o = run("none");
    assert!(
        o.status.success(),
        "class none may lose writes: {}",
        text(&o)
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let (acked, lost, _) = crash_counts(&out);
    assert!(
        acked > 0 && lost > 0,
        "the audit must catch the lost writes: {out}"
    );
    assert!(out.contains("allowed by durability class none"));
    // WAL on (written, not synced): survives SIGKILL
    let o = run("process");
    assert!(o.status.success(), "{}", text(&o));
    let (acked, lost, corrupt) = crash_counts(&String::from_utf8_lossy(&o.stdout));
    assert!(acked > 0);
    assert_eq!((lost, corrupt), (0, 0), "{}", text(&o));
}

/// `ycsb crash --power` on the WAL engine, once per class: the writer recorded, the
/// power-cut images built and checked. Class power (fdatasync) loses nothing in any
/// image; class process (no sync) loses acknowledged writes in the images that keep
/// only what was synced, and the audit counts them (it can see a loss).
#[test]
fn power_cuts_find_what_a_class_does_not_sync_and_nothing_where_it_does() {
    let t = Tmp::new("crash-power");
    for (mode, class, loses) in [
        ("fdatasync", "power", false),
        ("none-process", "process", true),
    ] {
        let out = t.s(&format!("{mode}.json"));
        let o = ycsb(&[
            "crash",
            "--engine",
            "wal",
            "-p",
            &format!("wal.durability={mode}"),
            "-p",
            "wal.log_size=1M",
            "--power",
            "--cycles",
            "2",
            "--keys",
            "40",
            "--writers",
            "2",
            "--qd",
            "8",
            "--kill-after-ms",
            "150,250",
            "--data",
            &t.s(&format!("data-{mode}")),
            "--out",
            &out,
        ]);
        assert!(o.status.success(), "{mode}: {}", text(&o));
        let j = json(&out);
        assert_eq!(j["engine"]["durability"], class);
        let p = &j["power"];
        assert!(p["images"].as_u64().unwrap() >= 6, "{mode}: {p}");
        assert!(p["images_by_state"]["synced"].as_u64().unwrap() > 0, "{p}");
        assert!(p["acknowledged_at_cuts"].as_u64().unwrap() > 0, "{p}");
        assert_eq!(p["corrupt"], 0, "{mode}: {p}");
        assert_eq!(p["loss_allowed"], loses);
        let lost = p["lost"].as_u64().unwrap() + p["refused"].as_u64().unwrap();
        if loses {
            assert!(lost > 0, "no power cut lost an unsynced write: {p}");
        } else {
            assert_eq!(lost, 0, "{p}");
        }
        assert!(
            j["cycles"][0]["power_images"].as_u64().unwrap() > 0,
            "{}",
            j["cycles"][0]
        );
    }
    let o = ycsb(&["crash", "--engine", "kvell", "--power", "--cycles", "1"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("io_uring"),
        "{}",
        text(&o)
    );
}
