//! A recording read as a history: the files and directories (by identity, not by
//! inode number: a number the kernel reuses names a new file), each file's changes
//! in order with the size after each, the changes of names, the syncs and the
//! child's markers. What [`crate::persistence`] reasons on and [`crate::image`]
//! builds from.

use crate::error::{Error, Result};
use crate::recording::{FLAG_CREATED, FLAG_DIR, FLAG_FATAL, FLAG_SYNC_WRITE, Kind, Recording};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::Path;

/// A file or a directory, by its index in [`History::files`] or [`History::dirs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    File(usize),
    Dir(usize),
}

/// `fallocate` modes the model knows (the others are refused).
pub const FALLOC_KEEP_SIZE: u16 = 0x01;
pub const FALLOC_PUNCH_HOLE: u16 = 0x02;
pub const FALLOC_ZERO_RANGE: u16 = 0x10;
const FALLOC_COLLAPSE_RANGE: u16 = 0x08;
const FALLOC_INSERT_RANGE: u16 = 0x20;

/// What a change does to a file's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    /// The bytes of the recording in `data` at `offset`.
    Write { offset: u64, data: Range<usize> },
    /// The file cut (or extended with zeros) to `len`.
    Truncate { len: u64 },
    /// Bytes `range` read as zeros (a punched hole, a zeroed range).
    Zero { range: Range<u64> },
    /// Space allocated up to `end`; the size may grow (zeros), the bytes do not
    /// change.
    Allocate { end: u64 },
}

/// One change of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Index of its record in the recording.
    pub index: usize,
    pub seq: u64,
    pub edit: Edit,
    pub size_before: u64,
    pub size_after: u64,
    /// Durable when its call returned (O_SYNC, O_DSYNC, RWF_DSYNC).
    pub sync_write: bool,
}

impl Change {
    /// Whether it changes the file's size (metadata, ordered with the data it
    /// exposes in data=ordered mode).
    pub fn resizes(&self) -> bool {
        self.size_before != self.size_after
    }
}

/// A regular file.
#[derive(Clone, Debug, Default)]
pub struct File {
    /// Its bytes when the recording began (a file of the base copy), else empty.
    pub base: Vec<u8>,
    pub changes: Vec<Change>,
    /// Its name when it was created (or in the base).
    pub first_name: String,
    /// Written through C stdio: its bytes are not in the recording; an image gives
    /// it the bytes the run left ([`History::verify`] reads them).
    pub stdio: bool,
    pub final_bytes: Option<Vec<u8>>,
}

/// What a change of names does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameOp {
    /// A new file (an open that created it) or directory (mkdir).
    Create {
        path: String,
        node: Node,
    },
    /// unlink, rmdir.
    Remove {
        path: String,
    },
    Rename {
        from: String,
        to: String,
    },
    Link {
        from: String,
        to: String,
    },
}

/// One change of names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameChange {
    pub index: usize,
    pub seq: u64,
    pub op: NameOp,
    /// The directories whose entries it changes: it is durable once each of them
    /// was synced after it.
    pub dirs: Vec<usize>,
}

/// What a sync makes durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `fsync`/`fdatasync` of a file: its bytes and size.
    File(usize),
    /// `fsync` of a directory: its entries.
    Dir(usize),
    /// `sync`, `syncfs`: everything.
    All,
}

/// One completed sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sync {
    pub index: usize,
    /// It covers what was recorded with a number below this.
    pub start: u64,
    pub target: Target,
}

/// The history of one recorded run.
#[derive(Debug)]
pub struct History {
    pub recording: Recording,
    /// The names under the root when the recording began (the root itself is dir 0
    /// and has no entry).
    pub base_names: BTreeMap<String, Node>,
    pub files: Vec<File>,
    /// The path each directory was created at (dir 0: the root, "").
    pub dirs: Vec<String>,
    pub names: Vec<NameChange>,
    pub syncs: Vec<Sync>,
    /// Records of the marker descriptor: the index and the bytes.
    pub marks: Vec<(usize, Range<usize>)>,
    /// Records of syncs that make nothing durable (`sync_file_range`, `msync`).
    pub weak_syncs: Vec<usize>,
    /// What the layer noted without refusing the run.
    pub notes: Vec<String>,
}

