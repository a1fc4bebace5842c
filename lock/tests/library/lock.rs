//! `Lock` (Redisson RLock) behaviours from SCENARIOS.md, on every backend.

use crate::support;

use std::time::Duration;

use locksmith_lock::{LockError, LostReason, Owner};
use support::{backends, eventually, name, short_watchdog};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[tokio::test]
async fn hold_count_follows_lock_and_unlock() {
    for b in backends().await {
        let c = b.client().await;
        let lock = c.lock(&name("hold"));
        assert_eq!(lock.hold_count().await.unwrap(), 0);
        lock.lock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), 1);
        lock.unlock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), 0);
        lock.lock().await.unwrap();
        lock.lock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), 2);
        lock.unlock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), 1);
        lock.unlock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), 0);
        assert!(!lock.is_renewing());
    }
}

#[tokio::test]
async fn reentrancy_follows_the_owner_not_the_handle() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("reentrant");
        let owner = Owner::new();
        let a = c.lock_for(&n, owner);
        let same = c.lock_for(&n, owner);
        let other = c.lock(&n);
        assert!(a.try_lock().await.unwrap());
        assert!(same.try_lock().await.unwrap());
        assert!(!other.try_lock().await.unwrap());
        assert!(a.is_held_by_me().await.unwrap());
        assert!(!other.is_held_by_me().await.unwrap());
        assert!(other.is_locked().await.unwrap());
        a.unlock().await.unwrap();
        assert!(!other.try_lock().await.unwrap());
        same.unlock().await.unwrap();
        assert!(!a.is_locked().await.unwrap());
        assert!(other.try_lock().await.unwrap());
        other.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn unlock_by_a_non_owner_fails_with_redissons_message() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("unlockfail");
        let holder = c.lock(&n);
        holder.lock().await.unwrap();
        let intruder = c.lock(&n);
        let err = intruder.unlock().await.unwrap_err();
        assert!(err.is_not_owner(), "{err:?}");
        let msg = err.to_string();
        let expected = format!(
            "attempt to unlock lock, not locked by current thread by node id: {} thread-id: {}",
            c.id(),
            intruder.owner().id()
        );
        assert_eq!(msg, expected);
        assert!(holder.is_held_by_me().await.unwrap());
        holder.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn force_unlock_releases_whoever_holds_it() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("force");
        let lock = c.lock(&n);
        lock.lock().await.unwrap();
        assert!(c.lock(&n).force_unlock().await.unwrap());
        assert!(!lock.is_locked().await.unwrap());
        assert!(!c.lock(&n).is_locked().await.unwrap());
        assert!(!lock.force_unlock().await.unwrap());
    }
}

