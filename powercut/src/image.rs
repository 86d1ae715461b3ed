//! Building the directory of a crash state, and the check that the recording is
//! whole (replayed in full onto the base copy it gives the directory the run left).
//!
//! A file's durable bytes are built by replaying its changes in order on two
//! buffers: `latest` (the page cache: every change applied) and `durable` (the
//! disk). A change that made it copies the sectors it touched from `latest` to
//! `durable` as they are just after it; a torn one copies some of them; a dropped
//! one copies none. So a sector on disk is always the file's bytes at one moment.
//! At the end `durable` takes the chosen durable size: cut, or grown with zeros.

use crate::error::{Error, Result};
use crate::history::{Change, Edit, File, History, Node, apply_name};
use crate::state::{Fate, State, torn_keeps};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

/// The sector size of the model: the unit a write is torn at.
pub const SECTOR: u64 = 512;

fn edit_latest(latest: &mut Vec<u8>, c: &Change, bytes: &[u8]) -> Range<u64> {
    match &c.edit {
        Edit::Write { offset, data } => {
            let d = &bytes[data.clone()];
            let (o, end) = (*offset as usize, *offset as usize + d.len());
            if latest.len() < end {
                latest.resize(end, 0);
            }
            latest[o..end].copy_from_slice(d);
            *offset..end as u64
        }
        Edit::Truncate { len } => {
            latest.resize(*len as usize, 0);
            0..0
        }
        Edit::Zero { range } => {
            let end = (range.end as usize).min(latest.len().max(c.size_after as usize));
            if latest.len() < c.size_after as usize {
                latest.resize(c.size_after as usize, 0);
            }
            let start = (range.start as usize).min(end);
            latest[start..end].fill(0);
            range.start..end as u64
        }
        Edit::Allocate { .. } => {
            if latest.len() < c.size_after as usize {
                latest.resize(c.size_after as usize, 0);
            }
            0..0
        }
    }
}

/// Copies sector `s` (as far as `latest` reaches) from `latest` to `durable`.
fn copy_sector(durable: &mut Vec<u8>, latest: &[u8], s: u64) {
    let start = (s * SECTOR) as usize;
    let end = (((s + 1) * SECTOR) as usize).min(latest.len());
    if start >= end {
        return;
    }
    if durable.len() < end {
        durable.resize(end, 0);
    }
    durable[start..end].copy_from_slice(&latest[start..end]);
}

/// The bytes `file` holds on disk in `state` (`fs`: the file's choices).
pub fn durable_bytes(file: &File, fs: &crate::state::FileState, bytes: &[u8]) -> Vec<u8> {
    if file.stdio {
        return file.final_bytes.clone().unwrap_or_default();
    }
    let mut latest = file.base.clone();
    let mut durable = file.base.clone();
    for (i, (c, fate)) in file.changes.iter().zip(&fs.fates).enumerate() {
        let touched = edit_latest(&mut latest, c, bytes);
        if let Edit::Truncate { len } = c.edit {
            // metadata: it happened on disk exactly when the durable size is past it
            if i < fs.size_point {
                durable.truncate(len as usize);
            }
            continue;
        }
        // data=ordered: a change of size at or before the durable size made it whole
        let fate = if c.resizes() && i < fs.size_point {
            Fate::Kept
        } else {
            *fate
        };
        if fate == Fate::Dropped {
            continue;
        }
        if touched.is_empty() {
            continue;
        }
        for s in touched.start / SECTOR..touched.end.div_ceil(SECTOR) {
            if let Fate::Torn(seed) = fate
                && !torn_keeps(seed, s)
            {
                continue;
            }
            copy_sector(&mut durable, &latest, s);
        }
    }
    let size = match fs.size_point {
        0 => file.base.len() as u64,
        k => file.changes[k - 1].size_after,
    };
    durable.resize(size as usize, 0);
    durable
}

/// The names of `state`.
pub fn names(h: &History, state: &State) -> BTreeMap<String, Node> {
    let mut names = h.base_names.clone();
    for n in &h.names[..state.names] {
        apply_name(&mut names, &n.op);
    }
    names
}

/// What an image holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Built {
    pub files: u64,
    pub dirs: u64,
    pub bytes: u64,
}

