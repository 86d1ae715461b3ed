//! A session and its cursor on the table: the operations, one thread at a time.
#![expect(unsafe_code, reason = "WT_SESSION and WT_CURSOR are C handles")]

use super::connection::{ConnInner, Connection};
use super::report::{WtError, check, cstring};
use super::sys::{self, WT_ERROR, WT_NOTFOUND};
use std::ffi::{CStr, c_char, c_int};
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// An open WT_SESSION; closes it when dropped.
struct RawSession {
    conn: Arc<ConnInner>,
    /// None once closed (WT_SESSION::close frees the handle).
    session: Option<NonNull<sys::WT_SESSION>>,
}

impl RawSession {
    fn close_now(&mut self) -> Result<(), WtError> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let s = session.as_ptr();
        // SAFETY: an open session, used by no other thread (it is owned here), whose
        // connection is open (`conn` keeps it). Closing it closes its cursors; the
        // handle is taken out above, so it is never used again.
        let rc = match unsafe { (*s).close } {
            Some(f) => unsafe { f(s, ptr::null()) },
            None => WT_ERROR,
        };
        check(rc, Some(self.conn.handler()))
    }
}

impl Drop for RawSession {
    fn drop(&mut self) {
        let _ = self.close_now();
    }
}

/// A WiredTiger session with its cursor on the table (`overwrite=true`). One thread
/// at a time: it is `Send`, not `Sync`, and every method takes `&mut self`.
pub(crate) struct Session {
    raw: RawSession,
    cursor: NonNull<sys::WT_CURSOR>,
}

// SAFETY: a WT_SESSION (and its cursors) may be used by one thread at a time; it is
// not tied to the thread that opened it. `Session` is not `Sync` and needs `&mut
// self` for every call, so two threads never use it at once.
unsafe impl Send for Session {}

/// A WT_ITEM pointing at `bytes` (valid while `bytes` is).
fn item(bytes: &[u8]) -> sys::WT_ITEM {
    sys::WT_ITEM {
        data: bytes.as_ptr().cast(),
        size: bytes.len(),
        ..sys::WT_ITEM::default()
    }
}

/// Copies the bytes a WT_ITEM returned by get_key/get_value points at.
fn copy_out(it: &sys::WT_ITEM) -> Vec<u8> {
    if it.size == 0 || it.data.is_null() {
        return Vec::new();
    }
    // SAFETY: WiredTiger points the item at `size` bytes that stay valid until the
    // cursor is next used; they are copied at once.
    unsafe { std::slice::from_raw_parts(it.data.cast::<u8>(), it.size) }.to_vec()
}

/// Calls a method of the table cursor: `call!(self, method, args...)`.
macro_rules! call {
    ($self:ident, $method:ident $(, $arg:expr)*) => {{
        let c = $self.cursor.as_ptr();
        // SAFETY: the session's open cursor, used by this thread only (`&mut self`);
        // arguments as the method's contract in wiredtiger.h requires.
        match unsafe { (*c).$method } {
            Some(f) => unsafe { f(c $(, $arg)*) },
            None => WT_ERROR,
        }
    }};
}

