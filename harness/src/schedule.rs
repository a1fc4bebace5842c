//! Fault schedules: what happens to the topology, when, on which node and for how long, as
//! plain data with a one-line text form (so a failing run's schedule can be printed and
//! replayed), the generator that draws one from a seed, and [`apply`], which injects a
//! schedule's faults into a running [`Topology`] at their times. The explorer draws and shrinks
//! them; `locksmith-harness --schedule TEXT`, `--chaos CLASS --seed N` and
//! `LOCKSMITH.SCHEDULE TEXT` run them against a topology any client uses.

use crate::Fault as HarnessFault;
use crate::{FaultGuard, NodeId, Restart, Topology};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;
use tokio::time::Instant;

/// One kind of fault of the vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FaultKind {
    /// Replication lags by `amount` ms, then the master crashes and its best replica is
    /// promoted; the old master comes back empty `duration` ms later, as a replica.
    Failover,
    /// The node is killed, and restarted empty `duration` ms later.
    Kill,
    /// The node restarts at once keeping its data as it was `amount` ms before the crash
    /// (what `appendfsync everysec` or a periodic RDB would keep).
    LossyRestart,
    /// Replication between the node and the master is cut for `duration` ms.
    Partition,
    /// The node is cut from the others and its clients for `duration` ms.
    Isolate,
    /// The node's clock jumps forward by `amount` ms.
    ClockForward,
    /// The node's clock jumps back by `amount` ms.
    ClockBack,
    /// The node stops (as `SIGSTOP`) for `duration` ms.
    Pause,
    /// Replication is delayed by `amount` ms (with as much jitter) for `duration` ms.
    ReplicationDelay,
    /// Replication stops for `duration` ms.
    ReplicationStall,
    /// The node's client links get `amount` ms of latency for `duration` ms.
    LinkLatency,
    /// The node's client links drop everything for `duration` ms.
    LinkDrop,
    /// The node's client connections are reset.
    LinkReset,
}

impl FaultKind {
    /// Every kind, in a fixed order.
    pub const ALL: [FaultKind; 13] = [
        FaultKind::Failover,
        FaultKind::Kill,
        FaultKind::LossyRestart,
        FaultKind::Partition,
        FaultKind::Isolate,
        FaultKind::ClockForward,
        FaultKind::ClockBack,
        FaultKind::Pause,
        FaultKind::ReplicationDelay,
        FaultKind::ReplicationStall,
        FaultKind::LinkLatency,
        FaultKind::LinkDrop,
        FaultKind::LinkReset,
    ];

    /// Its name in the text form.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Failover => "failover",
            FaultKind::Kill => "kill",
            FaultKind::LossyRestart => "lossy-restart",
            FaultKind::Partition => "partition",
            FaultKind::Isolate => "isolate",
            FaultKind::ClockForward => "clock-forward",
            FaultKind::ClockBack => "clock-back",
            FaultKind::Pause => "pause",
            FaultKind::ReplicationDelay => "repl-delay",
            FaultKind::ReplicationStall => "repl-stall",
            FaultKind::LinkLatency => "link-latency",
            FaultKind::LinkDrop => "link-drop",
            FaultKind::LinkReset => "link-reset",
        }
    }

    /// Whether it needs replicas (a topology of independent masters has none).
    pub fn needs_replicas(self) -> bool {
        matches!(
            self,
            FaultKind::Failover
                | FaultKind::Partition
                | FaultKind::ReplicationDelay
                | FaultKind::ReplicationStall
        )
    }
}

impl FromStr for FaultKind {
    type Err = ScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| ScheduleError(format!("unknown fault kind '{s}'")))
    }
}

/// A family of faults, one column of the safety matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FaultClass {
    /// Failover with replication lag.
    Failover,
    /// Crashes: kill and empty restart, restart losing its last writes.
    Crash,
    /// Partitions and isolation.
    Partition,
    /// Clock jumps forward and back.
    Clock,
    /// Process pauses.
    Pause,
    /// Replication delay, jitter and stalls.
    Replication,
    /// Client-link latency, drops and resets.
    Link,
}

impl FaultClass {
    /// Every class, in the matrix's column order.
    pub const ALL: [FaultClass; 7] = [
        FaultClass::Failover,
        FaultClass::Crash,
        FaultClass::Partition,
        FaultClass::Clock,
        FaultClass::Pause,
        FaultClass::Replication,
        FaultClass::Link,
    ];

