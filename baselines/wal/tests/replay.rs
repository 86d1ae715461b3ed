//! What replay refuses and what it makes durable: a damaged transaction that the
//! header's commit id says was acknowledged fails the open (and a damaged header
//! copy does not hide it), and a large value replay found only in a killed writer's
//! page cache is synced before the open's checkpoint. (Moved out of crash.rs, which had
//! grown past 800 lines, 2026-12-03.)
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::{cfg, open};
use kvapi::{Engine, Error};
use wal_engine::format::BLOCK;
use wal_engine::{MemVfs, Mode, WalEngine};

fn val(seed: u64, len: usize) -> Vec<u8> {
    kvtestkit::conformance::value(seed, len)
}

#[test]
fn corruption_of_a_committed_transaction_fails_open() {
    let vfs = MemVfs::new();
    let c = cfg(256);
    let e = open(&vfs, &c);
    for i in 0..20u64 {
        e.insert(format!("c{i:02}").as_bytes(), &val(i, 100))
            .unwrap();
    }
    // the header now says transactions up to here are committed
    e.flush_header().unwrap();
    let img = vfs.crash_image(None);
    drop(e);
    let wal = img.file("wal");
    let mut b = wal.durable();
    b[(1 + 10) * BLOCK + 100] ^= 0x40; // inside the payload
    wal.set_contents(b);
    match WalEngine::open_with(&img, c.clone()) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert!(file.ends_with("wal"), "{}", file.display());
            assert_eq!(offset, (1 + 10) * BLOCK as u64);
        }
        Err(other) => panic!("expected corruption, got {other}"),
        Ok(e) => panic!(
            "opened a log with a corrupt committed transaction: {:?}",
            e.info().notes
        ),
    }
    // a damaged header copy: the other (older) copy is used, and the damaged
    // transaction is still refused, not cut
    let mut b = wal.durable();
    b[30] ^= 1;
    wal.set_contents(b);
    match WalEngine::open_with(&img, c.clone()) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert!(
                file.ends_with("wal") && offset > 0,
                "{} {offset}",
                file.display()
            )
        }
        Err(other) => panic!("expected corruption, got {other}"),
        Ok(e) => panic!("opened: {:?}", e.info().notes),
    }
    // both header copies damaged is corruption of the header
    let mut b = wal.durable();
    let second = b.len() - BLOCK;
    b[second + 30] ^= 1;
    wal.set_contents(b);
    assert!(matches!(
        WalEngine::open_with(&img, c),
        Err(Error::Corruption { offset: 0, .. })
    ));
}

/// Regression (found by review): a writer killed after its WAL record was synced but
/// before its large value's data sync leaves the value in the page cache only; the
/// reopen replays it (the checksum passes), and its checkpoint moves the header past
/// it. A power cut after that must not take the value back: open syncs the data
/// file before that checkpoint.
#[test]
fn a_replayed_large_value_is_durable_before_the_open_checkpoint() {
    use wal_engine::Vfs;
    for mode in [Mode::Fdatasync, Mode::Dsync] {
        let vfs = MemVfs::new();
        let mut c = cfg(256);
        c.mode = mode;
        let e = open(&vfs, &c);
        e.insert(b"big", &val(1, 6000)).unwrap();
        e.close().unwrap();
        drop(e);
        let e = open(&vfs, &c);
        let data_before = vfs.file("data").durable();
        // parallel path: 6000 B is above large_value and below data_first
        e.update(b"big", &val(2, 6000)).unwrap();
        let data_after = vfs.file("data").written();
        let img = vfs.crash_image(None);
        drop(e);
        // as if killed between the data write and its sync: the new value is in the
        // page cache only
        img.file("data").set_contents(data_before);
        img.open("data", false)
            .unwrap()
            .write_at(&data_after, 0)
            .unwrap();
        let e = open(&img, &c);
        assert_eq!(e.get(b"big").unwrap(), Some(val(2, 6000)), "{mode:?}");
        let after_power_cut = img.crash_image(None);
        drop(e);
        let e = open(&after_power_cut, &c);
        assert_eq!(
            e.get(b"big").unwrap(),
            Some(val(2, 6000)),
            "{mode:?}: the replayed value was lost by a power cut after the open"
        );
    }
}
