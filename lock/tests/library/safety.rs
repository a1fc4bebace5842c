//! The lock library's safety promises (issue 19): a release always stops renewal, a leased
//! re-entry keeps the outer hold's watchdog, the lost signal fires before the key may have
//! expired, clones are new owners, and the non-reentrant lock.

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use locksmith_lock::{safety_margin, LostReason};
use support::{backends, eventually, name, short_watchdog};

const MS: fn(u64) -> Duration = Duration::from_millis;

// Redisson cancels renewal whatever the unlock's outcome (its issues #1602 and #1966): an
// unlock that fails (here: the server is gone) must not leave the watchdog renewing forever.
#[tokio::test]
async fn a_failed_unlock_still_stops_the_watchdog() {
    for mut b in backends().await {
        let c = b.client_with(short_watchdog(900)).await;
        let lock = c.lock(&name("failed-unlock"));
        lock.lock().await.unwrap();
        assert!(lock.is_renewing());
        b.stop();
        let unlocked = tokio::time::timeout(Duration::from_secs(30), lock.unlock())
            .await
            .expect("unlock answers");
        assert!(unlocked.is_err(), "{}: {unlocked:?}", b.name);
        assert!(!lock.is_renewing(), "{}: still renewing", b.name);
    }
}

// An unlock whose future is dropped half-way still completes: the lock is released and the
// watchdog stops, instead of renewing a lock nobody will unlock.
#[tokio::test]
async fn a_cancelled_unlock_completes_and_stops_the_watchdog() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(900)).await;
        let lock = c.lock(&name("cancelled-unlock"));
        lock.lock().await.unwrap();
        // Polled once, then dropped.
        let _ = tokio::time::timeout(Duration::ZERO, lock.unlock()).await;
        assert!(
            eventually(Duration::from_secs(5), || async {
                !lock.is_renewing() && !lock.is_locked().await.unwrap()
            })
            .await,
            "{}: the dropped unlock left the lock held or renewed",
            b.name
        );
    }
}

// lock() then lock_with_lease(l) by the same owner: after the inner unlock, the outer critical
// section still holds the lock, renewed by the watchdog, well past `l`.
#[tokio::test]
async fn a_leased_reentry_keeps_the_outer_watchdog() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(900)).await;
        let lock = c.lock(&name("leased-reentry"));
        lock.lock().await.unwrap();
        lock.lock_with_lease(MS(300)).await.unwrap();
        assert!(lock.is_renewing());
        lock.unlock().await.unwrap();
        // Well past the inner lease and the 900 ms watchdog lease.
        tokio::time::sleep(MS(2000)).await;
        assert!(lock.is_held_by_me().await.unwrap(), "{}: lost", b.name);
        assert!(lock.is_renewing());
        assert!(!lock.lost_signal().unwrap().is_lost());
        lock.unlock().await.unwrap();
        assert!(!lock.is_locked().await.unwrap());
    }
}

// A server that stops answering (here: CLIENT PAUSE holds every command) makes renewals hang.
// The lost signal must fire no later than the moment the key may have expired: the send time
// of the acquisition + lease - the safety margin, not when the hanging renewal gives up. The
// clock is tokio's paused one, so the times below are exact, not measured.
#[tokio::test(start_paused = true)]
async fn the_lost_signal_fires_before_the_key_may_expire_on_a_silent_server() {
    let b = support::in_process().await;
    let lease = MS(3000);
    let c = b.client_with(short_watchdog(3000)).await;
    let lock = c.lock(&name("black-hole"));
    let sent = tokio::time::Instant::now();
    lock.lock().await.unwrap();
    let mut signal = lock.lost_signal().unwrap();
    let mut raw = b.raw().await;
    let _: () = redis::cmd("CLIENT")
        .arg(&["PAUSE", "600000", "ALL"])
        .query_async(&mut raw)
        .await
        .unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(60), signal.lost())
        .await
        .expect("the signal fired");
    let fired = tokio::time::Instant::now();
    assert_eq!(reason, Some(LostReason::RenewalFailed));
    assert!(
        fired <= sent + lease - safety_margin(lease),
        "fired {:?} after the acquisition was sent",
        fired - sent
    );
    assert!(!lock.is_renewing(), "still renewing after the loss");
}

