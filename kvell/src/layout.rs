//! The layout record of a data directory (`kvell.layout`): the worker count, the
//! number of directories and the item format it was created with. Opening it with
//! another layout is refused (`InvalidArgument`) rather than silently mis-routing
//! keys; O_DIRECT is probed here too, so a file system that refuses it (tmpfs) gives
//! a clear error. The record is written whole or not at all (temporary file, sync,
//! rename, directory sync).

use crate::config::{Config, IoMode};
use kvapi::{Error, Result};
use std::path::Path;

const LAYOUT_FILE: &str = "kvell.layout";

/// Checks (or records) the worker layout of a directory, and that O_DIRECT works.
pub(crate) fn check_layout(dir: &Path, cfg: &Config) -> Result<()> {
    // The checksum line is only written when on, so directories made before the
    // option existed (plain items) still match `checksum=false`.
    let want = format!(
        "format=1\nworkers={}\ndirs={}\n{}",
        cfg.workers,
        cfg.dirs.len(),
        if cfg.checksum { "checksum=true\n" } else { "" }
    );
    let path = dir.join(LAYOUT_FILE);
    match std::fs::read_to_string(&path) {
        Ok(found) => {
            if found != want {
                return Err(Error::InvalidArgument(format!(
                    "{} was created with a different layout ({}); open it with the same \
                     kvell.workers, kvell.dir list and kvell.checksum (asked: {})",
                    dir.display(),
                    found.trim().replace('\n', ", "),
                    want.trim().replace('\n', ", ")
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write_durably(dir, &path, &want)?;
        }
        Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
    }
    if cfg.direct && !matches!(cfg.io, IoMode::Sim(_)) {
        let probe = dir.join("kvell.direct-probe");
        let r = crate::io::files::open_file(&probe, true);
        let _ = std::fs::remove_file(&probe);
        if let Err(e) = r {
            if e.raw_os_error() == Some(libc::EINVAL) {
                return Err(Error::InvalidArgument(format!(
                    "{} refuses O_DIRECT (tmpfs?): put kvell.dir on a real filesystem \
                     (tests: set KVTESTBED_TMP) or set kvell.direct=false",
                    dir.display()
                )));
            }
            return Err(Error::io(format!("opening {}", probe.display()), e));
        }
    }
    Ok(())
}

/// Writes the layout record so that a crash leaves it whole or absent: a temporary
/// file written and synced, renamed over the name, then the directory synced (the
/// rename is durable only once its directory is).
fn write_durably(dir: &Path, path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let io = |what: &str, p: &Path, e| Error::io(format!("{what} {}", p.display()), e);
    let tmp = dir.join(format!("{LAYOUT_FILE}.tmp"));
    let mut f = std::fs::File::create(&tmp).map_err(|e| io("creating", &tmp, e))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| io("writing", &tmp, e))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| io("renaming into", path, e))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("syncing the directory", dir, e))
}
