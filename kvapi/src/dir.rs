use crate::{Error, Result};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Name of the file that records which engine owns a data directory.
pub const MARKER_FILE: &str = "KVTESTBED_ENGINE";
const LOCK_FILE: &str = "KVTESTBED_LOCK";
/// Retries of a held lock, 10 ms apart (see `claim_dir`).
const LOCK_RETRIES: u32 = 30;

/// Exclusive ownership of a data directory, held while an engine is open. Dropping it
/// releases the lock.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
    dir: PathBuf,
}

impl DirLock {
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Claims `dir` for `engine`: creates it if missing, refuses a directory that holds
/// another engine's data or unrelated files, records the engine's name in it, and
/// takes an exclusive lock so that a second process (or a second handle in this one)
/// opening the same directory is refused with [`Error::Locked`].
pub fn claim_dir(dir: &Path, engine: &str) -> Result<DirLock> {
    fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("creating data directory {}", dir.display()), e))?;
    let marker = dir.join(MARKER_FILE);
    match fs::read_to_string(&marker) {
        Ok(found) => {
            let found = found.trim();
            if found != engine {
                return Err(Error::WrongEngine {
                    dir: dir.to_path_buf(),
                    expected: engine.to_string(),
                    found: format!("a {found} database"),
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut others = fs::read_dir(dir)
                .map_err(|e| Error::io(format!("reading {}", dir.display()), e))?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != LOCK_FILE);
            if let Some(other) = others.next() {
                return Err(Error::WrongEngine {
                    dir: dir.to_path_buf(),
                    expected: engine.to_string(),
                    found: format!("files of no known engine (such as '{other}')"),
                });
            }
        }
        Err(e) => return Err(Error::io(format!("reading {}", marker.display()), e)),
    }
    let lock_path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io(format!("opening {}", lock_path.display()), e))?;
    // The lock (flock) belongs to the open file, and a child process forked by any
    // thread of this process shares this process's open files until it execs (they
    // are close-on-exec): a directory closed while another thread spawns a program
    // stays locked for that moment. So a held lock is retried for a short while
    // before the directory is reported as in use (a full disk test that runs mkfs
    // beside a close-and-reopen test hit exactly this).
    let mut tries = 0;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if tries < LOCK_RETRIES => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::Locked {
                    dir: dir.to_path_buf(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::io(format!("locking {}", lock_path.display()), e));
            }
        }
    }
    if !marker.exists() {
        let mut m = File::create(&marker)
            .map_err(|e| Error::io(format!("writing {}", marker.display()), e))?;
        writeln!(m, "{engine}")
            .and_then(|()| m.sync_all())
            .map_err(|e| Error::io(format!("writing {}", marker.display()), e))?;
    }
    Ok(DirLock {
        _file: file,
        dir: dir.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kvapi-dir-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn claims_refuses_other_engine_and_locks() {
        let d = tmp("claim");
        let lock = claim_dir(&d, "sled").unwrap();
        assert!(matches!(claim_dir(&d, "sled"), Err(Error::Locked { .. })));
        drop(lock);
        let again = claim_dir(&d, "sled").unwrap();
        drop(again);
        let e = claim_dir(&d, "kvell").unwrap_err();
        assert!(matches!(e, Error::WrongEngine { .. }), "{e}");
        assert!(e.to_string().contains("a sled database"), "{e}");
        fs::remove_dir_all(&d).unwrap();
    }

    /// Close and reopen while another thread keeps spawning programs: a child
    /// shares the lock file until it execs, which without the retries made the
    /// reopen fail with `Locked` now and then.
    #[test]
    fn reopen_while_another_thread_spawns_programs() {
        let d = tmp("spawn");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        let spawner = std::thread::spawn(move || {
            while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::process::Command::new("true").status();
            }
        });
        for _ in 0..20000 {
            drop(claim_dir(&d, "kvell").unwrap());
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spawner.join().unwrap();
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refuses_foreign_files() {
        let d = tmp("foreign");
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("CURRENT"), b"MANIFEST-000001\n").unwrap();
        let e = claim_dir(&d, "kvell").unwrap_err();
        assert!(matches!(e, Error::WrongEngine { .. }), "{e}");
        assert!(e.to_string().contains("CURRENT"), "{e}");
        fs::remove_dir_all(&d).unwrap();
    }
}
