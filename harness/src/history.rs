//! What clients observed, and the checker that finds mutual-exclusion violations in it.
//!
//! A [`History`] records lock operations (acquire ok/failed, release, lost, resource writes),
//! each with the start and end time on the topology's clock (milliseconds since the topology
//! started, tokio time, so virtual time works) and the fencing token it carried; the topology
//! records every fault into the same history. [`Checker::check`] turns acquires and releases
//! into holds — from the moment an acquire *returned* ok until the release was *sent* (or the
//! loss was noticed, or the end of the history) — and reports every pair of holders of the same
//! resource whose holds overlap.

use crate::Fault;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// What a recorded operation did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventKind {
    /// An acquire that succeeded: the client holds the lock from the end of the operation.
    Acquired,
    /// An acquire that did not get the lock.
    AcquireFailed,
    /// A release (the hold ends when the release starts).
    Released,
    /// The client learnt it lost the lock (watchdog renewal failed, key gone).
    Lost,
    /// A write to the protected resource, accepted or rejected (fencing).
    Write {
        /// Whether the resource accepted it.
        accepted: bool,
    },
    /// An acquire of a shared hold (a read lock, a semaphore permit): shared holds of a
    /// resource do not exclude each other, only exclusive ones.
    AcquiredShared,
    /// An unlock sent by a client that did not hold the lock (a deliberate probe of the
    /// library), accepted or refused by the server.
    ForeignRelease {
        /// Whether the unlock was accepted (the lock was released or its count lowered).
        accepted: bool,
    },
}

/// One recorded operation (a plain data record).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Event {
    /// Who did it.
    pub client: String,
    /// Which lock or resource.
    pub resource: String,
    /// What happened.
    pub kind: EventKind,
    /// When the operation started (ms on the topology clock).
    pub start_ms: u64,
    /// When it ended.
    pub end_ms: u64,
    /// The fencing token it carried, if any.
    pub token: Option<u64>,
    /// Recording order (set by [`History::record`]): orders events that share a millisecond,
    /// as they do under virtual time.
    pub seq: u64,
    /// Where the operation's start falls in the same order: taken by [`History::begin`], or
    /// equal to `seq` for an event recorded whole. A release that started before an acquire
    /// completed is a hand-over even when both end in the same millisecond.
    pub start_seq: u64,
}

impl Event {
    /// An event to [`History::record`] (its `seq` is assigned when recorded).
    pub fn new(
        client: impl Into<String>,
        resource: impl Into<String>,
        kind: EventKind,
        start_ms: u64,
        end_ms: u64,
        token: Option<u64>,
    ) -> Self {
        Event {
            client: client.into(),
            resource: resource.into(),
            kind,
            start_ms,
            end_ms,
            token,
            seq: 0,
            start_seq: 0,
        }
    }
}

/// A fault as the topology applied it (a plain data record).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FaultRecord {
    /// What was done (its label, e.g. `fail_master n0 -> n1`, is its `Display`).
    pub fault: Fault,
    /// When it took effect (ms on the topology clock).
    pub start_ms: u64,
    /// When it was undone (`None`: permanent or still active).
    pub end_ms: Option<u64>,
}

impl FaultRecord {
    /// The fault's label (`fail_master n0 -> n1`), as histories and timelines show it.
    pub fn label(&self) -> String {
        self.fault.to_string()
    }
}

#[derive(Debug, Default)]
struct Log {
    events: Vec<Event>,
    faults: Vec<FaultRecord>,
    /// The next sequence number (shared by begins and records).
    next_seq: u64,
}

impl Log {
    fn ticket(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }
}

/// A shared, cloneable record of what clients observed and which faults were applied.
///
/// ```
/// use locksmith_harness::{Checker, History};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let history = History::new();
/// let a = history.begin("a", "lock");
/// a.acquired(Some(1));
/// let b = history.begin("b", "lock");
/// b.acquired(Some(2));
/// let violations = Checker::check(&history);
/// assert_eq!(violations.len(), 1);
/// assert_eq!(violations[0].fencing_rejects_stale, Some(true));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct History {
    origin: Instant,
    log: Arc<Mutex<Log>>,
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

impl History {
    /// An empty history whose clock starts now.
    pub fn new() -> Self {
        History {
            origin: Instant::now(),
            log: Arc::default(),
        }
    }

