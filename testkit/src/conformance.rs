//! One conformance suite that every engine passes, with the engine chosen by the
//! opener function (after TiKV's `engine_traits_tests`). An engine crate runs it with
//! [`conformance_tests!`](crate::conformance_tests):
//!
//! ```ignore
//! fn open(dir: &std::path::Path) -> kvapi::Result<std::sync::Arc<dyn kvapi::Engine>> { ... }
//! kvtestkit::conformance_tests!(open);
//! ```
//!
//! The opener is called on a fresh directory, and again on the same directory after
//! `close` to check that data survives a reopen.

use kvapi::{Engine, Error, Pair, Reply, Request, Result, async_path};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};

/// Opens (or reopens) an engine on a directory.
pub type Opener<'a> = &'a dyn Fn(&Path) -> Result<Arc<dyn Engine>>;

/// A directory removed when dropped. Made under `$KVTESTBED_TMP` if set (engines with
/// O_DIRECT need a real filesystem, not tmpfs), else under the system temp directory.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let base = std::env::var_os("KVTESTBED_TMP")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!(
            "kvtestbed-{label}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A value of `len` bytes that depends on `seed`, so overwrites are told apart.
pub fn value(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn reopen(engine: Arc<dyn Engine>, dir: &Path, open: Opener) -> Arc<dyn Engine> {
    engine.close().expect("close");
    drop(engine);
    open(dir).expect("reopen")
}

fn value_cap(engine: &dyn Engine, want: usize) -> usize {
    want.min(engine.info().limits.max_value)
}

/// Get, insert, update, get of a missing key.
pub fn point_ops(open: Opener) {
    let d = TempDir::new("conf-point");
    let e = open(d.path()).expect("open");
    assert_eq!(e.get(b"absent").unwrap(), None);
    e.insert(b"k1", b"v1").unwrap();
    assert_eq!(e.get(b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
    e.update(b"k1", b"v1-new").unwrap();
    assert_eq!(e.get(b"k1").unwrap().as_deref(), Some(&b"v1-new"[..]));
    // insert and update are both upserts
    e.update(b"k2", b"from-update").unwrap();
    assert_eq!(e.get(b"k2").unwrap().as_deref(), Some(&b"from-update"[..]));
    e.insert(b"k2", b"from-insert").unwrap();
    assert_eq!(e.get(b"k2").unwrap().as_deref(), Some(&b"from-insert"[..]));
    assert_eq!(e.get(b"k3").unwrap(), None);
    assert_eq!(
        e.get(b"k").unwrap(),
        None,
        "a prefix of a key is not that key"
    );
    assert_eq!(
        e.get(b"k1\0").unwrap(),
        None,
        "an extension of a key is not that key"
    );
    e.close().unwrap();
}

/// Overwrites that change the value size up and down (crossing KVell's size classes
/// and its 4 KiB page boundary).
pub fn overwrite_changes_size(open: Opener) {
    let d = TempDir::new("conf-resize");
    let e = open(d.path()).expect("open");
    let sizes = [10usize, 3000, 50, 0, 1000, 5000, 100, 20_000, 1];
    for (i, &n) in sizes.iter().enumerate() {
        let n = value_cap(e.as_ref(), n);
        let v = value(i as u64, n);
        e.update(b"resized", &v).unwrap();
        assert_eq!(
            e.get(b"resized").unwrap(),
            Some(v),
            "after writing {n} bytes"
        );
    }
    // neighbours are untouched
    e.insert(b"neighbour", b"stay").unwrap();
    e.update(b"resized", &value(99, value_cap(e.as_ref(), 4000)))
        .unwrap();
    assert_eq!(e.get(b"neighbour").unwrap().as_deref(), Some(&b"stay"[..]));
    let e = reopen(e, d.path(), open);
    assert_eq!(
        e.get(b"resized").unwrap(),
        Some(value(99, value_cap(e.as_ref(), 4000)))
    );
    e.close().unwrap();
}

/// Delete then read, delete of a missing key, re-insert after delete.
pub fn delete_then_read(open: Opener) {
    let d = TempDir::new("conf-delete");
    let e = open(d.path()).expect("open");
    for i in 0..50u32 {
        e.insert(format!("key{i:03}").as_bytes(), &value(i as u64, 100))
            .unwrap();
    }
    for i in (0..50u32).step_by(2) {
        e.delete(format!("key{i:03}").as_bytes()).unwrap();
    }
    e.delete(b"never-written").unwrap();
    for i in 0..50u32 {
        let got = e.get(format!("key{i:03}").as_bytes()).unwrap();
        if i % 2 == 0 {
            assert_eq!(got, None, "key{i:03} was deleted");
        } else {
            assert_eq!(got, Some(value(i as u64, 100)));
        }
    }
    let scanned = e.scan(b"key", 100).unwrap();
    assert_eq!(scanned.len(), 25, "deleted keys do not appear in scans");
    e.insert(b"key000", b"back").unwrap();
    assert_eq!(e.get(b"key000").unwrap().as_deref(), Some(&b"back"[..]));
    let e = reopen(e, d.path(), open);
    assert_eq!(e.get(b"key002").unwrap(), None, "a delete survives reopen");
    assert_eq!(e.get(b"key000").unwrap().as_deref(), Some(&b"back"[..]));
    assert_eq!(e.get(b"key001").unwrap(), Some(value(1, 100)));
    e.close().unwrap();
}

fn check_scan(e: &dyn Engine, model: &BTreeMap<Vec<u8>, Vec<u8>>, start: &[u8], n: usize) {
    let want: Vec<Pair> = model
        .range(start.to_vec()..)
        .take(n)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let got = e.scan(start, n).unwrap();
    assert_eq!(
        got.len(),
        want.len(),
        "scan({:?}, {n}) returned the wrong count",
        String::from_utf8_lossy(start)
    );
    assert_eq!(got, want, "scan({:?}, {n})", String::from_utf8_lossy(start));
}

/// Scans return keys >= start in byte order, with the right count, across reopen.
pub fn scans_in_order(open: Opener) {
    let d = TempDir::new("conf-scan");
    let e = open(d.path()).expect("open");
    let mut model = BTreeMap::new();
    // insert in a scrambled order with varied sizes
    for i in 0..300u64 {
        let k = (i * 7919) % 300;
        let key = format!("user{k:05}").into_bytes();
        let v = value(k, 10 + (k as usize * 37) % 1500);
        e.insert(&key, &v).unwrap();
        model.insert(key, v);
    }
    for (start, n) in [
        (&b"user00000"[..], 10),
        (b"user00150", 1),
        (b"user00150", 99),
        (b"user00299", 5),
        (b"user001505", 20), // between two keys
        (b"a", 7),           // before every key
        (b"user", 300),
        (b"user", 1000), // more than there are
        (b"z", 10),      // after every key
        (b"user00010", 0),
    ] {
        check_scan(e.as_ref(), &model, start, n);
    }
    let e = reopen(e, d.path(), open);
    check_scan(e.as_ref(), &model, b"user00100", 50);
    check_scan(e.as_ref(), &model, b"", 300);
    e.close().unwrap();
}

/// Missing keys, the empty key (supported, or refused with InvalidArgument), binary
/// keys and keys sharing long prefixes (which killed the authors' KVell).
pub fn empty_missing_and_binary_keys(open: Opener) {
    let d = TempDir::new("conf-keys");
    let e = open(d.path()).expect("open");
    let limits = e.info().limits;
    match e.insert(b"", b"empty-key") {
        Ok(()) => {
            assert!(
                limits.empty_key,
                "engine accepted the empty key it says it refuses"
            );
            assert_eq!(e.get(b"").unwrap().as_deref(), Some(&b"empty-key"[..]));
        }
        Err(err) => {
            assert!(!limits.empty_key, "engine refused the empty key: {err}");
            assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        }
    }
    e.insert(b"empty-value", b"").unwrap();
    assert_eq!(e.get(b"empty-value").unwrap().as_deref(), Some(&b""[..]));
    let binary: Vec<Vec<u8>> = vec![
        vec![0, 0, 0],
        vec![0xff, 0xfe, 0x00, 0x80],
        vec![0xc3, 0x28], // not UTF-8
        b"shared-prefix-0000000001".to_vec(),
        b"shared-prefix-0000000002".to_vec(),
        b"shared-prefix-00000000".to_vec(),
        b"shared-p".to_vec(),
        b"shared-pr".to_vec(),
    ];
    for (i, k) in binary.iter().enumerate() {
        e.insert(k, &value(i as u64, 64)).unwrap();
    }
    for (i, k) in binary.iter().enumerate() {
        assert_eq!(e.get(k).unwrap(), Some(value(i as u64, 64)), "key {k:?}");
    }
    let scanned = e.scan(b"shared-p", 5).unwrap();
    let keys: Vec<&[u8]> = scanned.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(
        keys,
        vec![
            &b"shared-p"[..],
            b"shared-pr",
            b"shared-prefix-00000000",
            b"shared-prefix-0000000001",
            b"shared-prefix-0000000002",
        ]
    );
    assert_eq!(e.get(b"shared-prefix-0000000003").unwrap(), None);
    let e = reopen(e, d.path(), open);
    for (i, k) in binary.iter().enumerate() {
        assert_eq!(
            e.get(k).unwrap(),
            Some(value(i as u64, 64)),
            "key {k:?} after reopen"
        );
    }
    e.close().unwrap();
}

/// Keys and values beyond the engine's limits are refused and write nothing.
pub fn oversized_input_refused(open: Opener) {
    let d = TempDir::new("conf-limits");
    let e = open(d.path()).expect("open");
    let limits = e.info().limits;
    if limits.max_key < 16 * 1024 * 1024 {
        let big_key = vec![b'k'; limits.max_key + 1];
        let err = e.insert(&big_key, b"v").unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert!(matches!(
            e.get(&big_key),
            Err(Error::InvalidArgument(_)) | Ok(None)
        ));
    }
    if limits.max_value < 256 * 1024 * 1024 {
        let big_value = vec![7u8; limits.max_value + 1];
        let err = e.insert(b"too-big", &big_value).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert_eq!(
            e.get(b"too-big").unwrap(),
            None,
            "a refused write wrote nothing"
        );
        e.insert(b"too-big", b"small").unwrap();
        let err = e.update(b"too-big", &big_value).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert_eq!(e.get(b"too-big").unwrap().as_deref(), Some(&b"small"[..]));
    }
    e.close().unwrap();
}

/// Data survives close and reopen; a second handle on an open directory is refused;
/// calls after close fail instead of doing something.
pub fn reopen_keeps_data(open: Opener) {
    let d = TempDir::new("conf-reopen");
    let e = open(d.path()).expect("open");
    assert!(
        matches!(open(d.path()), Err(Error::Locked { .. })),
        "a second open of the same directory must be refused"
    );
    let mut model = BTreeMap::new();
    for i in 0..2000u64 {
        let key = format!("r{:08}", (i * 104_729) % 2000).into_bytes();
        let v = value(i, 1 + (i as usize * 13) % 1200);
        e.insert(&key, &v).unwrap();
        model.insert(key, v);
    }
    for i in (0..2000u64).step_by(3) {
        let key = format!("r{i:08}").into_bytes();
        let v = value(i + 10_000, 200);
        e.update(&key, &v).unwrap();
        model.insert(key, v);
    }
    e.close().unwrap();
    assert!(
        e.insert(b"after-close", b"x").is_err(),
        "writes after close fail"
    );
    drop(e);
    for round in 0..2 {
        let e = open(d.path()).expect("reopen");
        for (k, v) in &model {
            assert_eq!(e.get(k).unwrap().as_ref(), Some(v), "round {round}");
        }
        check_scan(e.as_ref(), &model, b"r", 2000);
        e.close().unwrap();
    }
}

/// The asynchronous path (native or adapted) with many requests in flight.
pub fn async_path_works(open: Opener) {
    let d = TempDir::new("conf-async");
    let e = open(d.path()).expect("open");
    let (a, _native) = async_path(e.clone(), 16).unwrap();
    let (tx, rx) = mpsc::channel();
    let n = 500usize;
    for i in 0..n {
        let tx = tx.clone();
        let req = Request::Insert {
            key: format!("a{i:05}").into_bytes(),
            value: value(i as u64, 300),
        };
        a.submit(req, Box::new(move |r| tx.send((i, r)).unwrap()));
    }
    for _ in 0..n {
        let (i, r) = rx.recv().unwrap();
        assert!(matches!(r, Ok(Reply::Done)), "insert {i}: {r:?}");
    }
    for i in 0..n {
        let tx = tx.clone();
        let req = Request::Get {
            key: format!("a{i:05}").into_bytes(),
        };
        a.submit(req, Box::new(move |r| tx.send((i, r)).unwrap()));
    }
    for _ in 0..n {
        let (i, r) = rx.recv().unwrap();
        assert_eq!(r.unwrap(), Reply::Value(Some(value(i as u64, 300))));
    }
    let tx2 = tx.clone();
    a.submit(
        Request::Scan {
            start: b"a00100".to_vec(),
            count: 10,
        },
        Box::new(move |r| tx2.send((0, r)).unwrap()),
    );
    match rx.recv().unwrap().1.unwrap() {
        Reply::Pairs(p) => {
            assert_eq!(p.len(), 10);
            assert_eq!(p[0].0, b"a00100");
            assert_eq!(p[9].0, b"a00109");
        }
        other => panic!("scan answered {other:?}"),
    }
    a.submit(
        Request::Delete {
            key: b"a00000".to_vec(),
        },
        Box::new(move |r| tx.send((0, r)).unwrap()),
    );
    assert!(matches!(rx.recv().unwrap().1, Ok(Reply::Done)));
    drop(a);
    assert_eq!(e.get(b"a00000").unwrap(), None);
    e.close().unwrap();
}

/// Several client threads writing and reading at once.
pub fn concurrent_clients(open: Opener) {
    let d = TempDir::new("conf-threads");
    let e = open(d.path()).expect("open");
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let e = e.clone();
            s.spawn(move || {
                for i in 0..300u64 {
                    let key = format!("t{t}-{i:04}").into_bytes();
                    e.insert(&key, &value(t * 1000 + i, 100 + (i as usize % 900)))
                        .unwrap();
                    if i % 3 == 0 {
                        e.update(&key, &value(t * 1000 + i + 500, 50)).unwrap();
                    }
                }
            });
        }
    });
    for t in 0..4u64 {
        for i in 0..300u64 {
            let key = format!("t{t}-{i:04}").into_bytes();
            let want = if i % 3 == 0 {
                value(t * 1000 + i + 500, 50)
            } else {
                value(t * 1000 + i, 100 + (i as usize % 900))
            };
            assert_eq!(e.get(&key).unwrap(), Some(want));
        }
    }
    assert_eq!(e.scan(b"t", 2000).unwrap().len(), 1200);
    e.close().unwrap();
}

