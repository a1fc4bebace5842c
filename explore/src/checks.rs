//! The explorer's own checks on top of the harness's: acquires refused while the lock (or a
//! permit) was free, more permit holders than permits, and the fault windows that excuse a
//! call's failure.

pub(crate) use locksmith_harness::longest_clear;
use locksmith_harness::{Checker, Event, EventKind, FaultRecord, History, Hold, LivenessIssue};

/// When faults were in effect, each extended by `grace` ms after it ended (the harness's
/// [`locksmith_harness::fault_windows`], the rule of its liveness checks). With `links_only`,
/// faults that leave the clients' links to the master alone (replication delays and stalls:
/// they only make `WAIT` answer short or late) are left out.
pub(crate) fn fault_windows(
    faults: &[FaultRecord],
    grace: u64,
    links_only: bool,
) -> Vec<(u64, u64)> {
    let kept: Vec<FaultRecord> = faults
        .iter()
        .filter(|f| !(links_only && f.fault.replication_only()))
        .cloned()
        .collect();
    locksmith_harness::fault_windows(&kept, grace)
}

/// Whether `[from, to]` meets a window.
pub(crate) fn in_window(windows: &[(u64, u64)], from: u64, to: u64) -> bool {
    windows.iter().any(|&(s, e)| from <= e && s <= to)
}

/// Whether the run had a fault after which Redis may have forgotten writes (a kill, a failed
/// master, a restart): counts kept in Redis are not expected to add up after one.
pub(crate) fn lost_data(faults: &[FaultRecord]) -> bool {
    faults
        .iter()
        .any(|f| f.fault.crashed().is_some() || f.fault.restarted().is_some())
}

/// The busy spans of `resource`: each hold from the start of its acquire (a call that got the
/// lock may have held it on the server any time during the call: a `WAIT`-synced acquire
/// holds it while it waits for the replicas) to its release; a hold that ended in a loss (or
/// in a release that failed: it may not have run) counts until the next acquire of anyone
/// (when its key expired is not known).
fn busy_spans(events: &[Event], holds: &[Hold], resource: &str) -> Vec<(u64, u64)> {
    let mine: Vec<&Hold> = holds.iter().filter(|h| h.resource == resource).collect();
    let started = |h: &Hold| {
        events
            .iter()
            .find(|e| e.seq == h.from_seq)
            .map_or(h.from_ms, |e| e.start_ms)
    };
    mine.iter()
        .map(|h| {
            let to = if h.lost {
                mine.iter()
                    .map(|g| g.from_ms)
                    .filter(|&f| f >= h.to_ms)
                    .min()
                    .unwrap_or(u64::MAX)
            } else {
                h.to_ms
            };
            (started(h), to.max(h.from_ms))
        })
        .collect()
}

/// Acquires that were refused although fewer than `capacity` clients held the resource (for
/// a lock: nobody held it) for `bound` ms or more of their wait, outside every fault window
/// (`windows`): each is a [`LivenessIssue::LostWakeUp`]. The harness's check counts free
/// stretches that begin with a release during the wait; this one also counts a lock that
/// was already free when the acquire began (a hold left behind by a failed call, a guard
/// whose release never ran).
pub(crate) fn refused_while_free(
    history: &History,
    windows: &[(u64, u64)],
    capacity: usize,
    bound: u64,
) -> Vec<LivenessIssue> {
    let holds = Checker::holds(history);
    let events = history.events();
    let mut out = Vec::new();
    for e in &events {
        if e.kind != EventKind::AcquireFailed {
            continue;
        }
        let spans = busy_spans(&events, &holds, &e.resource);
        // Cut the wait at every change of the number of holders.
        let mut cuts: Vec<u64> = spans
            .iter()
            .flat_map(|&(s, t)| [s, t])
            .filter(|&t| t > e.start_ms && t < e.end_ms)
            .chain([e.start_ms, e.end_ms])
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut free_from: Option<u64> = None;
        for pair in cuts.windows(2) {
            let (s, t) = (pair[0], pair[1]);
            let holders = spans.iter().filter(|&&(a, b)| a <= s && b > s).count();
            if holders < capacity {
                let from = *free_from.get_or_insert(s);
                if longest_clear(from, t, windows) >= bound {
                    out.push(LivenessIssue::LostWakeUp {
                        client: e.client.clone(),
                        resource: e.resource.clone(),
                        free_from_ms: from,
                        still_waiting_ms: e.end_ms,
                    });
                    break;
                }
            } else {
                free_from = None;
            }
        }
    }
    out
}

