//! `CountDownLatch` (Redisson's `RCountDownLatch`), adapted from `RedissonCountDownLatchTest`
//! (SCENARIOS.md rows 173–181).

use crate::support;

use std::time::Duration;

use support::{backends, name};
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(10);

// Rows 177–180 (testDelete, testDeleteFailed, testTrySetCount, testCount) and the layout.
#[tokio::test]
async fn try_set_count_delete_and_count() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("latch");
        let l = c.count_down_latch(&n);
        assert_eq!(
            l.channel(),
            format!("redisson_countdownlatch__channel__{{{n}}}")
        );
        assert_eq!(l.count().await.unwrap(), 0);
        assert!(!l.delete().await.unwrap());
        assert!(l.try_set_count(1).await.unwrap());
        assert!(!l.try_set_count(2).await.unwrap());
        assert_eq!(l.count().await.unwrap(), 1);
        let mut raw = b.raw().await;
        let v: String = redis::cmd("GET")
            .arg(&n)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(v, "1", "backend {}", b.name);
        assert!(l.delete().await.unwrap());
        assert_eq!(l.count().await.unwrap(), 0);
    }
}

// Row 176 (testCountDown): the count never goes below zero and waiting at zero returns at once.
#[tokio::test]
async fn count_down_stops_at_zero() {
    for b in backends().await {
        let c = b.client().await;
        let l = c.count_down_latch(&name("latch"));
        l.try_set_count(2).await.unwrap();
        l.count_down().await.unwrap();
        assert_eq!(l.count().await.unwrap(), 1);
        l.count_down().await.unwrap();
        assert_eq!(l.count().await.unwrap(), 0);
        l.wait().await.unwrap();
        l.count_down().await.unwrap();
        assert_eq!(l.count().await.unwrap(), 0);
        let mut raw = b.raw().await;
        let exists: bool = redis::cmd("EXISTS")
            .arg(l.name())
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!(!exists, "DECR to -1 deletes the key");

        // A missing latch: count_down leaves nothing, wait returns at once.
        let m = c.count_down_latch(&name("latch"));
        m.count_down().await.unwrap();
        assert_eq!(m.count().await.unwrap(), 0);
        assert!(m.wait_for(Duration::from_millis(1)).await.unwrap());
    }
}

// Rows 173, 174 (testAwaitTimeout, testAwaitTimeoutFail).
#[tokio::test]
async fn wait_for_times_out_then_succeeds_after_count_down() {
    for b in backends().await {
        let c = b.client().await;
        let l = c.count_down_latch(&name("latch"));
        l.try_set_count(1).await.unwrap();
        assert!(!l.wait_for(Duration::from_millis(200)).await.unwrap());
        let waiter = tokio::spawn({
            let l = l.clone();
            async move { l.wait_for(Duration::from_secs(10)).await }
        });
        let other = b.client().await;
        other.count_down_latch(l.name()).count_down().await.unwrap();
        assert!(timeout(BOUND, waiter).await.unwrap().unwrap().unwrap());
    }
}

// Rows 175, 181 (testMultiAwait, testSingleCountDownAwait): many waiters over several clients,
// many concurrent count-downs; every waiter is released with count 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_waiter_is_released_by_the_last_count_down() {
    for b in backends().await {
        let n = name("latch");
        let clients = [b.client().await, b.client().await];
        clients[0]
            .count_down_latch(&n)
            .try_set_count(6)
            .await
            .unwrap();
        let mut waiters = Vec::new();
        for c in &clients {
            for _ in 0..5 {
                let l = c.count_down_latch(&n);
                waiters.push(tokio::spawn(async move { l.wait().await }));
            }
        }
        let mut downs = Vec::new();
        for i in 0..6 {
            let l = clients[i % 2].count_down_latch(&n);
            downs.push(tokio::spawn(async move { l.count_down().await }));
        }
        for d in downs {
            d.await.unwrap().unwrap();
        }
        for w in waiters {
            timeout(BOUND, w).await.unwrap().unwrap().unwrap();
        }
        assert_eq!(clients[1].count_down_latch(&n).count().await.unwrap(), 0);
    }
}

// A latch can be set again after reaching zero (Redisson's difference from the JDK latch).
#[tokio::test]
async fn latch_can_be_reused_after_zero() {
    for b in backends().await {
        let c = b.client().await;
        let l = c.count_down_latch(&name("latch"));
        assert!(l.try_set_count(1).await.unwrap());
        l.count_down().await.unwrap();
        assert!(l.try_set_count(1).await.unwrap());
        assert_eq!(l.count().await.unwrap(), 1);
        assert!(timeout(Duration::from_millis(200), l.wait()).await.is_err());
    }
}
