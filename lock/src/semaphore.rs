//! [`Semaphore`] (Redisson's `RSemaphore`): a permit counter in a string key, waiters woken over
//! pub/sub by every release.
//!
//! Layout: string `name` = available permits; channel `redisson_sc:{name}`; every release,
//! `trySetPermits` and `addPermits` publishes the new count.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::client::{deadline_after, lease_ms, prefix_name, Client, Metrics};
use crate::error::{LockError, Result};
use crate::hold::note_unsynced;
use crate::scripts;
use crate::wait::{count_failure, wait_until, Step, WaitOn};
use crate::waiter::Wake;

const PUBLISH: &str = "PUBLISH";

/// Redisson's `RSemaphore`: a distributed, non-fair counting semaphore.
///
/// Permits are not owned: any handle may release, and releasing more than was acquired raises
/// the count (as `java.util.concurrent.Semaphore`). A semaphore that was never set has 0
/// permits, and `release` on it creates it.
#[derive(Debug, Clone)]
pub struct Semaphore {
    client: Client,
    name: String,
}

impl Client {
    /// A [`Semaphore`] on `name`.
    pub fn semaphore(&self, name: &str) -> Semaphore {
        Semaphore {
            client: self.clone(),
            name: name.to_owned(),
        }
    }
}

impl Semaphore {
    /// The key holding the permit count.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The channel releases publish on (`redisson_sc:{name}`).
    pub fn channel(&self) -> String {
        prefix_name("redisson_sc", &self.name)
    }

    /// A script that writes, with its `WAIT` when replicas are synced, that `WAIT` ending by
    /// `deadline`; whether it is synced comes back beside the answer (see
    /// `Client::eval_write_until`).
    async fn eval_synced<T: redis::FromRedisValue>(
        &self,
        script: &'static redis::Script,
        with_channel: bool,
        args: &[String],
        deadline: Option<Instant>,
    ) -> Result<(T, Result<bool>)> {
        let mut keys = vec![self.name.clone()];
        if with_channel {
            keys.push(self.channel());
        }
        self.client
            .eval_write_until(script, &keys, args, deadline)
            .await
    }

    /// A script that writes, whose sync is only logged: the write stands on the master, so
    /// the caller gets no error it might retry on (a retried release would release twice).
    async fn eval<T: redis::FromRedisValue>(
        &self,
        script: &'static redis::Script,
        with_channel: bool,
        args: &[String],
    ) -> Result<T> {
        self.eval_until(script, with_channel, args, None).await
    }

    /// [`eval`](Self::eval) whose `WAIT` ends by `deadline`.
    async fn eval_until<T: redis::FromRedisValue>(
        &self,
        script: &'static redis::Script,
        with_channel: bool,
        args: &[String],
        deadline: Option<Instant>,
    ) -> Result<T> {
        let (v, synced) = self
            .eval_synced(script, with_channel, args, deadline)
            .await?;
        note_unsynced(&self.name, "semaphore write", synced);
        Ok(v)
    }

