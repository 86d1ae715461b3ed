//! Simulated crashes through the I/O seam: a disk that keeps "written" apart from
//! "durable". With durability=flush nothing acknowledged is lost by a power loss;
//! with durability=direct nothing acknowledged is lost by a killed process, and a
//! power loss (non-durable pages kept or dropped at random, large items torn) still
//! leaves a store that opens cleanly and answers every key. With 512 B sectors torn
//! (a crash caught inside the engine's I/O) the store still reopens, never serves a
//! wrong value, never brings a key back at an older value than its last acknowledged
//! one, and only keys with a write pending at the crash lose their acknowledged value
//! (counted; see DESIGN.md, Durability classes met).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test (helpers outside #[test] too)"
)]
mod common;

use common::{Rng, value};
use kvapi::{Engine, Error, Request};
use kvell::{Config, Crash, IoMode, Kvell, Mode, SimDisk};
use kvtestkit::conformance::TempDir;
use kvtestkit::faults;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, mpsc};

fn config(dir: &std::path::Path, disk: &SimDisk, mode: Mode) -> Config {
    let mut c = Config::new(dir);
    c.io = IoMode::Sim(disk.clone());
    c.mode = mode;
    c.cache_bytes = 1 << 20;
    c.freelist = 3;
    c
}

fn versioned(k: u64, v: u64, len: usize) -> Vec<u8> {
    let mut out = v.to_le_bytes().to_vec();
    out.extend(value(k * 7919 + v, len));
    out
}

/// Per key: the highest acknowledged version, the highest version submitted before
/// the crash, and every version submitted (true for a delete).
struct History {
    acked: HashMap<u64, u64>,
    /// Every (key, version) acknowledged before the crash.
    acked_all: HashSet<(u64, u64)>,
    at_crash: HashMap<u64, u64>,
    submitted: HashMap<u64, Vec<(u64, bool)>>,
}

/// Writes with many requests in flight, crashes the disk after `crash_after`
/// acknowledgements, reopens; returns the history and the reopened engine.
fn write_and_crash(seed: u64, mode: Mode, crash: Crash) -> (History, Arc<Kvell>, TempDir, SimDisk) {
    write_and_crash_opt(seed, mode, crash, false)
}

