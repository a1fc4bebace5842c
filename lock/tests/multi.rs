//! `MultiLock` and `RedLock` behaviours (RedissonMultiLockTest, RedissonRedLockTest), on
//! independent servers.

mod support;

use std::time::Duration;

use locksmith_lock::{Client, MultiLock, NodeOutcome, Owner, RedLock};
use support::{in_process, name, real_redis, Backend};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Three independent servers (the RedLock tests need several): three of ours, and three
/// real `redis-server`s when one is on the PATH.
async fn trios() -> Vec<(Vec<Backend>, Vec<Client>)> {
    let mut sets = vec![vec![
        in_process().await,
        in_process().await,
        in_process().await,
    ]];
    if let (Some(a), Some(b), Some(c)) = (real_redis(&[]), real_redis(&[]), real_redis(&[])) {
        sets.push(vec![a, b, c]);
    }
    let mut out = Vec::new();
    for bs in sets {
        let mut cs = Vec::new();
        for b in &bs {
            cs.push(b.client().await);
        }
        out.push((bs, cs));
    }
    out
}

#[tokio::test]
async fn multilock_holds_all_locks_and_excludes_others() {
    for (_bs, cs) in trios().await {
        let n = name("multi");
        let me = Owner::new();
        let mine = MultiLock::new(cs.iter().map(|c| c.lock_for(&n, me)).collect());
        let other = MultiLock::new(cs.iter().map(|c| c.lock(&n)).collect());
        let out = mine.lock(Some(Duration::from_secs(10))).await.unwrap();
        assert!(out.acquired);
        assert!(mine.is_held_by_me().await.unwrap());
        assert!(!other.try_lock().await.unwrap().acquired);
        assert!(!other.try_lock().await.unwrap().acquired);
        for c in &cs {
            assert!(!c.lock(&n).try_lock().await.unwrap());
        }
        mine.unlock().await.unwrap();
        assert!(!mine.is_held_by_me().await.unwrap());
        assert!(other.try_lock().await.unwrap().acquired);
        other.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn only_one_of_ten_contenders_gets_the_multilock() {
    for (_bs, cs) in trios().await {
        let n = name("multi10");
        let mut tasks = Vec::new();
        for _ in 0..10 {
            let m = MultiLock::new(cs.iter().map(|c| c.lock(&n)).collect());
            tasks.push(tokio::spawn(async move {
                m.try_lock_for(None, Some(Duration::from_secs(10)))
                    .await
                    .unwrap()
                    .acquired
            }));
        }
        let mut wins = 0;
        for t in tasks {
            wins += t.await.unwrap() as usize;
        }
        assert_eq!(wins, 1);
    }
}

#[tokio::test]
async fn redlock_fails_with_only_one_of_three() {
    for (_bs, cs) in trios().await {
        let n = name("red-fail");
        let other = Owner::new();
        cs[1].lock_for(&n, other).lock().await.unwrap();
        cs[2].lock_for(&n, other).lock().await.unwrap();
        let red = RedLock::new(cs.iter().map(|c| c.lock(&n)).collect());
        let out = red.try_lock().await.unwrap();
        assert!(!out.acquired);
        // The one lock it got was rolled back.
        assert!(!cs[0].lock(&n).is_locked().await.unwrap());
    }
}

#[tokio::test]
async fn redlock_succeeds_with_two_of_three() {
    for (_bs, cs) in trios().await {
        let n = name("red-ok");
        cs[1].lock(&n).lock().await.unwrap();
        let red = RedLock::new(cs.iter().map(|c| c.lock(&n)).collect());
        assert_eq!(red.quorum(), 2);
        let out = red
            .try_lock_for(Some(MS(500)), Some(Duration::from_secs(5)))
            .await
            .unwrap();
        assert!(out.acquired);
        assert!(out.nodes[0].is_acquired());
        assert!(matches!(out.nodes[1], NodeOutcome::Busy));
        let ttl = red.locks()[0].remaining_ttl().await.unwrap().unwrap();
        assert!(ttl <= Duration::from_secs(5) && ttl > Duration::from_secs(4));
        let results = red.unlock().await;
        assert!(results[0].is_ok() && results[2].is_ok());
        assert!(results[1].as_ref().unwrap_err().is_not_owner());
    }
}

#[tokio::test]
async fn redlock_survives_a_node_that_is_down_and_reports_its_error() {
    for (mut bs, cs) in trios().await {
        bs[2].stop();
        let n = name("red-down");
        let red = RedLock::new(cs.iter().map(|c| c.lock(&n)).collect());
        let out = red.lock(Some(Duration::from_secs(5))).await.unwrap();
        assert!(out.acquired);
        assert!(out.nodes[0].is_acquired() && out.nodes[1].is_acquired());
        // A node that is down is a failed lock with its error, not an abort of the quorum.
        assert!(
            matches!(&out.nodes[2], NodeOutcome::Failed(e) if e.is_redis())
                || matches!(out.nodes[2], NodeOutcome::NotTried)
        );
        let results = red.unlock().await;
        assert!(results[0].is_ok() && results[1].is_ok() && results[2].is_err());
    }
}

#[tokio::test]
async fn redlock_gives_mutual_exclusion_under_contention() {
    for (_bs, cs) in trios().await {
        let n = name("red-mutex");
        let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let inside = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut tasks = Vec::new();
        for _ in 0..5 {
            let red = RedLock::new(cs.iter().map(|c| c.lock(&n)).collect());
            let counter = counter.clone();
            let inside = inside.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..5 {
                    assert!(
                        red.lock(Some(Duration::from_secs(10)))
                            .await
                            .unwrap()
                            .acquired
                    );
                    assert!(!inside.swap(true, std::sync::atomic::Ordering::SeqCst));
                    let v = counter.load(std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(MS(2)).await;
                    counter.store(v + 1, std::sync::atomic::Ordering::SeqCst);
                    inside.store(false, std::sync::atomic::Ordering::SeqCst);
                    for r in red.unlock().await {
                        r.unwrap();
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(counter.load(std::sync::atomic::Ordering::SeqCst), 25);
    }
}