/// Counters: unsupported ones are `None`, supported ones move when data moves.
pub fn counters_are_honest(open: Opener) {
    let d = TempDir::new("conf-counters");
    let e = open(d.path()).expect("open");
    for i in 0..200u64 {
        e.insert(format!("c{i:04}").as_bytes(), &value(i, 1000))
            .unwrap();
    }
    let c = e.counters();
    if let Some(items) = c.items {
        assert_eq!(items, 200, "items counter");
    }
    let info = e.info();
    assert!(!info.engine.is_empty());
    assert!(!info.durability_setting.is_empty());
    e.close().unwrap();
}

/// A directory that holds another engine's data, or files of no known engine, is
/// refused with `WrongEngine`, and nothing in it changes.
pub fn other_engines_directory_refused(open: Opener) {
    let d = TempDir::new("conf-other");
    std::fs::create_dir_all(d.path()).unwrap();
    std::fs::write(d.path().join(kvapi::MARKER_FILE), "some-other-engine\n").unwrap();
    std::fs::write(d.path().join("data.bin"), b"not yours").unwrap();
    let err = open(d.path())
        .err()
        .expect("opened another engine's directory");
    assert!(matches!(err, Error::WrongEngine { .. }), "{err}");
    assert!(err.to_string().contains("some-other-engine"), "{err}");
    assert_eq!(
        std::fs::read(d.path().join("data.bin")).unwrap(),
        b"not yours"
    );
    let d = TempDir::new("conf-foreign");
    std::fs::create_dir_all(d.path()).unwrap();
    std::fs::write(d.path().join("CURRENT"), b"MANIFEST-000001\n").unwrap();
    let err = open(d.path())
        .err()
        .expect("opened a directory of unknown files");
    assert!(matches!(err, Error::WrongEngine { .. }), "{err}");
}

