//! Leases against time and crashes, with raw commands: a holder paused past its lease overlaps
//! the next holder and only a fencing token protects the resource (scenario 5); `SETNX` then
//! `EXPIRE` with the client killed in between deadlocks while `SET NX PX` recovers (scenario
//! 6, seed 003's pitfall); a watchdog holder whose node restarts empty gets the lock-lost
//! signal (scenario 7).

use locksmith_testkit::harness as harness_support;

use harness_support::{conn, run, try_lock, unlock};
use locksmith_harness::{Checker, EventKind, History, Topology};
use redis::aio::MultiplexedConnection;
use std::time::Duration;

async fn single(seed: u64) -> Topology {
    Topology::builder().seed(seed).build().await.unwrap()
}

/// Acquire with a fencing token: `SET NX PX`, then `INCR` the token counter.
async fn lock_fenced(
    con: &mut MultiplexedConnection,
    history: &History,
    who: &str,
    lease_ms: u64,
) -> Option<u64> {
    let op = history.begin(who, "lock");
    if try_lock(con, "lock", who, lease_ms).await.unwrap() {
        let token = next_token(con).await;
        op.acquired(Some(token));
        Some(token)
    } else {
        op.failed();
        None
    }
}

/// The next fencing token: `INCR lock:token` (GET + SET where this server has no INCR yet;
/// the scenario runs one command at a time, so that is equally monotonic here).
async fn next_token(con: &mut MultiplexedConnection) -> u64 {
    match run::<u64>(con, &["INCR", "lock:token"]).await {
        Ok(token) => token,
        Err(_) => {
            let current: Option<u64> = run(con, &["GET", "lock:token"]).await.unwrap();
            let token = current.unwrap_or(0) + 1;
            let _: () = run(con, &["SET", "lock:token", &token.to_string()])
                .await
                .unwrap();
            token
        }
    }
}

/// A resource that accepts a write only with a token at least as new as the newest it saw.
async fn fenced_write(
    con: &mut MultiplexedConnection,
    history: &History,
    who: &str,
    token: u64,
) -> bool {
    let op = history.begin(who, "lock");
    let newest: Option<u64> = run(con, &["GET", "resource:token"]).await.unwrap();
    let accepted = newest.is_none_or(|n| token >= n);
    if accepted {
        let _: () = run(con, &["SET", "resource:token", &token.to_string()])
            .await
            .unwrap();
    }
    op.wrote(Some(token), accepted);
    accepted
}

#[tokio::test(start_paused = true)]
async fn a_holder_paused_past_its_lease_overlaps_and_fencing_rejects_it() {
    let t = single(50).await;
    let history = t.history();
    let mut a = conn(&t.front_url()).await;
    let mut b = conn(&t.front_url()).await;
    let token_a = lock_fenced(&mut a, &history, "client-a", 5000)
        .await
        .unwrap();
    // A stops (a GC pause, a stopped VM) for longer than its lease; no watchdog renews it.
    tokio::time::advance(Duration::from_millis(6000)).await;
    let token_b = lock_fenced(&mut b, &history, "client-b", 5000)
        .await
        .unwrap();
    assert!(token_b > token_a);
    assert!(fenced_write(&mut b, &history, "client-b", token_b).await);
    tokio::time::advance(Duration::from_millis(200)).await;
    // A wakes up believing it still holds the lock and writes: the token gives it away.
    assert!(!fenced_write(&mut a, &history, "client-a", token_a).await);
    let op = history.begin("client-a", "lock");
    assert!(!unlock(&mut a, "lock", "client-a").await.unwrap());
    op.released();
    let op = history.begin("client-b", "lock");
    assert!(unlock(&mut b, "lock", "client-b").await.unwrap());
    op.released();

    locksmith_testkit::write_timeline!(
        "scenario5-paused-holder-fencing",
        "Holder paused past its lease; fencing token",
        &history,
    );
    let violations = Checker::check(&history);
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].first.client, "client-a");
    assert_eq!(violations[0].fencing_rejects_stale, Some(true));
    let rejected: Vec<_> = history
        .events()
        .into_iter()
        .filter(|e| e.kind == EventKind::Write { accepted: false })
        .collect();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].client, "client-a");
}

