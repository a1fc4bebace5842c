//! [`PermitExpirableSemaphore`] (Redisson's `RPermitExpirableSemaphore`): a semaphore whose
//! every acquired permit has an id and, optionally, a lease after which it returns to the pool
//! by itself (a crashed holder does not leak permits).
//!
//! Layout, as Redisson's: string `name` = available permits; sorted set `{name}:timeout` of the
//! acquired permits, member = the id's 16 raw bytes, score = the lease's end (Unix ms, or
//! 922337203685477 for "no lease"); channel `redisson_sc:{name}`. Every script first returns
//! the permits whose lease ended to the pool. Ids are the 32 hex chars of those bytes, as
//! Redisson hands them out, so a Java client can release a permit taken here and vice versa.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::client::{deadline_after, lease_ms, prefix_name, suffix_name, Client, Metrics};
use crate::error::{LockError, Result};
use crate::hold::note_unsynced;
use crate::scripts;
use crate::wait::{count_failure, wait_until, Step, WaitOn};
use crate::waiter::Wake;

const PUBLISH: &str = "PUBLISH";
/// Redisson's `nonExpirableTimeout`: the score of a permit without a lease.
const NON_EXPIRABLE_TIMEOUT: u64 = 922_337_203_685_477;

/// Redisson's `RPermitExpirableSemaphore`: permits with ids and optional leases.
///
/// Unlike [`Semaphore`](crate::Semaphore), a permit is released by its id, once; a lease
/// returns it to the pool when it runs out (the holder's later release then fails).
///
/// # Examples
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let server = locksmith_server::Server::builder().start().await?;
/// # let url = server.url();
/// use std::time::Duration;
/// use locksmith_lock::Client;
///
/// let client = Client::open(&url).await?;
/// let slots = client.permit_expirable_semaphore("exports");
/// slots.try_set_permits(2).await?;
/// // A permit that returns to the pool by itself after 30 s if never released.
/// let id = slots.acquire(Some(Duration::from_secs(30))).await?;
/// assert_eq!(slots.available_permits().await?, 1);
/// slots.release(&id).await?;
/// assert_eq!(slots.available_permits().await?, 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PermitExpirableSemaphore {
    client: Client,
    name: String,
}

impl Client {
    /// A [`PermitExpirableSemaphore`] on `name`.
    pub fn permit_expirable_semaphore(&self, name: &str) -> PermitExpirableSemaphore {
        PermitExpirableSemaphore {
            client: self.clone(),
            name: name.to_owned(),
        }
    }
}

/// What one acquire script answered.
enum Attempt {
    Acquired(Vec<String>),
    /// Not enough permits; the nearest lease end (Unix ms) when a leased permit will return.
    Busy(Option<u64>),
}

/// The 16 bytes of a 32-hex-char permit id.
fn id_bytes(name: &str, id: &str) -> Result<Vec<u8>> {
    let invalid = || LockError::Invalid {
        name: name.to_owned(),
        detail: format!("permit id {id:?} is not 32 hex characters"),
    };
    if id.len() != 32 || !id.is_ascii() {
        return Err(invalid());
    }
    id.as_bytes()
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|s| u8::from_str_radix(s, 16).ok())
                .ok_or_else(invalid)
        })
        .collect()
}

impl PermitExpirableSemaphore {
    /// The key holding the available permits.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The sorted set of acquired permits (`{name}:timeout`).
    pub fn timeout_name(&self) -> String {
        suffix_name(&self.name, "timeout")
    }

    /// The channel releases publish on (`redisson_sc:{name}`).
    pub fn channel(&self) -> String {
        prefix_name("redisson_sc", &self.name)
    }

    /// `(name, timeout, channel)`: the key order of most scripts.
    fn keys_ntc(&self) -> [String; 3] {
        [self.name.clone(), self.timeout_name(), self.channel()]
    }

    /// `(name, channel, timeout)`: the key order of the release and set scripts.
    fn keys_nct(&self) -> [String; 3] {
        [self.name.clone(), self.channel(), self.timeout_name()]
    }

    async fn eval<T: redis::FromRedisValue>(
        &self,
        script: &'static redis::Script,
        keys: &[String],
        args: Vec<Vec<u8>>,
    ) -> Result<T> {
        self.client.eval_read(script, keys, &args).await
    }

    /// A script that writes, with its `WAIT` when replicas are synced, that `WAIT` ending by
    /// `deadline`; whether it is synced comes back beside the answer (see
    /// `Client::eval_write_until`).
    async fn eval_synced<T: redis::FromRedisValue>(
        &self,
        script: &'static redis::Script,
        keys: &[String],
        args: Vec<Vec<u8>>,
        deadline: Option<Instant>,
    ) -> Result<(T, Result<bool>)> {
        self.client
            .eval_write_until(script, keys, &args, deadline)
            .await
    }

