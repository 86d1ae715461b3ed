//! The fault matrix (issue 9): corrupted files, failed I/O, a full disk.
//!
//! - Corruption: a small database (keys of every size class and large items) on the
//!   simulated disk; for the pages of every slab (and the clean-shutdown records):
//!   zero the page, flip random bits, truncate at page boundaries and unaligned
//!   offsets, append garbage. After each, opening gives every key its value, or a
//!   `Corruption` error naming the file; never a panic, a hang, a wrong value, or
//!   (with checksums) a key lost without an error. The fast form samples pages; set
//!   `KVTESTBED_EXHAUSTIVE=1` (or run the ignored test) for every page.
//! - I/O errors: the Nth I/O of a short workload fails, for every N.
//! - Full disk: a small ext4 image mounted on a loop device (root only).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test (helpers outside #[test] too)"
)]
mod common;

use common::{Rng, value};
use kvapi::{Engine, Error};
use kvell::{Config, IoMode, Kvell, Mode, SimDisk};
use kvtestkit::conformance::TempDir;
use kvtestkit::faults::{
    Mutation, Outcome, SeededRng, Tally, count_panics, exhaustive, panics, write_result,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
const PAGE: usize = 4096;

/// The bits a `Mutation::Flip` flips come from the tests' own generator.
impl SeededRng for Rng {
    fn seeded(seed: u64) -> Rng {
        Rng::new(seed)
    }
    fn below(&mut self, n: u64) -> u64 {
        Rng::below(self, n)
    }
}

fn config(dir: &Path, disk: &SimDisk, checksum: bool) -> Config {
    let mut c = Config::new(dir);
    c.io = IoMode::Sim(disk.clone());
    c.workers = 1;
    c.cache_bytes = 64 << 10;
    c.freelist = 4;
    c.checksum = checksum;
    c
}

/// A few hundred keys of sizes crossing every small class and the large classes,
/// with updates that move items between classes and deletes.
fn fill(e: &dyn Engine, seed: u64) -> (Model, Vec<Vec<u8>>) {
    let mut rng = Rng::new(seed);
    let mut model = Model::new();
    for i in 0..300u64 {
        let key = format!("key{i:04}-{}", "x".repeat(rng.below(40) as usize)).into_bytes();
        let v = value(i, rng.value_len());
        e.insert(&key, &v).unwrap();
        model.insert(key, v);
    }
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    for (j, k) in keys.iter().enumerate().step_by(7) {
        let v = value(1000 + j as u64, rng.value_len());
        e.update(k, &v).unwrap();
        model.insert(k.clone(), v);
    }
    let mut deleted = Vec::new();
    for k in keys.iter().skip(3).step_by(11) {
        e.delete(k).unwrap();
        model.remove(k);
        deleted.push(k.clone());
    }
    (model, deleted)
}

/// Opens the image and checks every key; panics on a wrong value, a hang, or an
/// error that is not a `Corruption` naming one of the slab files.
fn judge(
    dir: &Path,
    disk: &SimDisk,
    checksum: bool,
    model: &Model,
    deleted: &[Vec<u8>],
) -> Result<Outcome, String> {
    let (dir2, disk2, model2, deleted2) = (
        dir.to_path_buf(),
        disk.clone(),
        model.clone(),
        deleted.to_vec(),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = check_open(&dir2, &disk2, checksum, &model2, &deleted2);
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(r) => r,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("open or reads hung"),
        Err(_) => panic!("the checking thread panicked"),
    }
}

fn check_corruption(dir: &Path, disk: &SimDisk, err: &Error) -> Result<(), String> {
    match err {
        Error::Corruption { file, offset, .. } => {
            let known = disk.paths();
            if !known.contains(file) || !file.starts_with(dir) {
                return Err(format!("corruption names an unknown file: {err}"));
            }
            let mut len = 0;
            disk.edit(file, |b| len = b.len());
            if *offset > len as u64 {
                return Err(format!("offset beyond the file ({len} bytes): {err}"));
            }
            Ok(())
        }
        other => Err(format!("expected a Corruption error, got {other:?}")),
    }
}

fn check_open(
    dir: &Path,
    disk: &SimDisk,
    checksum: bool,
    model: &Model,
    deleted: &[Vec<u8>],
) -> Result<Outcome, String> {
    let e = match Kvell::open(config(dir, disk, checksum)) {
        Ok(e) => e,
        Err(err) => {
            check_corruption(dir, disk, &err)?;
            return Ok(Outcome::Refused);
        }
    };
    let mut lost = 0;
    let mut read_errors = 0;
    for (k, v) in model {
        match e.get(k) {
            Ok(Some(got)) if &got == v => {}
            Ok(Some(got)) => {
                return Err(format!(
                    "wrong value for {:?}: {} bytes, want {}",
                    String::from_utf8_lossy(k),
                    got.len(),
                    v.len()
                ));
            }
            Ok(None) => lost += 1,
            Err(err) => {
                check_corruption(dir, disk, &err)?;
                read_errors += 1;
            }
        }
    }
    for k in deleted {
        if let Ok(Some(_)) = e.get(k) {
            return Err(format!(
                "deleted key {:?} came back",
                String::from_utf8_lossy(k)
            ));
        }
    }
    match e.scan(b"", usize::MAX) {
        Ok(pairs) => {
            for (k, v) in &pairs {
                if model.get(k) != Some(v) {
                    return Err(format!(
                        "scan returned a wrong pair for {:?}",
                        String::from_utf8_lossy(k)
                    ));
                }
            }
        }
        Err(err) => {
            check_corruption(dir, disk, &err)?;
            read_errors += 1;
        }
    }
    let _ = e.close();
    Ok(if read_errors > 0 {
        Outcome::ReadErrors
    } else if lost > 0 {
        Outcome::Lost(lost)
    } else {
        Outcome::Intact
    })
}

/// The mutations tried on a file of `len` bytes whose last non-zero page is `used`.
fn mutations(len: usize, used: usize, all: bool, seed: u64) -> Vec<Mutation> {
    let pages = len / PAGE;
    let mut rng = Rng::new(seed);
    // Pages: every page (exhaustive), else every used page up to 24, then a sample,
    // and two pages beyond the used ones.
    let mut chosen: Vec<usize> = if all || used < 6 {
        (0..pages.min(if all { pages } else { used + 1 })).collect()
    } else {
        let mut v: Vec<usize> = (0..4)
            .map(|_| rng.below(used as u64 + 1) as usize)
            .collect();
        v.push(0);
        v.push(used);
        v
    };
    if !all {
        for _ in 0..1 {
            if pages > used + 1 {
                chosen.push(used + 1 + rng.below((pages - used - 1) as u64) as usize);
            }
        }
    }
    chosen.sort_unstable();
    chosen.dedup();
    let mut out = Vec::new();
    for &p in &chosen {
        out.push(Mutation::Zero(p));
        out.push(Mutation::Truncate(p * PAGE));
        out.push(Mutation::Truncate(
            p * PAGE + 1 + rng.below(PAGE as u64 - 1) as usize,
        ));
    }
    let flips = if all { 2 * pages } else { 8 };
    for s in 0..flips {
        let page = if all {
            s % pages
        } else {
            rng.below(used as u64 + 1) as usize
        };
        out.push(Mutation::Flip {
            seed: seed ^ ((s as u64 + 1) * 0x9E37),
            page,
            bits: 1 + (s % 3) as u32,
        });
    }
    let mut g = Rng::new(seed ^ 0xdead);
    out.push(Mutation::Append(
        (0..PAGE).map(|_| g.next() as u8).collect(),
    ));
    out.push(Mutation::Append((0..100).map(|_| g.next() as u8).collect()));
    out.push(Mutation::Append(vec![0xff; PAGE]));
    out.push(Mutation::Append(vec![0; PAGE]));
    out
}

fn snapshot(disk: &SimDisk) -> Vec<(PathBuf, Vec<u8>)> {
    disk.paths()
        .into_iter()
        .map(|p| {
            let mut data = Vec::new();
            disk.edit(&p, |b| data = b.clone());
            (p, data)
        })
        .collect()
}

fn restore(disk: &SimDisk, snap: &[(PathBuf, Vec<u8>)]) {
    for (p, data) in snap {
        disk.edit(p, |b| *b = data.clone());
    }
}

/// Runs the matrix; returns the tally per mutation class.
fn corruption_matrix(checksum: bool, all: bool) -> BTreeMap<&'static str, Tally> {
    count_panics();
    let d = TempDir::new("kvell-corrupt-matrix");
    let disk = SimDisk::new();
    let e = Kvell::open(config(d.path(), &disk, checksum)).unwrap();
    let (model, deleted) = fill(e.as_ref(), 9);
    e.close().unwrap();
    drop(e);
    let snap = snapshot(&disk);
    assert!(matches!(
        judge(d.path(), &disk, checksum, &model, &deleted),
        Ok(Outcome::Intact)
    ));
    let mut tally: BTreeMap<&'static str, Tally> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (fi, (path, data)) in snap.iter().enumerate() {
        if data.is_empty() {
            continue;
        }
        let used = data
            .chunks(PAGE)
            .rposition(|c| c.iter().any(|&x| x != 0))
            .unwrap_or(0);
        for m in mutations(data.len(), used, all, 77 + fi as u64) {
            disk.edit(path, |b| m.apply::<Rng>(b, PAGE));
            let t = tally.entry(m.class()).or_default();
            t.cases += 1;
            let outcome = judge(d.path(), &disk, checksum, &model, &deleted)
                .unwrap_or_else(|e| panic!("{} {m:?}: {e}", path.display()));
            t.add(&outcome);
            if let Outcome::Lost(n) = outcome
                && checksum
            {
                wrong.push(format!("{} {m:?}: {n} keys lost", path.display()));
            }
            disk.edit(path, |b| *b = data.clone());
        }
    }
    assert_eq!(panics(), 0, "a thread panicked");
    eprintln!("kvell corruption matrix (checksum={checksum}, exhaustive={all}): {tally:#?}");
    write_result(
        "kvell",
        &format!("kvell-corruption-checksum-{checksum}"),
        &tally,
    );
    if checksum {
        // with checksums and the clean-shutdown record, nothing is lost silently
        assert!(wrong.is_empty(), "keys lost without an error: {wrong:#?}");
    }
    tally
}

