//! 4 KiB-aligned buffers for O_DIRECT I/O.
#![expect(
    unsafe_code,
    reason = "an aligned allocation and the slices over it; each use has its SAFETY note"
)]

use std::alloc::{Layout, alloc_zeroed, dealloc, handle_alloc_error};
use std::ptr::NonNull;
use std::sync::Arc;

use super::pagemem::{map_anonymous, populate_in_steps};

/// Page size of every slab file and every I/O.
pub const PAGE: usize = 4096;

/// A zeroed, 4 KiB-aligned buffer whose length is a multiple of [`PAGE`]: from the
/// heap, or a piece of a mapping in 2 MiB pages ([`AlignedBuf::huge`]).
/// Ownership moves into the I/O backend while an operation is in flight, so the
/// memory the kernel reads or writes cannot be freed or reused before completion.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    /// Bytes in use (the I/O length), a multiple of PAGE, at most `cap`.
    len: usize,
    /// Bytes allocated.
    cap: usize,
    /// The mapping in 2 MiB pages this buffer lies in ([`AlignedBuf::huge`],
    /// [`AlignedBuf::huge_pieces`]), unmapped when its last buffer is dropped; None:
    /// from the global allocator.
    mapping: Option<Arc<HugeMapping>>,
}

/// A private anonymous mapping aligned to and sized in whole 2 MiB pages, shared by
/// the buffers cut from it; unmapped when the last of them is dropped (a buffer in
/// flight is owned by the backend, so the mapping outlives every I/O into it).
struct HugeMapping {
    at: usize,
    len: usize,
}

impl HugeMapping {
    /// A mapping of at least `len` bytes (whole huge pages), advised to be backed by
    /// transparent huge pages and made resident; None where the mapping fails.
    fn new(len: usize) -> Option<HugeMapping> {
        let len = len.max(1).div_ceil(HUGE_PAGE) * HUGE_PAGE;
        // One huge page more than needed, so that an aligned stretch of `len` lies in it.
        let span = len + HUGE_PAGE;
        let raw = map_anonymous(span).ok()?.as_ptr().cast::<libc::c_void>();
        let base = raw as usize;
        let at = base.next_multiple_of(HUGE_PAGE);
        // SAFETY: the head and tail unmapped lie inside the mapping just made (at -
        // base < HUGE_PAGE and at + len <= base + span); the rest, `at..at + len`,
        // page-aligned, stays mapped, and the advice and the population only touch it.
        unsafe {
            if at > base {
                libc::munmap(raw, at - base);
            }
            let tail = base + span - (at + len);
            if tail > 0 {
                libc::munmap((at + len) as *mut libc::c_void, tail);
            }
            // Hints on the aligned stretch: refused, the pages are 4 KiB ones, or
            // made resident at their first touch. Made resident in steps, as the
            // page cache is, so that no other thread waits for the whole of it.
            libc::madvise(at as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            let _ = populate_in_steps(at, len);
        }
        Some(HugeMapping { at, len })
    }
}

impl Drop for HugeMapping {
    fn drop(&mut self) {
        // SAFETY: the aligned stretch `new` kept mapped, unmapped once, when no buffer
        // cut from it is left.
        unsafe {
            libc::munmap(self.at as *mut libc::c_void, self.len);
        }
    }
}

/// One mapping in 2 MiB pages cut into buffers ([`Arena::new`]) that a backend may
/// register with the kernel ([`super::Backend::register`]): holding the arena keeps
/// the mapping, so registered memory stays mapped while the kernel may use it.
#[derive(Clone)]
pub struct Arena {
    mapping: Arc<HugeMapping>,
}

impl Arena {
    /// Buffers cut one after another from one mapping in 2 MiB pages (made resident
    /// as [`AlignedBuf::huge`]'s): `n` of `len` bytes for each `(n, len)` of `cuts`,
    /// in that order, each length rounded up to whole pages. None where the mapping
    /// fails.
    pub fn new(cuts: &[(usize, usize)]) -> Option<(Arena, Vec<AlignedBuf>)> {
        let cuts: Vec<(usize, usize)> = cuts
            .iter()
            .map(|&(n, len)| (n, len.max(1).div_ceil(PAGE) * PAGE))
            .collect();
        let total = cuts.iter().map(|&(n, len)| n * len).sum();
        let m = Arc::new(HugeMapping::new(total)?);
        let mut at = m.at;
        let mut bufs = Vec::new();
        for (n, len) in cuts {
            for _ in 0..n {
                if let Some(ptr) = NonNull::new(at as *mut u8) {
                    bufs.push(AlignedBuf {
                        ptr,
                        len,
                        cap: len,
                        mapping: Some(Arc::clone(&m)),
                    });
                }
                at += len;
            }
        }
        Some((Arena { mapping: m }, bufs))
    }

