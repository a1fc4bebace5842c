//! How each fault is applied to a topology's nodes and links and recorded in its history (the
//! operations behind [`Topology`](crate::Topology)'s verbs and `LOCKSMITH.*`).

use crate::{
    Applied, Chunk, Fault, FaultGuard, HarnessError, Inner, LinkRule, NodeId, Restart, Verdict,
};
use locksmith_server::control::{ClusterView, Recovery};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

impl Inner {
    /// Applies `fault` (the one function `LOCKSMITH.*`, the schedules and
    /// [`Topology::apply`](crate::Topology::apply) come through; the caller holds `ops` for a
    /// failover, kill or restart). Returns it as recorded, with the guard of a fault that lasts.
    pub(crate) async fn apply(self: &Arc<Self>, fault: Fault) -> Result<Applied, HarnessError> {
        let recorded = |fault: Fault| Applied { fault, guard: None };
        let lasting = |fault: Fault, guard: FaultGuard| Applied {
            fault,
            guard: Some(guard),
        };
        Ok(match fault {
            Fault::FailMaster { new, .. } => {
                recorded(self.failover(Some(new.index()), true).await?)
            }
            Fault::SwitchMaster { new, .. } => {
                recorded(self.failover(Some(new.index()), false).await?)
            }
            Fault::Kill(node) => {
                self.kill(node.index()).await?;
                recorded(fault)
            }
            Fault::Restart(node, how) => {
                self.restart(node.index(), how).await?;
                recorded(fault)
            }
            Fault::Partition(a, b) => {
                self.slot(a.index())?;
                self.slot(b.index())?;
                let guard = self.partition(a.index(), b.index(), true);
                lasting(fault, guard)
            }
            Fault::Isolate(node) => {
                let guard = self.isolate(node.index())?;
                lasting(fault, guard)
            }
            Fault::Heal => {
                self.heal();
                recorded(fault)
            }
            Fault::ClockJump(node, delta_ms) => {
                self.clock_jump(node.index(), delta_ms)?;
                recorded(fault)
            }
            Fault::Pause(node, d) => {
                let guard = self.pause(node.index(), d).await?;
                lasting(fault, guard)
            }
            Fault::ReplicationDelay { delay, jitter } => {
                self.replication_delay(delay, jitter);
                recorded(fault)
            }
            Fault::ReplicationStall => {
                let guard = self.stall();
                lasting(fault, guard)
            }
            Fault::Latency(node, d) => {
                let rule: Arc<dyn LinkRule> = Arc::new(move |_: &Chunk| Verdict::Delay(d));
                let guard = self.link_rule(node.index(), rule, fault.clone())?;
                lasting(fault, guard)
            }
            Fault::DropTraffic(node) => {
                let rule: Arc<dyn LinkRule> = Arc::new(|_: &Chunk| Verdict::Drop);
                let guard = self.link_rule(node.index(), rule, fault.clone())?;
                lasting(fault, guard)
            }
            Fault::ResetConnections { node, .. } => {
                let count = self.reset_connections(node.index())?;
                recorded(Fault::ResetConnections { node, count })
            }
            Fault::LinkRule { .. } => {
                return Err(HarnessError::Invalid(
                    "a link rule of one's own is applied with its rule (Topology::link_rule)"
                        .into(),
                ))
            }
            // A client's pause and a note change nothing in the topology: they are recorded.
            Fault::ClientPause { .. } | Fault::Note(_) => {
                self.fault(fault.clone());
                recorded(fault)
            }
        })
    }

    /// Records `fault` in the history (and the log); returns its index there.
    pub(crate) fn fault(&self, fault: Fault) -> usize {
        tracing::info!(%fault, "fault");
        self.history.fault(fault)
    }

    /// The replica a failover that names none promotes: the most up-to-date replica of the
    /// replicated topology's master (a cluster's failover must name one).
    pub(crate) fn failover_target(&self) -> Result<usize, HarnessError> {
        if self.cluster.is_some() {
            return Err(HarnessError::Invalid(
                "a cluster has a master per shard: name the replica to promote".into(),
            ));
        }
        if !self.replicated {
            return Err(HarnessError::Invalid(
                "independent masters have no replicas to fail over to".into(),
            ));
        }
        self.best_replica().ok_or(HarnessError::NoReplica)
    }

