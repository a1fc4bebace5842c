//! `PermitExpirableSemaphore` (RedissonPermitExpirableSemaphoreTest's behaviours): permits
//! with ids, leases that return permits by themselves, waiting for a release or for the
//! nearest lease to end, and Redisson's key layout.

use crate::support;

use std::time::Duration;

use locksmith_lock::PermitExpirableSemaphore;
use support::{backends, eventually, name};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Redisson's score of a permit without a lease.
const NON_EXPIRABLE: &str = "922337203685477";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn permits_have_ids_in_redissons_layout_and_release_once() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("pes");
        let s = c.permit_expirable_semaphore(&n);
        assert!(s.try_set_permits(2).await.unwrap());
        assert!(!s.try_set_permits(5).await.unwrap());
        let id = s.try_acquire().await.unwrap().expect("a permit");
        assert_eq!(id.len(), 32);
        assert_eq!(s.available_permits().await.unwrap(), 1);
        assert_eq!(s.acquired_permits().await.unwrap(), 1);
        assert_eq!(s.permits().await.unwrap(), 2);
        assert_eq!(s.lease_time(&id).await.unwrap(), None);

        // The acquired permit: its 16 raw bytes in `{name}:timeout`, scored "no lease".
        assert_eq!(s.timeout_name(), format!("{{{n}}}:timeout"));
        let mut raw = b.raw().await;
        let members: Vec<(Vec<u8>, String)> = redis::cmd("ZRANGE")
            .arg(s.timeout_name())
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(members.len(), 1, "{}", b.name);
        assert_eq!(hex(&members[0].0), id);
        assert_eq!(members[0].1, NON_EXPIRABLE);
        let available: String = redis::cmd("GET")
            .arg(&n)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(available, "1");

        s.release(&id).await.unwrap();
        assert_eq!(s.available_permits().await.unwrap(), 2);
        let again = s.release(&id).await.unwrap_err();
        assert!(
            again.to_string().contains("already been released"),
            "{again}"
        );
        assert!(!s.try_release(&id).await.unwrap());
        assert!(s.lease_time(&id).await.is_err());
        assert!(s.try_release("not-an-id").await.is_err());
        assert!(s.delete().await.unwrap());
        assert_eq!(s.permits().await.unwrap(), 0);
    }
}

#[tokio::test]
async fn a_leased_permit_returns_to_the_pool_by_itself() {
    for b in backends().await {
        let c = b.client().await;
        let s = c.permit_expirable_semaphore(&name("pes-lease"));
        assert!(s.try_set_permits(1).await.unwrap());
        let id = s.acquire(Some(MS(300))).await.unwrap();
        let left = s.lease_time(&id).await.unwrap().expect("a lease");
        assert!(left <= MS(300));
        assert!(s.try_acquire().await.unwrap().is_none());
        // A waiter gets it when the lease ends: no release publishes, it wakes at the nearest
        // lease end the acquire script reported.
        let waiter = s.clone();
        let got = tokio::spawn(async move { waiter.try_acquire_for(MS(10_000), None).await });
        let other = got.await.unwrap().unwrap().expect("the expired permit");
        assert_ne!(other, id);
        // The expired holder's release fails, and does not add a permit.
        assert!(!s.try_release(&id).await.unwrap(), "{}", b.name);
        assert_eq!(s.available_permits().await.unwrap(), 0);
        s.release(&other).await.unwrap();
        assert_eq!(s.available_permits().await.unwrap(), 1);

        // update_lease_time moves a held permit's lease, or takes it away.
        let id = s.acquire(Some(MS(200))).await.unwrap();
        assert!(s.update_lease_time(&id, None).await.unwrap());
        tokio::time::sleep(MS(400)).await;
        assert_eq!(s.lease_time(&id).await.unwrap(), None);
        assert_eq!(s.available_permits().await.unwrap(), 0);
        assert!(s
            .update_lease_time(&id, Some(Duration::from_secs(60)))
            .await
            .unwrap());
        assert!(s.lease_time(&id).await.unwrap().unwrap() > Duration::from_secs(50));
        s.release(&id).await.unwrap();
        assert!(!s.update_lease_time(&id, None).await.unwrap());
    }
}

