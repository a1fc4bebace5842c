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
mod history;
mod link;
mod observe;
pub mod schedule;
mod sentinel;
mod ticks;
mod timeline;

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
use locksmith_server::control::{
    ClusterView, Journal, LinkControl, NodeControl, Recovery, ReplicaLink,
};
use locksmith_server::{Clock, Server, ServerHandle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The port an in-memory topology reports for node `n0` (`n1` is the next one, the front
/// address the one before): nothing binds it.
const MEMORY_NODE_PORT: u16 = 30000;

/// How [`Topology::restart_with`] brings a node back.
///
/// With [`Restart::KeepData`] a node comes back with what its disk would have held under
/// `appendfsync everysec` (or a periodic RDB): every write it made as a master or applied as a
/// replica up to `lose_last` before it crashed, none after. "Before it crashed" is measured on
/// the topology's monotonic clock (tokio's, so paused time too), not on the node's own clock:
/// what an `fsync` schedule loses depends on real elapsed time, which a clock jump does not
/// change. TTLs are absolute deadlines on the node's clock: a key whose deadline passed while
/// the node was down is gone when it comes back, as Redis drops it on load. A node killed
/// earlier keeps what it had `lose_last` before it was killed.
///
/// Nodes journal their writes only as far back as [`TopologyBuilder::keep_data_window`]
/// (10 s by default); `lose_last` may not exceed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Restart {
    /// Empty, as a Redis without persistence (what [`Topology::restart`] does).
    #[default]
    Empty,
    /// With the dataset as it was `lose_last` before the crash (`Duration::ZERO`: everything,
    /// a clean restart with `appendfsync always`).
    KeepData {
        /// How much of the end of the node's writes is lost (what was not yet `fsync`ed).
        lose_last: Duration,
    },
}

impl Restart {
    /// [`Restart::KeepData`] losing the writes of the last `lose_last`.
    pub fn keep_data(lose_last: Duration) -> Self {
        Restart::KeepData { lose_last }
    }
}

impl std::fmt::Display for Restart {
    /// What the fault label says: `empty` or `kept data, lost last 1000 ms`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Restart::Empty => f.write_str("empty"),
            Restart::KeepData { lose_last } => {
                write!(f, "kept data, lost last {} ms", lose_last.as_millis())
            }
        }
    }
}

/// The default of [`TopologyBuilder::keep_data_window`].
pub const DEFAULT_KEEP_DATA_WINDOW: Duration = Duration::from_secs(10);

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

/// Undoes a temporary fault when dropped (partition, isolation, link rule, stall, pause).
#[must_use = "the fault is undone as soon as the guard is dropped"]
pub struct FaultGuard {
    label: String,
    undo: Option<Box<dyn FnOnce() + Send>>,
}

impl std::fmt::Debug for FaultGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultGuard")
            .field("label", &self.label)
            .finish()
    }
}

impl FaultGuard {
    fn new(label: String, undo: impl FnOnce() + Send + 'static) -> Self {
        FaultGuard {
            label,
            undo: Some(Box::new(undo)),
        }
    }

    /// What the fault is.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Undoes the fault now.
    pub fn undo(mut self) {
        if let Some(undo) = self.undo.take() {
            undo();
        }
    }

    /// Keeps the fault in effect after the guard is gone (until [`Topology::heal`], or its
    /// own end for a timed pause).
    pub fn detach(mut self) {
        self.undo = None;
    }
}

impl Drop for FaultGuard {
    fn drop(&mut self) {
        if let Some(undo) = self.undo.take() {
            undo();
        }
    }
}

/// Builds a [`Topology`] (turmoil's builder shape: `&mut self` setters, then `build().await`).
#[derive(Debug, Clone)]
pub struct TopologyBuilder {
    masters: usize,
    replicas: usize,
    delay: Duration,
    jitter: Duration,
    seed: Option<u64>,
    sentinel: Option<u16>,
    master_name: String,
    front_port: u16,
    node_ports: Option<u16>,
    bind: IpAddr,
    start_unix_ms: Option<u64>,
    cluster: Option<usize>,
    requirepass: Option<String>,
    in_memory: bool,
    keep_data_window: Duration,
    observe: Option<Vec<String>>,
}

impl Default for TopologyBuilder {
    fn default() -> Self {
        TopologyBuilder {
            masters: 1,
            replicas: 0,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            seed: None,
            sentinel: None,
            master_name: "mymaster".into(),
            front_port: 0,
            node_ports: None,
            bind: IpAddr::from([127, 0, 0, 1]),
            start_unix_ms: None,
            cluster: None,
            requirepass: None,
            in_memory: false,
            keep_data_window: DEFAULT_KEEP_DATA_WINDOW,
            observe: None,
        }
    }
}

impl TopologyBuilder {
    /// Number of independent masters (RedLock); more than one excludes replicas.
    pub fn masters(&mut self, n: usize) -> &mut Self {
        self.masters = n.max(1);
        self
    }

    /// Number of replicas of the (single) master.
    pub fn replicas(&mut self, n: usize) -> &mut Self {
        self.replicas = n;
        self
    }

    /// Delay of every replication link.
    pub fn replication_delay(&mut self, d: Duration) -> &mut Self {
        self.delay = d;
        self
    }

    /// Extra random delay per batch, up to `d` (seeded; order is kept).
    pub fn replication_jitter(&mut self, d: Duration) -> &mut Self {
        self.jitter = d;
        self
    }

    /// Seed for every random choice (default: a random one, logged).
    pub fn seed(&mut self, seed: u64) -> &mut Self {
        self.seed = Some(seed);
        self
    }

    /// Starts a Sentinel endpoint on `port` (0 = a free port).
    pub fn sentinel(&mut self, port: u16) -> &mut Self {
        self.sentinel = Some(port);
        self
    }

    /// The master name the Sentinel endpoint knows (default `mymaster`).
    pub fn master_name(&mut self, name: impl Into<String>) -> &mut Self {
        self.master_name = name.into();
        self
    }

    /// Port of the front address (default 0: a free port).
    pub fn front_port(&mut self, port: u16) -> &mut Self {
        self.front_port = port;
        self
    }

    /// Node `i` listens on `first + i` instead of a free port.
    pub fn node_ports(&mut self, first: u16) -> &mut Self {
        self.node_ports = Some(first);
        self
    }

    /// Address every listener binds (default 127.0.0.1).
    pub fn bind(&mut self, ip: IpAddr) -> &mut Self {
        self.bind = ip;
        self
    }

    /// Every node's clock reads `unix_ms` at start (deterministic timestamps).
    pub fn start_time(&mut self, unix_ms: u64) -> &mut Self {
        self.start_unix_ms = Some(unix_ms);
        self
    }

    /// A Redis Cluster of `shards` masters splitting the 16384 slots as `redis-cli --cluster
    /// create` does, each with [`TopologyBuilder::replicas`] replicas (replicas per shard
    /// here). Every node knows the whole cluster: `CLUSTER SLOTS|SHARDS|NODES` report the
    /// nodes' addresses, `MOVED` points at the owner, and `PUBLISH` reaches every node. The
    /// front address routes to the first master.
    pub fn cluster(&mut self, shards: usize) -> &mut Self {
        self.cluster = Some(shards.max(1));
        self
    }

