//! How `--qd` drives an engine without a native asynchronous path: as many
//! closed-loop client threads as requests in flight (or the thread-pool adapter when
//! asked), the calibration on the null engine driven the same way, and many client
//! threads sharing recorders without losing an operation.

use super::super::phase::Ctx;
use super::super::run::run;
use super::{Mode, mode, recorders_for};
use crate::props::Properties;
use crate::workload::Workload;
use kvapi::{Counters, Durability, Engine, EngineInfo, Limits, Pair, Result};
use kvtb_schema::Driving;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// An engine with a blocking interface only, that notes the threads calling it and
/// the most requests inside it at once.
#[derive(Default)]
struct Blocking {
    callers: Mutex<BTreeSet<String>>,
    inside: AtomicUsize,
    most: AtomicUsize,
    gets: AtomicUsize,
}

impl Blocking {
    fn enter(&self) {
        let name = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_string();
        self.callers.lock().unwrap().insert(name);
        let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_micros(300));
        self.inside.fetch_sub(1, Ordering::SeqCst);
        self.gets.fetch_add(1, Ordering::SeqCst);
    }
}

impl Engine for Blocking {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            engine: "blocking".into(),
            durability: Durability::None,
            durability_setting: "none".into(),
            cache_bytes: None,
            direct_io: None,
            settings: vec![],
            notes: vec![],
            limits: Limits::default(),
        }
    }
    fn get(&self, _key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.enter();
        Ok(None)
    }
    fn insert(&self, _key: &[u8], _value: &[u8]) -> Result<()> {
        Ok(())
    }
    fn update(&self, _key: &[u8], _value: &[u8]) -> Result<()> {
        Ok(())
    }
    fn delete(&self, _key: &[u8]) -> Result<()> {
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
}

fn reads(ops: usize) -> Arc<Workload> {
    let p: Properties = [
        ("recordcount", "100".to_string()),
        ("operationcount", ops.to_string()),
        ("readproportion", "1".to_string()),
        ("updateproportion", "0".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Arc::new(Workload::from_properties(&p).unwrap())
}

fn at_qd(qd: usize, adapter: &str) -> Driving {
    Driving {
        threads: 1,
        queue_depth: Some(qd),
        adapter: Some(adapter.into()),
        arrival: "constant".into(),
        seed: 3,
        ..Driving::default()
    }
}

#[test]
fn qd_without_a_native_path_is_as_many_client_threads() {
    let e = Arc::new(Blocking::default());
    let engine: Arc<dyn Engine> = e.clone();
    assert_eq!(mode(&engine, &at_qd(8, "threads")), Mode::Threads(8));
    let phase = run(engine, reads(400), &at_qd(8, "threads"), &Ctx::default()).unwrap();
    assert_eq!(phase.operations, 400);
    assert_eq!(e.gets.load(Ordering::SeqCst), 400);
    let callers = e.callers.lock().unwrap().clone();
    assert!(
        callers.iter().all(|c| !c.starts_with("pool-adapter")),
        "{callers:?}"
    );
    let most = e.most.load(Ordering::SeqCst);
    assert!(most > 1 && most <= 8, "{most} requests at once");
}

#[test]
fn adapter_pool_goes_through_the_thread_pool() {
    let e = Arc::new(Blocking::default());
    let engine: Arc<dyn Engine> = e.clone();
    assert_eq!(mode(&engine, &at_qd(8, "pool")), Mode::Injector(8));
    let phase = run(engine, reads(400), &at_qd(8, "pool"), &Ctx::default()).unwrap();
    assert_eq!(phase.operations, 400);
    let callers = e.callers.lock().unwrap().clone();
    assert!(
        callers.iter().all(|c| c.starts_with("pool-adapter")),
        "{callers:?}"
    );
    assert!(e.most.load(Ordering::SeqCst) <= 8);
}

#[test]
fn the_calibration_is_driven_as_the_engine_was() {
    // the null engine has a native path; driven for an engine without one, it runs
    // client threads as that engine did
    let null: Arc<dyn Engine> = Arc::new(baselines::null::NullEngine);
    let mut d = at_qd(16, "threads");
    assert_eq!(mode(&null, &d), Mode::Injector(16));
    d.native_async = Some(false);
    assert_eq!(mode(&null, &d), Mode::Threads(16));
    d.native_async = Some(true);
    assert_eq!(mode(&null, &d), Mode::Injector(16));
    d.queue_depth = None;
    d.threads = 3;
    assert_eq!(mode(&null, &d), Mode::Threads(3));
}

#[test]
fn many_client_threads_share_recorders_and_lose_nothing() {
    let e = Arc::new(Blocking::default());
    let threads = 4 * recorders_for(usize::MAX);
    assert!(recorders_for(threads) < threads);
    assert_eq!(recorders_for(1), 1);
    let d = Driving {
        threads,
        arrival: "constant".into(),
        seed: 5,
        ..Driving::default()
    };
    let phase = run(e.clone(), reads(1000), &d, &Ctx::default()).unwrap();
    assert_eq!(phase.operations, 1000);
    assert_eq!(e.gets.load(Ordering::SeqCst), 1000);
    let read = phase.ops.iter().find(|o| o.name == "READ").unwrap();
    assert_eq!(
        read.operations, 1000,
        "every operation in the merged histograms"
    );
}
