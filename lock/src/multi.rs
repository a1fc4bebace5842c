//! `MultiLock` (all of several locks, possibly on different servers) and `RedLock` (a majority
//! of independent servers), following Redisson's `RedissonMultiLock`/`RedissonRedLock`:
//! `failedLocksAllowed = locks - (locks/2 + 1)`, per-lock wait `max(remain / locks, 1)`.
//! A node that errors (for example is down) counts as a failed lock, and its error is returned
//! in the outcome instead of aborting the attempt.
//!
//! Beyond Redisson: a `MultiLock` tries its locks one after the other as Redisson does, a
//! `RedLock` tries all nodes at once in each round (as the Redlock algorithm and redlock-rs
//! do); both report the validity time of what they got (lease − time spent acquiring − clock
//! drift margin), end with an owner-checked PEXPIRE to the real lease, and release what a
//! round acquired when the call is dropped half-way.

use std::ops::RangeInclusive;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use crate::error::{LockError, LostReason, Result};
use crate::guard::LockGuard;
use crate::hold::Core;
use crate::kind::DistributedLock;

/// What happened on one node during an attempt.
#[derive(Debug)]
#[non_exhaustive]
pub enum NodeOutcome {
    /// The lock on this node is held by us.
    Acquired,
    /// Held by someone else (the attempt on this node ran out of time).
    Busy,
    /// The node answered with an error or could not be reached.
    Failed(LockError),
    /// Not tried in the final round.
    NotTried,
    /// Acquired in the final round, then released because the attempt failed (no quorum,
    /// no time left, or another lock of a multi-lock refused).
    Released,
    /// Acquired in the final round, but its key was gone when the real lease was set (its
    /// first lease ran out while a slow node held the round up): not held.
    Expired,
}

impl NodeOutcome {
    /// True for [`NodeOutcome::Acquired`].
    pub fn is_acquired(&self) -> bool {
        matches!(self, NodeOutcome::Acquired)
    }
}

/// Result of a multi-lock or RedLock attempt: whether the whole lock is held, and per node
/// what happened in the final round.
#[derive(Debug)]
#[non_exhaustive]
#[must_use = "the lock may not have been acquired: check `acquired`"]
pub struct QuorumOutcome {
    /// True when the lock (all locks, or a majority for RedLock) is held.
    pub acquired: bool,
    /// One entry per lock, in the order given.
    pub nodes: Vec<NodeOutcome>,
    /// When acquired: how long the lock is certainly held from the moment the call returned,
    /// the lease (the watchdog's when none was given) minus the time the winning round took
    /// minus [`safety_margin`](crate::safety_margin) for clock drift, as Redlock computes it.
    /// `None` when not acquired.
    pub validity: Option<Duration>,
}

impl QuorumOutcome {
    fn failed(nodes: Vec<NodeOutcome>) -> Self {
        QuorumOutcome {
            acquired: false,
            nodes,
            validity: None,
        }
    }
}

/// The locks a round acquired, released if the round is dropped before it decides (a
/// cancelled `try_lock_for`), so no partial lock stays behind and keeps being renewed.
struct Rollback {
    /// Handles for the same owners as the acquired locks.
    held: Vec<Core>,
}

impl Rollback {
    fn new() -> Self {
        Rollback { held: Vec::new() }
    }

    fn push(&mut self, lock: &dyn DistributedLock) {
        self.held.push(lock.core().clone());
    }

    /// The round decided (success, or it released what it held itself).
    fn disarm(&mut self) {
        self.held.clear();
    }
}

impl Drop for Rollback {
    fn drop(&mut self) {
        let held = std::mem::take(&mut self.held);
        if held.is_empty() {
            return;
        }
        // On the first lock's client's runtime, where the watchdogs live (the current
        // runtime may end before the task runs).
        let Some(runtime) = held.first().map(|c| c.client.inner.runtime.clone()) else {
            return;
        };
        runtime.spawn(async move {
            for lock in held {
                if let Err(e) = lock.release().await {
                    tracing::debug!(lock = %lock.name, error = %e, "multi-lock cancel rollback failed");
                }
            }
        });
    }
}

