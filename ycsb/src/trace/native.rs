//! Our trace format, in its CSV and binary forms (described in the module above):
//! reading either (told apart by the binary magic) and writing either.

use super::csv::{csv_rows, field, invalid, num, open, parse_error};
use super::record::{Record, Trace, TraceOp, fnv64, key_of_id, pad};
use crate::error::{Error, Result};
use std::io::{Read, Write};
use std::path::Path;

/// The first bytes of the binary form.
pub const MAGIC: &[u8; 8] = b"KVTBTRC1";
/// Bytes of a record of the binary form.
const RECORD: usize = 32;

/// The little-endian u32 at `o` (`o + 4 <= b.len()`).
pub(super) fn le_u32(b: &[u8], o: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[o..o + 4]);
    u32::from_le_bytes(x)
}

/// The little-endian u64 at `o` (`o + 8 <= b.len()`).
pub(super) fn le_u64(b: &[u8], o: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(x)
}

/// Reads a trace in our CSV or binary form (told apart by the binary magic).
pub fn read(path: &Path) -> Result<Trace> {
    let mut f = open(path)?;
    let mut head = [0u8; 8];
    let n = f
        .read(&mut head)
        .map_err(|e| Error::io_at("reading", path, e))?;
    if n == 0 {
        return Err(invalid(path, "is empty"));
    }
    if n == 8 && &head == MAGIC {
        read_bin(path)
    } else {
        read_csv(path)
    }
}

/// Reads our CSV form.
pub fn read_csv(path: &Path) -> Result<Trace> {
    let (c, rows) = csv_rows(path)?;
    let (ct, co, ck) = (
        c.need("time_us", path)?,
        c.need("op", path)?,
        c.need("key", path)?,
    );
    let (cks, cv, cs) = (
        c.need("key_size", path)?,
        c.need("value_size", path)?,
        c.need("scan_length", path)?,
    );
    let mut t = Trace::default();
    for row in rows {
        let (line_no, line) = row?;
        let cells: Vec<&str> = line.split(',').collect();
        let op_name = field(&cells, co, "op", path, line_no)?;
        let Some(op) = TraceOp::parse(op_name) else {
            *t.unknown_ops.entry(op_name.to_string()).or_insert(0) += 1;
            continue;
        };
        let key = field(&cells, ck, "key", path, line_no)?;
        let key_size: usize = num(
            field(&cells, cks, "key_size", path, line_no)?,
            "key_size",
            path,
            line_no,
        )?;
        t.records.push(Record {
            time_us: num(
                field(&cells, ct, "time_us", path, line_no)?,
                "time_us",
                path,
                line_no,
            )?,
            op,
            key: pad(key.to_string(), key_size),
            value_size: num(
                field(&cells, cv, "value_size", path, line_no)?,
                "value_size",
                path,
                line_no,
            )?,
            scan_len: num(
                field(&cells, cs, "scan_length", path, line_no)?,
                "scan_length",
                path,
                line_no,
            )?,
        });
    }
    Ok(t)
}

/// Reads our binary form.
pub fn read_bin(path: &Path) -> Result<Trace> {
    let data = std::fs::read(path).map_err(|e| Error::io_at("reading", path, e))?;
    if data.len() < 32 || &data[..8] != MAGIC {
        return Err(invalid(
            path,
            "is not a kvell-testbed binary trace (bad or short header)",
        ));
    }
    let u32_at = |o: usize| le_u32(&data, o);
    let u64_at = |o: usize| le_u64(&data, o);
    let (version, rsize, count) = (u32_at(8), u32_at(12) as usize, u64_at(16));
    if version != 1 || rsize != RECORD {
        return Err(parse_error(
            path,
            None,
            format!("unsupported trace version {version} or record size {rsize}"),
        ));
    }
    let body = data.len() - 32;
    if count == 0 {
        return Err(invalid(path, "holds no records"));
    }
    if (body as u64) < count * RECORD as u64 || body % RECORD != 0 {
        return Err(invalid(
            path,
            format!(
                "is truncated: the header promises {count} records ({} bytes), the file holds {body} bytes after the header",
                count * RECORD as u64
            ),
        ));
    }
    let mut t = Trace::default();
    for i in 0..count as usize {
        let o = 32 + i * RECORD;
        let op_code = data[o + 26];
        let Some(op) = TraceOp::from_code(op_code) else {
            *t.unknown_ops.entry(format!("code {op_code}")).or_insert(0) += 1;
            continue;
        };
        let key_size = u16::from_le_bytes([data[o + 24], data[o + 25]]) as usize;
        t.records.push(Record {
            time_us: u64_at(o),
            op,
            key: key_of_id(u64_at(o + 8), key_size),
            value_size: u32_at(o + 16),
            scan_len: u32_at(o + 20),
        });
    }
    Ok(t)
}

/// Writes our CSV form.
pub fn write_csv(records: &[Record], out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "time_us,op,key,key_size,value_size,scan_length")?;
    for r in records {
        writeln!(
            out,
            "{},{},{},{},{},{}",
            r.time_us,
            r.op.name(),
            r.key,
            r.key.len(),
            r.value_size,
            r.scan_len
        )?;
    }
    Ok(())
}

/// Writes our binary form (keys become ids: the FNV-1a hash of their text, or the id
/// a `k<hex id>` key already carries).
pub fn write_bin(records: &[Record], out: &mut dyn Write) -> std::io::Result<()> {
    out.write_all(MAGIC)?;
    out.write_all(&1u32.to_le_bytes())?;
    out.write_all(&(RECORD as u32).to_le_bytes())?;
    out.write_all(&(records.len() as u64).to_le_bytes())?;
    out.write_all(&0u64.to_le_bytes())?;
    for r in records {
        let trimmed = r.key.trim_end_matches('_');
        let id = trimmed
            .strip_prefix('k')
            .filter(|h| h.len() == 16)
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .unwrap_or_else(|| fnv64(r.key.as_bytes()));
        let mut rec = [0u8; RECORD];
        rec[0..8].copy_from_slice(&r.time_us.to_le_bytes());
        rec[8..16].copy_from_slice(&id.to_le_bytes());
        rec[16..20].copy_from_slice(&r.value_size.to_le_bytes());
        rec[20..24].copy_from_slice(&r.scan_len.to_le_bytes());
        rec[24..26].copy_from_slice(&(r.key.len().min(u16::MAX as usize) as u16).to_le_bytes());
        rec[26] = r.op as u8;
        out.write_all(&rec)?;
    }
    Ok(())
}
