//! Guards and scoped critical sections (issue 18): a guard releases on drop (also on `?`, on a
//! panic, and on a thread without a runtime), `unlock()` reports the outcome, `forget()` hands
//! the hold over; `with_lock` cancels its section when the lock is lost, under the harness's
//! failover and pause faults too.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use locksmith_lock::{Client, ClientOptions, DistributedLock, LockError, LostReason, ReplicaSync};
use support::{backends, eventually, name, short_watchdog};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Sets its flag when dropped: tells whether a section's future was dropped (cancelled).
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_dropped_guard_releases_the_lock_for_every_kind() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(900)).await;
        let rw = c.read_write_lock(&name("guard-rw"));
        let kinds: Vec<Box<dyn DistributedLock>> = vec![
            c.lock(&name("guard-plain")).boxed(),
            c.fair_lock(&name("guard-fair")).boxed(),
            c.spin_lock(&name("guard-spin")).boxed(),
            c.fenced_lock(&name("guard-fenced")).boxed(),
            c.non_reentrant_lock(&name("guard-nr")).boxed(),
            rw.read_lock().boxed(),
            c.read_write_lock(&name("guard-rw2")).write_lock().boxed(),
        ];
        for lock in &kinds {
            {
                let guard = lock.acquire().await.unwrap();
                assert_eq!(guard.name(), lock.name());
                assert!(lock.is_held_by_me().await.unwrap(), "{}", b.name);
                assert!(lock.is_renewing());
            }
            assert!(
                eventually(Duration::from_secs(5), || async {
                    !lock.is_locked().await.unwrap() && !lock.is_renewing()
                })
                .await,
                "{}: {} still held after its guard was dropped",
                b.name,
                lock.name()
            );
            // Another owner gets it at once.
            let other = lock.clone_boxed();
            assert!(other.try_lock().await.unwrap(), "{}", b.name);
            other.unlock().await.unwrap();
        }
    }
}

async fn fails_half_way(lock: &locksmith_lock::Lock) -> Result<(), LockError> {
    let _guard = lock.acquire().await?;
    Err(LockError::Timeout {
        name: lock.name().to_owned(),
        waited: Duration::ZERO,
    })
}

#[tokio::test]
async fn a_guard_releases_on_early_return_and_on_panic() {
    for b in backends().await {
        let c = b.client().await;
        let lock = c.lock(&name("guard-early"));
        assert!(fails_half_way(&lock).await.is_err());
        assert!(
            eventually(Duration::from_secs(5), || async {
                !lock.is_locked().await.unwrap()
            })
            .await,
            "{}: `?` left the lock held",
            b.name
        );
        let moved = lock.clone();
        let panicked = tokio::spawn(async move {
            let _guard = moved.acquire().await.unwrap();
            panic!("the critical section panics");
        })
        .await;
        assert!(panicked.unwrap_err().is_panic());
        assert!(
            eventually(Duration::from_secs(5), || async {
                !lock.is_locked().await.unwrap()
            })
            .await,
            "{}: the panic left the lock held",
            b.name
        );
    }
}

// A guard dropped on a thread with no runtime spawns its release on the client's runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_dropped_on_a_plain_thread_is_released_on_the_clients_runtime() {
    for b in backends().await {
        let c = b.client().await;
        let lock = c.lock(&name("guard-thread"));
        let guard = lock.acquire().await.unwrap();
        std::thread::spawn(move || drop(guard)).join().unwrap();
        assert!(
            eventually(Duration::from_secs(5), || async {
                !lock.is_locked().await.unwrap() && !lock.is_renewing()
            })
            .await,
            "{}",
            b.name
        );
    }
}

#[tokio::test]
async fn unlock_reports_the_outcome_and_forget_hands_the_hold_over() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(900)).await;
        let lock = c.lock(&name("guard-unlock"));
        let guard = lock.acquire_with_lease(MS(200)).await.unwrap();
        let mut signal = guard.lost_signal().unwrap();
        assert_eq!(signal.lost().await, Some(LostReason::LeaseExpired));
        assert!(guard.is_lost());
        tokio::time::sleep(MS(50)).await;
        let err = guard.unlock().await.unwrap_err();
        assert!(err.is_not_owner(), "{}: {err:?}", b.name);

        // forget(): the hold stays with the handle's owner, renewed, until the handle unlocks.
        let guard = lock.acquire().await.unwrap();
        guard.forget();
        tokio::time::sleep(MS(1500)).await;
        assert!(lock.is_held_by_me().await.unwrap(), "{}", b.name);
        assert!(lock.is_renewing());
        lock.unlock().await.unwrap();
        assert!(!lock.is_locked().await.unwrap());

        // A guard is one hold of its owner: re-entry through the handle nests inside it.
        let guard = lock.acquire().await.unwrap();
        lock.lock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), 2);
        guard.unlock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), 1);
        lock.unlock().await.unwrap();
        assert!(!lock.is_locked().await.unwrap());
    }
}