/// The lease every lock ends with: `lease`, or the watchdog's lease of the first lock's client.
fn effective_lease(locks: &[Box<dyn DistributedLock>], lease: Option<Duration>) -> Duration {
    lease.unwrap_or_else(|| {
        locks.first().map_or(Duration::from_secs(30), |l| {
            l.client().options().watchdog_timeout
        })
    })
}

/// A delay of `range` milliseconds drawn by the first lock's client (so seeded by its
/// `ClientOptions::seed`); the range's start without locks.
fn random_ms(locks: &[Box<dyn DistributedLock>], range: RangeInclusive<u64>) -> Duration {
    Duration::from_millis(
        locks
            .first()
            .map_or(*range.start(), |l| l.client().random_range(range)),
    )
}

/// Twice the wait (Redisson's first lease with both a wait and a lease), at most
/// [`MAX_LEASE`](crate::MAX_LEASE): `Duration::MAX` waits must not overflow.
fn first_lease(wait: Duration) -> Duration {
    wait.saturating_mul(2).min(crate::MAX_LEASE)
}

/// [`LockError::Invalid`] for a lease longer than [`MAX_LEASE`](crate::MAX_LEASE), before any
/// lock is tried.
fn check_lease(locks: &[Box<dyn DistributedLock>], lease: Option<Duration>) -> Result<()> {
    match (lease, locks.first()) {
        (Some(l), Some(first)) => crate::client::lease_ms(first.name(), l).map(|_| ()),
        (Some(l), None) => crate::client::lease_ms("", l).map(|_| ()),
        _ => Ok(()),
    }
}

/// Redlock's validity: `lease − elapsed − drift`; `None` when nothing is left.
fn validity(lease: Duration, round_start: Instant) -> Option<Duration> {
    lease
        .checked_sub(round_start.elapsed())
        .and_then(|v| v.checked_sub(crate::safety_margin(lease)))
        .filter(|v| !v.is_zero())
}

/// The owner-checked PEXPIRE to the real lease on every acquired lock (and their lost
/// signals' deadlines with it), all nodes at once; the indices where it was set. A lock whose
/// key is gone (its acquisition lease ran out while a slow node held the round up) is not
/// among them: it is no longer held.
async fn set_leases(
    locks: &[Box<dyn DistributedLock>],
    acquired: &[usize],
    lease: Duration,
) -> Vec<usize> {
    let futs = acquired
        .iter()
        .filter_map(|&i| locks.get(i))
        .map(|l| l.set_lease(lease));
    let mut kept = Vec::with_capacity(acquired.len());
    for (r, &i) in futures::future::join_all(futs)
        .await
        .into_iter()
        .zip(acquired)
    {
        if matches!(r, Ok(true)) {
            kept.push(i);
        } else {
            tracing::warn!(lock = i, result = ?r, "multi-lock final lease not set");
        }
    }
    kept
}

/// Redisson's `RedissonMultiLock`: holds all of its locks or none. The locks may be of any
/// kind and on any clients (a fair lock, a read lock and a write lock together, as Redisson
/// allows); see [`DistributedLock`].
#[derive(Debug)]
pub struct MultiLock {
    locks: Vec<Box<dyn DistributedLock>>,
    quorum: bool,
}

/// A multi-lock over handles for **new owners** (what `Clone` does on each kind).
impl Clone for MultiLock {
    fn clone(&self) -> Self {
        MultiLock {
            locks: self.locks.iter().map(|l| l.clone_boxed()).collect(),
            quorum: self.quorum,
        }
    }
}

/// Redisson's `RedissonRedLock`: holds a majority (N/2+1) of independent locks, of any kind.
#[derive(Debug, Clone)]
pub struct RedLock {
    inner: MultiLock,
}

