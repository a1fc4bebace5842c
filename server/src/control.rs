//! A running node's control surface, beyond its commands: what a fault harness (the
//! `locksmith-harness` crate) or any program embedding nodes needs to drive them — replica
//! links it attaches and cuts, the replication offset, a pause that stops the node as `SIGSTOP`
//! would, a shared cluster view, and a hook for commands the embedder serves itself (`LOCKSMITH.*`
//! admin commands, `REPLICAOF` on a node whose replication the embedder manages).
//!
//! It also keeps, on request, a journal of a node's writes ([`NodeControl::start_journal`]),
//! from which a node started later can recover the dataset as it was at an earlier instant
//! ([`NodeControl::recover`]): a restart that kept what had reached the disk.
//!
//! The server knows nothing of who drives it: it calls the [`AdminHook`] it was given and
//! exposes these operations on [`NodeControl`] (from [`crate::ServerHandle::control`]).

use crate::clock::Clock;
use crate::journal::Snapshot;
use crate::node::{Effects, Node, State};
use locksmith_resp::Frame;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedMutexGuard;

pub use crate::journal::{Journal, Recovery};
pub use crate::node::{AdminHook, ReplyFuture};
pub use crate::observe::{ObservedClient, ObservedWrites, WriteObserver};
pub use crate::replication::{LinkControl, ReplicaLink};

/// A handle to a running node's controls. Clones drive the same node; it stays valid after
/// the node stopped (operations then act on a node nobody reaches).
#[derive(Debug, Clone)]
pub struct NodeControl {
    pub(crate) node: Arc<Node>,
}

/// A node stopped as `SIGSTOP` would stop a process: connections accept and buffer requests,
/// nothing is executed, expired or replicated until the value is dropped.
#[derive(Debug)]
pub struct Frozen {
    _state: OwnedMutexGuard<State>,
}

impl NodeControl {
    /// Installs the hook for commands the embedder serves; false if the node has one already.
    pub fn set_admin_hook(&self, hook: Arc<dyn AdminHook>) -> bool {
        self.node
            .admin_hook
            .set(crate::node::AdminHookSlot(hook))
            .is_ok()
    }

    /// The node's run id (`INFO server` `run_id`), fixed for its life.
    pub fn run_id(&self) -> &str {
        &self.node.run_id
    }

    /// The node's clock.
    pub fn clock(&self) -> &Clock {
        &self.node.clock
    }

    /// A live mirror of the node's replication offset (what `INFO replication` reports),
    /// readable without the node's state lock.
    pub async fn offset_mirror(&self) -> Arc<AtomicU64> {
        self.node.state.lock().await.repl.offset_mirror()
    }

    /// `REPLICAOF NO ONE`: the node stops being a replica and keeps its data.
    pub async fn become_master(&self) {
        self.node.state.lock().await.repl.become_master();
    }

    /// Makes `replica` a replica of this node: a full synchronisation (the replica's data is
    /// replaced by a copy of this node's, taken atomically with registering the feed), then a
    /// task that applies the write stream on the replica through `ctl` (delay, jitter, stall).
    /// `addr` and `replica_addr` are the addresses each side is advertised at (`ROLE`, `INFO`);
    /// `seed` drives the link's jitter.
    pub async fn attach_replica(
        &self,
        addr: SocketAddr,
        replica: &NodeControl,
        replica_addr: SocketAddr,
        ctl: Arc<LinkControl>,
        seed: u64,
    ) -> ReplicaLink {
        crate::replication::attach(&self.node, addr, &replica.node, replica_addr, ctl, seed).await
    }

    /// Forgets the replica link `link` on this (master) node: it no longer feeds it nor counts
    /// it for `WAIT` and `min-replicas-to-write`.
    pub async fn drop_replica(&self, link: u64) {
        self.node.state.lock().await.repl.remove_feed(link);
    }

    /// Stops the node until the returned value is dropped (see [`Frozen`]).
    pub async fn freeze(&self) -> Frozen {
        Frozen {
            _state: self.node.state.clone().lock_owned().await,
        }
    }

    /// Starts journaling the node's writes, keeping at least `window` of history (see
    /// [`Journal`]): from its current dataset on, every write it makes as a master or applies
    /// as a replica, and the dataset a full synchronisation gives it. A journal already
    /// running stops recording and is replaced.
    ///
    /// Journaling costs a copy of each write's arguments (as a replica link does), a copy of
    /// the dataset once per `window` while the node is written to, and the memory of both.
    pub async fn start_journal(&self, window: Duration) -> Journal {
        let mut state = self.node.state.lock().await;
        let journal = Journal::new(
            window,
            Snapshot {
                dbs: state.dbs.clone(),
                functions: state.functions.dump(false),
            },
        );
        if let Some(old) = state.repl.set_journal(journal.clone()) {
            old.close();
        }
        journal
    }

    /// Installs `observer` to hear every write the node makes as a master or applies as a
    /// replica (see [`WriteObserver`]), or with `None` removes it. Without one, observing
    /// costs nothing.
    pub async fn set_observer(&self, observer: Option<Arc<dyn WriteObserver>>) {
        self.node.state.lock().await.repl.set_observer(observer);
    }