    /// Milliseconds since the history (topology) started.
    pub fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    /// Microseconds since the history (topology) started.
    pub fn now_us(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// An empty history on the same clock (the same start).
    pub(crate) fn empty_like(&self) -> History {
        History {
            origin: self.origin,
            log: Arc::default(),
        }
    }

    /// Records a fault with its own times.
    pub(crate) fn push_fault(&self, fault: FaultRecord) {
        if let Ok(mut log) = self.log.lock() {
            log.faults.push(fault);
        }
    }

    /// Starts an operation by `client` on `resource`; finish it with one of [`Pending`]'s
    /// methods, which records it with both times.
    pub fn begin(&self, client: impl Into<String>, resource: impl Into<String>) -> Pending {
        let start_seq = self.log.lock().map(|mut log| log.ticket()).unwrap_or(0);
        Pending {
            history: self.clone(),
            client: client.into(),
            resource: resource.into(),
            start_ms: self.now_ms(),
            start_seq,
        }
    }

    /// Records a complete event (its `seq` and `start_seq` are assigned here).
    pub fn record(&self, event: Event) {
        self.record_from(event, None);
    }

    fn record_from(&self, mut event: Event, start_seq: Option<u64>) {
        if let Ok(mut log) = self.log.lock() {
            event.seq = log.ticket();
            event.start_seq = start_seq.unwrap_or(event.seq);
            log.events.push(event);
        }
    }

    /// Records a fault taking effect now; returns its index for [`History::fault_ended`].
    /// A test's own words go in as [`Fault::Note`].
    pub fn fault(&self, fault: Fault) -> usize {
        let start_ms = self.now_ms();
        self.log
            .lock()
            .map(|mut log| {
                log.faults.push(FaultRecord {
                    fault,
                    start_ms,
                    end_ms: None,
                });
                log.faults.len() - 1
            })
            .unwrap_or(0)
    }

    /// Marks fault `index` as undone now.
    pub fn fault_ended(&self, index: usize) {
        let now = self.now_ms();
        if let Ok(mut log) = self.log.lock() {
            if let Some(f) = log.faults.get_mut(index) {
                f.end_ms.get_or_insert(now);
            }
        }
    }

    /// Every recorded event, in recording order.
    pub fn events(&self) -> Vec<Event> {
        self.log
            .lock()
            .map(|l| l.events.clone())
            .unwrap_or_default()
    }

    /// Every recorded fault, in order.
    pub fn faults(&self) -> Vec<FaultRecord> {
        self.log
            .lock()
            .map(|l| l.faults.clone())
            .unwrap_or_default()
    }

    /// The whole history as text, one line per fault then one per event in recording order,
    /// every field written (strings quoted and escaped): two runs that did the same thing at
    /// the same (virtual) times serialise to the same bytes, so comparing them checks that a
    /// seeded run replays exactly.
    ///
    /// ```
    /// use locksmith_harness::{Fault, History, NodeId};
    /// use std::time::Duration;
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// let history = History::new();
    /// history.fault(Fault::Pause(NodeId::from_index(0), Duration::from_millis(100)));
    /// history.begin("a", "lock").acquired(Some(1));
    /// assert_eq!(
    ///     history.serialize(),
    ///     "fault 0 - \"pause n0 100 ms\"\nevent 1 0 0 0 \"a\" \"lock\" acquired 1\n"
    /// );
    /// # }
    /// ```
    pub fn serialize(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for f in self.faults() {
            let end = f.end_ms.map_or_else(|| "-".to_string(), |e| e.to_string());
            let _ = writeln!(out, "fault {} {end} {:?}", f.start_ms, f.label());
        }
        for e in self.events() {
            let kind = match e.kind {
                EventKind::Acquired => "acquired",
                EventKind::AcquireFailed => "acquire-failed",
                EventKind::Released => "released",
                EventKind::Lost => "lost",
                EventKind::Write { accepted: true } => "write-accepted",
                EventKind::Write { accepted: false } => "write-rejected",
                EventKind::AcquiredShared => "acquired-shared",
                EventKind::ForeignRelease { accepted: true } => "foreign-release-accepted",
                EventKind::ForeignRelease { accepted: false } => "foreign-release-refused",
            };
            let token = e.token.map_or_else(|| "-".to_string(), |t| t.to_string());
            let _ = writeln!(
                out,
                "event {} {} {} {} {:?} {:?} {kind} {token}",
                e.seq, e.start_seq, e.start_ms, e.end_ms, e.client, e.resource
            );
        }
        out
    }
}

/// An operation begun with [`History::begin`], recorded when finished.
#[derive(Debug)]
#[must_use = "an operation is recorded only when finished"]
pub struct Pending {
    history: History,
    client: String,
    resource: String,
    start_ms: u64,
    start_seq: u64,
}

impl Pending {
    fn finish(self, kind: EventKind, token: Option<u64>) {
        let end_ms = self.history.now_ms();
        self.history.record_from(
            Event {
                client: self.client,
                resource: self.resource,
                kind,
                start_ms: self.start_ms,
                end_ms,
                token,
                seq: 0,
                start_seq: 0,
            },
            Some(self.start_seq),
        );
    }

    /// The acquire succeeded (with its fencing token, if any).
    pub fn acquired(self, token: Option<u64>) {
        self.finish(EventKind::Acquired, token);
    }

    /// The acquire failed.
    pub fn failed(self) {
        self.finish(EventKind::AcquireFailed, None);
    }

    /// The lock was released.
    pub fn released(self) {
        self.finish(EventKind::Released, None);
    }

    /// The client learnt it lost the lock.
    pub fn lost(self) {
        self.finish(EventKind::Lost, None);
    }

