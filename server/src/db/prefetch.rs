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

/// Most cache lines [`prefetch_bytes`] asks for: a lock's listpack or a short value spans one
/// or two; the rest of a longer buffer is left to the hardware's own prefetcher.
const MAX_LINES: usize = 4;

/// Bytes of a cache line.
const LINE: usize = 64;

/// Asks for every cache line the `len` bytes at `at` touch (up to [`MAX_LINES`]): a buffer
/// is not aligned to a line, so one of 56 bytes spans two lines seven times in eight.
#[inline(always)]
pub(crate) fn prefetch_bytes(at: *const u8, len: usize) {
    for line in 0..lines(at as usize, len) {
        prefetch(at.wrapping_add(line * LINE));
    }
}

/// How many lines [`prefetch_bytes`] asks for, for `len` bytes at address `at`.
fn lines(at: usize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let first = at / LINE;
    let last = at.saturating_add(len - 1) / LINE;
    (last - first + 1).min(MAX_LINES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_is_asked_for_by_every_line_it_touches() {
        assert_eq!(lines(0, 0), 0);
        assert_eq!(lines(0, 56), 1);
        assert_eq!(lines(8, 56), 1);
        assert_eq!(lines(16, 56), 2);
        assert_eq!(lines(32, 96), 2);
        assert_eq!(lines(40, 96), 3);
        assert_eq!(lines(63, 2), 2);
        assert_eq!(lines(0, 1 << 20), MAX_LINES);
        assert_eq!(lines(usize::MAX - 10, 100), 1);
        // The loop asks for lines within the buffer only: the last one starts before its end.
        for at in 0..LINE {
            for len in 1..300 {
                let n = lines(at, len);
                assert!(n >= 1 && (n - 1) * LINE < len + at % LINE, "{at} {len}");
            }
        }
    }
}
