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

use super::history::{FaultRecord, History};
use super::NodeId;
use bytes::Bytes;
use locksmith_server::control::{ObservedClient, ObservedWrites, WriteObserver};
use locksmith_server::{glob_match, Clock};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
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

impl Observer {
    pub(crate) fn new(history: History, window: Duration, quorum: Option<usize>) -> Self {
        Observer {
            history,
            window,
            quorum,
            patterns: Mutex::new(None),
            log: Mutex::new(Log::default()),
        }
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The observed patterns (`None`: off).
    pub(crate) fn patterns(&self) -> Option<Vec<Bytes>> {
        self.shared_patterns().map(|p| p.as_ref().clone())
    }

    fn shared_patterns(&self) -> Option<Arc<Vec<Bytes>>> {
        self.patterns.lock().ok().and_then(|p| p.clone())
    }

    /// Sets the observed patterns (`None`: off); an empty list observes every key.
    pub(crate) fn set_patterns(&self, patterns: Option<Vec<Bytes>>) {
        if let Ok(mut p) = self.patterns.lock() {
            *p = patterns.map(|v| {
                Arc::new(if v.is_empty() {
                    vec![Bytes::from_static(b"*")]
                } else {
                    v
                })
            });
        }
    }

    /// The observer to install on node `node` (whose clock is `clock`).
    pub(crate) fn for_node(self: &Arc<Self>, node: usize, clock: Clock) -> Arc<NodeObserver> {
        Arc::new(NodeObserver {
            observer: self.clone(),
            node,
            clock,
        })
    }

    fn observed(&self, patterns: &[Bytes], key: &[u8]) -> bool {
        !helper_key(key) && patterns.iter().any(|p| glob_match(p, key, false))
    }

    /// Applies one unit of node `node`'s writes.
    fn apply(&self, node: usize, clock: &Clock, writes: &ObservedWrites<'_>) {
        let Some(patterns) = self.shared_patterns() else {
            return;
        };
        let at_us = self.history.now_us();
        let node_us = clock.now_us();
        let mut unit = Unit {
            node,
            at_us,
            node_us,
            replica: writes.replica,
            from_client: writes.from_client(),
            events: Vec::new(),
            token: None,
            took: BTreeMap::new(),
            zeroed: BTreeSet::new(),
        };
        let mut guard = self.log();
        let log = &mut *guard;
        let table = log.tables.entry(node).or_default();
        let counters = log.counters.entry(node).or_default();
        let keep = !self.window.is_zero();
        let mut undo: Undo = Vec::new();
        for (db, argv) in writes.writes {
            let before: Undo = if keep {
                touched(table, *db, argv)
                    .into_iter()
                    .map(|slot| {
                        let entry = table.get(&slot).cloned();
                        (slot, entry)
                    })
                    .collect()
            } else {
                Vec::new()
            };
            self.write(&patterns, &mut unit, table, counters, *db, argv);
            undo.extend(
                before
                    .into_iter()
                    .filter(|(slot, entry)| table.get(slot) != entry.as_ref()),
            );
        }
        took_without_id(&mut unit, table);
        if keep {
            let past = log.past.entry(node).or_default();
            remember(past, Instant::now(), undo, self.window);
        }
        let token = unit.token;
        let client = if unit.events.is_empty() {
            None
        } else {
            writes.client()
        };
        for mut e in unit.events {
            if e.kind == LockEventKind::Grant {
                e.token = token;
            }
            e.client.clone_from(&client);
            e.seq = log.next_seq;
            log.next_seq += 1;
            log.events.push(e);
        }
    }

    /// One write of a unit.
    fn write(
        &self,
        patterns: &[Bytes],
        unit: &mut Unit,
        table: &mut Table,
        counters: &mut BTreeMap<(usize, Bytes), i64>,
        db: usize,
        argv: &[Bytes],
    ) {
        let Some(name) = argv.first() else {
            return;
        };
        let name = name.to_ascii_lowercase();
        let now_ms = unit.node_us / 1000;
        match name.as_slice() {
            b"flushall" | b"flushdb" => {
                let keys: Vec<(usize, Bytes)> = table
                    .keys()
                    .filter(|(d, _)| name == b"flushall" || *d == db)
                    .cloned()
                    .collect();
                for (d, key) in keys {
                    if let Some(entry) = table.remove(&(d, key.clone())) {
                        for owner in entry.owners.keys() {
                            unit.push(d, &key, owner, LockEventKind::Lost, &entry, 0);
                        }
                    }
                }
                counters.retain(|(d, _), _| name != b"flushall" && *d != db);
                return;
            }
            b"incr" | b"incrby" | b"decr" | b"decrby" => {
                let (Some(key), by) = (argv.get(1), argv.get(2).and_then(|b| int(b))) else {
                    return;
                };
                let step = match name.as_slice() {
                    b"incr" => 1,
                    b"decr" => -1,
                    b"incrby" => by.unwrap_or(0),
                    _ => by.map_or(0, |b| b.saturating_neg()),
                };
                let v = counters.entry((db, key.clone())).or_insert(0);
                *v = v.saturating_add(step);
                unit.token = Some(*v);
                let value = *v;
                if self.observed(patterns, key) {
                    counted(unit, table, db, key, &name, step, value);
                }
                return;
            }
            _ => {}
        }
        if name == b"del" || name == b"unlink" {
            for key in argv.iter().skip(1) {
                counters.remove(&(db, key.clone()));
                self.delete(patterns, unit, table, db, key, now_ms);
            }
            return;
        }
        let Some(key) = argv.get(1) else {
            return;
        };
        if name == b"set" {
            if let Some(v) = argv.get(2).and_then(|v| int(v)) {
                counters.insert((db, key.clone()), v);
            }
        }
        if let Some(base) = permits_base(key) {
            if self.observed(patterns, &base) {
                permits(
                    unit,
                    table,
                    db,
                    key,
                    &base,
                    &name,
                    argv.get(2..).unwrap_or_default(),
                );
            }
            return;
        }
        if !self.observed(patterns, key) {
            return;
        }
        let slot = (db, key.clone());
        // A key whose deadline was reached is gone for the node (it propagates the `DEL` first when
        // it reclaims it; this covers a write that replaced it in place).
        if table
            .get(&slot)
            .is_some_and(|e| e.deadline_ms.is_some_and(|d| d <= now_ms))
        {
            if let Some(entry) = table.remove(&slot) {
                for owner in entry.owners.keys() {
                    unit.push(db, key, owner, LockEventKind::Expiry, &entry, 0);
                }
            }
        }
        match name.as_slice() {
            b"set" => {
                let Some(token) = argv.get(2) else {
                    return;
                };
                let deadline = set_deadline(argv, now_ms);
                let lock = table
                    .get(&slot)
                    .is_some_and(|e| e.layout == LockLayout::String);
                if let (Some(v), false) = (int(token), lock) {
                    // An integer is a semaphore's permits or a latch's count, not a token.
                    let keep = argv.iter().any(|a| a.eq_ignore_ascii_case(b"keepttl"));
                    let previous = table
                        .get(&slot)
                        .filter(|e| e.layout.is_counter())
                        .map(|e| e.value);
                    let entry = table.entry(slot).or_insert_with(|| Entry {
                        layout: LockLayout::Counter,
                        owners: BTreeMap::new(),
                        mode: None,
                        deadline_ms: None,
                        value: 0,
                    });
                    if !entry.layout.is_counter() {
                        entry.layout = LockLayout::Counter;
                        entry.owners.clear();
                        entry.mode = None;
                    }
                    entry.value = v;
                    if !keep {
                        entry.deadline_ms = deadline;
                    }
                    let entry = entry.clone();
                    unit.push(db, key, b"", LockEventKind::Set, &entry, v);
                    if let Some(e) = unit.events.last_mut() {
                        e.previous = previous;
                    }
                    return;
                }
                let same = table.get(&slot).is_some_and(|e| {
                    e.layout == LockLayout::String && e.owners.contains_key(token)
                });
                if same {
                    if let Some(entry) = table.get_mut(&slot) {
                        if !argv.iter().any(|a| a.eq_ignore_ascii_case(b"keepttl")) {
                            entry.deadline_ms = deadline;
                        }
                        let entry = entry.clone();
                        unit.push(db, key, token, LockEventKind::Renewal, &entry, 1);
                    }
                } else {
                    if let Some(old) = table.remove(&slot) {
                        for owner in old.owners.keys() {
                            unit.push(db, key, owner, LockEventKind::Release, &old, 0);
                        }
                    }
                    let entry = Entry {
                        layout: LockLayout::String,
                        owners: BTreeMap::from([(token.clone(), 1)]),
                        mode: None,
                        deadline_ms: deadline,
                        value: 0,
                    };
                    unit.push(db, key, token, LockEventKind::Grant, &entry, 1);
                    table.insert(slot, entry);
                }
            }
            b"hincrby" | b"hset" | b"hsetnx" | b"hmset" => {
                let incr = name == b"hincrby";
                let mut pairs = argv.get(2..).unwrap_or_default().chunks_exact(2);
                for pair in pairs.by_ref() {
                    let [field, value] = pair else {
                        continue;
                    };
                    let entry = table.entry(slot.clone()).or_insert_with(|| Entry {
                        layout: LockLayout::Hash,
                        owners: BTreeMap::new(),
                        mode: None,
                        deadline_ms: None,
                        value: 0,
                    });
                    if entry.layout != LockLayout::Hash {
                        *entry = Entry {
                            layout: LockLayout::Hash,
                            owners: BTreeMap::new(),
                            mode: None,
                            deadline_ms: None,
                            value: 0,
                        };
                    }
                    if field.as_ref() == b"mode" {
                        entry.mode = Some(value.clone());
                        continue;
                    }
                    let n = int(value).unwrap_or(1);
                    let before = entry.owners.get(field).copied();
                    let after = if incr {
                        before.unwrap_or(0).saturating_add(n)
                    } else {
                        n
                    };
                    entry.owners.insert(field.clone(), after);
                    let kind = match before {
                        None | Some(0) if after > 0 => LockEventKind::Grant,
                        Some(b) if after > b => LockEventKind::Reentry,
                        Some(_) if after > 0 => LockEventKind::Exit,
                        _ => LockEventKind::Exit,
                    };
                    let entry = entry.clone();
                    unit.push(db, key, field, kind, &entry, after);
                }
            }
            b"hdel" => {
                let Some(entry) = table.get_mut(&slot) else {
                    return;
                };
                for field in argv.iter().skip(2) {
                    if field.as_ref() == b"mode" {
                        entry.mode = None;
                    } else if entry.owners.remove(field).is_some() {
                        let snapshot = entry.clone();
                        unit.push(db, key, field, LockEventKind::Release, &snapshot, 0);
                    }
                }
                if entry.owners.is_empty() && entry.mode.is_none() {
                    table.remove(&slot);
                }
            }
            b"pexpireat" | b"expireat" | b"pexpire" | b"expire" | b"persist" => {
                let Some(entry) = table.get_mut(&slot) else {
                    return;
                };
                let t = argv.get(2).and_then(|t| int(t)).map(|t| t.max(0) as u64);
                entry.deadline_ms = match name.as_slice() {
                    b"pexpireat" => t,
                    b"expireat" => t.map(|s| s.saturating_mul(1000)),
                    b"pexpire" => t.map(|ms| now_ms.saturating_add(ms)),
                    b"expire" => t.map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
                    _ => None,
                };
                let entry = entry.clone();
                unit.leased(db, key, &entry);
            }
            _ => {}
        }
    }

    /// A `DEL`/`UNLINK` of `key`: a release, an expiry, or a loss.
    fn delete(
        &self,
        patterns: &[Bytes],
        unit: &mut Unit,
        table: &mut Table,
        db: usize,
        key: &Bytes,
        now_ms: u64,
    ) {
        let observed = match permits_base(key) {
            Some(base) => self.observed(patterns, &base),
            None => self.observed(patterns, key),
        };
        if !observed {
            return;
        }
        let Some(entry) = table.remove(&(db, key.clone())) else {
            return;
        };
        if unit.zeroed.contains(&(db, key.clone())) {
            // A latch counted down to zero deletes itself: that is its opening, not a reset.
            return;
        }
        let expired = entry.deadline_ms.is_some_and(|d| d <= now_ms);
        let kind = if expired {
            LockEventKind::Expiry
        } else if !unit.from_client && !unit.replica {
            // The node removed it itself before its deadline: eviction.
            LockEventKind::Lost
        } else {
            LockEventKind::Release
        };
        if entry.layout.is_counter() {
            unit.push(db, key, b"", kind, &entry, entry.value);
        }
        for owner in entry.owners.keys() {
            unit.push(db, key, owner, kind, &entry, 0);
        }
    }

    /// Node `replica` got a full copy of node `master`'s dataset.
    pub(crate) fn synced(&self, master: usize, replica: usize) {
        let mut log = self.log();
        let table = log.tables.get(&master).cloned().unwrap_or_default();
        let old = log
            .tables
            .insert(replica, table.clone())
            .unwrap_or_default();
        if !self.window.is_zero() {
            let undo: Undo = old
                .keys()
                .chain(table.keys())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .filter(|slot| old.get(*slot) != table.get(*slot))
                .map(|slot| (slot.clone(), old.get(slot).cloned()))
                .collect();
            let past = log.past.entry(replica).or_default();
            remember(past, Instant::now(), undo, self.window);
        }
        let counters = log.counters.get(&master).cloned().unwrap_or_default();
        log.counters.insert(replica, counters);
    }

    /// Node `node` started empty.
    pub(crate) fn emptied(&self, node: usize) {
        let mut log = self.log();
        log.tables.remove(&node);
        log.counters.remove(&node);
        log.past.remove(&node);
    }

    /// Node `node` started with its data as of `cutoff` (a restart keeping data): its locks
    /// are those it held then.
    pub(crate) fn restored(&self, node: usize, cutoff: Instant) {
        let mut log = self.log();
        let mut table = log.tables.get(&node).cloned().unwrap_or_default();
        if let Some(past) = log.past.get_mut(&node) {
            while past.back().is_some_and(|(at, _)| *at > cutoff) {
                let Some((_, undo)) = past.pop_back() else {
                    break;
                };
                for (slot, entry) in undo.into_iter().rev() {
                    match entry {
                        Some(e) => table.insert(slot, e),
                        None => table.remove(&slot),
                    };
                }
            }
        }
        log.tables.insert(node, table);
    }

    /// Node `node`'s locks now.
    fn table(&self, node: usize) -> Table {
        self.log().tables.get(&node).cloned().unwrap_or_default()
    }

    /// Records a loss for every lock of `before` (what the node that served clients held,
    /// read on `clock`) that node `now_serving` does not hold with the same owner: clients
    /// of the serving node lost it (a failover, a restart).
    pub(crate) fn took_over(&self, before: &Table, clock: &Clock, now_serving: usize) {
        let now_ms = clock.now_ms();
        let after = self.table(now_serving);
        let at_us = self.history.now_us();
        let mut log = self.log();
        let live = |e: &&Entry| e.deadline_ms.is_none_or(|d| d > now_ms);
        let push =
            |log: &mut Log, slot: &(usize, Bytes), owner: &[u8], kind, entry: &Entry, count| {
                let seq = log.next_seq;
                log.next_seq += 1;
                log.events.push(LockEvent {
                    seq,
                    at_us,
                    node: NodeId(now_serving),
                    replica: false,
                    db: slot.0,
                    key: text(&slot.1),
                    owner: text(owner),
                    kind,
                    layout: entry.layout,
                    shared: entry.shared(),
                    count,
                    lease_end_us: None,
                    token: None,
                    previous: None,
                    client: None,
                });
            };
        for (slot, entry) in before {
            if !live(&entry) {
                continue;
            }
            let now = after.get(slot).filter(live);
            if entry.layout.is_counter() {
                match now.filter(|e| e.layout.is_counter()) {
                    None => push(&mut log, slot, b"", LockEventKind::Lost, entry, entry.value),
                    Some(e) if e.value != entry.value => {
                        push(&mut log, slot, b"", LockEventKind::Revert, e, e.value)
                    }
                    Some(_) => {}
                }
                continue;
            }
            for owner in entry.owners.keys() {
                let kept = now.is_some_and(|e| e.owners.get(owner).is_some_and(|c| *c > 0));
                if !kept {
                    push(&mut log, slot, owner, LockEventKind::Lost, entry, 0);
                }
            }
        }
        // A semaphore or latch the node that served before did not have (a latch deleted at
        // zero that the new master still counts).
        for (slot, entry) in &after {
            let had = before.get(slot).filter(live).is_some();
            if entry.layout.is_counter() && !had && live(&entry) {
                push(
                    &mut log,
                    slot,
                    b"",
                    LockEventKind::Revert,
                    entry,
                    entry.value,
                );
            }
        }
    }

    /// What `node` holds now, for a later [`Observer::took_over`].
    pub(crate) fn snapshot(&self, node: usize) -> Table {
        self.table(node)
    }

    /// Every lock `node` holds whose deadline has not passed on `clock`.
    pub(crate) fn held(&self, node: usize, clock: &Clock) -> Vec<HeldLock> {
        let now_ms = clock.now_ms();
        let mut out = Vec::new();
        for ((db, key), entry) in self.table(node) {
            if entry.deadline_ms.is_some_and(|d| d <= now_ms) {
                continue;
            }
            for (owner, count) in &entry.owners {
                if *count <= 0 && entry.layout == LockLayout::Hash {
                    continue;
                }
                let (count, pttl_ms) = match entry.layout {
                    // A permit id's count is its lease date.
                    LockLayout::Permits => (
                        1,
                        (*count < NO_LEASE_DATE)
                            .then(|| (*count).max(0) as u64)
                            .map(|d| d.saturating_sub(now_ms)),
                    ),
                    _ => (*count, entry.deadline_ms.map(|d| d.saturating_sub(now_ms))),
                };
                out.push(HeldLock {
                    node: NodeId(node),
                    db,
                    key: text(&key),
                    owner: text(owner),
                    count,
                    layout: entry.layout,
                    shared: entry.shared(),
                    pttl_ms,
                });
            }
        }
        out
    }

    /// The quorum of independent masters (`None`: one node serves each key).
    pub(crate) fn quorum(&self) -> Option<usize> {
        self.quorum
    }

    /// Every event so far.
    pub(crate) fn events(&self) -> Vec<LockEvent> {
        self.log().events.clone()
    }

    /// Every mark so far.
    pub(crate) fn marks(&self) -> Vec<Mark> {
        self.log().marks.clone()
    }

    /// Adds a mark now.
    pub(crate) fn mark(&self, text: String) {
        let at_ms = self.history.now_ms();
        self.log().marks.push(Mark { at_ms, text });
    }
}

/// Redisson's lease date of a permit that never expires (`Long.MAX_VALUE / 10000`).
const NO_LEASE_DATE: i64 = 922_337_203_685_477;

/// The semaphore a permit-expirable semaphore's id set belongs to: `name` of `{name}:timeout`.
fn permits_base(key: &[u8]) -> Option<Bytes> {
    let inner = key.strip_suffix(b"}:timeout")?.strip_prefix(b"{")?;
    Some(Bytes::copy_from_slice(inner))
}

fn hex(b: &[u8]) -> Bytes {
    let mut out = String::with_capacity(b.len() * 2);
    for byte in b {
        out.push_str(&format!("{byte:02x}"));
    }
    Bytes::from(out)
}

/// An `INCR`/`INCRBY`/`DECR`/`DECRBY` of an observed key that left it at `value`: a latch
/// counted down (`DECR`), a semaphore's permits taken (`DECRBY`) or returned (`INCRBY`).
fn counted(
    unit: &mut Unit,
    table: &mut Table,
    db: usize,
    key: &Bytes,
    name: &[u8],
    step: i64,
    value: i64,
) {
    let slot = (db, key.clone());
    let entry = table.entry(slot.clone()).or_insert_with(|| Entry {
        layout: LockLayout::Counter,
        owners: BTreeMap::new(),
        mode: None,
        deadline_ms: None,
        value: 0,
    });
    if !entry.layout.is_counter() {
        // A lock's key written as a number is no longer a lock.
        *entry = Entry {
            layout: LockLayout::Counter,
            owners: BTreeMap::new(),
            mode: None,
            deadline_ms: None,
            value: 0,
        };
    }
    entry.value = value;
    let (layout, kind, count) = match name {
        b"decr" => (LockLayout::Latch, LockEventKind::CountDown, value),
        _ if step < 0 => (
            LockLayout::Semaphore,
            LockEventKind::Take,
            step.saturating_neg(),
        ),
        _ => (LockLayout::Semaphore, LockEventKind::Return, step),
    };
    entry.layout = layout;
    let entry = entry.clone();
    unit.push(db, key, b"", kind, &entry, count);
    match kind {
        LockEventKind::Take => {
            unit.took.insert(slot, count);
        }
        LockEventKind::CountDown if value <= 0 => {
            unit.zeroed.insert(slot);
        }
        _ => {}
    }
}

/// Permits of a permit-expirable semaphore taken by a unit that added no new id to its id
/// set: a retried acquire whose id was already there (its `ZADD` changed nothing, so the node
/// did not propagate it). Recorded as a [`LockEventKind::Take`] of the id set.
fn took_without_id(unit: &mut Unit, table: &Table) {
    let took: Vec<((usize, Bytes), i64)> = unit.took.iter().map(|(k, n)| (k.clone(), *n)).collect();
    for ((db, base), n) in took {
        let mut zset = b"{".to_vec();
        zset.extend_from_slice(&base);
        zset.extend_from_slice(b"}:timeout");
        let zset = Bytes::from(zset);
        let Some(entry) = table
            .get(&(db, zset.clone()))
            .filter(|e| e.layout == LockLayout::Permits)
        else {
            continue;
        };
        let name = text(&zset);
        let granted = unit
            .events
            .iter()
            .any(|e| e.key == name && e.kind == LockEventKind::Grant);
        if !granted {
            let entry = entry.clone();
            unit.push(db, &zset, b"", LockEventKind::Take, &entry, n);
        }
    }
}

/// A write of `key`, the id set `{base}:timeout` of a permit-expirable semaphore: `ZADD`
/// grants an id (with permits taken in the same unit) or moves its lease, `ZREM` releases it
/// or, once its lease date has passed, expires it.
fn permits(
    unit: &mut Unit,
    table: &mut Table,
    db: usize,
    key: &Bytes,
    base: &Bytes,
    name: &[u8],
    args: &[Bytes],
) {
    let slot = (db, key.clone());
    let now_ms = unit.node_us / 1000;
    match name {
        b"zadd" => {
            // Options first (Redisson sends none), then score/member pairs.
            let first = args
                .iter()
                .position(|a| int(a).is_some() || a.as_ref().contains(&b'.'))
                .unwrap_or(args.len());
            let took = unit.took.contains_key(&(db, base.clone()));
            for pair in args.get(first..).unwrap_or_default().chunks_exact(2) {
                let [score, id] = pair else {
                    continue;
                };
                let Some(date) = int(score) else {
                    continue;
                };
                let entry = table.entry(slot.clone()).or_insert_with(|| Entry {
                    layout: LockLayout::Permits,
                    owners: BTreeMap::new(),
                    mode: None,
                    deadline_ms: None,
                    value: 0,
                });
                if entry.layout != LockLayout::Permits {
                    return;
                }
                let id = hex(id);
                let before = entry.owners.insert(id.clone(), date);
                let kind = if took || before.is_none() {
                    LockEventKind::Grant
                } else {
                    LockEventKind::Renewal
                };
                let lease = (date < NO_LEASE_DATE).then(|| date.max(0) as u64);
                let end = unit.lease_end(lease);
                let entry = entry.clone();
                unit.push(db, key, &id, kind, &entry, 1);
                if let Some(e) = unit.events.last_mut() {
                    e.lease_end_us = end;
                }
            }
        }
        b"zrem" => {
            let Some(entry) = table.get_mut(&slot) else {
                return;
            };
            if entry.layout != LockLayout::Permits {
                return;
            }
            for id in args {
                let id = hex(id);
                let Some(date) = entry.owners.remove(&id) else {
                    continue;
                };
                let kind = if date >= 0 && (date as u64) <= now_ms {
                    LockEventKind::Expiry
                } else {
                    LockEventKind::Release
                };
                let snapshot = entry.clone();
                unit.push(db, key, &id, kind, &snapshot, 0);
            }
            if entry.owners.is_empty() {
                table.remove(&slot);
            }
        }
        _ => {}
    }
}

/// The deadline (unix ms on the node's clock) a propagated `SET` carries.
fn set_deadline(argv: &[Bytes], now_ms: u64) -> Option<u64> {
    let mut i = 3;
    while let Some(opt) = argv.get(i) {
        let value = argv
            .get(i + 1)
            .and_then(|v| int(v))
            .map(|v| v.max(0) as u64);
        let opt = opt.to_ascii_lowercase();
        match opt.as_slice() {
            b"pxat" => return value,
            b"exat" => return value.map(|s| s.saturating_mul(1000)),
            b"px" => return value.map(|ms| now_ms.saturating_add(ms)),
            b"ex" => return value.map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
            _ => i += 1,
        }
    }
    None
}

/// A grant and how long it held, in µs and observation order.
#[derive(Debug, Clone)]
struct Span {
    grant: usize,
    from: (u64, u64),
    to: (u64, u64),
    ended_by: &'static str,
}

/// When grant `events[g]` stopped holding (see the module docs): its owner's release on any
/// node, its expiry on the node that granted it, a new grant to the same owner, or the end
/// of its lease as renewals left it; else it still holds at `now_us`.
///
/// With `per_node` (independent masters) only the granting node's events count: the same
/// owner's grant on another master is another vote, not a new grant.
fn span(events: &[LockEvent], g: usize, now_us: u64, per_node: bool) -> Option<Span> {
    let grant = events.get(g)?;
    let mut lease = grant.lease_end_us.unwrap_or(u64::MAX);
    for e in events.iter().skip(g + 1) {
        if e.db != grant.db || e.key != grant.key || e.owner != grant.owner {
            continue;
        }
        if per_node && e.node != grant.node {
            continue;
        }
        if e.at_us >= lease {
            break;
        }
        let ended_by = match e.kind {
            LockEventKind::Release if !e.replica => "release",
            LockEventKind::Expiry if e.node == grant.node => "expiry",
            LockEventKind::Grant if !e.replica => "regrant",
            LockEventKind::Renewal | LockEventKind::Reentry | LockEventKind::Exit if !e.replica => {
                lease = e.lease_end_us.unwrap_or(u64::MAX);
                continue;
            }
            _ => continue,
        };
        return Some(Span {
            grant: g,
            from: (grant.at_us, grant.seq),
            to: (e.at_us, e.seq),
            ended_by,
        });
    }
    let (to, ended_by) = if lease <= now_us {
        // A lease ends before anything that happens at the same microsecond.
        ((lease, 0), "lease")
    } else {
        ((now_us.max(grant.at_us), u64::MAX), "held")
    };
    Some(Span {
        grant: g,
        from: (grant.at_us, grant.seq),
        to,
        ended_by,
    })
}

fn hold(events: &[LockEvent], s: &Span) -> Option<ObservedHold> {
    let g = events.get(s.grant)?;
    Some(ObservedHold {
        owner: g.owner.clone(),
        node: g.node,
        client: g.client.clone(),
        from_ms: s.from.0 / 1000,
        to_ms: s.to.0 / 1000,
        ended_by: s.ended_by,
        token: g.token,
    })
}

/// Overlaps shorter than this at the end of a lease are not reported: the lease's end is
/// read on the granting node's clock and the next grant on another node's, which may differ
/// by a few microseconds.
const LEASE_SKEW_US: u64 = 1000;

/// The labels of the faults in effect at some time of `[from_ms, to_ms]`.
fn faults_between(faults: &[FaultRecord], from_ms: u64, to_ms: u64) -> Vec<String> {
    faults
        .iter()
        .filter(|f| f.start_ms <= to_ms && f.end_ms.is_none_or(|e| e >= from_ms))
        .map(|f| f.label.clone())
        .collect()
}

/// The grants of `events` and how long each held, as of `now_us`.
pub(crate) fn holds(
    events: &[LockEvent],
    now_us: u64,
    quorum: Option<usize>,
) -> Vec<(LockEvent, ObservedHold)> {
    spans(events, now_us, quorum)
        .iter()
        .filter_map(|s| Some((events.get(s.grant)?.clone(), hold(events, s)?)))
        .collect()
}

/// Each grant's span; with a `quorum` (independent masters, RedLock), the spans in which an
/// owner held grants of the key on at least `quorum` masters at once instead (each starts at
/// the grant that made the quorum and ends when one too few masters still hold it, with that
/// grant's end).
fn spans(events: &[LockEvent], now_us: u64, quorum: Option<usize>) -> Vec<Span> {
    let grants = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == LockEventKind::Grant && !e.replica && e.layout.is_lock());
    let Some(q) = quorum else {
        return grants
            .filter_map(|(i, _)| span(events, i, now_us, false))
            .collect();
    };
    let q = q.max(1);
    // (db, key, owner) -> each master's spans.
    let mut by_owner: BTreeMap<(usize, &str, &str), Vec<Span>> = BTreeMap::new();
    for (i, e) in grants {
        if let Some(s) = span(events, i, now_us, true) {
            by_owner
                .entry((e.db, e.key.as_str(), e.owner.as_str()))
                .or_default()
                .push(s);
        }
    }
    let mut out = Vec::new();
    for node_spans in by_owner.values() {
        // Ends sort before starts of the same instant (a re-grant on one master keeps the
        // count).
        let mut points: Vec<((u64, u64), i8, &Span)> = node_spans
            .iter()
            .flat_map(|s| [(s.from, 1, s), (s.to, -1, s)])
            .collect();
        points.sort_by_key(|(at, delta, _)| (*at, *delta));
        let mut count = 0usize;
        let mut open: Option<((u64, u64), usize)> = None;
        for (at, delta, s) in points {
            if delta > 0 {
                count += 1;
                if count == q && open.is_none() {
                    open = Some((at, s.grant));
                }
            } else {
                count = count.saturating_sub(1);
                if count + 1 == q {
                    if let Some((from, grant)) = open.take() {
                        out.push(Span {
                            grant,
                            from,
                            to: at,
                            ended_by: s.ended_by,
                        });
                    }
                }
            }
        }
    }
    out.sort_by_key(|s| (s.from, s.grant));
    out
}

