//! Checkpoints: which pages the meta file lacks ([`DirtyPages`], per-page ids) and
//! the [`Checkpointer`] that writes them back, writes the WAL header and reclaims
//! log space.

mod checkpointer;
mod dirty;

pub use checkpointer::Checkpointer;
pub use dirty::{DirtyPages, PageCopies, SLICE, sort_list};
