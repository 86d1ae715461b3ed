use crate::{AsyncEngine, Completion, Engine, Error, Request, Result};
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
