//! `FairLock` behaviours from SCENARIOS.md (RedissonFairLockTest), on every backend.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{backends, eventually, name};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[tokio::test]
async fn fair_lock_is_reentrant_and_rejects_other_owners() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("fair-reent");
        let a = c.fair_lock(&n);
        assert!(a.try_lock().await.unwrap());
        assert!(a.try_lock().await.unwrap());
        assert_eq!(a.hold_count().await.unwrap(), 2);
        let other = c.fair_lock(&n);
        assert!(!other.try_lock().await.unwrap());
        assert!(other.unlock().await.unwrap_err().is_not_owner());
        a.unlock().await.unwrap();
        a.unlock().await.unwrap();
        assert!(!a.is_locked().await.unwrap());
    }
}

#[tokio::test]
async fn waiters_acquire_in_request_order() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("fair-order");
        let holder = c.fair_lock(&n);
        holder.lock().await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..6 {
            let l = c.fair_lock(&n);
            let order = order.clone();
            tasks.push(tokio::spawn(async move {
                assert!(l.try_lock_for(Duration::from_secs(20), None).await.unwrap());
                order.lock().unwrap().push(i);
                tokio::time::sleep(MS(20)).await;
                l.unlock().await.unwrap();
            }));
            // Let waiter i join the queue before waiter i+1.
            let q = format!("redisson_lock_queue:{{{n}}}");
            let mut raw = b.raw().await;
            assert!(
                eventually(Duration::from_secs(3), || {
                    let mut raw = raw.clone();
                    let q = q.clone();
                    async move {
                        let len: usize = redis::cmd("LLEN")
                            .arg(&q)
                            .query_async(&mut raw)
                            .await
                            .unwrap();
                        len == i + 1
                    }
                })
                .await
            );
            let _: () = redis::cmd("PING").query_async(&mut raw).await.unwrap();
        }
        holder.unlock().await.unwrap();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4, 5]);
    }
}

#[tokio::test]
async fn a_waiter_that_gives_up_leaves_the_queue() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("fair-giveup");
        let holder = c.fair_lock(&n);
        holder.lock().await.unwrap();
        assert!(!c.fair_lock(&n).try_lock_for(MS(200), None).await.unwrap());
        let mut raw = b.raw().await;
        let len: usize = redis::cmd("LLEN")
            .arg(format!("redisson_lock_queue:{{{n}}}"))
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(len, 0);
        holder.unlock().await.unwrap();
        assert!(c.fair_lock(&n).try_lock().await.unwrap());
    }
}

#[tokio::test]
async fn a_cancelled_fair_waiter_does_not_block_the_queue() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("fair-cancel");
        let holder = c.fair_lock(&n);
        holder.lock().await.unwrap();
        let abandoned = c.fair_lock(&n);
        let _ = tokio::time::timeout(MS(150), abandoned.lock()).await;
        holder.unlock().await.unwrap();
        let next = c.fair_lock(&n);
        assert!(next
            .try_lock_for(Duration::from_secs(3), None)
            .await
            .unwrap());
        next.unlock().await.unwrap();
    }
}

// Redisson's fair unlock on a missing key returns 1 (its testExpire: no exception). The
// library knows the lease ran out, though, so it answers NotOwner as for every other kind
// (issue 19): the script still runs, and the next waiter is still woken.
#[tokio::test]
async fn fair_unlock_after_expiry_is_not_owner() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("fair-expire");
        let first = c.fair_lock(&n);
        first.lock_with_lease(MS(300)).await.unwrap();
        let second = c.fair_lock(&n);
        tokio::time::timeout(Duration::from_secs(5), second.lock())
            .await
            .unwrap()
            .unwrap();
        second.unlock().await.unwrap();
        assert!(first.unlock().await.unwrap_err().is_not_owner());
    }
}

#[tokio::test]
async fn fair_force_unlock_releases() {
    for b in backends().await {
        let c = b.client().await;
        let l = c.fair_lock(&name("fair-force"));
        l.lock().await.unwrap();
        assert!(l.force_unlock().await.unwrap());
        assert!(!l.is_locked().await.unwrap());
    }
}

// Current Redisson releases the fair lock through the unlock latch too: a release retried with
// the same request id (after a lost reply) answers the first result again instead of taking a
// second hold off.
#[tokio::test]
async fn fair_release_is_idempotent_per_request_id() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("fair-latch");
        let l = c.fair_lock(&n);
        l.lock().await.unwrap();
        l.lock().await.unwrap();
        let latch = format!("redisson_unlock_latch:{{{n}}}:{}", "ab".repeat(16));
        let script = redis::Script::new(locksmith_lock::script_sources::FAIR_RELEASE);
        let mut raw = b.raw().await;
        let release = || {
            let mut inv = script.prepare_invoke();
            inv.key(&n)
                .key(format!("redisson_lock_queue:{{{n}}}"))
                .key(format!("redisson_lock_timeout:{{{n}}}"))
                .key(format!("redisson_lock__channel:{{{n}}}"))
                .key(&latch)
                .arg("0")
                .arg(30_000)
                .arg(l.owner_field())
                .arg(0)
                .arg("PUBLISH")
                .arg(10_000);
            inv
        };
        let first: Option<i64> = release().invoke_async(&mut raw).await.unwrap();
        let retry: Option<i64> = release().invoke_async(&mut raw).await.unwrap();
        assert_eq!((first, retry), (Some(0), Some(0)));
        assert_eq!(l.hold_count().await.unwrap(), 1, "backend {}", b.name);
        l.unlock().await.unwrap();
        assert!(!l.is_locked().await.unwrap());
    }
}

// Issue 36, item 15: a panic in the task an attempt runs in (here the client's wall clock,
// which the fair lock reads for its queue's timestamps) is an error that says it panicked,
// naming the lock and the panic's message, not `Shutdown`; the client goes on working.
#[tokio::test]
async fn a_panic_in_an_attempts_task_is_reported_as_a_panic() {
    for b in backends().await {
        let options =
            locksmith_lock::ClientOptions::default().wall_clock(|| panic!("the wall clock broke"));
        let c = b.client_with(options).await;
        let n = name("panicking");
        let err = c.fair_lock(&n).try_lock().await.unwrap_err();
        assert!(
            matches!(&err, locksmith_lock::LockError::Panicked { name, .. } if *name == n),
            "{}: {err:?}",
            b.name
        );
        assert!(err.to_string().contains("the wall clock broke"), "{err}");
        let plain = c.lock(&name("after-the-panic"));
        assert!(plain.try_lock().await.unwrap());
        plain.unlock().await.unwrap();
    }
}
