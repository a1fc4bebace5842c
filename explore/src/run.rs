//! One run: a fresh current-thread runtime with paused time, an in-memory topology for the
//! workload's lock kind, its clients, the schedule's faults, and the checker's verdict.

use crate::schedule::Schedule;
use crate::workload::{contend, Contender, LockKind, Resource, Workload, RESOURCE};
use locksmith_harness::schedule::apply;
use locksmith_harness::{Checker, History, Liveness, LivenessIssue, Topology, Violation};
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
    /// Liveness and protocol problems (FIFO order only for the fair lock; bounded waits).
    pub liveness: Vec<LivenessIssue>,
    /// Resources the run left behind: a lock key without a TTL on a node that is up at the
    /// end (held for ever: a call that wrote it failed before its lease was set).
    pub leaks: Vec<String>,
}

impl Outcome {
    /// Whether the run broke the lock's safety: for the fenced lock, an overlap the
    /// resource's token check could not sort out (tokens out of order); for every other
    /// kind, any overlap of holders.
    pub fn is_unsafe(&self) -> bool {
        self.unsafe_violations().next().is_some()
    }

    /// The violations that count as unsafe (see [`Outcome::is_unsafe`]).
    pub fn unsafe_violations(&self) -> impl Iterator<Item = &Violation> {
        let fenced = self.workload.kind == LockKind::FencedLock;
        self.violations
            .iter()
            .filter(move |v| !fenced || v.fencing_rejects_stale != Some(true))
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
    let (history, leaks) = runtime.block_on(run_async(workload, schedule, seed));
    let violations = Checker::check(&history);
    // Every acquire waits `wait_ms`; its last attempt may take a response timeout more.
    let bounds = Liveness::new(workload.lease_ms)
        .bounded_wait(workload.wait_ms, crate::workload::RESPONSE_TIMEOUT_MS);
    let mut liveness = Checker::liveness(&history, &bounds);
    if workload.kind == LockKind::FairLock {
        liveness.extend(Checker::fifo(&history, &bounds));
    }
    Outcome {
        seed,
        workload,
        schedule: schedule.clone(),
        history,
        violations,
        liveness,
        leaks,
    }
}

async fn run_async(workload: Workload, schedule: &Schedule, seed: u64) -> (History, Vec<String>) {
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
            history.fault(format!("topology failed to start: {e}"));
            return (history, Vec::new());
        }
    };
    let origin = Instant::now();
    let deadline = origin + Duration::from_millis(workload.run_ms);
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
    tasks.push(tokio::spawn(apply(
        topology.clone(),
        schedule.clone(),
        origin,
    )));
    for task in tasks {
        let _ = task.await;
    }
    // Let a last lost signal or release land, then stop everything.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let history = topology.history();
    let leaks = leaked_keys(&topology).await;
    topology.shutdown().await;
    (history, leaks)
}

/// The lock keys a run left without a TTL, on every node that is up (a node that does not
/// answer within a second of virtual time is passed over).
async fn leaked_keys(topology: &Topology) -> Vec<String> {
    let mut leaks = Vec::new();
    for node in topology.nodes() {
        let Ok(stream) = topology.connect(node) else {
            continue;
        };
        let ttl = tokio::time::timeout(Duration::from_secs(1), pttl(stream, RESOURCE)).await;
        if let Ok(Some(-1)) = ttl {
            leaks.push(format!("{node}: '{RESOURCE}' has no TTL"));
        }
    }
    leaks
}

/// `PTTL key` over a fresh connection to a node; `None` when it does not answer an integer.
async fn pttl(mut stream: tokio::io::DuplexStream, key: &str) -> Option<i64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = Vec::new();
    locksmith_resp::encode_command(&[b"PTTL", key.as_bytes()], &mut request);
    stream.write_all(&request).await.ok()?;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 32];
    while !reply.ends_with(b"\r\n") && reply.len() < 32 {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        reply.extend_from_slice(&chunk[..n]);
    }
    let digits = reply.strip_prefix(b":")?.strip_suffix(b"\r\n")?;
    std::str::from_utf8(digits).ok()?.parse().ok()
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

    #[tokio::test(start_paused = true)]
    async fn a_lock_key_without_a_ttl_is_a_leak_and_one_with_a_ttl_is_not() {
        let topology = Topology::builder()
            .in_memory(true)
            .build()
            .await
            .expect("a topology");
        let node = topology.master();
        assert!(leaked_keys(&topology).await.is_empty());
        assert_eq!(
            send(&topology, node, &["SET", RESOURCE, "x"]).await,
            b"+OK\r\n"
        );
        assert_eq!(
            leaked_keys(&topology).await,
            vec![format!("{node}: '{RESOURCE}' has no TTL")]
        );
        assert_eq!(
            send(&topology, node, &["PEXPIRE", RESOURCE, "30000"]).await,
            b":1\r\n"
        );
        assert!(leaked_keys(&topology).await.is_empty());
        topology.shutdown().await;
    }
}
