//! Option types: client-wide settings, spin-lock backoff, multi-lock and RedLock settings.

use std::sync::Arc;
use std::time::Duration;

/// How lock writes are confirmed on replicas (Redisson's `syncSlaves`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplicaSync {
    /// Ask the server at connect (`INFO replication`); when it has replicas, follow every lock
    /// script with `WAIT <replicas> <timeout>`. The default. In a cluster, each write waits on
    /// the master that took it for that master's replicas (`CLUSTER SLOTS`).
    Auto,
    /// Never send `WAIT`.
    Off,
    /// Always wait for this many replicas.
    Replicas(usize),
}

/// Client-wide settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Lease used when no lease is given; the watchdog renews it every third of it
    /// (Redisson's `lockWatchdogTimeout`, 30 s).
    pub watchdog_timeout: Duration,
    /// Replica acknowledgement of lock writes.
    pub replica_sync: ReplicaSync,
    /// Timeout passed to `WAIT` (Redisson: 1 s).
    pub replica_sync_timeout: Duration,
    /// How often an acquisition is rolled back and retried when no replica acknowledged it.
    pub replica_sync_attempts: u32,
    /// Lifetime of the idempotent-unlock latch key (Redisson: (timeout + retryInterval) *
    /// retryAttempts = 13 500 ms).
    pub unlock_latch_timeout: Duration,
    /// Waiter timeout of the fair lock (Redisson: 300 000 ms).
    pub fair_wait_timeout: Duration,
    /// Response timeout of the command connection.
    pub response_timeout: Duration,
    /// Connection timeout.
    pub connection_timeout: Duration,
    /// How often each pub/sub connection is pinged (Redisson's `pingConnectionInterval`,
    /// 30 s there; zero: never). A `PING` unanswered within `response_timeout` counts the
    /// connection dead: it is made anew, its channels subscribed again and their waiters woken
    /// to retry, so a half-open connection does not leave waiters asleep for a whole lease.
    pub pubsub_ping_interval: Duration,
    /// How many held locks one watchdog script call renews (Redisson's
    /// `lockWatchdogBatchSize`, 100): each renewal period costs one round trip per this many
    /// locks (per hash slot in a cluster).
    pub watchdog_batch_size: usize,
    /// Seed of the client's random source (see [`ClientOptions::seed`]); `None`: random.
    pub seed: Option<u64>,
    /// The wall clock timestamps sent to scripts are read from (see
    /// [`ClientOptions::wall_clock`]); `None`: the system clock.
    pub wall_clock: Option<WallClock>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            watchdog_timeout: Duration::from_secs(30),
            replica_sync: ReplicaSync::Auto,
            replica_sync_timeout: Duration::from_secs(1),
            replica_sync_attempts: 3,
            unlock_latch_timeout: Duration::from_millis(13_500),
            fair_wait_timeout: Duration::from_secs(300),
            response_timeout: Duration::from_secs(10),
            connection_timeout: Duration::from_secs(3),
            pubsub_ping_interval: Duration::from_secs(10),
            watchdog_batch_size: 100,
            seed: None,
            wall_clock: None,
        }
    }
}

