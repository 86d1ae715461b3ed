//! The I/O seam: every byte the engine reads or writes goes through [`Storage`], and
//! every file is opened through a [`Vfs`]. [`FileVfs`] is the real one (pread/pwrite,
//! fdatasync, optional O_DSYNC); [`MemVfs`] keeps what was written apart from what is
//! durable, so tests can build the files a crash would leave and inject I/O failures.

pub(crate) mod aligned;
mod file;
mod mem;
pub(crate) mod ring;
mod storage;

pub use file::FileVfs;
pub use mem::{Faults, MemFile, MemVfs};
pub use storage::{Storage, Vfs};