/// A path that is a regular file (random bytes) is refused with an error naming it,
/// and the file is left as it was.
pub fn regular_file_refused(open: Opener) {
    let d = TempDir::new("conf-file");
    std::fs::create_dir_all(d.path()).unwrap();
    let f = d.path().join("not-a-directory");
    let bytes = value(42, 10_000);
    std::fs::write(&f, &bytes).unwrap();
    let err = open(&f)
        .err()
        .expect("opened a regular file as a data directory");
    assert!(
        matches!(
            err,
            Error::Io { .. } | Error::InvalidArgument(_) | Error::WrongEngine { .. }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("not-a-directory"), "{err}");
    assert_eq!(std::fs::read(&f).unwrap(), bytes, "the file was changed");
}

/// Environment variable that turns [`second_process_child`] on.
pub const CHILD_DIR_ENV: &str = "KVTESTBED_CONFORMANCE_CHILD_DIR";

/// A second process opening an open data directory is refused with `Locked`: this
/// process opens it, then runs its own test binary, filtered to the ignored
/// `conformance_second_process_child` test, which tries to open it too.
pub fn second_process_refused(open: Opener, module: &str) {
    let d = TempDir::new("conf-process");
    let e = open(d.path()).expect("open");
    e.insert(b"k", b"v").unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &child_test_name(module),
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_DIR_ENV, d.path())
        .output()
        .expect("running the child test process");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("CHILD-OPEN: locked"),
        "the second process was not refused with Locked: {text}"
    );
    assert_eq!(e.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    e.close().unwrap();
}

