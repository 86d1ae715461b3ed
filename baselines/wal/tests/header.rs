//! The WAL header's two copies (block 0 and the block after the log): writes
//! alternate between them, so a write torn by a crash, or damage to one copy,
//! leaves the other, and open uses it, counts it and says so. Both copies unusable
//! is corruption, and nothing is written.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::counter;
use kvapi::{Engine, Error};
use std::path::Path;
use wal_engine::{Config, MemVfs, WalEngine};

const BLOCK: usize = 4096;
const LOG_BLOCKS: usize = 256;

fn cfg() -> Config {
    let mut c = Config::with_dir(Path::new("/mem/wal"));
    c.log_size = ((LOG_BLOCKS + 1) * BLOCK) as u64;
    c.checkpoint_ms = 3_600_000;
    c
}

fn note(e: &WalEngine) -> String {
    e.info().notes.join("\n")
}

/// A database with writes after its last checkpoint (only in the log), closed by
/// a crash; the header has been written several times (both copies hold one).
fn database() -> MemVfs {
    let vfs = MemVfs::new();
    let e = WalEngine::open_with(&vfs, cfg()).unwrap();
    for round in 0..3u8 {
        for i in 0..50u8 {
            e.insert(&[b'k', i], &[round; 300]).unwrap();
        }
        e.checkpoint_now().unwrap();
    }
    for i in 0..50u8 {
        e.update(&[b'k', i], &[9; 300]).unwrap();
    }
    let img = vfs.crash_image(None);
    drop(e);
    img
}

fn check(e: &WalEngine) {
    for i in 0..50u8 {
        assert_eq!(e.get(&[b'k', i]).unwrap(), Some(vec![9; 300]), "key {i}");
    }
}

/// Flips a byte of the copy at `block` (0 or the block after the log).
fn damage(vfs: &MemVfs, block: usize) {
    let mut b = vfs.file("wal").written();
    assert_eq!(b.len(), (LOG_BLOCKS + 2) * BLOCK, "the WAL has both copies");
    b[block * BLOCK + 25] ^= 0x40;
    vfs.file("wal").set_contents(b);
}

#[test]
fn a_damaged_copy_is_replaced_by_the_other_counted_and_said() {
    for block in [0, LOG_BLOCKS + 1] {
        let vfs = database();
        damage(&vfs, block);
        let e = WalEngine::open_with(&vfs, cfg()).unwrap();
        check(&e);
        assert_eq!(counter(&e, "header_copy_repairs"), 1, "block {block}");
        let n = note(&e);
        assert!(
            n.contains(&format!(
                "the WAL header copy at offset {} failed its checks",
                block * BLOCK
            )),
            "block {block}: {n}"
        );
        e.close().unwrap();
        drop(e);
        // the open's own header write went to the damaged copy: both are whole now
        let e = WalEngine::open_with(&vfs, cfg()).unwrap();
        assert_eq!(counter(&e, "header_copy_repairs"), 0, "block {block}");
        check(&e);
    }
}

#[test]
fn both_copies_damaged_is_corruption_and_writes_nothing() {
    let vfs = database();
    damage(&vfs, 0);
    damage(&vfs, LOG_BLOCKS + 1);
    let before = vfs.file("wal").written();
    match WalEngine::open_with(&vfs, cfg()) {
        Err(Error::Corruption {
            offset: 0, detail, ..
        }) => {
            assert!(detail.contains("no valid second copy"), "{detail}")
        }
        Err(e) => panic!("expected corruption at offset 0, got {e}"),
        Ok(_) => panic!("opened with both header copies damaged"),
    }
    assert!(
        vfs.file("wal").written() == before,
        "the refused open wrote"
    );
}

/// A header write torn by a crash inside its sector (a device that does not write
/// a sector atomically): each copy in turn, its bytes from 0, 8, .. 48 on garbage;
/// the other copy is a whole header, and the open uses it.
#[test]
fn a_torn_header_write_leaves_the_previous_header() {
    let vfs = database();
    let e = WalEngine::open_with(&vfs, cfg()).unwrap();
    check(&e);
    drop(e);
    let now = vfs.file("wal").written();
    for block in [0, LOG_BLOCKS + 1] {
        for keep in (0..56).step_by(8) {
            let img = vfs.crash_image(None);
            let mut b = img.file("wal").written();
            // the header's bytes up to `keep`, garbage after (neither old nor new)
            for x in &mut b[block * BLOCK + keep..block * BLOCK + 56] {
                *x = 0xa5;
            }
            assert!(b != now);
            img.file("wal").set_contents(b);
            let e = WalEngine::open_with(&img, cfg()).unwrap_or_else(|err| {
                panic!("block {block} torn at {keep}: {err}");
            });
            check(&e);
        }
    }
}
