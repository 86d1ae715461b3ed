//! What open finds on disk (DESIGN.md, "Open and replay"): a new database is created
//! (meta superblock, the log zeroed, the header); an existing one has its meta file
//! loaded and checked page by page, its log replayed from the checkpoint, and its
//! index and allocators rebuilt. Nothing is written to an existing database here:
//! the open checkpoint (with the new generation) follows, so a crash during open
//! replays again to the same state.

use crate::checkpoint::DirtyPages;
use crate::config::{Config, Mode};
use crate::format::{BLOCK, UNITS_PER_BLOCK, WalHeader, abs_of, ceil_block, id_of};
use crate::heap::{CacheLimit, Heap, RebuildError};
use crate::image::{Backing, Image, LoadError, check_superblock, seal, unseal};
use crate::io::{Storage, Vfs};
use crate::replay::replay;
use crate::stats::{Stat, Stats};
use kvapi::{Error, Result};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The engine's files, as the I/O seam opened them.
pub struct OpenFiles {
    pub wal: Arc<dyn Storage>,
    pub meta: Arc<dyn Storage>,
    pub data: Arc<dyn Storage>,
    /// Whether all three bypass the OS page cache (O_DIRECT).
    pub direct: bool,
}

/// The database as open found it, for the engine to run.
pub struct Opened {
    pub files: OpenFiles,
    pub heap: Heap,
    /// Pages replay changed (the meta file lacks them).
    pub dirty: DirtyPages,
    /// The WAL header as it is on disk.
    pub header: WalHeader,
    /// Generation of this open's transactions.
    pub generation: u32,
    /// Where the next transaction starts (the end of the replayed log).
    pub head: u64,
    /// The checkpoint's position.
    pub tail: u64,
    /// Why the last replay stopped, for the notes.
    pub replay_stop: String,
}

/// The longest `meta` file an interrupted creation can leave: its superblock page.
const CREATION_META: u64 = BLOCK as u64;

fn ioe(what: &str) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.to_string();
    move |e| Error::io(what, e)
}

fn corrupt(file: &Path, detail: String) -> Error {
    Error::Corruption {
        file: file.to_path_buf(),
        offset: 0,
        detail,
    }
}

fn pool_id() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    (h.finish() as u32) | 1
}

/// Opens the files of `vfs`; creates the database or loads and replays it. Open
/// timings and bytes read go to `stats` (`t0`: when open began).
pub fn open_files(vfs: &dyn Vfs, cfg: &Config, stats: &Stats, t0: Instant) -> Result<Opened> {
    let dsync = cfg.mode == Mode::Dsync;
    // Every file bypasses the OS page cache where the file system allows it: the
    // engine's memory is its own cache and index, within its budget (issue 21).
    let (wal, dw) = vfs
        .open_direct("wal", dsync)
        .map_err(ioe("opening the WAL"))?;
    let (meta, dm) = vfs
        .open_direct("meta", false)
        .map_err(ioe("opening the meta file"))?;
    let (data, dd) = vfs
        .open_direct("data", dsync)
        .map_err(ioe("opening the data file"))?;
    let files = OpenFiles {
        wal,
        meta,
        data,
        direct: dw && dm && dd,
    };
    let (header, repaired) = read_header(files.wal.as_ref(), &cfg.dir.join("wal"))?;
    match header {
        None => create(vfs, files, cfg, stats),
        Some(h) => {
            check_wal_length(files.wal.as_ref(), &h, &cfg.dir.join("wal"))?;
            let mut o = load(files, h, cfg, stats, t0)?;
            if let Some(why) = repaired {
                stats.add(Stat::HeaderCopyRepairs, 1);
                o.replay_stop = format!("{}; {why}", o.replay_stop);
            }
            Ok(o)
        }
    }
}

