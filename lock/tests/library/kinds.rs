//! `SpinLock`, `FencedLock` and `SimpleLock` behaviours, on every backend.

use crate::support;

use std::time::Duration;

use locksmith_lock::Backoff;
use support::{backends, name};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[tokio::test]
async fn spin_lock_is_reentrant_and_polls_without_pubsub() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("spin");
        let a = c.spin_lock(&n);
        assert!(a.try_lock().await.unwrap());
        assert!(a.try_lock().await.unwrap());
        let other = c
            .spin_lock(&n)
            .with_backoff(Backoff::exponential(MS(5), MS(40), 2));
        assert!(!other.try_lock().await.unwrap());
        assert!(other.unlock().await.unwrap_err().is_not_owner());
        // A clone acts for a new owner: it waits for `a` like `other` would.
        let waiter = other.clone();
        assert_ne!(waiter.owner(), other.owner());
        let task = tokio::spawn(async move {
            let got = waiter.try_lock_for(Duration::from_secs(5), None).await;
            (waiter, got)
        });
        tokio::time::sleep(MS(100)).await;
        a.unlock().await.unwrap();
        a.unlock().await.unwrap();
        let (other, got) = task.await.unwrap();
        assert!(got.unwrap());
        let mut raw = b.raw().await;
        let chans: Vec<String> = redis::cmd("PUBSUB")
            .arg("CHANNELS")
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!(chans.is_empty());
        other.unlock().await.unwrap();
        assert!(!other.is_locked().await.unwrap());
    }
}

#[tokio::test]
async fn spin_try_lock_for_gives_up_while_held() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("spin-wait");
        let a = c.spin_lock(&n);
        a.lock().await.unwrap();
        assert!(!c
            .spin_lock(&n)
            .try_lock_for(MS(200), Some(MS(30_000)))
            .await
            .unwrap());
        assert!(a.force_unlock().await.unwrap());
    }
}

#[tokio::test]
async fn fencing_tokens_increase_with_every_acquisition() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("fenced");
        let l = c.fenced_lock(&n);
        assert_eq!(l.token().await.unwrap(), None);
        assert_eq!(l.lock_and_get_token().await.unwrap(), 1);
        l.unlock().await.unwrap();
        assert_eq!(l.lock_and_get_token().await.unwrap(), 2);
        l.unlock().await.unwrap();
        l.lock().await.unwrap();
        assert_eq!(l.token().await.unwrap(), Some(3));
        l.unlock().await.unwrap();
        l.lock_with_lease(Duration::from_secs(10)).await.unwrap();
        assert_eq!(l.token().await.unwrap(), Some(4));
        l.unlock().await.unwrap();
        assert_eq!(l.try_lock_and_get_token().await.unwrap(), Some(5));
        assert_eq!(
            c.fenced_lock(&n).try_lock_and_get_token().await.unwrap(),
            None
        );
        l.unlock().await.unwrap();
        let mut raw = b.raw().await;
        let v: i64 = redis::cmd("GET")
            .arg(format!("redisson_lock_token:{{{n}}}"))
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(v, 5);
    }
}

#[tokio::test]
async fn simple_lock_sets_nx_px_and_releases_only_its_own_value() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("simple");
        let a = c.simple_lock(&n);
        let other = c.simple_lock(&n);
        assert!(a.try_lock(Duration::from_secs(10)).await.unwrap());
        assert!(!other.try_lock(Duration::from_secs(10)).await.unwrap());
        let mut raw = b.raw().await;
        let v: String = redis::cmd("GET")
            .arg(&n)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(v, a.value());
        assert!(!other.unlock().await.unwrap());
        assert!(a.extend(Duration::from_secs(20)).await.unwrap());
        assert!(a.unlock().await.unwrap());
        assert!(other.try_lock_for(MS(500), MS(300)).await.unwrap());
        // Expires by itself: the baseline has no watchdog.
        assert!(a
            .try_lock_for(Duration::from_secs(3), MS(300))
            .await
            .unwrap());
        assert!(!other.unlock().await.unwrap());
        assert!(a.unlock().await.unwrap());
    }
}

// Issue 36, item 15: a SimpleLock's clone is a new holder with a value of its own (it copied
// the value, so clones unlocked each other's hold).
#[tokio::test]
async fn a_simple_lock_clone_is_a_new_holder() {
    for b in backends().await {
        let c = b.client().await;
        let a = c.simple_lock(&name("simple-clone"));
        let twin = a.clone();
        assert_ne!(a.value(), twin.value());
        assert!(a.try_lock(MS(5_000)).await.unwrap());
        assert!(!twin.try_lock(MS(5_000)).await.unwrap());
        assert!(!twin.unlock().await.unwrap(), "{}", b.name);
        assert!(a.unlock().await.unwrap());
    }
}