/// Whether, at lost event `events[lost]`, fewer than `quorum` masters still held the owner's
/// grant of the key (a master that lost it since its grant no longer counts).
fn below_quorum(events: &[LockEvent], lost: usize, now_us: u64, quorum: usize) -> bool {
    let Some(e) = events.get(lost) else {
        return false;
    };
    let at = (e.at_us, e.seq);
    let holding = events
        .iter()
        .enumerate()
        .filter(|(_, g)| {
            g.kind == LockEventKind::Grant
                && !g.replica
                && g.db == e.db
                && g.key == e.key
                && g.owner == e.owner
                && (g.at_us, g.seq) <= at
        })
        .filter_map(|(i, _)| span(events, i, now_us, true))
        .filter(|s| s.to >= at)
        .filter(|s| {
            let Some(g) = events.get(s.grant) else {
                return false;
            };
            // Lost on its master since it was granted, at or before this loss.
            !events.iter().any(|l| {
                l.kind == LockEventKind::Lost
                    && l.node == g.node
                    && l.db == g.db
                    && l.key == g.key
                    && l.owner == g.owner
                    && (l.at_us, l.seq) > s.from
                    && (l.at_us, l.seq) <= at
            })
        })
        .count();
    holding < quorum
}

/// The violations in `events` (in observation order) given the topology's `faults`, as of
/// `now_us` on the topology's clock (see the module docs).
pub fn check(events: &[LockEvent], faults: &[FaultRecord], now_us: u64) -> Vec<LockViolation> {
    check_quorum(events, faults, now_us, None)
}