    /// Its name (the matrix's column header, the command line's word).
    pub fn name(self) -> &'static str {
        match self {
            FaultClass::Failover => "failover",
            FaultClass::Crash => "crash",
            FaultClass::Partition => "partition",
            FaultClass::Clock => "clock",
            FaultClass::Pause => "pause",
            FaultClass::Replication => "replication",
            FaultClass::Link => "link",
        }
    }

    /// The fault kinds it draws from.
    pub fn kinds(self) -> &'static [FaultKind] {
        match self {
            FaultClass::Failover => &[FaultKind::Failover],
            FaultClass::Crash => &[FaultKind::Kill, FaultKind::LossyRestart],
            FaultClass::Partition => &[FaultKind::Partition, FaultKind::Isolate],
            FaultClass::Clock => &[FaultKind::ClockForward, FaultKind::ClockBack],
            FaultClass::Pause => &[FaultKind::Pause],
            FaultClass::Replication => &[FaultKind::ReplicationDelay, FaultKind::ReplicationStall],
            FaultClass::Link => &[
                FaultKind::LinkLatency,
                FaultKind::LinkDrop,
                FaultKind::LinkReset,
            ],
        }
    }
}

impl FromStr for FaultClass {
    type Err = ScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultClass::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| ScheduleError(format!("unknown fault class '{s}'")))
    }
}

/// One fault of a schedule (a plain data record): a kind drawn for a node, a time, a duration
/// and a size; [`Fault::applies`] maps it onto the harness's [`crate::Fault`]. Text form:
/// `kind/n<node>/<at ms>/<duration ms>/<amount ms>`, e.g. `pause/n0/1200/3000/0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fault {
    /// What happens.
    pub kind: FaultKind,
    /// To which node (index; the master's for a failover, whichever it is then).
    pub node: usize,
    /// When, in ms of the run's virtual time.
    pub at_ms: u64,
    /// How long it lasts (kinds that last), in ms.
    pub duration_ms: u64,
    /// Its size: a lag, a jump, a latency, lost writes, in ms.
    pub amount_ms: u64,
}

impl Fault {
    /// The harness fault this one applies at its time, on a topology of `nodes` nodes whose
    /// master is now `master` (a partition cuts the node from the master, or the master from
    /// the next node); `None` for a failover, which is three in turn (a replication lag, the
    /// master's crash, its restart).
    pub fn applies(&self, nodes: usize, master: NodeId) -> Option<HarnessFault> {
        let nodes = nodes.max(1);
        let node = NodeId::from_index(self.node % nodes);
        let duration = Duration::from_millis(self.duration_ms);
        let amount = Duration::from_millis(self.amount_ms);
        let jump = i64::try_from(self.amount_ms).unwrap_or(i64::MAX);
        Some(match self.kind {
            FaultKind::Failover => return None,
            FaultKind::Kill => HarnessFault::Kill(node),
            FaultKind::LossyRestart => HarnessFault::Restart(node, Restart::keep_data(amount)),
            FaultKind::Partition => {
                let other = if node == master {
                    NodeId::from_index((node.index() + 1) % nodes)
                } else {
                    node
                };
                HarnessFault::Partition(master, other)
            }
            FaultKind::Isolate => HarnessFault::Isolate(node),
            FaultKind::ClockForward => HarnessFault::ClockJump(node, jump),
            FaultKind::ClockBack => HarnessFault::ClockJump(node, -jump),
            FaultKind::Pause => HarnessFault::Pause(node, duration),
            FaultKind::ReplicationDelay => HarnessFault::ReplicationDelay {
                delay: amount,
                jitter: amount,
            },
            FaultKind::ReplicationStall => HarnessFault::ReplicationStall,
            FaultKind::LinkLatency => HarnessFault::Latency(node, amount),
            FaultKind::LinkDrop => HarnessFault::DropTraffic(node),
            FaultKind::LinkReset => HarnessFault::ResetConnections { node, count: 0 },
        })
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/n{}/{}/{}/{}",
            self.kind.name(),
            self.node,
            self.at_ms,
            self.duration_ms,
            self.amount_ms
        )
    }
}