    /// A write to the resource with `token`, accepted or rejected.
    pub fn wrote(self, token: Option<u64>, accepted: bool) {
        self.finish(EventKind::Write { accepted }, token);
    }

    /// A shared acquire (read lock, permit) succeeded.
    pub fn acquired_shared(self, token: Option<u64>) {
        self.finish(EventKind::AcquiredShared, token);
    }

    /// An unlock by a client that did not hold the lock was accepted or refused.
    pub fn foreign_release(self, accepted: bool) {
        self.finish(EventKind::ForeignRelease { accepted }, None);
    }
}

/// One client's uninterrupted hold of a resource (a plain data record).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hold {
    /// The holder.
    pub client: String,
    /// The resource.
    pub resource: String,
    /// When the acquire returned ok.
    pub from_ms: u64,
    /// When the release started or the loss was noticed (or the end of the history).
    pub to_ms: u64,
    /// Whether the hold was still open at the end of the history.
    pub open: bool,
    /// The fencing token of the acquire.
    pub token: Option<u64>,
    /// Recording order of the acquire (breaks ties between equal times).
    pub from_seq: u64,
    /// Order of the start of the release or loss (`u64::MAX` while open).
    pub to_seq: u64,
    /// A shared hold (read lock, permit): it conflicts only with exclusive ones.
    pub shared: bool,
    /// Whether the hold ended because the holder learnt it lost the lock.
    pub lost: bool,
}

/// Two holders of the same resource at the same time (a plain data record).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Violation {
    /// The resource.
    pub resource: String,
    /// The holder that acquired first (the stale one once the second acquired).
    pub first: Hold,
    /// The holder that acquired while the first still held.
    pub second: Hold,
    /// Start of the overlap (ms).
    pub overlap_from_ms: u64,
    /// End of the overlap (ms).
    pub overlap_to_ms: u64,
    /// Faults in effect or applied between the first acquire and the end of the overlap.
    pub faults: Vec<String>,
    /// Whether a resource checking fencing tokens would have rejected the stale holder
    /// (`None` when a holder had no token).
    pub fencing_rejects_stale: Option<bool>,
}

impl Violation {
    /// How long both held the resource.
    pub fn overlap_ms(&self) -> u64 {
        self.overlap_to_ms.saturating_sub(self.overlap_from_ms)
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} (from {} ms) and {} (from {} ms) both held it for {} ms [{}..{}]",
            self.resource,
            self.first.client,
            self.first.from_ms,
            self.second.client,
            self.second.from_ms,
            self.overlap_ms(),
            self.overlap_from_ms,
            self.overlap_to_ms
        )?;
        if !self.faults.is_empty() {
            write!(f, " under {}", self.faults.join(", "))?;
        }
        match self.fencing_rejects_stale {
            Some(true) => write!(f, "; fencing tokens would reject the stale holder"),
            Some(false) => write!(f, "; fencing tokens would NOT reject the stale holder"),
            None => Ok(()),
        }
    }
}

/// Finds mutual-exclusion violations in a [`History`].
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Checker;

impl Checker {
    /// The holds the history shows, per resource in acquire order.
    pub fn holds(history: &History) -> Vec<Hold> {
        let events = history.events();
        let end = events
            .iter()
            .map(|e| e.end_ms)
            .chain(
                history
                    .faults()
                    .iter()
                    .map(|f| f.end_ms.unwrap_or(f.start_ms)),
            )
            .max()
            .unwrap_or(0)
            .max(history.now_ms());
        let mut open: BTreeMap<(String, String), Hold> = BTreeMap::new();
        let mut holds = Vec::new();
        let mut ordered: Vec<&Event> = events.iter().collect();
        ordered.sort_by_key(|e| (e.end_ms, e.seq));
        for e in ordered {
            let key = (e.resource.clone(), e.client.clone());
            match e.kind {
                EventKind::Acquired | EventKind::AcquiredShared => {
                    // Re-acquiring while holding (reentrancy) keeps the first hold open.
                    open.entry(key).or_insert_with(|| Hold {
                        client: e.client.clone(),
                        resource: e.resource.clone(),
                        from_ms: e.end_ms,
                        to_ms: end,
                        open: true,
                        token: e.token,
                        from_seq: e.seq,
                        to_seq: u64::MAX,
                        shared: e.kind == EventKind::AcquiredShared,
                        lost: false,
                    });
                }
                EventKind::Released | EventKind::Lost => {
                    if let Some(mut hold) = open.remove(&key) {
                        hold.to_ms = e.start_ms.max(hold.from_ms);
                        hold.to_seq = e.start_seq;
                        hold.open = false;
                        hold.lost = e.kind == EventKind::Lost;
                        holds.push(hold);
                    }
                }
                EventKind::AcquireFailed
                | EventKind::Write { .. }
                | EventKind::ForeignRelease { .. } => {}
            }
        }
        holds.extend(open.into_values());
        holds.sort_by(|a, b| {
            (&a.resource, a.from_ms, &a.client).cmp(&(&b.resource, b.from_ms, &b.client))
        });
        holds
    }

