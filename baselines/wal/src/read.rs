//! The read path: gets and scans take the core read lock; an inline value is copied
//! from the image, a large value is taken from the in-flight map or read with pread
//! and checked against the record's CRC (a mismatch means the extent was freed and
//! reused since the lookup: look again). A write is visible once applied to the
//! image, before it is acknowledged.

use crate::config::limits;
use crate::files::DataFile;
use crate::format::BLOCK;
use crate::store::{Found, Now, RangeScan, ScanItem, Store};
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
        self.check(key)?;
        let f = self.store.lookup(key)?;
        self.value(key, f)
    }

    /// Refused once closed, or for a key beyond the limits.
    fn check(&self, key: &[u8]) -> Result<()> {
        if self.store.is_closed() {
            return Err(Error::Closed);
        }
        limits().check_key(key)
    }

    /// A get that does not read a page (the native asynchronous path): the key's
    /// value or extent, or the page the miss loader must read first.
    pub fn get_now(&self, key: &[u8]) -> Result<Now> {
        self.check(key)?;
        self.store.lookup_now(key)
    }

    /// The value of a get that found `f`: a large value is read from the data file
    /// (and checked against its CRC).
    pub fn value(&self, key: &[u8], mut f: Found) -> Result<Option<Vec<u8>>> {
        let mut offset = 0;
        for _ in 0..3 {
            let x = match f {
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
            f = self.store.lookup(key)?;
        }
        Err(Error::Corruption {
            file: self.data.path().to_path_buf(),
            offset,
            detail: format!("value of key {key:?} fails its checksum"),
        })
    }

    pub fn scan(&self, start: &[u8], count: usize) -> Result<Vec<Pair>> {
        let r = self.scan_now(start, count)?;
        let items = self.store.range_end(r, |m| self.store.fetch(m))?;
        self.pairs(items)
    }

    /// A scan's first half ([`Store::range_now`]), refused once closed.
    pub fn scan_now(&self, start: &[u8], count: usize) -> Result<RangeScan> {
        if self.store.is_closed() {
            return Err(Error::Closed);
        }
        self.store.range_now(start, count)
    }

    /// A scan's pairs from its items: large values read from the data file.
    pub fn pairs(&self, mut items: Vec<ScanItem>) -> Result<Vec<Pair>> {
        let mut pairs = Vec::with_capacity(items.len());
        for (k, v) in items.drain(..) {
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

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }
}