#[tokio::test]
async fn with_lock_runs_the_section_under_the_lock_and_releases() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("section");
        let lock = c.lock(&n);
        let other = c.lock(&n);
        let got = lock
            .with_lock(|s| {
                let other = &other;
                async move {
                    assert_eq!(s.token(), None);
                    assert!(!s.is_lost());
                    // Held by the section's owner, not by another.
                    !other.try_lock().await.unwrap()
                }
            })
            .await
            .unwrap();
        assert!(got, "{}: another owner entered the section", b.name);
        assert!(!lock.is_locked().await.unwrap(), "{}", b.name);

        // The fenced lock hands its token to the section; tokens grow.
        let fenced = c.fenced_lock(&name("section-fenced"));
        let first = fenced.with_token(|t| async move { t }).await.unwrap();
        let second = fenced
            .with_lock(|s| async move { s.token().unwrap() })
            .await
            .unwrap();
        assert!(second > first, "{}", b.name);
        assert_eq!(fenced.token().await.unwrap(), Some(second));
    }
}

// Another client deletes the lock: the holder's next renewal finds it gone, and the section
// is dropped at that point with a Lost error instead of running on.
#[tokio::test]
async fn with_lock_cancels_the_section_when_the_lock_is_lost() {
    for b in backends().await {
        let c = b.client_with(short_watchdog(900)).await;
        let intruder = b.client().await;
        let n = name("section-lost");
        let lock = c.lock(&n);
        let dropped = Arc::new(AtomicBool::new(false));
        let steps = Arc::new(AtomicU32::new(0));
        let (flag, count) = (dropped.clone(), steps.clone());
        let section = tokio::spawn(async move {
            lock.with_lock(|_| async move {
                let _flag = SetOnDrop(flag);
                for _ in 0..3000 {
                    count.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(MS(10)).await;
                }
                "finished"
            })
            .await
        });
        assert!(
            eventually(Duration::from_secs(5), || async {
                steps.load(Ordering::SeqCst) > 0
            })
            .await
        );
        assert!(intruder.lock(&n).force_unlock().await.unwrap());
        let res = tokio::time::timeout(Duration::from_secs(10), section)
            .await
            .expect("the section was cancelled")
            .unwrap();
        match res {
            Err(LockError::Lost { reason, .. }) => assert_eq!(reason, LostReason::NotHeld),
            other => panic!("{}: {other:?}", b.name),
        }
        assert!(dropped.load(Ordering::SeqCst));
        let at_cancel = steps.load(Ordering::SeqCst);
        assert!(at_cancel < 3000, "{}: the section ran to its end", b.name);
        tokio::time::sleep(MS(100)).await;
        assert_eq!(steps.load(Ordering::SeqCst), at_cancel, "it kept running");
    }
}

// The scoped section and the guard under the harness's faults: a failover that loses the
// lock (the replica never saw it) cancels the section at the holder's next renewal.
#[tokio::test(start_paused = true)]
async fn a_failover_that_loses_the_lock_cancels_the_section() {
    use locksmith_harness::Topology;
    let t = Topology::builder()
        .replicas(1)
        .replication_delay(MS(1000))
        .seed(18)
        .build()
        .await
        .unwrap();
    let options = ClientOptions::default()
        .replica_sync(ReplicaSync::Off)
        .watchdog_timeout(Duration::from_secs(3));
    let a = Client::open_with(&t.front_url(), options.clone())
        .await
        .unwrap();
    let lock = a.lock("orders");
    let started = Arc::new(tokio::sync::Notify::new());
    let dropped = Arc::new(AtomicBool::new(false));
    let (go, flag) = (started.clone(), dropped.clone());
    let section = tokio::spawn(async move {
        let res = lock
            .with_lock(|_| async move {
                let _flag = SetOnDrop(flag);
                go.notify_one();
                for _ in 0..10_000 {
                    tokio::time::sleep(MS(100)).await;
                }
            })
            .await;
        (res, lock)
    });
    started.notified().await;
    assert!(t.offset(t.replicas()[0]) < t.offset(t.master()));
    t.fail_master().await.unwrap();
    let b = Client::open_with(&t.front_url(), options).await.unwrap();
    let other = b.lock("orders");
    assert!(
        other.try_lock().await.unwrap(),
        "the new master never saw A's lock"
    );
    let (res, lock) = tokio::time::timeout(Duration::from_secs(30), section)
        .await
        .expect("the section was cancelled")
        .unwrap();
    match res {
        Err(LockError::Lost { reason, .. }) => assert_eq!(reason, LostReason::NotHeld),
        other => panic!("{other:?}"),
    }
    assert!(dropped.load(Ordering::SeqCst));
    assert!(!lock.is_renewing());
    // B's hold is untouched by A's release attempt.
    assert!(other.is_held_by_me().await.unwrap());
    other.unlock().await.unwrap();
    t.shutdown().await;
}

