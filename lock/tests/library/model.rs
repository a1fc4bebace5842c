//! The API against a reference model: random sequences of calls from three clients (lock,
//! `try_lock`/`try_lock_for` with short waits, leases, re-entry, unlock, `force_unlock`, hold
//! counts; semaphore acquire, `try_acquire`, release, available permits; latch count-down,
//! count, `try_set_count`, waits) run against one in-process server, and every result must be
//! what a small model says (who holds the lock and how often, how many permits are left, the
//! latch's count).
//!
//! Deterministic: leases are a minute and the watchdog's 30 s, far longer than a case, so
//! nothing expires unless a call says so (`force_unlock`); a wait that cannot succeed is a few
//! ms and its `false` is certain. A bounded number of cases runs in `cargo test`
//! (`LOCKSMITH_MODEL_CASES`, default 48 cases of up to 24 calls); proptest shrinks a mismatch
//! to a minimal sequence and keeps its seed in `model.proptest-regressions`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use locksmith_lock::{Client, LockError};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};

use crate::support;

/// Clients of a case.
const CLIENTS: usize = 3;
/// The semaphore's permits at the start of a case.
const PERMITS: i64 = 3;
/// The latch's count at the start of a case.
const COUNT: u64 = 3;
/// The lease of leased holds: far longer than a case.
const LEASE: Duration = Duration::from_secs(60);

/// One call of one client.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// `lock()` (or `lock_with_lease(LEASE)`) when the model says it is free or the
    /// client's; else `try_lock_for` a few ms, which must say no.
    Lock { c: usize, leased: bool },
    /// `try_lock()` (wait 0) or `try_lock_for(wait)`, with or without a lease.
    TryLock {
        c: usize,
        wait_ms: u64,
        leased: bool,
    },
    /// `unlock()`: one hold fewer, or `NotOwner`.
    Unlock { c: usize },
    /// `force_unlock()`: whether it was locked; nobody holds it after.
    ForceUnlock { c: usize },
    /// `hold_count()`, `is_locked()`, `is_held_by_me()`, `remaining_ttl()`.
    Inspect { c: usize },
    /// `try_acquire_many(n)` or `try_acquire_many_for(n, wait)`.
    Acquire { c: usize, n: u32, wait_ms: u64 },
    /// `release_many(n)`.
    Release { c: usize, n: u32 },
    /// `available_permits()`.
    Available { c: usize },
    /// `count_down()`.
    CountDown { c: usize },
    /// `count()`.
    Count { c: usize },
    /// `try_set_count(k)`.
    SetCount { c: usize, k: u64 },
    /// `wait_for(wait)`.
    Await { c: usize, wait_ms: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    let c = 0..CLIENTS;
    let wait = prop_oneof![Just(0u64), Just(5u64), Just(20u64)];
    prop_oneof![
        3 => (c.clone(), any::<bool>()).prop_map(|(c, leased)| Op::Lock { c, leased }),
        3 => (c.clone(), wait.clone(), any::<bool>())
            .prop_map(|(c, wait_ms, leased)| Op::TryLock { c, wait_ms, leased }),
        3 => c.clone().prop_map(|c| Op::Unlock { c }),
        1 => c.clone().prop_map(|c| Op::ForceUnlock { c }),
        2 => c.clone().prop_map(|c| Op::Inspect { c }),
        2 => (c.clone(), 1u32..=2, wait.clone())
            .prop_map(|(c, n, wait_ms)| Op::Acquire { c, n, wait_ms }),
        2 => (c.clone(), 1u32..=2).prop_map(|(c, n)| Op::Release { c, n }),
        1 => c.clone().prop_map(|c| Op::Available { c }),
        2 => c.clone().prop_map(|c| Op::CountDown { c }),
        1 => c.clone().prop_map(|c| Op::Count { c }),
        1 => (c.clone(), 1u64..=3).prop_map(|(c, k)| Op::SetCount { c, k }),
        1 => (c, wait).prop_map(|(c, wait_ms)| Op::Await { c, wait_ms }),
    ]
}