/// The locks a [`MultiLock`] or [`RedLock`] acquired, released when dropped (each release is
/// spawned, as [`LockGuard`] does), with the attempt's [`QuorumOutcome`].
#[derive(Debug)]
#[must_use = "dropping a MultiLockGuard releases the locks"]
pub struct MultiLockGuard {
    guards: Vec<LockGuard>,
    /// How many of `guards` must stay held: all of them for a MultiLock, the quorum for a
    /// RedLock.
    needed: usize,
    outcome: QuorumOutcome,
}

impl MultiLockGuard {
    fn new(locks: &[Box<dyn DistributedLock>], outcome: QuorumOutcome, needed: usize) -> Self {
        let guards: Vec<LockGuard> = locks
            .iter()
            .zip(&outcome.nodes)
            .filter(|(_, n)| n.is_acquired())
            .map(|(l, _)| LockGuard::new(l.core().clone(), None))
            .collect();
        MultiLockGuard {
            needed: needed.min(guards.len()),
            guards,
            outcome,
        }
    }

    /// What the attempt got, per lock, and its validity.
    pub fn outcome(&self) -> &QuorumOutcome {
        &self.outcome
    }

    /// The guards of the locks held, in the order given.
    pub fn guards(&self) -> &[LockGuard] {
        &self.guards
    }

    /// True once so many locks were lost that the whole lock is no longer held (any one for a
    /// MultiLock; more than N − quorum for a RedLock).
    pub fn is_lost(&self) -> bool {
        let lost = self.guards.iter().filter(|g| g.is_lost()).count();
        self.guards.len() - lost < self.needed
    }

    /// Runs `fut` as a critical section, cancelled (dropped) when the whole lock is lost (see
    /// [`is_lost`](Self::is_lost)), as [`LockGuard::run`] does for one lock.
    ///
    /// # Errors
    /// [`LockError::Lost`] with the reason of the loss that broke the lock.
    pub async fn run<F: std::future::Future>(&self, fut: F) -> Result<F::Output> {
        let mut signals: FuturesUnordered<_> = self
            .guards
            .iter()
            .map(|g| {
                let signal = g.lost_signal();
                let name = g.name().to_owned();
                async move {
                    let reason = match signal {
                        Some(mut s) => s.lost().await,
                        None => None,
                    };
                    (name, reason.unwrap_or(LostReason::Ended))
                }
            })
            .collect();
        let spare = self.guards.len() - self.needed;
        let broken = async move {
            let mut lost = 0;
            while let Some((name, reason)) = signals.next().await {
                lost += 1;
                if lost > spare {
                    return LockError::Lost { name, reason };
                }
            }
            std::future::pending().await
        };
        tokio::select! {
            biased;
            e = broken => Err(e),
            out = fut => Ok(out),
        }
    }

    /// Releases every lock held; the first error if any release failed (all are attempted).
    ///
    /// # Errors
    /// The first per-lock error.
    pub async fn unlock(self) -> Result<()> {
        futures::future::join_all(self.guards.into_iter().map(LockGuard::unlock))
            .await
            .into_iter()
            .collect()
    }
}

