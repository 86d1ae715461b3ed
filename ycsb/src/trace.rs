//! Traces: a format of our own (CSV and a compact binary form), converters from
//! public cache traces, and the conversion of a trace into operations to replay.
//!
//! CSV, one header line then one request per line; columns are found by name:
//!
//! ```text
//! time_us,op,key,key_size,value_size,scan_length
//! 0,GET,user6284781860667377211,23,0,0
//! ```
//!
//! `time_us` is the request's time in microseconds from the start of the trace (0 for
//! a closed-loop trace), `op` one of GET, PUT, DELETE, SCAN, RMW. A `key_size` larger
//! than the key's text pads the key with `_` to that size (converted traces whose keys
//! are hashes keep their original key sizes that way).
//!
//! Binary (little-endian), a 32-byte header then 32-byte records:
//!
//! ```text
//! header: magic "KVTBTRC1" (8) | version u32 = 1 | record size u32 = 32 | records u64 | flags u64 = 0
//! record: time_us u64 | key id u64 | value_size u32 | scan_length u32 | key_size u16 | op u8 | 0 u8 | 0 u32
//! ```
//!
//! The binary form keeps a key's identity as a 64-bit id (the FNV-1a hash of the key
//! text, or the trace's own object id) and its size; the key replayed is `k` followed
//! by the id in hex, padded with `_` to the key size.

use crate::workload::{Op, OpKind};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::time::Duration;

