//! Redisson-compatible distributed locks for Rust, on the `redis` crate and tokio.
//!
//! Locks taken here and locks taken by Java Redisson contend for the same keys: same hash
//! layout, owner fields (`"<client-uuid>:<owner-id>"`), channels, messages and Lua scripts.
//!
//! ```no_run
//! # async fn demo() -> Result<(), locksmith_lock::LockError> {
//! let client = locksmith_lock::Client::open("redis://127.0.0.1:6379/").await?;
//! let lock = client.lock("orders");
//! lock.lock().await?;            // watchdog renews every 10 s until unlock
//! // ... critical section ...
//! lock.unlock().await?;
//! # Ok(()) }
//! ```

#[cfg(feature = "blocking")]
pub mod blocking;
mod client;
mod cluster;
mod core;
mod error;
mod fence;
mod guard;
mod kind;
mod latch;
mod lock;
mod multi;
mod options;
mod owner;
mod permit;
mod scripts;
mod semaphore;
mod sentinel;
mod simple;
mod waiter;
mod watchdog;

pub use client::{Client, MetricsSnapshot};
pub use cluster::Connection;
pub use error::{LockError, LostReason, Result};
pub use fence::{FencingGate, TokenFence};
pub use guard::{LockGuard, Section};
pub use kind::DistributedLock;
pub use latch::CountDownLatch;
pub use lock::{
    FairLock, FencedLock, Lock, NonReentrantLock, ReadLock, ReadWriteLock, SpinLock, WriteLock,
};
pub use multi::{MultiLock, MultiLockGuard, NodeOutcome, QuorumOutcome, RedLock};
pub use options::{Backoff, ClientOptions, ReplicaSync};
pub use owner::Owner;
pub use permit::PermitExpirableSemaphore;
pub use semaphore::Semaphore;
pub use simple::SimpleLock;
pub use watchdog::{safety_margin, LostSignal};

/// Source text of the Redisson scripts this crate runs, for tests and tools that want to run
/// them by hand (for example to act as a Java client would).
pub mod script_sources {
    /// `RedissonLock` acquire. KEYS: name. ARGV: lease ms, owner field.
    pub const LOCK_ACQUIRE: &str = crate::scripts::LOCK_ACQUIRE_SRC;
    /// `RedissonLock` release with unlock latch. KEYS: name, channel, latch. ARGV: message,
    /// lease ms, owner field, publish command, latch timeout ms.
    pub const LOCK_RELEASE: &str = crate::scripts::LOCK_RELEASE_SRC;
    /// `RedissonFairLock` acquire (queueing variant).
    pub const FAIR_ACQUIRE: &str = crate::scripts::FAIR_ACQUIRE_SRC;
    /// `RedissonFairLock` release with unlock latch. KEYS: name, queue, timeout zset, channel
    /// prefix, latch. ARGV: message, lease ms, owner field, now ms, publish command, latch
    /// timeout ms.
    pub const FAIR_RELEASE: &str = crate::scripts::FAIR_RELEASE_SRC;
    /// `RedissonSemaphore` acquire. KEYS: name. ARGV: permits.
    pub const SEMAPHORE_TRY_ACQUIRE: &str = crate::scripts::SEMAPHORE_TRY_ACQUIRE_SRC;
    /// `RedissonSemaphore` release. KEYS: name, channel. ARGV: permits, publish command.
    pub const SEMAPHORE_RELEASE: &str = crate::scripts::SEMAPHORE_RELEASE_SRC;
    /// `RedissonCountDownLatch` count-down. KEYS: name, channel. ARGV: message, publish command.
    pub const LATCH_COUNT_DOWN: &str = crate::scripts::LATCH_COUNT_DOWN_SRC;
    /// `RedissonReadLock` acquire.
    pub const READ_ACQUIRE: &str = crate::scripts::READ_ACQUIRE_SRC;
    /// `RedissonWriteLock` acquire.
    pub const WRITE_ACQUIRE: &str = crate::scripts::WRITE_ACQUIRE_SRC;
}
