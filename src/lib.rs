//! Locksmith: a Redis-compatible in-memory server that runs Redisson's Lua lock scripts exactly
//! as Redis does, a Redisson-compatible distributed-lock library, and a fault-injecting harness.
//!
//! This umbrella crate only re-exports the member crates.

pub use locksmith_lock as lock;
pub use locksmith_resp as resp;
pub use locksmith_server as server;