/// Writes the directory of `state` at `dest` (created; it must not exist).
pub fn build(h: &History, state: &State, dest: &Path) -> Result<Built> {
    std::fs::create_dir_all(dest).map_err(|e| Error::io("cannot create", dest, e))?;
    let mut built = Built::default();
    let mut cache: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    for (path, node) in names(h, state) {
        let p = dest.join(&path);
        match node {
            Node::Dir(_) => {
                std::fs::create_dir_all(&p).map_err(|e| Error::io("cannot create", &p, e))?;
                built.dirs += 1;
            }
            Node::File(f) => {
                let b = cache.entry(f).or_insert_with(|| {
                    durable_bytes(&h.files[f], &state.files[f], &h.recording.bytes)
                });
                if let Some(dir) = p.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| Error::io("cannot create", dir, e))?;
                }
                std::fs::write(&p, &b[..]).map_err(|e| Error::io("cannot write", &p, e))?;
                built.files += 1;
                built.bytes += b.len() as u64;
            }
        }
    }
    Ok(built)
}

fn walk(root: &Path, rel: &str, out: &mut BTreeMap<String, Option<Vec<u8>>>) -> Result<()> {
    let dir = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    for e in std::fs::read_dir(&dir).map_err(|e| Error::io("cannot read", &dir, e))? {
        let e = e.map_err(|e| Error::io("cannot read", &dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let r = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let t = e
            .file_type()
            .map_err(|x| Error::io("cannot stat", &e.path(), x))?;
        if t.is_dir() {
            out.insert(r.clone(), None);
            walk(root, &r, out)?;
        } else if t.is_file() {
            let b = std::fs::read(e.path()).map_err(|x| Error::io("cannot read", &e.path(), x))?;
            out.insert(r, Some(b));
        }
    }
    Ok(())
}

/// Reads a directory tree: each path, `None` for a directory, the bytes of a file.
pub fn read_tree(root: &Path) -> Result<BTreeMap<String, Option<Vec<u8>>>> {
    let mut out = BTreeMap::new();
    walk(root, "", &mut out)?;
    Ok(out)
}

fn describe_difference(a: &[u8], b: &[u8]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!(
            "{} bytes replayed, {} on disk, first difference at byte {i}",
            a.len(),
            b.len()
        ),
        None => format!("{} bytes replayed, {} on disk", a.len(), b.len()),
    }
}

impl History {
    /// The check that the recording stands for the run: every change replayed onto
    /// the base copy must give exactly the directory `live` the run left (frozen,
    /// then killed: nothing was in flight). A file written through C stdio is
    /// compared by name only; its bytes are taken from `live` for the images.
    pub fn verify(&mut self, live: &Path) -> Result<()> {
        if !self.recording.frozen {
            return Err(Error::Incomplete(vec![
                "the recording does not end with FROZEN (the child died before the layer froze it)"
                    .into(),
            ]));
        }
        let on_disk = read_tree(live)?;
        let names = self.final_names();
        let mut diffs = Vec::new();
        for (path, node) in &names {
            match (node, on_disk.get(path)) {
                (_, None) => diffs.push(format!("{path}: replayed, not on disk")),
                (Node::Dir(_), Some(Some(_))) => {
                    diffs.push(format!("{path}: a directory replayed, a file on disk"))
                }
                (Node::File(_), Some(None)) => {
                    diffs.push(format!("{path}: a file replayed, a directory on disk"))
                }
                (Node::Dir(_), Some(None)) => {}
                (Node::File(f), Some(Some(bytes))) => {
                    let file = &mut self.files[*f];
                    if file.stdio {
                        file.final_bytes = Some(bytes.clone());
                        continue;
                    }
                    let all = crate::state::FileState {
                        size_point: file.changes.len(),
                        fates: vec![Fate::Kept; file.changes.len()],
                    };
                    let replayed = durable_bytes(file, &all, &self.recording.bytes);
                    if &replayed != bytes {
                        diffs.push(format!("{path}: {}", describe_difference(&replayed, bytes)));
                    }
                }
            }
        }
        for path in on_disk.keys() {
            if !names.contains_key(path) {
                diffs.push(format!("{path}: on disk, never recorded"));
            }
        }
        if diffs.is_empty() {
            Ok(())
        } else {
            diffs.truncate(10);
            Err(Error::Incomplete(diffs))
        }
    }
}