impl Session {
    /// A new session with a cursor on `uri`, creating the table first with
    /// `create_config` if given.
    pub(crate) fn open(
        connection: &Connection,
        session_config: &str,
        uri: &str,
        create_config: Option<&str>,
        cursor_config: &str,
    ) -> Result<Session, WtError> {
        let conn = &**connection.inner();
        let c = conn.conn.as_ptr();
        let session_config = cstring("the session configuration", session_config.as_bytes())?;
        let uri = cstring("the table name", uri.as_bytes())?;
        let cursor_config = cstring("the cursor configuration", cursor_config.as_bytes())?;
        let mut s: *mut sys::WT_SESSION = ptr::null_mut();
        // SAFETY: open_session is thread-safe on a shared, open connection (open
        // until the last `Arc` goes); a null event handler means the connection's;
        // valid strings and out-pointer.
        let rc = match unsafe { (*c).open_session } {
            Some(open) => unsafe { open(c, ptr::null_mut(), session_config.as_ptr(), &mut s) },
            None => WT_ERROR,
        };
        check(rc, Some(conn.handler()))?;
        let Some(session) = NonNull::new(s) else {
            return Err(WtError::other(
                "WT_CONNECTION::open_session gave no session",
            ));
        };
        // from here on the session is closed by RawSession's Drop on every error path
        let mut raw = RawSession {
            conn: connection.inner().clone(),
            session: Some(session),
        };
        let s = session.as_ptr();
        if let Some(create) = create_config {
            let create = cstring("the table configuration", create.as_bytes())?;
            // SAFETY: an open session used by this thread only; valid strings.
            let rc = match unsafe { (*s).create } {
                Some(f) => unsafe { f(s, uri.as_ptr(), create.as_ptr()) },
                None => WT_ERROR,
            };
            check(rc, Some(conn.handler()))?;
        }
        let mut cursor: *mut sys::WT_CURSOR = ptr::null_mut();
        // SAFETY: as above; the cursor belongs to the session and is closed with it.
        let rc = match unsafe { (*s).open_cursor } {
            Some(f) => unsafe {
                f(
                    s,
                    uri.as_ptr(),
                    ptr::null_mut(),
                    cursor_config.as_ptr(),
                    &mut cursor,
                )
            },
            None => WT_ERROR,
        };
        check(rc, Some(conn.handler()))?;
        let Some(cursor) = NonNull::new(cursor) else {
            let _ = raw.close_now();
            return Err(WtError::other("WT_SESSION::open_cursor gave no cursor"));
        };
        Ok(Session { raw, cursor })
    }

    fn session_ptr(&self) -> *mut sys::WT_SESSION {
        // a Session's handle is open until `close` consumes it
        self.raw.session.map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    fn set_key(&mut self, it: &mut sys::WT_ITEM) {
        let c = self.cursor.as_ptr();
        // SAFETY: the session's open cursor, used by this thread only; for key format
        // "u" WiredTiger copies the item's pointer and size (the bytes must stay valid
        // until the operation ends, which `finish` guarantees with a reset).
        if let Some(f) = unsafe { (*c).set_key } {
            unsafe { f(c, it as *mut sys::WT_ITEM) }
        }
    }

    fn set_value(&mut self, it: &mut sys::WT_ITEM) {
        let c = self.cursor.as_ptr();
        // SAFETY: as for set_key, value format "u".
        if let Some(f) = unsafe { (*c).set_value } {
            unsafe { f(c, it as *mut sys::WT_ITEM) }
        }
    }

    fn err(&self, rc: c_int) -> WtError {
        WtError::new(rc, Some(self.raw.conn.handler()))
    }

    /// Leaves the cursor with no key, value or position (nothing pointing into
    /// memory of the caller, no page pinned), keeping the first error.
    fn finish<T>(&mut self, result: Result<T, WtError>) -> Result<T, WtError> {
        let rc = call!(self, reset);
        match result {
            Ok(_) if rc != 0 => Err(self.err(rc)),
            r => r,
        }
    }

    /// The value stored under `key`.
    pub(crate) fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, WtError> {
        let mut k = item(key);
        self.set_key(&mut k);
        let rc = call!(self, search);
        let r = match rc {
            0 => {
                let mut v = sys::WT_ITEM::default();
                let rc = call!(self, get_value, &mut v as *mut sys::WT_ITEM);
                if rc == 0 {
                    Ok(Some(copy_out(&v)))
                } else {
                    Err(self.err(rc))
                }
            }
            WT_NOTFOUND => Ok(None),
            rc => Err(self.err(rc)),
        };
        self.finish(r)
    }

    /// Stores `value` under `key` (insert with `overwrite=true`: an upsert).
    pub(crate) fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), WtError> {
        let mut k = item(key);
        let mut v = item(value);
        self.set_key(&mut k);
        self.set_value(&mut v);
        let rc = call!(self, insert);
        let r = if rc == 0 { Ok(()) } else { Err(self.err(rc)) };
        self.finish(r)
    }

