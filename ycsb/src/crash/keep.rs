//! The evidence of a failed cycle: the data directory as the kill left it (copied
//! before every reopen) and as the parent's recovery left it, kept aside under a name
//! of its own instead of being deleted.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Copies the tree `from` to `to` (which must not exist): directories, files and
/// symbolic links.
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| Error::io_at("cannot create", to, e))?;
    for e in std::fs::read_dir(from).map_err(|e| Error::io_at("cannot read", from, e))? {
        let e = e.map_err(|e| Error::io_at("cannot read", from, e))?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e
            .file_type()
            .map_err(|e| Error::io_at("cannot stat", &src, e))?;
        if t.is_dir() {
            copy_tree(&src, &dst)?;
        } else if t.is_symlink() {
            let target =
                std::fs::read_link(&src).map_err(|e| Error::io_at("cannot read", &src, e))?;
            std::os::unix::fs::symlink(target, &dst)
                .map_err(|e| Error::io_at("cannot create", &dst, e))?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| Error::io_at("cannot copy", &src, e))?;
        }
    }
    Ok(())
}

/// Bytes of the files under `p` (their lengths, holes included).
pub fn tree_bytes(p: &Path) -> Result<u64> {
    let mut n = 0;
    for e in std::fs::read_dir(p).map_err(|e| Error::io_at("cannot read", p, e))? {
        let e = e.map_err(|e| Error::io_at("cannot read", p, e))?;
        let m = e
            .metadata()
            .map_err(|x| Error::io_at("cannot stat", &e.path(), x))?;
        n += if m.is_dir() {
            tree_bytes(&e.path())?
        } else {
            m.len()
        };
    }
    Ok(n)
}

/// Removes `p` if it exists.
pub fn remove(p: &Path) -> Result<()> {
    match std::fs::remove_dir_all(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io_at("cannot remove", p, e)),
    }
}

/// The image of the data directory as the kill left it: `<data>.as-killed`.
pub fn killed_image(data: &Path) -> PathBuf {
    with_suffix(data, ".as-killed")
}

fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// Whether the data directory was copied as the kill left it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Snapshot {
    Copied,
    /// The directory held more than the limit.
    TooLarge,
    /// The copy met a full file system: the partial copy is removed (the audit goes
    /// on without it; the engine's own data is untouched).
    NoSpace,
}

/// Replaces the image of the data directory as the kill left it, if the directory
/// holds at most `max` bytes (a copy per cycle).
pub fn snapshot(data: &Path, max: u64) -> Result<Snapshot> {
    let img = killed_image(data);
    remove(&img)?;
    if tree_bytes(data)? > max {
        return Ok(Snapshot::TooLarge);
    }
    match copy_tree(data, &img) {
        Ok(()) => Ok(Snapshot::Copied),
        Err(Error::Io { source, .. }) if source.raw_os_error() == Some(libc::ENOSPC) => {
            remove(&img)?;
            Ok(Snapshot::NoSpace)
        }
        Err(e) => Err(e),
    }
}

/// Keeps the evidence of `cycle` in `<data>.kept-cycle<N>` (a new name if that one is
/// taken): `as-killed/` (the image, moved) when there is one, and `after-recovery/`,
/// the data directory itself, moved when the audit stops here (`stop`) and copied
/// when it goes on. Returns the directory.
pub fn keep(data: &Path, cycle: u64, stop: bool) -> Result<PathBuf> {
    let mut dir = with_suffix(data, &format!(".kept-cycle{cycle}"));
    let mut k = 1;
    while dir.exists() {
        k += 1;
        dir = with_suffix(data, &format!(".kept-cycle{cycle}.{k}"));
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::io_at("cannot create", &dir, e))?;
    let img = killed_image(data);
    if img.exists() {
        let to = dir.join("as-killed");
        std::fs::rename(&img, &to).map_err(|e| Error::io_at("cannot move", &img, e))?;
    }
    let to = dir.join("after-recovery");
    if stop {
        std::fs::rename(data, &to).map_err(|e| Error::io_at("cannot move", data, e))?;
    } else {
        copy_tree(data, &to)?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_that_meets_a_full_file_system_is_removed_and_reported() {
        let fs = match kvtestkit::testfs::SmallFs::new("keep-nospace", 16) {
            Ok(fs) => fs,
            Err(why) => return eprintln!("SKIP full-disk snapshot test: {why}"),
        };
        let data = fs.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        // more than half the file system: its copy cannot fit
        let body: Vec<u8> = (0..9u32 << 20).map(|i| (i * 7 + 3) as u8).collect();
        std::fs::write(data.join("f"), &body).unwrap();
        assert_eq!(snapshot(&data, u64::MAX).unwrap(), Snapshot::NoSpace);
        assert!(!killed_image(&data).exists(), "the partial copy was left");
        assert_eq!(std::fs::read(data.join("f")).unwrap(), body);
        // a small directory on the same file system is copied
        std::fs::remove_file(data.join("f")).unwrap();
        std::fs::write(data.join("g"), b"kept").unwrap();
        assert_eq!(snapshot(&data, u64::MAX).unwrap(), Snapshot::Copied);
        assert_eq!(
            std::fs::read(killed_image(&data).join("g")).unwrap(),
            b"kept"
        );
        assert_eq!(snapshot(&data, 1).unwrap(), Snapshot::TooLarge);
        assert!(!killed_image(&data).exists());
    }
}
