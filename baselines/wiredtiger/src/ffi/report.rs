//! What WiredTiger reports: error codes with their text ([`WtError`]) and the
//! messages it posts to the connection's event handler, which are kept (never
//! printed) and attached to the error they explain.
#![expect(
    unsafe_code,
    reason = "the event handler is called from C with raw pointers"
)]

use super::sys::{self, WT_ERROR, WT_PANIC, WT_ROLLBACK, WT_TRY_SALVAGE};
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int};
use std::sync::Mutex;

/// EINVAL on Linux.
pub(crate) const EINVAL: i32 = 22;

/// An error return of WiredTiger: its code and text, with the messages WiredTiger
/// posted to the event handler on this thread while failing.
#[derive(Debug, Clone)]
pub(crate) struct WtError {
    pub(crate) code: i32,
    pub(crate) message: String,
    /// The detail is the message of an earlier panic (this call only saw WT_PANIC),
    /// not something this call found.
    pub(crate) earlier_panic: bool,
}

impl WtError {
    pub(super) fn new(code: c_int, handler: Option<&Handler>) -> WtError {
        let mut detail = take_messages();
        let mut earlier_panic = false;
        if detail.is_none() && code == WT_PANIC {
            detail = handler.and_then(Handler::panic_message);
            earlier_panic = detail.is_some();
        }
        let text = strerror(code);
        WtError {
            code,
            message: match detail {
                Some(d) => format!("{text}: {d}"),
                None => text,
            },
            earlier_panic,
        }
    }

    pub(super) fn other(message: impl Into<String>) -> WtError {
        WtError {
            code: WT_ERROR,
            message: message.into(),
            earlier_panic: false,
        }
    }
}

fn strerror(code: c_int) -> String {
    if code > 0 {
        return std::io::Error::from_raw_os_error(code).to_string();
    }
    if (WT_TRY_SALVAGE..=WT_ROLLBACK).contains(&code) {
        // SAFETY: for WiredTiger's own codes wiredtiger_strerror returns a static
        // NUL-terminated string (only unknown codes use a shared buffer).
        let s = unsafe { sys::wiredtiger_strerror(code) };
        if !s.is_null() {
            // SAFETY: non-null, static and NUL-terminated (see above).
            return unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
        }
    }
    format!("WiredTiger error {code}")
}

/// `Ok` for 0, else the error with this thread's messages.
pub(super) fn check(rc: c_int, handler: Option<&Handler>) -> Result<(), WtError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(WtError::new(rc, handler))
    }
}

pub(super) fn cstring(what: &str, s: &[u8]) -> Result<CString, WtError> {
    CString::new(s).map_err(|_| WtError {
        code: EINVAL,
        message: format!("{what} contains a NUL byte"),
        earlier_panic: false,
    })
}

/// Messages posted to the event handler on this thread since the last error was
/// built (the newest few, each cut to a length), so an error names what WiredTiger
/// said about it.
const KEPT_MESSAGES: usize = 6;
const MESSAGE_CHARS: usize = 600;

thread_local! {
    static MESSAGES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// A message without WiredTiger's "[seconds:microseconds][pid:thread], " prefix, cut
/// to [`MESSAGE_CHARS`].
fn tidy(text: &str) -> String {
    let text = match text.strip_prefix('[').and_then(|t| t.split_once("], ")) {
        Some((stamp, rest)) if stamp.contains("][") => rest,
        _ => text,
    };
    match text.char_indices().nth(MESSAGE_CHARS) {
        Some((at, _)) => format!("{} ...", &text[..at]),
        None => text.to_string(),
    }
}

fn remember(text: String) {
    // try_with/try_borrow_mut: a message posted while this thread's locals are being
    // torn down (a session closed by a thread-exit destructor) is dropped
    let _ = MESSAGES.try_with(|m| {
        if let Ok(mut m) = m.try_borrow_mut() {
            if m.len() == KEPT_MESSAGES {
                m.remove(0);
            }
            m.push(text);
        }
    });
}

fn kept() -> Vec<String> {
    MESSAGES
        .try_with(|m| m.try_borrow().map(|m| m.clone()).unwrap_or_default())
        .unwrap_or_default()
}

/// This thread's kept messages, joined; clears them.
pub(super) fn take_messages() -> Option<String> {
    let v = MESSAGES
        .try_with(|m| m.try_borrow_mut().map(|mut m| std::mem::take(&mut *m)).ok())
        .ok()
        .flatten()?;
    (!v.is_empty()).then(|| v.join("; "))
}

/// The event handler of a connection. `wt` comes first (`repr(C)`) so the pointer
/// WiredTiger passes back to a callback is a pointer to the whole `Handler`.
#[repr(C)]
pub(super) struct Handler {
    wt: sys::WT_EVENT_HANDLER,
    /// What led to the first panic, from whichever thread (eviction and checkpoint
    /// threads panic too), for the later calls that only see WT_PANIC.
    panic: Mutex<Option<String>>,
}

impl Handler {
    pub(super) fn new() -> Handler {
        Handler {
            wt: sys::WT_EVENT_HANDLER {
                handle_error: Some(handle_error),
                handle_message: Some(handle_message),
                handle_progress: None,
                handle_close: None,
            },
            panic: Mutex::new(None),
        }
    }

    fn panic_message(&self) -> Option<String> {
        kvapi::sync::lock_handoff(&self.panic).clone()
    }
}

unsafe extern "C" fn handle_error(
    handler: *mut sys::WT_EVENT_HANDLER,
    _session: *mut sys::WT_SESSION,
    error: c_int,
    message: *const c_char,
) -> c_int {
    if message.is_null() {
        return 0;
    }
    // SAFETY: WiredTiger passes a NUL-terminated message valid for this call.
    let raw = unsafe { CStr::from_ptr(message) }.to_string_lossy();
    // hex dumps of a damaged block say nothing a reader of an error can use
    if raw.contains("__wt_bm_corrupt_dump") {
        return 0;
    }
    let text = tidy(&raw);
    if error == WT_PANIC && !handler.is_null() {
        // SAFETY: `handler` is the pointer given to wiredtiger_open, the first field
        // of a live `Handler` (freed only after the connection is closed); only
        // shared references to it are ever made.
        let h = unsafe { &*handler.cast::<Handler>() };
        let mut slot = kvapi::sync::lock_handoff(&h.panic);
        if slot.is_none() {
            let mut why = kept();
            why.push(text.clone());
            *slot = Some(why.join("; "));
        }
    }
    remember(text);
    0
}

unsafe extern "C" fn handle_message(
    _handler: *mut sys::WT_EVENT_HANDLER,
    _session: *mut sys::WT_SESSION,
    _message: *const c_char,
) -> c_int {
    // informational messages (verbose output is not configured): not printed
    0
}