/// [`check`] for a topology of independent masters when `quorum` is given (RedLock): an
/// owner holds the key while it holds grants on at least `quorum` masters, two owners doing
/// so at once are a double grant, and a master losing a grant is a lost grant only when it
/// leaves the owner fewer than `quorum` masters.
pub fn check_quorum(
    events: &[LockEvent],
    faults: &[FaultRecord],
    now_us: u64,
    quorum: Option<usize>,
) -> Vec<LockViolation> {
    let spans = spans(events, now_us, quorum);
    let mut out = Vec::new();
    let mut doubled = BTreeSet::new();
    for (i, a) in spans.iter().enumerate() {
        let Some(ea) = events.get(a.grant) else {
            continue;
        };
        for b in spans.iter().skip(i + 1) {
            let Some(eb) = events.get(b.grant) else {
                continue;
            };
            if ea.db != eb.db || ea.key != eb.key {
                continue;
            }
            if ea.token.is_some() && ea.token == eb.token {
                if let (Some(first), Some(second)) = (hold(events, a), hold(events, b)) {
                    out.push(LockViolation {
                        kind: LockViolationKind::RepeatedToken,
                        key: ea.key.clone(),
                        faults: faults_between(faults, first.from_ms, second.from_ms),
                        from_ms: first.from_ms,
                        to_ms: second.from_ms,
                        first,
                        second: Some(second),
                        actor: None,
                        detail: None,
                    });
                }
            }
            if ea.owner == eb.owner || (ea.shared && eb.shared) || b.from >= a.to {
                continue;
            }
            let end = a.to.min(b.to);
            let overlap = end.0.saturating_sub(b.from.0);
            if a.ended_by == "lease" && overlap < LEASE_SKEW_US {
                continue;
            }
            let (Some(first), Some(second)) = (hold(events, a), hold(events, b)) else {
                continue;
            };
            doubled.insert(a.grant);
            doubled.insert(b.grant);
            out.push(LockViolation {
                kind: LockViolationKind::DoubleGrant,
                key: ea.key.clone(),
                faults: faults_between(faults, first.from_ms, end.0 / 1000),
                from_ms: b.from.0 / 1000,
                to_ms: end.0 / 1000,
                first,
                second: Some(second),
                actor: None,
                detail: None,
            });
        }
    }
    let mut lost = BTreeSet::new();
    // (node, client id) -> the grants its commands wrote, in order.
    let mut granted: BTreeMap<(NodeId, u64), Vec<usize>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        if !e.layout.is_lock() {
            continue;
        }
        let covering = || {
            spans.iter().rev().find(|s| {
                events.get(s.grant).is_some_and(|g| {
                    g.db == e.db && g.key == e.key && g.owner == e.owner && g.seq < e.seq
                }) && s.to >= (e.at_us, e.seq)
            })
        };
        match e.kind {
            LockEventKind::Grant if !e.replica => {
                if let Some(c) = &e.client {
                    granted.entry((e.node, c.id)).or_default().push(i);
                }
            }
            LockEventKind::Lost => {
                let Some(s) = covering() else {
                    continue;
                };
                if quorum.is_some_and(|q| !below_quorum(events, i, now_us, q)) {
                    continue;
                }
                if doubled.contains(&s.grant) || !lost.insert(s.grant) {
                    continue;
                }
                let Some(first) = hold(events, s) else {
                    continue;
                };
                out.push(LockViolation {
                    kind: LockViolationKind::LostGrant,
                    key: e.key.clone(),
                    faults: faults_between(faults, first.from_ms, e.at_ms()),
                    from_ms: e.at_ms(),
                    to_ms: e.at_ms(),
                    first,
                    second: None,
                    actor: None,
                    detail: None,
                });
            }
            LockEventKind::Release | LockEventKind::Renewal if !e.replica => {
                let Some(c) = &e.client else {
                    continue;
                };
                let mine = granted.get(&(e.node, c.id)).map_or(&[][..], Vec::as_slice);
                let of_key: Vec<&LockEvent> = mine
                    .iter()
                    .filter_map(|&g| events.get(g))
                    .filter(|g| g.db == e.db && g.key == e.key)
                    .collect();
                if of_key.is_empty() || of_key.iter().any(|g| g.owner == e.owner) {
                    continue;
                }
                let Some(s) = covering() else {
                    continue;
                };
                let Some(first) = hold(events, s) else {
                    continue;
                };
                let second = of_key.last().and_then(|g| {
                    spans
                        .iter()
                        .find(|s| {
                            s.grant
                                == events
                                    .iter()
                                    .position(|x| x.seq == g.seq)
                                    .unwrap_or(usize::MAX)
                        })
                        .and_then(|s| hold(events, s))
                });
                out.push(LockViolation {
                    kind: if e.kind == LockEventKind::Release {
                        LockViolationKind::ForeignRelease
                    } else {
                        LockViolationKind::ForeignRenewal
                    },
                    key: e.key.clone(),
                    faults: faults_between(faults, first.from_ms, e.at_ms()),
                    from_ms: e.at_ms(),
                    to_ms: e.at_ms(),
                    first,
                    second,
                    actor: Some(c.clone()),
                    detail: None,
                });
            }
            _ => {}
        }
    }
    out.extend(counter_violations(events, faults));
    out.extend(permit_violations(events, faults));
    out.sort_by_key(|v| (v.from_ms, v.kind));
    out
}

