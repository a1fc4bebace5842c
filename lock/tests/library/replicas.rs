//! Replica acknowledgement: with replicas, each lock write is followed by `WAIT`; an acquisition
//! no replica acknowledged is rolled back and reported, as Redisson's "None of slaves were synced".

use crate::support;

use std::time::Duration;

use locksmith_lock::{Client, ClientOptions, ReplicaSync};
use support::{eventually, name, real_redis, Backend};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[tokio::test]
async fn with_a_replica_lock_writes_wait_for_it_and_fail_cleanly_without_it() {
    // Redis 7 waits `repl-diskless-sync-delay` (5 s) for more replicas before a full sync.
    let Some(master) = real_redis(&["--repl-diskless-sync-delay", "0"]) else {
        return;
    };
    let port = master.port.to_string();
    let Some(mut replica) = real_redis(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--enable-debug-command",
        "yes",
    ]) else {
        return;
    };
    let mut raw = master.raw().await;
    assert!(
        eventually(Duration::from_secs(30), || {
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
        .await
    );
    // A healthy replica acknowledges in well under a second, but a loaded CI machine may take
    // longer than the short timeout the failure cases below use: the patient client checks that
    // WAIT returns only once the replica has the lock.
    let patient = master
        .client_with(ClientOptions::default().replica_sync_timeout(Duration::from_secs(10)))
        .await;
    assert_eq!(patient.sync_replicas(), 1);
    let n = name("replicated");
    let l = patient.lock(&n);
    l.lock().await.unwrap();
    let mut rraw = replica.raw().await;
    let on_replica: bool = redis::cmd("HEXISTS")
        .arg(&n)
        .arg(l.owner_field())
        .query_async(&mut rraw)
        .await
        .unwrap();
    assert!(on_replica, "WAIT returned before the replica had the lock");
    l.unlock().await.unwrap();

    // The replica is connected but does not answer (busy for 3 s): acquisitions are not
    // acknowledged, rolled back, and reported.
    let options = ClientOptions::default().replica_sync_timeout(Duration::from_millis(200));
    let c = master.client_with(options.clone()).await;
    assert_eq!(c.sync_replicas(), 1);
    let mut sleeper = replica.raw().await;
    let sleeping = tokio::spawn(async move {
        let _: redis::RedisResult<()> = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg(3)
            .query_async(&mut sleeper)
            .await;
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let err = c.lock(&n).lock().await.unwrap_err();
    assert!(err.is_replicas_not_synced(), "{err:?}");
    let exists: bool = redis::cmd("EXISTS")
        .arg(&n)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(!exists, "a rolled-back acquisition left the lock behind");
    let _ = sleeping.await;

    // The replica is gone for good: once the master no longer lists it, the client re-reads
    // the replica count (Redisson #4706) and acquisitions no longer wait for it.
    replica.stop();
    let l = c.lock(&n);
    assert!(
        eventually(Duration::from_secs(10), || async {
            l.try_lock().await.is_ok_and(|got| got)
        })
        .await,
        "acquisitions kept failing after the replica was gone"
    );
    assert_eq!(c.sync_replicas(), 0);
    l.unlock().await.unwrap();

    // Off: no WAIT at all.
    let off = master
        .client_with(options.replica_sync(ReplicaSync::Off))
        .await;
    assert_eq!(off.sync_replicas(), 0);
    let l = off.lock(&n);
    l.lock().await.unwrap();
    l.unlock().await.unwrap();
}

/// A master with one replica whose `DEBUG SLEEP` stops it acknowledging: two of ours, and two
/// real `redis-server`s when one is on the PATH. Returned once the replica is online.
async fn replicated_pairs() -> Vec<(Backend, Backend)> {
    let pairs = unattached_pairs().await;
    for (master, replica) in &pairs {
        attach(master, replica).await;
    }
    pairs
}

/// [`replicated_pairs`] before the replica follows its master.
async fn unattached_pairs() -> Vec<(Backend, Backend)> {
    let mut pairs = Vec::new();
    let master = support::in_process().await;
    let replica = support::in_process_with_debug().await;
    pairs.push((master, replica));
    if let Some(master) = real_redis(&["--repl-diskless-sync-delay", "0"]) {
        if let Some(replica) = real_redis(&["--enable-debug-command", "yes"]) {
            pairs.push((master, replica));
        }
    }
    pairs
}

/// Makes `replica` follow `master`; returns once the master lists it online.
async fn attach(master: &Backend, replica: &Backend) {
    {
        let mut r = replica.raw().await;
        let _: () = redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(master.port)
            .query_async(&mut r)
            .await
            .unwrap();
        let raw = master.raw().await;
        assert!(
            eventually(Duration::from_secs(30), || {
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
            "{}: the replica did not come online",
            master.name
        );
    }
}

// Issue 36, item 15: a client with ReplicaSync::Auto that found no replica when it connected
// asks again (at most once a second, in the background, never on the write's path), so a
// replica attached later is waited for from then on.
#[tokio::test]
async fn an_auto_client_notices_a_replica_attached_after_it_connected() {
    for (master, replica) in unattached_pairs().await {
        let c = master.client().await;
        assert_eq!(c.sync_replicas(), 0);
        attach(&master, &replica).await;
        let l = c.lock(&name("auto-recheck"));
        assert!(
            eventually(Duration::from_secs(10), || async {
                l.lock().await.unwrap();
                l.unlock().await.unwrap();
                c.sync_replicas() == 1
            })
            .await,
            "{}: the client never noticed the replica",
            master.name
        );
    }
}

// Issue 36, item 3: a lock write's WAIT runs on a connection of its own (Redisson sends the
// write and its WAIT as one batch on a pooled connection). While a lagging replica holds the
// WAIT of one acquisition, the client's other commands are answered: they do not queue behind
// the WAIT on the shared connection.
#[tokio::test]
async fn a_wait_for_a_lagging_replica_does_not_stall_the_clients_other_commands() {
    for (master, replica) in replicated_pairs().await {
        let c = master
            .client_with(
                ClientOptions::default()
                    .replica_sync(ReplicaSync::Replicas(1))
                    .replica_sync_timeout(Duration::from_secs(30)),
            )
            .await;
        let n = name("lagging");
        let other = name("lagging-other");
        let free = c.lock(&other);
        free.lock_with_lease(Duration::from_secs(60)).await.unwrap();
        let mut sleeper = replica.raw().await;
        let sleeping = tokio::spawn(async move {
            let _: redis::RedisResult<()> = redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg(5)
                .query_async(&mut sleeper)
                .await;
        });
        let raw = master.raw().await;
        // The replica is asleep once a write is no longer acknowledged at once.
        assert!(
            eventually(Duration::from_secs(10), || {
                let mut raw = raw.clone();
                async move {
                    let _: () = redis::cmd("SET")
                        .arg("probe")
                        .arg(1)
                        .query_async(&mut raw)
                        .await
                        .unwrap();
                    let acked: i64 = redis::cmd("WAIT")
                        .arg(1)
                        .arg(50)
                        .query_async(&mut raw)
                        .await
                        .unwrap();
                    acked == 0
                }
            })
            .await
        );
        let l = c.lock(&n);
        let acquiring = tokio::spawn(async move { l.lock().await.map(|()| l) });
        // The acquisition's script ran: its WAIT, sent right behind it, blocks now.
        assert!(
            eventually(Duration::from_secs(10), || {
                let mut raw = raw.clone();
                let n = n.clone();
                async move {
                    let exists: i64 = redis::cmd("EXISTS")
                        .arg(&n)
                        .query_async(&mut raw)
                        .await
                        .unwrap();
                    exists == 1
                }
            })
            .await,
            "{}: the acquisition never ran",
            master.name
        );
        // The WAIT blocks its connection: the client's other commands still get answers,
        // while the replica sleeps (so the WAIT cannot have returned).
        assert!(free.is_locked().await.unwrap());
        assert!(free.is_held_by_me().await.unwrap());
        let mut conn = c.connection();
        let pong: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
        assert_eq!(pong, "PONG");
        assert!(
            !sleeping.is_finished() && !acquiring.is_finished(),
            "{}: the other commands were answered only after the WAIT",
            master.name
        );
        // Once the replica wakes it acknowledges, and the acquisition completes.
        let l = acquiring.await.unwrap().unwrap();
        let _ = sleeping.await;
        l.unlock().await.unwrap();
        free.unlock().await.unwrap();
    }
}

/// A client of `backend` whose user may run everything but `WAIT`, syncing one replica: every
/// write runs, then its `WAIT` fails (`NOPERM`).
async fn client_without_wait(backend: &Backend) -> Client {
    let mut raw = backend.raw().await;
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("nowait")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .arg("-wait")
        .query_async(&mut raw)
        .await
        .unwrap();
    let url = format!("redis://nowait:pw@127.0.0.1:{}", backend.port);
    Client::open_with(
        &url,
        ClientOptions::default().replica_sync(ReplicaSync::Replicas(1)),
    )
    .await
    .unwrap()
}

// Issue 36, item 2: an acquisition whose WAIT fails (here refused by the ACL, as a dropped
// connection or a response timeout would fail it) is rolled back before its error is
// returned: no lock stays held for its lease, no permit is gone; a release whose WAIT fails
// stands and reports success (a retry would release twice). On redis-server: our server runs
// WAIT before the ACL check, so it never refuses it (streams::a_write_whose_wait_times_out_is
// _rolled_back_or_stands fails the WAIT there by a response timeout instead).
#[tokio::test]
async fn a_write_whose_wait_fails_is_rolled_back_or_stands() {
    let Some(b) = real_redis(&[]) else {
        return;
    };
    {
        let c = client_without_wait(&b).await;
        let mut raw = b.raw().await;
        let exists = |key: String| {
            let mut raw = raw.clone();
            async move {
                let n: i64 = redis::cmd("EXISTS")
                    .arg(key)
                    .query_async(&mut raw)
                    .await
                    .unwrap();
                n == 1
            }
        };
        let n = name("nowait");
        let err = c.lock(&n).lock().await.unwrap_err();
        assert!(err.is_redis(), "{}: {err:?}", b.name);
        assert!(!exists(n.clone()).await, "{}: the lock stayed held", b.name);
        assert!(!c.lock(&n).is_renewing());
        for r in [
            c.fair_lock(&n).try_lock_for(MS(100), None).await,
            c.fenced_lock(&n).try_lock().await,
            c.spin_lock(&n).try_lock().await,
            c.read_write_lock(&n).read_lock().try_lock().await,
            c.read_write_lock(&n).write_lock().try_lock().await,
        ] {
            assert!(r.is_err(), "{}: {r:?}", b.name);
            assert!(!exists(n.clone()).await, "{}: a lock stayed held", b.name);
        }
        // Semaphores: permits taken are given back; a release stands once.
        let s = name("nowait-sem");
        let _: () = redis::cmd("SET")
            .arg(&s)
            .arg(3)
            .query_async(&mut raw)
            .await
            .unwrap();
        let sem = c.semaphore(&s);
        assert!(sem.try_acquire_many(2).await.is_err());
        assert_eq!(sem.available_permits().await.unwrap(), 3, "{}", b.name);
        sem.release().await.unwrap();
        assert_eq!(sem.available_permits().await.unwrap(), 4, "{}", b.name);
        let p = name("nowait-pes");
        let pes = c.permit_expirable_semaphore(&p);
        assert!(pes.try_set_permits(2).await.unwrap());
        assert!(pes.try_acquire_many(2, None).await.is_err());
        assert_eq!(pes.available_permits().await.unwrap(), 2, "{}", b.name);
        assert_eq!(pes.acquired_permits().await.unwrap(), 0, "{}", b.name);
    }
}

// Issue 36, bounded waits (the explorer's `lock-wait-fails` × replication, seed 94: a 2 s wait
// returned after 3592 ms): a synced acquisition's `WAIT` is bounded by what is left of the
// acquisition's wait, not only by the sync timeout. Replication is stalled, so no `WAIT` is
// ever acknowledged; the sync timeout (20 s) is ten times the wait (2 s). The lock is held by
// another owner for 1.5 s of the wait, so the attempt that finally takes it comes late in the
// wait, as in seed 94; the semaphores take their permit at once. Each call is rolled back and
// answers "not synced" within its wait plus a response; before, each waited out a whole 20 s
// `WAIT` (and its rollback another), so returning before wait + sync timeout / 2 (paused time:
// no real clock involved) tells the two apart with a wide margin.
#[tokio::test(start_paused = true)]
async fn a_synced_acquisition_ends_within_its_wait_while_the_replica_lags() {
    use locksmith_harness::Topology;
    use locksmith_lock::LockError;
    use tokio::time::Instant;
    let t = Topology::builder()
        .replicas(1)
        .seed(94)
        .build()
        .await
        .unwrap();
    let holder = Client::open_with(
        &t.front_url(),
        ClientOptions::default().replica_sync(ReplicaSync::Off),
    )
    .await
    .unwrap();
    let sync_timeout = Duration::from_secs(20);
    let c = Client::open_with(
        &t.front_url(),
        ClientOptions::default()
            .replica_sync(ReplicaSync::Replicas(1))
            .replica_sync_timeout(sync_timeout),
    )
    .await
    .unwrap();
    let wait = Duration::from_secs(2);
    let bound = wait + sync_timeout / 2;
    holder
        .lock("orders")
        .lock_with_lease(MS(1500))
        .await
        .unwrap();
    let sem = c.semaphore("slots");
    assert!(sem.try_set_permits(1).await.unwrap());
    let pes = c.permit_expirable_semaphore("exports");
    assert!(pes.try_set_permits(1).await.unwrap());
    let _stalled = t.stall_replication();

    let lock = c.lock("orders");
    let start = Instant::now();
    let r = lock.try_lock_for(wait, None).await;
    let took = start.elapsed();
    assert!(took < bound, "the lock's wait of {wait:?} took {took:?}");
    assert!(
        matches!(r, Err(LockError::ReplicasNotSynced { .. })),
        "{r:?}"
    );
    assert!(!lock.is_locked().await.unwrap(), "not rolled back");

    let start = Instant::now();
    let r = sem.try_acquire_for(wait).await;
    let took = start.elapsed();
    assert!(
        took < bound,
        "the semaphore's wait of {wait:?} took {took:?}"
    );
    assert!(
        matches!(r, Err(LockError::ReplicasNotSynced { .. })),
        "{r:?}"
    );
    assert_eq!(sem.available_permits().await.unwrap(), 1, "not rolled back");

    let start = Instant::now();
    let r = pes.try_acquire_for(wait, None).await;
    let took = start.elapsed();
    assert!(
        took < bound,
        "the permit semaphore's wait of {wait:?} took {took:?}"
    );
    assert!(
        matches!(r, Err(LockError::ReplicasNotSynced { .. })),
        "{r:?}"
    );
    assert_eq!(pes.available_permits().await.unwrap(), 1, "not rolled back");
    t.shutdown().await;
}