#[test]
fn corruption_matrix_with_checksums() {
    let t = corruption_matrix(true, exhaustive());
    let flips = t["flip bits"];
    assert!(flips.cases >= 12, "{flips:?}");
    // every flip is detected or harmless (it hit padding or an unused page)
    assert!(flips.refused + flips.read_errors > 0, "{flips:?}");
    let total: usize = t.values().map(|t| t.cases).sum();
    assert!(total >= 100, "only {total} cases");
}

#[test]
#[ignore = "exhaustive: every page of every file (minutes); scripts/durability-audit runs it"]
fn corruption_matrix_exhaustive() {
    corruption_matrix(true, true);
}

/// Without checksums the matrix still never panics or hangs, but bit flips in keys
/// and values go unnoticed: the reason checksums are on by default.
#[test]
fn corruption_matrix_without_checksums_never_panics() {
    count_panics();
    let d = TempDir::new("kvell-nocsum");
    let disk = SimDisk::new();
    let e = Kvell::open(config(d.path(), &disk, false)).unwrap();
    let (model, deleted) = fill(e.as_ref(), 3);
    e.close().unwrap();
    drop(e);
    let snap = snapshot(&disk);
    let (mut cases, mut silent) = (0, 0);
    for (fi, (path, data)) in snap.iter().enumerate() {
        let used = data
            .chunks(PAGE)
            .rposition(|c| c.iter().any(|&x| x != 0))
            .unwrap_or(0);
        if data.is_empty() {
            continue;
        }
        for s in 0..6u64 {
            let m = Mutation::Flip {
                seed: s + fi as u64 * 100,
                page: (s as usize * 7) % (used + 1),
                bits: 1,
            };
            disk.edit(path, |b| m.apply::<Rng>(b, PAGE));
            cases += 1;
            // a wrong value is possible here: only count it
            if judge(d.path(), &disk, false, &model, &deleted).is_err() {
                silent += 1;
            }
            restore(&disk, &snap);
        }
    }
    eprintln!("kvell checksum=false: {cases} single-bit flips, {silent} gave a wrong answer");
    assert!(cases > 20);
}

