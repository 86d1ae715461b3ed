//! Tests of the trace formats, the converters and the replay preparation.

use super::*;
use crate::workload::OpKind;
use kvtestkit::conformance::TempDir;
use std::path::Path;
use std::time::Duration;

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
    let e = read(&p).unwrap_err().to_string();
    assert!(e.contains("truncated"), "{e}");
    std::fs::write(&p, &buf[..32]).unwrap();
    assert!(read(&p).unwrap_err().to_string().contains("truncated"));
    std::fs::write(&p, b"").unwrap();
    assert!(read(&p).unwrap_err().to_string().contains("empty"));
}

#[test]
fn malformed_rows_name_file_and_line_and_unknown_ops_are_counted() {
    let d = TempDir::new("trace-bad");
    std::fs::create_dir_all(d.path()).unwrap();
    let p = d.path().join("t.csv");
    std::fs::write(&p, "time_us,op,key,key_size,value_size,scan_length\n0,GET,a,1,0,0\n0,FLY,a,1,0,0\n3,PUT,b,1,-4,0\n").unwrap();
    let e = read(&p).unwrap_err().to_string();
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
    assert!(
        read(&p)
            .unwrap_err()
            .to_string()
            .contains("no 'time_us' column")
    );
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
    assert!(
        convert_twitter(&tw)
            .unwrap_err()
            .to_string()
            .contains("line 1")
    );
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
    assert!(
        convert_oracle(&or, 16)
            .unwrap_err()
            .to_string()
            .contains("truncated")
    );
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