    /// Sets the permit count when the semaphore does not exist yet; `false` when it does.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn try_set_permits(&self, permits: i64) -> Result<bool> {
        let r: i64 = self
            .eval(
                &scripts::SEMAPHORE_TRY_SET,
                true,
                &[permits.to_string(), PUBLISH.into()],
            )
            .await?;
        Ok(r == 1)
    }

    /// [`try_set_permits`](Self::try_set_permits) with a time to live on the key.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn try_set_permits_with_ttl(&self, permits: i64, ttl: Duration) -> Result<bool> {
        let ttl_ms = lease_ms(&self.name, ttl)?;
        let r: i64 = self
            .eval(
                &scripts::SEMAPHORE_TRY_SET_TTL,
                true,
                &[permits.to_string(), PUBLISH.into(), ttl_ms.to_string()],
            )
            .await?;
        Ok(r == 1)
    }

    /// Adds `permits` (negative to remove; the count may go below zero).
    ///
    /// # Errors
    /// Redis errors.
    pub async fn add_permits(&self, permits: i64) -> Result<()> {
        let _: () = self
            .eval(
                &scripts::SEMAPHORE_ADD,
                true,
                &[permits.to_string(), PUBLISH.into()],
            )
            .await?;
        Ok(())
    }

    /// The current permit count (0 when the semaphore does not exist).
    ///
    /// # Errors
    /// Redis errors.
    pub async fn available_permits(&self) -> Result<i64> {
        let mut conn = self.client.connection();
        let v: Option<i64> = redis::cmd("GET")
            .arg(&self.name)
            .query_async(&mut conn)
            .await?;
        Ok(v.unwrap_or(0))
    }

    /// Takes every available permit; returns how many there were.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn drain_permits(&self) -> Result<i64> {
        let r: i64 = self.eval(&scripts::SEMAPHORE_DRAIN, false, &[]).await?;
        Ok(r)
    }

    /// One attempt at one permit.
    ///
    /// # Errors
    /// Redis errors (never turned into `false`).
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_acquire(&self) -> Result<bool> {
        self.try_acquire_many(1).await
    }

    /// One attempt at `permits` permits (all or none); `0` always succeeds.
    ///
    /// # Errors
    /// Redis errors.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_acquire_many(&self, permits: u32) -> Result<bool> {
        if permits == 0 {
            return Ok(true);
        }
        self.attempt(permits, None).await
    }

    /// Waits up to `wait` for one permit.
    ///
    /// # Errors
    /// Redis errors.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_acquire_for(&self, wait: Duration) -> Result<bool> {
        self.try_acquire_many_for(1, wait).await
    }

    /// Waits up to `wait` for `permits` permits. Dropping the future cancels the wait and never
    /// keeps permits.
    ///
    /// # Errors
    /// Redis errors.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_acquire_many_for(&self, permits: u32, wait: Duration) -> Result<bool> {
        if permits == 0 {
            return Ok(true);
        }
        self.acquire_inner(permits, deadline_after(Instant::now(), wait))
            .await
    }

    /// Waits as long as needed for `permits` permits and returns them as a
    /// [`SemaphorePermit`], given back when it is dropped (also when the task holding it
    /// panics), as `tokio::sync::Semaphore::acquire_many` returns a permit guard.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn acquire_permit(&self, permits: u32) -> Result<SemaphorePermit> {
        self.acquire_many(permits).await?;
        Ok(SemaphorePermit::new(self.clone(), permits))
    }

    /// [`try_acquire_many_for`](Self::try_acquire_many_for) returning a [`SemaphorePermit`]
    /// when acquired.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn try_acquire_permit_for(
        &self,
        permits: u32,
        wait: Duration,
    ) -> Result<Option<SemaphorePermit>> {
        Ok(self
            .try_acquire_many_for(permits, wait)
            .await?
            .then(|| SemaphorePermit::new(self.clone(), permits)))
    }

    /// Waits as long as needed for one permit.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn acquire(&self) -> Result<()> {
        self.acquire_many(1).await
    }

    /// Waits as long as needed for `permits` permits. Dropping the future cancels the wait.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn acquire_many(&self, permits: u32) -> Result<()> {
        if permits == 0 {
            return Ok(());
        }
        self.acquire_inner(permits, None).await.map(|_| ())
    }

    /// Returns one permit and wakes waiters.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn release(&self) -> Result<()> {
        self.release_many(1).await
    }

    /// Returns `permits` permits (creating the semaphore if needed) and wakes waiters.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn release_many(&self, permits: u32) -> Result<()> {
        self.release_until(permits, None).await
    }

    /// [`release_many`](Self::release_many) whose `WAIT` ends by `deadline` (the rollback of
    /// an acquisition with a wait).
    async fn release_until(&self, permits: u32, deadline: Option<Instant>) -> Result<()> {
        if permits == 0 {
            return Ok(());
        }
        let _: () = self
            .eval_until(
                &scripts::SEMAPHORE_RELEASE,
                true,
                &[permits.to_string(), PUBLISH.into()],
                deadline,
            )
            .await?;
        Metrics::inc(&self.client.inner.metrics.released);
        Ok(())
    }

    /// Returns `permits` permits only when the semaphore exists; `false` otherwise.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn release_if_exists(&self, permits: u32) -> Result<bool> {
        if permits == 0 {
            return Ok(false);
        }
        let r: i64 = self
            .eval(
                &scripts::SEMAPHORE_RELEASE_IF_EXISTS,
                true,
                &[permits.to_string(), PUBLISH.into()],
            )
            .await?;
        Ok(r == 1)
    }

    /// Deletes the semaphore; `true` when it existed.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn delete(&self) -> Result<bool> {
        let mut conn = self.client.connection();
        let n: i64 = redis::cmd("DEL")
            .arg(&self.name)
            .query_async(&mut conn)
            .await?;
        Ok(n == 1)
    }

    /// Remaining time to live of the key, `None` without one (or when missing).
    ///
    /// # Errors
    /// Redis errors.
    pub async fn remaining_ttl(&self) -> Result<Option<Duration>> {
        let mut conn = self.client.connection();
        let v: i64 = redis::cmd("PTTL")
            .arg(&self.name)
            .query_async(&mut conn)
            .await?;
        Ok((v >= 0).then(|| Duration::from_millis(v as u64)))
    }

    /// One acquire script, safe to cancel: it runs in a spawned task, and permits taken after
    /// the caller went away are released again (Redisson: `if (!result.complete(..))
    /// releaseAsync(permits)`). With replicas, an acquisition no replica acknowledged is given
    /// back and reported, as Redisson's `handleNoSync`.
    /// Its replica sync, the rollback's included, ends by `deadline` (see
    /// `Client::eval_write_until`).
    async fn attempt(&self, permits: u32, deadline: Option<Instant>) -> Result<bool> {
        self.client.check_alive()?;
        let this = self.clone();
        let task = |tx: oneshot::Sender<Result<bool>>| async move {
            let res = this.attempt_once(permits, deadline).await;
            if let Err(Ok(true)) = tx.send(res) {
                tracing::debug!(name = %this.name, "permits acquired after cancellation; releasing");
                let _ = this.release_many(permits).await;
            }
        };
        self.client.answered(&self.name, "acquire", task).await
    }

    async fn attempt_once(&self, permits: u32, deadline: Option<Instant>) -> Result<bool> {
        let (r, synced): (i64, _) = self
            .eval_synced(
                &scripts::SEMAPHORE_TRY_ACQUIRE,
                false,
                &[permits.to_string()],
                deadline,
            )
            .await?;
        if r != 1 {
            return Ok(false);
        }
        // Permits taken but not confirmed by a replica (or whose WAIT failed) are given back
        // before the error: a failed call never keeps permits.
        match synced {
            Ok(true) => {}
            Ok(false) => {
                let _ = self.release_until(permits, deadline).await;
                return Err(LockError::ReplicasNotSynced {
                    name: self.name.clone(),
                });
            }
            Err(e) => {
                tracing::warn!(name = %self.name, error = %e, "WAIT failed after taking permits; giving them back");
                let _ = self.release_until(permits, deadline).await;
                return Err(e);
            }
        }
        Metrics::inc(&self.client.inner.metrics.acquired);
        Ok(true)
    }

    async fn acquire_inner(&self, permits: u32, deadline: Option<Instant>) -> Result<bool> {
        let on = WaitOn {
            client: &self.client,
            channel: &self.channel(),
            wake: Wake::Count,
            deadline,
        };
        // Every release publishes; without a message the watchdog timeout caps a wait, in case
        // the pub/sub connection dropped one.
        let r = wait_until(on, move || async move {
            Ok(if self.attempt(permits, deadline).await? {
                Step::Done(())
            } else {
                Step::Again(None)
            })
        })
        .await;
        count_failure(&self.client, &r);
        Ok(r?.is_some())
    }
}

