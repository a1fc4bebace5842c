//! The rows of SCENARIOS.md that are about time, on tokio's paused clock against our in-process
//! server: the server's expiries and the library's watchdogs, leases and waits all run on the
//! same virtual clock in one runtime, so 30-second watchdog scenarios take milliseconds and the
//! times Redisson checks with a tolerance are exact here.

use crate::support;

use locksmith::lock::{Client, LockError, Owner};
use locksmith::server::{Server, ServerHandle};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

static FAIR_ACQUIRE: std::sync::LazyLock<redis::Script> =
    std::sync::LazyLock::new(|| redis::Script::new(locksmith::lock::script_sources::FAIR_ACQUIRE));

const MS: fn(u64) -> Duration = Duration::from_millis;
const SECS: fn(u64) -> Duration = Duration::from_secs;

async fn server() -> ServerHandle {
    support::init_tracing();
    Server::builder().start().await.unwrap()
}

async fn client(s: &ServerHandle) -> Client {
    Client::open(&s.url()).await.unwrap()
}

async fn pttl(c: &Client, key: &str) -> i64 {
    let mut con = c.connection();
    redis::cmd("PTTL")
        .arg(key)
        .query_async(&mut con)
        .await
        .unwrap()
}

/// RedissonLockTest.testAutoExpire (row 12): the holder's client shuts down; its watchdog stops
/// and the lock disappears within the 30 s lease.
#[tokio::test(start_paused = true)]
async fn a_watchdog_lock_expires_within_the_lease_after_its_client_shuts_down() {
    let s = server().await;
    let a = client(&s).await;
    let held = a.lock("auto-expire");
    held.lock().await.unwrap();
    // Renewed at 10 s and 20 s; the client goes away at 25 s.
    tokio::time::sleep(SECS(25)).await;
    assert!(held.is_locked().await.unwrap());
    a.shutdown().await;
    let down = Instant::now();
    let b = client(&s).await;
    let next = b.lock("auto-expire");
    next.lock().await.unwrap();
    // The last renewal (at 20 s) set 30 s: the lock is gone at 50 s, 25 s after the shutdown.
    assert_eq!(down.elapsed(), SECS(25));
    assert!(down.elapsed() <= SECS(30));
    next.unlock().await.unwrap();
}

/// RedissonLockTest.testExpire (row 9): a 2 s lease frees the lock for a waiter after 2 s; the
/// first holder's unlock then fails (IllegalMonitorStateException).
#[tokio::test(start_paused = true)]
async fn a_leased_lock_passes_to_a_waiter_when_the_lease_ends() {
    let s = server().await;
    let c = client(&s).await;
    let main = c.lock("expire");
    let start = Instant::now();
    main.lock_with_lease(SECS(2)).await.unwrap();
    let other = c.lock("expire");
    other.lock().await.unwrap();
    let waited = start.elapsed();
    assert!(waited >= SECS(2) && waited < MS(2020), "{waited:?}");
    let err = main.unlock().await.unwrap_err();
    assert!(matches!(err, LockError::NotOwner { .. }), "{err:?}");
    other.unlock().await.unwrap();
}

/// RedissonLockTest.testTryLockWait (row 6): `try_lock_for(3 s)` on a lock another client holds
/// (watchdog) gives up after exactly 3 s.
#[tokio::test(start_paused = true)]
async fn try_lock_for_gives_up_after_the_wait_on_a_held_lock() {
    let s = server().await;
    let holder = client(&s).await.lock("try-wait");
    holder.lock().await.unwrap();
    let waiter = client(&s).await.lock("try-wait");
    let start = Instant::now();
    assert!(!waiter.try_lock_for(SECS(3), None).await.unwrap());
    let waited = start.elapsed();
    assert!(waited >= SECS(3) && waited < MS(3010), "{waited:?}");
    holder.unlock().await.unwrap();
}

/// RedissonLockTest.testRemainTimeToLive (row 10): the TTL is the lease given, -2 after unlock,
/// and the watchdog lease after a plain `lock()`.
#[tokio::test(start_paused = true)]
async fn remaining_ttl_is_the_lease_then_gone_then_the_watchdog_lease() {
    let s = server().await;
    let c = client(&s).await;
    let lock = c.lock("ttl");
    lock.lock_with_lease(SECS(3600)).await.unwrap();
    assert_eq!(lock.remaining_ttl().await.unwrap(), Some(SECS(3600)));
    tokio::time::sleep(MS(10)).await;
    assert_eq!(lock.remaining_ttl().await.unwrap(), Some(MS(3_599_990)));
    lock.unlock().await.unwrap();
    assert_eq!(pttl(&c, "ttl").await, -2);
    assert_eq!(lock.remaining_ttl().await.unwrap(), None);
    lock.lock().await.unwrap();
    assert_eq!(lock.remaining_ttl().await.unwrap(), Some(SECS(30)));
    lock.unlock().await.unwrap();
}

