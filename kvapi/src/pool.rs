use crate::{AsyncEngine, Completion, Engine, Error, Request, Result};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

type Job = (Request, Completion);

/// Gives any engine an asynchronous path: `threads` threads take submitted requests
/// from a bounded queue and run them through the blocking interface, so an engine with
/// no native asynchronous I/O can be driven with up to `threads` requests in flight.
/// `submit` blocks while the queue (as long as the number of threads) is full.
///
/// Tried and dropped (2026-12-04): a hand-off of each request to an idle thread (a
/// slot and a condition variable per thread, a queue only while none is idle), to
/// avoid the threads' convoy on the shared receiver. In `scripts/driver-bench --bins`
/// against this one, alternating (results/driver/pool-handoff-tried.md), it was 2.3x
/// slower (sled in the OS page cache, YCSB C: 216K against 487K ops/s, 7.9 against
/// 3.1 us of CPU per operation; YCSB A: 82K against 184K): every request paid a
/// whole sleep and wake-up, where the channel's receiver spins a little before it
/// parks. `--qd` drives such engines with closed-loop threads by default; this
/// adapter is `--adapter pool`.
pub struct PoolAdapter {
    tx: Mutex<Option<SyncSender<Job>>>,
    threads: Vec<JoinHandle<()>>,
}

impl PoolAdapter {
    /// Starts `threads` threads (at least one); fails if the system refuses a thread.
    pub fn new(engine: Arc<dyn Engine>, threads: usize) -> Result<PoolAdapter> {
        let threads = threads.max(1);
        let (tx, rx) = sync_channel::<Job>(threads);
        let rx = Arc::new(Mutex::new(rx));
        let handles = (0..threads)
            .map(|i| {
                let rx = rx.clone();
                let engine = engine.clone();
                std::thread::Builder::new()
                    .name(format!("pool-adapter-{i}"))
                    .spawn(move || {
                        loop {
                            // The guard is dropped at the end of this statement, so
                            // only the dequeue is serialised, not the request.
                            let job = rx.lock().map(|r| r.recv());
                            let Ok(Ok((request, done))) = job else { break };
                            done(request.execute(engine.as_ref()));
                        }
                    })
                    .map_err(|e| Error::io("starting a pool adapter thread", e))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(PoolAdapter {
            tx: Mutex::new(Some(tx)),
            threads: handles,
        })
    }
}

impl AsyncEngine for PoolAdapter {
    fn submit(&self, request: Request, done: Completion) {
        let tx = crate::sync::lock_handoff(&self.tx).clone();
        match tx {
            Some(tx) => {
                if let Err(std::sync::mpsc::SendError((_, done))) = tx.send((request, done)) {
                    done(Err(Error::Closed));
                }
            }
            None => done(Err(Error::Closed)),
        }
    }
}

impl Drop for PoolAdapter {
    fn drop(&mut self) {
        crate::sync::lock_handoff(&self.tx).take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Counters, Durability, EngineInfo, Limits, Pair, Reply};
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A map with a blocking interface only, slow enough that requests pile up.
    #[derive(Default)]
    struct Slow {
        map: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
        running: AtomicUsize,
        most: AtomicUsize,
    }

    impl Slow {
        fn enter(&self) {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_micros(200));
            self.running.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl Engine for Slow {
        fn info(&self) -> EngineInfo {
            EngineInfo {
                engine: "slow".into(),
                durability: Durability::None,
                durability_setting: String::new(),
                cache_bytes: None,
                direct_io: None,
                settings: vec![],
                notes: vec![],
                limits: Limits::default(),
            }
        }
        fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
            self.enter();
            Ok(self.map.lock().unwrap().get(key).cloned())
        }
        fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
            self.update(key, value)
        }
        fn update(&self, key: &[u8], value: &[u8]) -> Result<()> {
            self.enter();
            self.map
                .lock()
                .unwrap()
                .insert(key.to_vec(), value.to_vec());
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

    #[test]
    fn every_request_completes_once_with_up_to_threads_in_flight() {
        let engine = Arc::new(Slow::default());
        let pool = PoolAdapter::new(engine.clone(), 8).unwrap();
        let done = Arc::new(Mutex::new(Vec::new()));
        let n = 400;
        for i in 0..n {
            let key = format!("k{i}").into_bytes();
            let got = done.clone();
            pool.submit(
                Request::Update {
                    key,
                    value: vec![1],
                },
                Box::new(move |r| got.lock().unwrap().push((i, r))),
            );
        }
        drop(pool); // closes after the queued requests have run
        let mut got = done.lock().unwrap().drain(..).collect::<Vec<_>>();
        got.sort_by_key(|(i, _)| *i);
        assert_eq!(got.len(), n);
        assert!(
            got.iter()
                .enumerate()
                .all(|(j, (i, r))| *i == j && matches!(r, Ok(Reply::Done)))
        );
        assert_eq!(engine.map.lock().unwrap().len(), n);
        let most = engine.most.load(Ordering::SeqCst);
        assert!(most > 1 && most <= 8, "{most} requests ran at once");
    }
}
