//! Sentinel: a client opened with `Client::open_sentinel` finds the master through the sentinel
//! and follows `SENTINEL FAILOVER` to the promoted replica, moving its command and pub/sub
//! connections; a waiter blocked across the failover is woken there.
//!
//! Real Redis only (master, replica, one sentinel with quorum 1). A failover takes a few seconds
//! locally; every wait is bounded (30 s) and generous, never a timing assertion.

use crate::support;

use std::time::Duration;

use locksmith_lock::{Client, ClientOptions, ReplicaSync};
use support::{eventually, name, real_redis, Sentinel};

const MASTER: &str = "mymaster";
const BOUND: Duration = Duration::from_secs(30);

async fn role(url: &str) -> String {
    let mut c = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(&mut c)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.trim().strip_prefix("role:"))
        .unwrap_or("")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_follows_sentinel_failover_to_the_new_master() {
    let Some(master) = real_redis(&[]) else {
        return;
    };
    let mport = master.port.to_string();
    let Some(replica) = real_redis(&["--replicaof", "127.0.0.1", &mport]) else {
        return;
    };
    // The replica must be in sync before the sentinel can promote it.
    let raw = master.raw().await;
    assert!(
        eventually(BOUND, || {
            let mut raw = raw.clone();
            async move {
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(&mut raw)
                    .await
                    .unwrap();
                info.contains("connected_slaves:1") && info.contains("state=online")
            }
        })
        .await,
        "replica never came online"
    );
    let Some(sentinel) = Sentinel::start(MASTER, master.port) else {
        return;
    };

    // ReplicaSync::Off: right after the switch the new master has no replica until the sentinel
    // turns the old master into one; this test is about following, not WAIT.
    let options = ClientOptions::default().replica_sync(ReplicaSync::Off);
    let c = Client::open_sentinel(&[sentinel.url.as_str()], MASTER, options.clone())
        .await
        .unwrap();
    assert_eq!(c.master_name(), Some(MASTER));
    assert_eq!(c.master_addr(), Some(("127.0.0.1".to_owned(), master.port)));

    let n = name("sentinel");
    let held = c.lock(&n);
    held.lock().await.unwrap();
    assert!(held.is_held_by_me().await.unwrap());
    // The lock must be on the replica before the failover, as a user's would be only with
    // `WAIT`: Sentinel promotes the replica at whatever offset it has, and a replica that has
    // just come online may not have received a byte of the stream yet (it was promoted at
    // offset 0 in 4 runs of 40: the new master lacked the key, the waiter took it there and
    // the holder's unlock answered NotOwner). `WAIT` counts the writes of the connection it is
    // sent on: the client's own, which took the lock.
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(BOUND.as_millis() as u64)
        .query_async(&mut c.connection())
        .await
        .unwrap();
    assert_eq!(acked, 1, "the replica never acknowledged the lock");
    let on_replica: bool = redis::cmd("HEXISTS")
        .arg(&n)
        .arg(held.owner_field())
        .query_async(&mut replica.raw().await)
        .await
        .unwrap();
    assert!(on_replica, "WAIT returned before the replica had the lock");

    // A second owner waits on the unlock channel across the failover.
    let waiter_lock = c.lock(&n);
    let waiter = tokio::spawn(async move {
        let got = waiter_lock.try_lock_for(BOUND, None).await;
        (waiter_lock, got)
    });

    // The sentinel needs to have discovered the replica; FAILOVER answers NOGOODSLAVE until then.
    let sentinel_client = redis::Client::open(sentinel.url.as_str()).unwrap();
    let mut s = sentinel_client
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    assert!(
        eventually(BOUND, || {
            let mut s = s.clone();
            async move {
                let r: redis::RedisResult<String> = redis::cmd("SENTINEL")
                    .arg("FAILOVER")
                    .arg(MASTER)
                    .query_async(&mut s)
                    .await;
                r.is_ok()
            }
        })
        .await,
        "sentinel never accepted FAILOVER"
    );

    assert!(
        eventually(BOUND, || {
            let c = c.clone();
            let port = replica.port;
            async move { c.master_addr().map(|a| a.1) == Some(port) }
        })
        .await,
        "client did not follow +switch-master"
    );
    assert_eq!(role(&replica.url).await, "master");
    assert!(c.metrics().master_switches >= 1);
    let addr: Option<(String, u16)> = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg(MASTER)
        .query_async(&mut s)
        .await
        .unwrap();
    assert_eq!(addr.map(|a| a.1), Some(replica.port));

    // The holder's lock was replicated before the failover: releasing it on the new master
    // publishes there, and the waiter (re-subscribed on the new master) takes it.
    held.unlock().await.unwrap();
    let (waiter_lock, got) = tokio::time::timeout(BOUND, waiter).await.unwrap().unwrap();
    assert!(got.unwrap(), "waiter did not acquire on the new master");
    let mut new_raw = replica.raw().await;
    let on_new: bool = redis::cmd("HEXISTS")
        .arg(&n)
        .arg(waiter_lock.owner_field())
        .query_async(&mut new_raw)
        .await
        .unwrap();
    assert!(on_new, "the lock is not on the new master");
    waiter_lock.unlock().await.unwrap();

    // A fresh lock is taken on the new master too.
    let fresh = c.lock(&name("sentinel-fresh"));
    assert!(fresh.try_lock().await.unwrap());
    let on_new: bool = redis::cmd("EXISTS")
        .arg(fresh.name())
        .query_async(&mut new_raw)
        .await
        .unwrap();
    assert!(on_new);
    fresh.unlock().await.unwrap();
    c.shutdown().await;
}