    /// A script that writes, whose sync is only logged: the write stands on the master, so
    /// the caller gets no error it might retry on (a retried release would release twice).
    async fn write<T: redis::FromRedisValue>(
        &self,
        script: &'static redis::Script,
        keys: &[String],
        args: Vec<Vec<u8>>,
    ) -> Result<T> {
        self.write_until(script, keys, args, None).await
    }

    /// [`write`](Self::write) whose `WAIT` ends by `deadline`.
    async fn write_until<T: redis::FromRedisValue>(
        &self,
        script: &'static redis::Script,
        keys: &[String],
        args: Vec<Vec<u8>>,
        deadline: Option<Instant>,
    ) -> Result<T> {
        let (v, synced) = self.eval_synced(script, keys, args, deadline).await?;
        note_unsynced(&self.name, "permit semaphore write", synced);
        Ok(v)
    }

    fn now(&self) -> Vec<u8> {
        self.client.now_ms().to_string().into_bytes()
    }

    /// The permit's end as a wall-clock millisecond; [`LockError::Invalid`] for a lease longer
    /// than [`MAX_LEASE`](crate::MAX_LEASE), before anything is written.
    fn timeout_date(&self, lease: Option<Duration>) -> Result<u64> {
        match lease {
            Some(l) => Ok(self
                .client
                .now_ms()
                .saturating_add(lease_ms(&self.name, l)?)),
            None => Ok(NON_EXPIRABLE_TIMEOUT),
        }
    }

    /// A query script that also returns expired permits: `(now, publish)` arguments.
    async fn count(&self, script: &'static redis::Script) -> Result<i64> {
        self.eval(script, &self.keys_ntc(), vec![self.now(), PUBLISH.into()])
            .await
    }

