//! How each fault is applied to a topology's nodes and links and recorded in its history (the
//! operations behind [`Topology`](crate::Topology)'s verbs and `LOCKSMITH.*`).

use crate::{FaultGuard, HarnessError, Inner, LinkRule, NodeId, Restart};
use locksmith_server::control::{ClusterView, Recovery};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

impl Inner {
    pub(crate) fn fault(&self, label: String) -> usize {
        tracing::info!(fault = %label, "fault");
        self.history.fault(label)
    }

    /// The most up-to-date live replica of the current master (ties: lowest id).
    pub(crate) fn best_replica(&self) -> Option<usize> {
        let m = self.master_index();
        (0..self.slots.len())
            .filter(|&i| i != m && self.is_up(i) && self.replica_of(i).is_some())
            .max_by_key(|&i| (self.offset_of(i), std::cmp::Reverse(i)))
    }

    /// Promotes `new` (or the best replica); kills the old master first when `crash`.
    pub(crate) async fn failover(
        &self,
        new: Option<usize>,
        crash: bool,
    ) -> Result<NodeId, HarnessError> {
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
    pub(crate) async fn shard_failover(
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
        self.fault(format!("kill n{i}"));
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
        self.fault(format!("restart n{i} ({how})"));
        Ok(())
    }

    /// Cuts replication between `a` and `b`; recorded as a fault when `label` is given.
    pub(crate) fn partition(
        self: &Arc<Self>,
        a: usize,
        b: usize,
        label: Option<String>,
    ) -> FaultGuard {
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

    pub(crate) fn link_rule(
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
    pub(crate) fn replication_delay(&self, delay: Duration, jitter: Duration) {
        self.set_delay(delay, jitter);
        let fault = self.fault(format!("replication delay {} ms", delay.as_millis()));
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
        self.fault("heal".into());
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
}
