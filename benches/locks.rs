//! Lock round trips and handoff latency against real servers.
//!
//! - `uncontended/<kind>/<target>`: one `lock` + `unlock` of a free lock (two script round
//!   trips; the spin and simple locks have the same shape without pub/sub).
//! - `handoff/<how>/<target>`: a holder releases while another client waits; the time from the
//!   start of `unlock` to the moment the waiter holds the lock. `pubsub` is [`Lock`] (woken by
//!   the unlock message); `spin-<n>ms` is a [`SpinLock`] polling every n ms and `simple-<n>ms` a
//!   `SET NX PX` loop polling every n ms: the polling baselines. The release happens at a
//!   point spread evenly over the poll interval (not timed), so a poller's expected handoff is
//!   about half its interval plus a round trip.
//!
//! A target is only a URL provider ([`Target`]): a `redis-server` started on a free port (the
//! group is skipped with one printed line when it is not on the PATH).
//!
//! Run: `cargo bench -p locksmith-benches --bench locks` (add `-- --quick` for a short run).
#![allow(missing_docs, clippy::print_stdout)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use locksmith::lock::{Backoff, Client, ClientOptions, Lock, ReplicaSync, SpinLock};
use tokio::runtime::Runtime;

/// Something that serves the Redis protocol at a URL for the duration of the bench.
trait Target {
    /// Short name used in bench ids.
    fn name(&self) -> &str;
    /// `redis://host:port/`.
    fn url(&self) -> &str;
}

/// A `redis-server` child on a free loopback port (the testkit's launcher), killed on drop.
struct RealRedis {
    url: String,
    _server: locksmith_testkit::RealRedis,
}

impl RealRedis {
    fn start() -> Option<RealRedis> {
        let server = locksmith_testkit::RealRedis::start()?;
        Some(RealRedis {
            url: server.url(),
            _server: server,
        })
    }
}

impl Target for RealRedis {
    fn name(&self) -> &str {
        "redis-server"
    }
    fn url(&self) -> &str {
        &self.url
    }
}

/// The servers to bench against: a real redis-server. (Our server's script throughput is
/// measured by `benches/scripts.rs` and side by side by `benches/compare.sh`.)
fn targets() -> Vec<Box<dyn Target>> {
    let mut v: Vec<Box<dyn Target>> = Vec::new();
    if let Some(r) = RealRedis::start() {
        v.push(Box::new(r));
    }
    v
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn options() -> ClientOptions {
    ClientOptions::default().replica_sync(ReplicaSync::Off)
}

fn uncontended(c: &mut Criterion) {
    let rt = runtime();
    let targets = targets();
    let mut group = c.benchmark_group("uncontended");
    for t in &targets {
        let client = rt.block_on(Client::open_with(t.url(), options())).unwrap();
        let lock = client.lock("bench-uncontended");
        group.bench_function(BenchmarkId::new("lock", t.name()), |b| {
            b.to_async(&rt).iter(|| async {
                lock.lock_with_lease(Duration::from_secs(30)).await.unwrap();
                lock.unlock().await.unwrap();
            })
        });
        let watchdog = client.lock("bench-uncontended-watchdog");
        group.bench_function(BenchmarkId::new("lock-watchdog", t.name()), |b| {
            b.to_async(&rt).iter(|| async {
                watchdog.lock().await.unwrap();
                watchdog.unlock().await.unwrap();
            })
        });
        let spin = client.spin_lock("bench-uncontended-spin");
        group.bench_function(BenchmarkId::new("spin", t.name()), |b| {
            b.to_async(&rt).iter(|| async {
                spin.lock_with_lease(Duration::from_secs(30)).await.unwrap();
                spin.unlock().await.unwrap();
            })
        });
        let simple = client.simple_lock("bench-uncontended-simple");
        group.bench_function(BenchmarkId::new("simple", t.name()), |b| {
            b.to_async(&rt).iter(|| async {
                assert!(simple.try_lock(Duration::from_secs(30)).await.unwrap());
                assert!(simple.unlock().await.unwrap());
            })
        });
        rt.block_on(client.shutdown());
    }
    group.finish();
}

/// A release phase spread evenly over `[0, period)` across iterations (golden-ratio sequence),
/// so a polling waiter is caught at a uniformly distributed point of its poll interval rather
/// than right after a poll.
fn phase(period: Duration) -> Duration {
    static K: AtomicU64 = AtomicU64::new(0);
    let k = K.fetch_add(1, Ordering::Relaxed);
    let frac = (k as f64 * 0.618_033_988_75).fract();
    period.mul_f64(frac)
}

/// Waits precisely (yielding, not sleeping: tokio's timer has 1 ms granularity) for `d`.
async fn pause(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        tokio::task::yield_now().await;
    }
}

/// Waits (bounded) until `counter` moved past `from`: the waiter is in its wait.
async fn until_waiting(counter: impl Fn() -> u64, from: u64) {
    for _ in 0..10_000 {
        if counter() > from {
            return;
        }
        tokio::time::sleep(Duration::from_micros(100)).await;
    }
    panic!("the waiter never started waiting");
}

