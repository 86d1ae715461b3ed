//! One operation through the blocking interface, recorded.

use super::outcome::{outcome_of, read_outcome, scan_outcome};
use super::versions::Versions;
use crate::measure::{Outcome, Recorder};
use crate::value;
use crate::workload::{Op, OpKind};
use kvapi::Engine;
use std::time::Instant;

/// Runs `op` and records it; `intended` is when it should have started (a target
/// rate's or a timed trace's schedule), `buf` the writer's value buffer.
pub(super) fn exec_blocking(
    engine: &dyn Engine,
    op: &Op,
    versions: &mut Versions,
    buf: &mut Vec<u8>,
    verify: bool,
    rec: &mut Recorder,
    intended: Option<Instant>,
) {
    let key = op.key.as_bytes();
    let written = |len: usize| (key.len() + len) as u64;
    let start = Instant::now();
    match op.kind {
        OpKind::Read => {
            let (o, n) = read_outcome(key, &engine.get(key), verify);
            let end = Instant::now();
            rec.record(op.kind, intended, start, end, o);
            rec.bytes(end, n, 0);
        }
        OpKind::Update | OpKind::Insert => {
            value::make_into(key, versions.take(), op.value_len, buf);
            let r = if op.kind == OpKind::Insert {
                engine.insert(key, buf)
            } else {
                engine.update(key, buf)
            };
            let end = Instant::now();
            rec.record(op.kind, intended, start, end, outcome_of(&r));
            rec.bytes(end, 0, written(buf.len()));
        }
        OpKind::Delete => {
            let r = engine.delete(key);
            rec.record(op.kind, intended, start, Instant::now(), outcome_of(&r));
        }
        OpKind::Scan => {
            let (o, n) = scan_outcome(&engine.scan(key, op.scan_len), verify);
            let end = Instant::now();
            rec.record(op.kind, intended, start, end, o);
            rec.bytes(end, n, 0);
        }
        OpKind::ReadModifyWrite => {
            let (o, n) = read_outcome(key, &engine.get(key), verify);
            let mid = Instant::now();
            rec.record_part(OpKind::Read, intended, start, mid, o.clone());
            value::make_into(key, versions.take(), op.value_len, buf);
            let r = engine.update(key, buf);
            let end = Instant::now();
            rec.record_part(OpKind::Update, None, mid, end, outcome_of(&r));
            let whole = if matches!(o, Outcome::Ok | Outcome::NotFound) {
                outcome_of(&r)
            } else {
                o
            };
            rec.record(op.kind, intended, start, end, whole);
            rec.bytes(end, n, written(buf.len()));
        }
    }
}