/// A value corrupted on disk after the engine opened is an error at read time, not
/// data (the page is not in the cache).
#[test]
fn a_failed_checksum_at_read_time_is_an_error() {
    let d = TempDir::new("kvell-readcsum");
    let disk = SimDisk::new();
    let c = config(d.path(), &disk, true);
    let e = Kvell::open(c.clone()).unwrap();
    e.insert(b"small", &value(1, 200)).unwrap();
    e.insert(b"large", &value(2, 9000)).unwrap();
    e.close().unwrap();
    drop(e);
    // reopened: recovery checked every item, and the page cache is empty
    let e = Kvell::open(c).unwrap();
    for p in disk.paths() {
        disk.edit(&p, |b| {
            // flip the last byte of the value in every used page
            for page in b.chunks_mut(PAGE) {
                if page.iter().any(|&x| x != 0) {
                    let at = if page.len() > 16 + 5 + 150 {
                        16 + 5 + 150
                    } else {
                        0
                    };
                    page[at] ^= 0x40;
                }
            }
        });
    }
    for k in [&b"small"[..], b"large"] {
        let err = e.get(k).unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
        assert!(err.to_string().contains("checksum"), "{err}");
    }
}

// ---------------------------------------------------------------- I/O errors

/// The short workload: writes of several sizes, reads, deletes, a scan, a close.
fn workload(
    e: &dyn Engine,
    model: &mut Model,
    step: &mut dyn FnMut() -> bool,
) -> Result<(), Error> {
    let mut rng = Rng::new(5);
    for i in 0..40u64 {
        let k = format!("w{:03}", rng.below(25)).into_bytes();
        match i % 5 {
            0..=2 => {
                let v = value(i, rng.value_len());
                e.insert(&k, &v)?;
                model.insert(k, v);
            }
            3 => {
                let got = e.get(&k)?;
                assert_eq!(got.as_ref(), model.get(&k), "read during the workload");
            }
            _ => {
                e.delete(&k)?;
                model.remove(&k);
            }
        }
        if !step() {
            break;
        }
    }
    let all = e.scan(b"w", 100)?;
    assert_eq!(all.len(), model.len());
    e.close()
}

