//! Redisson-compatible distributed locks for Rust, on the `redis` crate and tokio.
//!
//! Locks taken here and locks taken by Java Redisson contend for the same keys: same hash
//! layout, owner fields (`"<client-uuid>:<owner-id>"`), channels, messages and Lua scripts.
//!
//! A guard releases the lock when it goes out of scope (on `?` and on a panic too); the
//! Redisson-style `lock()`/`unlock()` pair stays for code written that way:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let server = locksmith_server::Server::builder().start().await?;
//! # let url = server.url();
//! use locksmith_lock::Client;
//!
//! let client = Client::open(&url).await?; // e.g. "redis://127.0.0.1:6379/"
//! let lock = client.lock("orders");
//! {
//!     let guard = lock.acquire().await?; // the watchdog renews every 10 s while it lives
//!     // ... critical section ...
//!     guard.unlock().await?; // or let it drop: the release is spawned
//! }
//! lock.lock().await?; // Redisson style
//! lock.unlock().await?;
//! # Ok(()) }
//! ```
//!
//! A scoped critical section is cancelled, with `LockError::Lost`, when the lock is lost (a
//! failover, a pause past the lease); with a fenced lock it gets the token, which the resource
//! checks so that a stale holder's write is refused:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let server = locksmith_server::Server::builder().start().await?;
//! # let url = server.url();
//! use locksmith_lock::{Client, FencingGate};
//!
//! let client = Client::open(&url).await?;
//! let lock = client.fenced_lock("invoice-42");
//! let gate = FencingGate::new("invoice-42:token");
//! let mut conn = client.connection();
//! let written = lock
//!     .with_token(|token| async move {
//!         gate.write(&mut conn, token, "invoice-42", "paid").await
//!     })
//!     .await??;
//! assert!(written);
//! # Ok(()) }
//! ```
//!
//! A client can also run over streams the caller makes ([`Connector`], [`Client::open_over`]),
//! for example in-memory streams to a node without a listener in a deterministic simulation
//! (one current-thread runtime with paused time), where [`ClientOptions::seed`] and
//! [`ClientOptions::wall_clock`] make its random draws and timestamps replay:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let node = locksmith_server::Server::builder()
//! #     .in_memory("127.0.0.1:7000".parse()?)
//! #     .start()
//! #     .await?;
//! use locksmith_lock::{Client, ClientOptions};
//! use std::net::SocketAddr;
//!
//! // Each connection the client makes is a new in-memory stream that the node serves.
//! let acceptor = node.acceptor(); // node: Server::builder().in_memory(addr).start().await?
//! let connector = move || {
//!     let acceptor = acceptor.clone();
//!     async move {
//!         let (ours, theirs) = tokio::io::duplex(64 * 1024);
//!         acceptor.serve_stream(theirs, SocketAddr::from(([127, 0, 0, 1], 40000)));
//!         Ok::<_, std::io::Error>(ours)
//!     }
//! };
//! // A seed and a virtual wall clock: with the same seed, a run replays event for event.
//! let start = tokio::time::Instant::now();
//! let options = ClientOptions::default()
//!     .seed(42)
//!     .wall_clock(move || 1_700_000_000_000 + start.elapsed().as_millis() as u64);
//! let client = Client::open_over(connector, options).await?;
//! let guard = client.fair_lock("orders").acquire().await?;
//! guard.unlock().await?;
//! # node.shutdown().await;
//! # Ok(()) }
//! ```

#[cfg(feature = "blocking")]
pub mod blocking;
mod client;
mod cluster;
mod connector;
mod entropy;
mod error;
mod fence;
mod guard;
mod hold;
mod kind;
mod kinds;
mod latch;
mod multi;
mod options;
mod owner;
mod permit;
mod scripts;
mod semaphore;
mod sentinel;
mod simple;
mod sync;
mod wait;
mod waiter;
mod watchdog;

pub use client::{Client, MetricsSnapshot, MAX_LEASE};
pub use cluster::Connection;
pub use connector::{Connecting, Connector, ConnectorStream, StreamConnection};
pub use error::{LockError, LostReason, Result};
pub use fence::{FencingGate, TokenFence};
pub use guard::{LockGuard, Section};
pub use kind::DistributedLock;
pub use kinds::{
    FairLock, FencedLock, Lock, NonReentrantLock, ReadLock, ReadWriteLock, SpinLock, WriteLock,
};
pub use latch::CountDownLatch;
pub use multi::{MultiLock, MultiLockGuard, NodeOutcome, QuorumOutcome, RedLock};
pub use options::{Backoff, ClientOptions, ReplicaSync, WallClock};
pub use owner::Owner;
pub use permit::{ExpirablePermit, PermitExpirableSemaphore};
pub use semaphore::{Semaphore, SemaphorePermit};
pub use simple::SimpleLock;
pub use watchdog::{safety_margin, LostSignal};

/// Source text of the Redisson scripts this crate runs, for tests and tools that want to run
/// them by hand (for example to act as a Java client would).
pub mod script_sources {
    /// The Redisson source the scripts are taken from, byte for byte (each pinned by a test
    /// to the SHA1 of Redisson's text).
    pub const REDISSON_SOURCE: &str = crate::scripts::REDISSON_SOURCE;
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

/// The README's lock examples are these doctests: every ```rust block of its "Using the lock
/// library" section must appear, line for line, among the visible lines of this file's doc
/// examples (with `locksmith::lock::` for `locksmith_lock::`), so it runs in `cargo test`.
#[cfg(test)]
mod readme {
    #[test]
    fn the_readme_lock_examples_are_doctests_of_this_crate() {
        let readme = include_str!("../../README.md");
        let docs: Vec<&str> = include_str!("lib.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .filter(|l| !l.starts_with("# ") && *l != "#")
            .collect();
        let docs = docs.join("\n");
        let start = readme
            .find("## Using the lock library")
            .expect("the README has a lock section");
        let section = &readme[start..];
        let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
        let mut blocks = 0;
        for block in section[..end].split("```rust").skip(1) {
            let code = block.split("```").next().unwrap_or("");
            let code = code
                .trim_matches('\n')
                .replace("locksmith::lock::", "locksmith_lock::");
            assert!(
                docs.contains(&code),
                "README block not among the doctests:\n{code}"
            );
            blocks += 1;
        }
        assert!(blocks >= 3, "{blocks} blocks");
    }
}
