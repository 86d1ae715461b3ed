//! (c) Names: a rename not followed by an fsync of its directory may be undone by
//! a power cut; once the directory was fsynced it is in every state.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

use common::{all_images, line, nth, record_verified};
use powercut::recording::Kind;

/// The atomic replacement of `current`: write a temporary file, sync it, rename
/// it over, sync the directory.
const OPS: &[&str] = &[
    "write",
    "tmp",
    "0",
    "version-2",
    "fsync",
    "tmp",
    "rename",
    "tmp",
    "current",
    "ack",
    "renamed",
    "fsync",
    ".",
    "ack",
    "dir-synced",
];

#[test]
fn a_rename_is_durable_only_after_its_directory_is_synced() {
    let run = record_verified("rename", &[("current", b"version-1")], OPS);
    let h = &run.history;
    let rename = nth(h, Kind::Rename, 0);
    let dir_sync = nth(h, Kind::Fsync, 1);
    assert!(rename < line(h, "renamed") && line(h, "renamed") < dir_sync);
    let (mut undone, mut checked_after) = (0, 0);
    for (cut, s, t) in all_images(&run, 12) {
        let cur = match t.get("current") {
            Some(Some(b)) => b.as_slice(),
            other => panic!("{:?} at {cut}: current is {other:?}", s.variant),
        };
        // never a mix: the old file or the new one whole (it was synced)
        assert!(
            cur == b"version-1" || cur == b"version-2",
            "{:?} at cut {cut}: {cur:?}",
            s.variant
        );
        if cut > rename && cut <= dir_sync && cur == b"version-1" {
            undone += 1;
        }
        if cut > dir_sync {
            checked_after += 1;
            assert_eq!(cur, b"version-2", "{:?} at cut {cut}", s.variant);
            assert!(!t.contains_key("tmp"), "{:?} at cut {cut}", s.variant);
        }
        if cut <= rename {
            assert_eq!(cur, b"version-1", "{:?} at cut {cut}", s.variant);
        }
    }
    assert!(
        undone > 0,
        "no state between the rename and the directory's sync undid it"
    );
    assert!(checked_after > 0);
}

#[test]
fn a_file_sync_does_not_make_its_new_name_durable() {
    let ops = [
        "write",
        "new",
        "0",
        "bytes",
        "fsync",
        "new",
        "ack",
        "file-synced",
    ];
    let run = record_verified("create", &[], &ops);
    let h = &run.history;
    let ack = line(h, "file-synced");
    let mut missing = 0;
    for (cut, s, t) in all_images(&run, 4) {
        if cut > ack && !t.contains_key("new") {
            missing += 1;
            // a process kill (`all`) keeps every name; only a power cut loses it
            assert_ne!(s.variant, powercut::state::Variant::All);
        }
        if let Some(Some(b)) = t.get("new")
            && cut > ack
        {
            assert_eq!(b, b"bytes");
        }
    }
    assert!(
        missing > 0,
        "the new name survived every cut without a directory sync"
    );
}