#[test]
fn every_failed_io_of_a_workload_is_an_error_and_poisons() {
    count_panics();
    // A dry run counts the workload's I/Os.
    let d = TempDir::new("kvell-ioerr-dry");
    let disk = SimDisk::new();
    let mut c = config(d.path(), &disk, true);
    c.cache_bytes = 8 << 10;
    let e = Kvell::open(c.clone()).unwrap();
    let base = disk.ops();
    workload(e.as_ref(), &mut Model::new(), &mut || true).unwrap();
    let total = disk.ops() - base;
    drop(e);
    assert!(total > 40, "{total} I/Os");
    let mut failed_calls = 0;
    for n in 0..total {
        let d = TempDir::new("kvell-ioerr");
        let disk = SimDisk::new();
        c.dirs = vec![d.path().to_path_buf()];
        c.io = IoMode::Sim(disk.clone());
        if std::env::var_os("KVTESTBED_TRACE").is_some() {
            eprintln!("failing I/O {n} of {total}");
        }
        let e = Kvell::open(c.clone()).unwrap();
        disk.fail_at(Some(disk.ops() + n));
        // The model changes only after a call returned Ok: it holds what was
        // acknowledged.
        let mut acked = Model::new();
        let r = workload(e.as_ref(), &mut acked, &mut || true);
        disk.fail_at(None);
        let err = match r {
            Ok(()) => panic!("I/O {n} of {total} failed but the workload succeeded"),
            Err(err) => err,
        };
        failed_calls += 1;
        if std::env::var_os("KVTESTBED_TRACE").is_some() {
            eprintln!("  -> {err}");
        }
        assert!(
            matches!(err, Error::Io { .. } | Error::Poisoned(_)),
            "I/O {n}: {err:?}"
        );
        // Writes are refused until reopened (or the engine is closed, when the
        // failure was in close); reads go on.
        let w = e.insert(b"after", b"x");
        assert!(
            matches!(w, Err(Error::Poisoned(_)) | Err(Error::Closed)),
            "I/O {n}: a write after the failure gave {w:?}"
        );
        if !matches!(w, Err(Error::Closed)) {
            let bad = acked
                .iter()
                .filter(|(k, v)| e.get(k).ok().flatten().as_ref() != Some(*v))
                .count();
            assert!(
                bad <= 1,
                "I/O {n}: {bad} acknowledged keys unreadable after the failure"
            );
        }
        let _ = e.close();
        drop(e);
        let e = Kvell::open(c.clone()).unwrap_or_else(|e| panic!("I/O {n}: reopen: {e}"));
        check_acked(e.as_ref(), &acked, n);
        e.insert(b"after", b"x").unwrap();
        e.close().unwrap();
    }
    assert_eq!(panics(), 0);
    eprintln!(
        "kvell I/O error injection: {total} I/Os failed one at a time, {failed_calls} failed calls"
    );
    // every case: the call failed, writes were refused, the acknowledged state
    // survived the reopen (asserted above)
    let mut t = BTreeMap::new();
    t.insert(
        "fail the Nth I/O (every N)",
        Tally {
            cases: total as usize,
            intact: failed_calls,
            ..Tally::default()
        },
    );
    write_result("kvell", "kvell-io-errors", &t);
}

