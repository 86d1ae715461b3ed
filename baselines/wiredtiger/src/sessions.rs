//! One WiredTiger session per calling thread and engine.
//!
//! A WT_SESSION serves one thread at a time, so every thread that calls the engine
//! gets its own, made on its first call and kept in a thread-local list keyed by the
//! engine's id. A session sits in a [`Slot`] (a mutex only its thread takes, except
//! at close), shared by the thread-local list and the engine's registry:
//! - the hot path: find this thread's slot (a short list, usually one entry), lock
//!   it (uncontended), run the call; no lock shared between threads;
//! - a thread that exits closes its sessions (the thread-local list's destructor);
//!   the registry forgets slots nobody else holds when it next adds one;
//! - `close` takes every session out of the registry's slots (waiting for a call in
//!   progress), closes them, then the connection; a later call finds its slot empty,
//!   or no connection to open a session on, and fails with `Error::Closed`.
//!
//! Memory safety does not depend on this protocol: a session holds a reference to its
//! connection (see `ffi`), so the connection only closes after its last session.

use crate::config::{CURSOR_CONFIG, SESSION_CONFIG, TABLE};
use crate::error;
use crate::ffi::{Connection, Session, WtError};
use kvapi::sync::lock;
use kvapi::{Error, Result};
use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A session and the engine it belongs to.
struct Slot {
    engine: u64,
    session: Mutex<Option<Session>>,
}

/// This thread's sessions; closed when the thread exits.
struct ThreadSessions(Vec<Arc<Slot>>);

impl Drop for ThreadSessions {
    fn drop(&mut self) {
        for slot in self.0.drain(..) {
            // a poisoned slot keeps its session: it closes when the slot is dropped
            if let Ok(mut s) = slot.session.lock()
                && let Some(s) = s.take()
            {
                let _ = s.close();
            }
        }
    }
}

thread_local! {
    static MINE: RefCell<ThreadSessions> = const { RefCell::new(ThreadSessions(Vec::new())) };
}

struct State {
    /// `None` once closed.
    conn: Option<Connection>,
    slots: Vec<Arc<Slot>>,
}

/// The sessions of one engine and the connection they belong to.
pub(crate) struct Sessions {
    id: u64,
    /// WiredTiger's home, named in errors.
    home: PathBuf,
    state: Mutex<State>,
}

impl Sessions {
    pub(crate) fn new(conn: Connection, home: PathBuf) -> Sessions {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Sessions {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            home,
            state: Mutex::new(State {
                conn: Some(conn),
                slots: Vec::new(),
            }),
        }
    }

    /// Runs `f` with this thread's session (made on first use); `what` names the
    /// operation in errors.
    pub(crate) fn with<T>(
        &self,
        what: &str,
        f: impl FnOnce(&mut Session) -> Result<T, WtError>,
    ) -> Result<T> {
        let mut f = Some(f);
        // the hot path: this thread's slot, run in place (no reference count touched)
        let done = MINE.try_with(|mine| {
            let mine = mine.try_borrow().ok()?;
            let slot = mine.0.iter().find(|s| s.engine == self.id)?;
            f.take().map(|f| self.run(slot, what, f))
        });
        match (done, f) {
            (Ok(Some(r)), _) => r,
            (Ok(None), Some(f)) => {
                let slot = self.new_slot()?;
                self.run(&slot, what, f)
            }
            _ => Err(Error::Engine(
                "WiredTiger called from a thread that is exiting".into(),
            )),
        }
    }

    fn run<T>(
        &self,
        slot: &Slot,
        what: &str,
        f: impl FnOnce(&mut Session) -> Result<T, WtError>,
    ) -> Result<T> {
        let mut guard = lock(&slot.session, "a WiredTiger session")?;
        match guard.as_mut() {
            Some(session) => f(session).map_err(|e| self.map(what, e)),
            None => Err(Error::Closed),
        }
    }

    fn map(&self, what: &str, e: WtError) -> Error {
        error::map(what, &self.home, e)
    }

    /// `WT_CONNECTION::reconfigure` on the open connection.
    pub(crate) fn reconfigure(&self, config: &str) -> Result<()> {
        let state = lock(&self.state, "the WiredTiger session registry")?;
        let Some(conn) = state.conn.as_ref() else {
            return Err(Error::Closed);
        };
        conn.reconfigure(config)
            .map_err(|e| self.map(&format!("reconfigure({config})"), e))
    }

    /// Opens a session for this thread and records it in both lists.
    fn new_slot(&self) -> Result<Arc<Slot>> {
        let mut state = lock(&self.state, "the WiredTiger session registry")?;
        let Some(conn) = state.conn.as_ref() else {
            return Err(Error::Closed);
        };
        let session =
            Session::open(conn, SESSION_CONFIG, TABLE, None, CURSOR_CONFIG).map_err(|e| {
                self.map(
                    "open_session (one per thread: raise wiredtiger.session_max?)",
                    e,
                )
            })?;
        let slot = Arc::new(Slot {
            engine: self.id,
            session: Mutex::new(Some(session)),
        });
        // slots only the registry still holds belong to threads that exited
        state.slots.retain(|s| Arc::strong_count(s) > 1);
        state.slots.push(slot.clone());
        drop(state);
        let kept = MINE.try_with(|mine| {
            if let Ok(mut mine) = mine.try_borrow_mut() {
                // slots only this list still holds belong to closed engines
                mine.0.retain(|s| Arc::strong_count(s) > 1);
                mine.0.push(slot.clone());
            }
        });
        if kept.is_err() {
            return Err(Error::Engine(
                "WiredTiger called from a thread that is exiting".into(),
            ));
        }
        Ok(slot)
    }

    /// Closes every session, then the connection. Later calls fail with
    /// `Error::Closed`; a second close does nothing.
    pub(crate) fn close(&self) -> Result<()> {
        let mut state = lock(&self.state, "the WiredTiger session registry")?;
        let Some(conn) = state.conn.take() else {
            return Ok(());
        };
        let mut result = Ok(());
        for slot in state.slots.drain(..) {
            match lock(&slot.session, "a WiredTiger session") {
                Ok(mut s) => {
                    if let Some(s) = s.take()
                        && let Err(e) = s.close()
                    {
                        result = result.and(Err(self.map("session close", e)));
                    }
                }
                Err(e) => result = result.and(Err(e)),
            }
        }
        drop(state);
        let closed = conn.close().map_err(|e| self.map("close", e));
        result.and(closed)
    }
}