// A clone of a handle is a new owner (as a new Java thread is): tasks that each clone the
// handle exclude each other instead of re-entering.
#[tokio::test]
async fn clones_are_new_owners_and_exclude_each_other() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("clone");
        let lock = c.lock(&n);
        let clone = lock.clone();
        assert_ne!(lock.owner(), clone.owner());
        lock.lock().await.unwrap();
        assert!(!clone.try_lock().await.unwrap());
        assert!(clone.unlock().await.unwrap_err().is_not_owner());
        // Dropping the clone does not touch the original's watchdog.
        drop(clone);
        assert!(lock.is_renewing());
        lock.unlock().await.unwrap();
        // The read/write halves keep their lock's owner (the writer may take read locks).
        let rw = c.read_write_lock(&name("clone-rw"));
        rw.write_lock().lock().await.unwrap();
        assert!(rw.read_lock().try_lock().await.unwrap());
        assert!(!rw.clone().read_lock().try_lock().await.unwrap());
        rw.read_lock().unlock().await.unwrap();
        rw.write_lock().unlock().await.unwrap();
    }
}

// The non-reentrant lock: the same owner cannot enter twice (Redisson 4.7's
// RedissonNonReentrantLock: its acquire answers an error reply, IllegalMonitorStateException,
// where a re-entrant lock would re-enter); the layout is Redisson's RLock (one field, count 1),
// so a Redisson lock on the name is excluded as usual.
#[tokio::test]
async fn the_non_reentrant_lock_refuses_its_own_owner() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(900)).await;
        let n = name("non-reentrant");
        let lock = c.non_reentrant_lock(&n);
        assert!(lock.try_lock().await.unwrap());
        let again = lock.try_lock().await;
        assert!(
            matches!(&again, Err(locksmith_lock::LockError::Invalid { .. })),
            "{again:?}"
        );
        let waited = lock.try_lock_for(MS(200), None).await;
        assert!(waited.is_err(), "{waited:?}");
        assert!(
            lock.lock().await.is_err(),
            "lock() must not wait for itself"
        );
        let mut raw = b.raw().await;
        let hash: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&n)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(
            hash,
            HashMap::from([(lock.owner_field().to_owned(), "1".to_owned())])
        );
        let reentrant = c.lock(&n);
        assert!(!reentrant.try_lock().await.unwrap());
        // Renewed past its lease like any watchdog lock, then released for good by one unlock.
        tokio::time::sleep(MS(1500)).await;
        assert!(lock.is_held_by_me().await.unwrap());
        lock.unlock().await.unwrap();
        assert!(!lock.is_locked().await.unwrap());
        assert!(reentrant.try_lock().await.unwrap());
        reentrant.unlock().await.unwrap();
    }
}

// Unlock after the lease ran out: NotOwner for every kind (the fair lock's script alone would
// answer "released" for the expired key).
#[tokio::test]
async fn unlock_after_the_lease_ran_out_is_not_owner_for_every_kind() {
    for b in backends().await {
        let c = b.client().await;
        let lease = MS(200);
        let fair = c.fair_lock(&name("expired-fair"));
        fair.lock_with_lease(lease).await.unwrap();
        let rw = c.read_write_lock(&name("expired-rw"));
        rw.read_lock().lock_with_lease(lease).await.unwrap();
        let rw2 = c.read_write_lock(&name("expired-rw2"));
        rw2.write_lock().lock_with_lease(lease).await.unwrap();
        let plain = c.lock(&name("expired-plain"));
        plain.lock_with_lease(lease).await.unwrap();
        for mut signal in [
            fair.lost_signal().unwrap(),
            rw.read_lock().lost_signal().unwrap(),
            rw2.write_lock().lost_signal().unwrap(),
            plain.lost_signal().unwrap(),
        ] {
            let reason = tokio::time::timeout(Duration::from_secs(10), signal.lost()).await;
            assert_eq!(reason.unwrap(), Some(LostReason::LeaseExpired));
        }
        // Past the server's expiry too.
        tokio::time::sleep(MS(50)).await;
        let results = [
            fair.unlock().await,
            rw.read_lock().unlock().await,
            rw2.write_lock().unlock().await,
            plain.unlock().await,
        ];
        for r in results {
            assert!(
                r.as_ref().is_err_and(|e| e.is_not_owner()),
                "{}: {r:?}",
                b.name
            );
        }
    }
}

