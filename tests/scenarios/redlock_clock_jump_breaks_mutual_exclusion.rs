//! Scenario 4, with the real library: the clock-jump counterexample to RedLock. Client A wins
//! n0, n1, n2 of five masters while n3 and n4 are down; they come back empty. Without a fault,
//! B cannot win a majority. Then n2's clock jumps forward past the lease, A's key there
//! expires early, and B wins n2, n3, n4: both hold the RedLock, and the checker reports it.

use crate::support;

use locksmith::harness::{Checker, NodeId, Topology};
use std::time::Duration;
use support::{acquire, redlock, release};

const SEED: u64 = 4;
const RESOURCE: &str = "ledger";
const WAIT: Duration = Duration::from_millis(1000);
const LEASE: Duration = Duration::from_secs(10);

#[tokio::test(start_paused = true)]
async fn redlock_clock_jump_breaks_mutual_exclusion() {
    support::init_tracing();
    let t = Topology::builder()
        .masters(5)
        .seed(SEED)
        .build()
        .await
        .unwrap();
    let history = t.history();
    let n = NodeId::from_index;
    let (_a_clients, red_a) = redlock(&t, RESOURCE).await;

    // A reaches only n0, n1, n2: n3 and n4 are down while it locks.
    t.kill(n(3)).await.unwrap();
    t.kill(n(4)).await.unwrap();
    assert!(acquire(&history, "client-a", RESOURCE, async {
        red_a
            .try_lock_for(Some(WAIT), Some(LEASE))
            .await
            .map(|o| o.acquired)
    })
    .await
    .unwrap());
    t.restart(n(3)).await.unwrap();
    t.restart(n(4)).await.unwrap();

    // Control: without a clock fault B gets only n3 and n4, no majority.
    let (_b_clients, red_b) = redlock(&t, RESOURCE).await;
    assert!(!acquire(&history, "client-b", RESOURCE, async {
        red_b
            .try_lock_for(Some(WAIT), Some(LEASE))
            .await
            .map(|o| o.acquired)
    })
    .await
    .unwrap());

    // n2's clock jumps past the lease: A's key there expires although A still holds the lock.
    t.clock_jump(n(2), LEASE.as_millis() as i64).unwrap();
    let out = red_b.try_lock_for(Some(WAIT), Some(LEASE));
    let op = history.begin("client-b", RESOURCE);
    let out = out.await.unwrap();
    assert!(out.acquired, "B wins n2, n3, n4: {out:?}");
    op.acquired(None);
    let won: Vec<bool> = out.nodes.iter().map(|o| o.is_acquired()).collect();
    assert_eq!(won, [false, false, true, true, true]);

    tokio::time::sleep(Duration::from_secs(2)).await;
    release(&history, "client-a", RESOURCE, red_a.unlock()).await;
    release(&history, "client-b", RESOURCE, red_b.unlock()).await;

    locksmith_testkit::write_timeline!(
        "redlock_clock_jump_breaks_mutual_exclusion",
        "RedLock on 5 masters: a clock jump on a node of the holder's majority",
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
    assert!(v.overlap_ms() >= 2000, "{v}");
    assert!(
        v.faults.iter().any(|f| f == "clock n2 +10000 ms"),
        "{:?}",
        v.faults
    );
}