impl MultiLock {
    /// A multi-lock over `locks` (each bound to its own client and owner). Mix kinds with
    /// boxed handles: `MultiLock::new(vec![fair.boxed(), read.boxed()])`.
    pub fn new<L: DistributedLock + 'static>(locks: Vec<L>) -> Self {
        MultiLock {
            locks: locks.into_iter().map(DistributedLock::boxed).collect(),
            quorum: false,
        }
    }

    /// The locks.
    pub fn locks(&self) -> &[Box<dyn DistributedLock>] {
        &self.locks
    }

    /// Acquires every lock, retrying rounds as [`lock`](Self::lock) does, and returns a guard
    /// that releases them all when dropped.
    ///
    /// # Errors
    /// See [`MultiLock::try_lock_for`].
    pub async fn acquire(&self, lease: Option<Duration>) -> Result<MultiLockGuard> {
        let out = self.lock(lease).await?;
        Ok(MultiLockGuard::new(&self.locks, out, self.locks.len()))
    }

    /// [`try_lock_for`](Self::try_lock_for) returning a guard when acquired.
    ///
    /// # Errors
    /// See [`MultiLock::try_lock_for`].
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_acquire_for(
        &self,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<MultiLockGuard>> {
        let out = self.try_lock_for(wait, lease).await?;
        Ok(out
            .acquired
            .then(|| MultiLockGuard::new(&self.locks, out, self.locks.len())))
    }

    fn min_locks(&self) -> usize {
        min_locks(self.locks.len(), self.quorum)
    }

    fn failed_locks_limit(&self) -> usize {
        self.locks.len() - self.min_locks()
    }

    fn lock_wait_time(&self, remain: Option<Duration>) -> Option<Duration> {
        lock_wait_time(remain, self.locks.len(), self.quorum)
    }

    /// Redisson's `tryLock(waitTime, leaseTime)`; `wait = None` is a single round without
    /// waiting.
    ///
    /// # Errors
    /// Only errors that are not per node; per-node errors are in the outcome.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_lock_for(
        &self,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<QuorumOutcome> {
        check_lease(&self.locks, lease)?;
        // Redisson: with both wait and lease, each lock's lease is twice the wait time so that it
        // cannot expire while later locks are being acquired; the real lease is set at the end.
        let new_lease = match (wait, lease) {
            (_, None) => None,
            (Some(w), Some(_)) if !w.is_zero() => Some(first_lease(w)),
            (_, Some(l)) => Some(l),
        };
        let mut time = Instant::now();
        let mut round_start = time;
        let mut guard = Rollback::new();
        let mut remain = wait.filter(|w| !w.is_zero());
        let lock_wait = self.lock_wait_time(remain);
        let mut failed_limit = self.failed_locks_limit();
        let mut nodes: Vec<NodeOutcome> =
            self.locks.iter().map(|_| NodeOutcome::NotTried).collect();
        let mut acquired: Vec<usize> = Vec::new();
        let mut restart = false;
        let mut i = 0;
        while i < self.locks.len() {
            let lock = &self.locks[i];
            let res = if remain.is_none() && lease.is_none() {
                lock.try_lock().await
            } else {
                let await_time = match (lock_wait, remain) {
                    (Some(a), Some(r)) => a.min(r),
                    _ => Duration::ZERO,
                };
                lock.try_lock_for(await_time, new_lease).await
            };
            let ok = match res {
                Ok(true) => {
                    nodes[i] = NodeOutcome::Acquired;
                    true
                }
                Ok(false) => {
                    nodes[i] = NodeOutcome::Busy;
                    false
                }
                Err(e) => {
                    tracing::warn!(lock = %lock.name(), error = %e, "multi-lock node failed");
                    if e.is_timeout() {
                        // The script may have run: release what we may hold there.
                        let _ = lock.unlock().await;
                    }
                    nodes[i] = NodeOutcome::Failed(e);
                    false
                }
            };
            if ok {
                acquired.push(i);
                guard.push(lock.as_ref());
            } else {
                if self.locks.len() - acquired.len() == self.failed_locks_limit() {
                    break;
                }
                if failed_limit == 0 {
                    self.unlock_indices(&acquired).await;
                    guard.disarm();
                    if remain.is_none() {
                        return Ok(QuorumOutcome::failed(nodes));
                    }
                    for n in nodes.iter_mut() {
                        if n.is_acquired() {
                            *n = NodeOutcome::Released;
                        }
                    }
                    failed_limit = self.failed_locks_limit();
                    acquired.clear();
                    restart = true;
                    // A node that fails fast (down) would make the rounds a hot loop: a short
                    // random pause, within the time left, before the next round.
                    if let (Some(r), NodeOutcome::Failed(_)) = (remain, &nodes[i]) {
                        let left = r.saturating_sub(time.elapsed());
                        tokio::time::sleep(random_ms(&self.locks, 5..=49).min(left)).await;
                    }
                } else {
                    failed_limit -= 1;
                }
            }
            // Redisson updates the remaining time after every lock, a reset round included
            // (its iterator is rewound, the loop goes on): the wait ends on time even while
            // another owner keeps one of the locks.
            if let Some(r) = remain {
                let now = Instant::now();
                let r = r.saturating_sub(now - time);
                time = now;
                if r.is_zero() {
                    self.unlock_indices(&acquired).await;
                    guard.disarm();
                    for n in nodes.iter_mut() {
                        if n.is_acquired() {
                            *n = NodeOutcome::Released;
                        }
                    }
                    return Ok(QuorumOutcome::failed(nodes));
                }
                remain = Some(r);
            }
            if restart {
                restart = false;
                round_start = Instant::now();
                i = 0;
            } else {
                i += 1;
            }
        }
        if let Some(l) = lease {
            let kept = set_leases(&self.locks, &acquired, l).await;
            if kept.len() < acquired.len() {
                // A lock expired before the real lease was set: not all are held.
                self.unlock_indices(&acquired).await;
                guard.disarm();
                for n in nodes.iter_mut() {
                    if n.is_acquired() {
                        *n = NodeOutcome::Released;
                    }
                }
                return Ok(QuorumOutcome::failed(nodes));
            }
        }
        guard.disarm();
        Ok(QuorumOutcome {
            acquired: true,
            nodes,
            validity: validity(effective_lease(&self.locks, lease), round_start),
        })
    }

    /// One round without waiting (`tryLock()`).
    ///
    /// # Errors
    /// See [`MultiLock::try_lock_for`].
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_lock(&self) -> Result<QuorumOutcome> {
        self.try_lock_for(None, None).await
    }

    /// Retries rounds until acquired (Redisson's `lock(leaseTime)`: rounds of
    /// `locks * 1500 ms` wait).
    ///
    /// # Errors
    /// See [`MultiLock::try_lock_for`].
    pub async fn lock(&self, lease: Option<Duration>) -> Result<QuorumOutcome> {
        check_lease(&self.locks, lease)?;
        let base = Duration::from_millis(1500) * self.locks.len().max(1) as u32;
        loop {
            let wait = match lease {
                None => base,
                Some(l) if l <= base => {
                    let lo = (l / 2).as_millis() as u64;
                    random_ms(&self.locks, lo..=l.as_millis().max(1) as u64)
                }
                Some(l) => random_ms(&self.locks, base.as_millis() as u64..=l.as_millis() as u64),
            };
            let out = self.try_lock_for(Some(wait), lease).await?;
            if out.acquired {
                return Ok(out);
            }
            // All nodes may be failing fast (down): do not spin.
            tokio::time::sleep(random_ms(&self.locks, 5..=49)).await;
        }
    }

    async fn unlock_indices(&self, idx: &[usize]) {
        for &i in idx {
            if let Err(e) = self.locks[i].unlock().await {
                tracing::debug!(lock = %self.locks[i].name(), error = %e, "multi-lock rollback failed");
            }
        }
    }

    /// Releases every lock; per node results in order.
    pub async fn unlock_all(&self) -> Vec<Result<()>> {
        let futs = self.locks.iter().map(|l| l.unlock());
        futures::future::join_all(futs).await
    }

    /// Releases every lock; the first error if any node failed (all are attempted).
    ///
    /// # Errors
    /// The first per-node error.
    pub async fn unlock(&self) -> Result<()> {
        self.unlock_all().await.into_iter().collect()
    }

    /// True when this owner holds every lock.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn is_held_by_me(&self) -> Result<bool> {
        for l in &self.locks {
            if !l.is_held_by_me().await? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Locks needed: all, or N/2+1 for RedLock.
fn min_locks(n: usize, quorum: bool) -> usize {
    if quorum {
        n / 2 + 1
    } else {
        n
    }
}

/// Redisson's `calcLockWaitTime`: the whole remaining time for a multi-lock, and
/// `max(remain / locks, 1 ms)` for RedLock.
fn lock_wait_time(remain: Option<Duration>, n: usize, quorum: bool) -> Option<Duration> {
    let r = remain?;
    if quorum {
        Some((r / n.max(1) as u32).max(Duration::from_millis(1)))
    } else {
        Some(r)
    }
}

impl RedLock {
    /// A RedLock over `locks`, normally one per independent server, of any kind.
    pub fn new<L: DistributedLock + 'static>(locks: Vec<L>) -> Self {
        RedLock {
            inner: MultiLock {
                locks: locks.into_iter().map(DistributedLock::boxed).collect(),
                quorum: true,
            },
        }
    }

    /// The locks.
    pub fn locks(&self) -> &[Box<dyn DistributedLock>] {
        &self.inner.locks
    }

    /// Acquires a majority, retrying as [`lock`](Self::lock) does, and returns a guard that
    /// releases what it holds when dropped; its [`run`](MultiLockGuard::run) cancels a section
    /// once fewer than a quorum of the locks remain held.
    ///
    /// # Errors
    /// Only errors that are not per node.
    pub async fn acquire(&self, lease: Option<Duration>) -> Result<MultiLockGuard> {
        let out = self.lock(lease).await?;
        Ok(MultiLockGuard::new(&self.inner.locks, out, self.quorum()))
    }

    /// [`try_lock_for`](Self::try_lock_for) returning a guard when a majority is held.
    ///
    /// # Errors
    /// Only errors that are not per node.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_acquire_for(
        &self,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<MultiLockGuard>> {
        let out = self.try_lock_for(wait, lease).await?;
        Ok(out
            .acquired
            .then(|| MultiLockGuard::new(&self.inner.locks, out, self.quorum())))
    }

    /// How many locks make a quorum (N/2+1).
    pub fn quorum(&self) -> usize {
        self.inner.min_locks()
    }

    /// Tries every node at once, in rounds, until a majority is held with time left on it or
    /// `wait` runs out (`None`: one round, no waiting per node). Each node waits at most
    /// `wait / nodes` (Redisson's per-lock wait); a round without a quorum releases what it
    /// got and the next round starts after a short random delay. With `lease`, the locks are
    /// taken for twice the wait as Redisson does, then set to `lease` (owner-checked) once the
    /// quorum is held; a node whose key is gone by then does not count.
    ///
    /// # Errors
    /// Only errors that are not per node.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_lock_for(
        &self,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<QuorumOutcome> {
        let locks = &self.inner.locks;
        let start = Instant::now();
        let wait = wait.filter(|w| !w.is_zero());
        let per_lock = self.inner.lock_wait_time(wait);
        // Redisson: with both wait and lease, each lock is first taken for twice the whole
        // wait, so that none expires while the others are being acquired; the real lease is
        // set once the quorum is held.
        check_lease(locks, lease)?;
        let first_lease = match (wait, lease) {
            (Some(w), Some(_)) => Some(first_lease(w)),
            (_, l) => l,
        };
        loop {
            let round_start = Instant::now();
            let mut guard = Rollback::new();
            let remain = wait.map(|w| w.saturating_sub(start.elapsed()));
            let attempts = locks.iter().map(|lock| async move {
                match (per_lock, remain) {
                    (Some(p), Some(r)) => lock.try_lock_for(p.min(r), first_lease).await,
                    _ if lease.is_some() => lock.try_lock_for(Duration::ZERO, first_lease).await,
                    _ => lock.try_lock().await,
                }
            });
            let results = futures::future::join_all(attempts).await;
            let mut nodes = Vec::with_capacity(locks.len());
            let mut acquired = Vec::new();
            for (i, (lock, res)) in locks.iter().zip(results).enumerate() {
                nodes.push(match res {
                    Ok(true) => {
                        acquired.push(i);
                        guard.push(lock.as_ref());
                        NodeOutcome::Acquired
                    }
                    Ok(false) => NodeOutcome::Busy,
                    Err(e) => {
                        tracing::warn!(lock = %lock.name(), error = %e, "redlock node failed");
                        NodeOutcome::Failed(e)
                    }
                });
            }
            let eff = effective_lease(locks, lease);
            let mut held = acquired.len() >= self.quorum() && validity(eff, round_start).is_some();
            if held {
                if let Some(l) = lease {
                    // A node whose key expired during a round a slow node held up (its first
                    // lease ran out) is not held: it does not count towards the quorum.
                    let kept = set_leases(locks, &acquired, l).await;
                    for &i in acquired.iter().filter(|i| !kept.contains(i)) {
                        if let Some(n) = nodes.get_mut(i) {
                            *n = NodeOutcome::Expired;
                        }
                    }
                    held = kept.len() >= self.quorum() && validity(eff, round_start).is_some();
                }
            }
            if held {
                guard.disarm();
                return Ok(QuorumOutcome {
                    acquired: true,
                    nodes,
                    validity: validity(eff, round_start),
                });
            }
            // No quorum (or no time left on it): release everything of this round, including
            // nodes whose reply was lost (their script may have run).
            let release = locks
                .iter()
                .zip(&nodes)
                .filter(|(_, n)| !matches!(n, NodeOutcome::Busy))
                .map(|(l, _)| l.unlock());
            let _ = futures::future::join_all(release).await;
            guard.disarm();
            for n in nodes.iter_mut() {
                if n.is_acquired() {
                    *n = NodeOutcome::Released;
                }
            }
            let left = wait.map_or(Duration::ZERO, |w| w.saturating_sub(start.elapsed()));
            if left.is_zero() {
                return Ok(QuorumOutcome::failed(nodes));
            }
            let pause = random_ms(locks, 5..=49).min(left);
            tokio::time::sleep(pause).await;
        }
    }

    /// One round without waiting.
    ///
    /// # Errors
    /// Only errors that are not per node.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_lock(&self) -> Result<QuorumOutcome> {
        self.try_lock_for(None, None).await
    }

    /// Retries until a majority is held (rounds of `nodes × 1500 ms`, as Redisson's
    /// `lock(leaseTime)`).
    ///
    /// # Errors
    /// Only errors that are not per node.
    pub async fn lock(&self, lease: Option<Duration>) -> Result<QuorumOutcome> {
        let round = Duration::from_millis(1500) * self.inner.locks.len().max(1) as u32;
        loop {
            let out = self.try_lock_for(Some(round), lease).await?;
            if out.acquired {
                return Ok(out);
            }
        }
    }

    /// Releases on every node (Redisson ignores per-node failures here); per node results.
    pub async fn unlock(&self) -> Vec<Result<()>> {
        self.inner.unlock_all().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redlock_of_five_needs_three_and_tolerates_two_failures() {
        assert_eq!(min_locks(5, true), 3);
        assert_eq!(5 - min_locks(5, true), 2);
        assert_eq!(min_locks(3, true), 2);
        assert_eq!(min_locks(3, false), 3);
    }

    #[test]
    fn redlock_splits_the_wait_time_across_locks_with_a_one_ms_floor() {
        let ms = Duration::from_millis;
        assert_eq!(lock_wait_time(Some(ms(900)), 3, true), Some(ms(300)));
        assert_eq!(lock_wait_time(Some(ms(2)), 5, true), Some(ms(1)));
        assert_eq!(lock_wait_time(Some(ms(900)), 3, false), Some(ms(900)));
        assert_eq!(lock_wait_time(None, 3, true), None);
    }
}
