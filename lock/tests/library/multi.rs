//! `MultiLock` and `RedLock` behaviours (RedissonMultiLockTest, RedissonRedLockTest), on
//! independent servers.

use crate::support;

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
        // The one lock it got was rolled back, and the outcome says so.
        assert!(!cs[0].lock(&n).is_locked().await.unwrap());
        assert!(
            matches!(out.nodes[0], NodeOutcome::Released),
            "{:?}",
            out.nodes
        );
        assert!(matches!(out.nodes[1], NodeOutcome::Busy), "{:?}", out.nodes);
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
                    let out = red.lock(Some(Duration::from_secs(10))).await.unwrap();
                    assert!(out.acquired);
                    assert!(out.validity.is_some());
                    assert!(!inside.swap(true, std::sync::atomic::Ordering::SeqCst));
                    let v = counter.load(std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(MS(2)).await;
                    counter.store(v + 1, std::sync::atomic::Ordering::SeqCst);
                    inside.store(false, std::sync::atomic::Ordering::SeqCst);
                    // A quorum is enough: a node another contender held when the parallel
                    // round ran is not ours to release.
                    for (r, node) in red.unlock().await.into_iter().zip(&out.nodes) {
                        if node.is_acquired() {
                            r.unwrap();
                        } else {
                            assert!(r.unwrap_err().is_not_owner());
                        }
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

// A MultiLock call dropped half-way (here: after it took two of three locks and waits for the
// third) releases what it took: nothing stays locked or renewed (issue 19).
#[tokio::test]
async fn a_cancelled_multilock_releases_what_it_took() {
    for (_bs, cs) in trios().await {
        let n = name("multi-cancel");
        cs[2].lock_for(&n, Owner::new()).lock().await.unwrap();
        let m = MultiLock::new(cs.iter().map(|c| c.lock(&n)).collect());
        let attempt = m.try_lock_for(Some(Duration::from_secs(20)), None);
        assert!(tokio::time::timeout(MS(500), attempt).await.is_err());
        for (i, c) in cs.iter().enumerate().take(2) {
            let check = c.lock(&n);
            assert!(
                support::eventually(Duration::from_secs(5), || async {
                    !check.is_locked().await.unwrap()
                })
                .await,
                "node {i} still locked after the cancelled MultiLock"
            );
            assert!(!m.locks()[i].is_renewing());
        }
    }
}

// RedLock reports its validity time, and the lease it ends with (not the 2 × wait it took the
// locks with) is what their lost signals follow; the final PEXPIRE is owner-checked.
#[tokio::test]
async fn redlock_reports_validity_and_its_locks_follow_the_real_lease() {
    for (_bs, cs) in trios().await {
        let n = name("red-validity");
        let red = RedLock::new(cs.iter().map(|c| c.lock(&n)).collect());
        let lease = MS(800);
        let out = red
            .try_lock_for(Some(Duration::from_secs(30)), Some(lease))
            .await
            .unwrap();
        assert!(out.acquired);
        let validity = out.validity.expect("a validity time");
        assert!(validity < lease, "{validity:?}");
        let mut lost = red.locks()[0].lost_signal().unwrap();
        // The locks were taken with 2 × 10 s; the signal follows the real 800 ms lease.
        let reason = tokio::time::timeout(Duration::from_secs(10), lost.lost())
            .await
            .expect("the lost signal follows the final lease");
        assert_eq!(reason, Some(locksmith_lock::LostReason::LeaseExpired));
        // Owner-checked: once someone else holds the lock, setting our lease does nothing.
        let other = cs[0].lock(&n);
        assert!(
            support::eventually(Duration::from_secs(5), || async {
                other.try_lock().await.unwrap()
            })
            .await
        );
        assert!(!red.locks()[0]
            .set_lease(Duration::from_secs(60))
            .await
            .unwrap());
        assert!(other.remaining_ttl().await.unwrap().unwrap() <= Duration::from_secs(30));
        other.unlock().await.unwrap();
    }
}

// Redisson's MultiLock takes any RLock: here a fair lock, a read lock and a write lock, one on
// each server, held together; each excludes what its kind excludes (a second reader shares the
// read lock, a writer waits), and the guard releases all three.
#[tokio::test]
async fn a_multilock_mixes_fair_read_and_write_locks() {
    use locksmith_lock::DistributedLock;
    for (bs, cs) in trios().await {
        let (fair_name, read_name, write_name) = (name("mix-fair"), name("mix-r"), name("mix-w"));
        let me = Owner::new();
        let mixed = MultiLock::new(vec![
            cs[0].fair_lock_for(&fair_name, me).boxed(),
            cs[1]
                .read_write_lock_for(&read_name, me)
                .read_lock()
                .boxed(),
            cs[2]
                .read_write_lock_for(&write_name, me)
                .write_lock()
                .boxed(),
        ]);
        let guard = mixed.acquire(Some(Duration::from_secs(10))).await.unwrap();
        assert!(guard.outcome().acquired);
        assert_eq!(guard.guards().len(), 3);
        assert!(mixed.is_held_by_me().await.unwrap());
        let mode = |i: usize, key: String| {
            let b = &bs[i];
            async move {
                let mut raw = b.raw().await;
                let m: Option<String> = redis::cmd("HGET")
                    .arg(key)
                    .arg("mode")
                    .query_async(&mut raw)
                    .await
                    .unwrap();
                m
            }
        };
        assert_eq!(mode(1, read_name.clone()).await.as_deref(), Some("read"));
        assert_eq!(mode(2, write_name.clone()).await.as_deref(), Some("write"));
        assert!(!cs[0].fair_lock(&fair_name).try_lock().await.unwrap());
        let reader = cs[1].read_write_lock(&read_name).read_lock();
        assert!(reader.try_lock().await.unwrap(), "readers share");
        reader.unlock().await.unwrap();
        assert!(!cs[1]
            .read_write_lock(&read_name)
            .write_lock()
            .try_lock()
            .await
            .unwrap());
        assert!(!cs[2]
            .read_write_lock(&write_name)
            .read_lock()
            .try_lock()
            .await
            .unwrap());
        // A second mixed MultiLock (new owners) cannot get it while the guard lives.
        assert!(!mixed.clone().try_lock().await.unwrap().acquired);
        guard.unlock().await.unwrap();
        assert!(!mixed.is_held_by_me().await.unwrap());
        let again = mixed.clone();
        let g = again
            .try_acquire_for(Some(Duration::from_secs(5)), None)
            .await
            .unwrap()
            .expect("free after the guard's unlock");
        drop(g);
        for l in again.locks() {
            assert!(
                support::eventually(Duration::from_secs(5), || async {
                    !l.is_locked().await.unwrap()
                })
                .await,
                "{} still held after the guard was dropped",
                l.name()
            );
        }
    }
}

// A RedLock of fair locks: its guard's section runs while a majority is held and is cancelled
// once too many of its locks are lost.
#[tokio::test]
async fn a_redlock_guard_cancels_its_section_when_the_majority_is_lost() {
    use locksmith_lock::{ClientOptions, LockError};
    for (bs, _) in trios().await {
        let mut cs = Vec::new();
        for b in &bs {
            cs.push(
                b.client_with(ClientOptions::default().watchdog_timeout(MS(900)))
                    .await,
            );
        }
        let n = name("red-fair");
        let me = Owner::new();
        let red = RedLock::new(cs.iter().map(|c| c.fair_lock_for(&n, me)).collect());
        let guard = red.acquire(None).await.unwrap();
        assert_eq!(guard.guards().len(), 3);
        // One lost lock leaves a majority: the section still completes.
        assert!(cs[0].fair_lock(&n).force_unlock().await.unwrap());
        let fine = guard.run(tokio::time::sleep(MS(700))).await;
        assert!(fine.is_ok(), "{fine:?}");
        // A second loss breaks the majority.
        let intruder = bs[1].client().await;
        assert!(intruder.fair_lock(&n).force_unlock().await.unwrap());
        let res = tokio::time::timeout(
            Duration::from_secs(10),
            guard.run(tokio::time::sleep(Duration::from_secs(3600))),
        )
        .await
        .expect("cancelled");
        assert!(matches!(res, Err(LockError::Lost { .. })), "{res:?}");
        assert!(guard.is_lost());
        drop(guard);
    }
}

// Issue 36, item 1: a MultiLock's wait ends on time while another owner keeps its first lock
// (a reset round skipped the remaining-time update, so every round waited the whole wait
// again: a 500 ms try blocked as long as the other owner held on), and while the first server
// is down (a hot loop of rounds that never ended).
#[tokio::test]
async fn a_multilock_wait_ends_on_time_while_its_first_lock_is_held_elsewhere() {
    for (_bs, cs) in trios().await {
        let n = name("multi-wait");
        let other = cs[0].lock_for(&n, Owner::new());
        other.lock().await.unwrap();
        let m = MultiLock::new(cs.iter().map(|c| c.lock(&n)).collect());
        let out = tokio::time::timeout(Duration::from_secs(5), m.try_lock_for(Some(MS(500)), None))
            .await
            .expect("a 500 ms wait ended within 5 s")
            .unwrap();
        assert!(!out.acquired);
        assert!(matches!(out.nodes[0], NodeOutcome::Busy), "{:?}", out.nodes);
        for c in &cs[1..] {
            assert!(!c.lock(&n).is_locked().await.unwrap());
        }
        other.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn a_multilock_wait_ends_on_time_while_its_first_server_is_down() {
    for (mut bs, cs) in trios().await {
        bs[0].stop();
        let n = name("multi-down");
        let m = MultiLock::new(cs.iter().map(|c| c.lock(&n)).collect());
        let out = tokio::time::timeout(
            Duration::from_secs(5),
            m.try_lock_for(Some(MS(500)), Some(Duration::from_secs(10))),
        )
        .await
        .expect("a 500 ms wait ended within 5 s")
        .unwrap();
        assert!(!out.acquired);
        assert!(
            matches!(out.nodes[0], NodeOutcome::Failed(_)),
            "{:?}",
            out.nodes
        );
        for c in &cs[1..] {
            assert!(!c.lock(&n).is_locked().await.unwrap());
        }
    }
}
