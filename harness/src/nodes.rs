//! A topology's nodes: looking them up, their roles, starting and stopping their servers, and
//! the lock observation on each.

use crate::observe;
use crate::{
    admin, link, HarnessError, HeldLock, Inner, LockViolation, NodeId, NodeInfo, NodeRole, Slot,
    Timeline,
};
use locksmith_server::control::{NodeControl, Recovery};
use locksmith_server::Server;
use rand::Rng;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Inner {
    pub(crate) fn slot(&self, i: usize) -> Result<&Slot, HarnessError> {
        self.slots
            .get(i)
            .ok_or_else(|| HarnessError::UnknownNode(format!("n{i}")))
    }

    pub(crate) fn live_node(&self, i: usize) -> Result<NodeControl, HarnessError> {
        let slot = self.slot(i)?;
        slot.live
            .lock()
            .ok()
            .and_then(|l| l.node.clone())
            .ok_or(HarnessError::NodeDown(NodeId(i)))
    }

    pub(crate) fn is_up(&self, i: usize) -> bool {
        self.live_node(i).is_ok()
    }

    pub(crate) fn next_seed(&self) -> u64 {
        self.rng.lock().map(|mut r| r.random()).unwrap_or(self.seed)
    }

    pub(crate) fn master_index(&self) -> usize {
        self.master.load(Ordering::Acquire)
    }

    pub(crate) fn offset_of(&self, i: usize) -> u64 {
        self.slots
            .get(i)
            .and_then(|s| s.live.lock().ok()?.offset.clone())
            .map_or(0, |o| o.load(Ordering::Acquire))
    }

    pub(crate) fn replica_of(&self, i: usize) -> Option<usize> {
        self.slots.get(i)?.live.lock().ok()?.replica_of
    }

    pub(crate) fn role(&self, i: usize) -> NodeRole {
        if !self.is_up(i) {
            return NodeRole::Down;
        }
        match self.replica_of(i) {
            Some(m) => NodeRole::Replica(NodeId(m)),
            None => NodeRole::Master,
        }
    }

    /// Whether clients write to node `i`: the replicated topology's master, any of
    /// independent masters, a cluster shard's master.
    pub(crate) fn serves_clients(&self, i: usize) -> bool {
        match &self.cluster {
            Some(view) => view.replica_of(i).is_none(),
            None if self.replicated => i == self.master_index(),
            None => true,
        }
    }

    /// Turns lock observation on for keys matching `patterns` (empty: every key), or off
    /// with `None`, on every running node (a node started later follows).
    pub(crate) async fn set_observing(&self, patterns: Option<Vec<bytes::Bytes>>) {
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
    pub(crate) fn observed_locks(&self) -> Vec<HeldLock> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(i, _)| self.is_up(*i))
            .flat_map(|(i, slot)| self.observer.held(i, &slot.clock))
            .collect()
    }

    /// The checker's violations over what was observed so far.
    pub(crate) fn check_observed(&self) -> Vec<LockViolation> {
        observe::check_quorum(
            &self.observer.events(),
            &self.history.faults(),
            self.history.now_us(),
            self.observer.quorum(),
        )
    }

    /// The observed history as JSON (`LOCKSMITH.HISTORY`).
    pub(crate) fn observed_json(&self) -> String {
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
    pub(crate) fn observed_timeline(&self, title: &str) -> Timeline {
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

    /// Starts a fresh server for slot `i` behind its proxy, empty or loading `recovery`, with
    /// a journal when the topology keeps data. Caller holds `ops`.
    pub(crate) async fn start_node(
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
    pub(crate) async fn stop_node(&self, i: usize) -> Result<(), HarnessError> {
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

    pub(crate) fn node_by_name(&self, name: &str) -> Result<usize, HarnessError> {
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

    pub(crate) fn info(&self) -> Vec<NodeInfo> {
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
}
