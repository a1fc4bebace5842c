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
//! Redisson's helper keys (`redisson_*`: the unlock latch, the fair lock's queue and timeout
//! set, channels; `…:rwlock_timeout:…`) are not locks and are skipped whatever the pattern.
//! A fenced lock's token (an `INCR` in the unit that grants) is the grant's fencing token.
//!
//! A grant holds from its write until its release (on any node, by its owner), its expiry on
//! the node that granted it, or the end of its lease (the lease it was written with, moved by
//! each renewal), whichever comes first. [`check`] reports two owners holding grants of a key
//! at the same instant, a grant the serving node lost (a failover to a replica that had not
//! received it, a restart, an eviction), a release or renewal accepted from a client that did
//! not hold the lock, and fencing tokens handed out twice.

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
}

impl LockLayout {
    /// The layout as `LOCKSMITH.LOCKS` and `LOCKSMITH.HISTORY` name it.
    pub fn name(self) -> &'static str {
        match self {
            LockLayout::Hash => "hash",
            LockLayout::String => "string",
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
}

impl Entry {
    fn shared(&self) -> bool {
        self.mode.as_deref() == Some(b"read")
    }
}

/// A node's locks: (db, key) -> entry.
pub(crate) type Table = BTreeMap<(usize, Bytes), Entry>;

#[derive(Debug, Default)]
struct Log {
    events: Vec<LockEvent>,
    marks: Vec<Mark>,
    tables: BTreeMap<usize, Table>,
    /// Each node's table after each unit that changed it, as far back as the keep-data
    /// window (what a node restarted with its data comes back with).
    past: BTreeMap<usize, VecDeque<(Instant, Table)>>,
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
    /// Observed key patterns; `None`: off.
    patterns: Mutex<Option<Vec<Bytes>>>,
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
struct Unit<'a> {
    node: usize,
    at_us: u64,
    /// The node's clock, µs and ms, when it was observed.
    node_us: u64,
    replica: bool,
    client: &'a Option<ObservedClient>,
    /// Events of this unit (a `PEXPIRE` after a grant sets the grant's lease).
    events: Vec<LockEvent>,
    /// The last counter value an `INCR` gave in this unit.
    token: Option<i64>,
}

impl Unit<'_> {
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
            client: self.client.clone(),
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
    pub(crate) fn new(history: History, window: Duration) -> Self {
        Observer {
            history,
            window,
            patterns: Mutex::new(None),
            log: Mutex::new(Log::default()),
        }
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The observed patterns (`None`: off).
    pub(crate) fn patterns(&self) -> Option<Vec<Bytes>> {
        self.patterns.lock().ok().and_then(|p| p.clone())
    }

    /// Sets the observed patterns (`None`: off); an empty list observes every key.
    pub(crate) fn set_patterns(&self, patterns: Option<Vec<Bytes>>) {
        if let Ok(mut p) = self.patterns.lock() {
            *p = patterns.map(|v| {
                if v.is_empty() {
                    vec![Bytes::from_static(b"*")]
                } else {
                    v
                }
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
        let Some(patterns) = self.patterns() else {
            return;
        };
        let at_us = self.history.now_us();
        let node_us = clock.now_us();
        let mut unit = Unit {
            node,
            at_us,
            node_us,
            replica: writes.replica,
            client: &writes.client,
            events: Vec::new(),
            token: None,
        };
        let mut guard = self.log();
        let log = &mut *guard;
        let table = log.tables.entry(node).or_default();
        let counters = log.counters.entry(node).or_default();
        for (db, argv) in writes.writes {
            self.write(&patterns, &mut unit, table, counters, *db, argv);
        }
        if !self.window.is_zero() && !unit.events.is_empty() {
            let now = Instant::now();
            let copy = table.clone();
            let past = log.past.entry(node).or_default();
            past.push_back((now, copy));
            // Keep the newest table at least `window` old and everything after it.
            if let Some(horizon) = now.checked_sub(self.window) {
                while past.get(1).is_some_and(|(at, _)| *at <= horizon) {
                    past.pop_front();
                }
            }
        }
        let token = unit.token;
        for mut e in unit.events {
            if e.kind == LockEventKind::Grant {
                e.token = token;
            }
            e.seq = log.next_seq;
            log.next_seq += 1;
            log.events.push(e);
        }
    }

    /// One write of a unit.
    fn write(
        &self,
        patterns: &[Bytes],
        unit: &mut Unit<'_>,
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
                    });
                    if entry.layout != LockLayout::Hash {
                        *entry = Entry {
                            layout: LockLayout::Hash,
                            owners: BTreeMap::new(),
                            mode: None,
                            deadline_ms: None,
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
        unit: &mut Unit<'_>,
        table: &mut Table,
        db: usize,
        key: &Bytes,
        now_ms: u64,
    ) {
        if !self.observed(patterns, key) {
            return;
        }
        let Some(entry) = table.remove(&(db, key.clone())) else {
            return;
        };
        let expired = entry.deadline_ms.is_some_and(|d| d <= now_ms);
        let kind = if expired {
            LockEventKind::Expiry
        } else if unit.client.is_none() && !unit.replica {
            // The node removed it itself before its deadline: eviction.
            LockEventKind::Lost
        } else {
            LockEventKind::Release
        };
        for owner in entry.owners.keys() {
            unit.push(db, key, owner, kind, &entry, 0);
        }
    }

    /// Node `replica` got a full copy of node `master`'s dataset.
    pub(crate) fn synced(&self, master: usize, replica: usize) {
        let mut log = self.log();
        let table = log.tables.get(&master).cloned().unwrap_or_default();
        log.tables.insert(replica, table);
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
        let table = log
            .past
            .get(&node)
            .and_then(|past| past.iter().rev().find(|(at, _)| *at <= cutoff))
            .map(|(_, t)| t.clone())
            .unwrap_or_default();
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
        for ((db, key), entry) in before {
            if entry.deadline_ms.is_some_and(|d| d <= now_ms) {
                continue;
            }
            for owner in entry.owners.keys() {
                let kept = after
                    .get(&(*db, key.clone()))
                    .is_some_and(|e| e.owners.get(owner).is_some_and(|c| *c > 0));
                if kept {
                    continue;
                }
                let seq = log.next_seq;
                log.next_seq += 1;
                log.events.push(LockEvent {
                    seq,
                    at_us,
                    node: NodeId(now_serving),
                    replica: false,
                    db: *db,
                    key: text(key),
                    owner: text(owner),
                    kind: LockEventKind::Lost,
                    layout: entry.layout,
                    shared: entry.shared(),
                    count: 0,
                    lease_end_us: None,
                    token: None,
                    client: None,
                });
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
                out.push(HeldLock {
                    node: NodeId(node),
                    db,
                    key: text(&key),
                    owner: text(owner),
                    count: *count,
                    layout: entry.layout,
                    shared: entry.shared(),
                    pttl_ms: entry.deadline_ms.map(|d| d.saturating_sub(now_ms)),
                });
            }
        }
        out
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
fn span(events: &[LockEvent], g: usize, now_us: u64) -> Option<Span> {
    let grant = events.get(g)?;
    let mut lease = grant.lease_end_us.unwrap_or(u64::MAX);
    for e in events.iter().skip(g + 1) {
        if e.db != grant.db || e.key != grant.key || e.owner != grant.owner {
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
pub(crate) fn holds(events: &[LockEvent], now_us: u64) -> Vec<(LockEvent, ObservedHold)> {
    spans(events, now_us)
        .iter()
        .filter_map(|s| Some((events.get(s.grant)?.clone(), hold(events, s)?)))
        .collect()
}

fn spans(events: &[LockEvent], now_us: u64) -> Vec<Span> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == LockEventKind::Grant && !e.replica)
        .filter_map(|(i, _)| span(events, i, now_us))
        .collect()
}

/// The violations in `events` (in observation order) given the topology's `faults`, as of
/// `now_us` on the topology's clock (see the module docs).
pub fn check(events: &[LockEvent], faults: &[FaultRecord], now_us: u64) -> Vec<LockViolation> {
    let spans = spans(events, now_us);
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
            });
        }
    }
    let mut lost = BTreeSet::new();
    // (node, client id) -> the grants its commands wrote, in order.
    let mut granted: BTreeMap<(NodeId, u64), Vec<usize>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
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
                });
            }
            _ => {}
        }
    }
    out.sort_by_key(|v| (v.from_ms, v.kind));
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
    for (grant, h) in holds(events, now_us) {
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