    /// Sets the number of permits when the semaphore does not exist yet; `false` when it does.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn try_set_permits(&self, permits: i64) -> Result<bool> {
        let r: i64 = self
            .write(
                &scripts::PES_TRY_SET_PERMITS,
                &[self.name.clone(), self.channel()],
                vec![permits.to_string().into_bytes(), PUBLISH.into()],
            )
            .await?;
        Ok(r == 1)
    }

    /// Sets the total number of permits (available + acquired) to `permits`, adjusting the
    /// available count by the difference.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn set_permits(&self, permits: i64) -> Result<()> {
        let _: () = self
            .write(
                &scripts::PES_SET_PERMITS,
                &self.keys_nct(),
                vec![permits.to_string().into_bytes(), PUBLISH.into()],
            )
            .await?;
        Ok(())
    }

    /// Adds `permits` to the available count (negative to remove).
    ///
    /// # Errors
    /// Redis errors.
    pub async fn add_permits(&self, permits: i64) -> Result<()> {
        let _: () = self
            .write(
                &scripts::PES_ADD_PERMITS,
                &[self.name.clone(), self.channel()],
                vec![permits.to_string().into_bytes(), PUBLISH.into()],
            )
            .await?;
        Ok(())
    }

    /// Permits available now (expired leases returned first).
    ///
    /// # Errors
    /// Redis errors.
    pub async fn available_permits(&self) -> Result<i64> {
        self.count(&scripts::PES_AVAILABLE).await
    }

    /// Permits acquired and not expired.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn acquired_permits(&self) -> Result<i64> {
        self.count(&scripts::PES_ACQUIRED).await
    }

    /// All permits: available + acquired (0 when the semaphore does not exist).
    ///
    /// # Errors
    /// Redis errors.
    pub async fn permits(&self) -> Result<i64> {
        self.count(&scripts::PES_PERMITS).await
    }

    /// One attempt at one permit without a lease; its id when acquired.
    ///
    /// # Errors
    /// Redis errors (never turned into `None`).
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_acquire(&self) -> Result<Option<String>> {
        Ok(self.try_acquire_many(1, None).await?.pop())
    }

    /// One attempt at `permits` permits (all or none), each with `lease` (`None`: until
    /// released); their ids, empty when not acquired.
    ///
    /// # Errors
    /// Redis errors.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_acquire_many(
        &self,
        permits: u32,
        lease: Option<Duration>,
    ) -> Result<Vec<String>> {
        match self.attempt(permits, lease, None).await? {
            Attempt::Acquired(ids) => Ok(ids),
            Attempt::Busy(_) => Ok(Vec::new()),
        }
    }

    /// Waits up to `wait` for one permit with `lease`; its id when acquired.
    ///
    /// # Errors
    /// Redis errors.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_acquire_for(
        &self,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<String>> {
        Ok(self
            .acquire_inner(1, lease, deadline_after(Instant::now(), wait))
            .await?
            .pop())
    }

    /// Waits up to `wait` for `permits` permits with `lease`; empty when the wait ran out.
    ///
    /// # Errors
    /// Redis errors.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_acquire_many_for(
        &self,
        permits: u32,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Vec<String>> {
        self.acquire_inner(permits, lease, deadline_after(Instant::now(), wait))
            .await
    }

    /// Waits as long as needed for one permit with `lease`; its id. Dropping the future
    /// cancels the wait and never keeps a permit.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn acquire(&self, lease: Option<Duration>) -> Result<String> {
        self.acquire_inner(1, lease, None)
            .await?
            .pop()
            .ok_or_else(|| LockError::unexpected("permit acquire", "no id"))
    }

    /// Waits as long as needed for `permits` permits with `lease`; their ids.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn acquire_many(&self, permits: u32, lease: Option<Duration>) -> Result<Vec<String>> {
        self.acquire_inner(permits, lease, None).await
    }

    /// Releases the permit `id`; `false` when it was unknown, already released, or its lease
    /// had run out (a permit whose lease ended but was not yet returned is returned now, and
    /// still answers `false`, as Redisson's).
    ///
    /// # Errors
    /// [`LockError::Invalid`] for an id that is not 32 hex characters; Redis errors.
    pub async fn try_release(&self, id: &str) -> Result<bool> {
        let bytes = id_bytes(&self.name, id)?;
        let r: i64 = self
            .write(
                &scripts::PES_TRY_RELEASE,
                &self.keys_nct(),
                vec![bytes, b"1".to_vec(), self.now(), PUBLISH.into()],
            )
            .await?;
        if r == 1 {
            Metrics::inc(&self.client.inner.metrics.released);
        }
        Ok(r == 1)
    }

    /// Releases the permit `id`.
    ///
    /// # Errors
    /// [`LockError::Invalid`] ("has already been released or doesn't exist", as Redisson's
    /// IllegalArgumentException) when [`try_release`](Self::try_release) answers `false`;
    /// Redis errors.
    pub async fn release(&self, id: &str) -> Result<()> {
        if self.try_release(id).await? {
            return Ok(());
        }
        Err(LockError::Invalid {
            name: self.name.clone(),
            detail: format!("Permit with id {id} has already been released or doesn't exist"),
        })
    }

    /// Releases every permit of `ids` when all are held; how many were released (0 when any
    /// was unknown or expired: then none is).
    ///
    /// # Errors
    /// [`LockError::Invalid`] for an empty list or a malformed id; Redis errors.
    pub async fn try_release_many(&self, ids: &[String]) -> Result<u64> {
        self.try_release_many_until(ids, None).await
    }

    /// [`try_release_many`](Self::try_release_many) whose `WAIT` ends by `deadline` (the
    /// rollback of an acquisition with a wait).
    async fn try_release_many_until(
        &self,
        ids: &[String],
        deadline: Option<Instant>,
    ) -> Result<u64> {
        if ids.is_empty() {
            return Err(LockError::Invalid {
                name: self.name.clone(),
                detail: "permitIds can't be null or empty".into(),
            });
        }
        let mut args = vec![
            ids.len().to_string().into_bytes(),
            self.now(),
            PUBLISH.into(),
        ];
        for id in ids {
            args.push(id_bytes(&self.name, id)?);
        }
        let r: u64 = self
            .write_until(
                &scripts::PES_TRY_RELEASE_MANY,
                &self.keys_nct(),
                args,
                deadline,
            )
            .await?;
        Ok(r)
    }

    /// Releases every permit of `ids`.
    ///
    /// # Errors
    /// [`LockError::Invalid`] unless all of them were released; Redis errors.
    pub async fn release_many(&self, ids: &[String]) -> Result<()> {
        if self.try_release_many(ids).await? == ids.len() as u64 {
            return Ok(());
        }
        Err(LockError::Invalid {
            name: self.name.clone(),
            detail: format!("Permits with ids {ids:?} have already been released or don't exist"),
        })
    }

    /// Gives the held permit `id` a new lease from now (`None`: no lease); `false` when it is
    /// not held.
    ///
    /// # Errors
    /// Redis errors; a malformed id.
    pub async fn update_lease_time(&self, id: &str, lease: Option<Duration>) -> Result<bool> {
        let bytes = id_bytes(&self.name, id)?;
        let date = self.timeout_date(lease)?.to_string().into_bytes();
        let r: i64 = self
            .write(
                &scripts::PES_UPDATE_LEASE,
                &self.keys_ntc(),
                vec![bytes, date, self.now(), PUBLISH.into()],
            )
            .await?;
        Ok(r == 1)
    }

    /// The lease left on the held permit `id`: `None` when it has no lease.
    ///
    /// # Errors
    /// [`LockError::Invalid`] when the permit is not held (Redisson's "has already been
    /// released or doesn't exist"); Redis errors.
    pub async fn lease_time(&self, id: &str) -> Result<Option<Duration>> {
        let bytes = id_bytes(&self.name, id)?;
        let r: i64 = self
            .eval(
                &scripts::PES_LEASE_TIME,
                &self.keys_ntc(),
                vec![
                    bytes,
                    NON_EXPIRABLE_TIMEOUT.to_string().into_bytes(),
                    self.now(),
                    PUBLISH.into(),
                ],
            )
            .await?;
        match r {
            -1 => Ok(None),
            // Redisson answers 0 for an unknown id; a lease ending this very millisecond is
            // as good as gone.
            n if n > 0 => Ok(Some(Duration::from_millis(n as u64))),
            _ => Err(LockError::Invalid {
                name: self.name.clone(),
                detail: format!("Permit with id {id} has already been released or doesn't exist"),
            }),
        }
    }

    /// Deletes the semaphore (both keys); `true` when anything existed.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn delete(&self) -> Result<bool> {
        let mut conn = self.client.connection();
        let n: i64 = redis::cmd("DEL")
            .arg(&self.name)
            .arg(self.timeout_name())
            .query_async(&mut conn)
            .await?;
        Ok(n > 0)
    }

    /// One acquire script, safe to cancel: it runs in a spawned task, and permits taken after
    /// the caller went away are released again (Redisson releases them when the future was
    /// cancelled). With replicas, an acquisition no replica acknowledged is given back and
    /// reported (Redisson's `handleNoSync`).
    ///
    /// Its replica sync, the rollback's included, ends by `deadline` (see
    /// `Client::eval_write_until`).
    async fn attempt(
        &self,
        permits: u32,
        lease: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Result<Attempt> {
        if permits == 0 {
            return Ok(Attempt::Acquired(Vec::new()));
        }
        self.client.check_alive()?;
        let this = self.clone();
        let task = |tx: oneshot::Sender<Result<Attempt>>| async move {
            let res = this.attempt_once(permits, lease, deadline).await;
            if let Err(Ok(Attempt::Acquired(ids))) = tx.send(res) {
                tracing::debug!(name = %this.name, "permits acquired after cancellation; releasing");
                let _ = this.try_release_many(&ids).await;
            }
        };
        self.client.answered(&self.name, "acquire", task).await
    }

    async fn attempt_once(
        &self,
        permits: u32,
        lease: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Result<Attempt> {
        let ids: Vec<String> = (0..permits).map(|_| self.client.request_id()).collect();
        let mut args = vec![
            permits.to_string().into_bytes(),
            self.timeout_date(lease)?.to_string().into_bytes(),
            self.now(),
            NON_EXPIRABLE_TIMEOUT.to_string().into_bytes(),
            PUBLISH.into(),
        ];
        for id in &ids {
            args.push(id_bytes(&self.name, id)?);
        }
        let (r, synced): (Option<String>, _) = self
            .eval_synced(&scripts::PES_TRY_ACQUIRE, &self.keys_ntc(), args, deadline)
            .await?;
        match r.as_deref() {
            Some("OK") => {
                // Permits taken but not confirmed by a replica (or whose WAIT failed) are given
                // back before the error: a failed call never keeps permits.
                match synced {
                    Ok(true) => {}
                    Ok(false) => {
                        let _ = self.try_release_many_until(&ids, deadline).await;
                        return Err(LockError::ReplicasNotSynced {
                            name: self.name.clone(),
                        });
                    }
                    Err(e) => {
                        tracing::warn!(name = %self.name, error = %e, "WAIT failed after taking permits; giving them back");
                        let _ = self.try_release_many_until(&ids, deadline).await;
                        return Err(e);
                    }
                }
                Metrics::inc(&self.client.inner.metrics.acquired);
                Ok(Attempt::Acquired(ids))
            }
            None => Ok(Attempt::Busy(None)),
            Some(other) => match other.strip_prefix(':').map(str::parse::<f64>) {
                // The score comes back as Lua's tostring of a number.
                Some(Ok(at)) if at.is_finite() && at >= 0.0 => Ok(Attempt::Busy(Some(at as u64))),
                _ => Err(LockError::unexpected("permit acquire", other)),
            },
        }
    }

    async fn acquire_inner(
        &self,
        permits: u32,
        lease: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Result<Vec<String>> {
        let on = WaitOn {
            client: &self.client,
            channel: &self.channel(),
            wake: Wake::Count,
            deadline,
        };
        // A leased permit returns to the pool without a message: look again when the nearest
        // lease ends (the watchdog timeout caps a wait, in case a message was dropped).
        let r = wait_until(on, move || async move {
            Ok(match self.attempt(permits, lease, deadline).await? {
                Attempt::Acquired(ids) => Step::Done(ids),
                Attempt::Busy(nearest) => {
                    let cap = self.client.options().watchdog_timeout;
                    Step::Again(Some(nearest.map_or(cap, |at| {
                        let until = at.saturating_sub(self.client.now_ms());
                        cap.min(Duration::from_millis(until.max(1)))
                    })))
                }
            })
        })
        .await;
        count_failure(&self.client, &r);
        Ok(r?.unwrap_or_default())
    }
}

impl PermitExpirableSemaphore {
    /// Waits as long as needed for `permits` permits with `lease` and returns them as an
    /// [`ExpirablePermit`], released when it is dropped (also when the task holding it
    /// panics), as [`Semaphore::acquire_permit`](crate::Semaphore::acquire_permit) does.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn acquire_permit(
        &self,
        permits: u32,
        lease: Option<Duration>,
    ) -> Result<ExpirablePermit> {
        let ids = self.acquire_many(permits, lease).await?;
        Ok(ExpirablePermit::new(self.clone(), ids))
    }

    /// [`try_acquire_many_for`](Self::try_acquire_many_for) returning an [`ExpirablePermit`]
    /// when acquired.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn try_acquire_permit_for(
        &self,
        permits: u32,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<ExpirablePermit>> {
        let ids = self.try_acquire_many_for(permits, wait, lease).await?;
        Ok((permits == 0 || !ids.is_empty()).then(|| ExpirablePermit::new(self.clone(), ids)))
    }
}

/// Permits of a [`PermitExpirableSemaphore`] held by this code: released when dropped (on the
/// client's runtime, best effort: a permit whose lease ran out meanwhile is already back, and
/// a failed release is logged), or by [`release`](Self::release), which reports the outcome.
#[derive(Debug)]
#[must_use = "dropping an ExpirablePermit releases its permits"]
pub struct ExpirablePermit {
    semaphore: PermitExpirableSemaphore,
    ids: Vec<String>,
    armed: bool,
}

impl ExpirablePermit {
    fn new(semaphore: PermitExpirableSemaphore, ids: Vec<String>) -> Self {
        ExpirablePermit {
            semaphore,
            ids,
            armed: true,
        }
    }

    /// The ids of the permits held.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    /// Releases the permits now.
    ///
    /// # Errors
    /// [`LockError::Invalid`] when any of them was no longer held (its lease ran out);
    /// Redis errors.
    pub async fn release(mut self) -> Result<()> {
        self.armed = false;
        if self.ids.is_empty() {
            return Ok(());
        }
        self.semaphore.release_many(&self.ids).await
    }

    /// Keeps the permits: nothing is released on drop (their ids stay valid until their
    /// lease, if any, runs out).
    pub fn forget(mut self) -> Vec<String> {
        self.armed = false;
        std::mem::take(&mut self.ids)
    }
}

impl Drop for ExpirablePermit {
    fn drop(&mut self) {
        if !self.armed || self.ids.is_empty() {
            return;
        }
        let semaphore = self.semaphore.clone();
        let ids = std::mem::take(&mut self.ids);
        // On the client's runtime: the current one may be ending (a panicking task's).
        semaphore.client.inner.runtime.clone().spawn(async move {
            // One at a time: a permit whose lease ran out must not keep the others.
            for id in &ids {
                if let Err(e) = semaphore.try_release(id).await {
                    tracing::debug!(name = %semaphore.name, error = %e, "permit release on drop");
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permit_ids_are_32_hex_chars_of_16_bytes() {
        let id = crate::entropy::Entropy::new(None).request_id();
        let bytes = id_bytes("s", &id).unwrap();
        assert_eq!(bytes.len(), 16);
        let back: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(back, id);
        assert!(id_bytes("s", "zz").is_err());
        assert!(id_bytes("s", &"g".repeat(32)).is_err());
        assert!(id_bytes("s", &"é".repeat(16)).is_err());
    }
}
