//! [`LockGuard`]: one hold of a lock that is released when the guard goes out of scope, and
//! [`Section`], what a scoped critical section ([`Lock::with_lock`](crate::Lock::with_lock) and
//! friends) hands to its closure.
//!
//! A guard never blocks in `Drop`: it spawns the release (the same release
//! [`LockGuard::unlock`] runs, completed even if nobody waits for it) on the current tokio
//! runtime, or, dropped on a thread without one, on the runtime the client was opened on. If
//! that runtime has shut down nothing can be sent any more: the watchdog died with it, and the
//! lock expires after its lease.

use std::future::Future;

use crate::error::{LockError, LostReason, Result};
use crate::hold::Core;
use crate::owner::Owner;
use crate::watchdog::LostSignal;

/// One hold of a lock, released when dropped.
///
/// Returned by the `acquire*` methods of every lock kind (and of
/// [`DistributedLock`](crate::DistributedLock)). The guard owns what it needs (it can move into
/// another task and outlive the handle it came from); it acts for the handle's
/// [`Owner`], so a reentrant lock counts it as one hold of that owner.
///
/// - Drop releases the hold: the release is spawned on the current tokio runtime (outside one,
///   on the runtime the client was opened on) and the dropping thread never waits. When that
///   runtime has shut down, nothing is sent and the lock expires after its lease.
/// - [`unlock`](Self::unlock) releases and reports the outcome (for example
///   [`LockError::NotOwner`] when the lock was lost meanwhile).
/// - [`forget`](Self::forget) keeps the hold without a guard (hand-over to code that releases
///   through the lock handle, Redisson style).
/// - [`run`](Self::run) runs a future as a critical section cancelled when the lock is lost.
#[must_use = "dropping a LockGuard releases the lock"]
pub struct LockGuard {
    core: Core,
    token: Option<i64>,
    lost: Option<LostSignal>,
    /// Cleared by `unlock` and `forget`: then `Drop` does nothing.
    armed: bool,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("name", &self.core.name)
            .field("field", &self.core.field)
            .field("token", &self.token)
            .finish()
    }
}

/// What a scoped critical section receives: the lock's name, the fencing token of this
/// acquisition (for [`FencedLock`](crate::FencedLock)), and the lost signal of the hold.
#[derive(Debug, Clone)]
pub struct Section {
    name: String,
    token: Option<i64>,
    lost: Option<LostSignal>,
}

impl Section {
    /// The lock name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The fencing token of this acquisition: `Some` for a [`FencedLock`](crate::FencedLock),
    /// `None` for the other kinds.
    pub fn token(&self) -> Option<i64> {
        self.token
    }

    /// The lost signal of the hold (for work the section hands to other tasks); `None` when
    /// the client was already shut down.
    pub fn lost_signal(&self) -> Option<LostSignal> {
        self.lost.clone()
    }

    /// True once the lock has been reported lost, or the hold ended under the guard
    /// (force-unlocked, released through the lock handle, the client shut down).
    pub fn is_lost(&self) -> bool {
        self.lost.as_ref().is_none_or(LostSignal::is_over)
    }
}

impl LockGuard {
    /// A guard on the hold `core` has just taken (the lost signal is read now, so that a loss
    /// reported from here on reaches the guard).
    pub(crate) fn new(core: Core, token: Option<i64>) -> LockGuard {
        let lost = core.lost_signal();
        LockGuard {
            core,
            token,
            lost,
            armed: true,
        }
    }

    /// The lock name.
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// The owner the hold belongs to.
    pub fn owner(&self) -> Owner {
        self.core.owner
    }

    /// The fencing token of this acquisition: `Some` for a [`FencedLock`](crate::FencedLock),
    /// `None` for the other kinds.
    pub fn token(&self) -> Option<i64> {
        self.token
    }

    /// The lost signal of this hold (`None` when the client was already shut down when the
    /// lock was acquired).
    pub fn lost_signal(&self) -> Option<LostSignal> {
        self.lost.clone()
    }

