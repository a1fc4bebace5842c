//! The fault-injecting harness: topologies of in-process nodes that fail on command.
//!
//! A [`Topology`] starts one master with N replicas, or N independent masters (for RedLock),
//! each a full server behind its own loopback address, plus a stable **front address** that
//! always routes to the current master and an optional Sentinel endpoint. Faults are verbs that
//! return once the fault is in effect: [`Topology::fail_master`], [`Topology::kill`],
//! [`Topology::restart`], [`Topology::partition`], [`Topology::isolate`], [`Topology::heal`],
//! [`Topology::clock_jump`], [`Topology::pause`], replication delay and stall, and client-link
//! rules. Temporary ones return a [`FaultGuard`] that undoes them on drop. The same faults are
//! `LOCKSMITH.*` commands on the wire (listed in the README, "Admin commands").
//!
//! A restart brings a node back empty (a Redis without persistence), or with
//! [`Topology::restart_with`] and [`Restart::KeepData`] with what its disk held: every node
//! journals its writes (a checkpoint of its dataset and the writes since, as far back as
//! [`TopologyBuilder::keep_data_window`]), so it can come back with its dataset as it was
//! `lose_last` before the crash — what `appendfsync everysec` or a periodic RDB keeps, the
//! case of Kleppmann's argument against RedLock.
//!
//! Every fault is recorded in the topology's [`History`], where clients record what they
//! observed; the [`Checker`] reports mutual-exclusion violations and a [`Timeline`] draws them.
//! Every random choice comes from the topology's seed (logged at start); all fault state is per
//! topology, so many topologies run in one test binary.
//!
//! ```
//! use locksmith_harness::Topology;
//! use std::time::Duration;
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let topology = Topology::builder()
//!     .replicas(1)
//!     .replication_delay(Duration::from_secs(5))
//!     .seed(7)
//!     .build()
//!     .await?;
//! let client = redis::Client::open(topology.front_url())?;
//! let mut con = client.get_multiplexed_async_connection().await?;
//! let _: () = redis::cmd("SET").arg("k").arg("v").query_async(&mut con).await?;
//! // The replica had not received the write yet: it is lost with the master.
//! let promoted = topology.fail_master().await?;
//! assert_eq!(topology.master(), promoted);
//! let mut con = client.get_multiplexed_async_connection().await?;
//! let v: Option<String> = redis::cmd("GET").arg("k").query_async(&mut con).await?;
//! assert_eq!(v, None);
//! # Ok(()) }
//! ```

mod admin;
mod builder;
mod fault;
mod history;
mod inject;
mod link;
mod network;
mod nodes;
mod observe;
pub mod schedule;
mod sentinel;
mod ticks;
mod timeline;
mod topology;

pub use builder::{BlockingTopology, TopologyBuilder, DEFAULT_KEEP_DATA_WINDOW};
pub use fault::{Applied, Fault, FaultGuard, Restart};
pub use history::{
    fault_windows, longest_clear, Checker, Event, EventKind, FaultRecord, History, Hold, Liveness,
    LivenessIssue, Pending, Violation,
};
pub use link::{Chunk, Direction, LinkRule, Verdict};
pub use locksmith_server::control::ObservedClient;
pub use observe::{
    check as check_observed, check_quorum as check_observed_quorum, HeldLock, LockEvent,
    LockEventKind, LockLayout, LockViolation, LockViolationKind, Mark, ObservedHold,
};
pub use ticks::Ticks;
pub use timeline::Timeline;

