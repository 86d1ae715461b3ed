//! What an operation's reply counts as ([`Outcome`]), and how many user bytes it read.

use crate::measure::Outcome;
use crate::record;
use kvapi::Reply;

static FIRST_ERROR: std::sync::OnceLock<String> = std::sync::OnceLock::new();
/// The message of the first write an engine refused for its memory budget.
static OVER_BUDGET: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The kind an engine gives a write refused because it would not fit its memory
/// budget.
pub const OVER_BUDGET_KIND: &str = "OVER_BUDGET";

/// Records the message of the first failed operation (for the final error line) and
/// gives its kind, the status it is counted under. A refusal for the memory budget
/// ends the phase (see [`over_budget`]).
fn note_error(e: &kvapi::Error) -> &'static str {
    FIRST_ERROR.get_or_init(|| e.to_string());
    let kind = e.kind();
    if kind == OVER_BUDGET_KIND {
        OVER_BUDGET.get_or_init(|| e.to_string());
    }
    kind
}

/// The first refusal for the memory budget in this process: once an engine no longer
/// fits its budget every phase stops, and the run is reported as over budget.
pub fn over_budget() -> Option<&'static str> {
    OVER_BUDGET.get().map(String::as_str)
}

/// The message of the first operation that failed in this process, if any.
pub fn first_error() -> Option<&'static str> {
    FIRST_ERROR.get().map(String::as_str)
}

/// Whether reads verify what they get (`dataintegrity`), and the records' field count.
#[derive(Clone, Copy, Debug)]
pub(super) struct Verify {
    pub(super) on: bool,
    pub(super) fields: usize,
}

impl Verify {
    pub(super) fn new(on: bool, op: &crate::workload::Op) -> Verify {
        Verify {
            on,
            fields: op.fields,
        }
    }
}

pub(super) fn outcome_of(r: &kvapi::Result<()>) -> Outcome {
    match r {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Error(note_error(e)),
    }
}

/// The outcome of a read that returned `v`, and the bytes (key and value) it read.
fn value_outcome(key: &[u8], v: Option<&Vec<u8>>, verify: Verify) -> (Outcome, u64) {
    match v {
        Some(v) if verify.on && !record::verify(key, v, verify.fields) => {
            (Outcome::Corrupt, (key.len() + v.len()) as u64)
        }
        Some(v) => (Outcome::Ok, (key.len() + v.len()) as u64),
        None => (Outcome::NotFound, 0),
    }
}

/// The outcome of a scan that returned `pairs`, and the bytes it read.
fn pairs_outcome(pairs: &[kvapi::Pair], verify: Verify) -> (Outcome, u64) {
    let bytes = pairs.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
    if verify.on
        && pairs
            .iter()
            .any(|(k, v)| !record::verify(k, v, verify.fields))
    {
        (Outcome::Corrupt, bytes)
    } else {
        (Outcome::Ok, bytes)
    }
}

pub(super) fn read_outcome(
    key: &[u8],
    r: &kvapi::Result<Option<Vec<u8>>>,
    verify: Verify,
) -> (Outcome, u64) {
    match r {
        Ok(v) => value_outcome(key, v.as_ref(), verify),
        Err(e) => (Outcome::Error(note_error(e)), 0),
    }
}

pub(super) fn scan_outcome(r: &kvapi::Result<Vec<kvapi::Pair>>, verify: Verify) -> (Outcome, u64) {
    match r {
        Ok(pairs) => pairs_outcome(pairs, verify),
        Err(e) => (Outcome::Error(note_error(e)), 0),
    }
}

/// The outcome of an asynchronous request and the user bytes it read.
pub(super) fn reply_outcome(
    key: &[u8],
    r: &kvapi::Result<Reply>,
    verify: Verify,
) -> (Outcome, u64) {
    match r {
        Ok(Reply::Done) => (Outcome::Ok, 0),
        Ok(Reply::Value(v)) => value_outcome(key, v.as_ref(), verify),
        Ok(Reply::Pairs(p)) => pairs_outcome(p, verify),
        Err(e) => (Outcome::Error(note_error(e)), 0),
    }
}
