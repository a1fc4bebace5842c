//! Lock observation from the server side: the locks of unmodified clients (Redisson, redis-py's
//! `Lock`, python-redis-lock, pottery, node redlock, go-redsync), recognised from the writes
//! each node makes or applies, not from the clients.
//!
//! Every node of an observing topology has a [`WriteObserver`] that hears each atomic unit of
//! its writes as the node propagates it (Redis 7 replicates scripts by their effects: a
//! Redisson acquire is `HINCRBY name owner 1` + `PEXPIREAT`, a redis-py acquire `SET name token
//! PXAT deadline`, a release a `DEL`, an expiry a `DEL` the node makes itself). Each node has a
//! table of the lock keys it holds; each write of a key matching the observed patterns updates
//! it and becomes a [`LockEvent`] on the topology's clock:
//!
//! - the **hash lock** (Redisson's `RLock`, fair lock, spin lock, fenced lock, read-write
//!   lock): a hash `owner -> count`; `HINCRBY`/`HSET` of an owner on a key the node does not
//!   hold is a grant, of an owner it holds a re-entry (or, lowering the count, an exit); a
//!   `mode` field of `read` makes the grants shared; `HDEL owner` releases that owner;
//! - the **string lock** (`SET name token NX PX ms`, released by a compare-and-delete script,
//!   extended by a compare-and-`PEXPIRE`): `SET` of a key the node does not hold is a grant
//!   to the token, of a key held by another token an overwrite (the old owner's release by a
//!   non-owner, and a grant);
//! - a `PEXPIRE`/`PEXPIREAT` (`SET` of the same token) is a renewal, `PERSIST` one without a
//!   lease; `DEL`/`UNLINK` is a release, or an expiry when the key's deadline has passed on
//!   the node's clock; a `DEL` the node makes itself before the deadline (eviction) and
//!   `FLUSHALL`/`FLUSHDB` remove the lock under its holder.
//!
//! - Redisson's **semaphore** and **count-down latch** (an integer string: a `SET` of an
//!   integer sets the permits or the count, `DECRBY`/`INCRBY` take and return permits,
//!   `DECR` counts a latch down, deleted at zero) and the **permit-expirable semaphore**'s id
//!   set `{name}:timeout` (`ZADD` grants an id or moves its lease date, `ZREM` releases it or,
//!   past its date, expires it). A string whose value is an integer is such a counter, not a
//!   lock token.
//!
//! Redisson's helper keys (`redisson_*`: the unlock latch, the fair lock's queue and timeout
//! set, channels; `…:rwlock_timeout:…`) are not locks and are skipped whatever the pattern.
//! A fenced lock's token (an `INCR` in the unit that grants) is the grant's fencing token.
//!
//! A grant holds from its write until its release (on any node, by its owner), its expiry on
//! the node that granted it, or the end of its lease (the lease it was written with, moved by
//! each renewal), whichever comes first. [`check`] reports two owners holding grants of a key
//! at the same instant, a grant the serving node lost (a failover to a replica that had not
//! received it, a restart, an eviction), a release or renewal accepted from a client that did
//! not hold the lock, and fencing tokens handed out twice; for semaphores more permits held
//! than set, for permit ids an id granted twice, for latches one reopened after reaching zero
//! without a reset or lost before it. On independent masters (RedLock) an owner holds a key
//! while a quorum of masters hold its grants ([`check_quorum`]).

mod check;
mod observer;
mod recognise;
mod report;

pub use check::{check, check_quorum};
pub(crate) use report::{as_history, history_json};