/// RedissonLockTest.testRemainTimeToLive2 (row 5): three 10 s holds, 3 s later two unlocks:
/// each unlock that leaves holds re-PEXPIREs to the last lease, so the TTL is 10 s again.
#[tokio::test(start_paused = true)]
async fn unlock_with_holds_left_resets_the_ttl_to_the_last_lease() {
    let s = server().await;
    let c = client(&s).await;
    let lock = c.lock("ttl2");
    for _ in 0..3 {
        lock.lock_with_lease(SECS(10)).await.unwrap();
    }
    tokio::time::sleep(SECS(3)).await;
    assert_eq!(lock.remaining_ttl().await.unwrap(), Some(SECS(7)));
    lock.unlock().await.unwrap();
    lock.unlock().await.unwrap();
    assert_eq!(lock.remaining_ttl().await.unwrap(), Some(SECS(10)));
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    lock.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// The watchdog keeps a lock alive far past its lease (here ten leases), renewing every
/// third of it, while another client keeps failing to take it.
#[tokio::test(start_paused = true)]
async fn the_watchdog_keeps_a_lock_alive_past_many_leases() {
    let s = server().await;
    let c = client(&s).await;
    let lock = c.lock("renewed");
    lock.lock().await.unwrap();
    let other = client(&s).await.lock("renewed");
    for _ in 0..10 {
        tokio::time::sleep(SECS(30)).await;
        assert!(lock.is_held_by_me().await.unwrap());
        assert!(!other.try_lock().await.unwrap());
        let ttl = lock.remaining_ttl().await.unwrap().unwrap();
        assert!(ttl > SECS(19) && ttl <= SECS(30), "{ttl:?}");
    }
    assert!(c.metrics().renewals >= 30);
    assert!(!lock.lost_signal().unwrap().is_lost());
    lock.unlock().await.unwrap();
}

/// RedissonFairLockTest.testLeaseTimeout (row 27): eight waiters started 100 ms apart, each
/// `try_lock_for(10 s, lease 1 s)` and never unlocking: all acquire, one per lease, in start
/// order.
#[tokio::test(start_paused = true)]
async fn fair_lock_waiters_with_leases_acquire_in_start_order() {
    let s = server().await;
    let c = client(&s).await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..8u64 {
        let lock = c.fair_lock("fair-lease");
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            assert!(lock.try_lock_for(SECS(10), Some(SECS(1))).await.unwrap());
            order.lock().unwrap().push((i, start.elapsed()));
        }));
        tokio::time::sleep(MS(100)).await;
    }
    for t in tasks {
        t.await.unwrap();
    }
    let order = order.lock().unwrap().clone();
    let ids: Vec<u64> = order.iter().map(|(i, _)| *i).collect();
    assert_eq!(ids, (0..8).collect::<Vec<_>>());
    // Each waiter gets it when the previous lease runs out.
    for (k, (_, at)) in order.iter().enumerate() {
        let expected = SECS(k as u64);
        assert!(*at >= expected && *at < expected + MS(50), "{order:?}");
    }
}

/// RedissonFairLockTest.testAbandonedTimeoutDrift_Descrete (row 34), at the script level as
/// Redisson tests it: waiter timeout 100 ms, lease 500 ms; three waiters queue and never come
/// back. Their TTLs step by the waiter timeout, and once they are stale they are purged, so the
/// last one acquires after `thirdTTL + 100` ms.
#[tokio::test(start_paused = true)]
async fn abandoned_fair_waiters_are_purged_after_their_timeout() {
    const LEASE_MS: u64 = 500;
    const WAIT_MS: u64 = 100;
    let s = server().await;
    let c = client(&s).await;
    let base = Instant::now();
    let name = "abandoned";
    let try_acquire = |thread: u64| {
        let (c, now_ms) = (
            c.clone(),
            1_700_000_000_000u64 + base.elapsed().as_millis() as u64,
        );
        async move {
            let mut inv = FAIR_ACQUIRE.prepare_invoke();
            inv.key(name)
                .key(format!("redisson_lock_queue:{{{name}}}"))
                .key(format!("redisson_lock_timeout:{{{name}}}"))
                .arg(LEASE_MS)
                .arg(format!("{}:{thread}", c.id()))
                .arg(WAIT_MS)
                .arg(now_ms);
            let ttl: Option<i64> = inv.invoke_async(&mut c.connection()).await.unwrap();
            ttl
        }
    };
    assert_eq!(try_acquire(100).await, None);
    let first = try_acquire(101).await.unwrap();
    let second = try_acquire(102).await.unwrap();
    let third = try_acquire(103).await.unwrap();
    assert_eq!((first, second, third), (500, 600, 700));
    let diff = third - first;
    assert!(diff > 190 && diff < 210, "{diff}");
    tokio::time::sleep(MS(third as u64 + WAIT_MS)).await;
    assert_eq!(try_acquire(103).await, None, "stale waiters were purged");
    let queued: i64 = redis::cmd("LLEN")
        .arg(format!("redisson_lock_queue:{{{name}}}"))
        .query_async(&mut c.connection())
        .await
        .unwrap();
    assert_eq!(queued, 0);
}

