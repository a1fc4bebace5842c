//! One run: a fresh current-thread runtime with paused time, an in-memory topology for the
//! workload's lock kind, its clients, the schedule's faults, and the checker's verdict.

use crate::checks::{self, fault_windows, in_window};
use crate::latch;
use crate::schedule::Schedule;
use crate::workload::{
    contend, open, Contender, LockKind, Resource, Tally, Workload, PERMITS, RESOURCE,
};
use locksmith_harness::schedule::apply;
use locksmith_harness::{
    Checker, Fault, History, Liveness, LivenessIssue, NodeId, Topology, Violation,
};
use locksmith_resp::{Frame, FrameDecoder};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// What one run showed (a plain data record).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Outcome {
    /// The run's seed.
    pub seed: u64,
    /// Its workload.
    pub workload: Workload,
    /// Its faults.
    pub schedule: Schedule,
    /// Everything clients observed and every fault applied.
    pub history: History,
    /// Mutual-exclusion violations.
    pub violations: Vec<Violation>,
    /// Safety findings of the counting kinds: more holders than a semaphore has permits, a
    /// latch that opened before all its count-downs were sent.
    pub over_limit: Vec<String>,
    /// Liveness and protocol problems (FIFO order only for the fair lock; bounded waits;
    /// acquires refused while the lock or a permit was free).
    pub liveness: Vec<LivenessIssue>,
    /// Resources the run left behind: a key without a TTL on a node that is up at the end
    /// (other than the keys a semaphore or latch keeps by design), permits or counts that do
    /// not add up, and holds a failed call left on the master outside faults on its links.
    pub leaks: Vec<String>,
}

impl Outcome {
    /// Whether the run broke the lock's safety: for the fenced lock, an overlap the
    /// resource's token check could not sort out (tokens out of order); for every other
    /// kind, any overlap of holders; for the counting kinds, a limit broken.
    pub fn is_unsafe(&self) -> bool {
        self.unsafe_violations().next().is_some() || !self.over_limit.is_empty()
    }

    /// The violations that count as unsafe (see [`Outcome::is_unsafe`]).
    pub fn unsafe_violations(&self) -> impl Iterator<Item = &Violation> {
        let fenced = self.workload.kind == LockKind::FencedLock;
        self.violations
            .iter()
            .filter(move |v| !fenced || v.fencing_rejects_stale != Some(true))
    }

    /// The first unsafe finding, as text (a violation or a broken limit).
    pub fn first_unsafe(&self) -> Option<String> {
        self.unsafe_violations()
            .next()
            .map(ToString::to_string)
            .or_else(|| self.over_limit.first().cloned())
    }

    /// Whether an acquire returned later than its wait allows, outside faults.
    pub fn overran_a_wait(&self) -> bool {
        self.liveness
            .iter()
            .any(|l| matches!(l, LivenessIssue::WaitOverrun { .. }))
    }

    /// Whether the run broke safety or liveness, or leaked a resource.
    pub fn failed(&self) -> bool {
        self.is_unsafe() || !self.liveness.is_empty() || !self.leaks.is_empty()
    }
}

/// How long a fault's effects last after it ends, for the checks (waiters retry, clients
/// reconnect).
const GRACE_MS: u64 = 1000;