use super::history::History;
use super::NodeId;
use bytes::Bytes;
use locksmith_server::control::{ObservedClient, ObservedWrites, WriteObserver};
use locksmith_server::Clock;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// What an observed write did to a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LockEventKind {
    /// The owner got the lock (the key was free on the node).
    Grant,
    /// The owner, holding it, took it again (its count went up).
    Reentry,
    /// The owner, holding it, lowered its count and still holds it.
    Exit,
    /// The lease was set again (`PEXPIRE`, `SET` of the same token, `PERSIST`).
    Renewal,
    /// The lock was given up (`DEL`, `UNLINK`, `HDEL`, or overwritten by another owner).
    Release,
    /// The node removed the lock because its deadline had passed.
    Expiry,
    /// The node removed the lock before its deadline (eviction, `FLUSHALL`), or a failover or
    /// restart left the serving node without it: its holder lost it.
    Lost,
    /// A semaphore's permits or a latch's count were set (`SET name n`: Redisson's
    /// `trySetPermits`, `addPermits`, `drainPermits`, `trySetCount`); `count` is the value.
    Set,
    /// A semaphore's permits were taken (`DECRBY name n`); `count` is n.
    Take,
    /// A semaphore's permits were returned (`INCRBY name n`: a release, or a permit-expirable
    /// semaphore reclaiming expired permits); `count` is n.
    Return,
    /// A latch was counted down (`DECR name`); `count` is what is left (0 or less: open).
    CountDown,
    /// A failover or restart left the serving node with another value of a semaphore or latch
    /// than the node that served before; `count` is the new value.
    Revert,
}

impl LockEventKind {
    /// The kind as `LOCKSMITH.HISTORY` names it.
    pub fn name(self) -> &'static str {
        match self {
            LockEventKind::Grant => "grant",
            LockEventKind::Reentry => "reentry",
            LockEventKind::Exit => "exit",
            LockEventKind::Renewal => "renewal",
            LockEventKind::Release => "release",
            LockEventKind::Expiry => "expiry",
            LockEventKind::Lost => "lost",
            LockEventKind::Set => "set",
            LockEventKind::Take => "take",
            LockEventKind::Return => "return",
            LockEventKind::CountDown => "count-down",
            LockEventKind::Revert => "revert",
        }
    }
}

/// How a lock is laid out in the keyspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LockLayout {
    /// A hash of `owner -> count` (Redisson).
    Hash,
    /// A string holding the owner's token (`SET name token NX PX ms`).
    String,
    /// An integer string set but not yet counted: a semaphore or a latch.
    Counter,
    /// Redisson's `RSemaphore` (and the permit count of `RPermitExpirableSemaphore`): an
    /// integer string of available permits, `DECRBY` to take, `INCRBY` to return.
    Semaphore,
    /// The ids of `RPermitExpirableSemaphore`'s acquired permits: the sorted set
    /// `{name}:timeout` of `id -> lease end` (ms); each id is an owner (in hex).
    Permits,
    /// Redisson's `RCountDownLatch`: an integer string counted down by `DECR`, deleted at 0.
    Latch,
}

impl LockLayout {
    /// Whether it is a lock (a hash or string lock), whose grants the checker spans.
    pub fn is_lock(self) -> bool {
        matches!(self, LockLayout::Hash | LockLayout::String)
    }

    /// Whether it is an integer string (a semaphore or a latch, or not yet known which).
    pub fn is_counter(self) -> bool {
        matches!(
            self,
            LockLayout::Counter | LockLayout::Semaphore | LockLayout::Latch
        )
    }

    /// The layout as `LOCKSMITH.LOCKS` and `LOCKSMITH.HISTORY` name it.
    pub fn name(self) -> &'static str {
        match self {
            LockLayout::Hash => "hash",
            LockLayout::String => "string",
            LockLayout::Counter => "counter",
            LockLayout::Semaphore => "semaphore",
            LockLayout::Permits => "permits",
            LockLayout::Latch => "latch",
        }
    }
}

/// One observed change of a lock (a plain data record).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LockEvent {
    /// Observation order across the topology (events of one instant are ordered by it).
    pub seq: u64,
    /// When the node made or applied the write, in microseconds on the topology's clock.
    pub at_us: u64,
    /// The node.
    pub node: NodeId,
    /// Whether the node applied it as a replica (only a master's own writes grant).
    pub replica: bool,
    /// The database.
    pub db: usize,
    /// The lock's key.
    pub key: String,
    /// The owner: the token of a string lock, the field (`uuid:threadId`) of a hash lock.
    pub owner: String,
    /// What happened.
    pub kind: LockEventKind,
    /// The lock's layout.
    pub layout: LockLayout,
    /// Whether the hold is shared (a read lock's).
    pub shared: bool,
    /// The owner's count after the write (1 for a string lock, 0 once released).
    pub count: i64,
    /// When the lease ends on the topology's clock (µs), as the write set it; `None`: no
    /// lease (or not changed by this event).
    pub lease_end_us: Option<u64>,
    /// The fencing token handed out with a grant (an `INCR` in the same unit).
    pub token: Option<i64>,
    /// For a [`LockEventKind::Set`]: the value the node had before (`None`: a new key).
    pub previous: Option<i64>,
    /// The client whose command made the write (a master's own writes).
    pub client: Option<ObservedClient>,
}

