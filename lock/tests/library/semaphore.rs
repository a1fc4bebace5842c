//! `Semaphore` (Redisson's `RSemaphore`), adapted from `RedissonSemaphoreTest`
//! (SCENARIOS.md rows 126–142): permits, add/reduce, drain, release on a missing key, blocking
//! acquire woken by release over pub/sub, and mutual exclusion under concurrency.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::{backends, eventually, name};
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(10);

#[tokio::test]
async fn layout_matches_redisson() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("sem");
        let s = c.semaphore(&n);
        assert_eq!(s.channel(), format!("redisson_sc:{{{n}}}"));
        assert_eq!(c.semaphore("{t}x").channel(), "redisson_sc:{t}x");
        assert!(s.try_set_permits(3).await.unwrap());
        let mut raw = b.raw().await;
        let v: String = redis::cmd("GET")
            .arg(&n)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(v, "3", "backend {}", b.name);
    }
}

// Row 129 (testTrySetPermits) and row 136 (testDrainPermits).
#[tokio::test]
async fn try_set_permits_only_once_and_drain() {
    for b in backends().await {
        let c = b.client().await;
        let s = c.semaphore(&name("sem"));
        assert_eq!(s.drain_permits().await.unwrap(), 0);
        assert!(s.try_set_permits(10).await.unwrap());
        assert!(!s.try_set_permits(15).await.unwrap());
        assert_eq!(s.available_permits().await.unwrap(), 10);
        s.acquire_many(3).await.unwrap();
        assert_eq!(s.drain_permits().await.unwrap(), 7);
        assert_eq!(s.available_permits().await.unwrap(), 0);
        assert!(s.delete().await.unwrap());
        assert!(!s.delete().await.unwrap());

        // With a TTL the key carries an expiry (row 129 waits it out; we read the PTTL).
        assert!(s
            .try_set_permits_with_ttl(1, Duration::from_secs(60))
            .await
            .unwrap());
        let ttl = s.remaining_ttl().await.unwrap().unwrap();
        assert!(ttl > Duration::ZERO && ttl <= Duration::from_secs(60));
    }
}

// Rows 130, 131 (testAddPermits, testReducePermits), 137 (testReleaseAcquire).
#[tokio::test]
async fn add_and_reduce_permits() {
    for b in backends().await {
        let c = b.client().await;
        let s = c.semaphore(&name("sem"));
        s.try_set_permits(10).await.unwrap();
        s.acquire_many(10).await.unwrap();
        assert_eq!(s.available_permits().await.unwrap(), 0);
        s.add_permits(4).await.unwrap();
        assert_eq!(s.available_permits().await.unwrap(), 4);
        s.release_many(10).await.unwrap();
        assert_eq!(s.available_permits().await.unwrap(), 14);
        s.acquire_many(5).await.unwrap();
        assert_eq!(s.available_permits().await.unwrap(), 9);

        let r = c.semaphore(&name("sem"));
        r.try_set_permits(10).await.unwrap();
        r.acquire_many(10).await.unwrap();
        r.add_permits(-5).await.unwrap();
        assert_eq!(r.available_permits().await.unwrap(), -5);
        r.release_many(10).await.unwrap();
        assert_eq!(r.available_permits().await.unwrap(), 5);
        r.acquire_many(5).await.unwrap();
        assert_eq!(r.available_permits().await.unwrap(), 0);
    }
}

// Rows 127, 128, 135, 138 (testZero, testAcquireWithoutSetPermits, testReleaseWithoutPermits,
// testReleaseIfExists).
#[tokio::test]
async fn zero_permits_missing_key_and_release_if_exists() {
    for b in backends().await {
        let c = b.client().await;
        let s = c.semaphore(&name("sem"));
        assert!(s
            .try_acquire_many_for(0, Duration::from_secs(600))
            .await
            .unwrap());
        s.release_many(0).await.unwrap();
        assert_eq!(s.available_permits().await.unwrap(), 0);

        assert!(!s.release_if_exists(1).await.unwrap());
        assert_eq!(s.available_permits().await.unwrap(), 0);
        s.release().await.unwrap();
        assert_eq!(s.available_permits().await.unwrap(), 1);
        assert!(s.release_if_exists(1).await.unwrap());
        assert_eq!(s.available_permits().await.unwrap(), 2);
        s.acquire_many(2).await.unwrap();
        assert_eq!(s.available_permits().await.unwrap(), 0);
    }
}

