//! The connection: `wiredtiger_open`, shared by every thread, closed once.
#![expect(unsafe_code, reason = "WT_CONNECTION is a C handle")]

use super::report::{Handler, WtError, check, cstring, take_messages};
use super::sys::{self, WT_ERROR};
use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::Arc;

// ---- the connection ------------------------------------------------------------

pub(super) struct ConnInner {
    pub(super) conn: NonNull<sys::WT_CONNECTION>,
    /// False once WT_CONNECTION::close was called (it frees the handle).
    open: bool,
    handler: NonNull<Handler>,
    /// Released after the connection is closed (the data directory's lock).
    _guard: Box<dyn Send + Sync>,
}

// SAFETY: a WT_CONNECTION handle may be shared between threads and its methods
// called concurrently (wiredtiger.h, "Thread safety"); the handler is only read
// through shared references and its mutable part is behind a Mutex.
unsafe impl Send for ConnInner {}
// SAFETY: as above.
unsafe impl Sync for ConnInner {}

impl ConnInner {
    pub(super) fn handler(&self) -> &Handler {
        // SAFETY: the handler lives until this value is dropped (see Drop).
        unsafe { self.handler.as_ref() }
    }

    /// WT_CONNECTION::close, once. WiredTiger writes a final checkpoint.
    fn close_now(&mut self) -> Result<(), WtError> {
        if !std::mem::replace(&mut self.open, false) {
            return Ok(());
        }
        let c = self.conn.as_ptr();
        let _ = take_messages();
        // SAFETY: an open connection with no session left (each session holds a
        // reference to this value, and this is `&mut`). The call frees the handle
        // whatever it returns; `open` is false from here on so it is never used again.
        let rc = match unsafe { (*c).close } {
            Some(close) => unsafe { close(c, ptr::null()) },
            None => WT_ERROR,
        };
        check(rc, None)
    }
}

impl Drop for ConnInner {
    fn drop(&mut self) {
        // nobody to tell from a destructor: Connection::close reports the outcome
        let _ = self.close_now();
        // SAFETY: made by Box::leak in Connection::open and not freed elsewhere; the
        // connection is closed, so WiredTiger no longer calls the handler.
        drop(unsafe { Box::from_raw(self.handler.as_ptr()) });
    }
}

/// An open WiredTiger database.
pub(crate) struct Connection {
    inner: Arc<ConnInner>,
}

impl Connection {
    /// `wiredtiger_open(home, handler, config)`. `guard` is kept until the
    /// connection is closed.
    /// On failure the guard comes back with the error.
    pub(crate) fn open<G: Send + Sync + 'static>(
        home: &Path,
        config: &str,
        guard: G,
    ) -> Result<Connection, (WtError, G)> {
        let home_c = match cstring("the database path", home.as_os_str().as_bytes()) {
            Ok(c) => c,
            Err(e) => return Err((e, guard)),
        };
        let config_c = match cstring("the configuration", config.as_bytes()) {
            Ok(c) => c,
            Err(e) => return Err((e, guard)),
        };
        let handler = NonNull::from(Box::leak(Box::new(Handler::new())));
        let mut conn: *mut sys::WT_CONNECTION = ptr::null_mut();
        let _ = take_messages();
        // SAFETY: valid NUL-terminated strings; the handler pointer stays valid until
        // the connection is closed (ConnInner::drop frees it after the close); `conn`
        // is a valid out-pointer.
        let rc = unsafe {
            sys::wiredtiger_open(
                home_c.as_ptr(),
                handler.as_ptr().cast::<sys::WT_EVENT_HANDLER>(),
                config_c.as_ptr(),
                &mut conn,
            )
        };
        match NonNull::new(conn) {
            Some(conn) if rc == 0 => Ok(Connection {
                inner: Arc::new(ConnInner {
                    conn,
                    open: true,
                    handler,
                    _guard: Box::new(guard),
                }),
            }),
            _ => {
                let e = WtError::new(if rc == 0 { WT_ERROR } else { rc }, None);
                // SAFETY: the open failed, so WiredTiger keeps no pointer to it.
                drop(unsafe { Box::from_raw(handler.as_ptr()) });
                Err((e, guard))
            }
        }
    }

    /// Closes the connection (WiredTiger writes a final checkpoint) and then drops
    /// the guard. Fails without closing if a session is still open somewhere; the
    /// connection then closes when the last session does.
    pub(crate) fn close(self) -> Result<(), WtError> {
        match Arc::try_unwrap(self.inner) {
            Ok(mut inner) => inner.close_now(),
            Err(_) => Err(WtError::other(
                "a WiredTiger session could not be closed (a thread panicked holding it); \
                 the connection closes when that session is dropped",
            )),
        }
    }

    /// `WT_CONNECTION::reconfigure(config)`, for the settings WiredTiger can change on
    /// an open connection (`cache_size=<bytes>`).
    pub(crate) fn reconfigure(&self, config: &str) -> Result<(), WtError> {
        let config_c = cstring("the configuration", config.as_bytes())?;
        let c = self.inner.conn.as_ptr();
        let _ = take_messages();
        // SAFETY: the connection is open (`self` holds it, and only `close`, which
        // takes `self`, closes it); the handle may be used from any thread; the string
        // is NUL-terminated and outlives the call.
        let rc = match unsafe { (*c).reconfigure } {
            Some(reconfigure) => unsafe { reconfigure(c, config_c.as_ptr()) },
            None => WT_ERROR,
        };
        check(rc, None)
    }

    pub(super) fn inner(&self) -> &Arc<ConnInner> {
        &self.inner
    }
}

/// The library's version string ("WiredTiger 3.2.1: (August 27, 2019)").
pub(crate) fn version() -> String {
    // SAFETY: wiredtiger_version takes three nullable out-pointers and returns a
    // pointer to a static NUL-terminated string.
    let s = unsafe { sys::wiredtiger_version(ptr::null_mut(), ptr::null_mut(), ptr::null_mut()) };
    if s.is_null() {
        return "WiredTiger (unknown version)".into();
    }
    // SAFETY: non-null, static and NUL-terminated (see above).
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}