/// Runs `workload` under `schedule` with `seed` deciding everything else, in a fresh
/// current-thread runtime with paused time: the same arguments give the same history.
///
/// # Panics
///
/// When the runtime cannot be built (out of resources).
pub fn run(workload: Workload, schedule: &Schedule, seed: u64) -> Outcome {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_time().start_paused(true);
    // `tokio::select!` picks among ready branches at random: from the seed, so the same seed
    // gives the same choices (tokio's unstable API, on in this workspace's builds).
    #[cfg(tokio_unstable)]
    builder.rng_seed(tokio::runtime::RngSeed::from_bytes(&seed.to_le_bytes()));
    let runtime = builder.build().expect("a current-thread runtime");
    let ended = runtime.block_on(run_async(workload, schedule, seed));
    let history = ended.history;
    let kind = workload.kind;
    let faults = history.faults();
    let windows = fault_windows(&faults, GRACE_MS, false);
    let mut violations = Checker::check(&history);
    let mut over_limit = Vec::new();
    // Every acquire waits `wait_ms`; its last attempt may take a response timeout more.
    let bounds = Liveness::new(workload.lease_ms)
        .wake_up_ms(GRACE_MS)
        .bounded_wait(workload.wait_ms, crate::workload::RESPONSE_TIMEOUT_MS);
    let mut liveness = Checker::liveness(&history, &bounds);
    if kind == LockKind::FairLock {
        liveness.extend(Checker::fifo(&history, &bounds));
    }
    if kind.capacity() > 1 {
        // Permit holders overlap by design: the limit is the permit count.
        violations.clear();
        over_limit.extend(checks::over_admissions(&history, kind.capacity()));
    }
    if kind.capacity() > 0 {
        for issue in
            checks::refused_while_free(&history, &windows, kind.capacity(), workload.think_ms)
        {
            if !liveness.contains(&issue) {
                liveness.push(issue);
            }
        }
    }
    let latch_ops: Vec<_> = ended.tallies.iter().flat_map(|t| t.latch.clone()).collect();
    if kind == LockKind::CountDownLatch {
        let found = latch::check(&latch_ops, workload, &windows);
        over_limit.extend(found.early);
        liveness.extend(found.liveness);
    }
    let mut leaks = ended.leaks;
    let links = fault_windows(&faults, GRACE_MS, true);
    leaks.extend(
        ended
            .tallies
            .iter()
            .flat_map(|t| &t.suspects)
            .filter(|s| !in_window(&links, s.from_ms, s.to_ms))
            .map(|s| s.what.clone()),
    );
    if !checks::lost_data(&faults) {
        // Calls that failed while the links to the master were faulty may or may not have run.
        let unsure = ended
            .tallies
            .iter()
            .flat_map(|t| &t.errors)
            .filter(|&&(from, to)| in_window(&links, from, to))
            .count() as i64;
        if let Some(found) = ended
            .counted
            .and_then(|c| c.unbalanced(&ended.tallies, &latch_ops, workload, unsure))
        {
            leaks.push(found);
        }
    }
    Outcome {
        seed,
        workload,
        schedule: schedule.clone(),
        history,
        violations,
        over_limit,
        liveness,
        leaks,
    }
}

/// What a run's async part leaves for the checks.
struct Ended {
    history: History,
    tallies: Vec<Tally>,
    leaks: Vec<String>,
    /// The semaphore's available permits or the latch's count at the end (`None`: not a
    /// counting kind, or the node did not answer).
    counted: Option<Counted>,
}

/// A count read from the server at the end of a run.
#[derive(Debug, Clone, Copy)]
struct Counted(i64);

impl Counted {
    /// Whether the count does not add up: for a semaphore, available permits plus those the
    /// clients hold must equal the permit count, less at most the `unsure` calls (a failed
    /// acquire may have taken a permit, a failed release may not have given it back); for the
    /// permit-expirable semaphore every lease has ended, so all permits are available; for the
    /// latch, the count is what the acknowledged count-downs left, less at most the failed ones.
    fn unbalanced(
        self,
        tallies: &[Tally],
        latch_ops: &[latch::LatchOp],
        workload: Workload,
        unsure: i64,
    ) -> Option<String> {
        let Counted(count) = self;
        match workload.kind {
            LockKind::Semaphore | LockKind::SemaphoreWaitFails => {
                let held: i64 = tallies.iter().map(|t| t.held).sum();
                let total = count + held;
                (total > PERMITS || total < PERMITS - unsure).then(|| {
                    format!(
                        "{RESOURCE}: {count} permits available and {held} held make {total}, not its {PERMITS} permits ({unsure} calls failed under faults)"
                    )
                })
            }
            LockKind::PermitSemaphore => (count != PERMITS).then(|| {
                format!(
                    "{RESOURCE}: {count} permits available after every lease ended, not its {PERMITS}"
                )
            }),
            LockKind::CountDownLatch => {
                let (expected, failed) = latch::expected_count(latch_ops, workload);
                let expected = expected as i64;
                (count > expected || count < expected - failed as i64).then(|| {
                    format!(
                        "{RESOURCE}: the latch counts {count} at the end, the acknowledged count-downs leave {expected} ({failed} failed)"
                    )
                })
            }
            _ => None,
        }
    }
}

