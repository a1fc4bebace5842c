//! Locksmith: a Redis-compatible in-memory server that runs Redisson's Lua lock scripts exactly
//! as Redis does, a Redisson-compatible distributed-lock library, and a fault-injecting harness.
//!
//! This umbrella crate only re-exports the member crates, each behind a feature: `lock` (the
//! default), `server`, `harness`, and `explore`; `resp` is always there.

/// Deterministic fault exploration of the lock kinds (feature `explore`).
#[cfg(feature = "explore")]
pub use locksmith_explore as explore;
/// The fault-injecting harness (feature `harness`).
#[cfg(feature = "harness")]
pub use locksmith_harness as harness;
#[cfg(feature = "lock")]
pub use locksmith_lock as lock;
pub use locksmith_resp as resp;
#[cfg(feature = "server")]
pub use locksmith_server as server;