/// An instant of one event, as a violation's hold.
fn instant(e: &LockEvent, owner: String) -> ObservedHold {
    ObservedHold {
        owner,
        node: e.node,
        client: e.client.clone(),
        from_ms: e.at_ms(),
        to_ms: e.at_ms(),
        ended_by: "held",
        token: None,
    }
}

/// A violation at one event.
fn at_event(
    kind: LockViolationKind,
    e: &LockEvent,
    first: ObservedHold,
    faults: &[FaultRecord],
    detail: String,
) -> LockViolation {
    LockViolation {
        kind,
        key: e.key.clone(),
        faults: faults_between(faults, first.from_ms, e.at_ms()),
        from_ms: e.at_ms(),
        to_ms: e.at_ms(),
        first,
        second: None,
        actor: e.client.clone(),
        detail: Some(detail),
    }
}

/// Semaphores and latches, from what their clients did on the serving nodes (in order):
///
/// - a semaphore's permits held (taken and not returned) never exceed what it was set to:
///   one `Set` on a new key sets the limit, on an existing one moves it by the difference
///   (`addPermits`, `drainPermits`), a return beyond what is held adds permits, a client's
///   delete starts over. On one node the available permits are always the limit minus what
///   is held, so more held than the limit means a node answered from a state that lost
///   takes (a failover to a lagging replica, a restart);
/// - a latch that reached zero stays open until a new `Set` (`trySetCount`) or a delete: a
///   count-down that finds it above zero, or a serving node that has it above zero again, is
///   a reopening; its key lost above zero opens it early.
fn counter_violations(events: &[LockEvent], faults: &[FaultRecord]) -> Vec<LockViolation> {
    #[derive(Default)]
    struct State {
        latch: bool,
        held: i64,
        limit: i64,
        over: bool,
        /// When it reached zero (ms), while open.
        open_since: Option<u64>,
    }
    let mut states: BTreeMap<(usize, &str), State> = BTreeMap::new();
    for e in events.iter().filter(|e| e.layout == LockLayout::Latch) {
        states.entry((e.db, e.key.as_str())).or_default().latch = true;
    }
    let mut out = Vec::new();
    for e in events
        .iter()
        .filter(|e| !e.replica && e.layout.is_counter())
    {
        let st = states.entry((e.db, e.key.as_str())).or_default();
        match e.kind {
            LockEventKind::Set => {
                st.open_since = None;
                st.limit = match e.previous {
                    Some(p) => st.limit.saturating_add(e.count.saturating_sub(p)),
                    None => e.count,
                };
                st.over = st.held > st.limit;
            }
            LockEventKind::Take => {
                st.held = st.held.saturating_add(e.count);
                if st.held > st.limit && !st.over {
                    out.push(at_event(
                        LockViolationKind::OverLimit,
                        e,
                        instant(e, format!("{} permits taken", e.count)),
                        faults,
                        format!("{} permits held of {}", st.held, st.limit),
                    ));
                }
                st.over = st.held > st.limit;
            }
            LockEventKind::Return => {
                st.held = st.held.saturating_sub(e.count);
                if st.held < 0 {
                    st.limit = st.limit.saturating_sub(st.held);
                    st.held = 0;
                }
                st.over = st.held > st.limit;
            }
            LockEventKind::CountDown | LockEventKind::Revert if st.latch => {
                // A count-down to `count` found `count + 1`; a revert left `count`.
                let above = if e.kind == LockEventKind::CountDown {
                    e.count >= 0
                } else {
                    e.count > 0
                };
                if let (Some(since), true) = (st.open_since, above) {
                    out.push(at_event(
                        LockViolationKind::LatchReopened,
                        e,
                        instant(e, format!("count {}", e.count)),
                        faults,
                        format!("counted {} after reaching zero at {since} ms", e.count),
                    ));
                    st.open_since = None;
                }
                if e.count <= 0 && e.kind == LockEventKind::CountDown {
                    st.open_since = Some(e.at_ms());
                }
            }
            LockEventKind::Release | LockEventKind::Expiry => {
                *st = State {
                    latch: st.latch,
                    // A deleted latch reads as zero: open.
                    open_since: st.latch.then(|| e.at_ms()),
                    ..State::default()
                };
            }
            LockEventKind::Lost if st.latch && e.count > 0 && st.open_since.is_none() => {
                out.push(at_event(
                    LockViolationKind::LatchOpenedEarly,
                    e,
                    instant(e, format!("count {}", e.count)),
                    faults,
                    format!("lost at count {}", e.count),
                ));
                st.open_since = Some(e.at_ms());
            }
            _ => {}
        }
    }
    out
}

