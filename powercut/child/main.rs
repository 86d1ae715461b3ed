//! The child the tests record under the layer: it runs a script of file operations
//! given on its command line against a root directory, prints `done`, and waits on
//! its standard input to be frozen and killed. Lines it prints are the markers
//! (acknowledgements) of the recording.
//!
//! `powercut-child ROOT OP...`, each OP a word and its arguments (paths relative to
//! ROOT, "." for ROOT itself):
//!
//! ```text
//! write P OFF TEXT     pwrite TEXT at OFF (the file is created if missing)
//! fill P OFF BYTE LEN  pwrite LEN copies of the character BYTE at OFF
//! append P TEXT        write TEXT on an O_APPEND descriptor
//! writev P A B         write A and B in one gathered write at the file's position
//! dsync P OFF TEXT     pwrite TEXT at OFF on an O_DSYNC descriptor
//! create P             create P empty (O_TRUNC: an existing file loses its bytes)
//! truncate P LEN       ftruncate P to LEN
//! copy A B             std::fs::copy A to B (copy_file_range: the layer refuses it)
//! parallel K N         K threads, each N times: append `t<k>-<i>;` to `t<k>`,
//!                      fsync it, print `ack-t<k>-<i>` (the files exist already)
//! race P LEN OFF TEXT  a thread truncates P to LEN; once the file's size is LEN
//!                      this thread pwrites TEXT at OFF (past LEN): the write
//!                      overlaps the truncation's recording, not its call
//! fsync P              fsync P (a file or a directory)
//! fdatasync P          fdatasync P
//! rename A B           rename A to B
//! unlink P             unlink P
//! mkdir P              mkdir P
//! ack TEXT             print TEXT as a line
//! bypass P TEXT        have a child of its own (not recorded) append TEXT to P
//! ```

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Error, ErrorKind, IoSlice, Read, Result, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

fn bad(what: String) -> Error {
    Error::new(ErrorKind::InvalidInput, what)
}

struct Script<'a> {
    root: PathBuf,
    words: &'a [String],
    at: usize,
    open: HashMap<String, File>,
}

