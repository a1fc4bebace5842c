//! [`TopologyBuilder`]: the shape of a topology, and starting it (on the caller's runtime or
//! on one of its own, [`BlockingTopology`]).

use crate::link::{self, Proxy};
use crate::{
    observe, sentinel, HarnessError, History, Inner, Live, Net, NodeId, Slot, Topology,
    MEMORY_NODE_PORT,
};
use locksmith_server::control::ClusterView;
use locksmith_server::Clock;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The default of [`TopologyBuilder::keep_data_window`].
pub const DEFAULT_KEEP_DATA_WINDOW: Duration = Duration::from_secs(10);

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

    /// How far back a [`Restart::KeepData`](crate::Restart::KeepData) restart may reach (default
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