impl LockEvent {
    /// When it happened, in milliseconds on the topology's clock.
    pub fn at_ms(&self) -> u64 {
        self.at_us / 1000
    }
}

/// A lock a node holds now (a plain data record, from [`super::Topology::observed_locks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeldLock {
    /// The node.
    pub node: NodeId,
    /// The database.
    pub db: usize,
    /// The key.
    pub key: String,
    /// The owner.
    pub owner: String,
    /// Its count.
    pub count: i64,
    /// The layout.
    pub layout: LockLayout,
    /// Whether the hold is shared.
    pub shared: bool,
    /// Milliseconds left before the node expires it (`None`: no deadline).
    pub pttl_ms: Option<u64>,
}

/// A grant as the checker sees it: its owner, node, client and how long it held.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObservedHold {
    /// The owner (token or field).
    pub owner: String,
    /// The node that granted it.
    pub node: NodeId,
    /// The client that wrote the grant.
    pub client: Option<ObservedClient>,
    /// From (ms on the topology's clock).
    pub from_ms: u64,
    /// Until (ms), or the end of what was observed when still held.
    pub to_ms: u64,
    /// Why it ended: `release`, `expiry`, `lease`, or `held` (still held).
    pub ended_by: &'static str,
    /// Its fencing token, if any.
    pub token: Option<i64>,
}

/// What kind of violation the checker found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LockViolationKind {
    /// Two owners held grants of the key at the same instant.
    DoubleGrant,
    /// The serving node lost a grant while it held (its holder still counts on it).
    LostGrant,
    /// A release was accepted from a client that did not hold the lock.
    ForeignRelease,
    /// A renewal was accepted from a client that did not hold the lock.
    ForeignRenewal,
    /// Two grants of the key carried the same fencing token.
    RepeatedToken,
    /// More permits of a semaphore were held at once than it was set to.
    OverLimit,
    /// A permit id of a permit-expirable semaphore was granted again while it was held.
    PermitGrantedTwice,
    /// A latch that had reached zero was closed again (its count above zero) without a new
    /// `trySetCount` or a delete.
    LatchReopened,
    /// A latch's key was lost (a failover, a restart) before it reached zero: its waiters see
    /// it open.
    LatchOpenedEarly,
}

impl LockViolationKind {
    /// The kind as `LOCKSMITH.CHECK` names it.
    pub fn name(self) -> &'static str {
        match self {
            LockViolationKind::DoubleGrant => "double-grant",
            LockViolationKind::LostGrant => "lost-grant",
            LockViolationKind::ForeignRelease => "foreign-release",
            LockViolationKind::ForeignRenewal => "foreign-renewal",
            LockViolationKind::RepeatedToken => "repeated-token",
            LockViolationKind::OverLimit => "over-limit",
            LockViolationKind::PermitGrantedTwice => "permit-granted-twice",
            LockViolationKind::LatchReopened => "latch-reopened",
            LockViolationKind::LatchOpenedEarly => "latch-opened-early",
        }
    }
}

/// A violation of what a lock promises, found in what the nodes did (a plain data record).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LockViolation {
    /// What went wrong.
    pub kind: LockViolationKind,
    /// The lock's key.
    pub key: String,
    /// The earlier grant (for a foreign release or renewal: the grant it ended or moved).
    pub first: ObservedHold,
    /// The later grant (double grant, repeated token), or the acting client's own grant of
    /// the key if it had one (foreign release or renewal).
    pub second: Option<ObservedHold>,
    /// The span the violation covers (ms): the overlap, or the instant of the loss, release
    /// or renewal.
    pub from_ms: u64,
    /// Its end (ms).
    pub to_ms: u64,
    /// The client that released or renewed (foreign release or renewal).
    pub actor: Option<ObservedClient>,
    /// The labels of the faults in effect at some time of the violation's span or of the
    /// first grant.
    pub faults: Vec<String>,
    /// What the counts were (semaphores and latches), e.g. `2 permits held of 1`.
    pub detail: Option<String>,
}