/// Permit ids of permit-expirable semaphores: an id granted again while its earlier grant
/// held (not released, expired or lost, its lease not over), or permits taken with no new id
/// (the id's `ZADD` changed nothing), took permits twice for one id.
fn permit_violations(events: &[LockEvent], faults: &[FaultRecord]) -> Vec<LockViolation> {
    // (db, key, id) -> the grant that holds and its lease end (µs).
    let mut held: BTreeMap<(usize, &str, &str), (&LockEvent, u64)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events
        .iter()
        .filter(|e| !e.replica && e.layout == LockLayout::Permits)
    {
        let id = (e.db, e.key.as_str(), e.owner.as_str());
        let end = e.lease_end_us.unwrap_or(u64::MAX);
        match e.kind {
            LockEventKind::Grant => {
                if let Some((first, until)) = held.get(&id) {
                    if *until > e.at_us {
                        let mut v = at_event(
                            LockViolationKind::PermitGrantedTwice,
                            e,
                            instant(first, first.owner.clone()),
                            faults,
                            format!("permit id {} granted again", e.owner),
                        );
                        v.faults = faults_between(faults, first.at_ms(), e.at_ms());
                        v.second = Some(instant(e, e.owner.clone()));
                        out.push(v);
                    }
                }
                held.insert(id, (e, end));
            }
            LockEventKind::Renewal => {
                if let Some(h) = held.get_mut(&id) {
                    h.1 = end;
                }
            }
            LockEventKind::Take => out.push(at_event(
                LockViolationKind::PermitGrantedTwice,
                e,
                instant(e, format!("{} permits taken", e.count)),
                faults,
                format!(
                    "{} permits taken with no new permit id: an acquire of an id already held",
                    e.count
                ),
            )),
            LockEventKind::Release | LockEventKind::Expiry | LockEventKind::Lost => {
                held.remove(&id);
            }
            _ => {}
        }
    }
    out
}

