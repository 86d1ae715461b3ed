//! The designs compared with KVell, behind the same [`kvapi::Engine`] interface:
//! the real sled crate and a null engine (the driver's own ceiling). RocksDB and the
//! WAL engine live in crates of their own so that their builds stay out of the rest.
#![deny(unsafe_code)]

pub mod null;
pub mod sled_engine;
