//! Test support shared by every kvell-testbed engine, kept out of the production
//! crates (after TiKV's `engine_traits_tests`): the conformance suite
//! ([`conformance`], run with [`conformance_tests!`]), the fault-matrix harness
//! ([`faults`]), a small loop-mounted file system for full-disk tests ([`testfs`]) and
//! temporary directories under `$KVTESTBED_TMP` ([`TempDir`]) and child runs of a
//! test for memory measurements ([`child`]).
//!
//! Only ever a dev-dependency.
#![deny(unsafe_code)]
// Test support is test code: a failed step is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed step is a failed test"
)]

pub mod child;
pub mod conformance;
pub mod faults;
pub mod testfs;

pub use conformance::{TempDir, value};

/// The engine's counter or gauge `name` in `Counters.extra` (the test fails without
/// it).
pub fn extra(e: &dyn kvapi::Engine, name: &str) -> u64 {
    e.counters()
        .extra
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no counter {name}"))
}
