//! [`Topology`]'s public API: addresses and connections, roles, observation, and every
//! fault as a verb.

use crate::{
    schedule, Applied, Chunk, Fault, FaultGuard, HarnessError, HeldLock, History, LinkRule,
    LockEvent, LockViolation, Mark, NodeId, NodeInfo, NodeRole, Restart, Timeline, Topology,
    TopologyBuilder, Verdict,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

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
        self.inner.failover(None, true).await.map(promoted)
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
        self.inner.failover(Some(node.0), true).await.map(promoted)
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
        self.inner
            .failover(node.map(|n| n.0), false)
            .await
            .map(promoted)
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
        self.inner.partition(a.0, b.0, true)
    }

    /// Cuts `node` from every other node and black-holes its client traffic.
    ///
    /// # Errors
    ///
    /// Unknown node.
    pub fn isolate(&self, node: NodeId) -> Result<FaultGuard, HarnessError> {
        self.inner.isolate(node.0)
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
        self.inner.clock_jump(node.0, delta_ms).map(|_| ())
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

    /// Adds a client-link rule on `node`'s address (first non-pass verdict wins), recorded
    /// as [`Fault::LinkRule`] with `label`.
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
        let fault = Fault::LinkRule {
            node,
            label: label.into(),
        };
        self.inner.link_rule(node.0, Arc::new(rule), fault)
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
            Fault::Latency(node, d),
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
            Fault::DropTraffic(node),
        )
    }

    /// Resets every open client connection of `node`; returns how many.
    ///
    /// # Errors
    ///
    /// Unknown node.
    pub fn reset_connections(&self, node: NodeId) -> Result<usize, HarnessError> {
        self.inner.reset_connections(node.0)
    }

    /// Applies `fault` as `LOCKSMITH.*` and the schedules do (each variant's verb above; a
    /// failover promotes the [`Fault::FailMaster`]'s `new`, whichever master it replicates
    /// from; a reset resets whatever is open), recording it in the history. Returns it as
    /// recorded, with the guard of a fault that lasts.
    ///
    /// ```
    /// use locksmith_harness::{Fault, Topology};
    /// use std::time::Duration;
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let topology = Topology::builder().replicas(1).seed(5).build().await?;
    /// let n1 = topology.nodes()[1];
    /// let applied = topology.apply(Fault::Pause(n1, Duration::from_millis(200))).await?;
    /// assert_eq!(applied.fault.to_string(), "pause n1 200 ms");
    /// drop(applied.guard); // resumes n1 now
    /// assert_eq!(topology.history().faults()[0].fault, Fault::Pause(n1, Duration::from_millis(200)));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As the variant's verb; a [`Fault::LinkRule`] (it needs its rule: [`Topology::link_rule`]).
    pub async fn apply(&self, fault: Fault) -> Result<Applied, HarnessError> {
        // Failovers, kills and restarts are serialised as their verbs are.
        let _ops = match fault {
            Fault::FailMaster { .. }
            | Fault::SwitchMaster { .. }
            | Fault::Kill(_)
            | Fault::Restart(..) => Some(self.inner.ops.lock().await),
            _ => None,
        };
        self.inner.apply(fault).await
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

/// The node a failover promoted.
fn promoted(fault: Fault) -> NodeId {
    match fault {
        Fault::FailMaster { new, .. } | Fault::SwitchMaster { new, .. } => new,
        _ => unreachable!("a failover records a failover"),
    }
}
