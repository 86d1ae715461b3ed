//! The read path: gets and scans take the core read lock; an inline value is copied
//! from the image, a large value is taken from the in-flight map or read with pread
//! and checked against the record's CRC (a mismatch means the extent was freed and
//! reused since the lookup: look again). A write is visible once applied to the
//! image, before it is acknowledged.

use crate::config::limits;
use crate::files::DataFile;
use crate::format::BLOCK;
use crate::store::{Found, Store};
use kvapi::{Error, Pair, Result};
use std::sync::Arc;

/// What the readers share.
#[derive(Clone)]
pub struct Reader {
    store: Arc<Store>,
    data: Arc<DataFile>,
}

impl Reader {
    pub fn new(store: Arc<Store>, data: Arc<DataFile>) -> Reader {
        Reader { store, data }
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if self.store.is_closed() {
            return Err(Error::Closed);
        }
        limits().check_key(key)?;
        let mut offset = 0;
        for _ in 0..3 {
            let x = match self.store.lookup(key)? {
                Found::Missing => return Ok(None),
                Found::Value(v) => return Ok(Some(v)),
                Found::Extent(x) => x,
            };
            // A mismatch can only be an extent freed and reused since the lookup;
            // look again.
            offset = x.start as u64 * BLOCK as u64;
            if let Some(v) = self.data.read(&x)? {
                return Ok(Some(v));
            }
        }
        Err(Error::Corruption {
            file: self.data.path().to_path_buf(),
            offset,
            detail: format!("value of key {key:?} fails its checksum"),
        })
    }

    pub fn scan(&self, start: &[u8], count: usize) -> Result<Vec<Pair>> {
        if self.store.is_closed() {
            return Err(Error::Closed);
        }
        let mut out = self.store.range(start, count)?;
        let mut pairs = Vec::with_capacity(out.len());
        for (k, v) in out.drain(..) {
            let v = match v {
                Ok(v) => v,
                Err(x) => match self.data.read(&x)? {
                    Some(v) => v,
                    None => match self.get(&k)? {
                        Some(v) => v,
                        None => continue,
                    },
                },
            };
            pairs.push((k, v));
        }
        Ok(pairs)
    }
}
