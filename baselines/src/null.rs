//! The null engine: every call returns at once. It measures the driver's own ceiling
//! (generation, measurement and dispatch), so a result can say how far an engine's
//! throughput is from what the driver can issue.

use kvapi::{Counters, Durability, Engine, EngineInfo, Limits, Options, Pair, Result};
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
            notes: vec!["stores nothing: measures the driver's own ceiling".into()],
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
}
