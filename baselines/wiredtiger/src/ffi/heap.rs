//! Giving glibc's free memory back to the OS while WiredTiger runs.
//!
//! WiredTiger allocates its in-memory pages with malloc; as eviction frees them,
//! glibc keeps the freed memory resident in its arenas (measured: 86 MiB allocated and
//! 157 MiB free but resident under a 64 MiB cache, results/memory-budget/). That memory
//! is not the engine's data and would be charged to its budget, so the engine trims
//! the heap once a second (`malloc_trim(0)` releases whole free pages in every arena).
#![expect(unsafe_code, reason = "malloc_trim(3) is a C call")]

/// Releases the free memory of glibc's heaps to the OS (nothing elsewhere).
pub(crate) fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of glibc's allocator to the OS; it
    // touches no allocated block and may run beside any other thread.
    unsafe {
        libc::malloc_trim(0);
    }
}