use link::Proxy;
use locksmith_server::control::{ClusterView, Journal, NodeControl};
use locksmith_server::{Clock, ServerHandle};
use network::Net;
use rand::rngs::StdRng;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The port an in-memory topology reports for node `n0` (`n1` is the next one, the front
/// address the one before): nothing binds it.
const MEMORY_NODE_PORT: u16 = 30000;

/// A node of a topology: `n0`, `n1`… in build order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(usize);

impl NodeId {
    /// The node with index `i` (`n<i>`; a topology may not have it).
    pub fn from_index(i: usize) -> Self {
        NodeId(i)
    }

    /// The node's index.
    pub fn index(self) -> usize {
        self.0
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// Errors of harness operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// No node by that name in the topology.
    #[error("no such node: {0}")]
    UnknownNode(String),
    /// The operation needs the node up.
    #[error("node {0} is down")]
    NodeDown(NodeId),
    /// `fail_master` found no live replica to promote.
    #[error("no live replica to promote")]
    NoReplica,
    /// The builder was given an impossible shape.
    #[error("invalid topology: {0}")]
    Invalid(String),
    /// A [`Restart::KeepData`] the node's journal cannot serve (no journal, or not that far
    /// back).
    #[error("cannot keep data: {0}")]
    KeepData(String),
    /// Binding a listener failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A node's role as the topology sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeRole {
    /// Accepts writes.
    Master,
    /// Replicates from that node.
    Replica(NodeId),
    /// Killed (not restarted yet).
    Down,
}

/// One node as [`Topology::nodes_info`] reports it (a plain data record).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NodeInfo {
    /// The node.
    pub id: NodeId,
    /// Its address (stable across restarts).
    pub addr: SocketAddr,
    /// Its role.
    pub role: NodeRole,
    /// Its replication offset (master: `master_repl_offset`; replica: applied).
    pub offset: u64,
    /// Its clock's total jump in ms.
    pub clock_shift_ms: i64,
    /// Whether a pause is in effect.
    pub paused: bool,
}

/// A running topology. Clones share it; when the last one is dropped every node stops.
#[derive(Debug, Clone)]
pub struct Topology {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Slot {
    id: NodeId,
    addr: SocketAddr,
    clock: Clock,
    proxy: Proxy,
    live: Mutex<Live>,
}

#[derive(Debug, Default)]
struct Live {
    server: Option<ServerHandle>,
    node: Option<NodeControl>,
    offset: Option<Arc<AtomicU64>>,
    replica_of: Option<usize>,
    incarnation: u64,
    paused: Option<(CancellationToken, Arc<()>)>,
    /// The node's "disk" (its journal), kept after it stops for a `KeepData` restart.
    journal: Option<Journal>,
    /// When it last stopped (monotonic), while down.
    down_since: Option<tokio::time::Instant>,
}

pub(crate) struct Inner {
    seed: u64,
    /// Nodes and client links in memory ([`TopologyBuilder::in_memory`]).
    in_memory: bool,
    /// Every node's `requirepass`, and the Sentinel endpoint's.
    requirepass: Option<String>,
    master_name: String,
    replicated: bool,
    /// How far back nodes journal their writes (`TopologyBuilder::keep_data_window`).
    keep_data_window: Duration,
    /// The cluster the nodes form (`TopologyBuilder::cluster`).
    cluster: Option<ClusterView>,
    slots: Vec<Slot>,
    master: AtomicUsize,
    front: Proxy,
    sentinel: OnceLock<sentinel::Sentinel>,
    history: History,
    /// What the nodes' writes showed of the locks (`TopologyBuilder::observe`).
    observer: Arc<observe::Observer>,
    /// Serialises fault operations (they await node state locks).
    ops: tokio::sync::Mutex<()>,
    net: Mutex<Net>,
    /// Faults applied over the wire (undone by HEAL).
    wire_guards: Mutex<Vec<FaultGuard>>,
    /// Schedules running (`Topology::run_schedule`), aborted at shutdown.
    schedules: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// The history record of the replication delay in effect, ended when it changes.
    delay_fault: Mutex<Option<usize>>,
    /// Connections not to reset while an admin command runs: the one carrying it (as the
    /// node saw it) and its hops through the proxies, so its reply gets out before it closes.
    spare: Mutex<Vec<SocketAddr>>,
    rng: Mutex<StdRng>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topology")
            .field("seed", &self.seed)
            .field("front", &self.front.addr())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_print_as_n_and_index() {
        assert_eq!(NodeId(3).to_string(), "n3");
        assert_eq!(NodeId(3).index(), 3);
    }
}