#[tokio::test]
async fn a_waiter_gets_a_permit_when_one_is_released() {
    for b in backends().await {
        let c = b.client().await;
        let s = c.permit_expirable_semaphore(&name("pes-wait"));
        assert!(s.try_set_permits(1).await.unwrap());
        let held = s.acquire(None).await.unwrap();
        let waiter: PermitExpirableSemaphore =
            b.client().await.permit_expirable_semaphore(s.name());
        let task = tokio::spawn(async move { waiter.acquire(None).await });
        // Give the waiter time to subscribe, then release: the message wakes it.
        tokio::time::sleep(MS(200)).await;
        assert!(!task.is_finished());
        s.release(&held).await.unwrap();
        let got = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("woken by the release")
            .unwrap()
            .unwrap();
        assert_eq!(s.acquired_permits().await.unwrap(), 1);
        s.release(&got).await.unwrap();
        // A bounded wait that runs out answers None.
        let mut all = s.try_acquire_many(1, None).await.unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(s.try_acquire_for(MS(100), None).await.unwrap(), None);
        s.release(&all.remove(0)).await.unwrap();
    }
}

#[tokio::test]
async fn many_permits_are_taken_and_released_together() {
    for b in backends().await {
        let c = b.client().await;
        let s = c.permit_expirable_semaphore(&name("pes-many"));
        assert!(s.try_set_permits(2).await.unwrap());
        assert!(s.try_acquire_many(3, None).await.unwrap().is_empty());
        s.add_permits(1).await.unwrap();
        let ids = s
            .try_acquire_many(3, Some(Duration::from_secs(60)))
            .await
            .unwrap();
        assert_eq!(ids.len(), 3);
        assert_eq!(s.available_permits().await.unwrap(), 0);
        // All or nothing: an unknown id among them releases none.
        let mut with_unknown = ids[..2].to_vec();
        with_unknown.push("00000000000000000000000000000000".into());
        assert_eq!(s.try_release_many(&with_unknown).await.unwrap(), 0);
        assert_eq!(s.try_release_many(&ids[..2]).await.unwrap(), 2);
        assert_eq!(s.available_permits().await.unwrap(), 2);
        // set_permits counts acquired permits in the total.
        s.set_permits(5).await.unwrap();
        assert_eq!(s.permits().await.unwrap(), 5);
        assert_eq!(s.available_permits().await.unwrap(), 4);
        s.release_many(&ids[2..]).await.unwrap();
        assert_eq!(s.available_permits().await.unwrap(), 5);
        assert!(s.release_many(&ids[2..]).await.is_err());
    }
}

// Cancelling a waiting acquire never keeps a permit.
#[tokio::test]
async fn a_cancelled_acquire_keeps_no_permit() {
    for b in backends().await {
        let c = b.client().await;
        let s = c.permit_expirable_semaphore(&name("pes-cancel"));
        assert!(s.try_set_permits(1).await.unwrap());
        let held = s.acquire(None).await.unwrap();
        let waited = tokio::time::timeout(MS(200), s.acquire(None)).await;
        assert!(waited.is_err());
        s.release(&held).await.unwrap();
        assert!(
            eventually(Duration::from_secs(5), || async {
                s.available_permits().await.unwrap() == 1
            })
            .await,
            "{}",
            b.name
        );
    }
}

// Issue 36, item 15: permits of a PermitExpirableSemaphore held as an ExpirablePermit are
// released when it is dropped, also by a task that panics, as a Semaphore's SemaphorePermit.
#[tokio::test]
async fn an_expirable_permit_releases_its_permits_when_dropped() {
    for b in backends().await {
        let c = b.client().await;
        let sem = c.permit_expirable_semaphore(&name("raii"));
        assert!(sem.try_set_permits(3).await.unwrap());
        let permit = sem.acquire_permit(2, None).await.unwrap();
        assert_eq!(permit.ids().len(), 2);
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
            "{}: the permits were not released",
            b.name
        );
        let p = sem
            .try_acquire_permit_for(3, Duration::from_millis(100), None)
            .await
            .unwrap()
            .expect("all three are free");
        assert_eq!(sem.available_permits().await.unwrap(), 0);
        assert!(sem
            .try_acquire_permit_for(1, Duration::from_millis(100), None)
            .await
            .unwrap()
            .is_none());
        p.release().await.unwrap();
        assert_eq!(sem.available_permits().await.unwrap(), 3);
        let kept = sem.acquire_permit(1, None).await.unwrap().forget();
        assert_eq!(kept.len(), 1);
        assert_eq!(sem.available_permits().await.unwrap(), 2);
        sem.release(&kept[0]).await.unwrap();
    }
}
