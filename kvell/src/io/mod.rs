//! I/O: the backend seam ([`Backend`], `backend.rs`), aligned buffers (`buf.rs`), the
//! files a backend opens (`files.rs`), the page cache's memory (`pagemem.rs`: a
//! mapping of its own, given back to the OS page by page; `mapped_vec.rs`, recovery's
//! vector in one) and three backends:
//! [`uring`] (io_uring, the default), [`psync`] (plain pread/pwrite, executed at
//! submit time) and [`sim`] (in-memory files that keep "written" apart from
//! "durable", to simulate power loss in tests). How a worker batches its I/O, keeps
//! the queue depth and joins writes of consecutive pages is the worker's I/O queue
//! (`worker/queue.rs`), not a backend's.

mod backend;
pub mod buf;
pub mod files;
pub mod mapped_vec;
pub mod pagemem;
pub mod psync;
pub mod sim;
pub mod uring;

pub use backend::{Backend, FileId, IoDone, IoFlags, IoKind, IoReq};
pub use buf::{AlignedBuf, Arena, BufPool, PAGE, RUN};
pub use mapped_vec::MappedVec;
pub use pagemem::{PageMem, Populator};