    /// Links everything in memory instead of loopback sockets: nodes bind nothing, and
    /// clients connect with [`Topology::connect`] / [`Topology::connect_front`] (streams
    /// through the same link rules, see [`Topology::connector`] for the lock library). On a
    /// current-thread runtime with paused time (`#[tokio::test(flavor = "current_thread",
    /// start_paused = true)]`) the seed alone then decides the interleaving, so a run replays
    /// exactly. Addresses are still reported (`127.0.0.1:30000` + the node's index, the front
    /// at `127.0.0.1:29999`) but nothing listens there. Not with a Sentinel endpoint or a
    /// cluster (their clients find nodes by address).
    pub fn in_memory(&mut self, yes: bool) -> &mut Self {
        self.in_memory = yes;
        self
    }

    /// `requirepass` for every node (so also through the front address, `LOCKSMITH.*`
    /// included) and for the Sentinel endpoint, as a Sentinel's own `requirepass`.
    pub fn requirepass(&mut self, password: impl Into<String>) -> &mut Self {
        self.requirepass = Some(password.into());
        self
    }

    /// How far back a [`Restart::KeepData`] restart may reach (default
    /// [`DEFAULT_KEEP_DATA_WINDOW`], 10 s). Each node journals its writes for it (its "disk"):
    /// each write's arguments, encoded, and while it is written to a copy of its dataset's
    /// tables once per window (or per 16 MiB of writes), holding at most two windows of writes
    /// and two dataset copies (three and 48 MiB under a flood of writes, which then shortens
    /// how far back it reaches). Lock workloads do not notice it; a pipelined flood of `SET`s
    /// takes about a fifth more CPU. `Duration::ZERO` journals nothing and costs nothing, and
    /// `KeepData` restarts are then refused.
    pub fn keep_data_window(&mut self, d: Duration) -> &mut Self {
        self.keep_data_window = d;
        self
    }

    /// Observes the locks of keys matching `patterns` (glob patterns as `KEYS` takes; none:
    /// every key) from the start, on every node: see [`Topology::observe`]. Off by default.
    pub fn observe<S: Into<String>>(&mut self, patterns: impl IntoIterator<Item = S>) -> &mut Self {
        self.observe = Some(patterns.into_iter().map(Into::into).collect());
        self
    }

    /// Starts the nodes, replication, the front address and the Sentinel endpoint.
    ///
    /// # Errors
    ///
    /// An impossible shape (masters and replicas both above one), or a listener that cannot
    /// be bound.
    pub async fn build(&self) -> Result<Topology, HarnessError> {
        if self.masters > 1 && self.replicas > 0 && self.cluster.is_none() {
            return Err(HarnessError::Invalid(
                "either one master with replicas or independent masters".into(),
            ));
        }
        if self.in_memory && (self.sentinel.is_some() || self.cluster.is_some()) {
            return Err(HarnessError::Invalid(
                "an in-memory topology has no Sentinel endpoint or cluster".into(),
            ));
        }
        let seed = self.seed.unwrap_or_else(rand::random);
        let count = match self.cluster {
            Some(shards) => shards * (1 + self.replicas),
            None => self.masters + self.replicas,
        };
        tracing::info!(
            seed,
            masters = self.masters,
            replicas = self.replicas,
            "starting locksmith topology"
        );
        let mut slots = Vec::with_capacity(count);
        let ports = Arc::new(link::PortCounter::default());
        for i in 0..count {
            let port = match self.node_ports {
                Some(first) => first.saturating_add(i as u16),
                None => 0,
            };
            let proxy = if self.in_memory {
                let port = MEMORY_NODE_PORT.saturating_add(i as u16);
                Proxy::memory(SocketAddr::from(([127, 0, 0, 1], port)), ports.clone())
            } else {
                Proxy::bind(self.bind, port).await?
            };
            let clock = match self.start_unix_ms {
                Some(ms) => Clock::starting_at(ms),
                None => Clock::new(),
            };
            slots.push(Slot {
                id: NodeId(i),
                addr: proxy.addr(),
                clock,
                proxy,
                live: Mutex::new(Live::default()),
            });
        }
        let front = if self.in_memory {
            Proxy::memory(
                SocketAddr::from(([127, 0, 0, 1], MEMORY_NODE_PORT - 1)),
                ports,
            )
        } else {
            Proxy::bind(self.bind, self.front_port).await?
        };
        let history = History::new();
        let quorum = (self.masters > 1 && self.cluster.is_none()).then_some(self.masters / 2 + 1);
        let observer = Arc::new(observe::Observer::new(
            history.clone(),
            self.keep_data_window,
            quorum,
        ));
        observer.set_patterns(
            self.observe
                .as_ref()
                .map(|p| p.iter().map(|p| bytes::Bytes::from(p.clone())).collect()),
        );
        let cluster = self.cluster.map(|shards| {
            let mut rng = StdRng::seed_from_u64(seed ^ 0xc1u64);
            let ids = (0..count)
                .map(|_| ClusterView::random_node_id(&mut rng))
                .collect();
            let addrs: Vec<SocketAddr> = slots.iter().map(|s| s.addr).collect();
            ClusterView::even(shards, self.replicas, &addrs, ids)
        });
        let inner = Arc::new(Inner {
            seed,
            in_memory: self.in_memory,
            requirepass: self.requirepass.clone(),
            master_name: self.master_name.clone(),
            replicated: self.masters == 1 && cluster.is_none(),
            keep_data_window: self.keep_data_window,
            cluster,
            slots,
            master: AtomicUsize::new(0),
            front,
            sentinel: OnceLock::new(),
            history,
            observer,
            ops: tokio::sync::Mutex::new(()),
            net: Mutex::new(Net {
                links: BTreeMap::new(),
                partitions: BTreeMap::new(),
                stalled: 0,
                delay: self.delay,
                jitter: self.jitter,
            }),
            wire_guards: Mutex::new(Vec::new()),
            delay_fault: Mutex::new(None),
            schedules: Mutex::new(Vec::new()),
            spare: Mutex::new(Vec::new()),
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
        });
        {
            let _ops = inner.ops.lock().await;
            for i in 0..count {
                inner.start_node(i, None).await?;
            }
            if inner.replicated {
                for r in 1..count {
                    inner.attach(0, r).await?;
                }
            }
            for (m, r) in inner.cluster_links() {
                inner.attach(m, r).await?;
            }
            inner.route_front();
        }
        if let Some(port) = self.sentinel {
            let s = sentinel::Sentinel::start(self.bind, port, Arc::downgrade(&inner)).await?;
            let _ = inner.sentinel.set(s);
        }
        let topology = Topology { inner };
        tracing::info!(
            seed,
            front = %topology.front_addr(),
            nodes = ?topology.inner.slots.iter().map(|s| s.addr).collect::<Vec<_>>(),
            "locksmith topology ready"
        );
        Ok(topology)
    }
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

#[derive(Debug)]
struct LinkEntry {
    ctl: Arc<LinkControl>,
    link: ReplicaLink,
}

#[derive(Debug, Default)]
struct Net {
    /// (master, replica) -> link.
    links: BTreeMap<(usize, usize), LinkEntry>,
    /// Cut node pairs, (low, high).
    partitions: BTreeMap<(usize, usize), usize>,
    stalled: usize,
    delay: Duration,
    jitter: Duration,
}

impl Net {
    fn blocked(&self, a: usize, b: usize) -> bool {
        self.stalled > 0 || self.partitions.contains_key(&(a.min(b), a.max(b)))
    }

