//! What open finds on disk (DESIGN.md, "Open and replay"): a new database is created
//! (meta superblock, the log zeroed, the header); an existing one has its meta file
//! loaded and checked page by page, its log replayed from the checkpoint, and its
//! index and allocators rebuilt. Nothing is written to an existing database here:
//! the open checkpoint (with the new generation) follows, so a crash during open
//! replays again to the same state.

use crate::checkpoint::DirtyPages;
use crate::config::{Config, Mode};
use crate::format::{BLOCK, WalHeader, abs_of, id_of};
use crate::heap::Heap;
use crate::image::{Image, seal, unseal};
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
    let files = OpenFiles {
        wal: vfs.open("wal", dsync).map_err(ioe("opening the WAL"))?,
        meta: vfs
            .open("meta", false)
            .map_err(ioe("opening the meta file"))?,
        data: vfs
            .open("data", dsync)
            .map_err(ioe("opening the data file"))?,
    };
    let mut hb = vec![0u8; BLOCK];
    files
        .wal
        .read_at(&mut hb, 0)
        .map_err(ioe("reading the WAL header"))?;
    let header = WalHeader::decode(&hb).map_err(|detail| Error::Corruption {
        file: cfg.dir.join("wal"),
        offset: 0,
        detail,
    })?;
    match header {
        None => create(vfs, files, cfg, stats),
        Some(h) => {
            check_wal_length(files.wal.as_ref(), &h, &cfg.dir.join("wal"))?;
            load(files, h, cfg, stats, t0)
        }
    }
}

/// The WAL is written whole at creation and never resized: a file shorter than its
/// header's log (truncated after a crash, or by hand) has lost log blocks, and
/// replaying what is left would revert acknowledged writes without a word.
fn check_wal_length(wal: &dyn Storage, h: &WalHeader, path: &Path) -> Result<()> {
    let len = wal.len().map_err(ioe("reading the WAL's length"))?;
    let want = (h.log_blocks as u64 + 1) * BLOCK as u64;
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
        if page[..] != *Image::new(pool).page(0) {
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
    let image = Image::new(pool);
    let mut sb = image.page(0).to_vec();
    seal(&mut sb, 0);
    meta.write_at(&sb, 0)
        .and_then(|()| meta.sync())
        .map_err(ioe("creating the meta file"))?;
    // The three names must outlive a power cut before the header says they exist.
    vfs.sync_dir()
        .map_err(ioe("syncing the database directory"))?;
    // Write the whole log once (zeros) so that later WAL writes overwrite allocated
    // blocks: a sync then has no file metadata to commit.
    wal.set_len((n + 1) * BLOCK as u64)
        .map_err(ioe("sizing the WAL"))?;
    let zeros = vec![0u8; 256 * BLOCK];
    let mut b = 1;
    while b <= n {
        let k = (n + 1 - b).min(256) as usize;
        wal.write_at(&zeros[..k * BLOCK], b * BLOCK as u64)
            .map_err(ioe("initialising the WAL"))?;
        b += k as u64;
    }
    let start = n; // lap 1, offset 0: an all-zero block never matches
    let h = WalHeader {
        pool_id: pool,
        generation: 1,
        log_blocks: n as u32,
        ckpt_id: id_of(start, n),
        commit_id: id_of(start, n),
        ckpt_pending: false,
    };
    wal.write_at(&h.encode(), 0)
        .and_then(|()| wal.sync())
        .map_err(ioe("writing the WAL header"))?;
    let heap = Heap::rebuild(image).map_err(|d| corrupt(&cfg.dir.join("meta"), d))?;
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

/// Loads the meta file (every page's CRC checked), replays the log from the
/// checkpoint and rebuilds the heap.
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
    let count = (len as usize).div_ceil(BLOCK).max(1);
    let mut pages = Vec::with_capacity(count);
    const CHUNK: usize = 256;
    let mut buf = vec![0u8; CHUNK * BLOCK];
    let mut p = 0;
    while p < count {
        let k = CHUNK.min(count - p);
        meta.read_at(&mut buf[..k * BLOCK], (p * BLOCK) as u64)
            .map_err(ioe("reading the meta file"))?;
        pages.extend(buf[..k * BLOCK].chunks(BLOCK).map(Box::<[u8]>::from));
        p += k;
    }
    stats.add(Stat::BytesRead, (count * BLOCK) as u64);
    // Pages failing their CRC are allowed only if replay rewrites them (a
    // checkpoint torn by a crash); checked after replay.
    let bad: Vec<usize> = pages
        .iter_mut()
        .enumerate()
        .filter_map(|(p, b)| (!unseal(b, p)).then_some(p))
        .collect();
    let mut image = Image::from_pages(pages);
    let pc0 = image
        .check_superblock(h.pool_id)
        .map_err(|d| corrupt(meta_path, d))?;
    stats.set_us_since(Stat::OpenMetaLoadUs, t0);
    let t1 = Instant::now();
    let r = replay(wal, data, &h, &mut image, wal_path)?;
    let pc = image
        .check_superblock(h.pool_id)
        .map_err(|d| corrupt(meta_path, d))?;
    let replayed: std::collections::HashSet<u32> = r.pages.iter().copied().collect();
    // A page failing its CRC is accepted only while a checkpoint was rewriting
    // pages and replay rewrites it; a page past the end of the file only if replay
    // creates it. Pages from `held` on are not in the checkpointed image (past the
    // file, or past the superblock's page count): only replay makes them.
    let held = count.min(pc0 as usize);
    let unchecked = bad.into_iter().chain(held..pc as usize).find(|&p| {
        let replay_writes = replayed.contains(&(p as u32));
        p < pc as usize && !(replay_writes && (p >= held || h.ckpt_pending))
    });
    if let Some(p) = unchecked {
        return Err(Error::Corruption {
            file: meta_path.to_path_buf(),
            offset: (p * BLOCK) as u64,
            detail: if p < count {
                format!("meta page {p} fails its checksum")
            } else {
                format!("meta page {p} is missing (file of {count} pages)")
            },
        });
    }
    image.resize(pc as usize);
    stats.add(Stat::BytesRead, r.bytes_read);
    stats.set(Stat::ReplayedTxns, r.txns);
    stats.set(Stat::ReplayTornTxns, u64::from(r.torn));
    stats.set(Stat::ReplayDroppedTxns, r.dropped);
    stats.set_us_since(Stat::OpenLogReplayUs, t1);
    let t2 = Instant::now();
    let heap = Heap::rebuild(image).map_err(|d| corrupt(meta_path, d))?;
    stats.set_us_since(Stat::OpenRebuildUs, t2);
    let pages: Vec<u32> = r
        .pages
        .into_iter()
        .filter(|&p| (p as usize) < pc as usize)
        .collect();
    let mut dirty = DirtyPages::default();
    dirty.touch(&pages, r.end);
    Ok(Opened {
        files,
        heap,
        dirty,
        header: h,
        generation: h.generation.wrapping_add(1),
        head: r.end,
        tail: abs_of(h.ckpt_id, n),
        replay_stop: r.stop,
    })
}
