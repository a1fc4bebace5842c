//! The fault vocabulary: [`Fault`], one variant per kind of fault the harness applies (what
//! the `Topology` verbs, `LOCKSMITH.*` and the schedules apply, what the history records, what
//! the timeline colours and the checker's fault windows read), how a node restarts
//! ([`Restart`]) and the guard that undoes a temporary fault ([`FaultGuard`]).

use crate::NodeId;
use std::fmt;
use std::time::Duration;

/// A fault as the harness applies and records it. Its `Display` is the label histories,
/// timelines and reports show (`kill n1`, `fail_master n0 -> n1`, `restart n1 (empty)`).
///
/// Adding a kind: a variant here with its label in `Display`, its operation in `inject.rs`
/// (reached from [`Topology::apply`](crate::Topology::apply)), its timeline family in
/// `timeline.rs`, and, when it crashes or restarts a node, [`Fault::crashed`] or
/// [`Fault::restarted`] (CONTRIBUTING, "Add a fault kind").
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The master `old` crashed and its replica `new` was promoted
    /// ([`Topology::fail_master`](crate::Topology::fail_master), `LOCKSMITH.FAILOVER`).
    /// Applying one promotes `new`: the master it replaces is the one `new` replicates from
    /// (the record names it), whatever `old` says; likewise for [`Fault::SwitchMaster`].
    FailMaster {
        /// The master that crashed.
        old: NodeId,
        /// The replica promoted.
        new: NodeId,
    },
    /// A graceful failover: `new` was promoted and `old` kept running as its replica
    /// ([`Topology::switch_master`](crate::Topology::switch_master)).
    SwitchMaster {
        /// The master that stepped down.
        old: NodeId,
        /// The replica promoted.
        new: NodeId,
    },
    /// The node was killed.
    Kill(NodeId),
    /// The node was restarted, empty or with its data.
    Restart(NodeId, Restart),
    /// Replication between the two nodes was cut.
    Partition(NodeId, NodeId),
    /// The node was cut from every other node and its clients' traffic black-holed.
    Isolate(NodeId),
    /// Every partition, isolation and client-link fault ended.
    Heal,
    /// The node's clock jumped by this many ms (negative: back).
    ClockJump(NodeId, i64),
    /// The node stopped executing for this long (as `SIGSTOP`).
    Pause(NodeId, Duration),
    /// Every replication link was delayed by `delay` (and up to `jitter` more per batch);
    /// a delay of zero ends the previous one.
    ReplicationDelay {
        /// The delay.
        delay: Duration,
        /// The extra random delay per batch (not part of the label).
        jitter: Duration,
    },
    /// Replication stopped.
    ReplicationStall,
    /// The node's client links got this much latency per chunk.
    Latency(NodeId, Duration),
    /// The node's client traffic was silently dropped.
    DropTraffic(NodeId),
    /// The node's open client connections were reset (`count` of them; when applying, how
    /// many is what the node had open, whatever `count` says).
    ResetConnections {
        /// The node.
        node: NodeId,
        /// How many connections were reset.
        count: usize,
    },
    /// A client-link rule of the caller's own on the node
    /// ([`Topology::link_rule`](crate::Topology::link_rule)), labelled by the caller.
    LinkRule {
        /// The node whose client links the rule acts on.
        node: NodeId,
        /// The caller's label.
        label: String,
    },
    /// A client process (not a node) stopped for this long, as a test records it (a GC pause
    /// of the lock holder): `client-a paused 6000 ms`.
    ClientPause {
        /// The client's name.
        client: String,
        /// How long it stopped.
        duration: Duration,
    },
    /// A note in the caller's words (a setup failure, a mark): drawn as a fault of no family,
    /// with the fault window of a fault that does not crash a node.
    Note(String),
}

/// What applying a [`Fault`] did ([`Topology::apply`](crate::Topology::apply)).
#[derive(Debug)]
#[non_exhaustive]
pub struct Applied {
    /// The fault as recorded: a failover names the master it replaced, a reset how many
    /// connections it reset.
    pub fault: Fault,
    /// For a fault that lasts (a partition, an isolation, a pause, a stall, a link fault), the
    /// guard that undoes it.
    pub guard: Option<FaultGuard>,
}

