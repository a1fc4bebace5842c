//! Scenario 1, with the real library: a `Lock` taken through the front address without replica
//! acknowledgement (`ReplicaSync::Off`) on a master whose replica lags is lost when the master
//! fails before replicating it; a second client acquires it on the promoted replica while the
//! first still believes it holds it, until its watchdog finds the lock gone. The checker reports
//! the double grant.

use crate::support;

use locksmith::harness::{Checker, Topology};
use locksmith::lock::{Client, ClientOptions, LostReason, ReplicaSync};
use std::time::Duration;
use support::{acquire, record_loss, release};

const SEED: u64 = 1;
const RESOURCE: &str = "orders";

#[tokio::test(start_paused = true)]
async fn plain_lock_double_grants_after_failover() {
    support::init_tracing();
    let t = Topology::builder()
        .replicas(1)
        .replication_delay(Duration::from_millis(1000))
        .seed(SEED)
        .build()
        .await
        .unwrap();
    let history = t.history();
    let options = ClientOptions::default().replica_sync(ReplicaSync::Off);

    let a = Client::open_with(&t.front_url(), options.clone())
        .await
        .unwrap();
    let lock_a = a.lock(RESOURCE);
    assert!(acquire(&history, "client-a", RESOURCE, async {
        lock_a.lock().await.map(|()| true)
    })
    .await
    .unwrap());
    let lost_a = record_loss(
        &history,
        "client-a",
        RESOURCE,
        lock_a.lost_signal().unwrap(),
    );
    // The replica is a second behind: it has not seen the lock when the master dies.
    let (old, replica) = (t.master(), t.replicas()[0]);
    assert!(t.offset(replica) < t.offset(old));
    let promoted = t.fail_master().await.unwrap();
    assert_eq!(promoted, replica);
    tokio::time::sleep(Duration::from_millis(100)).await;

    let b = Client::open_with(&t.front_url(), options).await.unwrap();
    let lock_b = b.lock(RESOURCE);
    assert!(
        acquire(&history, "client-b", RESOURCE, lock_b.try_lock())
            .await
            .unwrap(),
        "the promoted replica never saw A's lock"
    );
    // A learns it lost the lock at its next renewal (every 10 s): its field is not in the hash.
    let reason = tokio::time::timeout(Duration::from_secs(15), lost_a)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reason, Some(LostReason::NotHeld));
    release(&history, "client-b", RESOURCE, lock_b.unlock())
        .await
        .unwrap();
    let err = lock_a.unlock().await.unwrap_err();
    assert!(err.is_not_owner(), "{err:?}");

    locksmith_testkit::write_timeline!(
        "plain_lock_double_grants_after_failover",
        "Lock (ReplicaSync::Off): the master fails before replicating, the lock is granted twice",
        &history,
    );
    let violations = Checker::check(&history);
    assert_eq!(violations.len(), 1, "{violations:?}");
    let v = &violations[0];
    eprintln!("violation: {v}");
    assert_eq!(
        (v.first.client.as_str(), v.second.client.as_str()),
        ("client-a", "client-b")
    );
    assert!(!v.first.open, "A's hold ends when its lost signal fires");
    // B acquired right after the failover; A noticed at its first renewal, 10 s after acquiring.
    assert!(v.overlap_ms() >= 9000 && v.overlap_ms() <= 10_000, "{v}");
    assert!(
        v.faults
            .iter()
            .any(|f| f.starts_with("fail_master n0 -> n1")),
        "{:?}",
        v.faults
    );
    t.shutdown().await;
}