impl FromStr for Fault {
    type Err = ScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            ScheduleError(format!(
                "bad fault '{s}': expected kind/n<node>/<at>/<duration>/<amount>"
            ))
        };
        let parts: Vec<&str> = s.trim().split('/').collect();
        let [kind, node, at, duration, amount] = parts.as_slice() else {
            return Err(bad());
        };
        let number = |t: &str| t.parse::<u64>().map_err(|_| bad());
        Ok(Fault {
            kind: kind.parse()?,
            node: node
                .strip_prefix('n')
                .and_then(|n| n.parse().ok())
                .ok_or_else(bad)?,
            at_ms: number(at)?,
            duration_ms: number(duration)?,
            amount_ms: number(amount)?,
        })
    }
}

/// The faults of one run, in time order. Text form: the faults joined by `,` (empty: none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Schedule {
    /// The faults, sorted by `at_ms`.
    pub faults: Vec<Fault>,
}

impl Schedule {
    /// A schedule of these faults (sorted by time).
    pub fn new(mut faults: Vec<Fault>) -> Self {
        faults.sort_by_key(|f| f.at_ms);
        Schedule { faults }
    }

    /// Draws a schedule from `seed`: one to `max_faults` faults of `class`'s kinds (those the
    /// topology supports), at times within the first 80 % of `run_ms`, on nodes below
    /// `nodes`, with durations and sizes in ranges that matter for leases of `lease_ms`.
    pub fn generate(
        seed: u64,
        class: FaultClass,
        nodes: usize,
        replicated: bool,
        run_ms: u64,
        lease_ms: u64,
        max_faults: usize,
    ) -> Schedule {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5c4e_d01e);
        let kinds: Vec<FaultKind> = class
            .kinds()
            .iter()
            .copied()
            .filter(|k| replicated || !k.needs_replicas())
            .collect();
        if kinds.is_empty() || nodes == 0 || max_faults == 0 {
            return Schedule::default();
        }
        let count = rng.random_range(1..=max_faults);
        let horizon = (run_ms * 4 / 5).max(1);
        let lease = lease_ms.max(1);
        let faults = (0..count)
            .map(|_| {
                let kind = kinds[rng.random_range(0..kinds.len())];
                let (duration_ms, amount_ms) = match kind {
                    FaultKind::Failover => (
                        between(&mut rng, 100, lease.saturating_mul(2)),
                        between(&mut rng, 0, lease),
                    ),
                    FaultKind::Kill => (between(&mut rng, 100, lease.saturating_mul(2)), 0),
                    FaultKind::LossyRestart => (0, between(&mut rng, 0, 2000)),
                    FaultKind::ClockForward | FaultKind::ClockBack => {
                        (0, between(&mut rng, lease / 4, lease.saturating_mul(2)))
                    }
                    FaultKind::Pause => (between(&mut rng, lease / 4, lease.saturating_mul(2)), 0),
                    FaultKind::ReplicationDelay => (
                        between(&mut rng, 200, lease.saturating_mul(2)),
                        between(&mut rng, 10, lease),
                    ),
                    FaultKind::LinkLatency => (
                        between(&mut rng, 200, lease.saturating_mul(2)),
                        between(&mut rng, 5, lease / 2 + 6),
                    ),
                    FaultKind::LinkReset => (0, 0),
                    FaultKind::Partition
                    | FaultKind::Isolate
                    | FaultKind::ReplicationStall
                    | FaultKind::LinkDrop => (between(&mut rng, 100, lease.saturating_mul(2)), 0),
                };
                Fault {
                    kind,
                    node: rng.random_range(0..nodes),
                    at_ms: between(&mut rng, 0, horizon),
                    duration_ms,
                    amount_ms,
                }
            })
            .collect();
        Schedule::new(faults)
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, fault) in self.faults.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{fault}")?;
        }
        Ok(())
    }
}

impl FromStr for Schedule {
    type Err = ScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let faults = s
            .split(',')
            .filter(|f| !f.trim().is_empty())
            .map(str::parse)
            .collect::<Result<Vec<Fault>, _>>()?;
        Ok(Schedule::new(faults))
    }
}

/// A draw from `lo..hi`, or `lo` when the range is empty.
fn between(rng: &mut StdRng, lo: u64, hi: u64) -> u64 {
    if hi > lo {
        rng.random_range(lo..hi)
    } else {
        lo
    }
}

/// A schedule, fault or name that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScheduleError(pub String);

