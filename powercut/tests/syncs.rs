//! (b) What a file's fsync promises: a synced write is in every crash state cut
//! after the sync; a write never synced is absent from the `synced` state and
//! present in `all`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

use common::{all_images, every_cut, file, image, nth, record_verified, states_at};
use powercut::recording::Kind;
use powercut::state::Variant;

/// Base `data` (durable before the run, 8 bytes): overwritten whole and synced,
/// then overwritten in part and appended to without a sync.
const OPS: &[&str] = &[
    "fill",
    "data",
    "0",
    "S",
    "2048",
    "fsync",
    "data",
    "fill",
    "data",
    "512",
    "U",
    "512",
    "append",
    "data",
    "tail-never-synced",
    "ack",
    "end",
];

fn synced_bytes() -> Vec<u8> {
    vec![b'S'; 2048]
}

#[test]
fn a_synced_write_is_in_every_state_cut_after_its_sync() {
    let run = record_verified("synced-in-all", &[("data", b"original")], OPS);
    let h = &run.history;
    let sync = nth(h, Kind::Fsync, 0);
    let mut after = 0;
    for (cut, s, t) in all_images(&run, 12) {
        let d = file(&t, "data");
        if cut > sync {
            after += 1;
            // every byte the unsynced overwrite did not touch is the synced byte
            assert!(
                d.len() >= 2048,
                "{:?} at {cut}: {} bytes",
                s.variant,
                d.len()
            );
            for (i, &b) in d[..2048].iter().enumerate() {
                let ok = b == b'S' || ((512..1024).contains(&i) && b == b'U');
                assert!(ok, "{:?} at cut {cut}: byte {i} is {b}", s.variant);
            }
        } else {
            // before the sync: the base, or sectors of the S write over it, at one
            // of the sizes the file had
            assert!(
                [8, 2048].contains(&d.len()),
                "{:?} at {cut}: {} bytes",
                s.variant,
                d.len()
            );
            for (i, &b) in d[..8].iter().enumerate() {
                assert!(
                    b == b"original"[i] || b == b'S',
                    "{:?} at {cut}: byte {i}",
                    s.variant
                );
            }
        }
    }
    assert!(after > 0);
}

#[test]
fn an_unsynced_write_is_absent_from_synced_and_present_in_all() {
    let run = record_verified("unsynced", &[("data", b"original")], OPS);
    let h = &run.history;
    let end = h.recording.records.len();
    let dest = run.dir.join("image");
    let states = states_at(h, end, 0, 1);
    let synced = image(h, &states[0], &dest);
    assert_eq!(states[0].variant, Variant::Synced);
    assert_eq!(file(&synced, "data"), &synced_bytes()[..]);
    let all = image(h, &states[1], &dest);
    assert_eq!(states[1].variant, Variant::All);
    let mut want = synced_bytes();
    want[512..1024].fill(b'U');
    want.extend_from_slice(b"tail-never-synced");
    assert_eq!(file(&all, "data"), &want[..]);
    // and before the sync, the synced state is the base: the sync is what promised
    let sync = nth(h, Kind::Fsync, 0);
    let before = states_at(h, sync, 0, 1);
    assert_eq!(file(&image(h, &before[0], &dest), "data"), b"original");
}

#[test]
fn random_states_tear_unsynced_writes_at_sectors_only() {
    let run = record_verified("torn", &[("data", b"original")], OPS);
    let h = &run.history;
    let (mut torn, mut seen) = (0, 0);
    for cut in every_cut(h) {
        for s in states_at(h, cut, 30, 11) {
            let t = image(h, &s, &run.dir.join("image"));
            let d = file(&t, "data");
            if d.len() < 1024 {
                continue;
            }
            seen += 1;
            let u = d[512..1024].iter().filter(|&&b| b == b'U').count();
            // the overwrite is one sector: all of it or none of it
            assert!(
                u == 0 || u == 512,
                "a sector half written: {u} bytes at cut {cut}"
            );
            if u == 0 && cut == h.recording.records.len() {
                torn += 1;
            }
        }
    }
    assert!(
        seen > 0 && torn > 0,
        "no random state dropped the overwrite"
    );
}

#[test]
fn fdatasync_and_sync_writes_count_as_syncs() {
    let ops = [
        "fill",
        "d",
        "0",
        "Q",
        "100",
        "fdatasync",
        "d",
        "fill",
        "d",
        "0",
        "R",
        "10",
    ];
    let run = record_verified("fdatasync", &[("d", b"")], &ops);
    let h = &run.history;
    let end = h.recording.records.len();
    let s = &states_at(h, end, 0, 1)[0];
    let t = image(h, s, &run.dir.join("image"));
    assert_eq!(file(&t, "d"), &[b'Q'; 100][..]);
}

#[test]
fn a_write_over_many_sectors_tears_at_sector_edges() {
    // 8 sectors synced as S, then 8 sectors of T never synced over them
    let ops = [
        "fill", "d", "0", "S", "4096", "fsync", "d", "fill", "d", "0", "T", "4096",
    ];
    let run = record_verified("tear", &[("d", b"")], &ops);
    let h = &run.history;
    let end = h.recording.records.len();
    let mut mixed = 0;
    for s in states_at(h, end, 60, 5) {
        let t = image(h, &s, &run.dir.join("image"));
        let d = file(&t, "d");
        assert_eq!(d.len(), 4096);
        let mut kinds = Vec::new();
        for sector in d.chunks(512) {
            assert!(
                sector.iter().all(|&b| b == sector[0]) && (sector[0] == b'S' || sector[0] == b'T'),
                "a sector of mixed bytes in {:?}",
                s.variant
            );
            kinds.push(sector[0]);
        }
        if kinds.contains(&b'S') && kinds.contains(&b'T') {
            mixed += 1;
        }
    }
    assert!(mixed > 0, "no random state tore the write");
}

#[test]
fn an_o_dsync_write_is_durable_with_the_size_that_reads_it() {
    // an unsynced append grows the file; an O_DSYNC write inside it then returns:
    // its bytes must read back after any cut, so the size must cover them
    let ops = [
        "append",
        "d",
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "dsync",
        "d",
        "0",
        "DSYNC",
        "ack",
        "dsynced",
    ];
    let run = record_verified("dsync", &[("d", b"")], &ops);
    let h = &run.history;
    let ack = common::line(h, "dsynced");
    for (cut, s, t) in all_images(&run, 12) {
        if cut > ack {
            let d = file(&t, "d");
            assert!(
                d.starts_with(b"DSYNC"),
                "{:?} at cut {cut}: {d:?}",
                s.variant
            );
        }
    }
}
