//! Seed 004's flaw, shown by the harness: a lock written to a master that fails before its
//! replica received it is granted again on the promoted replica (scenario 1); acquiring with
//! `WAIT 1` until a replica has it prevents that (scenario 2). Raw `SET NX PX` locks through
//! the front address; the checker asserts the outcome and each scenario writes its timeline.

use locksmith_testkit::harness as harness_support;

use harness_support::{conn, run, try_lock, unlock};
use locksmith_harness::{Checker, History, Topology};
use redis::aio::MultiplexedConnection;
use std::time::Duration;

const LEASE_MS: u64 = 30_000;

async fn topology(seed: u64) -> Topology {
    Topology::builder()
        .replicas(1)
        .replication_delay(Duration::from_millis(1000))
        .seed(seed)
        .build()
        .await
        .unwrap()
}

/// Acquire as the WAIT-synced lock does: `SET NX PX` then `WAIT 1 timeout`; with no replica
/// acknowledging, roll the acquire back and report failure ("None of slaves were synced").
async fn try_lock_synced(con: &mut MultiplexedConnection, key: &str, owner: &str) -> bool {
    let (set, synced): (Option<String>, i64) = redis::pipe()
        .cmd("SET")
        .arg(key)
        .arg(owner)
        .arg("NX")
        .arg("PX")
        .arg(LEASE_MS)
        .cmd("WAIT")
        .arg(1)
        .arg(1500)
        .query_async(con)
        .await
        .unwrap();
    if set.is_some() && synced == 0 {
        let _ = unlock(con, key, owner).await;
        return false;
    }
    set.is_some()
}

async fn acquire(
    history: &History,
    con: &mut MultiplexedConnection,
    who: &str,
    synced: bool,
) -> bool {
    let op = history.begin(who, "lock");
    let ok = if synced {
        try_lock_synced(con, "lock", who).await
    } else {
        try_lock(con, "lock", who, LEASE_MS).await.unwrap()
    };
    if ok {
        op.acquired(None);
    } else {
        op.failed();
    }
    ok
}

#[tokio::test(start_paused = true)]
async fn plain_lock_is_granted_twice_when_the_master_fails_before_replicating() {
    let t = topology(4).await;
    let history = t.history();
    let mut a = conn(&t.front_url()).await;
    assert!(acquire(&history, &mut a, "client-a", false).await);
    // The replica is 1 s behind: it has not seen the lock when the master dies.
    assert!(t.offset(t.replicas()[0]) < t.offset(t.master()));
    let old = t.master();
    let promoted = t.fail_master().await.unwrap();
    assert_ne!(promoted, old);
    tokio::time::advance(Duration::from_millis(100)).await;

    let mut b = conn(&t.front_url()).await;
    assert!(acquire(&history, &mut b, "client-b", false).await);
    tokio::time::advance(Duration::from_millis(2000)).await;
    // Both finish their work and release; A's connection died with the old master.
    let op = history.begin("client-b", "lock");
    assert!(unlock(&mut b, "lock", "client-b").await.unwrap());
    op.released();
    let op = history.begin("client-a", "lock");
    assert!(unlock(&mut a, "lock", "client-a").await.is_err());
    op.released();

    let violations = Checker::check(&history);
    locksmith_testkit::write_timeline!(
        "scenario1-plain-lock-failover",
        "Plain SET NX PX lock, master fails before replicating",
        &history,
    );
    assert_eq!(violations.len(), 1, "{violations:?}");
    let v = &violations[0];
    assert_eq!(
        (v.first.client.as_str(), v.second.client.as_str()),
        ("client-a", "client-b")
    );
    assert!(v.overlap_ms() >= 2000);
    assert!(
        v.faults
            .iter()
            .any(|f| f.starts_with("fail_master n0 -> n1")),
        "{:?}",
        v.faults
    );
    assert_eq!(v.fencing_rejects_stale, None);
}

#[tokio::test(start_paused = true)]
async fn wait_synced_lock_survives_the_failover() {
    let t = topology(5).await;
    let history = t.history();
    let mut a = conn(&t.front_url()).await;
    // The acquire returns only once the replica acknowledged it (1 s later).
    let start = tokio::time::Instant::now();
    assert!(acquire(&history, &mut a, "client-a", true).await);
    assert!(start.elapsed() >= Duration::from_millis(1000));
    assert_eq!(t.offset(t.replicas()[0]), t.offset(t.master()));
    t.fail_master().await.unwrap();

    let mut b = conn(&t.front_url()).await;
    assert!(!acquire(&history, &mut b, "client-b", true).await);
    let holder: Option<String> = run(&mut b, &["GET", "lock"]).await.unwrap();
    assert_eq!(holder.as_deref(), Some("client-a"));
    let op = history.begin("client-a", "lock");
    op.released();

    locksmith_testkit::write_timeline!(
        "scenario2-wait-synced-lock-failover",
        "SET NX PX + WAIT 1: the lock survives failover",
        &history,
    );
    assert!(Checker::check(&history).is_empty());
}

#[tokio::test(start_paused = true)]
async fn wait_synced_acquire_is_refused_while_replication_is_stalled() {
    let t = topology(6).await;
    let history = t.history();
    let _stall = t.stall_replication();
    let mut a = conn(&t.front_url()).await;
    assert!(!acquire(&history, &mut a, "client-a", true).await);
    let holder: Option<String> = run(&mut a, &["GET", "lock"]).await.unwrap();
    assert_eq!(holder, None, "the unsynced acquire was rolled back");
}
