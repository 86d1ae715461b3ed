//! Power-loss images for engines that have no simulated disk of their own (RocksDB,
//! sled, WiredTiger): the method of the file-system crash-testing literature, ALICE
//! (Pillai et al., OSDI 2014: record the system calls, then build the crash states
//! a file system's persistence model allows) and CrashMonkey (Mohan et al., OSDI
//! 2018: crash states at each persistence point, checked against what was synced).
//!
//! 1. **Record** ([`layer`], `preload/`: `record.c`, `files.c`, `names.c`). The
//!    child runs with a shared library in `LD_PRELOAD` that interposes the C
//!    library's file calls: every open and creation, `write`/`pwrite`/`writev`/`pwritev`/`pwritev2` with their
//!    bytes, `ftruncate`/`truncate`, `fallocate`/`posix_fallocate` (and the
//!    `syscall(SYS_fallocate)` WiredTiger uses), `fsync`/`fdatasync` of files and
//!    directories, `sync_file_range`, `msync`, `sync`/`syncfs`, `rename`(`at`,`at2`),
//!    `link`, `unlink`(`at`), `remove`, `mkdir`, `rmdir`, for the files under one
//!    directory, and every write to the child's standard output (its protocol
//!    lines: the acknowledgements). Each record takes its number after the call
//!    returned, from one counter under one lock: an acknowledgement written after
//!    an fsync returned is after it in the recording. A sync also takes a number
//!    before its call: it covers exactly the records below it. O_DIRECT writes are
//!    ordinary `pwrite`s to the layer and are followed (they too are volatile until
//!    a sync: the device's cache). What the layer cannot follow fails the run: a
//!    shared writable mapping of a recorded file, `copy_file_range`/`sendfile` into
//!    one, a rename across the directory's edge, O_TMPFILE, a symbolic link; a file
//!    written through C stdio is named, and its bytes are not modelled.
//! 2. **Freeze and verify** ([`layer::Recorder::freeze`], [`history::History::verify`]).
//!    The parent ends the run by asking the layer to freeze (calls in flight finish
//!    and are recorded, later ones block), then kills the child. Replaying the whole
//!    recording onto the copy of the directory taken before the run must give, byte
//!    for byte, the directory the child left: a change made through a path the layer
//!    does not see (a raw system call, io_uring) fails the run instead of silently
//!    missing from every image.
//! 3. **Model** ([`persistence`]). ext4 in data=ordered mode, held to what it
//!    documents: syncs make a file's changes durable; unsynced changes of bytes
//!    reach the disk whole, torn at 512-byte sectors, or not at all, in any order;
//!    a file's size is any size it had since its last sync, with the bytes that
//!    grew it there whole (ordered mode); names change in the journal's order and
//!    are durable once their directory was fsynced (an fsync of the file is not
//!    enough).
//! 4. **Cut and build** ([`cuts`], [`state`], [`image`]). At each cut (after every
//!    sync, after every acknowledgement, at random records, at the end) the states
//!    `synced` (only what is guaranteed), `all` (everything: what a process kill
//!    leaves) and random ones are built as directories. Opening the engine on each
//!    and checking every acknowledged write is the caller's (`ycsb crash --power`).
//!
//! Files: [`recording`] (the format and its reader), [`layer`] (the library, the
//! child's environment, the freeze), [`history`] (the recording as files, names and
//! syncs), [`persistence`] (the model), [`state`] (one crash state's choices),
//! [`cuts`] (where the power fails), [`image`] (building a state's directory; the
//! replay check), [`rng`]. `DESIGN.md` states the model's limits (what a passing
//! power-loss run does not show) and how it plugs into `ycsb crash`.

pub mod cuts;
pub mod error;
pub mod history;
pub mod image;
pub mod layer;
pub mod persistence;
pub mod recording;
pub mod rng;
pub mod state;

pub use error::{Error, Result};
pub use history::History;
pub use layer::Recorder;
pub use persistence::Durable;
pub use recording::Recording;
pub use state::State;