impl ClientOptions {
    /// Sets the watchdog lease.
    pub fn watchdog_timeout(mut self, d: Duration) -> Self {
        self.watchdog_timeout = d;
        self
    }
    /// Sets replica acknowledgement.
    pub fn replica_sync(mut self, r: ReplicaSync) -> Self {
        self.replica_sync = r;
        self
    }
    /// Sets the `WAIT` timeout.
    pub fn replica_sync_timeout(mut self, d: Duration) -> Self {
        self.replica_sync_timeout = d;
        self
    }
    /// Sets the fair-lock waiter timeout.
    pub fn fair_wait_timeout(mut self, d: Duration) -> Self {
        self.fair_wait_timeout = d;
        self
    }
    /// Sets the unlock latch lifetime.
    pub fn unlock_latch_timeout(mut self, d: Duration) -> Self {
        self.unlock_latch_timeout = d;
        self
    }
    /// Sets the command response timeout.
    pub fn response_timeout(mut self, d: Duration) -> Self {
        self.response_timeout = d;
        self
    }
    /// Sets the connection timeout.
    pub fn connection_timeout(mut self, d: Duration) -> Self {
        self.connection_timeout = d;
        self
    }
    /// Sets how often each pub/sub connection is pinged (zero: never).
    pub fn pubsub_ping_interval(mut self, d: Duration) -> Self {
        self.pubsub_ping_interval = d;
        self
    }
    /// Sets how many locks one watchdog script call renews (at least 1).
    pub fn watchdog_batch_size(mut self, n: usize) -> Self {
        self.watchdog_batch_size = n.max(1);
        self
    }
    /// Draws everything random about the client from one RNG seeded with `seed` and owned by
    /// the client: its id (still a UUID v4), unlock-latch request ids, the simple lock's value,
    /// permit ids, spin-lock jitter, RedLock and MultiLock retry delays, and the reconnect
    /// backoff of [`Client::open_over`](crate::Client::open_over). Owners made by the client
    /// ([`Client::new_owner`](crate::Client::new_owner), `client.lock(..)`, clones of handles)
    /// then count from a sequence of the client's own, disjoint from [`Owner::new`]'s
    /// process-wide one.
    ///
    /// With the same seed, the same build and the same interleaving (a current-thread runtime
    /// with paused time, streams in memory, a [`wall_clock`](Self::wall_clock) shared by the
    /// simulation), a client makes the same draws in the same order. Unset, the client is as
    /// random as before. Use one seed per client of a simulation: two clients with one seed
    /// have the same id, and so would enter each other's locks.
    ///
    /// [`Owner::new`]: crate::Owner::new
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
    /// Reads "now" (milliseconds since the Unix epoch) from `clock` instead of the system
    /// clock, where Redisson sends a timestamp to a script (the fair lock's queue timeouts,
    /// the permit semaphore's lease expiries): a simulation gives all its clients one virtual
    /// clock, so those timestamps replay.
    ///
    /// Without it the client reads the system clock plus how far tokio's paused clock was
    /// advanced since the client was opened.
    pub fn wall_clock(mut self, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        self.wall_clock = Some(WallClock(Arc::new(clock)));
        self
    }
}

/// A wall clock override (see [`ClientOptions::wall_clock`]): milliseconds since the Unix
/// epoch.
#[derive(Clone)]
pub struct WallClock(Arc<dyn Fn() -> u64 + Send + Sync>);

impl WallClock {
    /// Reads the clock.
    pub fn now_ms(&self) -> u64 {
        (self.0)()
    }
}

impl std::fmt::Debug for WallClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WallClock(..)")
    }
}

/// Exponential backoff of the spin lock (Redisson's `LockOptions.ExponentialBackOff`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Backoff {
    /// First delay.
    pub initial: Duration,
    /// Largest delay.
    pub max: Duration,
    /// Growth factor.
    pub multiplier: u32,
    /// Random extra delay added to each step, up to this much.
    pub jitter: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        // Redisson's defaults: initialDelay 1 ms, maxDelay 128 ms, multiplier 2.
        Backoff {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(128),
            multiplier: 2,
            jitter: Duration::from_millis(1),
        }
    }
}

impl Backoff {
    /// Exponential backoff from `initial` up to `max`, growing by `multiplier`.
    pub fn exponential(initial: Duration, max: Duration, multiplier: u32) -> Self {
        Backoff {
            initial,
            max,
            multiplier: multiplier.max(1),
            jitter: Duration::ZERO,
        }
    }
    /// A constant delay.
    pub fn constant(d: Duration) -> Self {
        Backoff::exponential(d, d, 1)
    }
    /// Sets the jitter.
    pub fn jitter(mut self, d: Duration) -> Self {
        self.jitter = d;
        self
    }
    /// The delay of attempt `n` (0-based), without jitter.
    pub fn delay(&self, n: u32) -> Duration {
        let mut d = self.initial;
        for _ in 0..n {
            d = d.saturating_mul(self.multiplier);
            if d >= self.max {
                return self.max;
            }
        }
        d.min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_backoff_grows_then_caps() {
        let b = Backoff::exponential(Duration::from_millis(10), Duration::from_millis(100), 3);
        let got: Vec<u128> = (0..5).map(|n| b.delay(n).as_millis()).collect();
        assert_eq!(got, vec![10, 30, 90, 100, 100]);
    }

    #[test]
    fn constant_backoff_stays_constant() {
        let b = Backoff::constant(Duration::from_millis(30));
        assert!((0..5).all(|n| b.delay(n) == Duration::from_millis(30)));
    }
}
