//! Leases and waits at their extreme values (issue 36, item 4): a lease too long for the
//! scripts is refused before anything is written, the longest supported one works on every
//! kind, and a wait of `Duration::MAX` means "as long as needed" instead of a panic.

use crate::support;

use std::time::Duration;

use locksmith_lock::{LockError, MultiLock, Owner, RedLock, MAX_LEASE};
use support::{backends, name};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn is_invalid(r: &locksmith_lock::Result<impl std::fmt::Debug>) -> bool {
    matches!(r, Err(LockError::Invalid { .. }))
}

#[tokio::test]
async fn a_lease_past_the_longest_is_refused_before_anything_is_written() {
    let too_long = MAX_LEASE + MS(1);
    for b in backends().await {
        let c = b.client().await;
        let mut raw = b.raw().await;
        let n = name("lease-max");
        let l = c.lock(&n);
        let r = l.lock_with_lease(Duration::MAX).await;
        assert!(is_invalid(&r), "{}: {r:?}", b.name);
        assert!(is_invalid(&l.lock_with_lease(too_long).await));
        assert!(is_invalid(&l.try_lock_for(MS(10), Some(too_long)).await));
        assert!(is_invalid(
            &c.fair_lock(&n).lock_with_lease(Duration::MAX).await
        ));
        assert!(is_invalid(
            &c.fenced_lock(&n).lock_with_lease(Duration::MAX).await
        ));
        assert!(is_invalid(
            &c.spin_lock(&n).lock_with_lease(Duration::MAX).await
        ));
        let rw = c.read_write_lock(&n);
        assert!(is_invalid(
            &rw.read_lock().lock_with_lease(Duration::MAX).await
        ));
        assert!(is_invalid(
            &rw.write_lock().lock_with_lease(Duration::MAX).await
        ));
        assert!(is_invalid(&c.simple_lock(&n).try_lock(Duration::MAX).await));
        assert!(is_invalid(
            &c.semaphore(&n)
                .try_set_permits_with_ttl(1, Duration::MAX)
                .await
        ));
        let pes = c.permit_expirable_semaphore(&name("pes-max"));
        pes.try_set_permits(1).await.unwrap();
        assert!(is_invalid(
            &pes.try_acquire_many(1, Some(Duration::MAX)).await
        ));
        assert_eq!(pes.available_permits().await.unwrap(), 1);
        let multi = MultiLock::new(vec![c.lock(&n)]);
        assert!(is_invalid(
            &multi.try_lock_for(None, Some(Duration::MAX)).await
        ));
        assert!(is_invalid(&multi.lock(Some(Duration::MAX)).await));
        let red = RedLock::new(vec![c.lock(&n)]);
        assert!(is_invalid(
            &red.try_lock_for(Some(MS(10)), Some(Duration::MAX)).await
        ));
        let exists: i64 = redis::cmd("EXISTS")
            .arg(&n)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(exists, 0, "{}: a refused lease left the key behind", b.name);
    }
}

#[tokio::test]
async fn the_longest_supported_lease_works_on_every_kind() {
    for b in backends().await {
        let c = b.client().await;
        let year = Duration::from_secs(365 * 24 * 3600);
        let n = name("lease-long");
        let l = c.lock(&n);
        l.lock_with_lease(MAX_LEASE).await.unwrap();
        l.lock_with_lease(MAX_LEASE).await.unwrap();
        assert!(l.remaining_ttl().await.unwrap().unwrap() > year);
        l.unlock().await.unwrap();
        l.unlock().await.unwrap();
        // The write lock's re-entry adds the lease to the TTL left, the read lock takes the
        // larger of the two: both stay integers PEXPIRE accepts.
        let rw = c.read_write_lock(&name("rw-long"));
        let w = rw.write_lock();
        w.lock_with_lease(MAX_LEASE).await.unwrap();
        w.lock_with_lease(MAX_LEASE).await.unwrap();
        assert!(w.remaining_ttl().await.unwrap().unwrap() > year);
        let r = rw.read_lock();
        r.lock_with_lease(MAX_LEASE).await.unwrap();
        r.lock_with_lease(MAX_LEASE).await.unwrap();
        r.unlock().await.unwrap();
        r.unlock().await.unwrap();
        w.unlock().await.unwrap();
        w.unlock().await.unwrap();
        assert!(!w.is_locked().await.unwrap());
        let f = c.fair_lock(&name("fair-long"));
        f.lock_with_lease(MAX_LEASE).await.unwrap();
        f.unlock().await.unwrap();
        let pes = c.permit_expirable_semaphore(&name("pes-long"));
        pes.try_set_permits(1).await.unwrap();
        let id = pes
            .try_acquire_many(1, Some(MAX_LEASE))
            .await
            .unwrap()
            .pop()
            .unwrap();
        assert!(pes.lease_time(&id).await.unwrap().unwrap() > year);
        pes.release(&id).await.unwrap();
        let s = c.simple_lock(&name("simple-long"));
        assert!(s.try_lock(MAX_LEASE).await.unwrap());
        assert!(s.unlock().await.unwrap());
    }
}

#[tokio::test]
async fn a_wait_of_duration_max_waits_as_long_as_needed_without_a_panic() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("wait-max");
        let l = c.lock(&n);
        assert!(l.try_lock_for(Duration::MAX, None).await.unwrap());
        // Held: the other owner keeps waiting (it would panic computing its deadline).
        let other = c.lock_for(&n, Owner::new());
        let waiting = tokio::time::timeout(MS(300), other.try_lock_for(Duration::MAX, None)).await;
        assert!(waiting.is_err(), "{waiting:?}");
        l.unlock().await.unwrap();
        assert!(other.try_lock_for(Duration::MAX, None).await.unwrap());
        other.unlock().await.unwrap();
        let spin = c.spin_lock(&name("spin-max"));
        assert!(spin.try_lock_for(Duration::MAX, None).await.unwrap());
        spin.unlock().await.unwrap();
        let simple = c.simple_lock(&name("simple-max"));
        assert!(simple.try_lock_for(Duration::MAX, MS(5_000)).await.unwrap());
        assert!(simple.unlock().await.unwrap());
        let sem = c.semaphore(&name("sem-max"));
        sem.try_set_permits(1).await.unwrap();
        assert!(sem.try_acquire_for(Duration::MAX).await.unwrap());
        sem.release().await.unwrap();
        let pes = c.permit_expirable_semaphore(&name("pes-max"));
        pes.try_set_permits(1).await.unwrap();
        let id = pes
            .try_acquire_for(Duration::MAX, None)
            .await
            .unwrap()
            .unwrap();
        pes.release(&id).await.unwrap();
        let latch = c.count_down_latch(&name("latch-max"));
        assert!(latch.wait_for(Duration::MAX).await.unwrap());
        // MultiLock and RedLock take their locks first for twice the wait: no overflow.
        let multi = MultiLock::new(vec![c.lock(&name("multi-max"))]);
        let out = multi
            .try_lock_for(Some(Duration::MAX), Some(MS(5_000)))
            .await
            .unwrap();
        assert!(out.acquired);
        multi.unlock().await.unwrap();
        let red = RedLock::new(vec![c.lock(&name("red-max"))]);
        let out = red
            .try_lock_for(Some(Duration::MAX), Some(MS(5_000)))
            .await
            .unwrap();
        assert!(out.acquired);
        assert!(red.unlock().await.into_iter().all(|r| r.is_ok()));
    }
}
