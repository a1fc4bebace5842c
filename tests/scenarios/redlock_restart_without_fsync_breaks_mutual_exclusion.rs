//! Kleppmann's restart counterexample to RedLock, with the real library: client A wins n0, n1,
//! n2 of five masters while n3 and n4 are down; they come back (empty: they held nothing). Right
//! after the acquire, n2 crashes and restarts with its data as `appendfsync everysec` keeps it,
//! minus its last second of writes: A's key there is gone, and B wins n2, n3, n4 while A's
//! lease still runs. Both hold the RedLock; the checker reports it. With `appendfsync always`
//! (nothing lost) n2 comes back with A's key and B cannot win a majority.

use crate::support;

use locksmith::harness::{Checker, NodeId, Restart, Topology};
use locksmith::lock::{Client, RedLock};
use std::time::Duration;
use support::{acquire, redlock, release};

const SEED: u64 = 41;
const RESOURCE: &str = "ledger";
const WAIT: Duration = Duration::from_millis(1000);
const LEASE: Duration = Duration::from_secs(10);

/// Five masters; A holds the RedLock on n0, n1, n2 (n3 and n4 were down while it locked and
/// are back, empty); then n2 restarts keeping its data minus the last `lose_last`.
async fn a_holds_then_n2_restarts(lose_last: Duration) -> (Topology, RedLock, Vec<Client>) {
    let t = Topology::builder()
        .masters(5)
        .seed(SEED)
        .build()
        .await
        .unwrap();
    let history = t.history();
    let n = NodeId::from_index;
    let (a_clients, red_a) = redlock(&t, RESOURCE).await;
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
    // Right after the acquire: A's write to n2 is younger than `lose_last`.
    t.restart_with(n(2), Restart::keep_data(lose_last))
        .await
        .unwrap();
    (t, red_a, a_clients)
}

#[tokio::test(start_paused = true)]
async fn redlock_restart_without_fsync_breaks_mutual_exclusion() {
    support::init_tracing();
    let (t, red_a, _a_clients) = a_holds_then_n2_restarts(Duration::from_millis(1000)).await;
    let history = t.history();

    let (_b_clients, red_b) = redlock(&t, RESOURCE).await;
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
        "redlock_restart_without_fsync_breaks_mutual_exclusion",
        "RedLock on 5 masters: a node of the holder's majority restarts without its last second",
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
    assert!(
        v.faults
            .iter()
            .any(|f| f == "restart n2 (kept data, lost last 1000 ms)"),
        "{:?}",
        v.faults
    );
}

#[tokio::test(start_paused = true)]
async fn redlock_holds_when_the_restarted_node_lost_nothing() {
    support::init_tracing();
    let (t, red_a, _a_clients) = a_holds_then_n2_restarts(Duration::ZERO).await;
    let history = t.history();

    // n2 came back with A's key (its deadline intact): B can win only n3 and n4.
    let (_b_clients, red_b) = redlock(&t, RESOURCE).await;
    let out = red_b.try_lock_for(Some(WAIT), Some(LEASE));
    let op = history.begin("client-b", RESOURCE);
    let out = out.await.unwrap();
    assert!(!out.acquired, "{out:?}");
    op.failed();
    let mut n2 = redis::Client::open(t.url(NodeId::from_index(2)))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let pttl: i64 = redis::cmd("PTTL")
        .arg(RESOURCE)
        .query_async(&mut n2)
        .await
        .unwrap();
    assert!(pttl > 0, "A's key is back on n2 with its deadline: {pttl}");
    release(&history, "client-a", RESOURCE, red_a.unlock()).await;

    let violations = Checker::check(&history);
    assert!(violations.is_empty(), "{violations:?}");
}