#[tokio::test]
async fn remaining_ttl_follows_the_last_lease() {
    for b in backends().await {
        let c = b.client().await;
        let lock = c.lock(&name("ttl"));
        lock.lock_with_lease(Duration::from_secs(3600))
            .await
            .unwrap();
        let ttl = lock.remaining_ttl().await.unwrap().unwrap();
        assert!(ttl > Duration::from_secs(3590) && ttl <= Duration::from_secs(3600));
        lock.unlock().await.unwrap();
        assert_eq!(lock.remaining_ttl().await.unwrap(), None);
        lock.lock().await.unwrap();
        let ttl = lock.remaining_ttl().await.unwrap().unwrap();
        assert!(ttl > Duration::from_secs(29) && ttl <= Duration::from_secs(30));
        lock.unlock().await.unwrap();

        // testRemainTimeToLive2: lock(10 s) x3 then unlock x2 re-PEXPIREs to the last lease.
        for _ in 0..3 {
            lock.lock_with_lease(Duration::from_secs(10)).await.unwrap();
        }
        lock.unlock().await.unwrap();
        lock.unlock().await.unwrap();
        let ttl = lock.remaining_ttl().await.unwrap().unwrap();
        assert!(ttl > Duration::from_secs(9) && ttl <= Duration::from_secs(10));
        lock.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn try_lock_for_gives_up_after_the_wait_time() {
    for b in backends().await {
        let c1 = b.client().await;
        let c2 = b.client().await;
        let n = name("trywait");
        let holder = c1.lock(&n);
        holder.lock().await.unwrap();
        let start = tokio::time::Instant::now();
        assert!(!c2.lock(&n).try_lock_for(MS(300), None).await.unwrap());
        assert!(start.elapsed() >= MS(290));
        holder.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn a_waiter_acquires_when_the_lease_expires_and_the_old_holder_cannot_unlock() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("expire");
        let first = c.lock(&n);
        first.lock_with_lease(MS(300)).await.unwrap();
        let mut lost = first.lost_signal().unwrap();
        let second = c.lock(&n);
        let w = tokio::time::timeout(Duration::from_secs(5), second.lock()).await;
        w.unwrap().unwrap();
        assert_eq!(lost.lost().await, Some(LostReason::LeaseExpired));
        let err = first.unlock().await.unwrap_err();
        assert!(err.is_not_owner());
        second.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn a_waiter_wakes_on_the_unlock_message_not_the_ttl() {
    for b in backends().await {
        let c1 = b.client().await;
        let c2 = b.client().await;
        let n = name("wake");
        let holder = c1.lock(&n);
        holder.lock().await.unwrap(); // 30 s lease: only the message can wake the waiter in time
        let waiter = c2.lock(&n);
        let task = tokio::spawn(async move {
            waiter.lock().await.unwrap();
            waiter
        });
        tokio::time::sleep(MS(100)).await;
        holder.unlock().await.unwrap();
        let waiter = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
        assert!(waiter.is_held_by_me().await.unwrap());
        waiter.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn the_watchdog_renews_until_unlock_and_then_stops() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(900)).await;
        let lock = c.lock(&name("watchdog"));
        lock.lock().await.unwrap();
        // Well past the 900 ms lease, the lock is still held thanks to renewals every 300 ms.
        tokio::time::sleep(MS(2000)).await;
        assert!(lock.is_held_by_me().await.unwrap());
        assert!(c.metrics().renewals >= 2);
        lock.unlock().await.unwrap();
        assert!(!lock.is_renewing());
        assert!(!lock.is_locked().await.unwrap());
    }
}

#[tokio::test]
async fn a_lock_expires_after_its_holder_client_shuts_down() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(600)).await;
        let n = name("autoexpire");
        let lock = c.lock(&n);
        lock.lock().await.unwrap();
        c.shutdown().await;
        let checker = b.client().await.lock(&n);
        assert!(
            eventually(Duration::from_secs(3), || async {
                !checker.is_locked().await.unwrap()
            })
            .await
        );
        assert!(matches!(lock.lock().await, Err(LockError::Shutdown)));
    }
}

#[tokio::test]
async fn the_lost_signal_fires_when_someone_else_takes_the_lock() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(600)).await;
        let n = name("lost");
        let lock = c.lock(&n);
        lock.lock().await.unwrap();
        let mut signal = lock.lost_signal().unwrap();
        // Simulate a failover that lost the key, then another client taking it.
        let mut raw = b.raw().await;
        let _: () = redis::cmd("DEL")
            .arg(&n)
            .query_async(&mut raw)
            .await
            .unwrap();
        let other = b.client().await.lock(&n);
        other.lock().await.unwrap();
        let reason = tokio::time::timeout(Duration::from_secs(3), signal.lost())
            .await
            .unwrap();
        assert_eq!(reason, Some(LostReason::NotHeld));
        assert!(c.metrics().lost >= 1);
        other.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn the_lost_signal_ends_without_loss_on_unlock() {
    for b in backends().await {
        let c = b.client().await;
        let lock = c.lock(&name("notlost"));
        lock.lock().await.unwrap();
        let mut signal = lock.lost_signal().unwrap();
        lock.unlock().await.unwrap();
        assert_eq!(signal.lost().await, None);
    }
}