    /// Every pair of different clients whose holds of one resource overlap: the later acquire
    /// happened before the earlier hold ended (by time, then by recording order, so overlaps
    /// within one millisecond of virtual time count too).
    pub fn check(history: &History) -> Vec<Violation> {
        overlaps(&Self::holds(history), &history.faults())
    }
}

/// [`Checker::check`] on holds and faults already read from the history.
fn overlaps(holds: &[Hold], faults: &[FaultRecord]) -> Vec<Violation> {
    let mut out = Vec::new();
    for (i, a) in holds.iter().enumerate() {
        for b in holds.iter().skip(i + 1) {
            if a.resource != b.resource || a.client == b.client || (a.shared && b.shared) {
                continue;
            }
            let (first, second) = if (a.from_ms, a.from_seq) <= (b.from_ms, b.from_seq) {
                (a, b)
            } else {
                (b, a)
            };
            if (second.from_ms, second.from_seq) >= (first.to_ms, first.to_seq) {
                continue;
            }
            let from = second.from_ms;
            let to = first.to_ms.min(second.to_ms).max(from);
            let labels = faults
                .iter()
                .filter(|f| f.start_ms <= to && f.end_ms.is_none_or(|e| e >= first.from_ms))
                .map(FaultRecord::label)
                .collect();
            out.push(Violation {
                resource: a.resource.clone(),
                first: first.clone(),
                second: second.clone(),
                overlap_from_ms: from,
                overlap_to_ms: to,
                faults: labels,
                fencing_rejects_stale: match (first.token, second.token) {
                    (Some(x), Some(y)) => Some(x < y),
                    _ => None,
                },
            });
        }
    }
    out
}

/// The bounds [`Checker::liveness`] holds a history to (a plain data record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Liveness {
    /// A waiter still waiting this long after the lock became free was not woken.
    pub wake_up_ms: u64,
    /// The longest lease any hold had: a stale holder must have learnt of its loss this long
    /// after another client acquired the lock at the latest.
    pub lease_ms: u64,
    /// For FIFO order: a waiter that started this much later than another must not be served
    /// first (requests closer together may reach the server in either order).
    pub fifo_slack_ms: u64,
    /// For bounded waits: every acquire with a wait of `.0` ms must return within `.0 + .1` ms
    /// (`None`: not checked, the waits of the history are not known).
    pub wait_bound: Option<(u64, u64)>,
}

impl Liveness {
    /// Bounds for leases of `lease_ms`: a wake-up within 1 s, a FIFO slack of 10 ms.
    pub fn new(lease_ms: u64) -> Self {
        Liveness {
            wake_up_ms: 1000,
            lease_ms,
            fifo_slack_ms: 10,
            wait_bound: None,
        }
    }

    /// Checks bounded waits: every acquire of the history waited at most `wait_ms`, so it
    /// must return within `wait_ms + slack_ms` (outside faults and `wake_up_ms` after one).
    pub fn bounded_wait(mut self, wait_ms: u64, slack_ms: u64) -> Self {
        self.wait_bound = Some((wait_ms, slack_ms));
        self
    }

    /// Sets the wake-up bound.
    pub fn wake_up_ms(mut self, ms: u64) -> Self {
        self.wake_up_ms = ms;
        self
    }

    /// Sets the FIFO slack.
    pub fn fifo_slack_ms(mut self, ms: u64) -> Self {
        self.fifo_slack_ms = ms;
        self
    }
}

/// A liveness or protocol problem [`Checker::liveness`] found (a plain data record).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LivenessIssue {
    /// A waiter kept waiting although the lock had been free for the wake-up bound.
    LostWakeUp {
        /// The waiter.
        client: String,
        /// The resource.
        resource: String,
        /// Since when the lock was free (ms).
        free_from_ms: u64,
        /// Until when the waiter still waited (ms).
        still_waiting_ms: u64,
    },
    /// A fair lock served a later waiter before an earlier one.
    OutOfOrder {
        /// The resource.
        resource: String,
        /// The waiter that came first (and was passed over).
        earlier: String,
        /// The waiter served before it.
        later: String,
        /// When each started waiting (ms).
        earlier_from_ms: u64,
        /// When the later one started waiting.
        later_from_ms: u64,
    },
    /// A holder whose lock another client acquired never learnt it (no lost signal, no end
    /// of its hold) within the lease bound.
    UnnoticedLoss {
        /// The stale holder.
        client: String,
        /// The resource.
        resource: String,
        /// When the other client acquired (ms).
        taken_at_ms: u64,
    },
    /// An acquire with a bounded wait returned later than its wait plus the slack allowed,
    /// outside any fault.
    WaitOverrun {
        /// The waiter.
        client: String,
        /// The resource.
        resource: String,
        /// When the acquire started (ms).
        from_ms: u64,
        /// When it returned (ms).
        to_ms: u64,
        /// The wait it was given (ms).
        wait_ms: u64,
    },
    /// An unlock by a client that did not hold the lock was accepted while another client
    /// held it.
    ForeignReleaseAccepted {
        /// Who sent it.
        client: String,
        /// The resource.
        resource: String,
        /// When (ms).
        at_ms: u64,
    },
}