/// The parent of a relative path ("" for a name in the root).
pub fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// Moves `from` (and everything under it) to `to` in `names`.
pub fn rename_in(names: &mut BTreeMap<String, Node>, from: &str, to: &str) {
    let Some(node) = names.remove(from) else {
        return;
    };
    remove_under(names, to);
    names.remove(to);
    let prefix = format!("{from}/");
    let moved: Vec<(String, Node)> = names
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    for (k, v) in moved {
        names.remove(&k);
        names.insert(format!("{to}/{}", &k[prefix.len()..]), v);
    }
    names.insert(to.to_string(), node);
}

fn remove_under(names: &mut BTreeMap<String, Node>, path: &str) {
    let prefix = format!("{path}/");
    let gone: Vec<String> = names
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .map(|(k, _)| k.clone())
        .collect();
    for k in gone {
        names.remove(&k);
    }
}

/// Applies `op` to `names` (the same rules for the live names and an image's).
pub fn apply_name(names: &mut BTreeMap<String, Node>, op: &NameOp) {
    match op {
        NameOp::Create { path, node } => {
            names.insert(path.clone(), *node);
        }
        NameOp::Remove { path } => {
            remove_under(names, path);
            names.remove(path);
        }
        NameOp::Rename { from, to } => rename_in(names, from, to),
        NameOp::Link { from, to } => {
            if let Some(n) = names.get(from).copied() {
                names.insert(to.clone(), n);
            }
        }
    }
}

/// The size after `edit` of a file of `size` bytes (`keep_size`: an fallocate with
/// FALLOC_FL_KEEP_SIZE).
fn size_after(edit: &Edit, size: u64, keep_size: bool) -> u64 {
    match edit {
        Edit::Write { offset, data } => size.max(offset + (data.end - data.start) as u64),
        Edit::Truncate { len } => *len,
        _ if keep_size => size,
        Edit::Zero { range } => size.max(range.end),
        Edit::Allocate { end } => size.max(*end),
    }
}

struct Builder {
    h: History,
    by_ino: HashMap<u64, Node>,
    live: BTreeMap<String, Node>,
    sizes: Vec<u64>,
    fatal: Vec<String>,
}

impl Builder {
    fn node(&self, ino: u64, what: &str) -> Result<Node> {
        self.by_ino.get(&ino).copied().ok_or_else(|| {
            Error::Unsupported(format!(
                "{what} of inode {ino}, which the recording never saw opened or made"
            ))
        })
    }

    fn file(&self, ino: u64, what: &str) -> Result<usize> {
        match self.node(ino, what)? {
            Node::File(f) => Ok(f),
            Node::Dir(_) => Err(Error::Unsupported(format!("{what} of a directory"))),
        }
    }

    fn dir_of(&self, path: &str) -> Result<usize> {
        match self.live.get(parent(path)).copied() {
            Some(Node::Dir(d)) => Ok(d),
            _ if parent(path).is_empty() => Ok(0),
            _ => Err(Error::Unsupported(format!(
                "a name in a directory the recording does not know: {path}"
            ))),
        }
    }

    fn name(&mut self, index: usize, seq: u64, op: NameOp, dirs: Vec<usize>) {
        apply_name(&mut self.live, &op);
        let mut dirs = dirs;
        dirs.dedup();
        self.h.names.push(NameChange {
            index,
            seq,
            op,
            dirs,
        });
    }

    fn change(
        &mut self,
        f: usize,
        index: usize,
        seq: u64,
        edit: Edit,
        keep_size: bool,
        sync: bool,
    ) {
        let size_before = self.sizes[f];
        let size_after = size_after(&edit, size_before, keep_size);
        self.sizes[f] = size_after;
        self.h.files[f].changes.push(Change {
            index,
            seq,
            edit,
            size_before,
            size_after,
            sync_write: sync,
        });
    }

    fn new_file(&mut self, name: String, base: Vec<u8>) -> Node {
        self.sizes.push(base.len() as u64);
        self.h.files.push(File {
            base,
            first_name: name,
            ..File::default()
        });
        Node::File(self.h.files.len() - 1)
    }

    fn new_dir(&mut self, name: String) -> Node {
        self.h.dirs.push(name);
        Node::Dir(self.h.dirs.len() - 1)
    }