    /// Removes `key`; a missing key is not an error (`overwrite=true`).
    pub(crate) fn remove(&mut self, key: &[u8]) -> Result<(), WtError> {
        let mut k = item(key);
        self.set_key(&mut k);
        let rc = call!(self, remove);
        let r = match rc {
            0 | WT_NOTFOUND => Ok(()),
            rc => Err(self.err(rc)),
        };
        self.finish(r)
    }

    /// Up to `count` pairs with key >= `start`, in key order (from the first key
    /// when `start` is empty: WiredTiger has no empty key to search for).
    pub(crate) fn scan(&mut self, start: &[u8], count: usize) -> Result<Vec<kvapi::Pair>, WtError> {
        let mut out = Vec::with_capacity(count.min(1024));
        if count == 0 {
            return Ok(out);
        }
        let (rc, exact) = if start.is_empty() {
            // an unpositioned cursor's next is the first record
            (call!(self, next), 0)
        } else {
            let mut k = item(start);
            self.set_key(&mut k);
            let mut exact: c_int = 0;
            (call!(self, search_near, &mut exact as *mut c_int), exact)
        };
        let r = self.collect(rc, exact, count, &mut out);
        self.finish(r).map(|()| out)
    }

    fn collect(
        &mut self,
        mut rc: c_int,
        exact: c_int,
        count: usize,
        out: &mut Vec<kvapi::Pair>,
    ) -> Result<(), WtError> {
        // search_near lands on the key, the next larger or the next smaller one; from
        // a smaller one the first key >= start is the next
        if rc == 0 && exact < 0 {
            rc = call!(self, next);
        }
        while rc == 0 && out.len() < count {
            let mut k = sys::WT_ITEM::default();
            let mut v = sys::WT_ITEM::default();
            let rk = call!(self, get_key, &mut k as *mut sys::WT_ITEM);
            if rk != 0 {
                return Err(self.err(rk));
            }
            let rv = call!(self, get_value, &mut v as *mut sys::WT_ITEM);
            if rv != 0 {
                return Err(self.err(rv));
            }
            out.push((copy_out(&k), copy_out(&v)));
            if out.len() < count {
                rc = call!(self, next);
            }
        }
        match rc {
            0 | WT_NOTFOUND => Ok(()),
            rc => Err(self.err(rc)),
        }
    }

    /// Connection statistics by key (`None` for a key the library does not have),
    /// read through a `statistics:` cursor opened for the call.
    pub(crate) fn stats(&mut self, keys: &[i32]) -> Result<Vec<Option<i64>>, WtError> {
        let cursor = self.side_cursor(c"statistics:")?;
        keys.iter().map(|&key| cursor.statistic(key)).collect()
    }

    /// The value of `key` in WiredTiger's metadata (such as the configuration a file
    /// was created with), read through a `metadata:` cursor opened for the call.
    pub(crate) fn metadata(&mut self, key: &str) -> Result<Option<String>, WtError> {
        let key = cstring("the metadata key", key.as_bytes())?;
        self.side_cursor(c"metadata:")?.string(&key)
    }