impl std::fmt::Display for LivenessIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LivenessIssue::LostWakeUp {
                client,
                resource,
                free_from_ms,
                still_waiting_ms,
            } => write!(
                f,
                "{resource}: {client} still waited at {still_waiting_ms} ms though the lock was free from {free_from_ms} ms (lost wake-up)"
            ),
            LivenessIssue::OutOfOrder {
                resource,
                earlier,
                later,
                earlier_from_ms,
                later_from_ms,
            } => write!(
                f,
                "{resource}: {later} (waiting from {later_from_ms} ms) was served before {earlier} (waiting from {earlier_from_ms} ms)"
            ),
            LivenessIssue::UnnoticedLoss {
                client,
                resource,
                taken_at_ms,
            } => write!(
                f,
                "{resource}: {client} never learnt that another client acquired it at {taken_at_ms} ms"
            ),
            LivenessIssue::WaitOverrun {
                client,
                resource,
                from_ms,
                to_ms,
                wait_ms,
            } => write!(
                f,
                "{resource}: {client}'s acquire with a wait of {wait_ms} ms took {} ms [{from_ms}..{to_ms}] (wait overrun)",
                to_ms.saturating_sub(*from_ms)
            ),
            LivenessIssue::ForeignReleaseAccepted {
                client,
                resource,
                at_ms,
            } => write!(
                f,
                "{resource}: an unlock by {client}, who did not hold it, was accepted at {at_ms} ms"
            ),
        }
    }
}

impl Checker {
    /// Liveness and protocol checks beyond mutual exclusion: lost wake-ups (a waiter still
    /// waiting `wake_up_ms` after the lock became free — free meaning released and not
    /// re-acquired, outside any fault and `wake_up_ms` after one; a lock that only expired
    /// is not counted, its moment is unknown), FIFO
    /// order (see [`Checker::fifo`], asked for separately since only fair locks promise it),
    /// bounded waits (with [`Liveness::bounded_wait`]: an acquire that returned past its wait
    /// plus a slack, outside faults),
    /// unnoticed losses (a holder whose lock another client acquired, still holding without a
    /// lost signal `lease_ms` later), and unlocks by non-holders accepted while another client
    /// held the lock.
    pub fn liveness(history: &History, bounds: &Liveness) -> Vec<LivenessIssue> {
        let events = history.events();
        let holds = Self::holds(history);
        let faults = history.faults();
        let mut out = Vec::new();
        // Per acquire operation: a lost wake-up (it spanned a long free stretch outside
        // faults), and with a wait bound, an overrun (it returned past its wait plus the slack,
        // outside the fault windows), listed after the lost wake-ups.
        let windows = fault_windows(&faults, bounds.wake_up_ms);
        let mut overruns = Vec::new();
        for e in &events {
            if !matches!(
                e.kind,
                EventKind::Acquired | EventKind::AcquiredShared | EventKind::AcquireFailed
            ) {
                continue;
            }
            if let Some(free_from) = free_stretch(
                &holds,
                &windows,
                &e.resource,
                e.start_ms,
                e.end_ms,
                bounds.wake_up_ms,
            ) {
                out.push(LivenessIssue::LostWakeUp {
                    client: e.client.clone(),
                    resource: e.resource.clone(),
                    free_from_ms: free_from,
                    still_waiting_ms: e.end_ms,
                });
            }
            if let Some((wait_ms, slack_ms)) = bounds.wait_bound {
                let in_fault = windows
                    .iter()
                    .any(|&(from, to)| e.start_ms <= to && from <= e.end_ms);
                if !in_fault
                    && e.end_ms.saturating_sub(e.start_ms) > wait_ms.saturating_add(slack_ms)
                {
                    overruns.push(LivenessIssue::WaitOverrun {
                        client: e.client.clone(),
                        resource: e.resource.clone(),
                        from_ms: e.start_ms,
                        to_ms: e.end_ms,
                        wait_ms,
                    });
                }
            }
        }
        out.append(&mut overruns);
        // Unnoticed losses: the stale side of every overlap.
        for v in overlaps(&holds, &faults) {
            let deadline = v.second.from_ms.saturating_add(bounds.lease_ms);
            let first = &v.first;
            if first.to_ms > deadline {
                out.push(LivenessIssue::UnnoticedLoss {
                    client: first.client.clone(),
                    resource: first.resource.clone(),
                    taken_at_ms: v.second.from_ms,
                });
            }
        }
        // Unlocks by non-holders that were accepted while another client held the lock (an
        // accepted unlock of a free lock releases nothing: Redisson's fair lock answers 1).
        for e in &events {
            if e.kind != (EventKind::ForeignRelease { accepted: true }) {
                continue;
            }
            // The unlock was sent after the hold began and answered before it ended, so the
            // server ran it during the hold (an unlock racing an acquire is not counted).
            let during = |h: &&Hold| {
                h.resource == e.resource
                    && (h.from_ms, h.from_seq) < (e.start_ms, e.start_seq)
                    && (e.end_ms, e.seq) < (h.to_ms, h.to_seq)
            };
            let own = holds.iter().filter(during).any(|h| h.client == e.client);
            let other = holds.iter().filter(during).any(|h| h.client != e.client);
            if other && !own {
                out.push(LivenessIssue::ForeignReleaseAccepted {
                    client: e.client.clone(),
                    resource: e.resource.clone(),
                    at_ms: e.start_ms,
                });
            }
        }
        out
    }

