//! WiredTiger's error returns as the interface's errors.

use crate::ffi::{
    EINVAL, WT_CACHE_FULL, WT_PANIC, WT_PREPARE_CONFLICT, WT_ROLLBACK, WT_RUN_RECOVERY,
    WT_TRY_SALVAGE, WtError,
};
use kvapi::Error;
use std::path::{Path, PathBuf};

/// EBUSY on Linux: WiredTiger's answer when its home is open elsewhere.
const EBUSY: i32 = 16;

/// Words of WiredTiger's messages about damaged files (checksum mismatches, blocks
/// past the end of a file, a file that is not a WiredTiger file, salvage advice, a
/// log that recovery cannot replay).
const CORRUPTION_WORDS: &[&str] = &[
    "checksum",
    "corrupt",
    "read error",
    "failed to read",
    "past end of file",
    "extends past",
    "does not appear to be",
    "magic number",
    "salvage",
    "WT_TRY_SALVAGE",
    "Recovery failed",
];

/// Whether this call found damaged data (not a later call refused after a panic,
/// which is `Poisoned` whatever the panic was about).
fn looks_corrupt(e: &WtError) -> bool {
    e.code == WT_TRY_SALVAGE
        || (!e.earlier_panic && CORRUPTION_WORDS.iter().any(|w| e.message.contains(w)))
}

/// The file and offset a message of WiredTiger names ("file:kv.wt, ...", "at offset
/// 4890624"), as far as it names them.
fn place(home: &Path, message: &str) -> (PathBuf, u64) {
    let file = message
        .split_once("file:")
        .and_then(|(_, rest)| rest.split([',', ' ', ':']).next())
        .filter(|f| !f.is_empty())
        .map_or_else(|| home.to_path_buf(), |f| home.join(f));
    let offset = message
        .split_once("at offset ")
        .and_then(|(_, rest)| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .unwrap_or(0);
    (file, offset)
}

/// Maps an error of WiredTiger during `what` on the database in `home`.
pub(crate) fn map(what: &str, home: &Path, e: WtError) -> Error {
    let text = format!("WiredTiger {what} in {}: {}", home.display(), e.message);
    if looks_corrupt(&e) {
        let (file, offset) = place(home, &e.message);
        return Error::Corruption {
            file,
            offset,
            detail: text,
        };
    }
    match e.code {
        WT_PANIC => Error::Poisoned(text),
        WT_RUN_RECOVERY => Error::Corruption {
            file: home.to_path_buf(),
            offset: 0,
            detail: format!("{text} (the database needs recovery)"),
        },
        WT_ROLLBACK | WT_PREPARE_CONFLICT => Error::Engine(format!(
            "{text} (rolled back: a conflicting operation or cache pressure; not applied)"
        )),
        WT_CACHE_FULL => Error::Engine(format!(
            "{text} (the cache is full: raise wiredtiger.cache)"
        )),
        EBUSY => Error::Locked {
            dir: home.to_path_buf(),
        },
        EINVAL => Error::InvalidArgument(text),
        code if code > 0 => Error::io(text, std::io::Error::from_raw_os_error(code)),
        _ => Error::Engine(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::{WT_ERROR, WT_NOTFOUND};

    fn e(code: i32, message: &str) -> WtError {
        WtError {
            code,
            message: message.into(),
            earlier_panic: false,
        }
    }

    #[test]
    fn kinds() {
        let h = Path::new("/x/db");
        assert!(matches!(
            map("get", h, e(WT_PANIC, "WT_PANIC: WiredTiger library panic")),
            Error::Poisoned(_)
        ));
        assert!(matches!(
            map(
                "get",
                h,
                e(
                    WT_PANIC,
                    "read checksum error for 4096B block at offset 8192"
                )
            ),
            Error::Corruption { .. }
        ));
        let mut later = e(
            WT_PANIC,
            "WT_PANIC: fatal read error; the process must exit",
        );
        later.earlier_panic = true;
        assert!(
            matches!(map("get", h, later), Error::Poisoned(m) if m.contains("fatal read error"))
        );
        assert!(matches!(
            map("open", h, e(WT_TRY_SALVAGE, "WT_TRY_SALVAGE")),
            Error::Corruption { .. }
        ));
        assert!(matches!(
            map("put", h, e(WT_ROLLBACK, "WT_ROLLBACK")),
            Error::Engine(m) if m.contains("rolled back")
        ));
        assert!(matches!(
            map("put", h, e(WT_CACHE_FULL, "WT_CACHE_FULL")),
            Error::Engine(m) if m.contains("wiredtiger.cache")
        ));
        assert!(matches!(
            map("open", h, e(EBUSY, "busy")),
            Error::Locked { .. }
        ));
        assert!(matches!(
            map("open", h, e(28, "No space left on device")),
            Error::Io { .. }
        ));
        assert!(matches!(
            map("get", h, e(WT_ERROR, "WT_ERROR")),
            Error::Engine(_)
        ));
        assert!(matches!(
            map("get", h, e(WT_NOTFOUND, "WT_NOTFOUND")),
            Error::Engine(_)
        ));
    }
}
