//! A damaged store after an unclean shutdown: nothing is lost without a word. An item
//! whose bytes fail their checksum where no write in flight could have torn them is
//! `Corruption` (the open refuses), not a torn write freed in silence; a torn write
//! the device's atomic unit allows is freed, counted and described; a slab cut at a
//! page boundary is refused by the length the clean-shutdown record keeps, or by a
//! length no growth gives; a zeroed page is a counted, described repair; a record of
//! the first version (no lengths) still opens. See DESIGN.md, Recovery.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test (helpers outside #[test] too)"
)]

use kvapi::{Engine, Error};
use kvell::{Config, Crash, IoMode, Kvell, Mode, SimDisk, slab};
use kvtestkit::conformance::TempDir;
use kvtestkit::faults::write_row;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MIB: usize = 1 << 20;

fn config(dir: &Path, disk: &SimDisk, atomic_write: usize) -> Config {
    let mut c = Config::new(dir);
    c.io = IoMode::Sim(disk.clone());
    c.mode = Mode::Flush;
    c.workers = 1;
    c.cache_bytes = 1 << 20;
    c.atomic_write = atomic_write;
    c
}

fn slab0(d: &TempDir) -> PathBuf {
    d.path().join(slab::file_name(0, 0))
}

/// An engine stopped as a kill stops it: what the kernel held survives, the close
/// never reaches the disk (the clean-shutdown record still says "open").
fn kill(e: Arc<Kvell>, disk: &SimDisk) {
    disk.crash(Crash::Process);
    let _ = e.close();
    drop(e);
    disk.restart();
}

/// One row of the fault matrix (results/durability/faults.jsonl): `intact` cases
/// opened with every acknowledged item (a repair counted and described where there
/// was one), `refused` ones were Corruption naming the file.
fn row(fault: &str, cases: usize, intact: usize, refused: usize) {
    write_row(
        "kvell",
        "kvell-unclean-shutdown",
        fault,
        cases,
        intact,
        refused,
    );
}

fn extra(e: &Kvell, name: &str) -> u64 {
    e.counters()
        .extra
        .iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("counter {name}"))
        .1
}

fn refused(r: kvapi::Result<Arc<Kvell>>, what: &str) -> Error {
    let err = r.err().unwrap_or_else(|| panic!("opened: {what}"));
    assert!(matches!(err, Error::Corruption { .. }), "{what}: {err}");
    err
}

/// Items `a`, `b` (slots 0 and 1 of the first page), closed cleanly; then `c`
/// written (slot 2, the same page) and the engine killed.
fn two_then_killed(d: &TempDir, disk: &SimDisk) {
    let e = Kvell::open(config(d.path(), disk, 4096)).unwrap();
    e.insert(b"a", b"1").unwrap();
    e.insert(b"b", b"2").unwrap();
    e.close().unwrap();
    drop(e);
    let e = Kvell::open(config(d.path(), disk, 4096)).unwrap();
    e.insert(b"c", b"3").unwrap();
    kill(e, disk);
}

