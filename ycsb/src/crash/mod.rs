//! The durability audit (`ycsb crash`): a child process writes through many client
//! threads and requests in flight, and reports each write as pending before its call
//! and acknowledged after it over a pipe that outlives the child; the parent kills
//! the child with SIGKILL at a random moment (sometimes kills a second child in the
//! middle of reopening the engine, too), reopens the engine (the recovery time) and
//! checks every key against what the child reported.
//!
//! The rule. The pipe gives every event one position in a single serialised stream
//! ([`protocol`]). A write `w2` follows a write `w1` of the same key when `w2` was
//! issued after `w1` was acknowledged (its `P` line comes after `w1`'s `A` line): any
//! engine must then order `w2` after `w1`. An acknowledged write is *superseded* when
//! an acknowledged write of the key follows it. After the kill a key may hold:
//! - any acknowledged write of the cycle that is not superseded: those acknowledged
//!   after the last acknowledged write of the key was issued (with one writer, just
//!   the last acknowledged one); if none was acknowledged, the key's state before
//!   the cycle (what the previous check found, made durable by the parent's clean
//!   close);
//! - any write still pending at the kill, whenever it was issued: having no
//!   acknowledgement, it follows nothing, and no write is bound to follow it, so it
//!   may have taken effect at any moment up to the kill, after every acknowledged one;
//! - absent, where that allowed write is a delete.
//!
//! Everything else is a failure. A key in an older written state (absent, or a value
//! that was really written to it, byte for byte) is LOST: allowed only by durability
//! class `none`. A value never written to the key (a version never announced, one of
//! another key or a delete) or not byte for byte what was written for its version
//! (each write is a function of its version, [`plan`]; the values carry their version
//! and depend on their length, see [`crate::value`], so a torn or truncated value of
//! the right version is caught) is CORRUPT, in every class.
//!
//! A child that ends in any way other than by the parent's SIGKILL (it exited, with
//! any code; it panicked; another signal) fails the audit, with the last lines of its
//! standard error. A cycle that loses what the class promises, or corrupts anything,
//! stops the audit; its data directory is kept aside as the kill left it and as the
//! recovery left it ([`keep`]), as is the first cycle that lost writes in class `none`.
//!
//! Files: [`plan`] (the writes), [`protocol`] (the lines), [`child`] (the writer and
//! the recovering child), [`process`] (a child process seen from the parent),
//! [`model`] (the check), [`keep`] (the evidence), [`audit`] (the cycles), [`power`]
//! (`--power`: the writer's file calls recorded and the power-cut images checked).

pub mod audit;
pub mod child;
pub mod keep;
pub mod model;
pub mod plan;
pub mod power;
pub mod process;
pub mod protocol;

pub use audit::{Audit, Failure, Kind, Report, Role, run};
pub use child::{Drive, recover, writer};
pub use plan::Plan;

#[cfg(test)]
mod tests;
