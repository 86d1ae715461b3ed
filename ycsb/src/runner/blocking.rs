//! One operation through the blocking interface, recorded.

use super::outcome::{Verify, outcome_of, read_outcome, scan_outcome};
use super::versions::Versions;
use crate::measure::{Outcome, Record};
use crate::record;
use crate::workload::{Op, OpKind};
use kvapi::Engine;
use std::time::Instant;

/// Writes the new record of an update into `buf`: the whole record at a new version,
/// or (one-field update) the current record `old` with that field rewritten. `None`:
/// a one-field update of a key that has no record (nothing is written, as YCSB's
/// key-value bindings answer NOT_FOUND).
fn new_record(op: &Op, old: Option<&[u8]>, version: u64, buf: &mut Vec<u8>) -> Option<()> {
    let key = op.key.as_bytes();
    match op.field {
        None => record::make_into(key, version, op.value_len, op.fields, buf),
        Some(f) => record::update_field_into(key, old?, f, version, op.fields, buf),
    }
    Some(())
}

/// Runs `op` and records it; `intended` is when it should have started (a target
/// rate's or a timed trace's schedule), `buf` the writer's value buffer.
pub(super) fn exec_blocking(
    engine: &dyn Engine,
    op: &Op,
    versions: &mut Versions,
    buf: &mut Vec<u8>,
    verify: bool,
    rec: &mut dyn Record,
    intended: Option<Instant>,
) {
    let key = op.key.as_bytes();
    let check = Verify::new(verify, op);
    let written = |len: usize| (key.len() + len) as u64;
    let start = Instant::now();
    match op.kind {
        OpKind::Read => {
            let (o, n) = read_outcome(key, &engine.get(key), check);
            let end = Instant::now();
            let mut rec = rec.recorder();
            rec.record(op.kind, intended, start, end, o);
            rec.bytes(end, n, 0);
        }
        OpKind::Insert => {
            record::make_into(key, versions.take(), op.value_len, op.fields, buf);
            let r = engine.insert(key, buf);
            let end = Instant::now();
            let mut rec = rec.recorder();
            rec.record(op.kind, intended, start, end, outcome_of(&r));
            rec.bytes(end, 0, written(buf.len()));
        }
        OpKind::Update => {
            // one field: read the record, replace the field, write it back (one
            // UPDATE, as YCSB's key-value bindings measure it)
            let (old, read) = match op.field {
                None => (Ok(None), 0),
                Some(_) => {
                    let r = engine.get(key);
                    let n = r.as_ref().ok().and_then(|v| v.as_ref()).map_or(0, Vec::len);
                    (r, n)
                }
            };
            let (o, w) = match old {
                Err(e) => (outcome_of(&Err(e)), 0),
                Ok(old) => match new_record(op, old.as_deref(), versions.take(), buf) {
                    None => (Outcome::NotFound, 0),
                    Some(()) => (outcome_of(&engine.update(key, buf)), written(buf.len())),
                },
            };
            let end = Instant::now();
            let mut rec = rec.recorder();
            rec.record(op.kind, intended, start, end, o);
            rec.bytes(end, (read + key.len() * usize::from(read > 0)) as u64, w);
        }
        OpKind::Delete => {
            let r = engine.delete(key);
            let end = Instant::now();
            rec.recorder()
                .record(op.kind, intended, start, end, outcome_of(&r));
        }
        OpKind::Scan => {
            let (o, n) = scan_outcome(&engine.scan(key, op.scan_len), check);
            let end = Instant::now();
            let mut rec = rec.recorder();
            rec.record(op.kind, intended, start, end, o);
            rec.bytes(end, n, 0);
        }
        OpKind::ReadModifyWrite => {
            let got = engine.get(key);
            let (o, n) = read_outcome(key, &got, check);
            let mid = Instant::now();
            rec.recorder()
                .record_part(OpKind::Read, intended, start, mid, o.clone());
            let old = got.ok().flatten();
            let (r, w) = match new_record(op, old.as_deref(), versions.take(), buf) {
                None => (Outcome::NotFound, 0),
                Some(()) => (outcome_of(&engine.update(key, buf)), written(buf.len())),
            };
            let end = Instant::now();
            let mut rec = rec.recorder();
            rec.record_part(OpKind::Update, None, mid, end, r.clone());
            let whole = if matches!(o, Outcome::Ok | Outcome::NotFound) {
                r
            } else {
                o
            };
            rec.record(op.kind, intended, start, end, whole);
            rec.bytes(end, n, w);
        }
    }
}
