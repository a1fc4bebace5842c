//! The node clock: the only source of "now" in the server.
//!
//! Built on `tokio::time::Instant`, so a test under `tokio::time::pause()` drives it, and
//! shiftable per node (a clock jump) without touching any other node.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// A node's clock: wall time at start-up, advanced by tokio's clock, plus a shift.
#[derive(Debug, Clone)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Wall time at `start`, in microseconds (not rounded to the millisecond, so the clock
    /// never reads behind the wall clock a client compares it with).
    base_unix_us: u64,
    start: Instant,
    shift_ms: AtomicI64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A clock reading the current wall time, advancing with tokio's clock.
    pub fn new() -> Self {
        let base = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Clock::starting_at_us(base.as_micros() as u64)
    }

    /// A clock that reads `unix_ms` now (deterministic tests).
    pub fn starting_at(unix_ms: u64) -> Self {
        Clock::starting_at_us(unix_ms.saturating_mul(1000))
    }

    fn starting_at_us(unix_us: u64) -> Self {
        Clock {
            inner: Arc::new(Inner {
                base_unix_us: unix_us,
                start: Instant::now(),
                shift_ms: AtomicI64::new(0),
            }),
        }
    }

    /// Milliseconds since the Unix epoch, as this node sees them.
    pub fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }

    /// Microseconds since the Unix epoch, as this node sees them.
    pub fn now_us(&self) -> u64 {
        self.us_at(self.tick_us())
    }

    /// Microseconds since this clock was made, unaffected by shifts: durations are measured
    /// in these (a clock jump in the middle of a command does not make it slow).
    pub(crate) fn tick_us(&self) -> u64 {
        u64::try_from(self.inner.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Microseconds since the Unix epoch, as this node saw them at `tick_us` (a reading of
    /// [`Clock::tick_us`]).
    pub(crate) fn us_at(&self, tick_us: u64) -> u64 {
        let shift = i128::from(self.inner.shift_ms.load(Ordering::Relaxed)) * 1000;
        let now = i128::from(self.inner.base_unix_us) + i128::from(tick_us) + shift;
        now.clamp(0, i128::from(u64::MAX)) as u64
    }

    /// Moves this node's clock by `delta_ms` (negative = backwards). Key deadlines are absolute,
    /// so a forward jump makes TTLs run out early, as on a real machine whose clock jumps.
    pub fn shift(&self, delta_ms: i64) {
        self.inner.shift_ms.fetch_add(delta_ms, Ordering::Relaxed);
    }

    /// The total shift applied so far, in milliseconds.
    pub fn shift_ms(&self) -> i64 {
        self.inner.shift_ms.load(Ordering::Relaxed)
    }

    /// The tokio instant at which this clock will read `unix_ms` (for timers).
    pub fn instant_at(&self, unix_ms: u64) -> Instant {
        let now = self.now_ms();
        Instant::now() + Duration::from_millis(unix_ms.saturating_sub(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn clock_follows_paused_tokio_time_and_shifts() {
        let clock = Clock::starting_at(1_000_000);
        assert_eq!(clock.now_ms(), 1_000_000);
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(clock.now_ms(), 1_001_500);
        clock.shift(-500);
        assert_eq!(clock.now_ms(), 1_001_000);
        assert_eq!(clock.shift_ms(), -500);
    }
}