async fn run_async(workload: Workload, schedule: &Schedule, seed: u64) -> Ended {
    let kind = workload.kind;
    let built = Topology::builder()
        .in_memory(true)
        .masters(kind.masters())
        .replicas(kind.replicas())
        .seed(seed)
        .start_time(1_700_000_000_000)
        .keep_data_window(Duration::from_secs(5))
        .build()
        .await;
    let topology = match built {
        Ok(t) => t,
        Err(e) => {
            let history = History::new();
            history.fault(Fault::Note(format!("topology failed to start: {e}")));
            return Ended {
                history,
                tallies: Vec::new(),
                leaks: Vec::new(),
                counted: None,
            };
        }
    };
    let origin = Instant::now();
    let deadline = origin + Duration::from_millis(workload.run_ms);
    // The counting kinds' semaphore or latch is set before the clients start.
    let setup = Contender {
        name: "setup".to_owned(),
        seed: seed ^ 0x5e70_0000,
        workload,
    };
    let admin = match kind.capacity() {
        1 => None,
        _ => open(&topology, &setup, origin)
            .await
            .and_then(|mut c| c.pop()),
    };
    if let Some(admin) = &admin {
        let set = match kind {
            LockKind::PermitSemaphore => {
                admin
                    .permit_expirable_semaphore(RESOURCE)
                    .try_set_permits(PERMITS)
                    .await
            }
            LockKind::CountDownLatch => {
                admin
                    .count_down_latch(RESOURCE)
                    .try_set_count(latch::initial_count(workload))
                    .await
            }
            _ => admin.semaphore(RESOURCE).try_set_permits(PERMITS).await,
        };
        if !matches!(set, Ok(true)) {
            topology
                .history()
                .fault(Fault::Note(format!("setup failed: {set:?}")));
        }
    }
    let resource = Arc::new(Resource::default());
    let mut tasks = Vec::new();
    for i in 0..workload.clients {
        let contender = Contender {
            name: format!("c{i}"),
            seed: seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(i as u64),
            workload,
        };
        tasks.push(tokio::spawn(contend(
            topology.clone(),
            contender,
            origin,
            deadline,
            resource.clone(),
        )));
    }
    let faults = tokio::spawn(apply(topology.clone(), schedule.clone(), origin));
    let mut tallies = Vec::new();
    for task in tasks {
        if let Ok(tally) = task.await {
            tallies.push(tally);
        }
    }
    let _ = faults.await;
    // Let a last lost signal or release land (and every permit's lease end), then stop.
    let settle = if kind == LockKind::PermitSemaphore {
        workload.lease_ms + 10
    } else {
        10
    };
    tokio::time::sleep(Duration::from_millis(settle)).await;
    let counted = match &admin {
        Some(admin) => {
            let read = async {
                match kind {
                    LockKind::PermitSemaphore => {
                        admin
                            .permit_expirable_semaphore(RESOURCE)
                            .available_permits()
                            .await
                    }
                    LockKind::CountDownLatch => admin
                        .count_down_latch(RESOURCE)
                        .count()
                        .await
                        .map(|c| i64::try_from(c).unwrap_or(i64::MAX)),
                    _ => admin.semaphore(RESOURCE).available_permits().await,
                }
            };
            match tokio::time::timeout(Duration::from_secs(2), read).await {
                Ok(Ok(count)) => Some(Counted(count)),
                _ => None,
            }
        }
        None => None,
    };
    if let Some(admin) = admin {
        admin.shutdown().await;
    }
    let history = topology.history();
    let leaks = leaked_keys(&topology, kind).await;
    topology.shutdown().await;
    Ended {
        history,
        tallies,
        leaks,
        counted,
    }
}

