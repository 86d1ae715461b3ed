//! The null engine: every call returns at once. It measures the driver's own ceiling
//! (generation, measurement and dispatch), so a result can say how far an engine's
//! throughput is from what the driver can issue.
//!
//! Its asynchronous path is native and completes each request inline, on the
//! submitting thread, before `submit` returns: driven with `--qd`, it measures the
//! driver's own asynchronous machinery (the injector, its completions and their
//! queue) and nothing else, where the thread-pool adapter would add a thread hop and
//! a wake-up per request that no engine with a native path pays.

use kvapi::{
    AsyncEngine, Completion, Counters, Durability, Engine, EngineInfo, Limits, Options, Pair,
    Request, Result,
};
use std::sync::Arc;

/// Does nothing; `get` answers "not found".
pub struct NullEngine;

/// Opens the null engine; it accepts no options.
pub fn open_engine(opts: &Options) -> Result<Arc<dyn Engine>> {
    opts.finish()?;
    Ok(Arc::new(NullEngine))
}

impl Engine for NullEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            engine: "null".into(),
            durability: Durability::None,
            durability_setting: "none (stores nothing)".into(),
            cache_bytes: None,
            direct_io: None,
            settings: vec![],
            notes: vec![
                "stores nothing: measures the driver's own ceiling".into(),
                "native asynchronous path, completing each request inline".into(),
            ],
            limits: Limits::default(),
        }
    }
    fn get(&self, _key: &[u8]) -> Result<Option<Vec<u8>>> {
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
        Ok(Vec::new())
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

impl AsyncEngine for NullEngine {
    fn submit(&self, request: Request, done: Completion) {
        done(request.execute(self));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvapi::Reply;
    use std::sync::Mutex;

    #[test]
    fn the_asynchronous_path_is_native_and_completes_each_request_once_inline() {
        let e = open_engine(&Options::new("null", &[])).unwrap();
        let a = e.native_async().expect("a native asynchronous path");
        let replies = Arc::new(Mutex::new(Vec::new()));
        let requests = [
            Request::Get { key: b"a".to_vec() },
            Request::Insert {
                key: b"b".to_vec(),
                value: b"v".to_vec(),
            },
            Request::Update {
                key: b"c".to_vec(),
                value: b"w".to_vec(),
            },
            Request::Delete { key: b"d".to_vec() },
            Request::Scan {
                start: b"e".to_vec(),
                count: 3,
            },
        ];
        for (i, r) in requests.into_iter().enumerate() {
            let got = replies.clone();
            a.submit(
                r,
                Box::new(move |reply| got.lock().unwrap().push((i, reply.unwrap()))),
            );
            // inline: the completion ran before `submit` returned, once
            assert_eq!(replies.lock().unwrap().len(), i + 1);
        }
        let got = replies.lock().unwrap();
        let order: Vec<usize> = got.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4]);
        assert_eq!(got[0].1, Reply::Value(None));
        assert!(got[1..4].iter().all(|(_, r)| *r == Reply::Done));
        assert_eq!(got[4].1, Reply::Pairs(Vec::new()));
    }
}