/// The bug this guards against: after a kill, an item no write was changing, its
/// value damaged, was freed as a "torn write" and the key silently gone.
#[test]
fn a_damaged_item_untouched_by_the_last_writer_is_refused_not_freed() {
    let d = TempDir::new("kvell-damage-item");
    let disk = SimDisk::new();
    two_then_killed(&d, &disk);
    disk.edit(&slab0(&d), |b| b[17] ^= 0x40); // the value of `a`
    for atomic in [4096, 512] {
        // 22 bytes at offset 0: inside one sector, so no tear could fail them
        let err = refused(
            Kvell::open(config(d.path(), &disk, atomic)),
            "a damaged item after a kill",
        );
        let s = err.to_string();
        assert!(s.contains("damaged, not a torn write"), "{s}");
        assert!(s.contains("w000-100.slab"), "{s}");
        assert!(matches!(err, Error::Corruption { offset: 0, .. }), "{s}");
    }
    // repaired by hand (the byte put back), it opens with every item
    disk.edit(&slab0(&d), |b| b[17] ^= 0x40);
    let e = Kvell::open(config(d.path(), &disk, 4096)).unwrap();
    assert_eq!(e.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(e.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(extra(&e, "recovery_torn_items"), 0);
    e.close().unwrap();
    row(
        "item damaged, untouched by the last writer (refused)",
        2,
        0,
        2,
    );
}

/// A write that crosses a sector boundary, failing its checksum after a kill: on a
/// device that tears 512 B sectors (`atomic_write=512`) a torn write, freed, counted
/// and described; on a 4 KiB-atomic device, corruption.
#[test]
fn a_checksum_failure_across_a_sector_is_a_counted_repair_only_if_sectors_tear() {
    let d = TempDir::new("kvell-damage-sector");
    let disk = SimDisk::new();
    let e = Kvell::open(config(d.path(), &disk, 512)).unwrap();
    for i in 0..6 {
        e.insert(format!("k{i}").as_bytes(), b"0123456789").unwrap();
    }
    kill(e, &disk);
    // slot 5 holds k5 at bytes 500..532, across the sector boundary at 512
    disk.edit(&slab0(&d), |b| b[520] ^= 1);
    let err = refused(
        Kvell::open(config(d.path(), &disk, 4096)),
        "a 4 KiB-atomic device",
    );
    assert!(err.to_string().contains("atomic_write=512"), "{err}");
    let e = Kvell::open(config(d.path(), &disk, 512)).unwrap();
    assert_eq!(extra(&e, "recovery_torn_items"), 1);
    let info = e.info();
    assert!(
        info.settings
            .iter()
            .any(|(k, v)| k == "recovery_torn_items" && v == "1"),
        "{:?}",
        info.settings
    );
    assert!(
        info.notes
            .iter()
            .any(|n| n.contains("w000-100.slab at offset 500") && n.contains("slot freed")),
        "{:?}",
        info.notes
    );
    assert_eq!(e.get(b"k5").unwrap(), None, "a torn item is never served");
    assert_eq!(e.get(b"k4").unwrap().as_deref(), Some(&b"0123456789"[..]));
    e.close().unwrap();
    drop(e);
    // buried with a tombstone: a clean close, a clean reopen
    let e = Kvell::open(config(d.path(), &disk, 512)).unwrap();
    assert_eq!(extra(&e, "recovery_torn_items"), 0);
    assert_eq!(e.scan(b"", usize::MAX).unwrap().len(), 5);
    e.close().unwrap();
    row(
        "item torn across a sector (refused at 4 KiB atomic, counted repair at 512 B)",
        2,
        1,
        1,
    );
}

/// A slab cut at a page boundary after a kill: the record's length (it grew to 2 MiB)
/// refuses a cut to 1 MiB, a length growth gives; a cut to 3 pages, a length growth
/// never gives, is refused by the length alone, with or without the record.
#[test]
fn a_slab_cut_at_a_page_after_a_kill_is_refused() {
    let d = TempDir::new("kvell-damage-cut");
    let disk = SimDisk::new();
    let e = Kvell::open(config(d.path(), &disk, 4096)).unwrap();
    // 40 slots of 100 B per page: 12,000 items fill more than 1 MiB
    for i in 0..12_000u32 {
        e.insert(format!("k{i:05}").as_bytes(), b"v").unwrap();
    }
    kill(e, &disk);
    let mut len = 0;
    disk.edit(&slab0(&d), |b| len = b.len());
    assert_eq!(len, 2 * MIB, "the slab grew twice");
    let mut whole = Vec::new();
    disk.edit(&slab0(&d), |b| whole = b.clone());
    disk.edit(&slab0(&d), |b| b.truncate(MIB));
    let err = refused(
        Kvell::open(config(d.path(), &disk, 4096)),
        "a slab cut to 1 MiB",
    );
    assert!(
        err.to_string().contains("items lost past offset 1048576"),
        "{err}"
    );
    disk.edit(&slab0(&d), |b| b.truncate(3 * 4096));
    let err = refused(
        Kvell::open(config(d.path(), &disk, 4096)),
        "a slab cut to 3 pages",
    );
    assert!(err.to_string().contains("items lost"), "{err}");
    disk.remove(&d.path().join("w000.clean"));
    let err = refused(
        Kvell::open(config(d.path(), &disk, 4096)),
        "a slab cut to 3 pages, no record",
    );
    assert!(
        err.to_string().contains("length growth never gives"),
        "{err}"
    );
    // the slab whole again: every item
    disk.edit(&slab0(&d), |b| *b = whole);
    let e = Kvell::open(config(d.path(), &disk, 4096)).unwrap();
    assert_eq!(e.counters().items, Some(12_000));
    e.close().unwrap();
    row("slab truncated at a page boundary (refused)", 3, 0, 3);
}

/// A zeroed page below a slab's end after a kill reads as never-written slots: an
/// append a crash could have lost, so a repair (tombstoned), counted and described.
#[test]
fn a_zeroed_page_after_a_kill_is_a_counted_reported_repair() {
    let d = TempDir::new("kvell-damage-zeroed");
    let disk = SimDisk::new();
    let e = Kvell::open(config(d.path(), &disk, 4096)).unwrap();
    for i in 0..120u32 {
        e.insert(format!("k{i:03}").as_bytes(), b"v").unwrap();
    }
    kill(e, &disk);
    disk.edit(&slab0(&d), |b| b[4096..8192].fill(0)); // the 40 items of page 1
    let e = Kvell::open(config(d.path(), &disk, 4096)).unwrap();
    assert_eq!(extra(&e, "recovery_holes"), 40);
    assert_eq!(e.counters().items, Some(80));
    let notes = &e.info().notes;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("40 never-written slots below a slab's end")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("w000-100.slab at offset 4096") && n.contains("tombstoned")),
        "{notes:?}"
    );
    e.close().unwrap();
    row(
        "page zeroed below a slab's end (40 slots: counted, described repair)",
        1,
        1,
        0,
    );
}