    /// Loads `recovery` (from [`Journal::as_of`], usually of an earlier node on the same
    /// address) as a restarting Redis loads its disk: the dataset and function libraries are
    /// replaced by the checkpoint, its writes are replayed in order with nothing expiring
    /// meanwhile (as Redis loads its append-only file), then every key whose deadline has
    /// passed on this node's clock is dropped (as Redis skips them loading as a master), so
    /// TTLs stay absolute deadlines. `PUBLISH` is not replayed (Redis keeps it out of its
    /// append-only file), and the command statistics start from zero. A running journal gets
    /// the result as a checkpoint. Returns the number of keys loaded.
    pub async fn recover(&self, recovery: &Recovery) -> usize {
        let node = &self.node;
        let mut guard = node.state.lock().await;
        let state = &mut *guard;
        state.dbs = recovery.base.dbs.clone();
        let kill = node.script.kill.clone();
        let lua = state.config.lua();
        let make = move || {
            crate::script::Engine::new_functions(kill, crate::cmd::command_exists, lua)
                .map_err(|e| e.to_string())
        };
        let policy = crate::script::RestorePolicy::Flush;
        if let Err(e) = state
            .functions
            .restore(&recovery.base.functions, u16::MAX, policy, make)
        {
            tracing::warn!(error = %e, "could not load the journal's function libraries");
        }
        if let Ok(mut counts) = node.script.function_counts.lock() {
            *counts = state.functions.counts();
        }
        let mut client = crate::replication::master_client(node);
        for (db, argv) in &recovery.writes {
            let publish = argv.first().is_some_and(|name| {
                name.eq_ignore_ascii_case(b"publish") || name.eq_ignore_ascii_case(b"spublish")
            });
            if publish || *db >= state.dbs.len() {
                continue;
            }
            client.db = *db;
            let mut effects = Effects::default();
            // `now` 0: nothing reads as expired while loading, so each write finds what it
            // found when it was made; deadlines are applied once everything is loaded.
            let reply = crate::cmd::call_argv(state, node, &mut client, argv, 0, &mut effects);
            if let Frame::Error(e) = reply {
                tracing::warn!(error = %String::from_utf8_lossy(&e), "a journaled write failed to replay");
            }
            state.account_modified(&effects.modified, &effects.measured);
        }
        let now = node.clock.now_ms();
        for db in &mut state.dbs {
            db.take_expired(now, usize::MAX, &mut Vec::new());
        }
        state.stats = Default::default();
        state.cmdstats = Default::default();
        state.dirty = 0;
        if let Some(journal) = state.repl.journal() {
            journal.reset(Snapshot {
                dbs: state.dbs.clone(),
                functions: state.functions.dump(false),
            });
        }
        state.dbs.iter().map(|db| db.len()).sum()
    }
}

/// Who serves which hash slots in a cluster of nodes, shared by all of them: a node started
/// with [`crate::ServerBuilder::cluster_member`] answers `CLUSTER SLOTS|SHARDS|NODES` from it
/// and redirects with `MOVED`. Changed only by [`ClusterView::promote`] (a shard's failover).
#[derive(Debug, Clone)]
pub struct ClusterView {
    pub(crate) view: Arc<crate::cluster::View>,
}

impl ClusterView {
    /// `masters` masters splitting the 16384 slots as `redis-cli --cluster create` does, each
    /// followed by `replicas` replicas: member `i` is at `addrs[i]`, named `ids[i]` (40
    /// characters, see [`ClusterView::random_node_id`]).
    pub fn even(masters: usize, replicas: usize, addrs: &[SocketAddr], ids: Vec<String>) -> Self {
        ClusterView {
            view: Arc::new(crate::cluster::View::even(masters, replicas, addrs, ids)),
        }
    }

    /// A random node id: 40 lowercase hex characters, as Redis Cluster names its nodes.
    pub fn random_node_id(rng: &mut impl rand::Rng) -> String {
        crate::cluster::node_id(rng)
    }

    /// The master member `i` replicates, if it is a replica.
    pub fn replica_of(&self, i: usize) -> Option<usize> {
        self.view.layout().replica_of(i)
    }

    /// The replicas of master `m`.
    pub fn replicas_of(&self, m: usize) -> Vec<usize> {
        self.view.layout().replicas_of(m).collect()
    }

    /// Every (master, replica) pair.
    pub fn links(&self) -> Vec<(usize, usize)> {
        self.view.layout().links()
    }

    /// Redis Cluster's failover of a shard to its replica `new`: `new` takes its master's
    /// slots with a config epoch above every other, the old master and the shard's other
    /// replicas become its replicas. Returns the old master.
    ///
    /// # Errors
    /// When `new` is not a replica.
    pub fn promote(&self, new: usize) -> Result<usize, String> {
        self.view.promote(new)
    }
}

/// A listening socket on `addr` with Redis's socket options: `SO_REUSEADDR` (a restarted
/// server gets its port back at once) and a listen backlog of `backlog` (`tcp-backlog`, 511 by
/// default as in Redis; the kernel caps it at `net.core.somaxconn`). tokio's own `bind` uses
/// 1024 and the standard library 128: with 128, a burst of connects overflowed the accept
/// queue and the dropped SYNs cost clients a one-second retransmit.
pub fn listen(addr: SocketAddr, backlog: u32) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}
