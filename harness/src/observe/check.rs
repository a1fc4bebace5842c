//! The checks on the observed events: each grant's span, the quorum of independent masters,
//! double grants, lost grants, foreign releases, repeated tokens, counters and permit ids.

use super::{LockEvent, LockEventKind, LockLayout, LockViolation, LockViolationKind, ObservedHold};
use crate::history::FaultRecord;
use crate::NodeId;
use std::collections::{BTreeMap, BTreeSet};

/// A grant and how long it held, in µs and observation order.
#[derive(Debug, Clone)]
pub(super) struct Span {
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
pub(super) fn span(events: &[LockEvent], g: usize, now_us: u64, per_node: bool) -> Option<Span> {
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

pub(super) fn hold(events: &[LockEvent], s: &Span) -> Option<ObservedHold> {
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
pub(super) const LEASE_SKEW_US: u64 = 1000;

/// The labels of the faults in effect at some time of `[from_ms, to_ms]`.
pub(super) fn faults_between(faults: &[FaultRecord], from_ms: u64, to_ms: u64) -> Vec<String> {
    faults
        .iter()
        .filter(|f| f.start_ms <= to_ms && f.end_ms.is_none_or(|e| e >= from_ms))
        .map(FaultRecord::label)
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
pub(super) fn spans(events: &[LockEvent], now_us: u64, quorum: Option<usize>) -> Vec<Span> {
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
pub(super) fn below_quorum(events: &[LockEvent], lost: usize, now_us: u64, quorum: usize) -> bool {
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
pub(super) fn instant(e: &LockEvent, owner: String) -> ObservedHold {
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
pub(super) fn at_event(
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
pub(super) fn counter_violations(
    events: &[LockEvent],
    faults: &[FaultRecord],
) -> Vec<LockViolation> {
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
pub(super) fn permit_violations(
    events: &[LockEvent],
    faults: &[FaultRecord],
) -> Vec<LockViolation> {
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
