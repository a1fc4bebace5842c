//! `ReadWriteLock` behaviours from SCENARIOS.md (RedissonReadWriteLockTest), on every backend.

use crate::support;

use std::time::Duration;

use locksmith_lock::Owner;
use support::{backends, name, short_watchdog};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[tokio::test]
async fn many_readers_share_and_a_writer_waits_for_all() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("rw-multi");
        let r1 = c.read_write_lock(&n).read_lock();
        let r2 = c.read_write_lock(&n).read_lock();
        let w = c.read_write_lock(&n).write_lock();
        assert!(!r1.force_unlock().await.unwrap());
        r1.lock().await.unwrap();
        r2.lock().await.unwrap();
        assert!(!w.try_lock().await.unwrap());
        r1.unlock().await.unwrap();
        assert!(!w.try_lock().await.unwrap());
        r2.unlock().await.unwrap();
        assert!(w.try_lock().await.unwrap());
        w.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn the_writer_can_take_read_locks_and_downgrade() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("rw-downgrade");
        let owner = Owner::new();
        let mine = c.read_write_lock_for(&n, owner);
        let other = c.read_write_lock(&n);
        mine.write_lock().lock().await.unwrap();
        mine.write_lock().lock().await.unwrap();
        assert!(!other.write_lock().is_held_by_me().await.unwrap());
        assert!(other.write_lock().is_locked().await.unwrap());
        assert!(!other.read_lock().try_lock().await.unwrap());
        assert!(mine.read_lock().try_lock().await.unwrap());
        assert!(mine.read_lock().is_locked().await.is_ok());
        mine.write_lock().unlock().await.unwrap();
        mine.write_lock().unlock().await.unwrap();
        // Downgraded: read mode, other readers may enter, writers may not.
        assert!(mine.read_lock().is_locked().await.unwrap());
        assert!(!mine.write_lock().is_locked().await.unwrap());
        assert!(other.read_lock().try_lock().await.unwrap());
        assert!(!mine.write_lock().try_lock().await.unwrap());
        other.read_lock().unlock().await.unwrap();
        mine.read_lock().unlock().await.unwrap();
        assert!(!mine.read_lock().is_locked().await.unwrap());
    }
}

#[tokio::test]
async fn write_release_wakes_all_waiting_readers() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("rw-wakeall");
        let w = c.read_write_lock(&n).write_lock();
        w.lock().await.unwrap(); // 30 s lease: only the wake-all message releases readers in time
        let mut tasks = Vec::new();
        for _ in 0..10 {
            let r = c.read_write_lock(&n).read_lock();
            tasks.push(tokio::spawn(async move {
                r.lock().await.unwrap();
                r
            }));
        }
        tokio::time::sleep(MS(100)).await;
        w.unlock().await.unwrap();
        let mut readers = Vec::new();
        for t in tasks {
            readers.push(
                tokio::time::timeout(Duration::from_secs(5), t)
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
        for r in readers {
            r.unlock().await.unwrap();
        }
    }
}

#[tokio::test]
async fn hold_counts_and_non_owner_unlock_for_read_and_write() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("rw-hold");
        let rw = c.read_write_lock(&n);
        assert_eq!(rw.read_lock().hold_count().await.unwrap(), 0);
        assert_eq!(rw.write_lock().hold_count().await.unwrap(), 0);
        rw.read_lock().lock().await.unwrap();
        rw.read_lock().lock().await.unwrap();
        assert_eq!(rw.read_lock().hold_count().await.unwrap(), 2);
        let err = c
            .read_write_lock(&n)
            .read_lock()
            .unlock()
            .await
            .unwrap_err();
        assert!(err.is_not_owner());
        rw.read_lock().unlock().await.unwrap();
        rw.read_lock().unlock().await.unwrap();
        assert!(!rw.read_lock().is_locked().await.unwrap());
        rw.write_lock().lock().await.unwrap();
        assert_eq!(rw.write_lock().hold_count().await.unwrap(), 1);
        assert!(c
            .read_write_lock(&n)
            .write_lock()
            .unlock()
            .await
            .unwrap_err()
            .is_not_owner());
        rw.write_lock().unlock().await.unwrap();
    }
}

#[tokio::test]
async fn force_unlock_only_acts_on_the_matching_mode() {
    for b in backends().await {
        let c = b.client().await;
        let rw = c.read_write_lock(&name("rw-force"));
        rw.read_lock().lock().await.unwrap();
        assert!(!rw.write_lock().force_unlock().await.unwrap());
        assert!(rw.read_lock().is_locked().await.unwrap());
        assert!(rw.read_lock().force_unlock().await.unwrap());
        assert!(!rw.read_lock().is_locked().await.unwrap());
        rw.write_lock().lock().await.unwrap();
        assert!(!rw.read_lock().force_unlock().await.unwrap());
        assert!(rw.write_lock().force_unlock().await.unwrap());
        assert!(!rw.write_lock().is_locked().await.unwrap());
    }
}

#[tokio::test]
async fn the_read_watchdog_keeps_read_holds_and_their_timeout_keys_alive() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(900)).await;
        let n = name("rw-renew");
        let r = c.read_write_lock(&n).read_lock();
        r.lock().await.unwrap();
        r.lock().await.unwrap();
        tokio::time::sleep(MS(2000)).await;
        assert_eq!(r.hold_count().await.unwrap(), 2);
        let mut raw = b.raw().await;
        let key = format!("{{{n}}}:{}:rwlock_timeout:2", r.owner_field());
        let exists: bool = redis::cmd("EXISTS")
            .arg(&key)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!(exists, "{key}");
        r.unlock().await.unwrap();
        r.unlock().await.unwrap();
        assert!(!r.is_locked().await.unwrap());
    }
}

#[tokio::test]
async fn a_hash_tagged_name_works_for_readers() {
    for b in backends().await {
        let c = b.client().await;
        let n = format!("{{{}}}:abc:key", name("tag"));
        let mut tasks = Vec::new();
        for _ in 0..5 {
            let r = c.read_write_lock(&n).read_lock();
            tasks.push(tokio::spawn(async move {
                for _ in 0..5 {
                    r.lock().await.unwrap();
                    r.unlock().await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert!(!c.read_write_lock(&n).read_lock().is_locked().await.unwrap());
    }
}