/// As [`write_and_crash`]; with `in_flight` the crash happens inside the engine's I/O
/// instead, at a random operation, catching one write half-way (see
/// `SimDisk::crash_at`), and only the acknowledgements seen before it count.
fn write_and_crash_opt(
    seed: u64,
    mode: Mode,
    crash: Crash,
    in_flight_crash: bool,
) -> (History, Arc<Kvell>, TempDir, SimDisk) {
    let d = TempDir::new("kvell-power");
    let disk = SimDisk::new();
    // the device the crash simulates: 512 B sectors torn, or 4 KiB pages whole
    let cfg = || {
        let mut c = config(d.path(), &disk, mode);
        if matches!(crash, Crash::PowerSectors(_)) {
            c.atomic_write = 512;
        }
        c
    };
    let e = Kvell::open(cfg()).unwrap();
    let a = e.clone().native_async().unwrap();
    let acked: Arc<Mutex<HashMap<u64, u64>>> = Arc::default();
    let acked_all: Arc<Mutex<HashSet<(u64, u64)>>> = Arc::default();
    let mut all_snapshot = None;
    let mut rng = Rng::new(seed);
    let crash_after = 300 + rng.below(1500) as usize;
    if in_flight_crash {
        disk.crash_at(disk.ops() + 2 * crash_after as u64, crash);
    }
    let (tx, rx) = mpsc::channel::<()>();
    let mut version = HashMap::new();
    let mut submitted: HashMap<u64, Vec<(u64, bool)>> = HashMap::new();
    let mut in_flight = 0;
    let mut done = 0;
    let mut snapshot = None;
    let mut at_crash = None;
    for _ in 0..4000 {
        while in_flight >= 48 {
            rx.recv().unwrap();
            in_flight -= 1;
            done += 1;
        }
        if in_flight_crash {
            if at_crash.is_none() && disk.crashed() {
                // every version submitted before the crash, and maybe a few after
                at_crash = Some(version.clone());
            }
        } else if done >= crash_after && snapshot.is_none() {
            // What was acknowledged before the crash must survive it.
            snapshot = Some(acked.lock().unwrap().clone());
            all_snapshot = Some(acked_all.lock().unwrap().clone());
            at_crash = Some(version.clone());
            disk.crash(crash);
        }
        let k = rng.below(300);
        let v = version.entry(k).and_modify(|v| *v += 1).or_insert(1u64);
        let v = *v;
        let len = rng.value_len();
        let (tx, acked, disk2) = (tx.clone(), acked.clone(), disk.clone());
        let all = acked_all.clone();
        in_flight += 1;
        let delete = rng.below(10) == 0;
        submitted.entry(k).or_default().push((v, delete));
        let ack = move |acked: &Mutex<HashMap<u64, u64>>| {
            let mut a = acked.lock().unwrap();
            if in_flight_crash && disk2.crashed() {
                return; // completed after the crash, or before: not counted as acknowledged
            }
            all.lock().unwrap().insert((k, v));
            let e = a.entry(k).or_insert(0);
            *e = (*e).max(v);
        };
        if delete {
            a.submit(
                Request::Delete {
                    key: format!("p{k}").into_bytes(),
                },
                Box::new(move |r| {
                    r.unwrap();
                    ack(&acked);
                    tx.send(()).unwrap();
                }),
            );
        } else {
            a.submit(
                Request::Update {
                    key: format!("p{k}").into_bytes(),
                    value: versioned(k, v, len),
                },
                Box::new(move |r| {
                    r.unwrap();
                    ack(&acked);
                    tx.send(()).unwrap();
                }),
            );
        }
    }
    for _ in 0..in_flight {
        rx.recv().unwrap();
    }
    let at_crash = at_crash.unwrap_or_else(|| version.clone());
    let all_snapshot = all_snapshot.unwrap_or_else(|| acked_all.lock().unwrap().clone());
    let snapshot = snapshot.unwrap_or_else(|| {
        let s = acked.lock().unwrap().clone();
        disk.crash(crash);
        s
    });
    drop(a);
    let _ = e.close();
    drop(e);
    disk.restart();
    let e = Kvell::open(cfg()).expect("reopen after a crash");
    let h = History {
        acked: snapshot,
        acked_all: all_snapshot,
        at_crash,
        submitted,
    };
    (h, e, d, disk)
}

/// Every key shows its acknowledged version or a later submitted one (a delete
/// counts as a version whose state is "absent").
fn check_acked(seed: u64, h: &History, e: &Kvell) {
    for (&k, &v) in &h.acked {
        let got = e.get(format!("p{k}").as_bytes()).unwrap();
        let subs = &h.submitted[&k];
        match got {
            Some(g) => {
                let gv = u64::from_le_bytes(g[..8].try_into().unwrap());
                assert!(gv >= v, "seed {seed}: p{k} at v{gv}, acknowledged v{v}");
                assert!(
                    subs.contains(&(gv, false)),
                    "seed {seed}: p{k} v{gv} never written"
                );
            }
            None => assert!(
                subs.iter().any(|&(sv, del)| del && sv >= v),
                "seed {seed}: p{k} acknowledged at v{v} is missing"
            ),
        }
    }
}

/// The fault-matrix rows of these tests (`faults.jsonl` under `$KVTESTBED_RESULTS`,
/// the durability audit): `cases` crash images opened, `intact` of them with every
/// acknowledged write, `lost_counted` with acknowledged values lost at a repair the
/// engine counted and reported (`recovery_torn_items`). A row is written only when
/// the test's assertions held: a wrong value or an uncounted loss fails the test.
const POWER_LOSS: &str = "power loss at a random point (simulated disk: unsynced pages, \
                          sizes and directory entries dropped at random), durability=flush";
const KILLED: &str = "killed process at a random point (simulated disk), durability=direct";