impl std::fmt::Display for LockViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = &self.first;
        write!(
            f,
            "{} {}: {} on {} (from {} ms)",
            self.kind.name(),
            self.key,
            a.owner,
            a.node,
            a.from_ms
        )?;
        if let Some(b) = &self.second {
            write!(f, " and {} on {} (from {} ms)", b.owner, b.node, b.from_ms)?;
        }
        if let Some(c) = &self.actor {
            write!(f, " by client {} {}", c.id, c.addr)?;
        }
        if let Some(d) = &self.detail {
            write!(f, " ({d})")?;
        }
        write!(f, " [{}..{}]", self.from_ms, self.to_ms)?;
        if !self.faults.is_empty() {
            write!(f, " under {}", self.faults.join(", "))?;
        }
        Ok(())
    }
}

/// An annotation a client added to the history (`LOCKSMITH.MARK`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Mark {
    /// When (ms on the topology's clock).
    pub at_ms: u64,
    /// The text.
    pub text: String,
}

/// One owner's entry in a node's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    layout: LockLayout,
    /// Owner -> count.
    owners: BTreeMap<Bytes, i64>,
    /// A hash lock's `mode` field (`read`, `write`).
    mode: Option<Bytes>,
    /// Deadline on the node's clock (unix ms).
    deadline_ms: Option<u64>,
    /// A semaphore's available permits, a latch's count.
    value: i64,
}

impl Entry {
    /// A counter (a semaphore's permits, a latch's count) of value 0, with no owner and no
    /// deadline.
    fn counter() -> Entry {
        Entry {
            layout: LockLayout::Counter,
            owners: BTreeMap::new(),
            mode: None,
            deadline_ms: None,
            value: 0,
        }
    }

    fn shared(&self) -> bool {
        self.mode.as_deref() == Some(b"read")
    }
}

/// A node's locks: (db, key) -> entry.
pub(crate) type Table = BTreeMap<(usize, Bytes), Entry>;

/// What changed slots of a table held before a change (`None`: the slot was empty).
type Undo = Vec<((usize, Bytes), Option<Entry>)>;

/// The slots a write may change (a superset is fine: unchanged slots are dropped).
fn touched(table: &Table, db: usize, argv: &[Bytes]) -> Vec<(usize, Bytes)> {
    let name = argv
        .first()
        .map(|n| n.to_ascii_lowercase())
        .unwrap_or_default();
    match name.as_slice() {
        b"flushall" => table.keys().cloned().collect(),
        b"flushdb" => table.keys().filter(|(d, _)| *d == db).cloned().collect(),
        b"del" | b"unlink" => argv.iter().skip(1).map(|k| (db, k.clone())).collect(),
        _ => argv
            .get(1)
            .map(|k| vec![(db, k.clone())])
            .unwrap_or_default(),
    }
}

/// Pushes `undo` (if any) on a node's undo log at `now` and drops what is older than
/// `window`.
fn remember(past: &mut VecDeque<(Instant, Undo)>, now: Instant, undo: Undo, window: Duration) {
    if !undo.is_empty() {
        past.push_back((now, undo));
    }
    if let Some(horizon) = now.checked_sub(window) {
        while past.front().is_some_and(|(at, _)| *at <= horizon) {
            past.pop_front();
        }
    }
}

#[derive(Debug, Default)]
struct Log {
    events: Vec<LockEvent>,
    marks: Vec<Mark>,
    tables: BTreeMap<usize, Table>,
    /// Each node's undo log, as far back as the keep-data window: for each unit (or full
    /// sync) that changed its table, when, and what the changed slots held before (what a
    /// node restarted with its data comes back with is its table with the changes after the
    /// cutoff undone). Only the changed slots are kept: a copy of the table per unit made
    /// observation quadratic in the number of lock keys.
    past: BTreeMap<usize, VecDeque<(Instant, Undo)>>,
    /// Counters a fencing token may come from, per node: (db, key) -> value.
    counters: BTreeMap<usize, BTreeMap<(usize, Bytes), i64>>,
    next_seq: u64,
}