    /// Where the mapping starts and its length in bytes (whole 2 MiB pages).
    pub fn span(&self) -> (usize, usize) {
        (self.mapping.at, self.mapping.len)
    }

    /// Whether `buf` lies in this arena.
    pub fn holds(&self, buf: &AlignedBuf) -> bool {
        buf.mapping
            .as_ref()
            .is_some_and(|m| Arc::ptr_eq(m, &self.mapping))
    }
}

/// Bytes of a transparent huge page (x86-64, arm64 with 4 KiB pages).
pub const HUGE_PAGE: usize = 2 << 20;

// SAFETY: the buffer's bytes are uniquely owned (like a Box<[u8]>): heap memory, or
// a piece of a mapping no other buffer overlaps (the shared `Arc` only keeps the
// mapping alive).
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
        AlignedBuf {
            ptr,
            len,
            cap: len,
            mapping: None,
        }
    }

    /// A zeroed buffer of `len` bytes rounded up to whole pages, in a mapping of its
    /// own aligned to and sized in whole 2 MiB pages, which the kernel is asked to
    /// back with transparent huge pages (`MADV_HUGEPAGE`) and which is made resident
    /// here (`MADV_POPULATE_WRITE`). A large O_DIRECT I/O is then one physically
    /// contiguous segment per 2 MiB: from 4 KiB pages a 1 MiB read is 256 segments,
    /// over what a virtio disk takes in one request (254), so the block layer splits
    /// it, and two 1 MiB reads never merge. On the development VM 1 MiB sequential
    /// reads at 8 in flight measured 2.9-3.2 GB/s from huge pages against 1.5-2.2
    /// from 4 KiB ones, and fio the same (`--mem=shmhuge` 2.9 against malloc's 1.7),
    /// 2026-12-05. The advice is a hint: where the kernel has no huge page to give,
    /// the buffer works the same in 4 KiB pages ([`AlignedBuf::huge_bytes`] says
    /// which). Where the mapping itself fails, a heap buffer ([`AlignedBuf::new`]).
    pub fn huge(len: usize) -> AlignedBuf {
        AlignedBuf::huge_pieces(1, len)
            .pop()
            .unwrap_or_else(|| AlignedBuf::new(len))
    }

    /// `n` zeroed buffers of `len` bytes each (rounded up to whole pages), cut one
    /// after another from one mapping in 2 MiB pages as [`AlignedBuf::huge`]'s: many
    /// I/Os in flight at once from few huge pages (a mapping of its own each would
    /// make a whole 2 MiB page resident for every buffer). Where the mapping fails,
    /// heap buffers.
    pub fn huge_pieces(n: usize, len: usize) -> Vec<AlignedBuf> {
        let len = len.max(1).div_ceil(PAGE) * PAGE;
        match Arena::new(&[(n, len)]) {
            Some((_, bufs)) => bufs,
            None => (0..n).map(|_| AlignedBuf::new(len)).collect(),
        }
    }

    /// Bytes of this buffer the kernel backs with huge pages now, from the
    /// `AnonHugePages` of the mappings it lies in (`/proc/self/smaps`; the kernel may
    /// have merged it with a neighbouring mapping of the same kind, so each mapping's
    /// count is taken up to the bytes it shares with this buffer): 0 for a heap
    /// buffer, None where the kernel does not say.
    pub fn huge_bytes(&self) -> Option<u64> {
        if self.mapping.is_none() {
            return Some(0);
        }
        let (a, b) = (
            self.ptr.as_ptr() as usize,
            self.ptr.as_ptr() as usize + self.cap,
        );
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut total = 0u64;
        let mut shared = 0u64;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = first.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                shared = hi.min(b).saturating_sub(lo.max(a)) as u64;
            } else if let Some(v) = line.strip_prefix("AnonHugePages:")
                && shared > 0
            {
                let kb: u64 = v.trim().trim_end_matches("kB").trim().parse().ok()?;
                total += (kb * 1024).min(shared);
            }
        }
        Some(total)
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
        if self.mapping.is_some() {
            // the mapping is unmapped with its last buffer (HugeMapping's drop)
            return;
        }
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
    /// Pooled page buffers and run buffers: `[0]` those of the arena (handed out
    /// first, so that I/O uses registered memory whenever it can, and always pooled
    /// again), `[1]` those from the heap.
    free: [Vec<AlignedBuf>; 2],
    runs: [Vec<AlignedBuf>; 2],
    bytes: u64,
    /// Where the first buffers were cut from ([`BufPool::with_arena`]).
    arena: Option<Arena>,
}