fn record(fault: &str, cases: usize, intact: usize, lost_counted: usize) {
    let mut t = BTreeMap::new();
    t.insert(
        fault,
        faults::Tally {
            cases,
            intact,
            lost: lost_counted,
            lost_counted,
            ..faults::Tally::default()
        },
    );
    faults::write_result("kvell", "kvell-power", &t);
}

/// `seeds` crashes of one kind after random acknowledgements, each image checked
/// with [`check_acked`] (nothing acknowledged lost, nothing never written).
fn crash_after_acks(seeds: std::ops::RangeInclusive<u64>, mode: Mode, crash: fn(u64) -> Crash) {
    let n = seeds.clone().count();
    for seed in seeds {
        let (acked, e, _d, _disk) = write_and_crash(seed, mode, crash(seed));
        check_acked(seed, &acked, &e);
        e.close().unwrap();
    }
    record(
        if mode == Mode::Flush {
            POWER_LOSS
        } else {
            KILLED
        },
        n,
        n,
        0,
    );
}

#[test]
fn power_loss_with_flush_loses_nothing_acknowledged() {
    crash_after_acks(1..=4, Mode::Flush, Crash::Power);
}

#[test]
fn killed_process_with_direct_loses_nothing_acknowledged() {
    crash_after_acks(1..=4, Mode::Direct, |_| Crash::Process);
}

#[test]
fn power_loss_with_direct_opens_cleanly() {
    for seed in 1..=4 {
        let (h, e, _d, _disk) = write_and_crash(seed, Mode::Direct, Crash::Power(seed + 50));
        for k in h.acked.keys() {
            // no promise on the value (class `process`), but no error either
            e.get(format!("p{k}").as_bytes()).unwrap();
        }
        let scanned = e.scan(b"", usize::MAX).unwrap();
        assert_eq!(scanned.len() as u64, e.counters().items.unwrap());
        e.close().unwrap();
    }
}

/// An older copy left by a crash in the middle of a move (new copy written, old not
/// yet tombstoned) loses to the newer one, and gets a tombstone so that a later
/// delete cannot bring it back.
#[test]
fn older_copy_after_interrupted_move_is_buried() {
    let d = TempDir::new("kvell-stale");
    let disk = SimDisk::new();
    let cfg = || {
        let mut c = config(d.path(), &disk, Mode::Direct);
        c.workers = 1;
        c
    };
    let e = Kvell::open(cfg()).unwrap();
    e.insert(b"moving", b"small").unwrap();
    e.close().unwrap();
    drop(e);
    let small_slab = d.path().join(kvell::slab::file_name(0, 0));
    let mut saved = Vec::new();
    disk.edit(&small_slab, |b| saved = b.clone());
    let e = Kvell::open(cfg()).unwrap();
    e.update(b"moving", &value(1, 2000)).unwrap(); // moves to the 2048 class
    e.close().unwrap();
    drop(e);
    // put back the slab as it was before the old copy's tombstone
    disk.edit(&small_slab, |b| *b = saved.clone());
    let e = Kvell::open(cfg()).unwrap();
    assert_eq!(
        e.get(b"moving").unwrap(),
        Some(value(1, 2000)),
        "newest copy wins"
    );
    assert!(e.info().notes.iter().any(|n| n.contains("older copies")));
    e.delete(b"moving").unwrap();
    e.close().unwrap();
    drop(e);
    let e = Kvell::open(cfg()).unwrap();
    assert_eq!(e.get(b"moving").unwrap(), None, "the older copy came back");
    // timestamps keep increasing across restarts: a new write beats everything
    e.insert(b"moving", b"again").unwrap();
    e.close().unwrap();
    drop(e);
    let e = Kvell::open(cfg()).unwrap();
    assert_eq!(e.get(b"moving").unwrap().as_deref(), Some(&b"again"[..]));
    e.close().unwrap();
}

