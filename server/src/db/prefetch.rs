//! Asking the CPU for memory a batch of commands is about to read, without waiting for it.

/// Asks the CPU to bring the cache line holding `at` closer, without waiting for it.
#[inline(always)]
pub(crate) fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: PREFETCHT0 is a hint: it reads nothing architecturally and cannot fault, whatever
    // the address (here always one inside a live allocation); SSE is part of x86_64's baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
