//! Giving freed memory back to the operating system.
//!
//! An allocator keeps the pages the keyspace frees for reuse: after a `FLUSHALL` of a million
//! keys the process kept all of it. The library does not know the allocator (the binary
//! chooses one), so the binary installs a function that returns free pages
//! ([`set_memory_release`]; the `locksmith-server` binary's calls `mi_collect`). It runs after
//! `FLUSHALL`, `FLUSHDB` and `MEMORY PURGE`, and from the periodic task once the keyspace's
//! accounted memory fell well below its level at the last release ([`Watermark`]), as after
//! a `DEL` of most keys.

use std::sync::OnceLock;

static RELEASE: OnceLock<fn()> = OnceLock::new();

/// Installs `release`, which returns the allocator's free memory to the operating system
/// (once per process; later calls are ignored).
pub fn set_memory_release(release: fn()) {
    let _ = RELEASE.set(release);
}

/// Returns free memory to the operating system, if the binary said how.
pub(crate) fn release() {
    if let Some(release) = RELEASE.get() {
        release();
    }
}

/// A release is due once accounted memory fell by this fraction of its peak since the last
/// release...
const FALL_FRACTION: usize = 4;
/// ...and by at least this many bytes (smaller falls are left to the allocator's own purging).
const FALL_MIN: usize = 8 << 20;

/// The peak of the keyspace's accounted memory since the last release.
#[derive(Debug, Default)]
pub(crate) struct Watermark {
    peak: usize,
}

impl Watermark {
    /// Records `used` bytes; returns whether memory fell enough since the peak for a release
    /// (the peak then starts again from `used`).
    pub(crate) fn fell(&mut self, used: usize) -> bool {
        self.peak = self.peak.max(used);
        let fall = self.peak - used;
        if fall >= FALL_MIN && fall >= self.peak / FALL_FRACTION {
            self.peak = used;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_is_due_after_a_large_fall_once() {
        let mut w = Watermark::default();
        assert!(!w.fell(100 << 20));
        assert!(!w.fell(90 << 20));
        assert!(w.fell(70 << 20));
        assert!(!w.fell(69 << 20));
        // Small keyspaces never need it.
        let mut small = Watermark::default();
        assert!(!small.fell(4 << 20) && !small.fell(0));
    }
}
