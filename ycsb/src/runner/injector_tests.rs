//! The injector against an engine that completes requests late, out of order and on
//! another thread: every request completes once, every operation is recorded once,
//! and the reads of read-modify-writes and one-field updates are followed by their
//! writes.

use super::super::phase::Ctx;
use super::super::run::run;
use crate::props::Properties;
use crate::workload::Workload;
use kvapi::{
    AsyncEngine, Completion, Counters, Durability, Engine, EngineInfo, Limits, Pair, Request,
    Result,
};
use kvtb_schema::Driving;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A map whose asynchronous path hands requests to a thread of its own, which runs
/// them in batches in reverse order of submission.
struct Late {
    map: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
    tx: Mutex<Option<Sender<(Request, Completion)>>>,
    submitted: AtomicU64,
    completed: Arc<AtomicU64>,
    gets: AtomicU64,
    writes: AtomicU64,
}

impl Engine for Late {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            engine: "late".into(),
            durability: Durability::None,
            durability_setting: "none".into(),
            cache_bytes: None,
            direct_io: None,
            settings: vec![],
            notes: vec![],
            limits: Limits::default(),
        }
    }
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.gets.fetch_add(1, Ordering::Relaxed);
        Ok(self.map.lock().unwrap().get(key).cloned())
    }
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.update(key, value)
    }
    fn update(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.map
            .lock()
            .unwrap()
            .insert(key.to_vec(), value.to_vec());
        Ok(())
    }
    fn delete(&self, key: &[u8]) -> Result<()> {
        self.map.lock().unwrap().remove(key);
        Ok(())
    }
    fn scan(&self, _start: &[u8], _count: usize) -> Result<Vec<Pair>> {
        Ok(vec![])
    }
    fn counters(&self) -> Counters {
        Counters::default()
    }
    fn close(&self) -> Result<()> {
        Ok(())
    }
    fn native_async(self: Arc<Self>) -> Option<Arc<dyn AsyncEngine>> {
        Some(self)
    }
}

impl AsyncEngine for Late {
    fn submit(&self, request: Request, done: Completion) {
        self.submitted.fetch_add(1, Ordering::Relaxed);
        let tx = self.tx.lock().unwrap();
        tx.as_ref().unwrap().send((request, done)).unwrap();
    }
}

/// The engine and its completing thread (which ends when the engine is dropped).
fn late() -> Arc<Late> {
    let (tx, rx): (_, Receiver<(Request, Completion)>) = channel();
    let e = Arc::new(Late {
        map: Mutex::new(BTreeMap::new()),
        tx: Mutex::new(Some(tx)),
        submitted: AtomicU64::new(0),
        completed: Arc::new(AtomicU64::new(0)),
        gets: AtomicU64::new(0),
        writes: AtomicU64::new(0),
    });
    let weak = Arc::downgrade(&e);
    let completed = e.completed.clone();
    std::thread::spawn(move || {
        loop {
            let Ok(first) = rx.recv_timeout(Duration::from_millis(50)) else {
                if weak.strong_count() == 0 {
                    return;
                }
                continue;
            };
            let mut batch = vec![first];
            while let Ok(more) = rx.recv_timeout(Duration::from_micros(100)) {
                batch.push(more);
                if batch.len() == 5 {
                    break;
                }
            }
            let Some(engine) = weak.upgrade() else { return };
            for (request, done) in batch.into_iter().rev() {
                let reply = request.execute(engine.as_ref());
                completed.fetch_add(1, Ordering::Relaxed);
                done(reply);
            }
        }
    });
    e
}

fn workload(pairs: &[(&str, &str)]) -> Arc<Workload> {
    let p: Properties = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(Workload::from_properties(&p).unwrap())
}

fn driving(qd: usize) -> Driving {
    Driving {
        threads: 1,
        queue_depth: Some(qd),
        arrival: "constant".into(),
        seed: 7,
        ..Driving::default()
    }
}

fn ops_of(phase: &kvtb_schema::Phase, name: &str) -> u64 {
    phase
        .ops
        .iter()
        .find(|o| o.name == name)
        .map_or(0, |o| o.operations)
}

#[test]
fn every_request_completes_once_and_every_operation_is_recorded_once() {
    for qd in [1, 3, 16, 64] {
        let e = late();
        // F: reads and read-modify-writes, one field of ten rewritten
        let w = workload(&[
            ("recordcount", "200"),
            ("operationcount", "3000"),
            ("readproportion", "0.5"),
            ("updateproportion", "0"),
            ("readmodifywriteproportion", "0.5"),
            ("fieldcount", "10"),
            ("fieldlength", "10"),
            ("writeallfields", "false"),
            ("dataintegrity", "true"),
        ]);
        // every record exists, so that every one-field write has a record to rewrite
        let load = Driving {
            queue_depth: Some(qd),
            ..driving(qd)
        };
        super::super::load::load(e.clone(), w.clone(), &load, &Ctx::default()).unwrap();
        let writes_after_load = e.writes.load(Ordering::Relaxed);
        assert_eq!(writes_after_load, 200, "qd {qd}: one insert per record");
        let phase = run(e.clone(), w, &driving(qd), &Ctx::default()).unwrap();
        let rmw = ops_of(&phase, "READ-MODIFY-WRITE");
        let reads = ops_of(&phase, "READ");
        assert_eq!(phase.operations, 3000, "qd {qd}");
        assert_eq!(phase.errors, 0, "qd {qd}: every read verified");
        assert!(rmw > 1000 && rmw < 2000, "qd {qd}: {rmw}");
        // READ counts the plain reads and the reads of the read-modify-writes
        assert_eq!(reads, 3000, "qd {qd}");
        assert_eq!(ops_of(&phase, "UPDATE"), rmw, "qd {qd}: a write per RMW");
        let submitted = e.submitted.load(Ordering::Relaxed);
        assert_eq!(submitted, 200 + 3000 + rmw, "qd {qd}");
        assert_eq!(e.completed.load(Ordering::Relaxed), submitted, "qd {qd}");
        assert_eq!(e.gets.load(Ordering::Relaxed), 3000, "qd {qd}");
        assert_eq!(e.writes.load(Ordering::Relaxed), 200 + rmw, "qd {qd}");
    }
}

#[test]
fn the_null_engine_completes_inline_through_the_injector() {
    let e = baselines::null::open_engine(&kvapi::Options::new("null", &[])).unwrap();
    let w = workload(&[
        ("recordcount", "1000"),
        ("operationcount", "20000"),
        ("readproportion", "0.5"),
        ("updateproportion", "0.5"),
    ]);
    let phase = run(e, w, &driving(64), &Ctx::default()).unwrap();
    assert_eq!(phase.operations, 20_000);
    assert_eq!(
        ops_of(&phase, "READ") + ops_of(&phase, "UPDATE"),
        20_000,
        "each operation recorded once"
    );
}
