//! (a) The recording stands for the run: replayed in full it gives, byte for byte,
//! the directory the child left; a change made past the layer is caught.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

use common::{Run, file, image, record, record_env, record_verified};
use powercut::image::read_tree;
use powercut::{Durable, Error, State};

const OPS: &[&str] = &[
    "mkdir",
    "sub",
    "fsync",
    ".",
    "write",
    "a",
    "0",
    "hello",
    "fill",
    "a",
    "3000",
    "z",
    "1500",
    "write",
    "a",
    "2",
    "LL",
    "append",
    "sub/log",
    "one;",
    "append",
    "sub/log",
    "two;",
    "fsync",
    "sub/log",
    "write",
    "b",
    "0",
    "temporary",
    "rename",
    "b",
    "sub/c",
    "write",
    "old",
    "0",
    "NEW",
    "unlink",
    "gone",
    "create",
    "fresh",
    "writev",
    "fresh",
    "gath",
    "ered",
    "create",
    "old2",
    "write",
    "old2",
    "0",
    "again",
    "truncate",
    "old2",
    "3",
    "truncate",
    "a",
    "4000",
    "ack",
    "written",
];

fn base() -> Vec<(&'static str, &'static [u8])> {
    vec![
        ("old", b"old bytes"),
        ("gone", b"to be removed"),
        ("old2", b"truncated on open"),
    ]
}

#[test]
fn the_recording_replays_byte_for_byte_to_the_directory_left() {
    let run = record_verified("replays", &base(), OPS);
    assert_eq!(run.printed, ["written"]);
    let left = read_tree(&run.root).unwrap();
    // what the child did, as the test knows it
    let mut a = b"heLLo".to_vec();
    a.resize(3000, 0);
    a.extend(std::iter::repeat_n(b'z', 1000));
    assert_eq!(file(&left, "a"), &a[..]);
    assert_eq!(file(&left, "sub/log"), b"one;two;");
    assert_eq!(file(&left, "sub/c"), b"temporary");
    assert_eq!(file(&left, "old"), b"NEW bytes");
    assert_eq!(file(&left, "fresh"), b"gathered");
    assert_eq!(file(&left, "old2"), b"aga");
    assert!(!left.contains_key("gone") && !left.contains_key("b"));
    // the state `all` at the end is the replay: the same tree
    let h = &run.history;
    let end = h.recording.records.len();
    let built = image(h, &State::all(&Durable::at(h, end)), &run.dir.join("image"));
    assert_eq!(built, left);
    // and the base was the start
    let start = read_tree(&run.recorder.base()).unwrap();
    assert_eq!(file(&start, "old"), b"old bytes");
    assert_eq!(h.stdio_files(), Vec::<String>::new());
    // every call was seen, through the calls the standard library makes
    let c = h.counts();
    for (kind, n) in [
        ("mkdir", 1),
        ("fsync", 2),
        ("rename", 1),
        ("unlink", 1),
        ("write", 9),
        ("truncate", 3),
    ] {
        assert_eq!(c.get(kind), Some(&n), "{kind} records: {c:?}");
    }
}

fn incomplete(mut run: Run) -> Vec<String> {
    match run.history.verify(&run.root) {
        Err(Error::Incomplete(d)) => d,
        other => panic!("a change past the layer went unseen: {other:?}"),
    }
}

#[test]
fn a_write_past_the_layer_fails_the_check() {
    // a process the child starts is not recorded: its append is past the layer
    let ops = [OPS, &["bypass", "sub/log", "three;"]].concat();
    let d = incomplete(record("bypass", &base(), &ops));
    assert!(
        d.iter().any(|s| s.starts_with("sub/log:")),
        "the difference names the file: {d:?}"
    );
    // a new file made past the layer
    let ops = [OPS, &["bypass", "stray", "x"]].concat();
    let d = incomplete(record("bypass-new", &base(), &ops));
    assert!(
        d.iter()
            .any(|s| s.starts_with("stray: on disk, never recorded")),
        "{d:?}"
    );
}

#[test]
fn a_change_after_the_freeze_fails_the_check() {
    let run = record("after-freeze", &base(), OPS);
    std::fs::write(run.root.join("a"), b"changed behind the recording").unwrap();
    let d = incomplete(run);
    assert!(d.iter().any(|s| s.starts_with("a:")), "{d:?}");
}

#[test]
fn a_recording_without_its_freeze_is_not_whole() {
    let mut run = record("unfrozen", &base(), OPS);
    run.history.recording.frozen = false;
    assert!(matches!(
        run.history.verify(&run.root),
        Err(Error::Incomplete(_))
    ));
}

#[test]
fn a_write_racing_a_truncation_is_recorded_in_the_order_it_took_effect() {
    // A thread truncates `f` to 4096 bytes; once the truncation has taken effect
    // the main thread writes past it, at 6000. The hook holds the truncation 300 ms
    // between its call and its record. Were the write recorded in that window, the
    // replay would cut it off (sled truncates its file on a thread of its own while
    // its writers go on: a 2,000-cycle power audit of sled failed so). The order lock
    // keeps the write waiting until the truncation is recorded.
    let ops = ["race", "f", "4096", "6000", "late", "ack", "raced"];
    let base: &[(&str, &[u8])] = &[("f", &[b'o'; 8000])];
    let mut run = record_env(
        "race",
        base,
        &ops,
        &[("POWERCUT_TEST_SIZE_DELAY_US", "300000")],
    );
    run.history.verify(&run.root).unwrap();
    let left = read_tree(&run.root).unwrap();
    let mut want = vec![b'o'; 4096];
    want.resize(6000, 0);
    want.extend_from_slice(b"late");
    assert_eq!(file(&left, "f"), &want[..]);
}

#[test]
fn a_copy_into_the_directory_is_refused() {
    // copy_file_range moves bytes the layer never sees: the run cannot be modelled
    let ops = [
        "write", "src", "0", "bytes", "copy", "src", "dst", "ack", "copied",
    ];
    let dir = common::scratch("copy");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let rec = powercut::Recorder::prepare(&root, &dir.join("work")).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_powercut-child"));
    cmd.arg(&root).args(ops).stdout(std::process::Stdio::null());
    rec.apply(&mut cmd);
    // the child runs to its end and waits; its input closed at once, it exits
    let status = cmd.stdin(std::process::Stdio::null()).status().unwrap();
    assert!(status.success());
    let r = powercut::History::new(rec.recording().unwrap(), &rec.base());
    match r {
        Err(Error::Unsupported(s)) => assert!(s.contains("copy_file_range"), "{s}"),
        other => panic!("a copy into the directory was accepted: {other:?}"),
    }
}
