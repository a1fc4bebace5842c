//! RedLock on five independent masters, with raw `SET NX PX` on each node and the validity
//! math of the RedLock algorithm: losing one or two masters keeps mutual exclusion (scenario
//! 3); a forward clock jump on a node of the holder's majority lets a second client win a
//! majority, and the checker reports it (scenario 4, the clock-jump counterexample).

use locksmith_testkit::harness as harness_support;

use harness_support::{conn, try_conn, try_lock, unlock};
use locksmith_harness::{Checker, History, NodeId, Topology};
use redis::aio::MultiplexedConnection;
use std::time::Duration;

const TTL_MS: u64 = 10_000;
/// Per-node timeout, small next to the TTL, as the algorithm asks.
const NODE_TIMEOUT: Duration = Duration::from_millis(50);

/// One client's connections to the five masters (None where it could not connect).
struct Client {
    name: String,
    nodes: Vec<Option<MultiplexedConnection>>,
}

impl Client {
    async fn connect(t: &Topology, name: &str) -> Client {
        let mut nodes = Vec::new();
        for n in t.nodes() {
            nodes.push(try_conn(&t.url(n)).await.ok());
        }
        Client {
            name: name.into(),
            nodes,
        }
    }

    /// Locks a majority within the validity time or releases what it got: returns the
    /// validity left in ms.
    async fn lock(&mut self, history: &History, key: &str) -> Option<u64> {
        let op = history.begin(self.name.clone(), key);
        let start = tokio::time::Instant::now();
        let mut got = 0;
        for con in self.nodes.iter_mut().flatten() {
            let attempt =
                tokio::time::timeout(NODE_TIMEOUT, try_lock(con, key, &self.name, TTL_MS));
            if let Ok(Ok(true)) = attempt.await {
                got += 1;
            }
        }
        let validity = validity_ms(TTL_MS, start.elapsed());
        if got >= quorum(self.nodes.len()) && validity > 0 {
            op.acquired(None);
            Some(validity as u64)
        } else {
            op.failed();
            self.unlock_all(key).await;
            None
        }
    }

    async fn unlock_all(&mut self, key: &str) {
        for con in self.nodes.iter_mut().flatten() {
            let _ = tokio::time::timeout(NODE_TIMEOUT, unlock(con, key, &self.name)).await;
        }
    }

    async fn release(&mut self, history: &History, key: &str) {
        let op = history.begin(self.name.clone(), key);
        self.unlock_all(key).await;
        op.released();
    }
}

fn quorum(n: usize) -> usize {
    n / 2 + 1
}

/// The RedLock validity: TTL minus the time spent acquiring minus the clock drift allowance
/// (1% of the TTL plus 2 ms).
fn validity_ms(ttl_ms: u64, elapsed: Duration) -> i64 {
    let drift = ttl_ms / 100 + 2;
    ttl_ms as i64 - elapsed.as_millis() as i64 - drift as i64
}

async fn five_masters(seed: u64) -> Topology {
    Topology::builder()
        .masters(5)
        .seed(seed)
        .build()
        .await
        .unwrap()
}

#[test]
fn validity_subtracts_elapsed_time_and_drift() {
    assert_eq!(
        validity_ms(10_000, Duration::from_millis(50)),
        10_000 - 50 - 102
    );
    assert!(validity_ms(100, Duration::from_millis(99)) < 0);
    assert_eq!(quorum(5), 3);
}

#[tokio::test(start_paused = true)]
async fn redlock_keeps_mutual_exclusion_when_one_or_two_masters_die() {
    for killed in [1usize, 2] {
        let t = five_masters(30 + killed as u64).await;
        let history = t.history();
        let mut a = Client::connect(&t, "client-a").await;
        assert!(a.lock(&history, "res").await.is_some());
        for i in 0..killed {
            t.kill(NodeId::from_index(i)).await.unwrap();
        }
        let mut b = Client::connect(&t, "client-b").await;
        assert!(b.lock(&history, "res").await.is_none());
        // Even restarted empty, the dead masters cannot give B a majority.
        for i in 0..killed {
            t.restart(NodeId::from_index(i)).await.unwrap();
        }
        let mut b = Client::connect(&t, "client-b").await;
        assert!(b.lock(&history, "res").await.is_none());
        tokio::time::advance(Duration::from_millis(2000)).await;
        a.release(&history, "res").await;
        let mut b = Client::connect(&t, "client-b").await;
        assert!(b.lock(&history, "res").await.is_some());
        b.release(&history, "res").await;
        locksmith_testkit::write_timeline!(
            &format!("scenario3-redlock-kill-{killed}"),
            &format!("RedLock on 5 masters, {killed} killed: no double grant"),
            &history,
        );
        assert!(Checker::check(&history).is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn a_clock_jump_in_the_holders_majority_breaks_redlock() {
    let t = five_masters(44).await;
    let history = t.history();
    let n = |i: usize| NodeId::from_index(i);
    // A reaches only n0, n1, n2 (n3 and n4 drop its requests) and wins 3 of 5.
    let mut a = Client::connect(&t, "client-a").await;
    let (g3, g4) = (t.drop_traffic(n(3)).unwrap(), t.drop_traffic(n(4)).unwrap());
    assert!(a.lock(&history, "res").await.is_some());
    drop((g3, g4));
    // n2's clock jumps past the TTL: A's key there expires early.
    t.clock_jump(n(2), TTL_MS as i64).unwrap();
    let mut b = Client::connect(&t, "client-b").await;
    assert!(b.lock(&history, "res").await.is_some(), "B wins n2, n3, n4");
    tokio::time::advance(Duration::from_millis(3000)).await;
    a.release(&history, "res").await;
    b.release(&history, "res").await;

    locksmith_testkit::write_timeline!(
        "scenario4-redlock-clock-jump",
        "RedLock: a clock jump on a majority node",
        &history,
    );
    let violations = Checker::check(&history);
    assert_eq!(violations.len(), 1, "{violations:?}");
    let v = &violations[0];
    assert_eq!(
        (v.first.client.as_str(), v.second.client.as_str()),
        ("client-a", "client-b")
    );
    assert!(v.overlap_ms() >= 3000);
    assert!(
        v.faults.iter().any(|f| f == "clock n2 +10000 ms"),
        "{:?}",
        v.faults
    );
    // A correct RedLock run without the jump: B is refused.
    let t = five_masters(45).await;
    let history = t.history();
    let mut a = Client::connect(&t, "client-a").await;
    let (g3, g4) = (t.drop_traffic(n(3)).unwrap(), t.drop_traffic(n(4)).unwrap());
    assert!(a.lock(&history, "res").await.is_some());
    drop((g3, g4));
    let mut b = Client::connect(&t, "client-b").await;
    assert!(b.lock(&history, "res").await.is_none());
    let _ = conn(&t.url(n(0))).await;
}
