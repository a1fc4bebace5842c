//! Replica acknowledgement: with replicas, each lock write is followed by `WAIT`; an acquisition
//! no replica acknowledged is rolled back and reported, as Redisson's "None of slaves were synced".

use crate::support;

use std::time::Duration;

use locksmith_lock::{ClientOptions, ReplicaSync};
use support::{eventually, name, real_redis};

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