/// Permits of a [`Semaphore`] held by this code: given back when dropped (the release is
/// spawned on the client's runtime, best effort: a failed release is logged), or by
/// [`release`](Self::release), which reports the outcome.
#[derive(Debug)]
#[must_use = "dropping a SemaphorePermit gives its permits back"]
pub struct SemaphorePermit {
    semaphore: Semaphore,
    permits: u32,
    armed: bool,
}

impl SemaphorePermit {
    fn new(semaphore: Semaphore, permits: u32) -> Self {
        SemaphorePermit {
            semaphore,
            permits,
            armed: true,
        }
    }

    /// How many permits this holds.
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// Gives the permits back now.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn release(mut self) -> Result<()> {
        self.armed = false;
        self.semaphore.release_many(self.permits).await
    }

    /// Keeps the permits taken: nothing is given back on drop.
    pub fn forget(mut self) {
        self.armed = false;
    }
}

impl Drop for SemaphorePermit {
    fn drop(&mut self) {
        if !self.armed || self.permits == 0 {
            return;
        }
        let semaphore = self.semaphore.clone();
        let permits = self.permits;
        // On the client's runtime: the current one may be ending (a panicking task's).
        semaphore.client.inner.runtime.clone().spawn(async move {
            if let Err(e) = semaphore.release_many(permits).await {
                tracing::debug!(name = %semaphore.name, error = %e, "permit release on drop");
            }
        });
    }
}
