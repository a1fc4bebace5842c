//! Seed 004's flaw, live, with the lock library: a `Lock` taken without replica acknowledgement
//! (`ReplicaSync::Off`) on a master whose replica lags is granted a second time after the
//! master fails, until the first holder's watchdog notices the loss (scenario 1); with the
//! default `ReplicaSync::Auto` every lock write waits for the replica (`WAIT`), so the lock
//! survives the failover and the second client is refused (scenario 2). Writes both timelines
//! and prints where.
//!
//! ```sh
//! cargo run --example failover
//! ```

use locksmith::harness::{Checker, Timeline, Topology};
use locksmith::lock::{Client, ClientOptions, ReplicaSync};
use std::path::PathBuf;
use std::time::Duration;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const RESOURCE: &str = "orders";

/// Where the timelines go: `<target>/tmp/locksmith-timelines/`, as the scenario tests'.
fn timeline_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"),
            PathBuf::from,
        )
        .join("tmp")
        .join("locksmith-timelines")
}

async fn scenario(synced: bool) -> Result<(PathBuf, usize)> {
    let topology = Topology::builder()
        .replicas(1)
        .replication_delay(Duration::from_millis(500))
        .seed(4)
        .build()
        .await?;
    let history = topology.history();
    // A short watchdog (renewal every second) so the example finishes quickly.
    let mut options = ClientOptions::default().watchdog_timeout(Duration::from_secs(3));
    if !synced {
        options = options.replica_sync(ReplicaSync::Off);
    }

    let a = Client::open_with(&topology.front_url(), options.clone()).await?;
    let lock_a = a.lock(RESOURCE);
    let op = history.begin("client-a", RESOURCE);
    lock_a.lock().await?;
    op.acquired(None);
    let mut lost_a = lock_a.lost_signal().ok_or("no lost signal")?;

    topology.fail_master().await?;

    let b = Client::open_with(&topology.front_url(), options).await?;
    let lock_b = b.lock(RESOURCE);
    let op = history.begin("client-b", RESOURCE);
    let b_got = lock_b.try_lock_for(Duration::from_secs(2), None).await?;
    if b_got {
        op.acquired(None);
        // A learns at its next renewal that the promoted master never had its lock.
        let reason = tokio::time::timeout(Duration::from_secs(5), lost_a.lost()).await?;
        eprintln!("  client-a lost the lock: {reason:?}");
        history.begin("client-a", RESOURCE).lost();
        history.begin("client-b", RESOURCE).released();
        lock_b.unlock().await?;
    } else {
        op.failed();
        history.begin("client-a", RESOURCE).released();
        lock_a.unlock().await?;
        // Once A hands over, B gets it.
        let op = history.begin("client-b", RESOURCE);
        if lock_b.try_lock().await? {
            op.acquired(None);
            history.begin("client-b", RESOURCE).released();
            lock_b.unlock().await?;
        } else {
            op.failed();
        }
    }

    let (name, title) = if synced {
        (
            "failover-wait-synced",
            "Lock with WAIT-synced writes (ReplicaSync::Auto): the lock survives the failover",
        )
    } else {
        (
            "failover-plain",
            "Lock (ReplicaSync::Off): the master fails before replicating, the lock is granted twice",
        )
    };
    let path = timeline_dir().join(format!("{name}.html"));
    Timeline::new(title, &history).write_html(&path)?;
    let violations = Checker::check(&history);
    for v in &violations {
        eprintln!("  violation: {v}");
    }
    a.shutdown().await;
    b.shutdown().await;
    topology.shutdown().await;
    Ok((path, violations.len()))
}

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() -> Result<()> {
    let (plain, n) = scenario(false).await?;
    println!(
        "scenario 1 (Lock, ReplicaSync::Off): {n} violation(s); timeline: {}",
        plain.display()
    );
    let (synced, m) = scenario(true).await?;
    println!(
        "scenario 2 (Lock, WAIT-synced): {m} violation(s); timeline: {}",
        synced.display()
    );
    Ok(())
}
