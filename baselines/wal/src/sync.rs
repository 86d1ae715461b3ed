//! The workspace's lock-poisoning policy (`kvapi::sync`) for the two kinds of wait it
//! does not cover: the read-write lock over the image and timed condition waits. A
//! poisoned lock is [`Error::Poisoned`] naming what it guards, as in `kvapi::sync`.

use kvapi::{Error, Result};
use std::sync::{Condvar, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

fn poisoned(what: &str) -> Error {
    Error::Poisoned(format!("a thread panicked while holding {what}"))
}

/// Takes `l` for reading; a poisoned lock is [`Error::Poisoned`].
pub fn read<'a, T>(l: &'a RwLock<T>, what: &str) -> Result<RwLockReadGuard<'a, T>> {
    l.read().map_err(|_| poisoned(what))
}

/// Takes `l` for writing; a poisoned lock is [`Error::Poisoned`].
pub fn write<'a, T>(l: &'a RwLock<T>, what: &str) -> Result<RwLockWriteGuard<'a, T>> {
    l.write().map_err(|_| poisoned(what))
}

/// Waits on `cv` for at most `timeout` with the guard of a lock taken by
/// `kvapi::sync::lock`; poisoning as there.
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

/// [`wait_timeout`] for a hand-off slot (`kvapi::sync::lock_handoff`): a poisoned
/// lock is taken over.
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