    fn apply(&self) {
        for (&(m, r), entry) in &self.links {
            entry.ctl.set_blocked(self.blocked(m, r));
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for entry in self.links.values() {
            entry.link.abort();
        }
    }
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

impl Inner {
    fn slot(&self, i: usize) -> Result<&Slot, HarnessError> {
        self.slots
            .get(i)
            .ok_or_else(|| HarnessError::UnknownNode(format!("n{i}")))
    }

    fn live_node(&self, i: usize) -> Result<NodeControl, HarnessError> {
        let slot = self.slot(i)?;
        slot.live
            .lock()
            .ok()
            .and_then(|l| l.node.clone())
            .ok_or(HarnessError::NodeDown(NodeId(i)))
    }

    fn is_up(&self, i: usize) -> bool {
        self.live_node(i).is_ok()
    }

    fn next_seed(&self) -> u64 {
        self.rng.lock().map(|mut r| r.random()).unwrap_or(self.seed)
    }

    fn master_index(&self) -> usize {
        self.master.load(Ordering::Acquire)
    }

    fn offset_of(&self, i: usize) -> u64 {
        self.slots
            .get(i)
            .and_then(|s| s.live.lock().ok()?.offset.clone())
            .map_or(0, |o| o.load(Ordering::Acquire))
    }

    fn replica_of(&self, i: usize) -> Option<usize> {
        self.slots.get(i)?.live.lock().ok()?.replica_of
    }

    fn role(&self, i: usize) -> NodeRole {
        if !self.is_up(i) {
            return NodeRole::Down;
        }
        match self.replica_of(i) {
            Some(m) => NodeRole::Replica(NodeId(m)),
            None => NodeRole::Master,
        }
    }

    fn fault(&self, label: String) -> usize {
        tracing::info!(fault = %label, "fault");
        self.history.fault(label)
    }

    /// Resets the open client connections of `proxy`, sparing the admin command's own.
    fn reset_proxy(&self, proxy: &Proxy) -> usize {
        let spare = self.spare.lock().map(|s| s.clone()).unwrap_or_default();
        let (reset, kept) = proxy.reset_except(&spare);
        if let Ok(mut s) = self.spare.lock() {
            s.extend(kept);
        }
        reset
    }

    /// Whether clients write to node `i`: the replicated topology's master, any of
    /// independent masters, a cluster shard's master.
    fn serves_clients(&self, i: usize) -> bool {
        match &self.cluster {
            Some(view) => view.replica_of(i).is_none(),
            None if self.replicated => i == self.master_index(),
            None => true,
        }
    }

    /// Turns lock observation on for keys matching `patterns` (empty: every key), or off
    /// with `None`, on every running node (a node started later follows).
    async fn set_observing(&self, patterns: Option<Vec<bytes::Bytes>>) {
        let on = patterns.is_some();
        self.observer.set_patterns(patterns);
        for (i, slot) in self.slots.iter().enumerate() {
            if let Ok(node) = self.live_node(i) {
                let observer = on.then(|| {
                    self.observer.for_node(i, slot.clock.clone())
                        as Arc<dyn locksmith_server::control::WriteObserver>
                });
                node.set_observer(observer).await;
            }
        }
    }

    /// The locks every running node holds now.
    fn observed_locks(&self) -> Vec<HeldLock> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(i, _)| self.is_up(*i))
            .flat_map(|(i, slot)| self.observer.held(i, &slot.clock))
            .collect()
    }

    /// The checker's violations over what was observed so far.
    fn check_observed(&self) -> Vec<LockViolation> {
        observe::check_quorum(
            &self.observer.events(),
            &self.history.faults(),
            self.history.now_us(),
            self.observer.quorum(),
        )
    }

    /// The observed history as JSON (`LOCKSMITH.HISTORY`).
    fn observed_json(&self) -> String {
        let events = self.observer.events();
        let faults = self.history.faults();
        let violations = observe::check_quorum(
            &events,
            &faults,
            self.history.now_us(),
            self.observer.quorum(),
        );
        observe::history_json(&events, &faults, &self.observer.marks(), &violations)
    }

    /// The timeline of the observed grants.
    fn observed_timeline(&self, title: &str) -> Timeline {
        let history = observe::as_history(
            &self.history,
            &self.observer.events(),
            &self.history.faults(),
            &self.observer.marks(),
            self.history.now_us(),
            self.observer.quorum(),
        );
        Timeline::new(title, &history)
    }

    fn publish(&self, channel: &str, message: String) {
        if let Some(s) = self.sentinel.get() {
            s.publish(channel, &message);
        }
    }

    /// Starts a fresh server for slot `i` behind its proxy, empty or loading `recovery`, with
    /// a journal when the topology keeps data. Caller holds `ops`.
    async fn start_node(
        self: &Arc<Self>,
        i: usize,
        recovery: Option<&Recovery>,
    ) -> Result<(), HarnessError> {
        let slot = self.slot(i)?;
        let seed = self.next_seed();
        let mut builder = Server::builder().seed(seed).clock(slot.clock.clone());
        if self.in_memory {
            builder = builder.in_memory(slot.addr);
        }
        if let Some(password) = &self.requirepass {
            builder = builder.requirepass(password.clone());
        }
        if let Some(view) = &self.cluster {
            builder = builder.cluster_member(view, i);
        }
        let server = builder.start().await?;
        let node = server.control();
        node.set_admin_hook(Arc::new(admin::Hook {
            topology: Arc::downgrade(self),
            id: slot.id,
        }));
        if let Some(recovery) = recovery {
            let keys = node.recover(recovery).await;
            tracing::info!(node = %slot.id, keys, writes = recovery.writes(), "data recovered");
        } else {
            self.observer.emptied(i);
        }
        if self.observer.patterns().is_some() {
            node.set_observer(Some(self.observer.for_node(i, slot.clock.clone())))
                .await;
        }
        let journal = if self.keep_data_window.is_zero() {
            None
        } else {
            Some(node.start_journal(self.keep_data_window).await)
        };
        let offset = node.offset_mirror().await;
        slot.proxy.set_upstream(Some(if self.in_memory {
            link::Upstream::Memory(server.acceptor())
        } else {
            link::Upstream::Tcp(server.addr())
        }));
        if let Ok(mut live) = slot.live.lock() {
            live.server = Some(server);
            live.node = Some(node);
            live.offset = Some(offset);
            live.replica_of = None;
            live.incarnation += 1;
            live.journal = journal;
            live.down_since = None;
        }
        Ok(())
    }