// Rows 132, 133, 126 (testBlockingAcquire, testBlockingNAcquire, testAcquireAfterAddPermits):
// a blocked acquire stays blocked while too few permits exist and returns once a release (from
// another client) publishes enough.
#[tokio::test]
async fn blocking_acquire_is_woken_by_release_from_another_client() {
    for b in backends().await {
        let c1 = b.client().await;
        let c2 = b.client().await;
        let n = name("sem");
        let s1 = c1.semaphore(&n);
        let s2 = c2.semaphore(&n);
        s1.try_set_permits(5).await.unwrap();
        s1.acquire_many(3).await.unwrap();

        let waiter = tokio::spawn({
            let s1 = s1.clone();
            async move { s1.acquire_many(4).await }
        });
        s2.release().await.unwrap(); // 3 available: still not enough
        let probe = tokio::spawn({
            let s2 = s2.clone();
            async move { s2.try_acquire_many_for(4, Duration::from_millis(300)).await }
        });
        assert!(
            !probe.await.unwrap().unwrap(),
            "only 3 permits, 4 were taken"
        );
        assert!(!waiter.is_finished());
        s2.release().await.unwrap(); // 4 available
        timeout(BOUND, waiter).await.unwrap().unwrap().unwrap();
        assert_eq!(s1.available_permits().await.unwrap(), 0);
        assert!(!s1.try_acquire().await.unwrap());

        // addPermits wakes waiters too.
        let waiter = tokio::spawn({
            let s1 = s1.clone();
            async move { s1.acquire_many(2).await }
        });
        s2.add_permits(1).await.unwrap();
        assert!(timeout(Duration::from_millis(300), async {
            while !waiter.is_finished() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .is_err());
        s2.add_permits(1).await.unwrap();
        timeout(BOUND, waiter).await.unwrap().unwrap().unwrap();
        assert_eq!(s1.available_permits().await.unwrap(), 0);
    }
}

// Row 134 (testTryNAcquire): a timed acquire gives up with false and leaves the count alone.
#[tokio::test]
async fn timed_acquire_gives_up_without_taking_permits() {
    for b in backends().await {
        let c = b.client().await;
        let s = c.semaphore(&name("sem"));
        s.try_set_permits(5).await.unwrap();
        assert!(s.try_acquire_many(3).await.unwrap());
        assert!(!s.try_acquire_many(4).await.unwrap());
        assert!(!s
            .try_acquire_many_for(4, Duration::from_millis(200))
            .await
            .unwrap());
        assert_eq!(s.available_permits().await.unwrap(), 2);
        let t = tokio::spawn({
            let s = s.clone();
            async move { s.try_acquire_many_for(4, Duration::from_secs(10)).await }
        });
        s.release().await.unwrap();
        s.release().await.unwrap();
        assert!(timeout(BOUND, t).await.unwrap().unwrap().unwrap());
        assert_eq!(s.available_permits().await.unwrap(), 0);
    }
}

// A cancelled acquire keeps no permits.
#[tokio::test]
async fn dropping_a_waiting_acquire_keeps_no_permits() {
    for b in backends().await {
        let c = b.client().await;
        let s = c.semaphore(&name("sem"));
        s.try_set_permits(0).await.unwrap();
        assert!(timeout(Duration::from_millis(200), s.acquire())
            .await
            .is_err());
        s.release().await.unwrap();
        assert_eq!(s.available_permits().await.unwrap(), 1);
    }
}

// Rows 139, 141, 142 (concurrency): with one permit, sections never overlap and every task
// gets through; tasks span several clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_permit_is_mutual_exclusion_across_clients() {
    for b in backends().await {
        let n = name("sem");
        let clients = [b.client().await, b.client().await, b.client().await];
        clients[0].semaphore(&n).try_set_permits(1).await.unwrap();
        let inside = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for c in &clients {
            for _ in 0..10 {
                let s = c.semaphore(&n);
                let inside = inside.clone();
                let count = count.clone();
                tasks.push(tokio::spawn(async move {
                    for _ in 0..10 {
                        s.acquire().await.unwrap();
                        assert!(!inside.swap(true, Ordering::SeqCst), "two holders");
                        tokio::task::yield_now().await;
                        count.fetch_add(1, Ordering::SeqCst);
                        inside.store(false, Ordering::SeqCst);
                        s.release().await.unwrap();
                    }
                }));
            }
        }
        for t in tasks {
            timeout(Duration::from_secs(60), t).await.unwrap().unwrap();
        }
        assert_eq!(count.load(Ordering::SeqCst), 300);
        assert_eq!(
            clients[0].semaphore(&n).available_permits().await.unwrap(),
            1
        );
    }
}

// Issue 36, item 15: an RAII permit, as tokio's semaphore hands out: permits held by a task
// that panics come back when its permit is dropped in the unwinding.
#[tokio::test]
async fn a_semaphore_permit_gives_its_permits_back_when_dropped() {
    for b in backends().await {
        let c = b.client().await;
        let sem = c.semaphore(&name("raii"));
        assert!(sem.try_set_permits(3).await.unwrap());
        let permit = sem.acquire_permit(2).await.unwrap();
        assert_eq!(permit.permits(), 2);
        assert_eq!(sem.available_permits().await.unwrap(), 1);
        let worker = tokio::spawn(async move {
            let _held = permit;
            panic!("the worker fails while it holds the permits");
        });
        assert!(worker.await.unwrap_err().is_panic());
        assert!(
            eventually(Duration::from_secs(5), || async {
                sem.available_permits().await.unwrap() == 3
            })
            .await,
            "{}: the permits were not given back",
            b.name
        );
        let p = sem
            .try_acquire_permit_for(3, Duration::from_millis(100))
            .await
            .unwrap()
            .expect("all three are free");
        assert_eq!(sem.available_permits().await.unwrap(), 0);
        p.release().await.unwrap();
        assert_eq!(sem.available_permits().await.unwrap(), 3);
        let kept = sem.acquire_permit(1).await.unwrap();
        kept.forget();
        assert_eq!(sem.available_permits().await.unwrap(), 2);
    }
}
