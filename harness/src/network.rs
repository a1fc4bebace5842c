//! The links between a topology's nodes: replication links and the partitions and stalls
//! that block them, the front address's route, resets of client connections, and the
//! Sentinel endpoint's announcements of what changed.

use crate::link::Proxy;
use crate::{HarnessError, Inner};
use locksmith_server::control::{ClusterView, LinkControl, ReplicaLink};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// One replication link the topology made, and its control (delay, blocking).
#[derive(Debug)]
pub(crate) struct LinkEntry {
    pub(crate) ctl: Arc<LinkControl>,
    pub(crate) link: ReplicaLink,
}

/// The replication links and what blocks or delays them.
#[derive(Debug, Default)]
pub(crate) struct Net {
    /// (master, replica) -> link.
    pub(crate) links: BTreeMap<(usize, usize), LinkEntry>,
    /// Cut node pairs, (low, high).
    pub(crate) partitions: BTreeMap<(usize, usize), usize>,
    pub(crate) stalled: usize,
    pub(crate) delay: Duration,
    pub(crate) jitter: Duration,
}

impl Net {
    pub(crate) fn blocked(&self, a: usize, b: usize) -> bool {
        self.stalled > 0 || self.partitions.contains_key(&(a.min(b), a.max(b)))
    }

    pub(crate) fn apply(&self) {
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

impl Inner {
    /// Resets the open client connections of `proxy`, sparing the admin command's own.
    pub(crate) fn reset_proxy(&self, proxy: &Proxy) -> usize {
        let spare = self.spare.lock().map(|s| s.clone()).unwrap_or_default();
        let (reset, kept) = proxy.reset_except(&spare);
        if let Ok(mut s) = self.spare.lock() {
            s.extend(kept);
        }
        reset
    }

    pub(crate) fn publish(&self, channel: &str, message: String) {
        if let Some(s) = self.sentinel.get() {
            s.publish(channel, &message);
        }
    }

    /// Removes link (m, r): aborts its task and forgets it on the master.
    pub(crate) async fn detach_link(&self, m: usize, r: usize) {
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
    pub(crate) async fn attach(&self, m: usize, r: usize) -> Result<(), HarnessError> {
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
    pub(crate) async fn make_master(&self, i: usize) -> Result<(), HarnessError> {
        if let Some(old) = self.replica_of(i) {
            self.detach_link(old, i).await;
        }
        self.live_node(i)?.become_master().await;
        Ok(())
    }

    pub(crate) fn route_front(&self) {
        let m = self.master_index();
        let up = self.is_up(m);
        self.front.set_upstream(
            up.then(|| self.slots.get(m).map(|s| s.proxy.as_upstream()))
                .flatten(),
        );
    }

    pub(crate) fn publish_sdown(&self, i: usize, down: bool) {
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

    /// The (master, replica) pairs of the cluster's shards.
    pub(crate) fn cluster_links(&self) -> Vec<(usize, usize)> {
        self.cluster
            .as_ref()
            .map_or_else(Vec::new, ClusterView::links)
    }

    pub(crate) fn links_up(&self, m: usize, r: usize) -> bool {
        self.net
            .lock()
            .map(|n| n.links.get(&(m, r)).is_some_and(|e| !e.ctl.is_blocked()))
            .unwrap_or(false)
    }
}
