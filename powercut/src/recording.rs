//! The recording the layer (`preload/`) writes, and its reader.
//!
//! The file is the magic `PWRCUT01` and then records, each a 56-byte header and
//! its variable part, all integers little-endian:
//!
//! ```text
//! offset  size  field
//!      0     4  len     bytes of the record, header included
//!      4     2  kind    (the Kind values below)
//!      6     2  flags   FLAG_* bits; for FALLOCATE the mode, for SYNC_RANGE the flags
//!      8     8  seq     the record's place in the one order of all records
//!     16     8  start   a sync: the number taken just before its call
//!     24     8  ino     the inode the record is about (0: none)
//!     32     8  a       offset (WRITE, FALLOCATE, SYNC_RANGE), size (TRUNCATE,
//!                       BASE), open flags (OPEN)
//!     40     8  b       length (FALLOCATE, SYNC_RANGE)
//!     48     4  l1      bytes of the first path
//!     52     4  l2      bytes of the second path (RENAME, LINK: the new name)
//!     56    l1  path    relative to the recorded root ("" is the root itself)
//!  56+l1    l2  path2
//! 56+l1+l2  ..  data    the bytes written (WRITE), the text (MARK, UNSUPPORTED)
//! ```
//!
//! `seq` grows by one per record in file order; a sync's `start` is a number taken
//! from the same counter without a record, so a sync covers exactly the records
//! whose `seq` is below its `start` (those appended before its call began).

use crate::error::{Error, Result};
use std::ops::Range;
use std::path::Path;

/// The file's first bytes.
pub const MAGIC: &[u8; 8] = b"PWRCUT01";
const HEADER: usize = 56;

/// BASE, OPEN, MKDIR, FSYNC: the inode is a directory.
pub const FLAG_DIR: u16 = 0x1;
/// OPEN: the call created the file.
pub const FLAG_CREATED: u16 = 0x2;
/// FSYNC: it was `fdatasync`.
pub const FLAG_DATASYNC: u16 = 0x4;
/// WRITE: the descriptor had O_SYNC or O_DSYNC, or the call RWF_SYNC or RWF_DSYNC:
/// durable when it returned.
pub const FLAG_SYNC_WRITE: u16 = 0x8;
/// UNSUPPORTED: the recording cannot stand for the run.
pub const FLAG_FATAL: u16 = 0x10;
/// SYNC_ALL: `syncfs` rather than `sync`.
pub const FLAG_SYNCFS: u16 = 0x20;

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// The recorded root (its real path in `path`).
    Root,
    /// A file or directory present when the recording began (`a`: its size).
    Base,
    /// An open (or creation) of a path under the root.
    Open,
    /// `write`, `pwrite`, `writev`, `pwritev`, `pwritev2`: `data` at offset `a`.
    Write,
    /// `ftruncate`, `truncate`, or `O_TRUNC` on a file that had bytes: size `a`.
    Truncate,
    /// `fallocate`, `posix_fallocate` (mode in `flags`, offset `a`, length `b`).
    Fallocate,
    /// `fsync` or `fdatasync` of a file or a directory.
    Fsync,
    /// `sync_file_range`: written back, not durable (no device flush, no metadata).
    SyncRange,
    /// `sync` or `syncfs`: everything before `start` is durable.
    SyncAll,
    Mkdir,
    Rmdir,
    Unlink,
    /// `rename`, `renameat`, `renameat2` (`flags`: the renameat2 flags).
    Rename,
    Link,
    /// A write to the marker descriptor: the child's protocol text.
    Mark,
    /// A recorded file handed to C stdio (`fopen`, `fdopen`): its writes go through
    /// calls the layer does not see.
    Stdio,
    /// Something the layer cannot follow (`FLAG_FATAL`) or notes.
    Unsupported,
    /// The layer froze: no record follows.
    Frozen,
    /// `msync`: for mappings the layer refuses to follow anyway.
    Msync,
}

impl Kind {
    fn of(k: u16) -> Option<Kind> {
        use Kind::*;
        Some(match k {
            1 => Root,
            2 => Base,
            3 => Open,
            4 => Write,
            5 => Truncate,
            6 => Fallocate,
            7 => Fsync,
            8 => SyncRange,
            9 => SyncAll,
            10 => Mkdir,
            11 => Rmdir,
            12 => Unlink,
            13 => Rename,
            14 => Link,
            15 => Mark,
            16 => Stdio,
            17 => Unsupported,
            18 => Frozen,
            19 => Msync,
            _ => return None,
        })
    }

    /// The name used in counts and reports.
    pub fn name(self) -> &'static str {
        use Kind::*;
        match self {
            Root => "root",
            Base => "base",
            Open => "open",
            Write => "write",
            Truncate => "truncate",
            Fallocate => "fallocate",
            Fsync => "fsync",
            SyncRange => "sync_file_range",
            SyncAll => "sync",
            Mkdir => "mkdir",
            Rmdir => "rmdir",
            Unlink => "unlink",
            Rename => "rename",
            Link => "link",
            Mark => "marker",
            Stdio => "stdio",
            Unsupported => "unsupported",
            Frozen => "frozen",
            Msync => "msync",
        }
    }
}

