//! What a fault is: how a node restarts ([`Restart`]) and the guard that undoes a temporary
//! fault ([`FaultGuard`]).

use std::time::Duration;

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
    pub(crate) fn new(label: String, undo: impl FnOnce() + Send + 'static) -> Self {
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