/// The topology's observer: the patterns, every node's table and the events.
#[derive(Debug)]
pub(crate) struct Observer {
    history: History,
    /// How far back nodes keep data (`TopologyBuilder::keep_data_window`).
    window: Duration,
    /// Independent masters (RedLock): how many must hold a grant for its owner to hold the
    /// key.
    quorum: Option<usize>,
    /// Observed key patterns; `None`: off (shared: each unit of writes reads them).
    patterns: Mutex<Option<Arc<Vec<Bytes>>>>,
    log: Mutex<Log>,
}

/// What a node's [`WriteObserver`] is: the topology's observer and the node's index and clock.
#[derive(Debug)]
pub(crate) struct NodeObserver {
    observer: Arc<Observer>,
    node: usize,
    clock: Clock,
}

impl WriteObserver for NodeObserver {
    fn observe(&self, writes: &ObservedWrites<'_>) {
        self.observer.apply(self.node, &self.clock, writes);
    }
}

/// Whether a key names one of Redisson's helper keys rather than a lock.
fn helper_key(key: &[u8]) -> bool {
    key.starts_with(b"redisson_") || key.windows(16).any(|w| w == b":rwlock_timeout:")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn int(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// What one unit of writes did, before it becomes events.
struct Unit {
    node: usize,
    at_us: u64,
    /// The node's clock, µs and ms, when it was observed.
    node_us: u64,
    replica: bool,
    /// Whether a client's command made it (its events get the client once the unit is
    /// done, and only if it has any).
    from_client: bool,
    /// Events of this unit (a `PEXPIRE` after a grant sets the grant's lease).
    events: Vec<LockEvent>,
    /// The last counter value an `INCR` gave in this unit.
    token: Option<i64>,
    /// Semaphores whose permits this unit took, and how many (a permit id added with them is
    /// a grant).
    took: BTreeMap<(usize, Bytes), i64>,
    /// Latches this unit counted down to zero or below (their `DEL` is not a reset).
    zeroed: BTreeSet<(usize, Bytes)>,
}

impl Unit {
    /// When a lease ending at `deadline_ms` on the node's clock ends on the topology's (the
    /// node expires a key once its clock reaches the deadline).
    fn lease_end(&self, deadline_ms: Option<u64>) -> Option<u64> {
        deadline_ms.map(|d| {
            let end_node_us = d.saturating_mul(1000);
            self.at_us
                .saturating_add(end_node_us.saturating_sub(self.node_us))
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        db: usize,
        key: &Bytes,
        owner: &[u8],
        kind: LockEventKind,
        entry: &Entry,
        count: i64,
    ) {
        let lease_end_us = match kind {
            LockEventKind::Grant
            | LockEventKind::Reentry
            | LockEventKind::Exit
            | LockEventKind::Renewal => self.lease_end(entry.deadline_ms),
            _ => None,
        };
        self.events.push(LockEvent {
            seq: 0,
            at_us: self.at_us,
            node: NodeId(self.node),
            replica: self.replica,
            db,
            key: text(key),
            owner: text(owner),
            kind,
            layout: entry.layout,
            shared: entry.shared(),
            count,
            lease_end_us,
            token: None,
            previous: None,
            client: None,
        });
    }

    /// The lease of `key` changed: the events of this unit for it take the new lease, or a
    /// renewal is recorded for each owner.
    fn leased(&mut self, db: usize, key: &Bytes, entry: &Entry) {
        let end = self.lease_end(entry.deadline_ms);
        let name = text(key);
        let mut found = false;
        for e in self.events.iter_mut().rev() {
            if e.db == db && e.key == name && e.count > 0 {
                e.lease_end_us = end;
                found = true;
            }
        }
        if !found {
            for (owner, count) in &entry.owners {
                self.push(db, key, owner, LockEventKind::Renewal, entry, *count);
            }
        }
    }
}