    /// The most up-to-date live replica of the current master (ties: lowest id).
    pub(crate) fn best_replica(&self) -> Option<usize> {
        let m = self.master_index();
        (0..self.slots.len())
            .filter(|&i| i != m && self.is_up(i) && self.replica_of(i).is_some())
            .max_by_key(|&i| (self.offset_of(i), std::cmp::Reverse(i)))
    }

    /// Promotes `new` (or [`Inner::failover_target`]); kills the old master first when
    /// `crash`. Returns the fault as recorded ([`Fault::FailMaster`] or
    /// [`Fault::SwitchMaster`]).
    pub(crate) async fn failover(
        &self,
        new: Option<usize>,
        crash: bool,
    ) -> Result<Fault, HarnessError> {
        let n = match new {
            Some(n) => n,
            None => self.failover_target()?,
        };
        if let Some(view) = &self.cluster {
            return self.shard_failover(view, n, crash).await;
        }
        if !self.replicated {
            return Err(HarnessError::Invalid(
                "independent masters have no replicas to fail over to".into(),
            ));
        }
        let old = self.master_index();
        self.slot(n)?;
        if n == old {
            return Err(HarnessError::Invalid(format!("n{n} is already the master")));
        }
        if !self.is_up(n) {
            return Err(HarnessError::NodeDown(NodeId(n)));
        }
        let new = n;
        let fault = failover_fault(old, new, crash);
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
        self.fault(fault.clone());
        Ok(fault)
    }

    /// A cluster shard's failover to its replica `new` (Redis Cluster's, decided here rather
    /// than by the nodes' gossip): the old master is killed first when `crash`; `new` takes the
    /// shard's slots with a new config epoch (every node's `CLUSTER SLOTS` and `MOVED` follow at
    /// once), and the shard's other replicas (and the old master, if it runs) replicate from it.
    pub(crate) async fn shard_failover(
        &self,
        view: &ClusterView,
        new: usize,
        crash: bool,
    ) -> Result<Fault, HarnessError> {
        self.slot(new)?;
        let Some(old) = view.replica_of(new) else {
            return Err(HarnessError::Invalid(format!("n{new} is not a replica")));
        };
        if !self.is_up(new) {
            return Err(HarnessError::NodeDown(NodeId(new)));
        }
        let fault = failover_fault(old, new, crash);
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
        self.fault(fault.clone());
        Ok(fault)
    }

    pub(crate) async fn kill(&self, i: usize) -> Result<(), HarnessError> {
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
        self.fault(Fault::Kill(NodeId(i)));
        Ok(())
    }

