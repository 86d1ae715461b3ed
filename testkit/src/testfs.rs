//! A small, real file system for full-disk tests: an ext4 image on a loop device.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A small ext4 file system mounted on a loop device, unmounted and removed when
/// dropped. Needs root (mount) and mkfs.ext4.
pub struct SmallFs {
    mnt: PathBuf,
    img: PathBuf,
}

fn ok(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

impl SmallFs {
    /// Makes and mounts a file system of `mib` MiB; `Err` says why it could not
    /// (not root, no mkfs.ext4, mount refused), for the caller to print and skip.
    pub fn new(label: &str, mib: u64) -> Result<SmallFs, String> {
        let uid = Command::new("id")
            .arg("-u")
            .output()
            .map_err(|e| format!("cannot run id: {e}"))?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            return Err("not root: cannot mount a loop file system".into());
        }
        let base = std::env::temp_dir().join(format!("kvtb-fs-{label}-{}", std::process::id()));
        let img = base.with_extension("img");
        let mnt = base.with_extension("mnt");
        let f = std::fs::File::create(&img).map_err(|e| format!("{}: {e}", img.display()))?;
        f.set_len(mib << 20).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&mnt).map_err(|e| e.to_string())?;
        let (i, m) = (img.to_string_lossy(), mnt.to_string_lossy());
        if !ok("mkfs.ext4", &["-q", "-F", &i]) {
            let _ = std::fs::remove_file(&img);
            return Err("mkfs.ext4 failed or is missing".into());
        }
        if !ok("mount", &["-o", "loop", &i, &m]) {
            let _ = std::fs::remove_file(&img);
            return Err("mount -o loop failed".into());
        }
        Ok(SmallFs { mnt, img })
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.mnt
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = std::fs::remove_dir(&self.mnt);
        let _ = std::fs::remove_file(&self.img);
    }
}