    fn record(&mut self, i: usize, base_dir: &Path) -> Result<()> {
        let r = self.h.recording.records[i].clone();
        let path = self.h.recording.path(&r);
        let dir = r.flags & FLAG_DIR != 0;
        match r.kind {
            Kind::Root => {
                self.by_ino.insert(r.ino, Node::Dir(0));
            }
            Kind::Base => {
                let node = if dir {
                    self.new_dir(path.clone())
                } else {
                    let p = base_dir.join(&path);
                    let bytes = std::fs::read(&p)
                        .map_err(|e| Error::io("cannot read the base copy", &p, e))?;
                    if bytes.len() as u64 != r.a {
                        return Err(Error::Unsupported(format!(
                            "{path} had {} bytes when the recording began, {} in the base copy",
                            r.a,
                            bytes.len()
                        )));
                    }
                    self.new_file(path.clone(), bytes)
                };
                self.by_ino.insert(r.ino, node);
                self.live.insert(path.clone(), node);
                self.h.base_names.insert(path, node);
            }
            Kind::Open if r.flags & FLAG_CREATED != 0 => {
                let d = self.dir_of(&path)?;
                let node = if dir {
                    self.new_dir(path.clone())
                } else {
                    self.new_file(path.clone(), Vec::new())
                };
                self.by_ino.insert(r.ino, node);
                self.name(i, r.seq, NameOp::Create { path, node }, vec![d]);
            }
            Kind::Open => {
                let node = self.node(r.ino, &format!("an open of {path}"))?;
                if self.live.get(&path) != Some(&node) && !path.is_empty() {
                    self.h.notes.push(format!(
                        "{path} was opened as a file the recording knows under another name"
                    ));
                }
            }
            Kind::Write => {
                let f = self.file(r.ino, "a write")?;
                let edit = Edit::Write {
                    offset: r.a,
                    data: r.data.clone(),
                };
                self.change(f, i, r.seq, edit, false, r.flags & FLAG_SYNC_WRITE != 0);
            }
            Kind::Truncate => {
                let f = self.file(r.ino, "a truncate")?;
                self.change(f, i, r.seq, Edit::Truncate { len: r.a }, false, false);
            }
            Kind::Fallocate => {
                let f = self.file(r.ino, "an fallocate")?;
                let mode = r.flags;
                if mode & (FALLOC_COLLAPSE_RANGE | FALLOC_INSERT_RANGE) != 0 {
                    return Err(Error::Unsupported(format!(
                        "fallocate mode {mode:#x} (collapse or insert range) on {}",
                        self.h.files[f].first_name
                    )));
                }
                let edit = if mode & (FALLOC_PUNCH_HOLE | FALLOC_ZERO_RANGE) != 0 {
                    Edit::Zero {
                        range: r.a..r.a + r.b,
                    }
                } else {
                    Edit::Allocate { end: r.a + r.b }
                };
                self.change(f, i, r.seq, edit, mode & FALLOC_KEEP_SIZE != 0, false);
            }
            Kind::Fsync => {
                let target = match self.node(r.ino, "an fsync")? {
                    Node::File(f) => Target::File(f),
                    Node::Dir(d) => Target::Dir(d),
                };
                self.h.syncs.push(Sync {
                    index: i,
                    start: r.start,
                    target,
                });
            }
            Kind::SyncAll => self.h.syncs.push(Sync {
                index: i,
                start: r.start,
                target: Target::All,
            }),
            Kind::SyncRange | Kind::Msync => self.h.weak_syncs.push(i),
            Kind::Mkdir => {
                let d = self.dir_of(&path)?;
                let node = self.new_dir(path.clone());
                self.by_ino.insert(r.ino, node);
                self.name(i, r.seq, NameOp::Create { path, node }, vec![d]);
            }
            Kind::Rmdir | Kind::Unlink => {
                let d = self.dir_of(&path)?;
                self.name(i, r.seq, NameOp::Remove { path }, vec![d]);
            }
            Kind::Rename | Kind::Link => {
                let to = self.h.recording.path2(&r);
                if r.kind == Kind::Rename && r.flags & !1 != 0 {
                    return Err(Error::Unsupported(format!(
                        "renameat2 flags {:#x} (exchange, whiteout) on {path}",
                        r.flags
                    )));
                }
                let dirs = vec![self.dir_of(&path)?, self.dir_of(&to)?];
                let op = if r.kind == Kind::Rename {
                    NameOp::Rename { from: path, to }
                } else {
                    NameOp::Link { from: path, to }
                };
                self.name(i, r.seq, op, dirs);
            }
            Kind::Mark => self.h.marks.push((i, r.data.clone())),
            Kind::Stdio => {
                let f = self.file(r.ino, "a C stdio stream")?;
                self.h.files[f].stdio = true;
            }
            Kind::Unsupported => {
                let text = String::from_utf8_lossy(self.h.recording.data(&r)).into_owned();
                if r.flags & FLAG_FATAL != 0 {
                    self.fatal.push(text);
                } else {
                    self.h.notes.push(text);
                }
            }
            Kind::Frozen => {}
        }
        Ok(())
    }
}