// Issue 36, item 9: one rule for an unlock by an owner that does not hold the lock, as
// Redisson's IllegalMonitorStateException: NotOwner for every kind, for a lock never taken
// and for one whose key was deleted behind the library's back (another client's
// force_unlock, before any renewal noticed). The one exception the scripts impose: Redisson's
// fair release answers "released" for a missing key, so a fair lock this client did take and
// whose key vanished unnoticed unlocks with Ok (documented on `unlock`).
#[tokio::test]
async fn unlock_by_an_owner_that_does_not_hold_the_lock_is_not_owner_for_every_kind() {
    use locksmith_lock::DistributedLock;
    for b in backends().await {
        let c = b.client().await;
        let kinds = |n: &str| -> Vec<Box<dyn DistributedLock>> {
            vec![
                c.lock(n).boxed(),
                c.fenced_lock(n).boxed(),
                c.spin_lock(n).boxed(),
                c.non_reentrant_lock(n).boxed(),
                c.fair_lock(n).boxed(),
                c.read_write_lock(n).read_lock().boxed(),
                c.read_write_lock(n).write_lock().boxed(),
            ]
        };
        for lock in kinds(&name("never-held")) {
            let r = lock.unlock().await;
            assert!(
                r.as_ref().is_err_and(|e| e.is_not_owner()),
                "{}: {} {r:?}",
                b.name,
                lock.name()
            );
        }
        // Deleted by someone else (as another client's force_unlock would).
        for i in 0..7 {
            let n = name(&format!("vanished-{i}"));
            let lock = match i {
                0 => c.lock(&n).boxed(),
                1 => c.fenced_lock(&n).boxed(),
                2 => c.spin_lock(&n).boxed(),
                3 => c.non_reentrant_lock(&n).boxed(),
                4 => c.fair_lock(&n).boxed(),
                5 => c.read_write_lock(&n).read_lock().boxed(),
                _ => c.read_write_lock(&n).write_lock().boxed(),
            };
            lock.lock().await.unwrap();
            let mut raw = b.raw().await;
            let _: () = redis::cmd("DEL")
                .arg(&n)
                .query_async(&mut raw)
                .await
                .unwrap();
            let r = lock.unlock().await;
            if i == 4 {
                assert!(r.is_ok(), "{}: {r:?}", b.name);
            } else {
                assert!(
                    r.as_ref().is_err_and(|e| e.is_not_owner()),
                    "{}: kind {i} {r:?}",
                    b.name
                );
            }
        }
    }
}

// The shared pub/sub connection dies while a waiter waits (here: CLIENT KILL TYPE pubsub): the
// hub wakes its waiters, reconnects and subscribes again, so the waiter gets the lock when the
// holder releases it, instead of sleeping until the holder's 30 s TTL.
#[tokio::test]
async fn a_waiter_recovers_when_its_pubsub_connection_is_killed() {
    for b in backends().await {
        let holder_client = b.client().await;
        let waiter_client = b.client().await;
        let n = name("pubsub-killed");
        let holder = holder_client.lock(&n);
        holder.lock().await.unwrap();
        let waiter = waiter_client.lock(&n);
        let task = tokio::spawn(async move {
            let got = waiter.try_lock_for(Duration::from_secs(25), None).await;
            (waiter, got)
        });
        let mut raw = b.raw().await;
        // Kill the waiter's subscription once it exists (bounded polling).
        let killed = eventually(Duration::from_secs(5), || {
            let mut raw = raw.clone();
            async move {
                let killed: i64 = redis::cmd("CLIENT")
                    .arg(&["KILL", "TYPE", "pubsub"])
                    .query_async(&mut raw)
                    .await
                    .unwrap();
                killed >= 1
            }
        })
        .await;
        assert!(killed, "{}: no pub/sub connection to kill", b.name);
        tokio::time::sleep(MS(300)).await;
        holder.unlock().await.unwrap();
        let (waiter, got) = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap_or_else(|_| panic!("{}: the waiter slept past the release", b.name))
            .unwrap();
        assert!(got.unwrap(), "{}", b.name);
        waiter.unlock().await.unwrap();
        let _: () = redis::cmd("PING").query_async(&mut raw).await.unwrap();
    }
}
