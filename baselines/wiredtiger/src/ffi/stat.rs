//! The connection statistics the engine reports: keys of the `statistics:` cursor.

use super::sys;

pub(crate) const BLOCK_READ: i32 = sys::WT_STAT_CONN_BLOCK_READ as i32;
pub(crate) const BLOCK_WRITE: i32 = sys::WT_STAT_CONN_BLOCK_WRITE as i32;
pub(crate) const BLOCK_BYTE_READ: i32 = sys::WT_STAT_CONN_BLOCK_BYTE_READ as i32;
pub(crate) const BLOCK_BYTE_WRITE: i32 = sys::WT_STAT_CONN_BLOCK_BYTE_WRITE as i32;
pub(crate) const BLOCK_BYTE_WRITE_CHECKPOINT: i32 =
    sys::WT_STAT_CONN_BLOCK_BYTE_WRITE_CHECKPOINT as i32;
pub(crate) const CACHE_PAGES_REQUESTED: i32 = sys::WT_STAT_CONN_CACHE_PAGES_REQUESTED as i32;
pub(crate) const CACHE_READ: i32 = sys::WT_STAT_CONN_CACHE_READ as i32;
pub(crate) const CACHE_WRITE: i32 = sys::WT_STAT_CONN_CACHE_WRITE as i32;
pub(crate) const CACHE_BYTES_INUSE: i32 = sys::WT_STAT_CONN_CACHE_BYTES_INUSE as i32;
pub(crate) const CACHE_BYTES_DIRTY: i32 = sys::WT_STAT_CONN_CACHE_BYTES_DIRTY as i32;
pub(crate) const CACHE_BYTES_MAX: i32 = sys::WT_STAT_CONN_CACHE_BYTES_MAX as i32;
pub(crate) const CACHE_EVICTION_APP: i32 = sys::WT_STAT_CONN_CACHE_EVICTION_APP as i32;
pub(crate) const LOG_BYTES_WRITTEN: i32 = sys::WT_STAT_CONN_LOG_BYTES_WRITTEN as i32;
pub(crate) const LOG_SYNC: i32 = sys::WT_STAT_CONN_LOG_SYNC as i32;
pub(crate) const TXN_CHECKPOINT: i32 = sys::WT_STAT_CONN_TXN_CHECKPOINT as i32;
pub(crate) const TXN_UPDATE_CONFLICT: i32 = sys::WT_STAT_CONN_TXN_UPDATE_CONFLICT as i32;