/// `LOCKSMITH.HISTORY`'s JSON: the faults, the marks, every observed event and the
/// violations.
pub(crate) fn history_json(
    events: &[LockEvent],
    faults: &[FaultRecord],
    marks: &[Mark],
    violations: &[LockViolation],
) -> String {
    use serde_json::{json, Value};
    let client = |c: &Option<ObservedClient>| match c {
        Some(c) => json!({"id": c.id, "name": c.name, "addr": c.addr}),
        None => Value::Null,
    };
    let hold = |h: &ObservedHold| {
        json!({
            "owner": h.owner, "node": h.node.to_string(), "client": client(&h.client),
            "from_ms": h.from_ms, "to_ms": h.to_ms, "ended_by": h.ended_by, "token": h.token,
        })
    };
    let doc = json!({
        "faults": faults.iter().map(|f| json!({
            "label": f.label, "start_ms": f.start_ms, "end_ms": f.end_ms,
        })).collect::<Vec<_>>(),
        "marks": marks.iter().map(|m| json!({"at_ms": m.at_ms, "text": m.text})).collect::<Vec<_>>(),
        "events": events.iter().map(|e| json!({
            "seq": e.seq, "at_ms": e.at_ms(), "at_us": e.at_us, "node": e.node.to_string(),
            "replica": e.replica, "db": e.db, "key": e.key, "owner": e.owner,
            "kind": e.kind.name(), "layout": e.layout.name(), "shared": e.shared,
            "count": e.count, "lease_end_ms": e.lease_end_us.map(|u| u / 1000),
            "token": e.token, "client": client(&e.client),
        })).collect::<Vec<_>>(),
        "violations": violations.iter().map(|v| json!({
            "kind": v.kind.name(), "key": v.key, "first": hold(&v.first),
            "second": v.second.as_ref().map(hold), "from_ms": v.from_ms, "to_ms": v.to_ms,
            "actor": client(&v.actor), "faults": v.faults,
        })).collect::<Vec<_>>(),
    });
    doc.to_string()
}

