//! A Redis-compatible in-memory server: RESP2/RESP3, strings, hashes, lists, sets, sorted sets,
//! key expiry on a per-node clock, Lua 5.1 scripting as Redis 7 runs it, pub/sub, transactions,
//! blocking commands, and a fault-injecting [`harness`] (replicated topologies, failover,
//! partitions, clock jumps, pauses) with a checker for lost locks.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let server = locksmith_server::Server::builder().start().await?;
//! println!("listening on {}", server.url());
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod blocking;
mod client;
mod clock;
mod cluster;
mod cmd;
mod cmdstats;
mod config;
mod config_table;
mod connection;
mod db;
mod evict;
mod glob;
pub mod harness;
mod live;
mod local;
mod monitor;
mod notify;
mod pubsub;
mod rdb;
mod replication;
mod script;
mod server;
mod shared;
mod transaction;

pub use clock::Clock;
pub use config::{Config, EnableCommand};
pub use harness::{
    Checker, FaultGuard, HarnessError, History, NodeId, Timeline, Topology, TopologyBuilder,
    Violation,
};
#[doc(hidden)]
pub use local::LocalClient;
pub use server::{Server, ServerBuilder, ServerHandle};

/// A memory size as redis-server reads one (`1gb`, `512mb`, `100k`, `4096`), in bytes.
pub fn parse_memory_size(text: &str) -> Option<u64> {
    config_table::parse_memory(text.as_bytes())
}

/// Whether `name` is a parameter `CONFIG GET|SET` knows (any case, aliases included), so
/// `--name value` on the command line can set it as redis-server does.
pub fn is_config_parameter(name: &str) -> bool {
    config_table::find(name.as_bytes()).is_some()
}
