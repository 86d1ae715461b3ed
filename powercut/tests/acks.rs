//! (d) An acknowledgement printed after an fsync returned sees that data in every
//! state cut after the acknowledgement, at every cut the planner picks and at every
//! record; an acknowledgement printed before its sync does not, and the same check
//! catches it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

use common::{Run, all_images, file, line, planned, record_verified};

const N: usize = 12;

/// Appends record i to `log` and acknowledges it, the sync between them or (when
/// `sync_first` is false) after the acknowledgement.
fn ops(sync_first: bool) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for i in 0..N {
        v.extend(["append".into(), "log".into(), format!("rec-{i};")]);
        // some bytes no acknowledgement covers
        v.extend(["append".into(), "scratch".into(), format!("noise-{i};")]);
        if sync_first {
            v.extend([
                "fsync".into(),
                "log".into(),
                "ack".into(),
                format!("ack-{i}"),
            ]);
        } else {
            v.extend([
                "ack".into(),
                format!("ack-{i}"),
                "fsync".into(),
                "log".into(),
            ]);
        }
    }
    v
}

fn record(name: &str, sync_first: bool) -> Run {
    let ops = ops(sync_first);
    let refs: Vec<&str> = ops.iter().map(String::as_str).collect();
    // the log exists and its name is durable before the run: the test is the bytes
    record_verified(name, &[("log", b""), ("scratch", b"")], &refs)
}

/// Every (cut, ack) pair where a state after the ack lacks the acked record.
fn broken_promises(run: &Run) -> Vec<String> {
    let h = &run.history;
    let acks: Vec<usize> = (0..N).map(|i| line(h, &format!("ack-{i}"))).collect();
    let mut broken = Vec::new();
    for (cut, s, t) in all_images(run, 8) {
        let log = file(&t, "log");
        for (i, &a) in acks.iter().enumerate() {
            let want = format!("rec-{i};");
            if cut > a && !log.windows(want.len()).any(|w| w == want.as_bytes()) {
                broken.push(format!("{:?} at cut {cut} lacks {want}", s.variant));
            }
        }
    }
    broken
}

#[test]
fn an_acknowledgement_after_a_sync_holds_in_every_state_after_it() {
    let run = record("ack-after-sync", true);
    assert_eq!(run.printed.len(), N);
    let broken = broken_promises(&run);
    assert!(broken.is_empty(), "{broken:?}");
    // the planner cuts just after every acknowledgement and every sync
    let h = &run.history;
    let acks: Vec<usize> = (0..N).map(|i| line(h, &format!("ack-{i}"))).collect();
    let cuts: Vec<usize> = planned(h, &acks).iter().map(|c| c.index).collect();
    for a in &acks {
        assert!(
            cuts.contains(&(a + 1)),
            "no cut after the ack at {a}: {cuts:?}"
        );
    }
    for s in &h.syncs {
        assert!(
            cuts.contains(&(s.index + 1)),
            "no cut after the sync at {}",
            s.index
        );
    }
}

#[test]
fn an_acknowledgement_before_its_sync_is_caught() {
    let run = record("ack-before-sync", false);
    let broken = broken_promises(&run);
    // the cut just after each early ack, in the synced state, lacks its record
    assert!(broken.len() >= N, "{broken:?}");
    assert!(broken.iter().all(|b| !b.starts_with("All")), "{broken:?}");
}

#[test]
fn acknowledgements_from_parallel_writers_hold_in_every_state_after_them() {
    let (k, n) = (4, 25);
    let base: Vec<(String, Vec<u8>)> = (0..k).map(|t| (format!("t{t}"), Vec::new())).collect();
    let base: Vec<(&str, &[u8])> = base
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let (ks, ns) = (k.to_string(), n.to_string());
    let run = record_verified("parallel", &base, &["parallel", &ks, &ns]);
    let h = &run.history;
    assert_eq!(run.printed.len(), k * n);
    let acks: Vec<(usize, usize, usize)> = (0..k)
        .flat_map(|t| (0..n).map(move |i| (t, i)))
        .map(|(t, i)| (t, i, line(h, &format!("ack-t{t}-{i}"))))
        .collect();
    let cuts = planned(h, &acks.iter().map(|a| a.2).collect::<Vec<_>>());
    let dest = run.dir.join("image");
    let mut checked = 0;
    for c in &cuts {
        for s in common::states_at(h, c.index, 3, 9) {
            let t = common::image(h, &s, &dest);
            for &(th, i, a) in &acks {
                if c.index > a {
                    let want = format!("t{th}-{i};");
                    let log = file(&t, &format!("t{th}"));
                    assert!(
                        log.windows(want.len()).any(|w| w == want.as_bytes()),
                        "{:?} at cut {} lacks {want}",
                        s.variant,
                        c.index
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > k * n);
}
