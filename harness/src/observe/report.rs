//! What the observation reports: `LOCKSMITH.HISTORY`'s JSON and the timeline's history.

use super::check::holds;
use super::{LockEvent, LockViolation, Mark, ObservedHold};
use crate::history::{FaultRecord, History};
use locksmith_server::control::ObservedClient;

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
            "label": f.label(), "start_ms": f.start_ms, "end_ms": f.end_ms,
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
    use crate::history::{Event, EventKind};
    let history = clock.empty_like();
    for f in faults {
        history.push_fault(f.clone());
    }
    for m in marks {
        history.push_fault(FaultRecord {
            fault: crate::Fault::Note(format!("mark: {}", m.text)),
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