impl Script<'_> {
    fn word(&mut self) -> Result<String> {
        let w = self
            .words
            .get(self.at)
            .cloned()
            .ok_or_else(|| bad("the script ends in the middle of an operation".into()))?;
        self.at += 1;
        Ok(w)
    }

    fn number(&mut self) -> Result<u64> {
        let w = self.word()?;
        w.parse().map_err(|_| bad(format!("not a number: {w}")))
    }

    fn path(&self, p: &str) -> PathBuf {
        if p == "." {
            self.root.clone()
        } else {
            self.root.join(p)
        }
    }

    fn file(&mut self, p: &str) -> Result<&File> {
        if !self.open.contains_key(p) {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(self.path(p))?;
            self.open.insert(p.to_string(), f);
        }
        self.open
            .get(p)
            .ok_or_else(|| bad(format!("{p} is not open")))
    }

    fn step(&mut self, op: &str) -> Result<()> {
        match op {
            "write" => {
                let (p, off, text) = (self.word()?, self.number()?, self.word()?);
                self.file(&p)?.write_all_at(text.as_bytes(), off)?;
            }
            "fill" => {
                let (p, off, byte, len) =
                    (self.word()?, self.number()?, self.word()?, self.number()?);
                let b = byte.bytes().next().unwrap_or(b'x');
                self.file(&p)?.write_all_at(&vec![b; len as usize], off)?;
            }
            "append" => {
                let (p, text) = (self.word()?, self.word()?);
                let mut f = OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(self.path(&p))?;
                f.write_all(text.as_bytes())?;
            }
            "writev" => {
                let (p, a, b) = (self.word()?, self.word()?, self.word()?);
                let mut f = self.file(&p)?;
                let bufs = [IoSlice::new(a.as_bytes()), IoSlice::new(b.as_bytes())];
                let n = f.write_vectored(&bufs)?;
                if n != a.len() + b.len() {
                    return Err(bad(format!("a short gathered write: {n} bytes")));
                }
            }
            "dsync" => {
                let (p, off, text) = (self.word()?, self.number()?, self.word()?);
                let f = OpenOptions::new()
                    .write(true)
                    .custom_flags(O_DSYNC)
                    .open(self.path(&p))?;
                f.write_all_at(text.as_bytes(), off)?;
            }
            "create" => {
                let p = self.word()?;
                let f = File::create(self.path(&p))?;
                self.open.insert(p, f);
            }
            "truncate" => {
                let (p, len) = (self.word()?, self.number()?);
                self.file(&p)?.set_len(len)?;
            }
            "race" => {
                let (p, len, off, text) =
                    (self.word()?, self.number()?, self.number()?, self.word()?);
                let f = self.file(&p)?.try_clone()?;
                if f.metadata()?.len() == len {
                    return Err(bad(format!("race: {p} is {len} bytes already")));
                }
                let cutter = f.try_clone()?;
                let t = std::thread::spawn(move || cutter.set_len(len));
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
                while f.metadata()?.len() != len {
                    if std::time::Instant::now() > deadline {
                        return Err(bad("race: the truncation never took effect".into()));
                    }
                    std::thread::yield_now();
                }
                f.write_all_at(text.as_bytes(), off)?;
                t.join()
                    .map_err(|_| bad("the truncating thread panicked".into()))??;
            }
            "copy" => {
                let (a, b) = (self.word()?, self.word()?);
                std::fs::copy(self.path(&a), self.path(&b))?;
            }
            "parallel" => {
                let (k, n) = (self.number()?, self.number()?);
                parallel(&self.root, k, n)?;
            }
            "fsync" | "fdatasync" => {
                let p = self.word()?;
                let path = self.path(&p);
                let f = if path.is_dir() {
                    File::open(&path)?
                } else {
                    self.file(&p)?.try_clone()?
                };
                if op == "fsync" {
                    f.sync_all()?;
                } else {
                    f.sync_data()?;
                }
            }
            "rename" => {
                let (a, b) = (self.word()?, self.word()?);
                std::fs::rename(self.path(&a), self.path(&b))?;
                // a handle keeps its file, under whatever name
                if let Some(f) = self.open.remove(&a) {
                    self.open.insert(b, f);
                }
            }
            "unlink" => {
                let p = self.word()?;
                std::fs::remove_file(self.path(&p))?;
                self.open.remove(&p);
            }
            "mkdir" => {
                let p = self.word()?;
                std::fs::create_dir(self.path(&p))?;
            }
            "ack" => {
                let text = self.word()?;
                println!("{text}");
            }
            "bypass" => {
                let (p, text) = (self.word()?, self.word()?);
                let status = std::process::Command::new(std::env::current_exe()?)
                    .arg("--bypass")
                    .arg(self.path(&p))
                    .arg(text)
                    .status()?;
                if !status.success() {
                    return Err(bad(format!("the bypassing child failed: {status}")));
                }
            }
            other => return Err(bad(format!("unknown operation {other}"))),
        }
        Ok(())
    }
}

/// Linux's O_DSYNC (the same value on x86-64 and aarch64).
const O_DSYNC: i32 = 0o10000;

fn parallel(root: &Path, k: u64, n: u64) -> Result<()> {
    let threads: Vec<_> = (0..k)
        .map(|t| {
            let path = root.join(format!("t{t}"));
            std::thread::spawn(move || -> Result<()> {
                let mut f = OpenOptions::new().append(true).open(path)?;
                for i in 0..n {
                    f.write_all(format!("t{t}-{i};").as_bytes())?;
                    f.sync_data()?;
                    println!("ack-t{t}-{i}");
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join()
            .map_err(|_| bad("a writer thread panicked".into()))??;
    }
    Ok(())
}

fn bypass(path: &Path, text: &str) -> Result<()> {
    let mut f = OpenOptions::new().append(true).create(true).open(path)?;
    f.write_all(text.as_bytes())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--bypass") {
        return match (args.get(1), args.get(2)) {
            (Some(p), Some(t)) => bypass(Path::new(p), t),
            _ => Err(bad("--bypass PATH TEXT".into())),
        };
    }
    let Some((root, words)) = args.split_first() else {
        return Err(bad("usage: powercut-child ROOT OP...".into()));
    };
    let mut s = Script {
        root: PathBuf::from(root),
        words,
        at: 0,
        open: HashMap::new(),
    };
    while s.at < words.len() {
        let op = s.word()?;
        s.step(&op)?;
    }
    println!("done");
    // wait to be frozen and killed: the parent never closes our input first
    let mut sink = Vec::new();
    std::io::stdin().read_to_end(&mut sink)?;
    Ok(())
}
