//! The native asynchronous path under a memory budget: requests whose pages are not
//! resident go to the miss loader, which reads their pages with others in flight
//! (an io_uring over real files; one page at a time over the simulated file system)
//! and then answers the get or scan, or applies the write. Every answer must match
//! a model, and on real files the loader must have had several reads in flight.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

mod common;

use common::{burst, counter};
use kvapi::{Engine, Reply, Request};
use std::collections::BTreeMap;
use std::sync::Arc;
use wal_engine::{Config, MemVfs, Mode, WalEngine};

const N: u64 = 5_000;
const VALUE: usize = 1000;

fn key(i: u64) -> Vec<u8> {
    format!("user{i:012}").into_bytes()
}

fn value(i: u64, round: u64) -> Vec<u8> {
    kvtestkit::conformance::value(i * 31 + round, VALUE)
}

/// Loads N keys (about five times the 1 MiB budget), then drives the native path in
/// bursts of 64 disjoint requests: gets, updates, deletes, inserts, then scans, each
/// checked against the model; returns the engine for its counters.
fn drive(e: &Arc<WalEngine>) {
    let mut model = BTreeMap::new();
    for i in 0..N {
        let k = key(i * 7919 % N);
        e.insert(&k, &value(i, 0)).unwrap();
        model.insert(k, value(i, 0));
    }
    assert!(counter(e, "page_evictions") > 0, "the load fits the cache");
    let a = e.clone().native_async().expect("a native async path");
    let mut next = N;
    for round in 1..=20u64 {
        // 64 distinct keys spread over the key space: 32 gets, 16 updates, 8
        // deletes, 8 inserts of new keys
        let picks: Vec<u64> = (0..56).map(|j| (round * 977 + j * 89) % N).collect();
        let mut reqs = Vec::new();
        let mut expect: Vec<Option<Option<Vec<u8>>>> = Vec::new();
        for (j, &i) in picks.iter().enumerate() {
            let k = key(i);
            if j < 32 {
                expect.push(Some(model.get(&k).cloned()));
                reqs.push(Request::Get { key: k });
            } else if j < 48 {
                let v = value(i, round);
                model.insert(k.clone(), v.clone());
                expect.push(None);
                reqs.push(Request::Update { key: k, value: v });
            } else {
                model.remove(&k);
                expect.push(None);
                reqs.push(Request::Delete { key: k });
            }
        }
        for _ in 0..8 {
            let k = key(next);
            let v = value(next, round);
            next += 1;
            model.insert(k.clone(), v.clone());
            expect.push(None);
            reqs.push(Request::Insert { key: k, value: v });
        }
        for (j, (r, x)) in burst(&a, reqs).into_iter().zip(expect).enumerate() {
            match (r, x) {
                (Reply::Value(got), Some(want)) => {
                    assert_eq!(got, want, "round {round}, get {j}")
                }
                (Reply::Done, None) => {}
                (r, x) => panic!("round {round}, request {j}: {r:?} for {x:?}"),
            }
        }
    }
    // every key read back through the native path, 64 at a time
    let keys: Vec<Vec<u8>> = (0..next).map(key).collect();
    for chunk in keys.chunks(64) {
        let reqs = chunk
            .iter()
            .map(|k| Request::Get { key: k.clone() })
            .collect();
        for (k, r) in chunk.iter().zip(burst(&a, reqs)) {
            assert!(
                matches!(&r, Reply::Value(v) if v.as_ref() == model.get(k)),
                "get {k:?}"
            );
        }
    }
    // scans of 50 from 64 starts, across evicted pages
    let starts: Vec<u64> = (0..64).map(|j| j * 73 % N).collect();
    let reqs = starts
        .iter()
        .map(|&s| Request::Scan {
            start: key(s),
            count: 50,
        })
        .collect();
    for (s, r) in starts.iter().zip(burst(&a, reqs)) {
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .range(key(*s)..)
            .take(50)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match r {
            Reply::Pairs(p) => assert!(p == want, "scan from {s}"),
            r => panic!("scan from {s}: {r:?}"),
        }
    }
    drop(a);
    assert!(counter(e, "loader_reads") > 0, "the loader read nothing");
    // the reads' records, on resident pages and not: both happen at this budget
    let c = e.counters();
    assert!(
        c.cache_hits > Some(0) && c.cache_misses > Some(0),
        "hits {:?}, misses {:?}",
        c.cache_hits,
        c.cache_misses
    );
}

/// Real files: the loader reads with an io_uring, several pages in flight.
#[test]
fn native_path_reads_evicted_pages_many_at_once_on_real_files() {
    let t = kvtestkit::TempDir::new("wal-loader");
    let mut c = Config::with_dir(t.path());
    c.log_size = 1025 * 4096;
    c.memory = Some(1 << 20);
    c.mode = Mode::NoneProcess;
    let e = WalEngine::open(c).unwrap();
    drive(&e);
    assert_eq!(
        counter(&e, "loader_ring"),
        1,
        "io_uring works on this machine"
    );
    assert!(
        counter(&e, "loader_peak_in_flight") > 1,
        "the loader never had two reads in flight: {}",
        counter(&e, "loader_peak_in_flight")
    );
    e.close().unwrap();
}

/// The simulated file system (no descriptor): the same answers, one read at a time.
#[test]
fn native_path_reads_evicted_pages_on_the_simulated_file_system() {
    let vfs = MemVfs::new();
    let mut c = Config::with_dir(std::path::Path::new("/mem/wal"));
    c.log_size = 1025 * 4096;
    c.memory = Some(1 << 20);
    let e = WalEngine::open_with(&vfs, c).unwrap();
    drive(&e);
    assert_eq!(counter(&e, "loader_ring"), 0);
    assert_eq!(counter(&e, "loader_peak_in_flight"), 1);
    e.close().unwrap();
}