/// One record (its bytes are ranges of [`Recording::bytes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub kind: Kind,
    pub flags: u16,
    pub seq: u64,
    pub start: u64,
    pub ino: u64,
    pub a: u64,
    pub b: u64,
    pub path: Range<usize>,
    pub path2: Range<usize>,
    pub data: Range<usize>,
}

/// A whole recording.
#[derive(Debug)]
pub struct Recording {
    pub bytes: Vec<u8>,
    pub records: Vec<Record>,
    /// Whether it ends with [`Kind::Frozen`]: the layer froze the child before it
    /// died, so nothing it did is missing from the end.
    pub frozen: bool,
}

fn le(b: &[u8], at: usize, n: usize) -> u64 {
    b[at..at + n]
        .iter()
        .rev()
        .fold(0u64, |v, &x| (v << 8) | u64::from(x))
}

impl Recording {
    /// Reads the recording at `path`.
    pub fn read(path: &Path) -> Result<Recording> {
        let bytes = std::fs::read(path).map_err(|e| Error::io("cannot read", path, e))?;
        Recording::parse(bytes)
    }

    /// Reads a recording from its bytes. A record cut short at the very end (a
    /// child that died while the layer appended) ends the recording there, which
    /// then is not `frozen`.
    pub fn parse(bytes: Vec<u8>) -> Result<Recording> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(Error::Format("no PWRCUT01 magic".into()));
        }
        let mut records = Vec::new();
        let mut at = MAGIC.len();
        let mut frozen = false;
        let mut last_seq = 0;
        while at + HEADER <= bytes.len() {
            let len = le(&bytes, at, 4) as usize;
            if len < HEADER {
                return Err(Error::Format(format!("a record of {len} bytes at {at}")));
            }
            if at + len > bytes.len() {
                break;
            }
            let code = le(&bytes, at + 4, 2) as u16;
            let kind = Kind::of(code)
                .ok_or_else(|| Error::Format(format!("unknown kind {code} at {at}")))?;
            let l1 = le(&bytes, at + 48, 4) as usize;
            let l2 = le(&bytes, at + 52, 4) as usize;
            if HEADER + l1 + l2 > len {
                return Err(Error::Format(format!(
                    "paths longer than the record at {at}"
                )));
            }
            let p = at + HEADER;
            let r = Record {
                kind,
                flags: le(&bytes, at + 6, 2) as u16,
                seq: le(&bytes, at + 8, 8),
                start: le(&bytes, at + 16, 8),
                ino: le(&bytes, at + 24, 8),
                a: le(&bytes, at + 32, 8),
                b: le(&bytes, at + 40, 8),
                path: p..p + l1,
                path2: p + l1..p + l1 + l2,
                data: p + l1 + l2..at + len,
            };
            if r.seq <= last_seq {
                return Err(Error::Format(format!(
                    "record {} numbered {} after {last_seq}",
                    records.len(),
                    r.seq
                )));
            }
            last_seq = r.seq;
            frozen = kind == Kind::Frozen;
            records.push(r);
            at += len;
            if frozen {
                break;
            }
        }
        Ok(Recording {
            bytes,
            records,
            frozen,
        })
    }

    /// The first path of record `r`.
    pub fn path(&self, r: &Record) -> String {
        String::from_utf8_lossy(&self.bytes[r.path.clone()]).into_owned()
    }

    /// The second path of record `r`.
    pub fn path2(&self, r: &Record) -> String {
        String::from_utf8_lossy(&self.bytes[r.path2.clone()]).into_owned()
    }

    /// The data of record `r`.
    pub fn data(&self, r: &Record) -> &[u8] {
        &self.bytes[r.data.clone()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: u16, seq: u64, path: &[u8], data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((HEADER + path.len() + data.len()) as u32).to_le_bytes());
        v.extend_from_slice(&kind.to_le_bytes());
        v.extend_from_slice(&0u16.to_le_bytes());
        v.extend_from_slice(&seq.to_le_bytes());
        for x in [0u64, 7, 100, 0] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(&(path.len() as u32).to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(path);
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn records_read_in_order_and_a_cut_tail_ends_the_recording() {
        let mut b = MAGIC.to_vec();
        b.extend(rec(3, 1, b"db/a", b""));
        b.extend(rec(4, 2, b"", b"hello"));
        let whole = b.clone();
        b.extend(&rec(4, 3, b"", b"cut short")[..20]);
        let r = Recording::parse(b).unwrap();
        assert_eq!(r.records.len(), 2);
        assert!(!r.frozen);
        assert_eq!(r.path(&r.records[0]), "db/a");
        assert_eq!(r.records[1].kind, Kind::Write);
        assert_eq!(r.records[1].ino, 7);
        assert_eq!(r.records[1].a, 100);
        assert_eq!(r.data(&r.records[1]), b"hello");
        let mut f = whole.clone();
        f.extend(rec(18, 3, b"", b""));
        assert!(Recording::parse(f).unwrap().frozen);
        let mut bad = whole;
        bad.extend(rec(99, 3, b"", b""));
        assert!(matches!(Recording::parse(bad), Err(Error::Format(_))));
        assert!(matches!(
            Recording::parse(b"nope".to_vec()),
            Err(Error::Format(_))
        ));
    }
}