// A master that stops answering (LOCKSMITH.PAUSE): renewals hang, the lost signal fires when
// the key may expire, and the section is cancelled then.
#[tokio::test(start_paused = true)]
async fn a_paused_master_cancels_the_section() {
    use locksmith_harness::Topology;
    let t = Topology::builder().seed(18).build().await.unwrap();
    let lease = Duration::from_secs(3);
    let a = Client::open_with(
        &t.front_url(),
        ClientOptions::default().watchdog_timeout(lease),
    )
    .await
    .unwrap();
    let lock = a.lock("ledger");
    let guard = lock.acquire().await.unwrap();
    let pause = t.pause(t.master(), Duration::from_secs(600)).await.unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let res = tokio::time::timeout(
        Duration::from_secs(60),
        guard.run(async move {
            let _flag = SetOnDrop(flag);
            for _ in 0..10_000 {
                tokio::time::sleep(MS(100)).await;
            }
        }),
    )
    .await
    .expect("the section was cancelled");
    match res {
        Err(LockError::Lost { reason, .. }) => assert_eq!(reason, LostReason::RenewalFailed),
        other => panic!("{other:?}"),
    }
    assert!(dropped.load(Ordering::SeqCst));
    assert!(guard.is_lost());
    drop(guard);
    assert!(!lock.is_renewing());
    pause.undo();
    t.shutdown().await;
}

// A guard dropped while its master is paused: the spawned release waits for the node and
// deletes the lock as soon as it answers again, with most of the 30 s lease left, so another
// client gets the lock then instead of after the lease.
#[tokio::test(start_paused = true)]
async fn a_guard_dropped_during_a_pause_releases_when_the_node_resumes() {
    use locksmith_harness::Topology;
    let t = Topology::builder().seed(18).build().await.unwrap();
    let a = Client::open(&t.front_url()).await.unwrap();
    assert_eq!(a.options().watchdog_timeout, Duration::from_secs(30));
    let lock = a.lock("ledger");
    let guard = lock.acquire().await.unwrap();
    let pause = t.pause(t.master(), Duration::from_secs(600)).await.unwrap();
    drop(guard);
    tokio::time::sleep(Duration::from_secs(2)).await;
    pause.undo();
    let b = Client::open(&t.front_url()).await.unwrap();
    let other = b.lock("ledger");
    // Bounded well inside the 30 s lease: only the release can free it this early.
    let got = other
        .try_lock_for(Duration::from_secs(5), None)
        .await
        .unwrap();
    assert!(
        got,
        "the dropped guard's release did not reach the resumed node"
    );
    // The released key can reach `b` before the releasing task has read its own reply and
    // taken the hold off the watchdog: wait for that, bounded.
    for _ in 0..500 {
        if !lock.is_renewing() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!lock.is_renewing());
    other.unlock().await.unwrap();
    t.shutdown().await;
}

// Issue 36, item 7: a guard dropped inside a runtime that ends right after (a `block_on`
// helper, a per-worker runtime) still releases: its release runs on the client's runtime, not
// on the one that died with the task (the watchdog would have renewed the lock forever).
#[tokio::test]
async fn a_guard_dropped_inside_another_runtime_releases_the_lock() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("other-runtime");
        let guard = c.lock(&n).acquire().await.unwrap();
        std::thread::spawn(move || {
            let helper = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            helper.block_on(async move { drop(guard) });
        })
        .join()
        .unwrap();
        let check = c.lock(&n);
        assert!(
            eventually(Duration::from_secs(5), || async {
                !check.is_locked().await.unwrap()
            })
            .await,
            "{}: the lock stayed held",
            b.name
        );
    }
}
