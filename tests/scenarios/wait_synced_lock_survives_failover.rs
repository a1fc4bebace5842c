//! Scenario 2, with the real library: the default `ReplicaSync::Auto` follows every lock write
//! with `WAIT <replicas>`, so an acquire is confirmed only once the replica has the lock; after
//! the master fails, the promoted replica still holds it, the first client keeps renewing it
//! there and a second client does not get it. With replication stalled, the acquire is rolled
//! back and reported as `ReplicasNotSynced` (Redisson's "None of slaves were synced").

use crate::support;

use locksmith::harness::{Checker, Topology};
use locksmith::lock::{Client, ClientOptions};
use std::time::Duration;
use support::{acquire, record_loss, release};

const RESOURCE: &str = "orders";

async fn topology(seed: u64) -> Topology {
    Topology::builder()
        .replicas(1)
        .replication_delay(Duration::from_millis(200))
        .seed(seed)
        .build()
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn wait_synced_lock_survives_failover() {
    support::init_tracing();
    let t = topology(2).await;
    let history = t.history();
    let a = Client::open(&t.front_url()).await.unwrap();
    assert_eq!(a.sync_replicas(), 1, "Auto found the replica");
    let lock_a = a.lock(RESOURCE);
    let start = tokio::time::Instant::now();
    assert!(acquire(&history, "client-a", RESOURCE, async {
        lock_a.lock().await.map(|()| true)
    })
    .await
    .unwrap());
    // Confirmed only after the replica acknowledged it (200 ms of replication delay).
    assert!(start.elapsed() >= Duration::from_millis(200));
    let replica = t.replicas()[0];
    assert_eq!(t.offset(replica), t.offset(t.master()));
    let lost_a = record_loss(
        &history,
        "client-a",
        RESOURCE,
        lock_a.lost_signal().unwrap(),
    );

    let promoted = t.fail_master().await.unwrap();
    assert_eq!(promoted, replica);
    let b = Client::open(&t.front_url()).await.unwrap();
    let lock_b = b.lock(RESOURCE);
    assert!(!acquire(&history, "client-b", RESOURCE, lock_b.try_lock())
        .await
        .unwrap());
    // B waits 25 s: A's watchdog keeps renewing the lock on the new master all along.
    assert!(!acquire(
        &history,
        "client-b",
        RESOURCE,
        lock_b.try_lock_for(Duration::from_secs(25), None)
    )
    .await
    .unwrap());
    assert!(lock_a.is_held_by_me().await.unwrap());
    assert!(!lost_a.is_finished(), "A never lost the lock");
    assert!(a.metrics().renewals >= 2);

    // A hands over; B gets it.
    release(&history, "client-a", RESOURCE, lock_a.unlock())
        .await
        .unwrap();
    assert_eq!(lost_a.await.unwrap(), None);
    assert!(acquire(
        &history,
        "client-b",
        RESOURCE,
        lock_b.try_lock_for(Duration::from_secs(1), None)
    )
    .await
    .unwrap());
    release(&history, "client-b", RESOURCE, lock_b.unlock())
        .await
        .unwrap();

    locksmith_testkit::write_timeline!(
        "wait_synced_lock_survives_failover",
        "Lock with WAIT-synced writes (ReplicaSync::Auto): the lock survives failover",
        &history,
    );
    let violations = Checker::check(&history);
    assert!(violations.is_empty(), "{violations:?}");
    t.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn wait_synced_acquire_is_rolled_back_while_replication_is_stalled() {
    support::init_tracing();
    let t = topology(3).await;
    let history = t.history();
    let a = Client::open_with(
        &t.front_url(),
        ClientOptions::default().replica_sync_timeout(Duration::from_millis(500)),
    )
    .await
    .unwrap();
    let _stall = t.stall_replication();
    let lock_a = a.lock(RESOURCE);
    let err = acquire(&history, "client-a", RESOURCE, async {
        lock_a.lock().await.map(|()| true)
    })
    .await
    .unwrap_err();
    assert!(err.is_replicas_not_synced(), "{err:?}");
    assert!(
        !lock_a.is_locked().await.unwrap(),
        "the acquire was rolled back"
    );
    assert!(!lock_a.is_renewing());
    assert!(lock_a.lost_signal().is_none());

    locksmith_testkit::write_timeline!(
        "wait_synced_acquire_rolled_back_while_stalled",
        "Lock with WAIT-synced writes, replication stalled: ReplicasNotSynced",
        &history,
    );
    assert!(Checker::holds(&history).is_empty());
    t.shutdown().await;
}