pub const MAGIC: &[u8; 8] = b"KVTBTRC1";
const RECORD: usize = 32;

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
    fn from_code(c: u8) -> Option<TraceOp> {
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

fn fnv64(b: &[u8]) -> u64 {
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

fn pad(mut key: String, size: usize) -> String {
    while key.len() < size {
        key.push('_');
    }
    key
}

fn open(path: &Path) -> Result<std::fs::File, String> {
    std::fs::File::open(path).map_err(|e| format!("cannot open trace {}: {e}", path.display()))
}

/// Column positions found by header name.
struct Columns(HashMap<String, usize>);

impl Columns {
    fn new(header: &str) -> Columns {
        Columns(
            header
                .split(',')
                .enumerate()
                .map(|(i, c)| (c.trim().to_string(), i))
                .collect(),
        )
    }
    fn need(&self, name: &str, path: &Path) -> Result<usize, String> {
        self.0
            .get(name)
            .copied()
            .ok_or_else(|| format!("{}: the header has no '{name}' column", path.display()))
    }
}

fn field<'a>(
    cells: &[&'a str],
    i: usize,
    name: &str,
    path: &Path,
    line: usize,
) -> Result<&'a str, String> {
    cells.get(i).map(|s| s.trim()).ok_or_else(|| {
        format!(
            "{}, line {line}: missing the '{name}' field",
            path.display()
        )
    })
}

fn num<T: std::str::FromStr>(s: &str, name: &str, path: &Path, line: usize) -> Result<T, String> {
    s.parse().map_err(|_| {
        format!(
            "{}, line {line}: '{name}' is not a non-negative integer: '{s}'",
            path.display()
        )
    })
}

/// Non-empty data lines of a CSV file with their line numbers.
type Rows = Box<dyn Iterator<Item = Result<(usize, String), String>>>;

/// The header's columns and the data lines of a CSV file with a header.
fn csv_rows(path: &Path) -> Result<(Columns, Rows), String> {
    let mut lines = BufReader::new(open(path)?).lines();
    let header = match lines.next() {
        Some(h) => h.map_err(|e| format!("reading {}: {e}", path.display()))?,
        None => return Err(format!("{} is empty", path.display())),
    };
    let shown = path.display().to_string();
    let rows = lines.enumerate().filter_map(move |(i, line)| match line {
        Ok(l) if l.trim().is_empty() => None,
        Ok(l) => Some(Ok((i + 2, l))),
        Err(e) => Some(Err(format!("reading {shown}, line {}: {e}", i + 2))),
    });
    Ok((Columns::new(&header), Box::new(rows)))
}

/// Reads a trace in our CSV or binary form (told apart by the binary magic).
pub fn read(path: &Path) -> Result<Trace, String> {
    let mut f = open(path)?;
    let mut head = [0u8; 8];
    let n = f
        .read(&mut head)
        .map_err(|e| format!("reading {}: {e}", path.display()))?;
    if n == 0 {
        return Err(format!("{} is empty", path.display()));
    }
    if n == 8 && &head == MAGIC {
        read_bin(path)
    } else {
        read_csv(path)
    }
}

/// Reads our CSV form.
pub fn read_csv(path: &Path) -> Result<Trace, String> {
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
pub fn read_bin(path: &Path) -> Result<Trace, String> {
    let data = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    if data.len() < 32 || &data[..8] != MAGIC {
        return Err(format!(
            "{} is not a kvell-testbed binary trace (bad or short header)",
            path.display()
        ));
    }
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().expect("8 bytes"));
    let (version, rsize, count) = (u32_at(8), u32_at(12) as usize, u64_at(16));
    if version != 1 || rsize != RECORD {
        return Err(format!(
            "{}: unsupported trace version {version} or record size {rsize}",
            path.display()
        ));
    }
    let body = data.len() - 32;
    if count == 0 {
        return Err(format!("{} holds no records", path.display()));
    }
    if (body as u64) < count * RECORD as u64 || body % RECORD != 0 {
        return Err(format!(
            "{} is truncated: the header promises {count} records ({} bytes), the file holds {body} bytes after the header",
            path.display(),
            count * RECORD as u64
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

/// Meta's key-value cache trace as published in CacheLib (kvcache traces): columns by
/// header name (`op_time` in seconds, `key`, `key_size`, `op`, `op_count`, `size`);
/// `op_count` repeats the request; GET and GET_LEASE become GET, SET and SET_LEASE
/// become PUT, DELETE stays; other ops are counted as unknown.
pub fn convert_meta(path: &Path) -> Result<Trace, String> {
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
            return Err(format!("{}, line {line_no}: empty key", path.display()));
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
pub fn convert_twitter(path: &Path) -> Result<Trace, String> {
    let mut t = Trace::default();
    let mut first: Option<u64> = None;
    for (i, line) in BufReader::new(open(path)?).lines().enumerate() {
        let line_no = i + 1;
        let line = line.map_err(|e| format!("reading {}, line {line_no}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').collect();
        if cells.len() < 7 {
            return Err(format!(
                "{}, line {line_no}: expected 7 fields (timestamp, key, key size, value size, client id, operation, TTL), got {}",
                path.display(),
                cells.len()
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
        return Err(format!("{} holds no requests", path.display()));
    }
    Ok(t)
}

/// libCacheSim's oracleGeneral binary: 24-byte records (u32 time in seconds, u64
/// object id, u32 object size, i64 next access), all requests reads (GET). The format
/// has no key size: keys are replayed with `key_size` bytes.
pub fn convert_oracle(path: &Path, key_size: usize) -> Result<Trace, String> {
    let data = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    if data.is_empty() {
        return Err(format!("{} is empty", path.display()));
    }
    if data.len() % 24 != 0 {
        return Err(format!(
            "{} is truncated: {} bytes is not a whole number of 24-byte oracleGeneral records (the last one starts at byte {})",
            path.display(),
            data.len(),
            data.len() / 24 * 24
        ));
    }
    let mut t = Trace::default();
    let mut first = None;
    for r in data.chunks_exact(24) {
        let time_s = u32::from_le_bytes(r[0..4].try_into().expect("4")) as u64;
        let id = u64::from_le_bytes(r[4..12].try_into().expect("8"));
        let size = u32::from_le_bytes(r[12..16].try_into().expect("4"));
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

/// What a replay must load first: every key whose first request is not a write, with
/// a value of the first non-zero size the trace gives it (or `default_size`).
pub fn preload_set(records: &[Record], default_size: usize) -> Vec<(String, usize)> {
    let mut first_write: HashMap<&str, bool> = HashMap::new();
    let mut size: HashMap<&str, usize> = HashMap::new();
    let mut order = Vec::new();
    for r in records {
        if !first_write.contains_key(r.key.as_str()) {
            first_write.insert(&r.key, r.op == TraceOp::Put);
            order.push(r.key.as_str());
        }
        if r.value_size > 0 {
            size.entry(&r.key).or_insert(r.value_size as usize);
        }
    }
    order
        .into_iter()
        .filter(|k| !first_write[k])
        .map(|k| (k.to_string(), size.get(k).copied().unwrap_or(default_size)))
        .collect()
}

/// The operations a replay issues. With `speed`, each carries its scheduled time
/// (the trace's time divided by the speed factor).
pub fn to_ops(records: &[Record], speed: Option<f64>, default_size: usize) -> Vec<Op> {
    records
        .iter()
        .map(|r| Op {
            kind: r.op.kind(),
            keynum: -1,
            key: r.key.clone(),
            value_len: if r.value_size > 0 {
                r.value_size as usize
            } else {
                default_size
            },
            scan_len: r.scan_len.max(1) as usize,
            at: speed.map(|s| Duration::from_secs_f64(r.time_us as f64 / 1e6 / s)),
        })
        .collect()
}

/// Counts per op and value-size quantiles, to compare a trace with its targets.
pub fn describe(records: &[Record]) -> String {
    let mut by_op: BTreeMap<&str, u64> = BTreeMap::new();
    for r in records {
        *by_op.entry(r.op.name()).or_insert(0) += 1;
    }
    let n = records.len().max(1) as f64;
    let mut sizes: Vec<u32> = records
        .iter()
        .filter(|r| r.value_size > 0)
        .map(|r| r.value_size)
        .collect();
    sizes.sort_unstable();
    let q = |p: f64| {
        sizes
            .get(((sizes.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0)
    };
    let keys: std::collections::HashSet<&str> = records.iter().map(|r| r.key.as_str()).collect();
    let mix: Vec<String> = by_op
        .iter()
        .map(|(k, v)| format!("{k} {v} ({:.1}%)", *v as f64 * 100.0 / n))
        .collect();
    format!(
        "{} requests, {} distinct keys; {}; value size p1 {} B, p50 {} B, p99 {} B, max {} B",
        records.len(),
        keys.len(),
        mix.join(", "),
        q(0.01),
        q(0.5),
        q(0.99),
        sizes.last().copied().unwrap_or(0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvtestkit::conformance::TempDir;

    fn sample() -> Vec<Record> {
        vec![
            Record {
                time_us: 0,
                op: TraceOp::Get,
                key: "a".into(),
                value_size: 0,
                scan_len: 0,
            },
            Record {
                time_us: 5,
                op: TraceOp::Put,
                key: "b".into(),
                value_size: 300,
                scan_len: 0,
            },
            Record {
                time_us: 9,
                op: TraceOp::Scan,
                key: "a".into(),
                value_size: 0,
                scan_len: 10,
            },
            Record {
                time_us: 12,
                op: TraceOp::Get,
                key: "b".into(),
                value_size: 300,
                scan_len: 0,
            },
            Record {
                time_us: 20,
                op: TraceOp::Delete,
                key: "c".into(),
                value_size: 0,
                scan_len: 0,
            },
        ]
    }

    #[test]
    fn csv_round_trip() {
        let d = TempDir::new("trace-csv");
        std::fs::create_dir_all(d.path()).unwrap();
        let p = d.path().join("t.csv");
        let mut buf = Vec::new();
        write_csv(&sample(), &mut buf).unwrap();
        std::fs::write(&p, &buf).unwrap();
        assert_eq!(read(&p).unwrap().records, sample());
    }

    #[test]
    fn binary_round_trip_keeps_ids_and_sizes() {
        let d = TempDir::new("trace-bin");
        std::fs::create_dir_all(d.path()).unwrap();
        let p = d.path().join("t.bin");
        let recs: Vec<Record> = (0..10u64)
            .map(|i| Record {
                time_us: i * 7,
                op: TraceOp::Get,
                key: key_of_id(i * 1000, 24),
                value_size: i as u32,
                scan_len: 0,
            })
            .collect();
        let mut buf = Vec::new();
        write_bin(&recs, &mut buf).unwrap();
        assert_eq!(buf.len(), 32 + 10 * 32);
        std::fs::write(&p, &buf).unwrap();
        assert_eq!(read(&p).unwrap().records, recs);
        // truncated: clear error
        std::fs::write(&p, &buf[..buf.len() - 5]).unwrap();
        let e = read(&p).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
        std::fs::write(&p, &buf[..32]).unwrap();
        assert!(read(&p).unwrap_err().contains("truncated"));
        std::fs::write(&p, b"").unwrap();
        assert!(read(&p).unwrap_err().contains("empty"));
    }

    #[test]
    fn malformed_rows_name_file_and_line_and_unknown_ops_are_counted() {
        let d = TempDir::new("trace-bad");
        std::fs::create_dir_all(d.path()).unwrap();
        let p = d.path().join("t.csv");
        std::fs::write(&p, "time_us,op,key,key_size,value_size,scan_length\n0,GET,a,1,0,0\n0,FLY,a,1,0,0\n3,PUT,b,1,-4,0\n").unwrap();
        let e = read(&p).unwrap_err();
        assert!(
            e.contains("line 4") && e.contains("value_size") && e.contains("t.csv"),
            "{e}"
        );
        std::fs::write(
            &p,
            "time_us,op,key,key_size,value_size,scan_length\n0,GET,a,1,0,0\n0,FLY,a,1,0,0\n",
        )
        .unwrap();
        let t = read(&p).unwrap();
        assert_eq!(t.records.len(), 1);
        assert_eq!(t.unknown_ops["FLY"], 1);
        std::fs::write(&p, "when,op\n1,GET\n").unwrap();
        assert!(read(&p).unwrap_err().contains("no 'time_us' column"));
    }

    #[test]
    fn converts_the_meta_sample() {
        let sample =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/meta-kvcache-sample.csv");
        let t = convert_meta(&sample).unwrap();
        // 99 rows; op_count expands them
        let text = std::fs::read_to_string(&sample).unwrap();
        let expanded: u64 = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(4).unwrap().parse::<u64>().unwrap())
            .sum();
        let unknown: u64 = t.unknown_ops.values().sum();
        assert_eq!(t.records.len() as u64 + unknown, expanded);
        assert!(
            t.records
                .iter()
                .all(|r| r.op == TraceOp::Get || r.op == TraceOp::Put || r.op == TraceOp::Delete)
        );
        assert!(t.records.iter().any(|r| r.op == TraceOp::Put));
        // key sizes are kept
        let first = text.lines().nth(1).unwrap();
        let ks: usize = first.split(',').nth(2).unwrap().parse().unwrap();
        assert_eq!(t.records[0].key.len(), ks);
        assert_eq!(t.records[0].time_us, 0);
    }

    #[test]
    fn converts_twitter_and_oracle() {
        let d = TempDir::new("trace-conv");
        std::fs::create_dir_all(d.path()).unwrap();
        let tw = d.path().join("tw.csv");
        std::fs::write(&tw, "0,keyA,10,100,1,get,0\n1,keyB,10,200,1,set,0\n2,keyA,10,0,1,incr,0\n3,keyA,10,0,1,touch,0\n").unwrap();
        let t = convert_twitter(&tw).unwrap();
        assert_eq!(
            t.records.iter().map(|r| r.op).collect::<Vec<_>>(),
            vec![TraceOp::Get, TraceOp::Put, TraceOp::Rmw]
        );
        assert_eq!(t.records[1].time_us, 1_000_000);
        assert_eq!(t.records[0].key.len(), 10);
        assert_eq!(t.unknown_ops["touch"], 1);
        std::fs::write(&tw, "0,keyA,10\n").unwrap();
        assert!(convert_twitter(&tw).unwrap_err().contains("line 1"));
        let or = d.path().join("o.bin");
        let mut b = Vec::new();
        for (ts, id, sz) in [(100u32, 7u64, 4000u32), (101, 8, 10)] {
            b.extend_from_slice(&ts.to_le_bytes());
            b.extend_from_slice(&id.to_le_bytes());
            b.extend_from_slice(&sz.to_le_bytes());
            b.extend_from_slice(&(-1i64).to_le_bytes());
        }
        std::fs::write(&or, &b).unwrap();
        let t = convert_oracle(&or, 16).unwrap();
        assert_eq!(t.records.len(), 2);
        assert_eq!(t.records[1].time_us, 1_000_000);
        assert_eq!(t.records[0].key, key_of_id(7, 16));
        std::fs::write(&or, &b[..30]).unwrap();
        assert!(convert_oracle(&or, 16).unwrap_err().contains("truncated"));
    }

    #[test]
    fn preload_covers_keys_read_before_written() {
        let pre = preload_set(&sample(), 100);
        // a: first a GET, size unknown -> default; b: first a PUT -> not preloaded;
        // c: first a DELETE -> preloaded
        assert_eq!(pre, vec![("a".to_string(), 100), ("c".to_string(), 100)]);
        let ops = to_ops(&sample(), Some(2.0), 100);
        assert_eq!(ops[4].at, Some(Duration::from_micros(10)));
        assert_eq!(ops[2].kind, OpKind::Scan);
        assert_eq!(ops[2].scan_len, 10);
    }
}
