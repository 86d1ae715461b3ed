//! The one lock-poisoning policy of the workspace.
//!
//! A poisoned lock means a thread panicked while it held engine state, which may now
//! be half-updated. Engines never carry on with it silently and never panic on it:
//! [`lock`] (and [`wait`] for a condition variable) turn it into
//! [`Error::Poisoned`], so the engine refuses further work the way it does after a
//! failed write. Only a hand-off slot that holds no engine state (a reply on its way
//! to a waiting client, a join handle, a closed flag) may be taken over with
//! [`lock_handoff`], which says so at the call site.

use crate::{Error, Result};
use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// Locks `m`; a poisoned lock is [`Error::Poisoned`] naming `what` it guards.
pub fn lock<'a, T>(m: &'a Mutex<T>, what: &str) -> Result<MutexGuard<'a, T>> {
    m.lock().map_err(|_| poisoned(what))
}

/// Waits on `cv` with the guard of a lock taken by [`lock`]; poisoning as in [`lock`].
pub fn wait<'a, T>(
    cv: &Condvar,
    guard: MutexGuard<'a, T>,
    what: &str,
) -> Result<MutexGuard<'a, T>> {
    cv.wait(guard).map_err(|_| poisoned(what))
}

/// Locks a hand-off slot that holds no engine state, taking it over if a panicking
/// thread poisoned it (the value in it is whole: it is only ever replaced).
pub fn lock_handoff<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Takes `l` for reading; a poisoned lock is [`Error::Poisoned`] naming `what`.
pub fn read<'a, T>(l: &'a RwLock<T>, what: &str) -> Result<RwLockReadGuard<'a, T>> {
    l.read().map_err(|_| poisoned(what))
}

/// Takes `l` for writing; a poisoned lock is [`Error::Poisoned`] naming `what`.
pub fn write<'a, T>(l: &'a RwLock<T>, what: &str) -> Result<RwLockWriteGuard<'a, T>> {
    l.write().map_err(|_| poisoned(what))
}

/// Waits on `cv` for at most `timeout` with the guard of a lock taken by [`lock`];
/// poisoning as in [`lock`].
pub fn wait_timeout<'a, T>(
    cv: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
    what: &str,
) -> Result<MutexGuard<'a, T>> {
    cv.wait_timeout(guard, timeout)
        .map(|(g, _)| g)
        .map_err(|_| poisoned(what))
}

/// [`wait_timeout`] for a hand-off slot ([`lock_handoff`]): a poisoned lock is taken
/// over.
pub fn wait_timeout_handoff<'a, T>(
    cv: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> MutexGuard<'a, T> {
    match cv.wait_timeout(guard, timeout) {
        Ok((g, _)) => g,
        Err(e) => e.into_inner().0,
    }
}

fn poisoned(what: &str) -> Error {
    Error::Poisoned(format!("a thread panicked while holding {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_poisoned_lock_is_an_error_and_a_handoff_slot_is_taken_over() {
        let m = Arc::new(Mutex::new(7));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock();
            panic!("poison it");
        })
        .join();
        assert!(
            matches!(lock(&m, "the test state"), Err(Error::Poisoned(w)) if w.contains("the test state"))
        );
        assert_eq!(*lock_handoff(&m), 7);
    }
}
