//! Contention: 3 clients x 32 tasks x N critical sections on one lock. A counter updated
//! non-atomically inside the section must end exact, and no two holders may overlap.
//! N defaults to 300 (28 800 sections a backend, every one a hand-over between tasks of three
//! clients); `LOCKSMITH_CONTENTION_ITERS` overrides it, and CI (`.ci/run`) runs it again with
//! 1000, as it ran by default until the cold `cargo test --workspace` had to fit in 5 minutes:
//! this test was the lock tests' longest by far.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use support::{backends, name, Backend};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_clients_times_32_tasks_never_overlap_and_count_exactly() {
    let iters: u64 = std::env::var("LOCKSMITH_CONTENTION_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    // The backends (ours, redis-server) run at the same time, each on its own lock name with
    // its own counter: the same sections and checks, in the time of the slower one rather than
    // of both one after the other (this test was the lock tests' longest).
    let backends = backends().await;
    futures::future::join_all(backends.iter().map(|b| contend(b, iters))).await;
}

/// 3 clients × 32 tasks × `iters` sections on one lock of `b`: no overlap, an exact count.
async fn contend(b: &Backend, iters: u64) {
    let clients = [b.client().await, b.client().await, b.client().await];
    let n = name("contention");
    let counter = Arc::new(AtomicU64::new(0));
    let inside = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for c in &clients {
        for _ in 0..32 {
            let lock = c.lock(&n);
            let counter = counter.clone();
            let inside = inside.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..iters {
                    lock.lock().await.unwrap();
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders overlap");
                    let v = counter.load(Ordering::Relaxed);
                    tokio::task::yield_now().await;
                    counter.store(v + 1, Ordering::Relaxed);
                    inside.store(false, Ordering::SeqCst);
                    lock.unlock().await.unwrap();
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(
        counter.load(Ordering::SeqCst),
        3 * 32 * iters,
        "backend {}",
        b.name
    );
}
