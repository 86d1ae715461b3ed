//! Memory lent by the OS page by page, for the page cache's frames: an anonymous
//! private mapping of its own (`mmap`), so what of it is resident does not depend on
//! the global allocator (mimalloc, which the driver uses, backs large blocks with
//! transparent huge pages: touching one 4 KiB frame made 2 MiB resident), pages can
//! be given back one at a time (`madvise(MADV_DONTNEED)`: they leave the resident
//! memory at once and read as zeros when touched again), and [`PageMem::resident`]
//! counts the resident pages (`mincore`) for the tests that check it.
#![expect(
    unsafe_code,
    reason = "mmap, munmap, madvise and mincore are libc calls, and the slices over the \
              mapping; each use has its SAFETY note"
)]

use super::PAGE;
use std::io;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// A zeroed anonymous mapping of whole pages, owned like a `Box<[u8]>`.
pub struct PageMem {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is uniquely owned memory (like a Box<[u8]>).
unsafe impl Send for PageMem {}
// SAFETY: shared references only give out `&[u8]`.
unsafe impl Sync for PageMem {}

impl PageMem {
    /// `pages` zeroed pages, none of them resident until touched. `huge`: the kernel
    /// may back them with transparent huge pages (`MADV_HUGEPAGE`: fewer TLB misses,
    /// but a touch makes 2 MiB resident); otherwise it may not (`MADV_NOHUGEPAGE`,
    /// so residency is exact to the 4 KiB page). Either advice is a hint: refused, it
    /// changes nothing.
    pub fn new(pages: usize, huge: bool) -> io::Result<PageMem> {
        let len = pages.max(1) * PAGE;
        let ptr = map_anonymous(len)?;
        let raw = ptr.as_ptr().cast::<libc::c_void>();
        let advice = if huge {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: the range is the mapping just made; the advice only sets the
        // kernel's huge-page policy for it (its bytes do not change).
        let _ = unsafe { libc::madvise(raw, len, advice) };
        Ok(PageMem { ptr, len })
    }

    /// Grows the mapping to `pages` pages (`mremap`, which may move it: the pages
    /// written so far move with their contents, none copied, so growing never holds
    /// the old and the new at once); the new pages read as zeros.
    pub fn grow(&mut self, pages: usize) -> io::Result<()> {
        let len = pages * PAGE;
        if len <= self.len {
            return Ok(());
        }
        // SAFETY: the mapping made in `new` (or moved here before), `&mut self` means
        // no reference to its bytes is alive; on success the old address is no longer
        // used and `ptr`/`len` describe the new mapping, which keeps the old bytes and
        // zero-fills the rest (anonymous memory).
        let raw = unsafe {
            libc::mremap(
                self.ptr.as_ptr().cast(),
                self.len,
                len,
                libc::MREMAP_MAYMOVE,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        self.ptr = NonNull::new(raw.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        self.len = len;
        Ok(())
    }

    fn check(&self, pages: &Range<usize>) -> io::Result<(*mut u8, usize)> {
        if pages.start > pages.end || pages.end > self.len / PAGE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("pages {pages:?} of a mapping of {}", self.len / PAGE),
            ));
        }
        // SAFETY: start <= len / PAGE (checked), so the offset stays within (or one
        // past the end of) the mapping.
        let at = unsafe { self.ptr.as_ptr().add(pages.start * PAGE) };
        Ok((at, pages.len() * PAGE))
    }

    /// Gives pages `pages` back to the OS: they stop counting in the process's
    /// resident memory and read as zeros when next touched. An error leaves them as
    /// they were.
    pub fn release(&mut self, pages: Range<usize>) -> io::Result<()> {
        let (at, len) = self.check(&pages)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the range lies within the mapping (checked) and is page-aligned
        // (the mapping is, and so are whole pages of it); `&mut self` means no
        // reference to its bytes is alive. On a private anonymous mapping
        // MADV_DONTNEED replaces the pages by zero-fill-on-demand ones: the bytes stay
        // initialised (zeros) and the mapping stays ours.
        let r = unsafe { libc::madvise(at.cast(), len, libc::MADV_DONTNEED) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Makes pages `pages` resident (zeroed), as writing a byte of each would, in
    /// calls of [`POPULATE_STEP`] where the kernel has `MADV_POPULATE_WRITE` (Linux
    /// 5.14): no fault per page; elsewhere (the advice refused) one write fault per
    /// page ([`touch_pages`]). Their bytes stay what they were. The cache's first step
    /// (beside recovery's scan, at the scan's priority) is made so: with write faults
    /// instead, two sets of eight alternating pairs of opens of 4M items disagreed
    /// (the scan faster in 6 of 7 pairs, then in 2 of 7), the helper's time rose from
    /// 0.15-0.19 s to 0.20-0.25 s (results/kvell-4m-ab/fill-faults/opens.md).
    pub fn populate(&mut self, pages: Range<usize>) -> io::Result<()> {
        let (at, len) = self.check(&pages)?;
        // SAFETY: the range lies within the mapping (checked) and is page-aligned;
        // `&mut self` means no reference to its bytes is alive. The advice only
        // faults the pages in, writable, as a write would, without changing a byte;
        // so do the writes of `touch_pages`.
        unsafe {
            if len > 0 && populate_in_steps(at as usize, len).is_err() {
                let end = AtomicUsize::new(len / PAGE);
                touch_pages(at as usize, len, &AtomicUsize::new(0), &end);
            }
        }
        Ok(())
    }

    /// A handle that makes pages `pages` resident from another thread, while this
    /// mapping is in use (the page cache's second step, after recovery: see
    /// `PageCache::fill_beside`). The caller keeps the mapping where it is (no
    /// [`PageMem::grow`], no drop) until the handle's work has ended, and until then
    /// reaches the range's pages only once counted made ([`Populator::made`]), each
    /// through [`PageMem::page`] or [`PageMem::page_mut`] (no slice over the whole
    /// mapping, which would cover pages the handle is touching).
    pub fn populator(&self, pages: Range<usize>) -> io::Result<Populator> {
        let (at, len) = self.check(&pages)?;
        Ok(Populator {
            at: at as usize,
            len,
            made: Arc::new(AtomicUsize::new(0)),
            end: Arc::new(AtomicUsize::new(pages.len())),
        })
    }

    /// Page `i` of the mapping (4 KiB).
    ///
    /// # Panics
    /// If the mapping has no page `i`.
    pub fn page(&self, i: usize) -> &[u8] {
        assert!(
            i < self.len / PAGE,
            "page {i} of a mapping of {}",
            self.len / PAGE
        );
        // SAFETY: the page lies within the mapping (asserted), initialised (zero-
        // filled by the kernel), owned by self; the slice covers that page only, so a
        // populator at work on other pages of the mapping writes none of its bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(i * PAGE), PAGE) }
    }

    /// Page `i` of the mapping (4 KiB), writable.
    ///
    /// # Panics
    /// If the mapping has no page `i`.
    pub fn page_mut(&mut self, i: usize) -> &mut [u8] {
        assert!(
            i < self.len / PAGE,
            "page {i} of a mapping of {}",
            self.len / PAGE
        );
        // SAFETY: as in `page`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(i * PAGE), PAGE) }
    }

    /// How many of pages `pages` are resident.
    pub fn resident(&self, pages: Range<usize>) -> io::Result<usize> {
        let (at, len) = self.check(&pages)?;
        let mut v = vec![0u8; pages.len()];
        if len == 0 {
            return Ok(0);
        }
        // SAFETY: the range lies within the mapping and is page-aligned (checked);
        // mincore writes one byte per page of it into `v`, which has that many.
        let r = unsafe { libc::mincore(at.cast(), len, v.as_mut_ptr()) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(v.iter().filter(|&&b| b & 1 == 1).count())
    }
}

/// Pages of a [`PageMem`] to make resident from another thread (see
/// [`PageMem::populator`]).
pub struct Populator {
    at: usize,
    len: usize,
    /// Pages made resident so far, from the first: published after each page, so
    /// that the owner can use them before the whole range is.
    made: Arc<AtomicUsize>,
    /// Pages it may make resident, from the first: the owner lowers it to stop the
    /// helper short of the range's end (`Populator::end`).
    end: Arc<AtomicUsize>,
}

impl Populator {
    /// The count of pages made resident so far, from the first of the range (it
    /// only rises, and reaches the range's length, or the end it was given, once
    /// [`Populator::run`] has returned).
    pub fn made(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.made)
    }

    /// The pages it may make resident, from the first of the range (the range's
    /// length at first). Lowered, the helper stops before the next page past it: it
    /// may still make one more page resident than the new end when the two meet, so
    /// the owner gives back what `made` counts past the end once `run` has returned.
    pub fn end(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.end)
    }

    /// Makes the pages resident, one write fault each ([`touch_pages`]), counting
    /// each, up to the end the owner leaves it.
    pub fn run(self) {
        // SAFETY: the range lies within a live mapping (checked when the handle was
        // made; its owner keeps it mapped and in place until this returns) and is
        // page-aligned. Its pages past those counted made are not reached by the
        // owner (`PageMem::populator`): nothing else accesses their bytes meanwhile.
        unsafe { touch_pages(self.at, self.len, &self.made, &self.end) };
    }
}

/// Makes the pages of `len` bytes at `at` resident, one write fault each (an atomic
/// add and subtract of one on the page's first byte: no byte changes), counting in
/// `made` the pages from `at` made resident, and stopping before a page at or past
/// `end` (pages from `at`; the owner may lower it meanwhile).
///
/// Not `MADV_POPULATE_WRITE` (no fault per page), which holds the process's mmap lock
/// through each call: a thread that maps or unmaps memory meanwhile (an allocator, a
/// growing vector) waits for it, and every fault of every thread behind that one. The
/// cache's second step runs in the idle scheduling class beside the first requests,
/// and on busy cores it lost the CPU inside a call, holding the lock: a worker's turn
/// of 44.6 and 53.1 ms in the first half second of two of five 20-s runs of YCSB A
/// uniform at 64 in flight, 43.5 ms before a third began (`slowest.turn_us`). A fault
/// holds only the lock of the mapping it faults in (per-VMA locks, Linux 6.4): with
/// faults, 25.4 ms in one run and 4.2-12.7 ms in the others; the runs' slowest
/// operations 14.3-36.4 ms against 23.2-129.8 (alternating, 2026-12-05:
/// results/kvell-4m-ab/fill-faults/ab.md). Beside recovery's scan (the first step)
/// the advice stays (`PageMem::populate`).
///
/// # Safety
/// `at..at + len` must lie within a live mapping of the process, be page-aligned, and
/// nothing else may access its bytes until `made` has counted them.
unsafe fn touch_pages(at: usize, len: usize, made: &AtomicUsize, end: &AtomicUsize) {
    for page in 0..len / PAGE {
        // The end may fall at any time (a page cache whose limit falls as its index
        // grows); pages past it stay out of memory. Checked before each fault, a
        // load of a line the owner rarely writes, while a fault costs microseconds.
        if page >= end.load(Ordering::Acquire) {
            return;
        }
        // SAFETY: the byte lies within the live mapping the caller vouches for,
        // initialised, aligned for a `u8`, and nothing else accesses it now.
        let b = unsafe { AtomicU8::from_ptr((at + page * PAGE) as *mut u8) };
        // Two writes that undo each other (an `or` of zero, a write that changes
        // nothing, compiles to a read, which maps the shared zero page and leaves
        // the page to be made on the next write).
        b.fetch_add(1, Ordering::Relaxed);
        b.fetch_sub(1, Ordering::Relaxed);
        made.store(page + 1, Ordering::Release);
    }
}

/// A new private anonymous mapping of `len` bytes (zeroed, readable and writable,
/// none of it resident) at an address the kernel chooses.
pub(crate) fn map_anonymous(len: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: a new private anonymous mapping; nothing else is mapped or changed.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(raw.cast::<u8>()).ok_or_else(io::Error::last_os_error)
}

/// Bytes one `MADV_POPULATE_WRITE` call makes resident at most. The kernel holds the
/// process's mmap lock (shared) through each call, and a thread that maps, unmaps or
/// remaps memory meanwhile (an I/O buffer, a growing vector) waits for it, as does
/// every fault behind that thread: the page cache's 1.2 GiB made resident in one call
/// beside recovery stalled both workers' scans for 220-275 ms before their first read
/// (strace of an open of 4M items, 2026-12-05). In steps, a waiting thread gets the
/// lock between two.
const POPULATE_STEP: usize = 8 << 20;

/// `MADV_POPULATE_WRITE` over `len` bytes at `at`, in steps of [`POPULATE_STEP`].
///
/// # Safety
/// `at..at + len` must lie within a live mapping of the process and be page-aligned.
pub(crate) unsafe fn populate_in_steps(at: usize, len: usize) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        let n = POPULATE_STEP.min(len - done);
        // SAFETY: a page-aligned piece of the range the caller vouches for; the
        // advice only faults pages in, writable, without changing a byte.
        let r = unsafe {
            libc::madvise(
                (at + done) as *mut libc::c_void,
                n,
                libc::MADV_POPULATE_WRITE,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        done += n;
    }
    Ok(())
}

impl std::ops::Deref for PageMem {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes, initialised (zero-filled by
        // the kernel), owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for PageMem {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for PageMem {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; no reference to it
        // outlives self.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// Gives the free memory of the C allocator's heaps back to the OS (glibc's
/// `malloc_trim`, which also releases whole free pages inside its arenas; elsewhere
/// nothing). glibc keeps what a thread freed in its arena: recovery's key map, freed
/// once the index is built, stayed resident beside the page cache set up after it.
/// (A global allocator other than the system's returns its own free memory.)
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only gives free memory of glibc's allocator back to the
    // OS; it touches no allocated block.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages are resident once touched; released pages leave the resident set and
    /// read as zeros; a range beyond the mapping is refused.
    #[test]
    fn released_pages_are_not_resident() {
        let mut m = PageMem::new(64, false).unwrap();
        assert_eq!(m.resident(0..64).unwrap(), 0, "nothing touched yet");
        for i in (0..m.len()).step_by(PAGE) {
            m[i] = 7;
        }
        assert_eq!(m.resident(0..64).unwrap(), 64);
        m.release(16..48).unwrap();
        assert_eq!(m.resident(0..64).unwrap(), 32);
        assert_eq!(m.resident(16..48).unwrap(), 0);
        assert!(m.release(60..65).is_err());
        assert!(m.resident(65..66).is_err());
        assert_eq!(
            m.resident(0..64).unwrap(),
            32,
            "a refused release changes nothing"
        );
        // (reading a released page maps the zero page: it counts as resident again)
        assert_eq!((m[16 * PAGE], m[47 * PAGE + 9]), (0, 0));
        assert_eq!((m[15 * PAGE], m[48 * PAGE]), (7, 7));
    }

    /// A populator makes its pages resident, counting them as it goes, and changes
    /// no byte; the pages before and after its range stay as they were.
    #[test]
    fn a_populator_counts_the_pages_it_made_resident() {
        let steps = 3 * 256 + 5;
        let mut m = PageMem::new(steps + 8, false).unwrap();
        m[5 * PAGE] = 9;
        let p = m.populator(4..4 + steps).unwrap();
        let made = p.made();
        assert_eq!(made.load(Ordering::Acquire), 0);
        p.run();
        assert_eq!(made.load(Ordering::Acquire), steps, "every page counted");
        assert_eq!(m.resident(4..4 + steps).unwrap(), steps);
        assert_eq!(m.resident(0..4).unwrap(), 0);
        assert_eq!(m.resident(4 + steps..steps + 8).unwrap(), 0);
        assert_eq!((m[5 * PAGE], m[6 * PAGE]), (9, 0), "no byte changed");
    }

    /// A populator whose end is lowered stops there: the pages past it stay out of
    /// memory, and `made` counts only those before it.
    #[test]
    fn a_populator_stops_at_the_end_it_is_given() {
        let m = PageMem::new(600, false).unwrap();
        let p = m.populator(10..510).unwrap();
        let (made, end) = (p.made(), p.end());
        assert_eq!(end.load(Ordering::Acquire), 500, "the whole range at first");
        end.store(123, Ordering::Release);
        p.run();
        assert_eq!(made.load(Ordering::Acquire), 123);
        assert_eq!(m.resident(10..133).unwrap(), 123);
        assert_eq!(m.resident(133..600).unwrap(), 0, "nothing past the end");
        assert_eq!(m.resident(0..10).unwrap(), 0);
    }
}
