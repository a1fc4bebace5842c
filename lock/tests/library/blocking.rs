//! The blocking facade (feature `blocking`, enabled for the tests): plain `#[test]`s without a
//! runtime of their own. Our in-process server runs on a runtime of its own thread here.

use crate::support;

use std::time::Duration;

use locksmith_lock::blocking::Client;
use locksmith_lock::ClientOptions;

/// The backends, each with the runtime that serves it (ours needs one).
fn sync_backends() -> Vec<(support::Backend, Option<tokio::runtime::Runtime>)> {
    let mut v = Vec::new();
    if let Some(b) = support::real_redis(&[]) {
        v.push((b, None));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ours = rt.block_on(support::in_process());
    v.push((ours, Some(rt)));
    v
}

#[test]
fn blocking_locks_exclude_and_their_guards_release_before_the_drop_returns() {
    for (b, _rt) in sync_backends() {
        let a = Client::open(&b.url).unwrap();
        let other = Client::open(&b.url).unwrap();
        let n = support::name("blocking");
        let lock = a.lock(&n);
        let theirs = other.lock(&n);
        {
            let guard = lock.acquire().unwrap();
            assert!(!guard.is_lost());
            assert!(lock.is_held_by_me().unwrap());
            assert!(!theirs.try_lock().unwrap(), "{}", b.name);
        }
        // Released synchronously by the drop: free on the very next line.
        assert!(!lock.is_locked().unwrap(), "{}", b.name);
        assert!(theirs.try_lock().unwrap());
        theirs.unlock().unwrap();

        // Redisson-style calls, reentrancy, and the fenced token on the guard.
        lock.lock().unwrap();
        lock.lock().unwrap();
        assert_eq!(lock.hold_count().unwrap(), 2);
        lock.unlock().unwrap();
        lock.unlock().unwrap();
        let fenced = a.fenced_lock(&support::name("blocking-fenced"));
        let t1 = fenced.acquire().unwrap();
        let first = t1.token().unwrap();
        t1.unlock().unwrap();
        let t2 = fenced
            .try_acquire_for(Duration::from_secs(1), None)
            .unwrap()
            .unwrap();
        assert!(t2.token().unwrap() > first);
        drop(t2);
        let (read, write) = a.read_write_lock(&support::name("blocking-rw"));
        let r = read.acquire().unwrap();
        assert!(!other.read_write_lock(read.name()).1.try_lock().unwrap());
        drop(r);
        assert!(write.try_lock().unwrap());
        write.unlock().unwrap();
    }
}

// The client's own runtime renews the lease while the calling thread does synchronous work.
#[test]
fn the_watchdog_renews_while_synchronous_code_holds_the_lock() {
    for (b, _rt) in sync_backends() {
        let options = ClientOptions::default().watchdog_timeout(Duration::from_millis(600));
        let a = Client::open_with(&b.url, options).unwrap();
        let lock = a.lock(&support::name("blocking-watchdog"));
        let guard = lock.acquire().unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        assert!(lock.is_held_by_me().unwrap(), "{}: expired", b.name);
        assert!(!guard.is_lost());
        guard.unlock().unwrap();
        assert!(!lock.is_locked().unwrap());
        // A lease, and the guard sees it run out.
        let leased = lock.acquire_with_lease(Duration::from_millis(100)).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(leased.is_lost());
        assert!(leased.unlock().unwrap_err().is_not_owner());
    }
}

// Issue 36, item 15: a blocking guard dropped while its thread unwinds from a panic does not
// wait for its release: with every client paused on the server for 4 s, the release would
// have held the unwinding up to its bound (twice the 3 s response timeout). The release is
// handed to the client's runtime instead and frees the lock once the pause ends.
#[test]
fn a_blocking_guard_dropped_while_unwinding_hands_its_release_to_the_client() {
    for (b, _rt) in sync_backends() {
        let options = ClientOptions::default().response_timeout(Duration::from_secs(3));
        let a = Client::open_with(&b.url, options).unwrap();
        let lock = a.lock(&support::name("unwinding"));
        let guard = lock.acquire().unwrap();
        let mut admin = redis::Client::open(b.url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        let () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(4000)
            .arg("ALL")
            .query(&mut admin)
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                let _held = guard;
                panic!("the critical section fails");
            }));
            let _ = tx.send(unwound.is_err());
        });
        let unwound = rx
            .recv_timeout(Duration::from_secs(2))
            .expect("the unwinding thread was held up by the release");
        assert!(unwound);
        let mut free = false;
        for _ in 0..100 {
            // A query may time out while the pause lasts.
            if lock.is_locked().is_ok_and(|locked| !locked) {
                free = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            free,
            "{}: the lock was not released after the pause",
            b.name
        );
    }
}