/// One handoff of a lock with the `Lock` API (pub/sub or spin): the time from the start of
/// `unlock` until the waiter holds it.
async fn handoff_once<L: Handoff>(
    holder: &L,
    waiter: &L,
    waiter_client: &Client,
    poll: Duration,
) -> Duration {
    holder.acquire().await;
    let waits = waiter_client.metrics().waits;
    // A clone is a new owner: the waiting task's handle is the one that releases.
    let w = waiter.clone();
    let task = tokio::spawn(async move {
        w.acquire().await;
        (Instant::now(), w)
    });
    until_waiting(|| waiter_client.metrics().waits, waits).await;
    pause(phase(poll)).await;
    let start = Instant::now();
    holder.release().await;
    let (acquired, w) = task.await.unwrap();
    let d = acquired.saturating_duration_since(start);
    w.release().await;
    d
}

trait Handoff: Clone + Send + Sync + 'static {
    fn acquire(&self) -> impl std::future::Future<Output = ()> + Send;
    fn release(&self) -> impl std::future::Future<Output = ()> + Send;
}

impl Handoff for Lock {
    async fn acquire(&self) {
        self.lock_with_lease(Duration::from_secs(30)).await.unwrap();
    }
    async fn release(&self) {
        self.unlock().await.unwrap();
    }
}

impl Handoff for SpinLock {
    async fn acquire(&self) {
        self.lock_with_lease(Duration::from_secs(30)).await.unwrap();
    }
    async fn release(&self) {
        self.unlock().await.unwrap();
    }
}

/// The `SET NX PX` baseline: the waiter polls every `poll`, counting attempts so the bench knows
/// it is waiting.
async fn simple_handoff_once(
    holder: &Client,
    waiter: &Client,
    name: &str,
    poll: Duration,
) -> Duration {
    let lease = Duration::from_secs(30);
    let h = holder.simple_lock(name);
    assert!(h.try_lock(lease).await.unwrap());
    let attempts = Arc::new(AtomicU64::new(0));
    let w = waiter.simple_lock(name);
    let task = tokio::spawn({
        let attempts = attempts.clone();
        let w = w.clone();
        async move {
            loop {
                let got = w.try_lock(lease).await.unwrap();
                attempts.fetch_add(1, Ordering::SeqCst);
                if got {
                    return Instant::now();
                }
                tokio::time::sleep(poll).await;
            }
        }
    });
    until_waiting(|| attempts.load(Ordering::SeqCst), 0).await;
    pause(phase(poll)).await;
    let start = Instant::now();
    assert!(h.unlock().await.unwrap());
    let acquired = task.await.unwrap();
    assert!(w.unlock().await.unwrap());
    acquired.saturating_duration_since(start)
}

fn handoff(c: &mut Criterion) {
    let rt = runtime();
    let targets = targets();
    let mut group = c.benchmark_group("handoff");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for t in &targets {
        let (hc, wc) = rt.block_on(async {
            (
                Client::open_with(t.url(), options()).await.unwrap(),
                Client::open_with(t.url(), options()).await.unwrap(),
            )
        });

        let (h, w) = (hc.lock("bench-handoff"), wc.lock("bench-handoff"));
        group.bench_function(BenchmarkId::new("pubsub", t.name()), |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let (h, w, wc) = (h.clone(), w.clone(), wc.clone());
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += handoff_once(&h, &w, &wc, Duration::ZERO).await;
                    }
                    total
                }
            })
        });

        for poll_ms in [1u64, 10] {
            let poll = Duration::from_millis(poll_ms);
            let name = format!("bench-handoff-spin-{poll_ms}");
            let h = hc.spin_lock(&name).with_backoff(Backoff::constant(poll));
            let w = wc.spin_lock(&name).with_backoff(Backoff::constant(poll));
            group.bench_function(
                BenchmarkId::new(format!("spin-{poll_ms}ms"), t.name()),
                |b| {
                    b.to_async(&rt).iter_custom(|iters| {
                        let (h, w, wc) = (h.clone(), w.clone(), wc.clone());
                        async move {
                            let mut total = Duration::ZERO;
                            for _ in 0..iters {
                                total += handoff_once(&h, &w, &wc, poll).await;
                            }
                            total
                        }
                    })
                },
            );

            let name = format!("bench-handoff-simple-{poll_ms}");
            group.bench_function(
                BenchmarkId::new(format!("simple-{poll_ms}ms"), t.name()),
                |b| {
                    b.to_async(&rt).iter_custom(|iters| {
                        let (hc, wc, name) = (hc.clone(), wc.clone(), name.clone());
                        async move {
                            let mut total = Duration::ZERO;
                            for _ in 0..iters {
                                total += simple_handoff_once(&hc, &wc, &name, poll).await;
                            }
                            total
                        }
                    })
                },
            );
        }
        rt.block_on(async {
            hc.shutdown().await;
            wc.shutdown().await;
        });
    }
    group.finish();
}

criterion_group!(benches, uncontended, handoff);
criterion_main!(benches);