#[tokio::test]
async fn unknown_master_name_is_an_error() {
    let Some(master) = real_redis(&[]) else {
        return;
    };
    let Some(sentinel) = Sentinel::start(MASTER, master.port) else {
        return;
    };
    let err = Client::open_sentinel(&[sentinel.url.as_str()], "nope", ClientOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, locksmith_lock::LockError::MasterNotFound { .. }),
        "{err:?}"
    );
}

// The Sentinel follower keeps the master's password and database (and TLS scheme) across a
// failover, and finds the new master by re-polling too: here on our harness topology with
// `requirepass`, whose Sentinel endpoint also requires AUTH.
#[tokio::test]
async fn the_sentinel_follower_keeps_password_and_database_across_a_failover() {
    use locksmith_harness::Topology;
    let topology = Topology::builder()
        .replicas(1)
        .sentinel(0)
        .requirepass("s3cret")
        .build()
        .await
        .unwrap();
    let sentinel = format!("redis://:s3cret@{}/", topology.sentinel_addr().unwrap());
    let options = ClientOptions::default().replica_sync(ReplicaSync::Off);
    let c = Client::open_sentinel_with_master(
        &[sentinel.as_str()],
        topology.master_name(),
        "redis://:s3cret@localhost/3",
        options,
    )
    .await
    .unwrap();
    let n = name("sentinel-auth");
    let lock = c.lock(&n);
    lock.lock().await.unwrap();
    let master_url = |node| format!("redis://:s3cret@{}/3", topology.addr(node));
    let in_db3 = |url: String, key: String| async move {
        let mut raw = redis::Client::open(url)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let exists: bool = redis::cmd("EXISTS")
            .arg(&key)
            .query_async(&mut raw)
            .await
            .unwrap();
        exists
    };
    assert!(in_db3(master_url(topology.master()), n.clone()).await);
    lock.unlock().await.unwrap();
    // Let the release reach the replica first: the harness's failover loses what it lacks.
    let mut raw = redis::Client::open(master_url(topology.master()))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(acked, 1);
    let before = c.master_addr();
    let new_master = topology.fail_master().await.unwrap();
    assert!(
        eventually(Duration::from_secs(10), || async {
            c.master_addr() != before
        })
        .await,
        "the client did not follow the failover"
    );
    let after = c.lock(&n);
    assert!(
        eventually(Duration::from_secs(10), || async {
            after.try_lock().await.is_ok_and(|got| got)
        })
        .await,
        "no lock on the new master"
    );
    assert!(in_db3(master_url(new_master), n.clone()).await);
    after.unlock().await.unwrap();
}