/// The WAL header: of its two copies (block 0, and the block after the log), the
/// valid one with the larger sequence number; `None` when neither was ever written
/// (block 0 all zero, and no valid copy after the log). A copy that fails its
/// checks while the other is valid is what a crash during a header write leaves (or
/// damage to that copy): the other is used, and the second value says so (for the
/// counters and notes). Both unusable is `Corruption`.
fn read_header(wal: &dyn Storage, path: &Path) -> Result<(Option<WalHeader>, Option<String>)> {
    let len = wal.len().map_err(ioe("reading the WAL's length"))?;
    let read = |off: u64| -> Result<std::result::Result<Option<WalHeader>, String>> {
        let mut b = vec![0u8; BLOCK];
        wal.read_at(&mut b, off)
            .map_err(ioe("reading the WAL header"))?;
        Ok(WalHeader::decode(&b))
    };
    let first = read(0)?;
    // The second copy follows the log the first names; without a first copy, it is
    // the file's last block (the WAL is written whole at creation).
    let second_at = match &first {
        Ok(Some(h)) => (h.log_blocks as u64 + 1) * BLOCK as u64,
        _ => (len / BLOCK as u64).saturating_sub(1) * BLOCK as u64,
    };
    let second = if second_at >= 17 * BLOCK as u64 && second_at + BLOCK as u64 <= len {
        read(second_at)?
    } else {
        Ok(None)
    };
    let corrupt = |offset: u64, detail: String| Error::Corruption {
        file: path.to_path_buf(),
        offset,
        detail,
    };
    match (first, second) {
        (Ok(None), Ok(None) | Err(_)) => Ok((None, None)),
        (Ok(Some(a)), Ok(None)) => Ok((Some(a), None)),
        (Ok(Some(a)), Ok(Some(b))) => {
            if (a.pool_id, a.log_blocks) != (b.pool_id, b.log_blocks) {
                return Err(corrupt(
                    second_at,
                    format!(
                        "the two WAL header copies describe different logs (pool {:#x}, \
                         {} blocks at offset 0; pool {:#x}, {} blocks at {second_at})",
                        a.pool_id, a.log_blocks, b.pool_id, b.log_blocks
                    ),
                ));
            }
            Ok((Some(if b.seq > a.seq { b } else { a }), None))
        }
        (Ok(Some(a)), Err(why)) => Ok((
            Some(a),
            Some(format!(
                "the WAL header copy at offset {second_at} failed its checks ({why}): \
                 the copy at offset 0 used"
            )),
        )),
        (first, Ok(Some(b))) if (b.log_blocks as u64 + 1) * BLOCK as u64 == second_at => {
            let why = match first {
                Err(why) => why,
                _ => "all zero".into(),
            };
            Ok((
                Some(b),
                Some(format!(
                    "the WAL header copy at offset 0 failed its checks ({why}): the copy \
                     at offset {second_at} used"
                )),
            ))
        }
        (Err(why), _) => Err(corrupt(0, format!("{why}, and no valid second copy"))),
        (Ok(None), Ok(Some(_))) => Err(corrupt(
            0,
            "the WAL header at offset 0 is all zero and the copy at the file's end \
             describes another length"
                .into(),
        )),
    }
}

/// The WAL is written whole at creation and never resized: a file shorter than its
/// header's log (truncated after a crash, or by hand) has lost log blocks, and
/// replaying what is left would revert acknowledged writes without a word.
fn check_wal_length(wal: &dyn Storage, h: &WalHeader, path: &Path) -> Result<()> {
    let len = wal.len().map_err(ioe("reading the WAL's length"))?;
    // the header's first copy, the log, the header's second copy
    let want = (h.log_blocks as u64 + 2) * BLOCK as u64;
    if len < want {
        return Err(Error::Corruption {
            file: path.to_path_buf(),
            offset: len,
            detail: format!(
                "the WAL is {len} bytes but its header describes a log of {} blocks \
                 ({want} bytes): the file was truncated, and replaying what is left would \
                 lose acknowledged writes; refusing to open",
                h.log_blocks
            ),
        });
    }
    Ok(())
}

