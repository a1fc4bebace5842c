//! A Redis-compatible in-memory server: RESP2/RESP3, strings, hashes, lists, sets, sorted sets,
//! streams, bitmaps, HyperLogLog, key expiry on a per-node clock, Lua 5.1 scripting and
//! functions as Redis 7 runs them, pub/sub, transactions, blocking commands, persistence (RDB),
//! replication and cluster mode. A node's [`control`] surface lets a fault harness (the
//! `locksmith-harness` crate) drive it beyond its commands.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let server = locksmith_server::Server::builder().start().await?;
//! println!("listening on {}", server.url());
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod acl;
mod args;
mod blocking;
#[cfg(feature = "cli")]
pub mod cli;
mod client;
mod clock;
mod cluster;
mod cmd;
mod cmdstats;
mod command_acl;
mod command_meta;
mod compat;
mod config;
mod connection;
pub mod control;
mod db;
mod dispatch;
mod error;
mod evict;
mod flags;
mod geohash;
mod glob;
mod journal;
mod latency;
#[cfg(test)]
mod layer_tests;
mod lazyfree;
mod local_client;
mod monitor;
mod net_stream;
mod node;
mod notify;
mod observe;
mod outbound;
mod process_cpu;
mod process_memory;
mod pubsub;
mod rdb;
mod redis_table;
mod replica_link;
mod replication;
mod script;
mod server;
mod siphash;
mod slowlog;
mod tracking;
mod transaction;
mod write_round;

pub use clock::Clock;
pub use compat::Compat;
pub use config::{compat_from_env, Config, EnableCommand, COMPAT_ENV};
pub use connection::ClientStream;
pub use db::release::set_memory_release;
pub use error::CommandError;
// Redis's pattern matcher (`stringmatchlen`), public because the harness's Sentinel endpoint
// (PSUBSCRIBE) and its lock observer (key patterns) must match exactly as the server's KEYS,
// SCAN and PSUBSCRIBE do; it stays here, with the server that defines those semantics, rather
// than in the protocol crate.
pub use glob::glob_match;
pub use process_memory::set_allocator_name;

/// The configuration parameters that change this server's behaviour: by `CONFIG SET` at run
/// time, or as start-up settings ([`ServerBuilder::config_set`]) for those Redis makes
/// immutable or protected. Every other parameter Redis 7.0 knows is accepted, validated as
/// Redis validates it and shown by `CONFIG GET`, but changes nothing here.
pub fn honoured_parameters() -> impl Iterator<Item = &'static str> {
    config::runtime::BINDINGS.iter().map(|b| b.name)
}
#[doc(hidden)]
pub use local_client::LocalClient;
pub use server::{BlockingServer, Server, ServerBuilder, ServerHandle, StreamAcceptor};

/// A memory size as redis-server reads one (`1gb`, `512mb`, `100k`, `4096`), in bytes.
pub fn parse_memory_size(text: &str) -> Option<u64> {
    config::table::parse_memory(text.as_bytes())
}

/// Whether `name` is a parameter `CONFIG GET|SET` knows under some compatibility target (any
/// case, aliases included; the node checks it against its own target), so
/// `--name value` on the command line can set it as redis-server does.
pub fn is_config_parameter(name: &str) -> bool {
    config::table::find_any(name.as_bytes()).is_some()
}