/// Applies `schedule`'s faults at their times (milliseconds after `origin`); a fault that
/// lasts is undone by a task of its own. Returns once every fault has ended. Each fault is
/// recorded in the topology's history by the verb that applies it.
pub async fn apply(topology: Topology, schedule: Schedule, origin: Instant) {
    let mut undo = Vec::new();
    for fault in schedule.faults {
        tokio::time::sleep_until(origin + Duration::from_millis(fault.at_ms)).await;
        if let Some(task) = inject(&topology, fault).await {
            undo.push(task);
        }
    }
    for task in undo {
        let _ = task.await;
    }
}

/// Applies one fault; returns the task that ends it, for faults that last.
async fn inject(topology: &Topology, fault: Fault) -> Option<tokio::task::JoinHandle<()>> {
    let nodes = topology.nodes().len().max(1);
    let duration = Duration::from_millis(fault.duration_ms);
    let amount = Duration::from_millis(fault.amount_ms);
    let Some(start) = fault.applies(nodes, topology.master()) else {
        // A failover: replication falls behind by `amount`, the master crashes, and it comes
        // back (empty, as a replica of the promoted one) `duration` later.
        let topology = topology.clone();
        return Some(tokio::spawn(async move {
            topology.replication_delay(amount);
            tokio::time::sleep(amount).await;
            let old = topology.master();
            let failed = topology.fail_master().await;
            topology.replication_delay(Duration::ZERO);
            if failed.is_ok() {
                tokio::time::sleep(duration).await;
                let _ = topology.restart(old).await;
            }
        }));
    };
    let applied = topology.apply(start).await.ok()?;
    match (applied.fault, applied.guard) {
        // A node killed comes back empty `duration` later.
        (HarnessFault::Kill(node), _) => {
            let topology = topology.clone();
            Some(tokio::spawn(async move {
                tokio::time::sleep(duration).await;
                let _ = topology
                    .apply(HarnessFault::Restart(node, Restart::Empty))
                    .await;
            }))
        }
        // A delay lasts `duration`, ended by a delay of zero.
        (HarnessFault::ReplicationDelay { .. }, _) => {
            let topology = topology.clone();
            Some(tokio::spawn(async move {
                tokio::time::sleep(duration).await;
                let _ = topology
                    .apply(HarnessFault::ReplicationDelay {
                        delay: Duration::ZERO,
                        jitter: Duration::ZERO,
                    })
                    .await;
            }))
        }
        // A pause ends by itself.
        (HarnessFault::Pause(..), Some(guard)) => {
            guard.detach();
            None
        }
        (_, Some(guard)) => guarded(guard, duration),
        (_, None) => None,
    }
}

/// Keeps `guard`'s fault for `duration`, then undoes it.
fn guarded(guard: FaultGuard, duration: Duration) -> Option<tokio::task::JoinHandle<()>> {
    Some(tokio::spawn(async move {
        tokio::time::sleep(duration).await;
        guard.undo();
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_round_trips() {
        for class in FaultClass::ALL {
            for seed in 0..20 {
                let s = Schedule::generate(seed, class, 3, true, 10_000, 3000, 4);
                assert!(!s.faults.is_empty());
                assert!(s.faults.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
                let text = s.to_string();
                assert_eq!(text.parse::<Schedule>().unwrap(), s, "{text}");
            }
        }
        assert_eq!("".parse::<Schedule>().unwrap(), Schedule::default());
    }

    #[test]
    fn generation_follows_the_seed_and_the_class() {
        let a = Schedule::generate(7, FaultClass::Clock, 5, false, 10_000, 3000, 3);
        assert_eq!(
            a,
            Schedule::generate(7, FaultClass::Clock, 5, false, 10_000, 3000, 3)
        );
        assert!(a
            .faults
            .iter()
            .all(|f| FaultClass::Clock.kinds().contains(&f.kind) && f.node < 5));
        // Independent masters: no replication faults to draw.
        assert!(
            Schedule::generate(1, FaultClass::Failover, 5, false, 10_000, 3000, 3)
                .faults
                .is_empty()
        );
    }

    #[test]
    fn bad_text_is_refused_with_a_reason() {
        for bad in [
            "pause",
            "pause/0/1/2/3",
            "nope/n0/1/2/3",
            "pause/n0/-1/2/3",
            "pause/n0/1/2/x",
        ] {
            let err = bad.parse::<Schedule>().unwrap_err();
            assert!(!err.0.is_empty(), "{bad}");
        }
    }
}