/// Whether the files are what a creation killed before its header write leaves: a
/// `meta` file of at most the superblock (whole and pristine, torn, or zero), an
/// empty `data` file and a log that is all zeros (nothing was ever logged, so nothing
/// was acknowledged). `Err` says what rules it out.
fn interrupted_creation(files: &OpenFiles, meta_len: u64) -> std::result::Result<(), String> {
    if meta_len > CREATION_META {
        return Err(format!(
            "holds more than a creation writes ({CREATION_META} bytes)"
        ));
    }
    let data_len = files
        .data
        .len()
        .map_err(|e| format!("the data file cannot be read: {e}"))?;
    if data_len > 0 {
        return Err(format!("the data file holds {data_len} bytes"));
    }
    let mut page = vec![0u8; BLOCK];
    files
        .meta
        .read_at(&mut page, 0)
        .map_err(|e| format!("the meta file cannot be read: {e}"))?;
    if unseal(&mut page, 0) {
        let pool = crate::format::rd_u32(&page, 8);
        if Some(&page[..]) != Image::new(pool).resident(0) {
            return Err("its superblock is not a new database's".into());
        }
    }
    let wal_len = files
        .wal
        .len()
        .map_err(|e| format!("the WAL cannot be read: {e}"))?;
    let mut buf = vec![0u8; 256 * BLOCK];
    let mut off = BLOCK as u64;
    while off < wal_len {
        let k = (wal_len - off).min(buf.len() as u64) as usize;
        files
            .wal
            .read_at(&mut buf[..k], off)
            .map_err(|e| format!("the WAL cannot be read: {e}"))?;
        if let Some(i) = buf[..k].iter().position(|&b| b != 0) {
            return Err(format!(
                "the WAL holds log data (a non-zero byte at {})",
                off + i as u64
            ));
        }
        off += k as u64;
    }
    Ok(())
}

/// Creates a database: the meta superblock first, the names made durable, then the
/// header, whose presence marks the database as created. A creation killed before its
/// header write is redone (nothing can have been acknowledged) and counted.
fn create(vfs: &dyn Vfs, files: OpenFiles, cfg: &Config, stats: &Stats) -> Result<Opened> {
    let (wal, meta) = (files.wal.as_ref(), files.meta.as_ref());
    // A zero header over a meta file that holds pages is a damaged database, not a
    // new one: creating would overwrite it. Only what an interrupted creation
    // leaves is created again.
    let meta_len = meta.len().map_err(ioe("reading the meta file"))?;
    let mut stop = "created".to_string();
    if meta_len > 0 {
        if let Err(why) = interrupted_creation(&files, meta_len) {
            return Err(Error::Corruption {
                file: cfg.dir.join("wal"),
                offset: 0,
                detail: format!(
                    "the WAL header is missing (zero) but the meta file holds \
                     {meta_len} bytes and {why}: not a creation that was interrupted; \
                     refusing to create a database over it"
                ),
            });
        }
        stats.add(Stat::CreationsRedone, 1);
        stop = format!(
            "created again: an earlier creation was interrupted before its WAL header \
             was written (meta file of {meta_len} bytes, empty log and data file; nothing \
             had been acknowledged)"
        );
    }
    let n = cfg.log_size / BLOCK as u64 - 1;
    let pool = pool_id();
    let mut image = Image::new(pool);
    let mut sb = image.resident(0).map(<[u8]>::to_vec).unwrap_or_default();
    seal(&mut sb, 0);
    meta.write_at(&sb, 0)
        .and_then(|()| meta.sync())
        .map_err(ioe("creating the meta file"))?;
    // The three names must outlive a power cut before the header says they exist.
    vfs.sync_dir()
        .map_err(ioe("syncing the database directory"))?;
    // Write the whole log once (zeros) so that later WAL writes overwrite allocated
    // blocks: a sync then has no file metadata to commit.
    // the log and the header's second copy after it
    wal.set_len((n + 2) * BLOCK as u64)
        .map_err(ioe("sizing the WAL"))?;
    let zeros = vec![0u8; 256 * BLOCK];
    let mut b = 1;
    while b <= n + 1 {
        let k = (n + 2 - b).min(256) as usize;
        wal.write_at(&zeros[..k * BLOCK], b * BLOCK as u64)
            .map_err(ioe("initialising the WAL"))?;
        b += k as u64;
    }
    let start = n * UNITS_PER_BLOCK; // lap 1, offset 0: an all-zero block never matches
    let h = WalHeader {
        pool_id: pool,
        generation: 1,
        log_blocks: n as u32,
        ckpt_id: id_of(start, n * UNITS_PER_BLOCK),
        commit_id: id_of(start, n * UNITS_PER_BLOCK),
        ckpt_pending: false,
        seq: 1, // the first copy, block 0
    };
    wal.write_at(&h.encode(), 0)
        .and_then(|()| wal.sync())
        .map_err(ioe("writing the WAL header"))?;
    image.back(
        Backing {
            file: files.meta.clone(),
            path: cfg.dir.join("meta"),
        },
        1,
    );
    let heap =
        Heap::rebuild(image, cache_limit(cfg)).map_err(rebuild_err(&cfg.dir.join("meta")))?;
    Ok(Opened {
        files,
        heap,
        dirty: DirtyPages::default(),
        header: h,
        generation: 1,
        head: start,
        tail: start,
        replay_stop: stop,
    })
}

