//! Hints to the CPU.

/// Asks the CPU to bring the cache line of `x` in (a hint: nothing else changes).
#[inline(always)]
#[cfg_attr(
    target_arch = "x86_64",
    expect(unsafe_code, reason = "the prefetch intrinsic is an unsafe fn")
)]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault; `x` is a
    // valid reference besides, and SSE is part of every x86_64 target.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::from_ref(x).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
