use crate::{AsyncEngine, Completion, Engine, Error, Request};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

type Job = (Request, Completion);

/// Gives any engine an asynchronous path: `threads` threads take submitted requests
/// from a bounded queue and run them through the blocking interface, so an engine with
/// no native asynchronous I/O can be driven with up to `threads` requests in flight.
/// `submit` blocks while the queue (as long as the number of threads) is full.
pub struct PoolAdapter {
    tx: Mutex<Option<SyncSender<Job>>>,
    threads: Vec<JoinHandle<()>>,
}

impl PoolAdapter {
    pub fn new(engine: Arc<dyn Engine>, threads: usize) -> PoolAdapter {
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
                    .expect("spawning a pool adapter thread")
            })
            .collect();
        PoolAdapter {
            tx: Mutex::new(Some(tx)),
            threads: handles,
        }
    }
}

impl AsyncEngine for PoolAdapter {
    fn submit(&self, request: Request, done: Completion) {
        let tx = self.tx.lock().ok().and_then(|t| t.clone());
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
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