/// The moments more than `permits` clients held a resource at once, as findings.
pub(crate) fn over_admissions(history: &History, permits: usize) -> Vec<String> {
    let holds = Checker::holds(history);
    let mut out = Vec::new();
    for h in &holds {
        let at = (h.from_ms, h.from_seq);
        let holders: Vec<&str> = holds
            .iter()
            .filter(|g| g.resource == h.resource)
            .filter(|g| (g.from_ms, g.from_seq) <= at && at < (g.to_ms, g.to_seq))
            .map(|g| g.client.as_str())
            .collect();
        if holders.len() > permits {
            out.push(format!(
                "{}: {} held a permit at {} ms with {} (more holders than its {permits} permits)",
                h.resource,
                h.client,
                h.from_ms,
                holders.join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksmith_harness::{Fault, NodeId, Restart};

    fn ev(client: &str, kind: EventKind, start: u64, end: u64) -> Event {
        Event::new(client, "r", kind, start, end, None)
    }

    #[test]
    fn a_refusal_while_the_lock_was_free_from_the_start_is_found() {
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 0));
        h.record(ev("a", EventKind::Released, 100, 100));
        // b starts after the release: the harness's wake-up check needs a release inside
        // the wait, this one does not.
        h.record(ev("b", EventKind::AcquireFailed, 200, 2200));
        let found = refused_while_free(&h, &[], 1, 200);
        assert_eq!(
            found,
            vec![LivenessIssue::LostWakeUp {
                client: "b".into(),
                resource: "r".into(),
                free_from_ms: 200,
                still_waiting_ms: 2200,
            }]
        );
        // Inside a fault window it is excused; a short free stretch is not a finding.
        assert!(refused_while_free(&h, &[(0, 3000)], 1, 200).is_empty());
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 0));
        h.record(ev("a", EventKind::Released, 2050, 2050));
        h.record(ev("b", EventKind::AcquireFailed, 100, 2100));
        assert!(refused_while_free(&h, &[], 1, 200).is_empty());
    }

    #[test]
    fn an_acquire_that_got_the_lock_counts_as_holding_it_from_its_start() {
        // c's acquire ran 100..2000 (waiting for replicas): the lock may have been c's on
        // the server all along, so b's refusal is not a finding.
        let h = History::new();
        h.record(ev("c", EventKind::Acquired, 100, 2000));
        h.record(ev("b", EventKind::AcquireFailed, 200, 2200));
        assert!(refused_while_free(&h, &[], 1, 200).is_empty());
    }

    #[test]
    fn a_lost_hold_counts_as_held_until_the_next_acquire() {
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 0));
        h.record(ev("a", EventKind::Lost, 100, 100));
        h.record(ev("b", EventKind::AcquireFailed, 200, 2200));
        assert!(refused_while_free(&h, &[], 1, 200).is_empty());
    }

    #[test]
    fn permits_count_holders_up_to_the_capacity() {
        let h = History::new();
        h.record(ev("a", EventKind::AcquiredShared, 0, 0));
        h.record(ev("b", EventKind::AcquiredShared, 10, 10));
        h.record(ev("c", EventKind::AcquireFailed, 20, 2020));
        // Two permits, two holders for the whole wait: not free.
        assert!(refused_while_free(&h, &[], 2, 200).is_empty());
        assert!(over_admissions(&h, 2).is_empty());
        // Three permits: one was free all along.
        assert_eq!(refused_while_free(&h, &[], 3, 200).len(), 1);
        h.record(ev("c", EventKind::AcquiredShared, 30, 30));
        assert_eq!(over_admissions(&h, 2).len(), 1);
    }

    #[test]
    fn windows_of_a_crash_last_until_the_restart_and_replication_faults_spare_links() {
        let h = History::new();
        let n0 = NodeId::from_index(0);
        h.fault(Fault::Kill(n0));
        let stall = h.fault(Fault::ReplicationStall);
        h.fault_ended(stall);
        h.fault(Fault::Restart(n0, Restart::Empty));
        let faults = h.faults();
        let all = fault_windows(&faults, 100, false);
        assert_eq!(all.len(), 3);
        assert_eq!(fault_windows(&faults, 100, true).len(), 2);
        assert!(lost_data(&faults));
    }
}