    /// True once the lock has been reported lost, or the hold ended under the guard
    /// (force-unlocked, released through the lock handle, the client shut down).
    pub fn is_lost(&self) -> bool {
        self.lost.as_ref().is_none_or(LostSignal::is_over)
    }

    /// What a scoped section gets: name, token and lost signal.
    pub fn section(&self) -> Section {
        Section {
            name: self.core.name.clone(),
            token: self.token,
            lost: self.lost.clone(),
        }
    }

    /// Releases the hold and reports the outcome. The release completes even if this future is
    /// dropped, and the watchdog stops whatever the outcome.
    ///
    /// # Errors
    /// [`LockError::NotOwner`] when this owner no longer holds the lock (its lease ran out, it
    /// was lost or force-unlocked); Redis errors.
    pub async fn unlock(mut self) -> Result<()> {
        self.armed = false;
        self.core.release().await
    }

    /// Gives up the guard but keeps the hold: nothing is released when it goes away. The hold
    /// stays with the handle's owner; release it with the handle's `unlock()` (the watchdog
    /// keeps renewing it until then), or let its lease run out when it was taken with one.
    pub fn forget(mut self) {
        self.armed = false;
    }

    /// Runs `fut` as a critical section under this hold: it is polled until it completes or
    /// the lock is lost, whichever comes first. When the lock is lost `run` returns
    /// [`LockError::Lost`] with the reason and the future is dropped, which stops it only
    /// where it waits at an `.await`: the signal fires no later than the moment the key may
    /// have expired on the server (see [`LostSignal`]), but code between two `.await`s, or
    /// blocking code, runs on until it yields, and work the section handed to other tasks,
    /// threads or servers is not stopped at all. Writes that must not outlive the lock need a
    /// fencing token checked where they land (see [`FencingGate`](crate::FencingGate)). The
    /// guard is not released: drop it or call [`unlock`](Self::unlock).
    ///
    /// # Errors
    /// [`LockError::Lost`] (`is_lost()`) when the lock was lost, or the hold ended while the
    /// section ran (reason [`LostReason::Ended`]: force-unlocked, or released through the lock
    /// handle); [`LockError::Shutdown`] when the client was shut down.
    pub async fn run<F: Future>(&self, fut: F) -> Result<F::Output> {
        let Some(mut lost) = self.lost.clone() else {
            return Err(LockError::Shutdown);
        };
        tokio::select! {
            // A loss already reported wins over a future that would complete at once.
            biased;
            reason = lost.lost() => Err(self.lost_error(reason)),
            out = fut => Ok(out),
        }
    }

    fn lost_error(&self, reason: Option<LostReason>) -> LockError {
        match reason {
            Some(reason) => LockError::Lost {
                name: self.core.name.clone(),
                reason,
            },
            None if self.core.client.check_alive().is_err() => LockError::Shutdown,
            None => LockError::Lost {
                name: self.core.name.clone(),
                reason: LostReason::Ended,
            },
        }
    }

    /// Runs `f` under this hold as [`run`](Self::run) does, then releases the hold. A release
    /// error after the section completed is logged, not returned: the section ran while the
    /// lock was held, and a hold that could not be released expires after its lease.
    pub(crate) async fn scope<F, Fut, T>(self, f: F) -> Result<T>
    where
        F: FnOnce(Section) -> Fut,
        Fut: Future<Output = T>,
    {
        let out = self.run(f(self.section())).await;
        let name = self.core.name.clone();
        match self.unlock().await {
            Ok(()) => {}
            // After a loss, NotOwner is the expected answer.
            Err(e) if out.is_err() => {
                tracing::debug!(name = %name, error = %e, "release after a lost section")
            }
            Err(e) => tracing::warn!(name = %name, error = %e, "release after the section failed"),
        }
        out
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let core = self.core.clone();
        // On the runtime the client was opened on, where its watchdog lives: never the
        // dropping thread itself, nor the current runtime, which may end before the task runs
        // (a `block_on` helper, a per-worker runtime) and leave the lock renewed forever.
        core.client.inner.runtime.clone().spawn(async move {
            if let Err(e) = core.release().await {
                tracing::debug!(name = %core.name, error = %e, "release on guard drop");
            }
        });
    }
}