#[tokio::test]
async fn open_sentinel_reaches_the_master_with_the_sentinels_password() {
    use locksmith_harness::Topology;
    let topology = Topology::builder()
        .replicas(1)
        .sentinel(0)
        .requirepass("s3cret")
        .build()
        .await
        .unwrap();
    let sentinel = format!("redis://:s3cret@{}/", topology.sentinel_addr().unwrap());
    let options = ClientOptions::default().replica_sync(ReplicaSync::Off);
    let c = Client::open_sentinel(&[sentinel.as_str()], topology.master_name(), options)
        .await
        .unwrap();
    let lock = c.lock(&name("sentinel-password"));
    assert!(lock.try_lock().await.unwrap());
    lock.unlock().await.unwrap();
}

// Issue 36, item 15: the Sentinel follower re-polls the master's address every second on one
// connection to the sentinel, not on a new one each time: over 3.5 s the real Sentinel
// accepts no new connection from it (it used to accept one a second).
#[tokio::test]
async fn the_sentinel_follower_repolls_on_one_connection() {
    let Some(master) = real_redis(&[]) else {
        return;
    };
    let Some(sentinel) = Sentinel::start(MASTER, master.port) else {
        return;
    };
    let options = ClientOptions::default().replica_sync(ReplicaSync::Off);
    let c = Client::open_sentinel(&[sentinel.url.as_str()], MASTER, options)
        .await
        .unwrap();
    let mut s = redis::Client::open(sentinel.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let accepted = |s: redis::aio::MultiplexedConnection| async move {
        let mut s = s;
        let info: String = redis::cmd("INFO")
            .arg("stats")
            .query_async(&mut s)
            .await
            .unwrap();
        info.lines()
            .find_map(|l| l.trim().strip_prefix("total_connections_received:"))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap()
    };
    // Past the follower's start-up (its subscription, its first question).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = accepted(s.clone()).await;
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let after = accepted(s.clone()).await;
    assert!(
        after - before <= 1,
        "{} connections accepted in 3.5 s",
        after - before
    );
    let _ = &mut s;
    c.shutdown().await;
}

// Issue 36, item 12: a lock the new master lacks (replication stalled while it was taken, then
// the master failed) is reported lost as soon as the client follows the switch, because the
// switch renews every held lock at once; with a 60 s watchdog the next periodic renewal would
// come 20 s after the acquisition. On our harness topology (master, replica, Sentinel).
#[tokio::test]
async fn a_lock_lost_in_a_failover_is_noticed_when_the_client_follows_it() {
    use locksmith_harness::Topology;
    use locksmith_lock::LostReason;
    let topology = Topology::builder()
        .replicas(1)
        .sentinel(0)
        .build()
        .await
        .unwrap();
    let sentinel = format!("redis://{}/", topology.sentinel_addr().unwrap());
    let options = ClientOptions::default()
        .replica_sync(ReplicaSync::Off)
        .watchdog_timeout(Duration::from_secs(60));
    let c = Client::open_sentinel(&[sentinel.as_str()], topology.master_name(), options)
        .await
        .unwrap();
    let stalled = topology.stall_replication();
    let lock = c.lock(&name("sentinel-lost"));
    lock.lock().await.unwrap();
    let mut signal = lock.lost_signal().unwrap();
    let before = c.master_addr();
    topology.fail_master().await.unwrap();
    drop(stalled);
    assert!(
        eventually(Duration::from_secs(10), || async {
            c.master_addr() != before
        })
        .await,
        "the client did not follow the failover"
    );
    let lost = tokio::time::timeout(Duration::from_secs(8), signal.lost())
        .await
        .expect("the loss is noticed when the client follows the failover");
    assert_eq!(lost, Some(LostReason::NotHeld));
    assert!(lock.unlock().await.unwrap_err().is_not_owner());
}