/// A clean-shutdown record of the first version ("KVCLEAN1", no lengths) written by
/// a clean close still opens as clean, and is rewritten as the second version.
#[test]
fn a_clean_first_version_record_still_opens() {
    let d = TempDir::new("kvell-clean-v1");
    let disk = SimDisk::new();
    let e = Kvell::open(config(d.path(), &disk, 4096)).unwrap();
    for i in 0..100u32 {
        e.insert(format!("k{i:03}").as_bytes(), b"value").unwrap();
    }
    e.close().unwrap();
    drop(e);
    let rec = d.path().join("w000.clean");
    disk.edit(&rec, |b| {
        assert_eq!(&b[..8], b"KVCLEAN2");
        b[..8].copy_from_slice(b"KVCLEAN1");
        b[184..].fill(0);
        let crc = crc32fast::hash(&b[..184]);
        b[184..188].copy_from_slice(&crc.to_le_bytes());
    });
    let e = Kvell::open(config(d.path(), &disk, 4096)).unwrap();
    assert_eq!(e.counters().items, Some(100));
    assert_eq!(e.get(b"k042").unwrap().as_deref(), Some(&b"value"[..]));
    e.close().unwrap();
    drop(e);
    disk.edit(&rec, |b| assert_eq!(&b[..8], b"KVCLEAN2"));
    // the first version still says "closed cleanly": a zeroed page is caught
    disk.edit(&rec, |b| {
        b[..8].copy_from_slice(b"KVCLEAN1");
        b[184..].fill(0);
        let crc = crc32fast::hash(&b[..184]);
        b[184..188].copy_from_slice(&crc.to_le_bytes());
    });
    disk.edit(&slab0(&d), |b| b[4096..8192].fill(0));
    let err = refused(
        Kvell::open(config(d.path(), &disk, 4096)),
        "a zeroed page after a clean close (v1 record)",
    );
    assert!(err.to_string().contains("items lost"), "{err}");
}