/// The page cache's bound for `cfg`.
fn cache_limit(cfg: &Config) -> CacheLimit {
    match (cfg.memory, cfg.cache) {
        (Some(m), _) => CacheLimit::Budget(m),
        (None, c) if c > 0 => CacheLimit::Bytes(c),
        _ => CacheLimit::None,
    }
}

fn rebuild_err(meta: &Path) -> impl FnOnce(RebuildError) -> Error + '_ {
    move |e| match e {
        RebuildError::Io(e) => Error::io("reading the meta file", e),
        RebuildError::Bad(p, d) => corrupt_at(meta, p, d),
    }
}

fn corrupt_at(file: &Path, page: Option<u32>, detail: String) -> Error {
    Error::Corruption {
        file: file.to_path_buf(),
        offset: page.map_or(0, |p| p as u64 * BLOCK as u64),
        detail,
    }
}

/// Loads the meta superblock, replays the log from the checkpoint (reading the
/// pages it changes on demand) and rebuilds the heap, which reads every other page
/// (each page's CRC checked).
fn load(
    files: OpenFiles,
    h: WalHeader,
    cfg: &Config,
    stats: &Stats,
    t0: Instant,
) -> Result<Opened> {
    let (wal, meta, data) = (files.wal.as_ref(), files.meta.as_ref(), files.data.as_ref());
    let wal_path = &cfg.dir.join("wal");
    let meta_path = &cfg.dir.join("meta");
    let n = h.log_blocks as u64;
    let len = meta.len().map_err(ioe("reading the meta file"))?;
    // A partial last page (an extending write torn by a crash) reads as zeros past
    // the end and fails its CRC unless replay rewrites it.
    let file_pages = (len as usize).div_ceil(BLOCK).max(1);
    let mut sb = vec![0u8; BLOCK].into_boxed_slice();
    meta.read_at(&mut sb, 0)
        .map_err(ioe("reading the meta file"))?;
    stats.add(Stat::BytesRead, BLOCK as u64);
    let sb_ok = unseal(&mut sb, 0);
    let pc0 = check_superblock(&sb, h.pool_id).map_err(|d| corrupt(meta_path, d))?;
    // Pages from `held` on are not in the checkpointed image (past the file, or past
    // the superblock's page count): only replay makes them, from zero.
    let held = file_pages.min(pc0 as usize).max(1);
    let backing = Backing {
        file: files.meta.clone(),
        path: meta_path.clone(),
    };
    let mut image = Image::paged(pc0 as usize, held, backing);
    // A page failing its CRC is accepted only while a checkpoint was rewriting pages
    // and replay rewrites it (a page torn by the crash; replay repairs it). The
    // superblock is checked the same way: accepted now, and replay must rewrite it.
    let mut torn: Vec<u32> = Vec::new();
    if sb_ok {
        image.install(
            crate::image::Miss {
                page: 0,
                flushes: 0,
            },
            &sb,
            usize::MAX,
        );
    } else if h.ckpt_pending {
        image.load_dirty(0, &sb);
        torn.push(0);
    } else {
        return Err(corrupt_at(
            meta_path,
            Some(0),
            "meta page 0 fails its checksum".into(),
        ));
    }
    stats.set_us_since(Stat::OpenMetaLoadUs, t0);
    let t1 = Instant::now();
    let pending = h.ckpt_pending;
    let mut load = |im: &mut Image, p: u32| -> Result<()> {
        match im.load(p, usize::MAX) {
            Ok(()) => {
                stats.add(Stat::BytesRead, BLOCK as u64);
                Ok(())
            }
            Err(LoadError::Checksum(q)) if pending => {
                let mut b = vec![0u8; BLOCK].into_boxed_slice();
                meta.read_at(&mut b, q as u64 * BLOCK as u64)
                    .map_err(ioe("reading the meta file"))?;
                let _ = unseal(&mut b, q as usize);
                im.load_dirty(q, &b);
                torn.push(q);
                Ok(())
            }
            Err(LoadError::Checksum(q)) => Err(corrupt_at(
                meta_path,
                Some(q),
                format!("meta page {q} fails its checksum"),
            )),
            Err(LoadError::Io(e)) => Err(Error::io("reading the meta file", e)),
        }
    };
    let r = replay(wal, data, &h, &mut image, wal_path, &mut load)?;
    let pc = image
        .check_superblock(h.pool_id)
        .map_err(|d| corrupt(meta_path, d))?;
    let replayed: std::collections::HashSet<u32> = r.pages.iter().copied().collect();
    if let Some(&p) = torn.iter().find(|p| !replayed.contains(p)) {
        // only the superblock can be loaded without replay rewriting it
        return Err(corrupt_at(
            meta_path,
            Some(p),
            format!("meta page {p} fails its checksum"),
        ));
    }
    image.resize(pc as usize);
    stats.add(Stat::BytesRead, r.bytes_read);
    stats.set(Stat::ReplayedTxns, r.txns);
    stats.set(Stat::ReplayTornTxns, u64::from(r.torn));
    stats.set(Stat::ReplayDroppedTxns, r.dropped);
    stats.set_us_since(Stat::OpenLogReplayUs, t1);
    let t2 = Instant::now();
    let heap = Heap::rebuild(image, cache_limit(cfg)).map_err(rebuild_err(meta_path))?;
    stats.add(
        Stat::BytesRead,
        (pc as u64).saturating_sub(1) * BLOCK as u64,
    );
    stats.set_us_since(Stat::OpenRebuildUs, t2);
    let pages: Vec<u32> = r
        .pages
        .into_iter()
        .filter(|&p| (p as usize) < pc as usize)
        .collect();
    let mut dirty = DirtyPages::default();
    // the next transaction starts a block: the one replay ended in may hold
    // transactions replayed, and a block is never written twice
    let head = ceil_block(r.end);
    dirty.touch(&pages, r.end);
    Ok(Opened {
        files,
        heap,
        dirty,
        header: h,
        generation: h.generation.wrapping_add(1),
        head,
        tail: abs_of(h.ckpt_id, n * UNITS_PER_BLOCK),
        replay_stop: r.stop,
    })
}