/// The keys a run left without a TTL, on every node that is up (a node that does not answer
/// within a second of virtual time is passed over); the keys `kind` keeps by design (a
/// semaphore's permits, a latch's count, a fenced lock's token counter) are not counted.
async fn leaked_keys(topology: &Topology, kind: LockKind) -> Vec<String> {
    let kept = kind.persistent_keys();
    let mut leaks = Vec::new();
    for node in topology.nodes() {
        let Some(Frame::Array(keys)) = ask_node(topology, node, &["KEYS", "*"]).await else {
            continue;
        };
        let mut names: Vec<String> = keys
            .into_iter()
            .filter_map(|k| match k {
                Frame::Bulk(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                _ => None,
            })
            .filter(|k| !kept.contains(&k.as_str()))
            .collect();
        names.sort();
        for key in names {
            if let Some(Frame::Integer(-1)) = ask_node(topology, node, &["PTTL", &key]).await {
                leaks.push(format!("{node}: '{key}' has no TTL"));
            }
        }
    }
    leaks
}

/// Sends one command to the current master over a fresh connection; its reply, or `None`
/// when the master does not answer within a second of virtual time.
pub(crate) async fn ask(topology: &Topology, argv: &[&str]) -> Option<Frame> {
    ask_node(topology, topology.master(), argv).await
}

/// Sends one command to `node` over a fresh connection (see [`ask`]).
pub(crate) async fn ask_node(topology: &Topology, node: NodeId, argv: &[&str]) -> Option<Frame> {
    let stream = topology.connect(node).ok()?;
    tokio::time::timeout(Duration::from_secs(1), request(stream, argv))
        .await
        .ok()?
}

async fn request(mut stream: tokio::io::DuplexStream, argv: &[&str]) -> Option<Frame> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut out = Vec::new();
    locksmith_resp::encode_command(argv, &mut out);
    stream.write_all(&out).await.ok()?;
    let mut decoder = FrameDecoder::default();
    let mut buf = bytes::BytesMut::new();
    loop {
        if let Some(frame) = decoder.decode(&mut buf).ok()? {
            return Some(frame);
        }
        if stream.read_buf(&mut buf).await.ok()? == 0 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksmith_harness::NodeId;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Sends one command to `node`, returns the first bytes of its reply.
    async fn send(topology: &Topology, node: NodeId, argv: &[&str]) -> Vec<u8> {
        let mut request = Vec::new();
        locksmith_resp::encode_command(argv, &mut request);
        let mut stream = topology.connect(node).expect("the node is up");
        stream.write_all(&request).await.expect("sent");
        let mut reply = vec![0u8; 64];
        let n = stream.read(&mut reply).await.expect("a reply");
        reply.truncate(n);
        reply
    }

    #[test]
    fn permits_and_counts_must_add_up_within_the_calls_that_failed_under_faults() {
        let semaphore = Workload::new(LockKind::Semaphore);
        let holding = |held| Tally {
            held,
            ..Tally::default()
        };
        // Two permits: one available and one held adds up.
        assert_eq!(
            Counted(1).unbalanced(&[holding(1)], &[], semaphore, 0),
            None
        );
        // One permit gone: a finding, unless a call failed under a fault on the links.
        assert!(Counted(1)
            .unbalanced(&[holding(0)], &[], semaphore, 0)
            .is_some());
        assert_eq!(
            Counted(1).unbalanced(&[holding(0)], &[], semaphore, 1),
            None
        );
        // A permit made out of nothing (a release that ran twice) is always one.
        assert!(Counted(2)
            .unbalanced(&[holding(1)], &[], semaphore, 5)
            .is_some());
        // Every lease of the permit semaphore has ended: all its permits are back.
        let permits = Workload::new(LockKind::PermitSemaphore);
        assert_eq!(Counted(2).unbalanced(&[], &[], permits, 0), None);
        assert!(Counted(1).unbalanced(&[], &[], permits, 3).is_some());
        // The latch: six counts, one acknowledged count-down leaves five.
        let latch_kind = Workload::new(LockKind::CountDownLatch);
        let down = latch::LatchOp {
            client: "c0".into(),
            start_ms: 0,
            end_ms: 1,
            call: latch::LatchCall::CountDown { ok: true },
        };
        assert_eq!(
            Counted(5).unbalanced(&[], std::slice::from_ref(&down), latch_kind, 0),
            None
        );
        assert!(Counted(6).unbalanced(&[], &[down], latch_kind, 0).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_lock_key_without_a_ttl_is_a_leak_and_one_with_a_ttl_is_not() {
        let topology = Topology::builder()
            .in_memory(true)
            .build()
            .await
            .expect("a topology");
        let node = topology.master();
        assert!(leaked_keys(&topology, LockKind::Lock).await.is_empty());
        assert_eq!(
            send(&topology, node, &["SET", RESOURCE, "x"]).await,
            b"+OK\r\n"
        );
        assert_eq!(
            leaked_keys(&topology, LockKind::Lock).await,
            vec![format!("{node}: '{RESOURCE}' has no TTL")]
        );
        // A semaphore keeps its key without a TTL by design.
        assert!(leaked_keys(&topology, LockKind::Semaphore).await.is_empty());
        assert_eq!(
            send(&topology, node, &["PEXPIRE", RESOURCE, "30000"]).await,
            b":1\r\n"
        );
        assert!(leaked_keys(&topology, LockKind::Lock).await.is_empty());
        topology.shutdown().await;
    }
}