    /// Stops slot `i`'s server and resets its client connections. Caller holds `ops`.
    async fn stop_node(&self, i: usize) -> Result<(), HarnessError> {
        let slot = self.slot(i)?;
        slot.proxy.set_upstream(None);
        self.reset_proxy(&slot.proxy);
        let server = slot.live.lock().ok().and_then(|mut live| {
            if live.node.take().is_some() {
                live.down_since = Some(tokio::time::Instant::now());
            }
            // The crash: what the disk holds from here on is final.
            if let Some(journal) = &live.journal {
                journal.close();
            }
            live.replica_of = None;
            if let Some((cancel, _)) = live.paused.take() {
                cancel.cancel();
            }
            live.server.take()
        });
        // Links into and out of the dead node; what was in flight is lost.
        let cut: Vec<(usize, usize)> = self
            .net
            .lock()
            .map(|n| {
                n.links
                    .keys()
                    .filter(|(m, r)| *m == i || *r == i)
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        for (m, r) in cut {
            self.detach_link(m, r).await;
        }
        if let Some(server) = server {
            // Shutting down signals the node's tasks; nothing waits for them (a connection of
            // this node may be the one running this very command).
            drop(server);
        }
        Ok(())
    }

    /// Removes link (m, r): aborts its task and forgets it on the master.
    async fn detach_link(&self, m: usize, r: usize) {
        let entry = self
            .net
            .lock()
            .ok()
            .and_then(|mut n| n.links.remove(&(m, r)));
        let Some(entry) = entry else {
            return;
        };
        entry.link.abort();
        if let Ok(master) = self.live_node(m) {
            master.drop_replica(entry.link.id).await;
        }
        if let Ok(slot) = self.slot(r) {
            if let Ok(mut live) = slot.live.lock() {
                if live.replica_of == Some(m) {
                    live.replica_of = None;
                }
            }
        }
    }

    /// Makes `r` a replica of `m` (full resync). Caller holds `ops`.
    async fn attach(&self, m: usize, r: usize) -> Result<(), HarnessError> {
        if m == r {
            return Err(HarnessError::Invalid(format!(
                "n{m} cannot replicate itself"
            )));
        }
        let master = self.live_node(m)?;
        let replica = self.live_node(r)?;
        if let Some(old) = self.replica_of(r) {
            self.detach_link(old, r).await;
        }
        let (delay, jitter, blocked) = self
            .net
            .lock()
            .map(|n| (n.delay, n.jitter, n.blocked(m, r)))
            .unwrap_or_default();
        let ctl = Arc::new(LinkControl::new(delay, jitter, blocked));
        let (maddr, raddr) = (self.slot(m)?.addr, self.slot(r)?.addr);
        let link = master
            .attach_replica(maddr, &replica, raddr, ctl.clone(), self.next_seed())
            .await;
        self.observer.synced(m, r);
        if let Ok(mut net) = self.net.lock() {
            if let Some(old) = net.links.insert((m, r), LinkEntry { ctl, link }) {
                old.link.abort();
            }
        }
        if let Ok(mut live) = self.slot(r)?.live.lock() {
            live.replica_of = Some(m);
        }
        self.publish(
            "+slave",
            format!(
                "slave {raddr} {} {} @ {} {} {}",
                raddr.ip(),
                raddr.port(),
                self.master_name,
                maddr.ip(),
                maddr.port()
            ),
        );
        Ok(())
    }

    /// Makes `i` a master (`REPLICAOF NO ONE`). Caller holds `ops`.
    async fn make_master(&self, i: usize) -> Result<(), HarnessError> {
        if let Some(old) = self.replica_of(i) {
            self.detach_link(old, i).await;
        }
        self.live_node(i)?.become_master().await;
        Ok(())
    }

    fn route_front(&self) {
        let m = self.master_index();
        let up = self.is_up(m);
        self.front.set_upstream(
            up.then(|| self.slots.get(m).map(|s| s.proxy.as_upstream()))
                .flatten(),
        );
    }

    /// The most up-to-date live replica of the current master (ties: lowest id).
    fn best_replica(&self) -> Option<usize> {
        let m = self.master_index();
        (0..self.slots.len())
            .filter(|&i| i != m && self.is_up(i) && self.replica_of(i).is_some())
            .max_by_key(|&i| (self.offset_of(i), std::cmp::Reverse(i)))
    }

    /// Promotes `new` (or the best replica); kills the old master first when `crash`.
    async fn failover(&self, new: Option<usize>, crash: bool) -> Result<NodeId, HarnessError> {
        if let Some(view) = &self.cluster {
            return self.shard_failover(view, new, crash).await;
        }
        if !self.replicated {
            return Err(HarnessError::Invalid(
                "independent masters have no replicas to fail over to".into(),
            ));
        }
        let old = self.master_index();
        let new = match new {
            Some(n) => {
                self.slot(n)?;
                if n == old {
                    return Err(HarnessError::Invalid(format!("n{n} is already the master")));
                }
                if !self.is_up(n) {
                    return Err(HarnessError::NodeDown(NodeId(n)));
                }
                n
            }
            None => self.best_replica().ok_or(HarnessError::NoReplica)?,
        };
        let label = format!(
            "{} n{old} -> n{new}",
            if crash { "fail_master" } else { "failover" }
        );
        let served = self.observer.snapshot(old);
        if crash && self.is_up(old) {
            self.stop_node(old).await?;
            self.publish_sdown(old, true);
        }
        self.make_master(new).await?;
        self.observer
            .took_over(&served, &self.slot(old)?.clock, new);
        self.master.store(new, Ordering::Release);
        for r in 0..self.slots.len() {
            if r != new && self.is_up(r) {
                self.attach(new, r).await?;
            }
        }
        self.route_front();
        // Clients of the front address that still talk to the old master are cut, as a VIP
        // move would leave them talking to nothing.
        self.reset_proxy(&self.front);
        let (o, n) = (self.slot(old)?.addr, self.slot(new)?.addr);
        self.publish(
            "+switch-master",
            format!(
                "{} {} {} {} {}",
                self.master_name,
                o.ip(),
                o.port(),
                n.ip(),
                n.port()
            ),
        );
        self.fault(label);
        Ok(NodeId(new))
    }

    /// A cluster shard's failover to its replica `new` (Redis Cluster's, decided here rather
    /// than by the nodes' gossip): the old master is killed first when `crash`; `new` takes the
    /// shard's slots with a new config epoch (every node's `CLUSTER SLOTS` and `MOVED` follow at
    /// once), and the shard's other replicas (and the old master, if it runs) replicate from it.
    async fn shard_failover(
        &self,
        view: &ClusterView,
        new: Option<usize>,
        crash: bool,
    ) -> Result<NodeId, HarnessError> {
        let Some(new) = new else {
            return Err(HarnessError::Invalid(
                "a cluster has a master per shard: name the replica to promote".into(),
            ));
        };
        self.slot(new)?;
        let Some(old) = view.replica_of(new) else {
            return Err(HarnessError::Invalid(format!("n{new} is not a replica")));
        };
        if !self.is_up(new) {
            return Err(HarnessError::NodeDown(NodeId(new)));
        }
        let label = format!(
            "{} n{old} -> n{new}",
            if crash { "fail_master" } else { "failover" }
        );
        let served = self.observer.snapshot(old);
        if crash && self.is_up(old) {
            self.stop_node(old).await?;
        }
        view.promote(new).map_err(HarnessError::Invalid)?;
        self.make_master(new).await?;
        self.observer
            .took_over(&served, &self.slot(old)?.clock, new);
        let followers: Vec<usize> = view.replicas_of(new);
        for r in followers {
            if self.is_up(r) {
                self.attach(new, r).await?;
            }
        }
        self.fault(label);
        Ok(NodeId(new))
    }

    fn publish_sdown(&self, i: usize, down: bool) {
        let Ok(slot) = self.slot(i) else {
            return;
        };
        let a = slot.addr;
        let m = self.slots.get(self.master_index()).map(|s| s.addr);
        let sign = if down { "+sdown" } else { "-sdown" };
        let msg = match (i == self.master_index(), m) {
            (true, _) | (_, None) => {
                format!("master {} {} {}", self.master_name, a.ip(), a.port())
            }
            (false, Some(m)) => format!(
                "slave {a} {} {} @ {} {} {}",
                a.ip(),
                a.port(),
                self.master_name,
                m.ip(),
                m.port()
            ),
        };
        self.publish(sign, msg);
    }

    async fn kill(&self, i: usize) -> Result<(), HarnessError> {
        self.slot(i)?;
        if !self.is_up(i) {
            return Ok(());
        }
        self.stop_node(i).await?;
        self.publish_sdown(i, true);
        if i == self.master_index() {
            self.route_front();
            self.reset_proxy(&self.front);
        }
        self.fault(format!("kill n{i}"));
        Ok(())
    }

    /// Checks that a `KeepData { lose_last }` restart is possible at all, before anything
    /// is stopped.
    fn check_keep_data(&self, i: usize, lose_last: Duration) -> Result<(), HarnessError> {
        let window = self.keep_data_window;
        if window.is_zero() {
            return Err(HarnessError::KeepData(
                "nodes keep no data (the topology's keep-data window is 0)".into(),
            ));
        }
        if lose_last > window {
            return Err(HarnessError::KeepData(format!(
                "losing the last {} ms reaches beyond the keep-data window of {} ms",
                lose_last.as_millis(),
                window.as_millis()
            )));
        }
        let has_journal = self.slot(i)?.live.lock().is_ok_and(|l| l.journal.is_some());
        if !has_journal {
            return Err(HarnessError::KeepData(format!("n{i} has no journal")));
        }
        Ok(())
    }

    /// What node `i`'s disk held `lose_last` before it went down (it must be down).
    fn recovery(&self, i: usize, lose_last: Duration) -> Result<Recovery, HarnessError> {
        let (journal, down_since) = self
            .slot(i)?
            .live
            .lock()
            .ok()
            .and_then(|l| Some((l.journal.clone()?, l.down_since)))
            .ok_or_else(|| HarnessError::KeepData(format!("n{i} has no journal")))?;
        let crash = down_since.unwrap_or_else(tokio::time::Instant::now);
        let cutoff = crash
            .checked_sub(lose_last)
            .unwrap_or_else(|| journal.started_at());
        journal.as_of(cutoff).ok_or_else(|| {
            // Only a node written to faster than its journal's checkpoints allow gets here.
            HarnessError::KeepData(format!(
                "n{i}'s journal no longer reaches {} ms before its crash; it stays down",
                lose_last.as_millis()
            ))
        })
    }

    async fn restart(self: &Arc<Self>, i: usize, how: Restart) -> Result<(), HarnessError> {
        self.slot(i)?;
        if let Restart::KeepData { lose_last } = how {
            self.check_keep_data(i, lose_last)?;
        }
        if self.is_up(i) {
            self.stop_node(i).await?;
        }
        let served = self.observer.snapshot(i);
        let recovery = match how {
            Restart::KeepData { lose_last } => Some(self.recovery(i, lose_last)?),
            Restart::Empty => None,
        };
        if let Restart::KeepData { lose_last } = how {
            let down_since = self.slot(i)?.live.lock().ok().and_then(|l| l.down_since);
            let crash = down_since.unwrap_or_else(tokio::time::Instant::now);
            let cutoff = crash.checked_sub(lose_last).unwrap_or(crash);
            self.observer.restored(i, cutoff);
        }
        self.start_node(i, recovery.as_ref()).await?;
        // Clients of a master (the replicated topology's, or any of independent masters or
        // shards) find it without what it lost.
        if self.serves_clients(i) {
            let clock = self.slot(i)?.clock.clone();
            self.observer.took_over(&served, &clock, i);
        }
        if self.replicated {
            let m = self.master_index();
            if i == m {
                // A restarted master: its replicas resync to what it came back with (nothing,
                // without persistence).
                for r in 0..self.slots.len() {
                    if r != i && self.is_up(r) {
                        self.attach(i, r).await?;
                    }
                }
                self.route_front();
            } else if self.is_up(m) {
                self.attach(m, i).await?;
            }
        }
        // A cluster node comes back in its shard: a replica resyncs from its master, a
        // master's replicas resync from it.
        for (m, r) in self.cluster_links() {
            if (m == i || r == i) && self.is_up(m) && self.is_up(r) {
                self.attach(m, r).await?;
            }
        }
        self.publish_sdown(i, false);
        self.fault(format!("restart n{i} ({how})"));
        Ok(())
    }

    /// Cuts replication between `a` and `b`; recorded as a fault when `label` is given.
    fn partition(self: &Arc<Self>, a: usize, b: usize, label: Option<String>) -> FaultGuard {
        let key = (a.min(b), a.max(b));
        if let Ok(mut net) = self.net.lock() {
            *net.partitions.entry(key).or_insert(0) += 1;
            net.apply();
        }
        let fault = label.clone().map(|l| self.fault(l));
        let inner = Arc::downgrade(self);
        FaultGuard::new(label.unwrap_or_default(), move || {
            if let Some(inner) = inner.upgrade() {
                if let Ok(mut net) = inner.net.lock() {
                    if let Some(n) = net.partitions.get_mut(&key) {
                        *n -= 1;
                        if *n == 0 {
                            net.partitions.remove(&key);
                        }
                    }
                    net.apply();
                }
                if let Some(fault) = fault {
                    inner.history.fault_ended(fault);
                }
            }
        })
    }

    fn link_rule(
        self: &Arc<Self>,
        i: usize,
        rule: Arc<dyn LinkRule>,
        label: String,
    ) -> Result<FaultGuard, HarnessError> {
        let slot = self.slot(i)?;
        let id = slot.proxy.add_rule(rule);
        let remove = slot.proxy.rule_remover(id);
        let fault = self.fault(label.clone());
        let history = self.history.clone();
        Ok(FaultGuard::new(label, move || {
            remove();
            history.fault_ended(fault);
        }))
    }

    /// Sets the replication delay and jitter and records it: a delay lasts until the next
    /// one replaces it, whose record ends it then (`Topology::replication_delay`,
    /// `LOCKSMITH.REPLDELAY` and the schedules all come here).
    fn replication_delay(&self, delay: Duration, jitter: Duration) {
        self.set_delay(delay, jitter);
        let fault = self.fault(format!("replication delay {} ms", delay.as_millis()));
        let previous = self.delay_fault.lock().ok().and_then(|mut open| {
            std::mem::replace(&mut *open, (!delay.is_zero()).then_some(fault))
        });
        if let Some(previous) = previous {
            self.history.fault_ended(previous);
        }
    }

    fn set_delay(&self, delay: Duration, jitter: Duration) {
        if let Ok(mut net) = self.net.lock() {
            net.delay = delay;
            net.jitter = jitter;
            for entry in net.links.values() {
                entry.ctl.set_delay(delay, jitter);
            }
        }
    }

    fn stall(self: &Arc<Self>) -> FaultGuard {
        if let Ok(mut net) = self.net.lock() {
            net.stalled += 1;
            net.apply();
        }
        let fault = self.fault("replication stalled".into());
        let inner = Arc::downgrade(self);
        FaultGuard::new("replication stalled".into(), move || {
            if let Some(inner) = inner.upgrade() {
                if let Ok(mut net) = inner.net.lock() {
                    net.stalled = net.stalled.saturating_sub(1);
                    net.apply();
                }
                inner.history.fault_ended(fault);
            }
        })
    }

    fn heal(&self) {
        let guards = self
            .wire_guards
            .lock()
            .map(|mut g| std::mem::take(&mut *g))
            .unwrap_or_default();
        drop(guards);
        if let Ok(mut net) = self.net.lock() {
            net.partitions.clear();
            net.apply();
        }
        for slot in &self.slots {
            slot.proxy.clear_rules();
        }
        self.fault("heal".into());
    }

    async fn pause(self: &Arc<Self>, i: usize, d: Duration) -> Result<FaultGuard, HarnessError> {
        let node = self.live_node(i)?;
        let cancel = CancellationToken::new();
        let token = Arc::new(());
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let label = format!("pause n{i} {} ms", d.as_millis());
        let fault = self.fault(label.clone());
        {
            let cancel = cancel.clone();
            let history = self.history.clone();
            let weak = Arc::downgrade(self);
            let token = token.clone();
            tokio::spawn(async move {
                // Holding the state lock is what a stopped process looks like: connections
                // accept and buffer requests, nothing is executed, expired or replicated.
                let frozen = node.freeze().await;
                let _ = ready_tx.send(());
                tokio::select! {
                    _ = tokio::time::sleep(d) => {}
                    _ = cancel.cancelled() => {}
                }
                drop(frozen);
                history.fault_ended(fault);
                if let Some(inner) = weak.upgrade() {
                    if let Ok(slot) = inner.slot(i) {
                        if let Ok(mut live) = slot.live.lock() {
                            if live
                                .paused
                                .as_ref()
                                .is_some_and(|(_, t)| Arc::ptr_eq(t, &token))
                            {
                                live.paused = None;
                            }
                        }
                    }
                }
            });
        }
        let _ = ready_rx.await;
        if let Ok(mut live) = self.slot(i)?.live.lock() {
            live.paused = Some((cancel.clone(), token));
        }
        Ok(FaultGuard::new(label, move || cancel.cancel()))
    }

    /// The (master, replica) pairs of the cluster's shards.
    fn cluster_links(&self) -> Vec<(usize, usize)> {
        self.cluster
            .as_ref()
            .map_or_else(Vec::new, ClusterView::links)
    }

    fn node_by_name(&self, name: &str) -> Result<usize, HarnessError> {
        let unknown = || HarnessError::UnknownNode(name.to_string());
        let idx = if let Some(n) = name.strip_prefix(['n', 'N']) {
            n.parse::<usize>().map_err(|_| unknown())?
        } else if let Ok(n) = name.parse::<usize>() {
            n
        } else if let Ok(addr) = name.parse::<SocketAddr>() {
            self.slots
                .iter()
                .position(|s| s.addr == addr)
                .ok_or_else(unknown)?
        } else {
            return Err(unknown());
        };
        self.slot(idx).map_err(|_| unknown())?;
        Ok(idx)
    }

    fn info(&self) -> Vec<NodeInfo> {
        self.slots
            .iter()
            .enumerate()
            .map(|(i, s)| NodeInfo {
                id: s.id,
                addr: s.addr,
                role: self.role(i),
                offset: self.offset_of(i),
                clock_shift_ms: s.clock.shift_ms(),
                paused: s.live.lock().map(|l| l.paused.is_some()).unwrap_or(false),
            })
            .collect()
    }

    fn links_up(&self, m: usize, r: usize) -> bool {
        self.net
            .lock()
            .map(|n| n.links.get(&(m, r)).is_some_and(|e| !e.ctl.is_blocked()))
            .unwrap_or(false)
    }
}

impl Topology {
    /// A builder: one master, no replicas, no delay, a random seed.
    pub fn builder() -> TopologyBuilder {
        TopologyBuilder::default()
    }

    /// The seed every random choice came from.
    pub fn seed(&self) -> u64 {
        self.inner.seed
    }

    /// The front address: always routes new connections to the current master.
    pub fn front_addr(&self) -> SocketAddr {
        self.inner.front.addr()
    }

    /// `redis://` URL of the front address.
    pub fn front_url(&self) -> String {
        format!("redis://{}/", self.front_addr())
    }

    /// The Sentinel endpoint's address, if one was started.
    pub fn sentinel_addr(&self) -> Option<SocketAddr> {
        self.inner.sentinel.get().map(|s| s.addr())
    }

    /// The master name the Sentinel endpoint reports.
    pub fn master_name(&self) -> &str {
        &self.inner.master_name
    }

    /// Every node, in order.
    pub fn nodes(&self) -> Vec<NodeId> {
        self.inner.slots.iter().map(|s| s.id).collect()
    }

    /// The node called `n<i>`, `<i>` or `host:port`.
    ///
    /// # Errors
    ///
    /// No such node.
    pub fn node(&self, name: &str) -> Result<NodeId, HarnessError> {
        self.inner.node_by_name(name).map(NodeId)
    }

    /// The node's address (stable across restarts). An unknown id gives `0.0.0.0:0`.
    pub fn addr(&self, node: NodeId) -> SocketAddr {
        self.inner
            .slots
            .get(node.0)
            .map_or(SocketAddr::from(([0, 0, 0, 0], 0)), |s| s.addr)
    }

    /// `redis://` URL of a node.
    pub fn url(&self, node: NodeId) -> String {
        format!("redis://{}/", self.addr(node))
    }

    /// Opens a client connection to `node` in an in-memory topology
    /// ([`TopologyBuilder::in_memory`]): a stream through the node's link rules, as a socket
    /// connected to [`Topology::addr`] would be.
    ///
    /// # Errors
    ///
    /// `ConnectionRefused` when the node is down, the id unknown, or the topology listens on
    /// sockets (connect to its addresses instead).
    pub fn connect(&self, node: NodeId) -> std::io::Result<tokio::io::DuplexStream> {
        match self.inner.slots.get(node.0) {
            Some(slot) => slot.proxy.connect(),
            None => Err(std::io::ErrorKind::ConnectionRefused.into()),
        }
    }

    /// [`Topology::connect`] to the front address: the current master, through its link
    /// rules; a failover resets these connections as it resets the front address's.
    ///
    /// # Errors
    ///
    /// `ConnectionRefused` when the master is down or the topology listens on sockets.
    pub fn connect_front(&self) -> std::io::Result<tokio::io::DuplexStream> {
        self.inner.front.connect()
    }

    /// A connection factory for a client that must reach `target` again and again (each
    /// call is one [`Topology::connect`], or [`Topology::connect_front`] for `None`): what
    /// `locksmith_lock::Client::open_over` takes. It holds the topology weakly, so a client
    /// outliving the topology gets `ConnectionRefused`.
    pub fn connector(
        &self,
        target: Option<NodeId>,
    ) -> impl Fn() -> std::future::Ready<std::io::Result<tokio::io::DuplexStream>>
           + Send
           + Sync
           + Clone
           + 'static {
        let weak = Arc::downgrade(&self.inner);
        move || {
            let stream = match weak.upgrade() {
                Some(inner) => {
                    let topology = Topology { inner };
                    match target {
                        Some(node) => topology.connect(node),
                        None => topology.connect_front(),
                    }
                }
                None => Err(std::io::ErrorKind::ConnectionRefused.into()),
            };
            std::future::ready(stream)
        }
    }

    /// The current master (with independent masters: the first).
    pub fn master(&self) -> NodeId {
        NodeId(self.inner.master_index())
    }

    /// The current replicas (live nodes replicating from someone).
    pub fn replicas(&self) -> Vec<NodeId> {
        (0..self.inner.slots.len())
            .filter(|&i| matches!(self.inner.role(i), NodeRole::Replica(_)))
            .map(NodeId)
            .collect()
    }

    /// Roles, addresses, offsets, clock shifts and pauses of every node.
    pub fn nodes_info(&self) -> Vec<NodeInfo> {
        self.inner.info()
    }

    /// The replication offset of `node` (0 when down).
    pub fn offset(&self, node: NodeId) -> u64 {
        self.inner.offset_of(node.0)
    }

    /// The history clients record into; the topology records its faults there.
    pub fn history(&self) -> History {
        self.inner.history.clone()
    }

    /// Milliseconds on the topology clock (the history's).
    pub fn now_ms(&self) -> u64 {
        self.inner.history.now_ms()
    }

    /// Starts observing the locks of keys matching `patterns` (glob patterns as `KEYS`
    /// takes; none: every key) on every node, or changes the patterns (`LOCKSMITH.OBSERVE`):
    /// each write a node makes or applies to such a key becomes a [`LockEvent`] (see
    /// [`TopologyBuilder::observe`] to observe from the start). Locks taken before
    /// observation started are not known.
    pub async fn observe<S: Into<String>>(&self, patterns: impl IntoIterator<Item = S>) {
        let patterns = patterns
            .into_iter()
            .map(|p| bytes::Bytes::from(p.into()))
            .collect();
        self.inner.set_observing(Some(patterns)).await;
    }

    /// Stops observing locks (`LOCKSMITH.OBSERVE OFF`): the nodes no longer report their
    /// writes; what was observed stays.
    pub async fn stop_observing(&self) {
        self.inner.set_observing(None).await;
    }

    /// The locks each running node holds now, as observed (`LOCKSMITH.LOCKS`).
    pub fn observed_locks(&self) -> Vec<HeldLock> {
        self.inner.observed_locks()
    }

    /// Every observed lock event so far, in order.
    pub fn observed_events(&self) -> Vec<LockEvent> {
        self.inner.observer.events()
    }

    /// The violations in what was observed so far (`LOCKSMITH.CHECK`): empty when the
    /// locks kept their promise.
    pub fn check(&self) -> Vec<LockViolation> {
        self.inner.check_observed()
    }

    /// The faults, marks, observed events and violations as JSON (`LOCKSMITH.HISTORY`).
    pub fn history_json(&self) -> String {
        self.inner.observed_json()
    }

    /// The timeline of the observed grants, one row per owner (`LOCKSMITH.TIMELINE`).
    pub fn observed_timeline(&self, title: &str) -> Timeline {
        self.inner.observed_timeline(title)
    }

    /// Runs `schedule` (the explorer's fault schedules, see [`schedule`]) against this
    /// topology from now on: each fault at its time after now, each recorded in the history
    /// as it is applied, the schedule itself as a mark. Returns once it is started; the task
    /// ends with its last fault (or at [`Topology::shutdown`]).
    pub fn run_schedule(&self, schedule: schedule::Schedule) {
        self.inner.observer.mark(format!("schedule {schedule}"));
        let task = tokio::spawn(schedule::apply(
            self.clone(),
            schedule,
            tokio::time::Instant::now(),
        ));
        if let Ok(mut tasks) = self.inner.schedules.lock() {
            tasks.retain(|t| !t.is_finished());
            tasks.push(task);
        }
    }

    /// The marks added so far (`LOCKSMITH.MARK`, and each schedule run).
    pub fn observed_marks(&self) -> Vec<Mark> {
        self.inner.observer.marks()
    }

    /// Adds `text` to the history at the current time (`LOCKSMITH.MARK`).
    pub fn mark(&self, text: impl Into<String>) {
        self.inner.observer.mark(text.into());
    }

    /// Waits (bounded by `timeout`) until every live replica acknowledged its master's current
    /// offset; returns whether they did.
    pub async fn sync_replicas(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let done = (0..self.inner.slots.len()).all(|i| match self.inner.replica_of(i) {
                Some(m) => self.inner.offset_of(i) >= self.inner.offset_of(m),
                None => true,
            });
            if done {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Kills the master and promotes the most up-to-date live replica (ties: lowest id); what
    /// it had not received is lost. The other replicas resync from it, the front address
    /// routes to it (its open connections are reset) and Sentinel publishes `+switch-master`.
    ///
    /// # Errors
    ///
    /// No live replica, or independent masters.
    pub async fn fail_master(&self) -> Result<NodeId, HarnessError> {
        let _ops = self.inner.ops.lock().await;
        self.inner.failover(None, true).await
    }

    /// [`Topology::fail_master`] promoting `node`. In a cluster topology, fails over the shard
    /// of replica `node`: its master is killed and `node` serves the shard's slots (every
    /// node's `CLUSTER SLOTS` and `MOVED` say so at once), as Redis Cluster's failover.
    ///
    /// # Errors
    ///
    /// `node` down, unknown or already the master (in a cluster: not a replica).
    pub async fn fail_master_to(&self, node: NodeId) -> Result<NodeId, HarnessError> {
        let _ops = self.inner.ops.lock().await;
        self.inner.failover(Some(node.0), true).await
    }

    /// A graceful failover (Sentinel's `FAILOVER`): promotes `node` or the best replica; the
    /// old master stays up and resyncs from it as a replica, losing what the new master had
    /// not received.
    ///
    /// # Errors
    ///
    /// As [`Topology::fail_master_to`].
    pub async fn switch_master(&self, node: Option<NodeId>) -> Result<NodeId, HarnessError> {
        let _ops = self.inner.ops.lock().await;
        self.inner.failover(node.map(|n| n.0), false).await
    }

    /// Kills `node`: its connections are reset, new ones refused, its replication links cut.
    ///
    /// # Errors
    ///
    /// Unknown node.
    pub async fn kill(&self, node: NodeId) -> Result<(), HarnessError> {
        let _ops = self.inner.ops.lock().await;
        self.inner.kill(node.0).await
    }

    /// Restarts `node` empty (no persistence) on the same address: a replica resyncs from the
    /// master; a restarted master stays master and its replicas resync to its empty dataset.
    /// [`Topology::restart_with`] with [`Restart::Empty`].
    ///
    /// # Errors
    ///
    /// Unknown node, or its server failing to start.
    pub async fn restart(&self, node: NodeId) -> Result<(), HarnessError> {
        self.restart_with(node, Restart::Empty).await
    }

    /// Restarts `node` (killing it first if it is up) on the same address, empty or with the
    /// data its disk held (see [`Restart`]). A replica then resyncs from the master (replacing
    /// what it kept); a restarted master stays master and its replicas resync to what it came
    /// back with. The fault is recorded as `restart n1 (empty)` or `restart n1 (kept data,
    /// lost last 1000 ms)`.
    ///
    /// ```
    /// use locksmith_harness::{Restart, Topology};
    /// use std::time::Duration;
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let topology = Topology::builder().masters(3).seed(1).build().await?;
    /// let n1 = topology.nodes()[1];
    /// let mut con = redis::Client::open(topology.url(n1))?
    ///     .get_multiplexed_async_connection()
    ///     .await?;
    /// let _: () = redis::cmd("SET").arg("old").arg("1").query_async(&mut con).await?;
    /// tokio::time::sleep(Duration::from_secs(2)).await;
    /// let _: () = redis::cmd("SET").arg("new").arg("1").query_async(&mut con).await?;
    /// // The last second of writes had not reached the disk.
    /// topology
    ///     .restart_with(n1, Restart::keep_data(Duration::from_secs(1)))
    ///     .await?;
    /// let mut con = redis::Client::open(topology.url(n1))?
    ///     .get_multiplexed_async_connection()
    ///     .await?;
    /// let kept: Vec<Option<String>> = redis::cmd("MGET")
    ///     .arg("old")
    ///     .arg("new")
    ///     .query_async(&mut con)
    ///     .await?;
    /// assert_eq!(kept, [Some("1".to_string()), None]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// Unknown node, or its server failing to start. For [`Restart::KeepData`]: a topology
    /// built without a keep-data window, or `lose_last` beyond it (the node is left as it
    /// was); a journal that no longer reaches that far back because the node was written to
    /// faster than its checkpoints allow (the node is left down).
    pub async fn restart_with(&self, node: NodeId, how: Restart) -> Result<(), HarnessError> {
        let _ops = self.inner.ops.lock().await;
        self.inner.restart(node.0, how).await
    }

    /// `REPLICAOF`: makes `replica` replicate from `master` (full resync).
    ///
    /// # Errors
    ///
    /// Either node down or unknown, or the same node.
    pub async fn replicate(&self, replica: NodeId, master: NodeId) -> Result<(), HarnessError> {
        let _ops = self.inner.ops.lock().await;
        self.inner.attach(master.0, replica.0).await
    }

    /// Cuts replication between `a` and `b` until the guard is dropped (or [`Topology::heal`]).
    pub fn partition(&self, a: NodeId, b: NodeId) -> FaultGuard {
        self.inner
            .partition(a.0, b.0, Some(format!("partition n{} | n{}", a.0, b.0)))
    }

    /// Cuts `node` from every other node and black-holes its client traffic.
    ///
    /// # Errors
    ///
    /// Unknown node.
    pub fn isolate(&self, node: NodeId) -> Result<FaultGuard, HarnessError> {
        let i = node.0;
        let mut guards = Vec::new();
        for other in 0..self.inner.slots.len() {
            if other != i {
                guards.push(self.inner.partition(i, other, None));
            }
        }
        let rule = self.inner.link_rule(
            i,
            Arc::new(|_: &Chunk| Verdict::Drop),
            format!("isolate n{i}"),
        )?;
        guards.push(rule);
        Ok(FaultGuard::new(format!("isolate n{i}"), move || {
            drop(guards)
        }))
    }

    /// Ends every partition, isolation and client-link rule.
    pub fn heal(&self) {
        self.inner.heal();
    }

    /// Moves `node`'s clock by `delta_ms` (negative = back); its keys' TTLs move with it.
    ///
    /// # Errors
    ///
    /// Unknown node.
    pub fn clock_jump(&self, node: NodeId, delta_ms: i64) -> Result<(), HarnessError> {
        self.inner.slot(node.0)?.clock.shift(delta_ms);
        self.inner
            .fault(format!("clock n{} {delta_ms:+} ms", node.0));
        Ok(())
    }

    /// Stops `node` for `d` like SIGSTOP: it accepts and buffers requests but executes
    /// nothing (no replies, expiry or replication) until `d` passes or the guard is dropped.
    ///
    /// # Errors
    ///
    /// Unknown or dead node.
    pub async fn pause(&self, node: NodeId, d: Duration) -> Result<FaultGuard, HarnessError> {
        self.inner.pause(node.0, d).await
    }

    /// Sets the delay of every replication link (batches not yet delivered included).
    pub fn replication_delay(&self, d: Duration) {
        let jitter = self.inner.net.lock().map(|n| n.jitter).unwrap_or_default();
        self.inner.replication_delay(d, jitter);
    }

    /// Sets the jitter of every replication link.
    pub fn replication_jitter(&self, d: Duration) {
        let delay = self.inner.net.lock().map(|n| n.delay).unwrap_or_default();
        self.inner.set_delay(delay, d);
    }

    /// Stops replication (writes queue) until the guard is dropped.
    pub fn stall_replication(&self) -> FaultGuard {
        self.inner.stall()
    }

    /// Adds a client-link rule on `node`'s address (first non-pass verdict wins).
    ///
    /// # Errors
    ///
    /// Unknown node.
    pub fn link_rule(
        &self,
        node: NodeId,
        rule: impl LinkRule,
        label: impl Into<String>,
    ) -> Result<FaultGuard, HarnessError> {
        self.inner.link_rule(node.0, Arc::new(rule), label.into())
    }

    /// Adds `d` of latency to every chunk on `node`'s client links.
    ///
    /// # Errors
    ///
    /// Unknown node.
    pub fn latency(&self, node: NodeId, d: Duration) -> Result<FaultGuard, HarnessError> {
        self.inner.link_rule(
            node.0,
            Arc::new(move |_: &Chunk| Verdict::Delay(d)),
            format!("latency n{} {} ms", node.0, d.as_millis()),
        )
    }

    /// Silently drops everything on `node`'s client links (connections hang).
    ///
    /// # Errors
    ///
    /// Unknown node.
    pub fn drop_traffic(&self, node: NodeId) -> Result<FaultGuard, HarnessError> {
        self.inner.link_rule(
            node.0,
            Arc::new(|_: &Chunk| Verdict::Drop),
            format!("drop traffic n{}", node.0),
        )
    }

    /// Resets every open client connection of `node`; returns how many.
    ///
    /// # Errors
    ///
    /// Unknown node.
    pub fn reset_connections(&self, node: NodeId) -> Result<usize, HarnessError> {
        let n = self.inner.slot(node.0)?.proxy.reset_all();
        self.inner
            .fault(format!("reset {n} connection(s) of n{}", node.0));
        Ok(n)
    }

    /// Stops every node and listener.
    pub async fn shutdown(self) {
        let schedules = self
            .inner
            .schedules
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for task in schedules {
            task.abort();
        }
        let _ops = self.inner.ops.lock().await;
        for i in 0..self.inner.slots.len() {
            let _ = self.inner.stop_node(i).await;
        }
        self.inner.front.reset_all();
    }
}

impl TopologyBuilder {
    /// Builds the topology on a runtime of its own (one worker thread) and returns at once with
    /// it serving: for synchronous code, such as a plain `#[test]` without tokio. Faults that
    /// wait run through [`BlockingTopology::block_on`]; the rest of [`Topology`] is reached
    /// through `Deref`. Dropping it stops every node.
    ///
    /// ```
    /// use locksmith_harness::Topology;
    /// let topology = Topology::builder().replicas(1).seed(3).build_blocking()?;
    /// let mut con = redis::Client::open(topology.front_url())?.get_connection()?;
    /// let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con)?;
    /// let promoted = topology.block_on(topology.fail_master())?;
    /// assert_eq!(topology.master(), promoted);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`TopologyBuilder::build`], and when the runtime cannot be built.
    pub fn build_blocking(&self) -> Result<BlockingTopology, HarnessError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("locksmith-harness")
            .enable_all()
            .build()?;
        let topology = runtime.block_on(self.build())?;
        Ok(BlockingTopology {
            topology,
            runtime: Some(runtime),
        })
    }
}

/// A [`Topology`] running on a runtime of its own, for synchronous code (see
/// [`TopologyBuilder::build_blocking`]). Dropping it stops every node (bounded, 5 s) and the
/// runtime.
#[derive(Debug)]
pub struct BlockingTopology {
    topology: Topology,
    runtime: Option<tokio::runtime::Runtime>,
}

impl BlockingTopology {
    /// Runs `future` (a fault such as [`Topology::fail_master`]) to completion on the
    /// topology's runtime, blocking the calling thread; not for use inside an async context.
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        match &self.runtime {
            Some(runtime) => runtime.block_on(future),
            None => unreachable!("the runtime is taken only when the topology is dropped"),
        }
    }
}

impl std::ops::Deref for BlockingTopology {
    type Target = Topology;

    fn deref(&self) -> &Topology {
        &self.topology
    }
}

impl Drop for BlockingTopology {
    fn drop(&mut self) {
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_err() {
            let topology = self.topology.clone();
            runtime.block_on(async {
                let _ = tokio::time::timeout(Duration::from_secs(5), topology.shutdown()).await;
            });
        }
        runtime.shutdown_background();
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