/// Most pages one write of consecutive pages carries (256 KiB; 32 gave 240-245K
/// items/s on a 2M-item load where 64 gave 239-276K, alternating runs).
pub const RUN: usize = 64;

impl BufPool {
    /// A pool whose first `pages` page buffers and `runs` run buffers are cut from
    /// one [`Arena`], for the backend to register (`Backend::register`: reads and
    /// writes into registered memory skip the kernel's pinning of the buffer's pages
    /// at each I/O). The arena is counted in [`BufPool::bytes`] whole (it is resident
    /// from the start); buffers beyond it come from the heap as before. Without a
    /// mapping, a pool without an arena.
    pub fn with_arena(pages: usize, runs: usize) -> BufPool {
        let Some((arena, mut bufs)) = Arena::new(&[(pages, PAGE), (runs, RUN * PAGE)]) else {
            return BufPool::default();
        };
        let run_bufs = bufs.split_off(pages.min(bufs.len()));
        BufPool {
            free: [bufs, Vec::new()],
            runs: [run_bufs, Vec::new()],
            bytes: arena.span().1 as u64,
            arena: Some(arena),
        }
    }

    /// The arena the pool's first buffers were cut from, if any.
    pub fn arena(&self) -> Option<&Arena> {
        self.arena.as_ref()
    }

    fn alloc(&mut self, len: usize) -> AlignedBuf {
        let b = AlignedBuf::new(len);
        self.bytes += b.capacity() as u64;
        b
    }

    /// A buffer of at least `len` bytes; one-page buffers come from the pool.
    /// Contents are unspecified for pooled buffers.
    pub fn get(&mut self, len: usize) -> AlignedBuf {
        if len <= PAGE
            && let Some(b) = self.free[0].pop().or_else(|| self.free[1].pop())
        {
            return b;
        }
        self.alloc(len)
    }