    /// Checks that a `KeepData { lose_last }` restart is possible at all, before anything
    /// is stopped.
    pub(crate) fn check_keep_data(
        &self,
        i: usize,
        lose_last: Duration,
    ) -> Result<(), HarnessError> {
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
    pub(crate) fn recovery(&self, i: usize, lose_last: Duration) -> Result<Recovery, HarnessError> {
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

    pub(crate) async fn restart(
        self: &Arc<Self>,
        i: usize,
        how: Restart,
    ) -> Result<(), HarnessError> {
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
        self.fault(Fault::Restart(NodeId(i), how));
        Ok(())
    }

    /// Cuts replication between `a` and `b`; recorded as a fault when `record` (not as a part
    /// of an isolation).
    pub(crate) fn partition(self: &Arc<Self>, a: usize, b: usize, record: bool) -> FaultGuard {
        let key = (a.min(b), a.max(b));
        if let Ok(mut net) = self.net.lock() {
            *net.partitions.entry(key).or_insert(0) += 1;
            net.apply();
        }
        let recorded = record.then_some(Fault::Partition(NodeId(a), NodeId(b)));
        let fault = recorded.clone().map(|f| self.fault(f));
        let inner = Arc::downgrade(self);
        FaultGuard::new(recorded, move || {
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

    pub(crate) fn link_rule(
        self: &Arc<Self>,
        i: usize,
        rule: Arc<dyn LinkRule>,
        fault: Fault,
    ) -> Result<FaultGuard, HarnessError> {
        let slot = self.slot(i)?;
        let id = slot.proxy.add_rule(rule);
        let remove = slot.proxy.rule_remover(id);
        let index = self.fault(fault.clone());
        let history = self.history.clone();
        Ok(FaultGuard::new(Some(fault), move || {
            remove();
            history.fault_ended(index);
        }))
    }

    /// Cuts node `i` from every other node and black-holes its client traffic: one fault,
    /// [`Fault::Isolate`].
    pub(crate) fn isolate(self: &Arc<Self>, i: usize) -> Result<FaultGuard, HarnessError> {
        let mut guards = Vec::new();
        for other in 0..self.slots.len() {
            if other != i {
                guards.push(self.partition(i, other, false));
            }
        }
        let rule = self.link_rule(
            i,
            Arc::new(|_: &Chunk| Verdict::Drop),
            Fault::Isolate(NodeId(i)),
        )?;
        guards.push(rule);
        Ok(FaultGuard::new(
            Some(Fault::Isolate(NodeId(i))),
            move || drop(guards),
        ))
    }

    /// Moves node `i`'s clock by `delta_ms`; returns its total shift.
    pub(crate) fn clock_jump(&self, i: usize, delta_ms: i64) -> Result<i64, HarnessError> {
        let slot = self.slot(i)?;
        slot.clock.shift(delta_ms);
        self.fault(Fault::ClockJump(NodeId(i), delta_ms));
        Ok(slot.clock.shift_ms())
    }

    /// Resets every open client connection of node `i`; returns how many.
    pub(crate) fn reset_connections(&self, i: usize) -> Result<usize, HarnessError> {
        let count = self.slot(i)?.proxy.reset_all();
        self.fault(Fault::ResetConnections {
            node: NodeId(i),
            count,
        });
        Ok(count)
    }

    /// Sets the replication delay and jitter and records it: a delay lasts until the next
    /// one replaces it, whose record ends it then (`Topology::replication_delay`,
    /// `LOCKSMITH.REPLDELAY` and the schedules all come here).
    pub(crate) fn replication_delay(&self, delay: Duration, jitter: Duration) {
        self.set_delay(delay, jitter);
        let fault = self.fault(Fault::ReplicationDelay { delay, jitter });
        let previous = self.delay_fault.lock().ok().and_then(|mut open| {
            std::mem::replace(&mut *open, (!delay.is_zero()).then_some(fault))
        });
        if let Some(previous) = previous {
            self.history.fault_ended(previous);
        }
    }

    pub(crate) fn set_delay(&self, delay: Duration, jitter: Duration) {
        if let Ok(mut net) = self.net.lock() {
            net.delay = delay;
            net.jitter = jitter;
            for entry in net.links.values() {
                entry.ctl.set_delay(delay, jitter);
            }
        }
    }

    pub(crate) fn stall(self: &Arc<Self>) -> FaultGuard {
        if let Ok(mut net) = self.net.lock() {
            net.stalled += 1;
            net.apply();
        }
        let fault = self.fault(Fault::ReplicationStall);
        let inner = Arc::downgrade(self);
        FaultGuard::new(Some(Fault::ReplicationStall), move || {
            if let Some(inner) = inner.upgrade() {
                if let Ok(mut net) = inner.net.lock() {
                    net.stalled = net.stalled.saturating_sub(1);
                    net.apply();
                }
                inner.history.fault_ended(fault);
            }
        })
    }

    pub(crate) fn heal(&self) {
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
        self.fault(Fault::Heal);
    }

    pub(crate) async fn pause(
        self: &Arc<Self>,
        i: usize,
        d: Duration,
    ) -> Result<FaultGuard, HarnessError> {
        let node = self.live_node(i)?;
        let cancel = CancellationToken::new();
        let token = Arc::new(());
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let recorded = Fault::Pause(NodeId(i), d);
        let fault = self.fault(recorded.clone());
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
        Ok(FaultGuard::new(Some(recorded), move || cancel.cancel()))
    }
}

/// The record of a failover from `old` to `new`: a crash of `old`, or a graceful switch.
fn failover_fault(old: usize, new: usize, crash: bool) -> Fault {
    let (old, new) = (NodeId(old), NodeId(new));
    if crash {
        Fault::FailMaster { old, new }
    } else {
        Fault::SwitchMaster { old, new }
    }
}
