//! Buffers at 4 KiB-aligned addresses, without unsafe code: a vector one page longer
//! than asked, used from its first aligned byte. O_DIRECT transfers go straight from
//! and to them (no bounce copy), and the engine keeps and reuses them (the page
//! reads of misses, a checkpoint's copies), so that a steady load does not free and
//! reallocate pages: an allocator keeps freed memory for a while (mimalloc, the
//! driver's allocator, per thread), and that memory counts in the budget too.

/// The alignment, the page: a multiple of every sector size.
pub const ALIGN: usize = 4096;

/// `len` bytes at an aligned address.
#[derive(Default)]
pub struct AlignedBuf {
    v: Vec<u8>,
    at: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` zero bytes.
    #[cfg(test)]
    pub fn new(len: usize) -> AlignedBuf {
        let mut b = AlignedBuf::default();
        b.set_len(len);
        b
    }

    /// Makes the buffer `len` bytes long (their content unspecified): the memory is
    /// reused while it is large enough (it never shrinks: whoever keeps a buffer
    /// decides when it holds too much), else reallocated.
    pub fn set_len(&mut self, len: usize) {
        let need = len + ALIGN;
        if self.v.len() < need {
            // the old memory goes before the new is allocated: a checkpoint's copy
            // buffer that grows (tens of MiB) would otherwise be held twice for a
            // moment, a peak the budget pays for (2026-12-03: 1.08 of the budget at
            // 1M records, with every gauge within it)
            self.v = Vec::new();
            self.v = vec![0u8; need];
        }
        self.at = self.v.as_ptr().align_offset(ALIGN).min(ALIGN);
        self.len = len;
    }

    /// Bytes of memory held (what a gauge counts).
    pub fn held(&self) -> usize {
        self.v.capacity()
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.v[self.at..self.at + self.len]
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.v[self.at..self.at + self.len]
    }
}

/// Whether `b` may be handed to an O_DIRECT transfer at `off` as is.
pub fn is_aligned(b: &[u8], off: u64) -> bool {
    b.as_ptr().align_offset(ALIGN) == 0
        && b.len().is_multiple_of(ALIGN)
        && off.is_multiple_of(ALIGN as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_reused() {
        let mut b = AlignedBuf::new(3 * ALIGN);
        assert!(is_aligned(&b, 0) && !is_aligned(&b, 512));
        assert!(!is_aligned(&b[1..], 0) && !is_aligned(&b[..100], 0));
        b[0] = 7;
        let held = b.held();
        b.set_len(ALIGN);
        assert_eq!((b.len(), b.held(), b[0]), (ALIGN, held, 7), "kept");
        b.set_len(64 * ALIGN);
        assert!(is_aligned(&b, 0) && b.held() >= 65 * ALIGN, "grown");
        let held = b.held();
        b.set_len(ALIGN);
        assert_eq!(b.held(), held, "kept");
    }
}
