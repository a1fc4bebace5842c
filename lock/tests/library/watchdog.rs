//! Batched watchdog renewal (issue 18, Redisson's `lockWatchdogBatchSize`): many held locks
//! are renewed in one script call per batch, not one per lock. The round trips are counted on
//! the server (INFO commandstats: calls of EVAL and EVALSHA), never timed.

use crate::support;

use std::time::Duration;

use locksmith_lock::{Lock, Owner, ReadLock};
use support::{backends, eventually, name, short_watchdog, Backend};

/// Script calls the server has executed so far (EVAL + EVALSHA, failed NOSCRIPT ones included).
async fn script_calls(b: &Backend) -> u64 {
    let mut raw = b.raw().await;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut raw)
        .await
        .unwrap();
    info.lines()
        .filter(|l| l.starts_with("cmdstat_eval:") || l.starts_with("cmdstat_evalsha:"))
        .filter_map(|l| {
            let calls = l.split(':').nth(1)?.split(',').next()?;
            calls.strip_prefix("calls=")?.parse::<u64>().ok()
        })
        .sum()
}

#[tokio::test]
async fn a_thousand_held_locks_renew_in_a_bounded_number_of_round_trips() {
    const LOCKS: usize = 1000;
    const READS: usize = 50;
    for b in backends().await {
        // Lease 1.5 s: a renewal round every 500 ms.
        let c = b.client_with(short_watchdog(1500)).await;
        assert_eq!(c.options().watchdog_batch_size, 100);
        let owner = Owner::new();
        let prefix = name("batch");
        let locks: Vec<Lock> = (0..LOCKS)
            .map(|i| c.lock_for(&format!("{prefix}-{i}"), owner))
            .collect();
        let reads: Vec<ReadLock> = (0..READS)
            .map(|i| {
                c.read_write_lock_for(&format!("{prefix}-r{i}"), owner)
                    .read_lock()
            })
            .collect();
        for chunk in locks.chunks(100) {
            for r in futures::future::join_all(chunk.iter().map(|l| l.lock())).await {
                r.unwrap();
            }
        }
        for r in futures::future::join_all(reads.iter().map(|l| l.lock())).await {
            r.unwrap();
        }
        let held = (LOCKS + READS) as u64;
        let renewals_before = c.metrics().renewals;
        let calls_before = script_calls(&b).await;
        // Two whole renewal rounds of every lock.
        assert!(
            eventually(Duration::from_secs(30), || async {
                c.metrics().renewals >= renewals_before + 2 * held
            })
            .await,
            "{}: the locks were not renewed twice: {:?}",
            b.name,
            c.metrics()
        );
        let calls = script_calls(&b).await - calls_before;
        eprintln!("{}: {calls} script calls in the window", b.name);
        // A round is ceil(1000/100) + ceil(50/100) = 11 calls; the window overlaps at most four
        // rounds (two partial), plus a NOSCRIPT retry per script. One call per lock would be
        // more than 2 100.
        assert!(
            calls <= 4 * 11 + 2,
            "{}: {calls} script calls for two renewal rounds of {held} locks",
            b.name
        );
        assert_eq!(c.metrics().renewal_failures, 0);
        assert_eq!(c.metrics().lost, 0);
        // Every lock is still held well past its 1.5 s lease.
        for l in locks.iter().step_by(97).chain([&locks[LOCKS - 1]]) {
            assert!(l.is_held_by_me().await.unwrap(), "{}", b.name);
            assert!(l.remaining_ttl().await.unwrap().is_some());
        }
        for r in &reads {
            assert!(r.is_held_by_me().await.unwrap(), "{}", b.name);
        }
        for r in futures::future::join_all(locks.iter().map(|l| l.unlock())).await {
            r.unwrap();
        }
        for r in futures::future::join_all(reads.iter().map(|l| l.unlock())).await {
            r.unwrap();
        }
    }
}

// A smaller batch size splits a round into more calls, and a lock that another client deletes
// is reported lost by the batch that renews the others.
#[tokio::test]
async fn the_batch_size_is_honoured_and_a_missing_lock_in_a_batch_is_reported_lost() {
    for b in backends().await {
        let c = b
            .client_with(short_watchdog(900).watchdog_batch_size(4))
            .await;
        let intruder = b.client().await;
        let prefix = name("small-batch");
        let locks: Vec<Lock> = (0..10).map(|i| c.lock(&format!("{prefix}-{i}"))).collect();
        for l in &locks {
            l.lock().await.unwrap();
        }
        let mut signal = locks[3].lost_signal().unwrap();
        assert!(intruder
            .lock(&format!("{prefix}-3"))
            .force_unlock()
            .await
            .unwrap());
        let reason = tokio::time::timeout(Duration::from_secs(10), signal.lost())
            .await
            .unwrap();
        assert_eq!(reason, Some(locksmith_lock::LostReason::NotHeld));
        let before = script_calls(&b).await;
        let renewals = c.metrics().renewals;
        assert!(
            eventually(Duration::from_secs(10), || async {
                c.metrics().renewals >= renewals + 2 * 9
            })
            .await
        );
        let calls = script_calls(&b).await - before;
        // ceil(9/4) = 3 calls a round, at most four rounds in the window.
        assert!(calls <= 4 * 3, "{}: {calls}", b.name);
        for (i, l) in locks.iter().enumerate() {
            if i == 3 {
                assert!(!l.is_renewing());
                assert!(l.unlock().await.unwrap_err().is_not_owner());
            } else {
                assert!(l.is_held_by_me().await.unwrap(), "{}: lock {i}", b.name);
                l.unlock().await.unwrap();
            }
        }
    }
}

// Issue 36, item 5: `client.lock("x").lock().await?` (the port of Redisson's
// `redisson.getLock("x").lock()`) drops its handle at once; the hold is renewed all the same,
// until a handle of the same owner unlocks it.
#[tokio::test]
async fn a_hold_taken_through_a_dropped_handle_is_renewed_until_unlocked() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(600)).await;
        let n = name("temp-handle");
        let me = Owner::new();
        c.lock_for(&n, me).lock().await.unwrap();
        // Three leases: without renewal the key would have expired twice over.
        tokio::time::sleep(Duration::from_millis(1800)).await;
        let again = c.lock_for(&n, me);
        assert!(again.is_held_by_me().await.unwrap(), "{}", b.name);
        assert!(again.is_renewing());
        again.unlock().await.unwrap();
        assert!(!again.is_locked().await.unwrap());
        assert!(!again.is_renewing());
    }
}