#[tokio::test]
async fn a_cancelled_wait_leaves_no_lock_behind() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(600)).await;
        let n = name("cancel");
        let holder = c.lock(&n);
        holder.lock_with_lease(MS(200)).await.unwrap();
        let waiter = c.lock(&n);
        // Cancel the waiter at many points, including mid-script.
        for i in 0..20 {
            if let Ok(r) = tokio::time::timeout(MS(i * 15), waiter.lock()).await {
                // Completed in time: a real acquisition, released as a caller would.
                r.unwrap();
                waiter.unlock().await.unwrap();
            }
        }
        let _ = holder.unlock().await;
        // Whatever state the abandoned attempts reached, the lock must end free and unrenewed.
        assert!(
            eventually(Duration::from_secs(3), || async {
                !waiter.is_locked().await.unwrap()
            })
            .await
        );
        assert!(!waiter.is_renewing());
    }
}

#[tokio::test]
async fn waiters_leave_no_subscriptions_behind() {
    for b in backends().await {
        let clients = [b.client().await, b.client().await];
        let names: Vec<String> = (0..5).map(|_| name("subs")).collect();
        let mut tasks = Vec::new();
        for t in 0..16 {
            let c = clients[t % 2].clone();
            let names = names.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..20 {
                    let l = c.lock(&names[(t + i) % names.len()]);
                    l.lock().await.unwrap();
                    l.unlock().await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let mut raw = b.raw().await;
        assert!(
            eventually(Duration::from_secs(3), || {
                let mut raw = raw.clone();
                async move {
                    let chans: Vec<String> = redis::cmd("PUBSUB")
                        .arg("CHANNELS")
                        .query_async(&mut raw)
                        .await
                        .unwrap();
                    chans.is_empty()
                }
            })
            .await
        );
        let _: () = redis::cmd("PING").query_async(&mut raw).await.unwrap();
    }
}

#[tokio::test]
async fn a_stopped_server_gives_an_error_not_false() {
    for mut b in backends().await {
        if b.name != "redis-server" {
            continue;
        }
        let c = b.client().await;
        b.stop();
        let r = c
            .lock(&name("down"))
            .try_lock_for(MS(200), Some(MS(1000)))
            .await;
        let err = r.unwrap_err();
        assert!(err.is_redis(), "{err:?}");
    }
}

#[tokio::test]
async fn fifteen_concurrent_tasks_each_get_the_lock_once() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("conc15");
        let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut tasks = Vec::new();
        for _ in 0..15 {
            let l = c.lock(&n);
            let counter = counter.clone();
            tasks.push(tokio::spawn(async move {
                l.lock().await.unwrap();
                let v = counter.load(std::sync::atomic::Ordering::SeqCst);
                tokio::task::yield_now().await;
                counter.store(v + 1, std::sync::atomic::Ordering::SeqCst);
                l.unlock().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(counter.load(std::sync::atomic::Ordering::SeqCst), 15);
    }
}

#[tokio::test]
async fn reacquiring_after_a_loss_starts_a_fresh_lost_signal() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("relost");
        let lock = c.lock(&n);
        lock.lock_with_lease(MS(150)).await.unwrap();
        let mut first = lock.lost_signal().unwrap();
        assert_eq!(first.lost().await, Some(LostReason::LeaseExpired));
        lock.lock().await.unwrap();
        let second = lock.lost_signal().unwrap();
        assert!(!second.is_lost());
        lock.unlock().await.unwrap();
    }
}

// The command connection is reset (a failover behind a stable address, a proxy restart): the
// renewal due then reconnects and tries again at once, so a lock lost meanwhile is reported at
// that renewal rather than a whole watchdog period later.
#[tokio::test(start_paused = true)]
async fn the_watchdog_reports_a_loss_at_the_first_renewal_after_a_connection_reset() {
    let b = support::in_process().await;
    let c = b.client_with(short_watchdog(3000)).await;
    let n = name("reset");
    let lock = c.lock(&n);
    lock.lock().await.unwrap();
    let mut signal = lock.lost_signal().unwrap();
    let mut raw = b.raw().await;
    let killed: i64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(killed >= 1);
    let _: i64 = redis::cmd("DEL")
        .arg(&n)
        .query_async(&mut raw)
        .await
        .unwrap();
    let start = tokio::time::Instant::now();
    let reason = tokio::time::timeout(Duration::from_millis(1100), signal.lost())
        .await
        .expect("reported at the first renewal (1 s)");
    assert_eq!(reason, Some(LostReason::NotHeld));
    assert!(start.elapsed() <= MS(1000));
}