    /// A buffer of `RUN` pages for one write of consecutive pages (the caller
    /// shortens it with `set_len`). Contents are unspecified.
    pub fn get_run(&mut self) -> AlignedBuf {
        match self.runs[0].pop().or_else(|| self.runs[1].pop()) {
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

    /// A buffer back: the arena's always pooled, up to 1024 page buffers and 8 run
    /// buffers from the heap, the rest freed.
    pub fn put(&mut self, mut buf: AlignedBuf) {
        let heap = usize::from(!self.arena.as_ref().is_some_and(|a| a.holds(&buf)));
        if buf.capacity() == PAGE && (heap == 0 || self.free[1].len() < 1024) {
            self.free[heap].push(buf);
        } else if buf.capacity() == RUN * PAGE && (heap == 0 || self.runs[1].len() < 8) {
            buf.set_len(RUN * PAGE);
            self.runs[heap].push(buf);
        } else {
            self.drop_large(buf);
        }
    }

    /// Bytes of the buffers this pool allocated that still exist (pooled, in a
    /// prepared write or in flight), plus the pool's own lists.
    pub fn bytes(&self) -> u64 {
        let lists = self
            .free
            .iter()
            .chain(&self.runs)
            .map(Vec::capacity)
            .sum::<usize>()
            * size_of::<AlignedBuf>();
        self.bytes + lists as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_buffer_is_zeroed_aligned_to_a_huge_page_and_sized_in_whole_pages() {
        let mut b = AlignedBuf::huge(5000);
        assert_eq!(b.len(), 2 * PAGE);
        assert_eq!(b.capacity(), 2 * PAGE);
        assert_eq!(b.as_ptr() as usize % HUGE_PAGE, 0);
        assert!(b.iter().all(|&x| x == 0));
        b.fill(7);
        assert!(b.iter().all(|&x| x == 7));
        // what the kernel backs with huge pages is at most the buffer, and a heap
        // buffer has none
        assert!(b.huge_bytes().is_some_and(|h| h <= 2 * PAGE as u64));
        assert_eq!(AlignedBuf::new(PAGE).huge_bytes(), Some(0));
    }

    #[test]
    fn pieces_of_one_mapping_lie_side_by_side_and_outlive_each_other() {
        let mut pieces = AlignedBuf::huge_pieces(8, 512 << 10);
        assert_eq!(pieces.len(), 8);
        assert_eq!(pieces[0].as_ptr() as usize % HUGE_PAGE, 0);
        for (i, p) in pieces.iter().enumerate() {
            assert_eq!(p.capacity(), 512 << 10);
            assert_eq!(
                p.as_ptr() as usize,
                pieces[0].as_ptr() as usize + i * (512 << 10)
            );
            assert!(p.iter().all(|&x| x == 0));
        }
        // the mapping stays while any piece does: drop all but the last, then write it
        let mut last = pieces.pop().unwrap();
        drop(pieces);
        last.fill(9);
        last.set_len(PAGE);
        assert!(last.iter().all(|&x| x == 9));
        assert!(last.huge_bytes().is_some_and(|h| h <= 512 << 10));
    }

    #[test]
    fn a_pool_hands_out_its_arena_first_then_heap_buffers_and_keeps_the_arena() {
        let mut pool = BufPool::with_arena(2, 1);
        let arena = pool.arena().expect("an anonymous mapping").clone();
        let (at, len) = arena.span();
        assert_eq!(len, HUGE_PAGE);
        // the arena whole, and the pool's lists
        assert!((len as u64..len as u64 + 1024).contains(&pool.bytes()));
        let inside = |b: &AlignedBuf| {
            let p = b.as_ptr() as usize;
            p >= at && p + b.capacity() <= at + len
        };
        let pages: Vec<AlignedBuf> = (0..3).map(|_| pool.get(PAGE)).collect();
        assert!(inside(&pages[0]) && inside(&pages[1]) && arena.holds(&pages[0]));
        assert!(!inside(&pages[2]) && !arena.holds(&pages[2]));
        let run = pool.get_run();
        assert!(inside(&run) && run.capacity() == RUN * PAGE);
        assert!(!inside(&pool.get_run()));
        for b in pages {
            pool.put(b);
        }
        pool.put(run);
        // back in the pool, the arena's buffers come out again first
        assert!(inside(&pool.get(PAGE)) && inside(&pool.get_run()));
    }
}