    /// FIFO order of a fair lock: for two acquires of one resource that both waited, the one
    /// that started `fifo_slack_ms` or more earlier must not complete after the later one.
    pub fn fifo(history: &History, bounds: &Liveness) -> Vec<LivenessIssue> {
        let acquires: Vec<Event> = history
            .events()
            .into_iter()
            .filter(|e| e.kind == EventKind::Acquired)
            .collect();
        let mut out = Vec::new();
        for a in &acquires {
            for b in &acquires {
                let waited_together = a.resource == b.resource
                    && a.client != b.client
                    && b.start_ms >= a.start_ms.saturating_add(bounds.fifo_slack_ms)
                    && b.start_ms < a.end_ms;
                if waited_together && (b.end_ms, b.seq) < (a.end_ms, a.seq) {
                    out.push(LivenessIssue::OutOfOrder {
                        resource: a.resource.clone(),
                        earlier: a.client.clone(),
                        later: b.client.clone(),
                        earlier_from_ms: a.start_ms,
                        later_from_ms: b.start_ms,
                    });
                }
            }
        }
        out
    }
}

/// When faults were in effect, each extended by `grace` ms after it ended (clients reconnect,
/// waiters retry): a fault without an end lasts `grace` ms, except a node's kill or crash,
/// which lasts until that node's next restart. The liveness checks' windows, for checks of
/// one's own.
pub fn fault_windows(faults: &[FaultRecord], grace: u64) -> Vec<(u64, u64)> {
    faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let end = f.end_ms.unwrap_or_else(|| {
                let crashed = f.fault.crashed();
                crashed
                    .and_then(|node| {
                        faults
                            .iter()
                            .skip(i + 1)
                            .find(|g| g.fault.restarted() == Some(node))
                            .map(|g| g.start_ms)
                    })
                    .unwrap_or(if crashed.is_some() {
                        u64::MAX
                    } else {
                        f.start_ms
                    })
            });
            (f.start_ms, end.saturating_add(grace))
        })
        .collect()
}

/// The start of a stretch of at least `bound` ms within `[from, to]`, outside every fault
/// window, during which nobody held `resource` after a release (holds that ended in a loss
/// leave the moment the key expired unknown and count as held until the next acquire).
fn free_stretch(
    holds: &[Hold],
    windows: &[(u64, u64)],
    resource: &str,
    from: u64,
    to: u64,
    bound: u64,
) -> Option<u64> {
    let mine: Vec<&Hold> = holds.iter().filter(|h| h.resource == resource).collect();
    // Candidate starts: releases (not losses) inside the wait.
    mine.iter()
        .filter(|h| !h.open && !h.lost && h.to_ms >= from && h.to_ms <= to)
        .map(|h| h.to_ms)
        .find(|&free_from| {
            let free_until = mine
                .iter()
                .filter(|h| h.to_ms > free_from && h.from_ms < to)
                .map(|h| h.from_ms.max(free_from))
                .min()
                .unwrap_or(to)
                .min(to);
            longest_clear(free_from, free_until, windows) >= bound
        })
}