/// B tries every second for `secs` seconds; returns whether it got the lock.
async fn contend(con: &mut MultiplexedConnection, history: &History, secs: u64) -> bool {
    for _ in 0..secs {
        let op = history.begin("client-b", "lock");
        if try_lock(con, "lock", "client-b", 5000).await.unwrap() {
            op.acquired(None);
            return true;
        }
        op.failed();
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    false
}

#[tokio::test(start_paused = true)]
async fn setnx_then_expire_deadlocks_when_the_client_dies_in_between() {
    let t = single(60).await;
    let history = t.history();
    let mut a = conn(&t.url(t.master())).await;
    let op = history.begin("client-a", "lock");
    // SETNX may not be on this server yet: SET NX without expiry is the same first step.
    let set: i64 = run(&mut a, &["SETNX", "lock", "client-a"])
        .await
        .unwrap_or(0);
    if set == 0 {
        let r: Option<String> = run(&mut a, &["SET", "lock", "client-a", "NX"])
            .await
            .unwrap();
        assert!(r.is_some());
    }
    op.acquired(None);
    // The client dies before sending EXPIRE.
    t.reset_connections(t.master()).unwrap();
    drop(a);
    let mut b = conn(&t.url(t.master())).await;
    assert!(
        !contend(&mut b, &history, 60).await,
        "nobody ever gets the lock again"
    );
    let holder: Option<String> = run(&mut b, &["GET", "lock"]).await.unwrap();
    assert_eq!(holder.as_deref(), Some("client-a"), "the key never expires");
    locksmith_testkit::write_timeline!(
        "scenario6a-setnx-expire-deadlock",
        "SETNX + EXPIRE, client killed in between: deadlock",
        &history,
    );
}

#[tokio::test(start_paused = true)]
async fn set_nx_px_recovers_after_the_lease_when_the_client_dies() {
    let t = single(61).await;
    let history = t.history();
    let mut a = conn(&t.url(t.master())).await;
    let op = history.begin("client-a", "lock");
    assert!(try_lock(&mut a, "lock", "client-a", 5000).await.unwrap());
    op.acquired(None);
    t.reset_connections(t.master()).unwrap();
    drop(a);
    let op = history.begin("client-a", "lock");
    op.lost();
    let mut b = conn(&t.url(t.master())).await;
    let start = tokio::time::Instant::now();
    assert!(contend(&mut b, &history, 60).await);
    assert!(start.elapsed() >= Duration::from_secs(5) && start.elapsed() <= Duration::from_secs(7));
    locksmith_testkit::write_timeline!(
        "scenario6b-set-nx-px-recovers",
        "SET NX PX, client killed: the lease frees the lock",
        &history,
    );
    assert!(Checker::check(&history).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_watchdog_holder_gets_the_lost_signal_when_its_node_restarts_empty() {
    const LEASE_MS: u64 = 3000;
    let t = Topology::builder()
        .replicas(1)
        .seed(70)
        .build()
        .await
        .unwrap();
    let history = t.history();
    let mut a = conn(&t.front_url()).await;
    let op = history.begin("client-a", "lock");
    assert!(try_lock(&mut a, "lock", "client-a", LEASE_MS)
        .await
        .unwrap());
    op.acquired(None);
    // The watchdog renews every lease/3 while the key is still ours; otherwise the lock is lost.
    let (lost_tx, lost_rx) = tokio::sync::oneshot::channel::<u64>();
    let front = t.front_url();
    let watchdog_history = history.clone();
    let watchdog = tokio::spawn(async move {
        let mut con = conn(&front).await;
        for _ in 0..1000 {
            tokio::time::sleep(Duration::from_millis(LEASE_MS / 3)).await;
            let op = watchdog_history.begin("client-a", "lock");
            let ours = match run::<Option<String>>(&mut con, &["GET", "lock"]).await {
                Ok(v) => v.as_deref() == Some("client-a"),
                Err(_) => {
                    // The connection died with the node: reconnect and look again.
                    con = conn(&front).await;
                    let v: Option<String> = run(&mut con, &["GET", "lock"]).await.unwrap();
                    v.as_deref() == Some("client-a")
                }
            };
            if !ours {
                op.lost();
                let _ = lost_tx.send(watchdog_history.now_ms());
                return;
            }
            // Renew only if still ours (the check and the renewal are one step here: nothing
            // else writes the key in this scenario).
            let renewed: Option<String> = run(
                &mut con,
                &["SET", "lock", "client-a", "XX", "PX", &LEASE_MS.to_string()],
            )
            .await
            .unwrap();
            assert!(renewed.is_some());
            drop(op);
        }
    });
    // Renewals keep it alive well past the lease (sleep lets the watchdog run meanwhile).
    tokio::time::sleep(Duration::from_millis(LEASE_MS * 3 + 100)).await;
    let holder: Option<String> = run(&mut a, &["GET", "lock"]).await.unwrap();
    assert_eq!(holder.as_deref(), Some("client-a"));
    let restarted_at = t.now_ms();
    t.restart(t.master()).await.unwrap();
    let lost_at = tokio::time::timeout(Duration::from_secs(10), lost_rx)
        .await
        .unwrap()
        .unwrap();
    assert!(lost_at >= restarted_at && lost_at - restarted_at <= LEASE_MS / 3 + 100);
    watchdog.await.unwrap();
    let lost: Vec<_> = history
        .events()
        .into_iter()
        .filter(|e| e.kind == EventKind::Lost)
        .collect();
    assert_eq!(lost.len(), 1);
    locksmith_testkit::write_timeline!(
        "scenario7-watchdog-lost-on-restart",
        "Watchdog holder, node restarts empty: lock-lost",
        &history,
    );
}
