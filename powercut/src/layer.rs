//! The recording layer seen from the parent: the shared library (compiled from
//! `preload/*.c` by the build and embedded in this crate, so a binary carries
//! it), the environment that makes a child record, and the freeze that ends a
//! recording without losing a call in flight.
//!
//! A recording of one run lives in a work directory:
//!
//! ```text
//! <work>/libpowercut_record.so  the layer, written out for LD_PRELOAD
//! <work>/base/                  the recorded directory as it was before the run
//! <work>/recording              what the layer wrote
//! <work>/control/               `freeze` (the parent asks), `frozen` (the layer answers)
//! ```

use crate::error::{Error, Result};
use crate::recording::Recording;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The layer's bytes.
pub const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libpowercut_record.so"));

/// The descriptor whose writes the layer records as markers: the child's protocol
/// goes to its standard output.
pub const MARK_FD: i32 = 1;

/// One recorded run of a child, from the parent's side.
#[derive(Clone, Debug)]
pub struct Recorder {
    /// The directory whose files are recorded (an engine's data directory).
    pub root: PathBuf,
    pub work: PathBuf,
}

/// Copies the tree `from` to `to` (created; it must not exist): directories and
/// regular files (anything else is left out, as the layer leaves it out).
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| Error::io("cannot create", to, e))?;
    let entries = std::fs::read_dir(from).map_err(|e| Error::io("cannot read", from, e))?;
    for e in entries {
        let e = e.map_err(|e| Error::io("cannot read", from, e))?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e
            .file_type()
            .map_err(|e| Error::io("cannot stat", &src, e))?;
        if t.is_dir() {
            copy_tree(&src, &dst)?;
        } else if t.is_file() {
            std::fs::copy(&src, &dst).map_err(|e| Error::io("cannot copy", &src, e))?;
        }
    }
    Ok(())
}

/// Removes `p` if it exists.
pub fn remove_tree(p: &Path) -> Result<()> {
    match std::fs::remove_dir_all(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("cannot remove", p, e)),
    }
}

impl Recorder {
    /// Prepares a recording of `root` in `work` (emptied first): writes the layer
    /// out and copies `root` as it is now to `<work>/base` (the state the recording
    /// starts from, taken as durable: the caller has closed whatever wrote it).
    pub fn prepare(root: &Path, work: &Path) -> Result<Recorder> {
        remove_tree(work)?;
        std::fs::create_dir_all(work.join("control"))
            .map_err(|e| Error::io("cannot create", work, e))?;
        let lib = work.join("libpowercut_record.so");
        std::fs::write(&lib, LIBRARY).map_err(|e| Error::io("cannot write", &lib, e))?;
        copy_tree(root, &work.join("base"))?;
        Ok(Recorder {
            root: root.to_path_buf(),
            work: work.to_path_buf(),
        })
    }

    /// The copy of the root as the recording began.
    pub fn base(&self) -> PathBuf {
        self.work.join("base")
    }

    /// The recording file.
    pub fn recording_path(&self) -> PathBuf {
        self.work.join("recording")
    }

    fn control(&self) -> PathBuf {
        self.work.join("control")
    }

    /// Makes `cmd` run under the layer, recording the root and the child's standard
    /// output as markers. Nothing else in `cmd` changes.
    pub fn apply(&self, cmd: &mut Command) {
        cmd.env("LD_PRELOAD", self.work.join("libpowercut_record.so"))
            .env("POWERCUT_ROOT", &self.root)
            .env("POWERCUT_LOG", self.recording_path())
            .env("POWERCUT_MARK_FD", MARK_FD.to_string())
            .env("POWERCUT_CONTROL", self.control());
    }

    /// Freezes the recorded child: the calls in flight finish and are recorded,
    /// every later one blocks for good, the recording ends with FROZEN. Then the
    /// directory on disk is exactly what the recording says (the caller kills the
    /// child). `alive` says whether the child still runs: a child that died cannot
    /// answer, and the wait ends at once.
    pub fn freeze(&self, timeout: Duration, alive: &mut dyn FnMut() -> bool) -> Result<()> {
        let ask = self.control().join("freeze");
        std::fs::write(&ask, b"").map_err(|e| Error::io("cannot create", &ask, e))?;
        let done = self.control().join("frozen");
        let until = Instant::now() + timeout;
        while !done.exists() {
            if Instant::now() > until {
                return Err(Error::Timeout(format!(
                    "the recorded child did not freeze within {} s",
                    timeout.as_secs()
                )));
            }
            if !alive() {
                return Err(Error::Timeout(
                    "the recorded child died before it could freeze".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }

    /// Reads what the layer wrote.
    pub fn recording(&self) -> Result<Recording> {
        Recording::read(&self.recording_path())
    }
}