/// The longest part of `[from, to]` that no window of [`fault_windows`] covers.
pub fn longest_clear(from: u64, to: u64, windows: &[(u64, u64)]) -> u64 {
    let mut cuts: Vec<(u64, u64)> = windows
        .iter()
        .filter(|(s, e)| *e > from && *s < to)
        .map(|&(s, e)| (s.max(from), e.min(to)))
        .collect();
    cuts.sort_unstable();
    let (mut best, mut at) = (0, from);
    for (s, e) in cuts {
        best = best.max(s.saturating_sub(at));
        at = at.max(e);
    }
    best.max(to.saturating_sub(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NodeId;

    fn ev(client: &str, kind: EventKind, start: u64, end: u64, token: Option<u64>) -> Event {
        Event {
            client: client.into(),
            resource: "r".into(),
            kind,
            start_ms: start,
            end_ms: end,
            token,
            seq: 0,
            start_seq: 0,
        }
    }

    #[test]
    fn sequential_holds_are_not_a_violation() {
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 1, None));
        h.record(ev("a", EventKind::Released, 5, 6, None));
        h.record(ev("b", EventKind::AcquireFailed, 2, 3, None));
        h.record(ev("b", EventKind::Acquired, 6, 7, None));
        h.record(ev("b", EventKind::Released, 9, 9, None));
        assert!(Checker::check(&h).is_empty());
        assert_eq!(Checker::holds(&h).len(), 2);
    }

    #[test]
    fn an_acquire_recorded_before_a_release_in_the_same_millisecond_overlaps() {
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 0, None));
        h.record(ev("b", EventKind::Acquired, 5, 5, None));
        h.record(ev("a", EventKind::Released, 5, 5, None));
        let v = Checker::check(&h);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].overlap_ms(), 0);
        // The other order is a hand-over, not an overlap.
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 0, None));
        h.record(ev("a", EventKind::Released, 5, 5, None));
        h.record(ev("b", EventKind::Acquired, 5, 5, None));
        assert!(Checker::check(&h).is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_release_begun_before_the_next_acquire_completed_is_a_hand_over() {
        // Virtual time: everything happens in one millisecond. A's release starts, B's acquire
        // (waiting on the server) completes, then A's release returns.
        let h = History::new();
        h.begin("a", "r").acquired(None);
        let release = h.begin("a", "r");
        let acquire = h.begin("b", "r");
        acquire.acquired(None);
        release.released();
        assert!(Checker::check(&h).is_empty(), "{:?}", Checker::check(&h));
        // B's acquire completing before A's release started is an overlap.
        let h = History::new();
        h.begin("a", "r").acquired(None);
        h.begin("b", "r").acquired(None);
        h.begin("a", "r").released();
        assert_eq!(Checker::check(&h).len(), 1);
    }

    #[test]
    fn an_acquire_past_its_wait_is_a_finding_outside_faults_only() {
        let bounds = Liveness::new(30_000).bounded_wait(500, 100);
        let h = History::new();
        h.record(ev("a", EventKind::AcquireFailed, 0, 600, None));
        h.record(ev("b", EventKind::Acquired, 1000, 1601, None));
        let out = Checker::liveness(&h, &bounds);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(matches!(
            &out[0],
            LivenessIssue::WaitOverrun { client, from_ms: 1000, to_ms: 1601, wait_ms: 500, .. }
                if client == "b"
        ));
        assert!(out[0].to_string().contains("took 601 ms"), "{}", out[0]);
        // Unchecked without the bound; not a finding while a fault is on.
        assert!(Checker::liveness(&h, &Liveness::new(30_000)).is_empty());
        if let Ok(mut log) = h.log.lock() {
            log.faults.push(FaultRecord {
                fault: Fault::Pause(NodeId::from_index(0), std::time::Duration::from_millis(300)),
                start_ms: 900,
                end_ms: Some(1200),
            });
        }
        assert!(Checker::liveness(&h, &bounds).is_empty());
    }

    #[test]
    fn overlapping_holds_are_reported_with_the_fault_and_fencing() {
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 10, Some(3)));
        h.record(ev("b", EventKind::Acquired, 40, 50, Some(4)));
        h.record(ev("a", EventKind::Released, 100, 101, None));
        h.record(ev("b", EventKind::Released, 120, 121, None));
        if let Ok(mut log) = h.log.lock() {
            log.faults.push(FaultRecord {
                fault: Fault::FailMaster {
                    old: NodeId::from_index(0),
                    new: NodeId::from_index(1),
                },
                start_ms: 20,
                end_ms: None,
            });
        }
        let v = Checker::check(&h);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].first.client, "a");
        assert_eq!(v[0].second.client, "b");
        assert_eq!((v[0].overlap_from_ms, v[0].overlap_to_ms), (50, 100));
        assert_eq!(v[0].overlap_ms(), 50);
        assert_eq!(v[0].faults, vec!["fail_master n0 -> n1".to_string()]);
        assert_eq!(v[0].fencing_rejects_stale, Some(true));
    }

    #[test]
    fn shared_holds_do_not_conflict_but_an_exclusive_one_does() {
        let h = History::new();
        h.record(ev("a", EventKind::AcquiredShared, 0, 1, None));
        h.record(ev("b", EventKind::AcquiredShared, 2, 3, None));
        assert!(Checker::check(&h).is_empty());
        h.record(ev("c", EventKind::Acquired, 4, 5, None));
        assert_eq!(Checker::check(&h).len(), 2);
    }

    #[test]
    fn a_waiter_left_waiting_after_a_release_is_a_lost_wake_up() {
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 1, None));
        h.record(ev("a", EventKind::Released, 100, 101, None));
        // b waited from 50 until 2000: the lock was free from 100.
        h.record(ev("b", EventKind::Acquired, 50, 2000, None));
        let issues = Checker::liveness(&h, &Liveness::new(30_000));
        assert_eq!(
            issues,
            vec![LivenessIssue::LostWakeUp {
                client: "b".into(),
                resource: "r".into(),
                free_from_ms: 100,
                still_waiting_ms: 2000,
            }]
        );
        // Woken within the bound: fine; a waiter that got it at 150 is too.
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 1, None));
        h.record(ev("a", EventKind::Released, 100, 101, None));
        h.record(ev("b", EventKind::Acquired, 50, 150, None));
        assert!(Checker::liveness(&h, &Liveness::new(30_000)).is_empty());
        // A lock that was lost (expired at an unknown moment) does not count as free.
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 1, None));
        h.record(ev("a", EventKind::Lost, 100, 101, None));
        h.record(ev("b", EventKind::AcquireFailed, 50, 5000, None));
        assert!(Checker::liveness(&h, &Liveness::new(30_000)).is_empty());
    }

    #[test]
    fn a_later_waiter_served_first_breaks_fifo_beyond_the_slack() {
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 1, None));
        h.record(ev("b", EventKind::Acquired, 10, 500, None));
        h.record(ev("c", EventKind::Acquired, 30, 300, None));
        let bounds = Liveness::new(30_000).fifo_slack_ms(10);
        let out = Checker::fifo(&h, &bounds);
        assert_eq!(out.len(), 1);
        assert!(
            matches!(&out[0], LivenessIssue::OutOfOrder { earlier, later, .. } if earlier == "b" && later == "c")
        );
        // Within the slack either order is fine.
        assert!(Checker::fifo(&h, &bounds.fifo_slack_ms(25)).is_empty());
    }

    #[test]
    fn a_stale_holder_must_learn_of_its_loss_within_the_lease() {
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 1, None));
        h.record(ev("b", EventKind::Acquired, 100, 101, None));
        h.record(ev("a", EventKind::Lost, 150, 150, None));
        h.record(ev("b", EventKind::Released, 200, 201, None));
        assert!(Checker::liveness(&h, &Liveness::new(1000)).is_empty());
        // a kept holding until 5000 without a lost signal.
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 1, None));
        h.record(ev("b", EventKind::Acquired, 100, 101, None));
        h.record(ev("b", EventKind::Released, 200, 201, None));
        h.record(ev("a", EventKind::Released, 5000, 5001, None));
        let out = Checker::liveness(&h, &Liveness::new(1000));
        assert!(
            matches!(&out[..], [LivenessIssue::UnnoticedLoss { client, taken_at_ms: 101, .. }] if client == "a"),
            "{out:?}"
        );
    }

    #[test]
    fn an_accepted_unlock_by_a_non_holder_is_reported_when_another_held_it() {
        let h = History::new();
        // Free lock: an accepted unlock releases nothing (Redisson's fair lock answers 1).
        h.record(ev(
            "b",
            EventKind::ForeignRelease { accepted: true },
            0,
            0,
            None,
        ));
        h.record(ev("a", EventKind::Acquired, 5, 6, None));
        h.record(ev(
            "b",
            EventKind::ForeignRelease { accepted: false },
            10,
            11,
            None,
        ));
        assert!(Checker::liveness(&h, &Liveness::new(1000)).is_empty());
        h.record(ev(
            "b",
            EventKind::ForeignRelease { accepted: true },
            20,
            21,
            None,
        ));
        let out = Checker::liveness(&h, &Liveness::new(1000));
        assert_eq!(out.len(), 1);
        assert!(out[0].to_string().contains("did not hold it"));
    }

    #[test]
    fn fault_windows_follow_the_variant_not_the_words_of_the_label() {
        let (n0, n1) = (NodeId::from_index(0), NodeId::from_index(1));
        let at = |fault: Fault, start_ms: u64| FaultRecord {
            fault,
            start_ms,
            end_ms: None,
        };
        let faults = [
            at(Fault::Kill(n0), 10),
            // A note that reads like a kill is a note: a grace period, no crash.
            at(Fault::Note("kill n1".into()), 20),
            at(Fault::FailMaster { old: n1, new: n0 }, 30),
            at(Fault::Restart(n0, crate::Restart::Empty), 500),
        ];
        assert_eq!(
            fault_windows(&faults, 100),
            [(10, 600), (20, 120), (30, u64::MAX), (500, 600)]
        );
    }

    #[test]
    fn a_free_stretch_under_a_fault_is_not_a_lost_wake_up() {
        let h = History::new();
        h.record(ev("a", EventKind::Acquired, 0, 1, None));
        h.record(ev("a", EventKind::Released, 100, 101, None));
        h.record(ev("b", EventKind::Acquired, 50, 2000, None));
        if let Ok(mut log) = h.log.lock() {
            log.faults.push(FaultRecord {
                fault: Fault::Kill(NodeId::from_index(0)),
                start_ms: 90,
                end_ms: None,
            });
            log.faults.push(FaultRecord {
                fault: Fault::Restart(NodeId::from_index(0), crate::Restart::Empty),
                start_ms: 1500,
                end_ms: None,
            });
        }
        // Down from 90 to 1500, plus a second of grace: nothing clear for a second.
        assert!(Checker::liveness(&h, &Liveness::new(30_000)).is_empty());
        assert_eq!(longest_clear(0, 100, &[(10, 20), (50, 60)]), 40);
        assert_eq!(longest_clear(0, 100, &[(0, 100)]), 0);
    }
}