/// The test name of the child in the test binary, from the `module_path!()` of the
/// module that expanded [`conformance_tests!`](crate::conformance_tests).
fn child_test_name(module: &str) -> String {
    match module.split_once("::") {
        Some((_crate, rest)) => format!("{rest}::conformance_second_process_child"),
        None => "conformance_second_process_child".to_string(),
    }
}

/// The child side of [`second_process_refused`]; does nothing unless
/// [`CHILD_DIR_ENV`] is set.
pub fn second_process_child(open: Opener) {
    let Some(dir) = std::env::var_os(CHILD_DIR_ENV) else {
        return;
    };
    match open(Path::new(&dir)) {
        Err(Error::Locked { .. }) => println!("CHILD-OPEN: locked"),
        Err(e) => println!("CHILD-OPEN: other error: {e}"),
        Ok(_) => println!("CHILD-OPEN: opened"),
    }
}

/// Expands to one `#[test]` per conformance case for the given opener function.
#[macro_export]
macro_rules! conformance_tests {
    ($open:expr) => {
        #[test]
        fn conformance_point_ops() {
            $crate::conformance::point_ops(&$open)
        }
        #[test]
        fn conformance_overwrite_changes_size() {
            $crate::conformance::overwrite_changes_size(&$open)
        }
        #[test]
        fn conformance_delete_then_read() {
            $crate::conformance::delete_then_read(&$open)
        }
        #[test]
        fn conformance_scans_in_order() {
            $crate::conformance::scans_in_order(&$open)
        }
        #[test]
        fn conformance_empty_missing_and_binary_keys() {
            $crate::conformance::empty_missing_and_binary_keys(&$open)
        }
        #[test]
        fn conformance_oversized_input_refused() {
            $crate::conformance::oversized_input_refused(&$open)
        }
        #[test]
        fn conformance_reopen_keeps_data() {
            $crate::conformance::reopen_keeps_data(&$open)
        }
        #[test]
        fn conformance_async_path_works() {
            $crate::conformance::async_path_works(&$open)
        }
        #[test]
        fn conformance_concurrent_clients() {
            $crate::conformance::concurrent_clients(&$open)
        }
        #[test]
        fn conformance_counters_are_honest() {
            $crate::conformance::counters_are_honest(&$open)
        }
        #[test]
        fn conformance_other_engines_directory_refused() {
            $crate::conformance::other_engines_directory_refused(&$open)
        }
        #[test]
        fn conformance_regular_file_refused() {
            $crate::conformance::regular_file_refused(&$open)
        }
        #[test]
        fn conformance_second_process_refused() {
            $crate::conformance::second_process_refused(&$open, module_path!())
        }
        #[test]
        #[ignore = "child process of conformance_second_process_refused"]
        fn conformance_second_process_child() {
            $crate::conformance::second_process_child(&$open)
        }
    };
}