    /// A cursor on `uri` for the length of one call.
    fn side_cursor(&mut self, uri: &CStr) -> Result<SideCursor<'_>, WtError> {
        let s = self.session_ptr();
        if s.is_null() {
            return Err(WtError::other("the session is closed"));
        }
        let mut cursor: *mut sys::WT_CURSOR = ptr::null_mut();
        // SAFETY: the open session, used by this thread only (`&mut self`); valid
        // strings and out-pointer.
        let rc = match unsafe { (*s).open_cursor } {
            Some(f) => unsafe { f(s, uri.as_ptr(), ptr::null_mut(), ptr::null(), &mut cursor) },
            None => WT_ERROR,
        };
        if rc != 0 {
            return Err(self.err(rc));
        }
        match NonNull::new(cursor) {
            Some(c) => Ok(SideCursor {
                c,
                conn: &self.raw.conn,
            }),
            None => Err(WtError::other("WT_SESSION::open_cursor gave no cursor")),
        }
    }

    /// Closes the session (and its cursor), reporting WiredTiger's answer.
    pub(crate) fn close(mut self) -> Result<(), WtError> {
        self.raw.close_now()
    }
}

/// A cursor opened for one call on a session it borrows mutably (so nothing else
/// uses the session meanwhile); closed when dropped.
struct SideCursor<'s> {
    c: NonNull<sys::WT_CURSOR>,
    conn: &'s ConnInner,
}

impl SideCursor<'_> {
    fn err(&self, rc: c_int) -> WtError {
        WtError::new(rc, Some(self.conn.handler()))
    }

    /// Statistics cursors: key format "i", value format "SSq" (description,
    /// printable value, value).
    fn statistic(&self, key: i32) -> Result<Option<i64>, WtError> {
        let c = self.c.as_ptr();
        // SAFETY: an open statistics cursor used by this thread only; an int key as
        // its key format requires.
        let rc = unsafe {
            match ((*c).set_key, (*c).search) {
                (Some(set_key), Some(search)) => {
                    set_key(c, key as c_int);
                    search(c)
                }
                _ => WT_ERROR,
            }
        };
        match rc {
            0 => {}
            WT_NOTFOUND => return Ok(None),
            rc => return Err(self.err(rc)),
        }
        let mut desc: *const c_char = ptr::null();
        let mut printable: *const c_char = ptr::null();
        let mut value: i64 = 0;
        // SAFETY: positioned by the search; three out-pointers matching "SSq".
        let rc = match unsafe { (*c).get_value } {
            Some(f) => unsafe {
                f(
                    c,
                    &mut desc as *mut *const c_char,
                    &mut printable as *mut *const c_char,
                    &mut value as *mut i64,
                )
            },
            None => WT_ERROR,
        };
        if rc != 0 {
            return Err(self.err(rc));
        }
        Ok(Some(value))
    }

    /// Cursors of string keys and values (format "S", such as `metadata:`).
    fn string(&self, key: &CStr) -> Result<Option<String>, WtError> {
        let c = self.c.as_ptr();
        // SAFETY: an open cursor with key format "S" used by this thread only; the
        // key string outlives the search (the cursor is closed before it goes).
        let rc = unsafe {
            match ((*c).set_key, (*c).search) {
                (Some(set_key), Some(search)) => {
                    set_key(c, key.as_ptr());
                    search(c)
                }
                _ => WT_ERROR,
            }
        };
        match rc {
            0 => {}
            WT_NOTFOUND => return Ok(None),
            rc => return Err(self.err(rc)),
        }
        let mut value: *const c_char = ptr::null();
        // SAFETY: positioned by the search; one out-pointer matching "S".
        let rc = match unsafe { (*c).get_value } {
            Some(f) => unsafe { f(c, &mut value as *mut *const c_char) },
            None => WT_ERROR,
        };
        if rc != 0 {
            return Err(self.err(rc));
        }
        if value.is_null() {
            return Ok(Some(String::new()));
        }
        // SAFETY: a NUL-terminated string owned by the cursor, valid until it moves;
        // copied at once.
        Ok(Some(
            unsafe { CStr::from_ptr(value) }
                .to_string_lossy()
                .into_owned(),
        ))
    }
}

impl Drop for SideCursor<'_> {
    fn drop(&mut self) {
        let c = self.c.as_ptr();
        // SAFETY: an open cursor, closed once here and never used afterwards.
        if let Some(f) = unsafe { (*c).close } {
            let _ = unsafe { f(c) };
        }
    }
}