impl Fault {
    /// The node this fault crashed (a kill, the old master of a [`Fault::FailMaster`]): the
    /// checker's fault window of an unended crash lasts until [`Fault::restarted`] names it.
    pub fn crashed(&self) -> Option<NodeId> {
        match self {
            Fault::Kill(node) | Fault::FailMaster { old: node, .. } => Some(*node),
            _ => None,
        }
    }

    /// The node this fault restarted.
    pub fn restarted(&self) -> Option<NodeId> {
        match self {
            Fault::Restart(node, _) => Some(*node),
            _ => None,
        }
    }

    /// Whether it acts on replication only (a delay or a stall): the clients' links to the
    /// master are left alone, only `WAIT` answers short or late.
    pub fn replication_only(&self) -> bool {
        matches!(
            self,
            Fault::ReplicationDelay { .. } | Fault::ReplicationStall
        )
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::FailMaster { old, new } => write!(f, "fail_master {old} -> {new}"),
            Fault::SwitchMaster { old, new } => write!(f, "failover {old} -> {new}"),
            Fault::Kill(node) => write!(f, "kill {node}"),
            Fault::Restart(node, how) => write!(f, "restart {node} ({how})"),
            Fault::Partition(a, b) => write!(f, "partition {a} | {b}"),
            Fault::Isolate(node) => write!(f, "isolate {node}"),
            Fault::Heal => f.write_str("heal"),
            Fault::ClockJump(node, delta_ms) => write!(f, "clock {node} {delta_ms:+} ms"),
            Fault::Pause(node, d) => write!(f, "pause {node} {} ms", d.as_millis()),
            Fault::ReplicationDelay { delay, .. } => {
                write!(f, "replication delay {} ms", delay.as_millis())
            }
            Fault::ReplicationStall => f.write_str("replication stalled"),
            Fault::Latency(node, d) => write!(f, "latency {node} {} ms", d.as_millis()),
            Fault::DropTraffic(node) => write!(f, "drop traffic {node}"),
            Fault::ResetConnections { node, count } => {
                write!(f, "reset {count} connection(s) of {node}")
            }
            Fault::LinkRule { label, .. } | Fault::Note(label) => f.write_str(label),
            Fault::ClientPause { client, duration } => {
                write!(f, "{client} paused {} ms", duration.as_millis())
            }
        }
    }
}

/// How [`Topology::restart_with`](crate::Topology::restart_with) brings a node back.
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
/// Nodes journal their writes only as far back as [`TopologyBuilder::keep_data_window`](crate::TopologyBuilder::keep_data_window)
/// (10 s by default); `lose_last` may not exceed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Restart {
    /// Empty, as a Redis without persistence (what [`Topology::restart`](crate::Topology::restart) does).
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

/// Undoes a temporary fault when dropped (partition, isolation, link rule, stall, pause).
#[must_use = "the fault is undone as soon as the guard is dropped"]
pub struct FaultGuard {
    /// The fault it undoes (`None`: a part of a larger one, recorded by that one).
    fault: Option<Fault>,
    label: String,
    undo: Option<Box<dyn FnOnce() + Send>>,
}

impl std::fmt::Debug for FaultGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultGuard")
            .field("fault", &self.fault)
            .finish()
    }
}

impl FaultGuard {
    pub(crate) fn new(fault: Option<Fault>, undo: impl FnOnce() + Send + 'static) -> Self {
        FaultGuard {
            label: fault.as_ref().map(Fault::to_string).unwrap_or_default(),
            fault,
            undo: Some(Box::new(undo)),
        }
    }

    /// What the fault is (its label; empty for a part of a larger fault).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The fault it undoes.
    pub fn fault(&self) -> Option<&Fault> {
        self.fault.as_ref()
    }

    /// Undoes the fault now.
    pub fn undo(mut self) {
        if let Some(undo) = self.undo.take() {
            undo();
        }
    }

    /// Keeps the fault in effect after the guard is gone (until [`Topology::heal`](crate::Topology::heal), or its
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
