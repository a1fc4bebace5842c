//! Scenario 6, with the real library: a `Lock` held under the watchdog stays held well past its
//! lease; then its node restarts empty (no persistence). A second client acquires the now free
//! lock at once; the holder's next renewal finds its field gone and the lock-lost signal fires
//! (`LostReason::NotHeld`). The holder stops at that signal, so the checker sees the overlap end
//! exactly at the loss, no later than one renewal period after the restart.

use crate::support;

use locksmith::harness::{Checker, EventKind, Topology};
use locksmith::lock::{Client, LostReason};
use std::time::Duration;
use support::{acquire, record_loss, release};

const SEED: u64 = 6;
const RESOURCE: &str = "orders";
/// Redisson's default lockWatchdogTimeout; renewed every 10 s.
const WATCHDOG: Duration = Duration::from_secs(30);

#[tokio::test(start_paused = true)]
async fn watchdog_holder_loses_lock_when_node_restarts_empty() {
    support::init_tracing();
    let t = Topology::builder().seed(SEED).build().await.unwrap();
    let history = t.history();
    let a = Client::open(&t.front_url()).await.unwrap();
    assert_eq!(a.options().watchdog_timeout, WATCHDOG);
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

    // The watchdog keeps it alive past the lease.
    tokio::time::sleep(Duration::from_secs(35)).await;
    assert!(lock_a.is_held_by_me().await.unwrap());
    assert!(a.metrics().renewals >= 3);

    let restarted_at = t.now_ms();
    t.restart(t.master()).await.unwrap();
    let b = Client::open(&t.front_url()).await.unwrap();
    let lock_b = b.lock(RESOURCE);
    assert!(
        acquire(&history, "client-b", RESOURCE, lock_b.try_lock())
            .await
            .unwrap(),
        "the restarted node is empty"
    );
    let reason = tokio::time::timeout(WATCHDOG / 3, lost_a)
        .await
        .expect("the next renewal reports the loss")
        .unwrap();
    assert_eq!(reason, Some(LostReason::NotHeld));
    assert!(lock_a.unlock().await.unwrap_err().is_not_owner());
    tokio::time::sleep(Duration::from_secs(1)).await;
    release(&history, "client-b", RESOURCE, lock_b.unlock())
        .await
        .unwrap();

    locksmith_testkit::write_timeline!(
        "watchdog_holder_loses_lock_when_node_restarts_empty",
        "Watchdog-held Lock, node restarts empty: lock-lost signal",
        &history,
    );
    let lost_at = history
        .events()
        .into_iter()
        .find(|e| e.kind == EventKind::Lost)
        .unwrap()
        .start_ms;
    assert!(lost_at >= restarted_at && lost_at - restarted_at <= 10_000);
    let violations = Checker::check(&history);
    assert_eq!(violations.len(), 1, "{violations:?}");
    let v = &violations[0];
    eprintln!("violation: {v}");
    assert_eq!(
        (v.first.client.as_str(), v.second.client.as_str()),
        ("client-a", "client-b")
    );
    // No overlap beyond the loss: A's hold ends at its lost signal.
    assert!(!v.first.open);
    assert_eq!(v.first.to_ms, lost_at);
    assert_eq!(v.overlap_to_ms, lost_at);
    assert!(v.faults.iter().any(|f| f.starts_with("restart n0")));
}
