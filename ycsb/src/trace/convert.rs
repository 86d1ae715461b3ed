//! Converters from public cache traces into ours: Meta's kvcache CSV (CacheLib),
//! Twitter's cache-trace CSV and libCacheSim's oracleGeneral binary.

use super::csv::{csv_rows, field, invalid, num, open, parse_error, read_error};
use super::native::{le_u32, le_u64};
use super::record::{Record, Trace, TraceOp, key_of_id, pad};
use crate::error::{Error, Result};
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Meta's key-value cache trace as published in CacheLib (kvcache traces): columns by
/// header name (`op_time` in seconds, `key`, `key_size`, `op`, `op_count`, `size`);
/// `op_count` repeats the request; GET and GET_LEASE become GET, SET and SET_LEASE
/// become PUT, DELETE stays; other ops are counted as unknown.
pub fn convert_meta(path: &Path) -> Result<Trace> {
    let (c, rows) = csv_rows(path)?;
    let (ct, ck, cks) = (
        c.need("op_time", path)?,
        c.need("key", path)?,
        c.need("key_size", path)?,
    );
    let (co, cn, cv) = (
        c.need("op", path)?,
        c.need("op_count", path)?,
        c.need("size", path)?,
    );
    let mut t = Trace::default();
    let mut first: Option<u64> = None;
    for row in rows {
        let (line_no, line) = row?;
        let cells: Vec<&str> = line.split(',').collect();
        let time_s: u64 = num(
            field(&cells, ct, "op_time", path, line_no)?,
            "op_time",
            path,
            line_no,
        )?;
        let op_name = field(&cells, co, "op", path, line_no)?;
        let count: u64 = num(
            field(&cells, cn, "op_count", path, line_no)?,
            "op_count",
            path,
            line_no,
        )?;
        let op = match op_name {
            "GET" | "GET_LEASE" => TraceOp::Get,
            "SET" | "SET_LEASE" => TraceOp::Put,
            "DELETE" => TraceOp::Delete,
            other => {
                *t.unknown_ops.entry(other.to_string()).or_insert(0) += count.max(1);
                continue;
            }
        };
        let key = field(&cells, ck, "key", path, line_no)?;
        if key.is_empty() {
            return Err(parse_error(path, Some(line_no), "empty key".into()));
        }
        let key_size: usize = num(
            field(&cells, cks, "key_size", path, line_no)?,
            "key_size",
            path,
            line_no,
        )?;
        let size: u32 = num(
            field(&cells, cv, "size", path, line_no)?,
            "size",
            path,
            line_no,
        )?;
        let t0 = *first.get_or_insert(time_s);
        let time_us = time_s.saturating_sub(t0) * 1_000_000;
        for _ in 0..count {
            t.records.push(Record {
                time_us,
                op,
                key: pad(key.to_string(), key_size),
                value_size: size,
                scan_len: 0,
            });
        }
    }
    Ok(t)
}

/// Twitter's cache-trace CSV (twitter/cache-trace): no header; timestamp (s),
/// anonymized key, key size, value size, client id, operation, TTL. get/gets become
/// GET; set/add/replace/cas/append/prepend PUT; delete DELETE; incr/decr RMW.
pub fn convert_twitter(path: &Path) -> Result<Trace> {
    let mut t = Trace::default();
    let mut first: Option<u64> = None;
    for (i, line) in BufReader::new(open(path)?).lines().enumerate() {
        let line_no = i + 1;
        let line = line.map_err(|e| read_error(path, line_no, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').collect();
        if cells.len() < 7 {
            return Err(parse_error(
                path,
                Some(line_no),
                format!(
                    "expected 7 fields (timestamp, key, key size, value size, client id, operation, TTL), got {}",
                    cells.len()
                ),
            ));
        }
        let time_s: u64 = num(cells[0].trim(), "timestamp", path, line_no)?;
        let key_size: usize = num(cells[2].trim(), "key size", path, line_no)?;
        let value_size: u32 = num(cells[3].trim(), "value size", path, line_no)?;
        let op = match cells[5].trim() {
            "get" | "gets" => TraceOp::Get,
            "set" | "add" | "replace" | "cas" | "append" | "prepend" => TraceOp::Put,
            "delete" => TraceOp::Delete,
            "incr" | "decr" => TraceOp::Rmw,
            other => {
                *t.unknown_ops.entry(other.to_string()).or_insert(0) += 1;
                continue;
            }
        };
        let t0 = *first.get_or_insert(time_s);
        t.records.push(Record {
            time_us: time_s.saturating_sub(t0) * 1_000_000,
            op,
            key: pad(cells[1].trim().to_string(), key_size),
            value_size,
            scan_len: 0,
        });
    }
    if t.records.is_empty() && t.unknown_ops.is_empty() {
        return Err(invalid(path, "holds no requests"));
    }
    Ok(t)
}

/// libCacheSim's oracleGeneral binary: 24-byte records (u32 time in seconds, u64
/// object id, u32 object size, i64 next access), all requests reads (GET). The format
/// has no key size: keys are replayed with `key_size` bytes.
pub fn convert_oracle(path: &Path, key_size: usize) -> Result<Trace> {
    let data = std::fs::read(path).map_err(|e| Error::io_at("reading", path, e))?;
    if data.is_empty() {
        return Err(invalid(path, "is empty"));
    }
    if data.len() % 24 != 0 {
        return Err(invalid(
            path,
            format!(
                "is truncated: {} bytes is not a whole number of 24-byte oracleGeneral records (the last one starts at byte {})",
                data.len(),
                data.len() / 24 * 24
            ),
        ));
    }
    let mut t = Trace::default();
    let mut first = None;
    for r in data.chunks_exact(24) {
        let time_s = le_u32(r, 0) as u64;
        let id = le_u64(r, 4);
        let size = le_u32(r, 12);
        let t0 = *first.get_or_insert(time_s);
        t.records.push(Record {
            time_us: time_s.saturating_sub(t0) * 1_000_000,
            op: TraceOp::Get,
            key: key_of_id(id, key_size),
            value_size: size,
            scan_len: 0,
        });
    }
    Ok(t)
}