/// What the server must hold.
#[derive(Debug, Default)]
struct Model {
    /// The lock's holder and its hold count.
    holder: Option<(usize, u64)>,
    permits: i64,
    latch: u64,
}

impl Model {
    /// Whether client `c` would get the lock now.
    fn can_lock(&self, c: usize) -> bool {
        self.holder.is_none_or(|(h, _)| h == c)
    }

    fn locked_by(&mut self, c: usize) {
        let count = self.holder.map_or(0, |(_, n)| n);
        self.holder = Some((c, count + 1));
    }

    fn count_of(&self, c: usize) -> u64 {
        match self.holder {
            Some((h, n)) if h == c => n,
            _ => 0,
        }
    }
}

/// Names unique to a case (the clients live across cases).
static CASE: AtomicU64 = AtomicU64::new(0);

fn model_cases() -> u32 {
    std::env::var("LOCKSMITH_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

/// Compares an answer with the model's; the message names the call.
fn expect<T: PartialEq + std::fmt::Debug>(
    i: usize,
    op: &Op,
    got: T,
    want: T,
) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "call {i} {op:?}: got {got:?}, the model says {want:?}"
        ))
    }
}

/// `Ok` or the error's text (errors compare by kind: `NotOwner` or another).
fn outcome<T: std::fmt::Debug>(r: Result<T, LockError>) -> String {
    match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) if e.is_not_owner() => "NotOwner".to_owned(),
        Err(e) => format!("Err({e})"),
    }
}

/// Runs one sequence on fresh names; the first mismatch with the model.
async fn run_case(clients: &[Client], ops: &[Op]) -> Result<(), String> {
    let case = CASE.fetch_add(1, Ordering::Relaxed);
    let prefix = support::name(&format!("model{case}"));
    let (lock_name, sem_name, latch_name) = (
        format!("{prefix}-lock"),
        format!("{prefix}-sem"),
        format!("{prefix}-latch"),
    );
    let locks: Vec<_> = clients.iter().map(|c| c.lock(&lock_name)).collect();
    let sems: Vec<_> = clients.iter().map(|c| c.semaphore(&sem_name)).collect();
    let latches: Vec<_> = clients
        .iter()
        .map(|c| c.count_down_latch(&latch_name))
        .collect();
    let setup = (
        sems[0].try_set_permits(PERMITS).await,
        latches[0].try_set_count(COUNT).await,
    );
    if !matches!(setup, (Ok(true), Ok(true))) {
        return Err(format!("setup failed: {setup:?}"));
    }
    let mut model = Model {
        holder: None,
        permits: PERMITS,
        latch: COUNT,
    };
    let result = run_ops(&locks, &sems, &latches, &mut model, ops).await;
    // Leave nothing renewed behind for the next cases.
    let _ = locks[0].force_unlock().await;
    for lock in &locks {
        while lock.unlock().await.is_ok() {}
    }
    result
}