/// A [`History`] of the observed grants, for the [`super::Timeline`]: one row per owner (a
/// hold from each grant to its end), the topology's faults, and each mark as an instant
/// labelled `mark: text`.
pub(crate) fn as_history(
    clock: &History,
    events: &[LockEvent],
    faults: &[FaultRecord],
    marks: &[Mark],
    now_us: u64,
    quorum: Option<usize>,
) -> History {
    use super::history::{Event, EventKind};
    let history = clock.empty_like();
    for f in faults {
        history.push_fault(f.clone());
    }
    for m in marks {
        history.push_fault(FaultRecord {
            label: format!("mark: {}", m.text),
            start_ms: m.at_ms,
            end_ms: Some(m.at_ms),
        });
    }
    for (grant, h) in holds(events, now_us, quorum) {
        let token = grant.token.and_then(|t| u64::try_from(t).ok());
        let kind = if grant.shared {
            EventKind::AcquiredShared
        } else {
            EventKind::Acquired
        };
        history.record(Event::new(
            &h.owner, &grant.key, kind, h.from_ms, h.from_ms, token,
        ));
        let end = match h.ended_by {
            "held" => continue,
            "release" | "regrant" => EventKind::Released,
            _ => EventKind::Lost,
        };
        history.record(Event::new(
            &h.owner, &grant.key, end, h.to_ms, h.to_ms, None,
        ));
    }
    history
}
