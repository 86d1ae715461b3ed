//! 4 KiB-aligned buffers for O_DIRECT I/O.
#![expect(
    unsafe_code,
    reason = "an aligned allocation and the slices over it; each use has its SAFETY note"
)]

use std::alloc::{Layout, alloc_zeroed, dealloc, handle_alloc_error};
use std::ptr::NonNull;

/// Page size of every slab file and every I/O.
pub const PAGE: usize = 4096;

/// A zeroed, 4 KiB-aligned heap buffer whose length is a multiple of [`PAGE`].
/// Ownership moves into the I/O backend while an operation is in flight, so the
/// memory the kernel reads or writes cannot be freed or reused before completion.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    /// Bytes in use (the I/O length), a multiple of PAGE, at most `cap`.
    len: usize,
    /// Bytes allocated.
    cap: usize,
}

// SAFETY: the buffer is uniquely owned heap memory (like a Box<[u8]>).
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only give out `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes rounded up to whole pages (at least one page).
    pub fn new(len: usize) -> AlignedBuf {
        let len = len.max(1).div_ceil(PAGE) * PAGE;
        #[expect(
            clippy::expect_used,
            reason = "PAGE is a power of two; only a length near isize::MAX fails, and \
                      Vec::with_capacity panics there too"
        )]
        let layout = Layout::from_size_align(len, PAGE).expect("buffer layout");
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| handle_alloc_error(layout));
        AlignedBuf { ptr, len, cap: len }
    }

    /// Uses the first `len` bytes (whole pages, at most the allocation) from now on;
    /// the allocation is kept, so a pooled buffer serves I/Os of several lengths.
    pub fn set_len(&mut self, len: usize) {
        assert!(
            len.is_multiple_of(PAGE) && len > 0 && len <= self.cap,
            "buffer length {len}"
        );
        self.len = len;
    }

    /// Bytes allocated.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for cap >= len initialised (zeroed) bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        #[expect(
            clippy::expect_used,
            reason = "the layout `new` allocated with, so it is valid"
        )]
        let layout = Layout::from_size_align(self.cap, PAGE).expect("buffer layout");
        // SAFETY: allocated in `new` with this exact layout and not freed before.
        unsafe { dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}

/// Reuses page-sized buffers, and buffers of [`RUN`] pages for writes of several
/// consecutive pages, so the hot path does not allocate. It also allocates the
/// buffers of large items (one per I/O, not reused) and counts the bytes of every
/// buffer it allocated that still exists ([`BufPool::bytes`]: in the pool, in a
/// prepared write or in flight), for the worker's memory budget.
#[derive(Default)]
pub struct BufPool {
    free: Vec<AlignedBuf>,
    runs: Vec<AlignedBuf>,
    bytes: u64,
}

/// Most pages one write of consecutive pages carries (256 KiB; 32 gave 240-245K
/// items/s on a 2M-item load where 64 gave 239-276K, alternating runs).
pub const RUN: usize = 64;

impl BufPool {
    fn alloc(&mut self, len: usize) -> AlignedBuf {
        let b = AlignedBuf::new(len);
        self.bytes += b.capacity() as u64;
        b
    }

    /// A buffer of at least `len` bytes; one-page buffers come from the pool.
    /// Contents are unspecified for pooled buffers.
    pub fn get(&mut self, len: usize) -> AlignedBuf {
        if len <= PAGE
            && let Some(b) = self.free.pop()
        {
            return b;
        }
        self.alloc(len)
    }

    /// A buffer of `RUN` pages for one write of consecutive pages (the caller
    /// shortens it with `set_len`). Contents are unspecified.
    pub fn get_run(&mut self) -> AlignedBuf {
        match self.runs.pop() {
            Some(b) => b,
            None => self.alloc(RUN * PAGE),
        }
    }

    /// A zeroed buffer of `len` bytes for a large item's I/O, never pooled: it goes
    /// back with [`BufPool::drop_large`].
    pub fn large(&mut self, len: usize) -> AlignedBuf {
        self.alloc(len)
    }

    /// A large item's buffer is freed.
    pub fn drop_large(&mut self, buf: AlignedBuf) {
        self.bytes -= (buf.capacity() as u64).min(self.bytes);
    }

    pub fn put(&mut self, mut buf: AlignedBuf) {
        if buf.capacity() == PAGE && self.free.len() < 1024 {
            self.free.push(buf);
        } else if buf.capacity() == RUN * PAGE && self.runs.len() < 8 {
            buf.set_len(RUN * PAGE);
            self.runs.push(buf);
        } else {
            self.drop_large(buf);
        }
    }

    /// Bytes of the buffers this pool allocated that still exist (pooled, in a
    /// prepared write or in flight), plus the pool's own lists.
    pub fn bytes(&self) -> u64 {
        let lists = (self.free.capacity() + self.runs.capacity()) * size_of::<AlignedBuf>();
        self.bytes + lists as u64
    }
}