#[test]
fn failed_write_poisons() {
    let d = TempDir::new("kvell-poison");
    let disk = SimDisk::new();
    let e = Kvell::open(config(d.path(), &disk, Mode::Direct)).unwrap();
    e.insert(b"a", b"1").unwrap();
    disk.fail_writes(true);
    let err = e.insert(b"b", b"2").unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    disk.fail_writes(false);
    let err = e.insert(b"c", b"3").unwrap_err();
    assert!(matches!(err, Error::Poisoned(_)), "{err}");
    assert!(matches!(e.delete(b"a"), Err(Error::Poisoned(_))));
    assert_eq!(
        e.get(b"a").unwrap().as_deref(),
        Some(&b"1"[..]),
        "reads still work"
    );
    drop(e);
    let e = Kvell::open(config(d.path(), &disk, Mode::Direct)).unwrap();
    assert_eq!(e.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    e.insert(b"c", b"3").unwrap();
    e.close().unwrap();
}

/// What [`sector_tearing`] measured over some seeds.
#[derive(Default, Debug)]
struct Tally {
    keys: u64,
    torn_items: u64,
    /// Acknowledged values gone (key absent) after a later pending write was torn.
    lost: u64,
    /// Keys back at an older written value than the last acknowledged one: a failure
    /// in every class (see DESIGN.md, Durability classes met), kept at 0 by the
    /// per-key write order of the worker; counted for the report, then asserted.
    rolled_back: u64,
}

/// Power loss caught inside the engine's I/O on a device with 512 B atomic sectors,
/// durability=flush (a killed process: durability=direct): the store always reopens;
/// no key is ever back at an older value than its last acknowledged one; a key with no write pending at the
/// crash keeps its acknowledged value; a key whose pending in-place write was torn may
/// lose its acknowledged value (the torn slot fails its CRC and is freed, never
/// served); no value is ever one that was not written for its key.
fn sector_tearing(seed: u64, crash: Crash, t: &mut Tally) {
    let mode = match crash {
        Crash::Process => Mode::Direct,
        _ => Mode::Flush,
    };
    let (h, e, _d, _disk) = write_and_crash_opt(seed, mode, crash, true);
    let torn = e
        .counters()
        .extra
        .iter()
        .find(|(k, _)| k == "recovery_torn_items")
        .map(|&(_, v)| v)
        .expect("recovery_torn_items counter");
    assert!(
        e.info()
            .settings
            .iter()
            .any(|(k, v)| k == "recovery_torn_items" && *v == torn.to_string())
    );
    t.torn_items += torn;
    for (&k, subs) in &h.submitted {
        let got = e.get(format!("p{k}").as_bytes()).unwrap();
        let acked = h.acked.get(&k).copied().unwrap_or(0);
        let sent = h.at_crash.get(&k).copied().unwrap_or(0);
        // a write of this key submitted before the crash and not acknowledged
        let pending = subs
            .iter()
            .any(|&(sv, _)| sv <= sent && !h.acked_all.contains(&(k, sv)));
        t.keys += 1;
        match got {
            Some(g) => {
                // never a wrong value: a version written for this key, byte for byte
                let gv = u64::from_le_bytes(g[..8].try_into().unwrap());
                assert!(
                    subs.contains(&(gv, false)) && gv <= sent,
                    "seed {seed}: p{k} v{gv} never written before the crash"
                );
                assert_eq!(
                    g,
                    versioned(k, gv, g.len() - 8),
                    "seed {seed}: p{k} v{gv} wrong bytes"
                );
                if gv < acked {
                    t.rolled_back += 1;
                    panic!(
                        "seed {seed}: p{k} rolled back to v{gv}, acknowledged v{acked} \
                         (a write of its own pending: {pending})"
                    );
                }
            }
            // a delete submitted before the crash may have taken effect
            None if acked == 0
                || subs
                    .iter()
                    .any(|&(sv, del)| del && sv >= acked && sv <= sent) => {}
            None => {
                assert!(
                    pending,
                    "seed {seed}: p{k} acknowledged at v{acked}, no write pending, is missing"
                );
                t.lost += 1;
            }
        }
    }
    let scanned = e.scan(b"", usize::MAX).unwrap();
    assert_eq!(scanned.len() as u64, e.counters().items.unwrap());
    e.close().unwrap();
}

fn sector_tearing_seeds(seeds: std::ops::Range<u64>, crash: fn(u64) -> Crash) -> Tally {
    let mut t = Tally::default();
    let n = seeds.end - seeds.start;
    // images that lost an acknowledged value (each loss counted by the engine)
    let mut images_lost = 0;
    for seed in seeds {
        let before = t.lost;
        sector_tearing(seed, crash(seed), &mut t);
        images_lost += usize::from(t.lost > before);
    }
    let name = match crash(0) {
        Crash::PowerSectors(_) => "power loss, 512 B sectors, durability=flush",
        Crash::Power(_) => "power loss, 4 KiB pages, durability=flush",
        Crash::Process => "killed process, durability=direct",
    };
    let images = usize::try_from(n).unwrap();
    record(
        &format!("{name}, crash inside the engine's I/O (a write caught half-way)"),
        images,
        images - images_lost,
        images_lost,
    );
    println!(
        "{name}, crash inside the I/O, {n} seeds: {} keys checked, {} torn items freed \
         at recovery, {} acknowledged values lost to a torn pending in-place update, {} \
         keys rolled back to an older value",
        t.keys, t.torn_items, t.lost, t.rolled_back
    );
    t
}

#[test]
fn power_loss_torn_sectors_with_flush() {
    sector_tearing_seeds(1..9, Crash::PowerSectors);
}

#[ignore]
#[test]
fn power_loss_torn_sectors_many_seeds() {
    let t = sector_tearing_seeds(100..400, Crash::PowerSectors);
    assert!(t.torn_items > 0 && t.lost > 0, "{t:?}");
    assert_eq!(t.rolled_back, 0, "{t:?}");
}

/// The same crash inside the engine's I/O with 4 KiB atomic pages (durability=flush),
/// and as a killed process (durability=direct): no torn items, nothing acknowledged
/// lost, no key rolled back (see DESIGN.md, Durability classes met).
#[ignore]
#[test]
fn in_flight_crash_whole_pages_many_seeds() {
    let t = sector_tearing_seeds(100..400, Crash::Power);
    assert_eq!((t.torn_items, t.lost, t.rolled_back), (0, 0, 0), "{t:?}");
    let t = sector_tearing_seeds(100..400, |_| Crash::Process);
    assert_eq!((t.torn_items, t.lost, t.rolled_back), (0, 0, 0), "{t:?}");
}

#[ignore]
#[test]
fn power_loss_many_seeds() {
    crash_after_acks(100..=199, Mode::Flush, Crash::Power);
    crash_after_acks(100..=199, Mode::Direct, |_| Crash::Process);
}

/// The rule, deterministically: a slot failing its CRC is `Corruption` after a clean
/// close, and after an unclean shutdown too when the bytes that fail lie in one sector
/// (no write in flight could have torn them; the torn case is in `tests/damage.rs`).
#[test]
fn crc_failure_is_torn_only_where_a_write_could_tear() {
    let d = TempDir::new("kvell-torn-rule");
    let disk = SimDisk::new();
    let cfg = |atomic_write| {
        let mut c = config(d.path(), &disk, Mode::Flush);
        c.workers = 1;
        c.atomic_write = atomic_write;
        c
    };
    let e = Kvell::open(cfg(4096)).unwrap();
    e.insert(b"a", b"1").unwrap();
    e.insert(b"b", b"2").unwrap();
    e.close().unwrap();
    drop(e);
    let slab = d.path().join(kvell::slab::file_name(0, 0));
    disk.edit(&slab, |b| b[17] ^= 0x40); // the value of the first item
    let err = Kvell::open(cfg(4096))
        .err()
        .expect("a CRC failure after a clean close");
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    // the record no longer says "closed cleanly": still no write could have torn it
    disk.edit(&d.path().join("w000.clean"), |b| b.fill(0));
    for atomic_write in [4096, 512] {
        let err = Kvell::open(cfg(atomic_write))
            .err()
            .expect("a CRC failure inside one sector after an unclean shutdown");
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
        assert!(err.to_string().contains("not a torn write"), "{err}");
    }
}
