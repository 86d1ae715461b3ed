//! The WiredTiger C API behind a small safe wrapper: a [`Connection`] (thread-safe,
//! shared), a [`Session`] with its table cursor (one thread at a time), and what
//! WiredTiger reports ([`WtError`]). All unsafe code of the crate is in this module.
//!
//! Lifetimes: every [`Session`] holds a reference count on its connection, so a
//! session can never outlive the `WT_CONNECTION` it belongs to; the connection is
//! closed by [`Connection::close`] once no session is left (or by the drop of the
//! last holder). Between two calls no cursor holds a key, value or position that
//! points into Rust memory: every operation ends with `WT_CURSOR::reset`.

mod connection;
pub(crate) mod heap;
pub(crate) mod oscache;
mod report;
mod session;
pub(crate) mod stat;
mod sys;

pub(crate) use connection::{Connection, version};
pub(crate) use report::{EINVAL, WtError};
pub(crate) use session::Session;
pub(crate) use sys::{
    WT_CACHE_FULL, WT_PANIC, WT_PREPARE_CONFLICT, WT_ROLLBACK, WT_RUN_RECOVERY, WT_TRY_SALVAGE,
};
#[cfg(test)]
pub(crate) use sys::{WT_ERROR, WT_NOTFOUND};
