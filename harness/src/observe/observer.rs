//! The observer's bookkeeping: the observed patterns, each unit of writes a node reports, and
//! each node's table as replication, restarts and failovers change it.

use super::recognise::{took_without_id, NO_LEASE_DATE};
use super::{
    helper_key, remember, text, touched, Entry, HeldLock, LockEvent, LockEventKind, LockLayout,
    Log, Mark, NodeObserver, Observer, Table, Undo, Unit,
};
use crate::history::History;
use crate::NodeId;
use bytes::Bytes;
use locksmith_server::control::ObservedWrites;
use locksmith_server::{glob_match, Clock};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

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

    pub(super) fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The observed patterns (`None`: off).
    pub(crate) fn patterns(&self) -> Option<Vec<Bytes>> {
        self.shared_patterns().map(|p| p.as_ref().clone())
    }

    pub(super) fn shared_patterns(&self) -> Option<Arc<Vec<Bytes>>> {
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

    pub(super) fn observed(&self, patterns: &[Bytes], key: &[u8]) -> bool {
        !helper_key(key) && patterns.iter().any(|p| glob_match(p, key, false))
    }

    /// Applies one unit of node `node`'s writes.
    pub(super) fn apply(&self, node: usize, clock: &Clock, writes: &ObservedWrites<'_>) {
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
    pub(super) fn table(&self, node: usize) -> Table {
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
