//! Wire compatibility with Java Redisson: the exact layout of a held lock, release by the seeds'
//! Redisson script run by hand, and waking on that script's PUBLISH.

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use support::{backends, name};

/// Redisson's release script as quoted in seed 003 (MONITOR trace of Redisson 3.x).
const SEED_RELEASE: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('publish', KEYS[2], ARGV[1]); return 1; end;if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;";

/// Redisson's acquire script as quoted in seed 003.
const SEED_ACQUIRE: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";

#[tokio::test]
async fn a_held_lock_has_exactly_redissons_layout() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("layout");
        let l = c.lock(&n);
        l.lock().await.unwrap();
        l.lock().await.unwrap();
        let mut raw = b.raw().await;
        let t: String = redis::cmd("TYPE")
            .arg(&n)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(t, "hash");
        let h: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&n)
            .query_async(&mut raw)
            .await
            .unwrap();
        let field = format!("{}:{}", c.id(), l.owner().id());
        assert_eq!(h, HashMap::from([(field.clone(), "2".to_owned())]));
        assert_eq!(l.owner_field(), field);
        // The client id is a UUID v4 (36 chars, version nibble 4).
        assert_eq!(c.id().len(), 36);
        assert_eq!(&c.id()[14..15], "4");
        let pttl: i64 = redis::cmd("PTTL")
            .arg(&n)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!(pttl > 29_000 && pttl <= 30_000);
        // Nothing else was written besides the hash.
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("*{n}*"))
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(keys, vec![n.clone()]);
        l.unlock().await.unwrap();
        l.unlock().await.unwrap();
        // The unlock latches are deleted after use, as Redisson does.
        assert!(
            support::eventually(Duration::from_secs(2), || {
                let mut raw = raw.clone();
                let n = n.clone();
                async move {
                    let keys: Vec<String> = redis::cmd("KEYS")
                        .arg(format!("*{n}*"))
                        .query_async(&mut raw)
                        .await
                        .unwrap();
                    keys.is_empty()
                }
            })
            .await
        );
    }
}

#[tokio::test]
async fn the_seed_release_script_releases_our_lock_and_wakes_our_waiter() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("seedrelease");
        let holder = c.lock(&n);
        holder.lock().await.unwrap();
        let waiter = b.client().await.lock(&n);
        let task = tokio::spawn(async move {
            waiter.lock().await.unwrap();
            waiter
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Act as a Java Redisson client releasing the lock with the seed's script.
        let mut raw = b.raw().await;
        let channel = format!("redisson_lock__channel:{{{n}}}");
        let r: Option<i64> = redis::cmd("EVAL")
            .arg(SEED_RELEASE)
            .arg(2)
            .arg(&n)
            .arg(&channel)
            .arg(0)
            .arg(30_000)
            .arg(holder.owner_field())
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(r, Some(1));
        let waiter = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
        assert!(waiter.is_held_by_me().await.unwrap());
        waiter.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn a_lock_taken_by_the_seed_acquire_script_blocks_us_until_released() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("seedacquire");
        let java_owner = "58c62432-bb74-4d14-8a00-9908cc8b828f:1";
        let mut raw = b.raw().await;
        let r: Option<i64> = redis::cmd("EVAL")
            .arg(SEED_ACQUIRE)
            .arg(1)
            .arg(&n)
            .arg(30_000)
            .arg(java_owner)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(r, None);
        let ours = c.lock(&n);
        assert!(!ours.try_lock().await.unwrap());
        assert!(ours.unlock().await.unwrap_err().is_not_owner());
        let r: Option<i64> = redis::cmd("EVAL")
            .arg(SEED_RELEASE)
            .arg(2)
            .arg(&n)
            .arg(format!("redisson_lock__channel:{{{n}}}"))
            .arg(0)
            .arg(30_000)
            .arg(java_owner)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(r, Some(1));
        assert!(ours.try_lock().await.unwrap());
        ours.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn fair_and_rw_locks_use_redissons_keys_and_fields() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("layout2");
        let mut raw = b.raw().await;
        let f = c.fair_lock(&n);
        f.lock().await.unwrap();
        let waiter = c.fair_lock(&n);
        assert!(!waiter
            .try_lock_for(Duration::from_millis(50), None)
            .await
            .unwrap());
        f.unlock().await.unwrap();

        let rw = c.read_write_lock(&format!("{n}-rw"));
        rw.write_lock().lock().await.unwrap();
        rw.read_lock().lock().await.unwrap();
        let h: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(format!("{n}-rw"))
            .query_async(&mut raw)
            .await
            .unwrap();
        let base = format!("{}:{}", c.id(), rw.read_lock().owner().id());
        assert_eq!(
            h,
            HashMap::from([
                ("mode".to_owned(), "write".to_owned()),
                (format!("{base}:write"), "1".to_owned()),
                (base.clone(), "1".to_owned()),
            ])
        );
        let tkey = format!("{{{n}-rw}}:{base}:rwlock_timeout:1");
        let exists: bool = redis::cmd("EXISTS")
            .arg(&tkey)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!(exists, "{tkey}");
        rw.read_lock().unlock().await.unwrap();
        rw.write_lock().unlock().await.unwrap();
    }
}