async fn run_ops(
    locks: &[locksmith_lock::Lock],
    sems: &[locksmith_lock::Semaphore],
    latches: &[locksmith_lock::CountDownLatch],
    model: &mut Model,
    ops: &[Op],
) -> Result<(), String> {
    let ms = Duration::from_millis;
    let lease = |leased: bool| leased.then_some(LEASE);
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Lock { c, leased } => {
                if model.can_lock(c) {
                    let r = if leased {
                        locks[c].lock_with_lease(LEASE).await
                    } else {
                        locks[c].lock().await
                    };
                    expect(i, op, outcome(r), "Ok(())".to_owned())?;
                    model.locked_by(c);
                } else {
                    let r = locks[c].try_lock_for(ms(5), lease(leased)).await;
                    expect(i, op, outcome(r), "Ok(false)".to_owned())?;
                }
            }
            Op::TryLock { c, wait_ms, leased } => {
                let r = if wait_ms == 0 && !leased {
                    locks[c].try_lock().await
                } else {
                    locks[c].try_lock_for(ms(wait_ms), lease(leased)).await
                };
                let can = model.can_lock(c);
                expect(i, op, outcome(r), format!("Ok({can})"))?;
                if can {
                    model.locked_by(c);
                }
            }
            Op::Unlock { c } => {
                let r = locks[c].unlock().await;
                match model.holder {
                    Some((h, n)) if h == c => {
                        expect(i, op, outcome(r), "Ok(())".to_owned())?;
                        model.holder = (n > 1).then_some((c, n - 1));
                    }
                    _ => expect(i, op, outcome(r), "NotOwner".to_owned())?,
                }
            }
            Op::ForceUnlock { c } => {
                let r = locks[c].force_unlock().await;
                expect(i, op, outcome(r), format!("Ok({})", model.holder.is_some()))?;
                model.holder = None;
            }
            Op::Inspect { c } => {
                let lock = &locks[c];
                let count = model.count_of(c);
                expect(
                    i,
                    op,
                    outcome(lock.hold_count().await),
                    format!("Ok({count})"),
                )?;
                expect(
                    i,
                    op,
                    outcome(lock.is_locked().await),
                    format!("Ok({})", model.holder.is_some()),
                )?;
                expect(
                    i,
                    op,
                    outcome(lock.is_held_by_me().await),
                    format!("Ok({})", count > 0),
                )?;
                let ttl = lock
                    .remaining_ttl()
                    .await
                    .map_err(|e| format!("call {i}: {e}"))?;
                let live = ttl.is_some_and(|t| !t.is_zero() && t <= LEASE);
                expect(i, op, live, model.holder.is_some())?;
            }
            Op::Acquire { c, n, wait_ms } => {
                let r = if wait_ms == 0 {
                    sems[c].try_acquire_many(n).await
                } else {
                    sems[c].try_acquire_many_for(n, ms(wait_ms)).await
                };
                let can = model.permits >= i64::from(n);
                expect(i, op, outcome(r), format!("Ok({can})"))?;
                if can {
                    model.permits -= i64::from(n);
                }
            }
            Op::Release { c, n } => {
                expect(
                    i,
                    op,
                    outcome(sems[c].release_many(n).await),
                    "Ok(())".to_owned(),
                )?;
                model.permits += i64::from(n);
            }
            Op::Available { c } => {
                let r = sems[c].available_permits().await;
                expect(i, op, outcome(r), format!("Ok({})", model.permits))?;
            }
            Op::CountDown { c } => {
                expect(
                    i,
                    op,
                    outcome(latches[c].count_down().await),
                    "Ok(())".to_owned(),
                )?;
                model.latch = model.latch.saturating_sub(1);
            }
            Op::Count { c } => {
                let r = latches[c].count().await;
                expect(i, op, outcome(r), format!("Ok({})", model.latch))?;
            }
            Op::SetCount { c, k } => {
                let r = latches[c].try_set_count(k).await;
                let free = model.latch == 0;
                expect(i, op, outcome(r), format!("Ok({free})"))?;
                if free {
                    model.latch = k;
                }
            }
            Op::Await { c, wait_ms } => {
                let r = latches[c].wait_for(ms(wait_ms)).await;
                expect(i, op, outcome(r), format!("Ok({})", model.latch == 0))?;
            }
        }
    }
    Ok(())
}

#[test]
fn random_call_sequences_of_three_clients_match_the_model() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let backend = runtime.block_on(support::in_process());
    let clients: Vec<Client> = runtime.block_on(async { futures_clients(&backend, CLIENTS).await });
    let mut runner = TestRunner::new(Config {
        cases: model_cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/library/model.proptest-regressions"
        )))),
        ..Config::default()
    });
    let result = runner.run(&prop::collection::vec(op(), 1..24), |ops| {
        runtime
            .block_on(run_case(&clients, &ops))
            .map_err(TestCaseError::fail)
    });
    runtime.block_on(async {
        for client in &clients {
            client.shutdown().await;
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Opens `n` clients of `backend`.
async fn futures_clients(backend: &support::Backend, n: usize) -> Vec<Client> {
    let mut clients = Vec::with_capacity(n);
    for _ in 0..n {
        clients.push(backend.client().await);
    }
    clients
}
