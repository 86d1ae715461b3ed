//! Traces: a format of our own (CSV and a compact binary form), converters from
//! public cache traces, and the conversion of a trace into operations to replay.
//!
//! CSV, one header line then one request per line; columns are found by name:
//!
//! ```text
//! time_us,op,key,key_size,value_size,scan_length
//! 0,GET,user6284781860667377211,23,0,0
//! ```
//!
//! `time_us` is the request's time in microseconds from the start of the trace (0 for
//! a closed-loop trace), `op` one of GET, PUT, DELETE, SCAN, RMW. A `key_size` larger
//! than the key's text pads the key with `_` to that size (converted traces whose keys
//! are hashes keep their original key sizes that way).
//!
//! Binary (little-endian), a 32-byte header then 32-byte records:
//!
//! ```text
//! header: magic "KVTBTRC1" (8) | version u32 = 1 | record size u32 = 32 | records u64 | flags u64 = 0
//! record: time_us u64 | key id u64 | value_size u32 | scan_length u32 | key_size u16 | op u8 | 0 u8 | 0 u32
//! ```
//!
//! The binary form keeps a key's identity as a 64-bit id (the FNV-1a hash of the key
//! text, or the trace's own object id) and its size; the key replayed is `k` followed
//! by the id in hex, padded with `_` to the key size.

mod convert;
mod csv;
mod native;
mod record;
mod replay;
#[cfg(test)]
mod tests;

pub use convert::{convert_meta, convert_oracle, convert_twitter};
pub use native::{MAGIC, read, read_bin, read_csv, write_bin, write_csv};
pub use record::{Record, Trace, TraceOp, key_of_id};
pub use replay::{describe, preload_set, to_ops};