/// Every acknowledged key has its value; the single write in flight at the failure
/// may have landed or not, nothing else differs.
fn check_acked(e: &dyn Engine, acked: &Model, n: u64) {
    let mut differ = std::collections::BTreeSet::new();
    for (k, v) in acked {
        if e.get(k).unwrap().as_ref() != Some(v) {
            differ.insert(k.clone());
        }
    }
    for (k, v) in e.scan(b"w", 1000).unwrap() {
        if acked.get(&k) != Some(&v) {
            differ.insert(k);
        }
    }
    assert!(
        differ.len() <= 1,
        "I/O {n}: keys differ from the acknowledged state: {differ:?}"
    );
}

// ---------------------------------------------------------------- full disk

#[test]
fn a_full_disk_is_an_error_and_loses_nothing_acknowledged() {
    count_panics();
    let fs = match kvtestkit::testfs::SmallFs::new("kvell", 24) {
        Ok(fs) => fs,
        Err(why) => return eprintln!("SKIP full-disk test: {why}"),
    };
    for mode in [Mode::Direct, Mode::Flush] {
        let dir = fs.path().join(format!("db-{mode:?}"));
        let mut c = Config::new(&dir);
        c.workers = 2;
        c.cache_bytes = 1 << 20;
        c.mode = mode;
        let e: Arc<dyn Engine> = Kvell::open(c.clone()).unwrap();
        let mut rng = Rng::new(11);
        let (acked, err) = kvtestkit::faults::fill_until_error(e.as_ref(), |i| {
            value(i, 500 + rng.below(6000) as usize)
        });
        assert!(matches!(err, Error::Io { .. }), "{err:?}");
        assert!(
            err.to_string().contains("No space left") || err.to_string().contains("space"),
            "{err}"
        );
        let w = e.insert(b"more", b"x");
        assert!(matches!(w, Err(Error::Poisoned(_))), "{w:?}");
        let small = e.update(acked.keys().next().unwrap(), b"y");
        assert!(matches!(small, Err(Error::Poisoned(_))), "{small:?}");
        for (k, v) in acked.iter().step_by(17) {
            assert_eq!(e.get(k).unwrap().as_ref(), Some(v));
        }
        let _ = e.close();
        drop(e);
        let e = Kvell::open(c.clone()).unwrap();
        for (k, v) in &acked {
            assert_eq!(e.get(k).unwrap().as_ref(), Some(v), "after reopen");
        }
        eprintln!(
            "kvell {mode:?}: disk full after {} acknowledged inserts: {err}",
            acked.len()
        );
        e.close().unwrap();
        drop(e);
        let _ = std::fs::remove_dir_all(&dir);
        let mut t = BTreeMap::new();
        t.insert(
            if mode == Mode::Direct {
                "disk full (direct)"
            } else {
                "disk full (flush)"
            },
            Tally {
                cases: 1,
                intact: 1,
                ..Tally::default()
            },
        );
        write_result("kvell", "kvell-full-disk", &t);
    }
    assert_eq!(panics(), 0);
}

/// A read the device holds shows as the worker's slowest I/O, with when it ended, in
/// the engine's counters (`slowest.io_us`, `slowest.io_at_ms`); a read that returns
/// at once does not.
#[test]
fn a_slow_read_shows_as_the_slowest_io_with_its_time() {
    let d = TempDir::new("kvell-slow-read");
    let disk = SimDisk::new();
    let e = Kvell::open(config(d.path(), &disk, true)).unwrap();
    for i in 0..64u32 {
        e.insert(format!("k{i:03}").as_bytes(), &[i as u8; 900])
            .unwrap();
    }
    e.close().unwrap();
    drop(e);
    let counter = |e: &Kvell, name: &str| kvtestkit::extra(e, name);
    // Cold cache: each get reads its page.
    let e = Kvell::open(config(d.path(), &disk, true)).unwrap();
    assert_eq!(e.get(b"k001").unwrap(), Some(vec![1; 900]));
    let quick = counter(&e, "slowest.io_us");
    assert!(quick < 200_000, "an undelayed read took {quick} us");
    let from = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    disk.slow_reads(Some(Duration::from_millis(200)));
    assert_eq!(e.get(b"k040").unwrap(), Some(vec![40; 900]));
    disk.slow_reads(None);
    let slow = counter(&e, "slowest.io_us");
    assert!(slow >= 200_000, "the held read's time: {slow} us");
    let at = counter(&e, "slowest.io_at_ms");
    assert!(at >= from + 200, "ended at {at}, the hold began at {from}");
    // The simulated backend does its I/O inside the submit, in a turn of the worker:
    // that turn lasted as long (with io_uring the hold shows as a reap's wait).
    assert!(counter(&e, "slowest.turn_us") >= 200_000);
    e.close().unwrap();
}