impl History {
    /// Reads `recording` against the copy of the root it began from (`base_dir`).
    /// Fails when the layer reported something it cannot follow or the records do
    /// not make a history (a write to a file never opened, ...).
    pub fn new(recording: Recording, base_dir: &Path) -> Result<History> {
        let n = recording.records.len();
        let mut b = Builder {
            h: History {
                recording,
                base_names: BTreeMap::new(),
                files: Vec::new(),
                dirs: vec![String::new()],
                names: Vec::new(),
                syncs: Vec::new(),
                marks: Vec::new(),
                weak_syncs: Vec::new(),
                notes: Vec::new(),
            },
            by_ino: HashMap::new(),
            live: BTreeMap::new(),
            sizes: Vec::new(),
            fatal: Vec::new(),
        };
        if b.h.recording.records.first().map(|r| r.kind) != Some(Kind::Root) {
            return Err(Error::Format(
                "the recording does not begin with ROOT".into(),
            ));
        }
        for i in 0..n {
            b.record(i, base_dir)?;
        }
        if !b.fatal.is_empty() {
            return Err(Error::Unsupported(b.fatal.join("; ")));
        }
        Ok(b.h)
    }

    /// Records by kind, for the report.
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        let mut m = BTreeMap::new();
        for r in &self.recording.records {
            *m.entry(r.kind.name()).or_insert(0) += 1;
        }
        m
    }

    /// The operations recorded (everything but the layer's own bookkeeping: root,
    /// base, markers, frozen).
    pub fn operations(&self) -> u64 {
        self.recording
            .records
            .iter()
            .filter(|r| !matches!(r.kind, Kind::Root | Kind::Base | Kind::Mark | Kind::Frozen))
            .count() as u64
    }

    /// Bytes the recorded writes carried.
    pub fn bytes_written(&self) -> u64 {
        self.recording
            .records
            .iter()
            .filter(|r| r.kind == Kind::Write)
            .map(|r| (r.data.end - r.data.start) as u64)
            .sum()
    }

    /// The names of the files written through C stdio (their bytes are not modelled).
    pub fn stdio_files(&self) -> Vec<String> {
        self.files
            .iter()
            .filter(|f| f.stdio)
            .map(|f| f.first_name.clone())
            .collect()
    }

    /// The names after every change of names.
    pub fn final_names(&self) -> BTreeMap<String, Node> {
        let mut names = self.base_names.clone();
        for n in &self.names {
            apply_name(&mut names, &n.op);
        }
        names
    }

    /// The child's marker text with, for each line, the index of the record that
    /// completed it (its newline): a line exists from that record on.
    pub fn lines(&self) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let mut cur: Vec<u8> = Vec::new();
        for (i, r) in &self.marks {
            for &b in &self.recording.bytes[r.clone()] {
                if b == b'\n' {
                    out.push((String::from_utf8_lossy(&cur).into_owned(), *i));
                    cur.clear();
                } else {
                    cur.push(b);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renaming_a_directory_moves_what_is_under_it() {
        let mut n = BTreeMap::new();
        n.insert("a".to_string(), Node::Dir(1));
        n.insert("a/x".to_string(), Node::File(0));
        n.insert("ab".to_string(), Node::File(1));
        n.insert("b".to_string(), Node::File(2));
        rename_in(&mut n, "a", "b");
        let keys: Vec<&str> = n.keys().map(String::as_str).collect();
        assert_eq!(keys, ["ab", "b", "b/x"]);
        assert_eq!(n["b/x"], Node::File(0));
        apply_name(
            &mut n,
            &NameOp::Remove {
                path: "b".to_string(),
            },
        );
        assert_eq!(n.keys().map(String::as_str).collect::<Vec<_>>(), ["ab"]);
        assert_eq!(parent("a/b/c"), "a/b");
        assert_eq!(parent("c"), "");
    }
}
