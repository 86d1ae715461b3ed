//! Dropping WiredTiger's log files from the OS page cache.
//!
//! Direct I/O keeps data files out of the page cache; the log cannot be (WiredTiger
//! 3.2.1 panics at its first log write with `direct_io=[log]`, DESIGN.md), and a log
//! written buffered stays in the page cache, where the driver counts it as the
//! engine's memory, until a checkpoint lets WiredTiger remove the file: with 100 MB
//! log files that was 108 to 120 MiB of a 162.8 MiB budget (YCSB A, 500K x 1 KiB,
//! reproduce-paper small at acc3ff2), and the driver's governor shrank the cache to
//! its floor to pay for it. The log is read only by recovery, so its pages are of no
//! use there. `posix_fadvise(DONTNEED)` starts the writeback of the dirty pages and
//! drops the clean ones: called often, it holds the log's page cache to what is
//! written between two calls plus the writeback in progress.
#![expect(unsafe_code, reason = "posix_fadvise(2) is a C call")]

use std::os::fd::AsRawFd;
use std::path::Path;

/// Whether `name` is one of WiredTiger's log files (the log, the pre-allocated and
/// the temporary ones).
pub(crate) fn is_log_file(name: &str) -> bool {
    ["WiredTigerLog.", "WiredTigerPreplog.", "WiredTigerTmplog."]
        .iter()
        .any(|p| name.starts_with(p))
}

/// Advises the kernel to drop the cached pages of every log file in `home`: returns
/// how many files were advised. A file removed meanwhile is skipped; nothing here
/// changes a file's contents or what is durable (writeback only starts sooner).
pub(crate) fn drop_log_pages(home: &Path) -> usize {
    let Ok(dir) = std::fs::read_dir(home) else {
        return 0;
    };
    let mut n = 0;
    for e in dir.flatten() {
        if !e.file_name().to_str().is_some_and(is_log_file) {
            continue;
        }
        let Ok(f) = std::fs::File::open(e.path()) else {
            continue;
        };
        // SAFETY: posix_fadvise reads no memory of ours; the descriptor is open for
        // the duration of the call.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc == 0 {
            n += 1;
        }
    }
    n
}

/// Bytes of `path` in the OS page cache (`mincore` over a read-only mapping).
#[cfg(test)]
pub(crate) fn cached_bytes(path: &Path) -> u64 {
    let f = std::fs::File::open(path).expect("open");
    let len = f.metadata().expect("stat").len() as usize;
    if len == 0 {
        return 0;
    }
    // SAFETY: a read-only shared mapping of a file open for reading, of its length;
    // mincore writes one byte per page into a vector of that many; unmapped after.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(addr, libc::MAP_FAILED, "mmap {}", path.display());
        let pages = len.div_ceil(4096);
        let mut v = vec![0u8; pages];
        let rc = libc::mincore(addr, len, v.as_mut_ptr());
        libc::munmap(addr, len);
        assert_eq!(rc, 0, "mincore {}", path.display());
        v.iter().filter(|b| *b & 1 == 1).count() as u64 * 4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_log_files_are_dropped_from_the_page_cache() {
        let t = kvtestkit::TempDir::new("wt-oscache");
        std::fs::create_dir_all(t.path()).unwrap();
        let (log, data) = (
            t.path().join("WiredTigerLog.0000000001"),
            t.path().join("kv.wt"),
        );
        for p in [&log, &data] {
            let f = std::fs::File::create(p).unwrap();
            std::io::Write::write_all(&mut &f, &vec![7u8; 8 << 20]).unwrap();
            f.sync_all().unwrap();
        }
        assert!(
            cached_bytes(&log) > 4 << 20,
            "the written log is not cached"
        );
        assert_eq!(drop_log_pages(t.path()), 1);
        assert!(
            cached_bytes(&log) < 1 << 20,
            "{} bytes of the log still cached",
            cached_bytes(&log)
        );
        assert!(cached_bytes(&data) > 4 << 20, "a data file was dropped too");
        assert!(is_log_file("WiredTigerPreplog.0000000002"));
        assert!(!is_log_file("WiredTiger.wt") && !is_log_file("WiredTigerLAS.wt"));
    }
}
