//! What a trace holds: requests ([`Record`]) of five operations ([`TraceOp`]), and
//! the keys replayed for the binary form's key ids.

use crate::workload::OpKind;
use std::collections::BTreeMap;

/// A trace operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TraceOp {
    Get = 0,
    Put = 1,
    Delete = 2,
    Scan = 3,
    Rmw = 4,
}

impl TraceOp {
    pub fn name(self) -> &'static str {
        match self {
            TraceOp::Get => "GET",
            TraceOp::Put => "PUT",
            TraceOp::Delete => "DELETE",
            TraceOp::Scan => "SCAN",
            TraceOp::Rmw => "RMW",
        }
    }
    pub fn parse(s: &str) -> Option<TraceOp> {
        Some(match s {
            "GET" => TraceOp::Get,
            "PUT" => TraceOp::Put,
            "DELETE" => TraceOp::Delete,
            "SCAN" => TraceOp::Scan,
            "RMW" => TraceOp::Rmw,
            _ => return None,
        })
    }
    pub(super) fn from_code(c: u8) -> Option<TraceOp> {
        [
            TraceOp::Get,
            TraceOp::Put,
            TraceOp::Delete,
            TraceOp::Scan,
            TraceOp::Rmw,
        ]
        .get(c as usize)
        .copied()
    }
    pub fn kind(self) -> OpKind {
        match self {
            TraceOp::Get => OpKind::Read,
            TraceOp::Put => OpKind::Update,
            TraceOp::Delete => OpKind::Delete,
            TraceOp::Scan => OpKind::Scan,
            TraceOp::Rmw => OpKind::ReadModifyWrite,
        }
    }
}

/// One request of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub time_us: u64,
    pub op: TraceOp,
    pub key: String,
    pub value_size: u32,
    pub scan_len: u32,
}

/// A trace in memory, with what reading it found.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub records: Vec<Record>,
    /// Requests of operations the format has no equivalent for, by name: counted and
    /// reported, not replayed.
    pub unknown_ops: BTreeMap<String, u64>,
}

pub(super) fn fnv64(b: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &x in b {
        h ^= x as u64;
        h = h.wrapping_mul(0x100_0000_01B3);
    }
    h
}

/// The key replayed for a key id of the binary form.
pub fn key_of_id(id: u64, key_size: usize) -> String {
    pad(format!("k{id:016x}"), key_size)
}

pub(super) fn pad(mut key: String, size: usize) -> String {
    while key.len() < size {
        key.push('_');
    }
    key
}