/// RedissonReadWriteLockTest.testReadLockExpiration (row 55): reader 1 (10 s lease, unlocks at
/// 9.1 s) and reader 2 (3 s lease, unlocks at 3.1 s); a writer starting at 0.6 s gets the lock
/// when the last reader leaves, 8.5 s later.
#[tokio::test(start_paused = true)]
async fn a_writer_waits_for_the_last_reader() {
    let s = server().await;
    let c = client(&s).await;
    let start = Instant::now();
    let r1 = c.read_write_lock("rw-exp").read_lock();
    let t1 = tokio::spawn(async move {
        r1.lock_with_lease(SECS(10)).await.unwrap();
        tokio::time::sleep(MS(9100)).await;
        r1.unlock().await.unwrap();
    });
    tokio::time::sleep(MS(300)).await;
    let r2 = c.read_write_lock("rw-exp").read_lock();
    let t2 = tokio::spawn(async move {
        r2.lock_with_lease(SECS(3)).await.unwrap();
        tokio::time::sleep(MS(2800)).await;
        r2.unlock().await.unwrap();
    });
    tokio::time::sleep(MS(300)).await;
    let w = c.read_write_lock("rw-exp").write_lock();
    let asked = Instant::now();
    w.lock_with_lease(SECS(10)).await.unwrap();
    let waited = asked.elapsed();
    assert!(waited >= SECS(8) && waited <= SECS(10), "{waited:?}");
    assert!(start.elapsed() >= MS(9100));
    t1.await.unwrap();
    t2.await.unwrap();
    w.unlock().await.unwrap();
}

/// RedissonReadWriteLockTest.testReadWriteTTL (row 70): one owner holds the write and a read
/// lock (watchdog) for 25 s, then only the read lock for 25 s: the hash's TTL never drops to
/// 19 s.
#[tokio::test(start_paused = true)]
async fn a_watchdog_read_write_hold_keeps_its_ttl_above_two_thirds() {
    let s = server().await;
    let c = client(&s).await;
    let rw = c.read_write_lock_for("rwlock", Owner::new());
    let (w, r) = (rw.write_lock(), rw.read_lock());
    w.lock().await.unwrap();
    r.lock().await.unwrap();
    for _ in 0..25 {
        assert!(pttl(&c, "rwlock").await > 19_000);
        tokio::time::sleep(SECS(1)).await;
    }
    w.unlock().await.unwrap();
    for _ in 0..25 {
        assert!(pttl(&c, "rwlock").await > 19_000);
        tokio::time::sleep(SECS(1)).await;
    }
    r.unlock().await.unwrap();
    assert_eq!(pttl(&c, "rwlock").await, -2);
}

/// RedissonReadWriteLockTest.testAutoExpire (row 73) and RedissonFairLockTest.testAutoExpire
/// (row 40): a write lock and a fair lock held under the watchdog are free within the lease
/// plus a second of their client shutting down.
#[tokio::test(start_paused = true)]
async fn write_and_fair_locks_expire_after_their_client_shuts_down() {
    let s = server().await;
    let a = client(&s).await;
    // Keep the handles: dropping the last one stops its watchdog (documented on the lock types).
    let held_w = a.read_write_lock("rw-auto").write_lock();
    let held_f = a.fair_lock("fair-auto");
    held_w.lock().await.unwrap();
    held_f.lock().await.unwrap();
    tokio::time::sleep(SECS(12)).await;
    assert!(a.metrics().renewals >= 2);
    a.shutdown().await;
    let down = Instant::now();
    let b = client(&s).await;
    let w = b.read_write_lock("rw-auto").write_lock();
    let f = b.fair_lock("fair-auto");
    assert!(w.try_lock_for(SECS(31), None).await.unwrap());
    assert!(f.try_lock_for(SECS(31), None).await.unwrap());
    // Last renewal at 10 s: both expire at 40 s, 28 s after the shutdown.
    assert!(down.elapsed() <= SECS(31), "{:?}", down.elapsed());
    assert!(down.elapsed() >= SECS(27), "{:?}", down.elapsed());
    w.unlock().await.unwrap();
    f.unlock().await.unwrap();
}
