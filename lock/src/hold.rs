//! One hold of a lock, the machinery every Redisson-style lock kind shares (named `hold`, not
//! `core`, which would shadow the `core` crate): the acquire attempt (cancel-safe), the
//! wait loop on the unlock channel (or backoff for the spin lock), release with Redisson's
//! unlock latch, and the read-only queries.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::Script;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::client::{deadline_after, lease_ms, ms, prefix_name, suffix_name, Client, Metrics};
use crate::error::{LockError, Result};
use crate::guard::LockGuard;
use crate::options::Backoff;
use crate::owner::Owner;
use crate::scripts;
use crate::wait::{wait_until, Step, WaitOn};
use crate::waiter::Wake;
use crate::watchdog::{HoldMode, LostSignal, Renewal};

/// Redisson's `LockPubSub.UNLOCK_MESSAGE`.
const UNLOCK_MESSAGE: &str = "0";
/// Redisson's `LockPubSub.READ_UNLOCK_MESSAGE` (wake all).
const READ_UNLOCK_MESSAGE: &str = "1";
const PUBLISH: &str = "PUBLISH";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Plain,
    NonReentrant,
    Fenced,
    Spin,
    Fair,
    Read,
    Write,
}

/// Outcome of one acquire script.
#[derive(Debug)]
pub(crate) enum Attempt {
    /// Acquired; the fencing token when the kind has one.
    Acquired(Option<i64>),
    /// Held by someone else; the TTL the script returned, unless negative (no TTL).
    Busy(Option<Duration>),
}

impl Attempt {
    /// An acquire script's reply: nil when acquired, else the holder's PTTL. As in Redisson
    /// (`ttl >= 0` waits at most `ttl`, a negative one waits for the release message), a TTL of
    /// 0 means "look again at once": the lock expires this very millisecond (Redis 7.0's PTTL
    /// inside a script reads the clock anew, so it can say 0 for a key the script's frozen time
    /// still saw alive).
    fn from_ttl_reply(reply: Option<i64>) -> Attempt {
        match reply {
            None => Attempt::Acquired(None),
            Some(t) if t >= 0 => Attempt::Busy(Some(Duration::from_millis(t as u64))),
            Some(_) => Attempt::Busy(None),
        }
    }
}

/// State shared by the copies of one lock handle (a handle's clones are new owners).
///
/// Dropping a handle does not stop the watchdog: as in Redisson, a hold taken through it is
/// renewed until it is unlocked (through any handle of the same owner), lost, or the client
/// shuts down, so `client.lock("x").lock().await?` holds "x" as long as
/// `redisson.getLock("x").lock()` does.
pub(crate) struct HandleState {
    /// Redisson's `internalLockLeaseTime`: the lease of the last acquisition, used by unlock's
    /// PEXPIRE when holds remain.
    last_lease_ms: AtomicU64,
}

/// `pub` (in this private module, so still unreachable from outside) only because the sealed
/// supertrait of `DistributedLock` hands it out; its fields stay crate-private.
#[derive(Clone)]
#[allow(unreachable_pub)]
pub struct Core {
    pub(crate) client: Client,
    pub(crate) name: String,
    pub(crate) owner: Owner,
    pub(crate) kind: Kind,
    /// The Redis field: `<client-id>:<owner-id>`, plus `:write` for the write lock.
    pub(crate) field: String,
    pub(crate) backoff: Backoff,
    state: Arc<HandleState>,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("field", &self.field)
            .finish()
    }
}

impl Core {
    pub(crate) fn new(client: &Client, name: &str, owner: Owner, kind: Kind) -> Core {
        let mut field = client.owner_field(&owner);
        if kind == Kind::Write {
            field.push_str(":write");
        }
        let state = Arc::new(HandleState {
            last_lease_ms: AtomicU64::new(ms(client.options().watchdog_timeout)),
        });
        Core {
            client: client.clone(),
            name: name.to_owned(),
            owner,
            kind,
            field,
            backoff: Backoff::default(),
            state,
        }
    }

    pub(crate) fn with_owner(&self, owner: Owner) -> Core {
        let mut c = Core::new(&self.client, &self.name, owner, self.kind);
        c.backoff = self.backoff.clone();
        c
    }

    /// The channel waiters subscribe to (the fair lock: one per waiter).
    pub(crate) fn channel(&self) -> String {
        match self.kind {
            Kind::Read | Kind::Write => prefix_name("redisson_rwlock", &self.name),
            _ => prefix_name("redisson_lock__channel", &self.name),
        }
    }

    fn waiter_channel(&self) -> String {
        match self.kind {
            Kind::Fair => format!("{}:{}", self.channel(), self.field),
            _ => self.channel(),
        }
    }

    fn queue_name(&self) -> String {
        prefix_name("redisson_lock_queue", &self.name)
    }

    fn timeout_set_name(&self) -> String {
        prefix_name("redisson_lock_timeout", &self.name)
    }

    pub(crate) fn token_name(&self) -> String {
        prefix_name("redisson_lock_token", &self.name)
    }

    /// `{name}:<field>:rwlock_timeout` (Redisson's `getReadWriteTimeoutNamePrefix`).
    fn read_timeout_prefix(&self) -> String {
        suffix_name(&self.name, &self.field) + ":rwlock_timeout"
    }

    /// `{name}` (Redisson's `getKeyPrefix`).
    fn read_key_prefix(&self) -> String {
        let p = self.read_timeout_prefix();
        let cut = format!(":{}", self.field);
        match p.find(&cut) {
            Some(i) => p[..i].to_owned(),
            None => p,
        }
    }

    fn unlock_latch_name(&self, request_id: &str) -> String {
        format!(
            "{}:{}",
            prefix_name("redisson_unlock_latch", &self.name),
            request_id
        )
    }

    fn renewal(&self) -> Renewal {
        match self.kind {
            Kind::Read => Renewal::Read {
                key_prefix: self.read_key_prefix(),
            },
            _ => Renewal::Hash,
        }
    }

    fn fair_wait_ms(&self, wait: Option<Duration>) -> u64 {
        match wait {
            Some(w) if !w.is_zero() => ms(w),
            _ => ms(self.client.options().fair_wait_timeout),
        }
    }

    // ---- scripts --------------------------------------------------------------------------

    async fn eval<T: redis::FromRedisValue>(
        &self,
        script: &'static Script,
        keys: &[String],
        args: &[String],
    ) -> Result<T> {
        self.client.eval_read(script, keys, args).await
    }

    /// A script that writes, with its `WAIT` when replicas are synced, that `WAIT` ending by
    /// `deadline` (see [`Client::eval_write_until`]).
    async fn eval_write<T: redis::FromRedisValue>(
        &self,
        script: &'static Script,
        keys: &[String],
        args: &[String],
        deadline: Option<Instant>,
    ) -> Result<(T, Result<bool>)> {
        self.client
            .eval_write_until(script, keys, args, deadline)
            .await
    }

    /// One acquire script, with replica sync: an acquisition no replica acknowledged is rolled
    /// back and retried, as Redisson does ("None of slaves were synced"); one whose `WAIT`
    /// failed (a dropped connection, a refusal) is rolled back and the error returned, so a
    /// failed call never leaves the lock held or a re-entry counted.
    ///
    /// Every `WAIT` of it, the rollbacks' included, ends by `deadline` (the acquisition's
    /// wait; see [`Client::eval_write_until`]), and no new attempt starts once it passed.
    async fn acquire_script(
        &self,
        lease: Duration,
        wait: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Result<Attempt> {
        let attempts = self.client.options().replica_sync_attempts.max(1);
        for _ in 0..attempts {
            let (a, synced) = self.acquire_script_once(lease, wait, deadline).await?;
            if let Attempt::Acquired(_) = a {
                match synced {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(name = %self.name, "no replica acknowledged the acquisition; rolling back");
                        let _ = self.release_script(deadline).await;
                        if deadline.is_some_and(|d| Instant::now() >= d) {
                            break;
                        }
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(name = %self.name, error = %e, "WAIT failed after the acquisition; rolling back");
                        let _ = self.release_script(deadline).await;
                        return Err(e);
                    }
                }
            }
            return Ok(a);
        }
        Err(LockError::ReplicasNotSynced {
            name: self.name.clone(),
        })
    }

    async fn acquire_script_once(
        &self,
        lease: Duration,
        wait: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Result<(Attempt, Result<bool>)> {
        let lease_ms = ms(lease).to_string();
        let name = self.name.clone();
        let field = self.field.clone();
        let ttl = Attempt::from_ttl_reply;
        match self.kind {
            Kind::Plain => {
                let (r, synced): (Option<i64>, _) = self
                    .eval_write(
                        &scripts::LOCK_ACQUIRE,
                        &[name],
                        &[lease_ms, field],
                        deadline,
                    )
                    .await?;
                Ok((ttl(r), synced))
            }
            Kind::Spin => {
                let (r, synced): (Option<i64>, _) = self
                    .eval_write(
                        &scripts::SPIN_ACQUIRE,
                        &[name],
                        &[lease_ms, field],
                        deadline,
                    )
                    .await?;
                Ok((ttl(r), synced))
            }
            Kind::NonReentrant => {
                let r = self
                    .eval_write(
                        &scripts::NON_REENTRANT_ACQUIRE,
                        &[name],
                        &[lease_ms, field, scripts::REENTRY_ERR.to_owned()],
                        deadline,
                    )
                    .await;
                let (r, synced): (Option<i64>, _) = match r {
                    // Redisson's IllegalMonitorStateException for a re-entry.
                    Err(LockError::Redis(e)) if e.to_string().contains(scripts::REENTRY_ERR) => {
                        return Err(LockError::Invalid {
                            name: self.name.clone(),
                            detail: format!(
                                "Lock '{}' is non-reentrant and is already held by owner {}",
                                self.name,
                                self.owner.id()
                            ),
                        })
                    }
                    other => other?,
                };
                Ok((ttl(r), synced))
            }
            Kind::Fenced => {
                let (r, synced): (Vec<i64>, _) = self
                    .eval_write(
                        &scripts::FENCED_ACQUIRE,
                        &[name, self.token_name()],
                        &[lease_ms, field],
                        deadline,
                    )
                    .await?;
                match r.as_slice() {
                    [-1, token] => Ok((Attempt::Acquired(Some(*token)), synced)),
                    [t, _] => Ok((ttl(Some(*t)), synced)),
                    other => Err(LockError::unexpected("fenced acquire", other)),
                }
            }
            Kind::Fair => {
                let keys = [name, self.queue_name(), self.timeout_set_name()];
                let now = self.client.now_ms().to_string();
                let wait_ms = self.fair_wait_ms(wait).to_string();
                if wait == Some(Duration::ZERO) {
                    // tryLock(): a single attempt that never joins the queue.
                    let (r, synced): (Option<i64>, _) = self
                        .eval_write(
                            &scripts::FAIR_TRY_ONCE,
                            &keys,
                            &[lease_ms, field, now, wait_ms],
                            deadline,
                        )
                        .await?;
                    let a = match r {
                        None => Attempt::Acquired(None),
                        Some(_) => Attempt::Busy(None),
                    };
                    Ok((a, synced))
                } else {
                    let (r, synced): (Option<i64>, _) = self
                        .eval_write(
                            &scripts::FAIR_ACQUIRE,
                            &keys,
                            &[lease_ms, field, wait_ms, now],
                            deadline,
                        )
                        .await?;
                    Ok((ttl(r), synced))
                }
            }
            Kind::Read => {
                let write_field = format!("{field}:write");
                let (r, synced): (Option<i64>, _) = self
                    .eval_write(
                        &scripts::READ_ACQUIRE,
                        &[name, self.read_timeout_prefix()],
                        &[lease_ms, field, write_field],
                        deadline,
                    )
                    .await?;
                Ok((ttl(r), synced))
            }
            Kind::Write => {
                let (r, synced): (Option<i64>, _) = self
                    .eval_write(
                        &scripts::WRITE_ACQUIRE,
                        &[name],
                        &[lease_ms, field],
                        deadline,
                    )
                    .await?;
                Ok((ttl(r), synced))
            }
        }
    }

    /// The release script; `None` means "not held by this owner"; with whether the release
    /// is synced to the replicas (see [`Client::eval_write`]). Retries on connection errors
    /// with the same request id, which the unlock latch makes idempotent. Its `WAIT` ends by
    /// `deadline` (an acquisition's rollback: the acquisition's wait).
    async fn release_script(
        &self,
        deadline: Option<Instant>,
    ) -> Result<(Option<i64>, Result<bool>)> {
        let rid = self.client.request_id();
        let latch = self.unlock_latch_name(&rid);
        // Holds that remain keep the watchdog's lease while one of them is renewed (a leased
        // re-entry being released under a `lock()`), else Redisson's internalLockLeaseTime.
        let registry = &self.client.inner.registry;
        let lease = if registry.renews_after_release(&self.name, &self.field) {
            ms(self.client.options().watchdog_timeout)
        } else {
            self.state.last_lease_ms.load(Ordering::Relaxed)
        }
        .to_string();
        let latch_ms = ms(self.client.options().unlock_latch_timeout).to_string();
        let name = self.name.clone();
        let field = self.field.clone();
        let mut tries = 0;
        let res = loop {
            tries += 1;
            let r: Result<(Option<i64>, Result<bool>)> = match self.kind {
                Kind::Plain | Kind::NonReentrant | Kind::Fenced => {
                    self.eval_write(
                        &scripts::LOCK_RELEASE,
                        &[name.clone(), self.channel(), latch.clone()],
                        &[
                            UNLOCK_MESSAGE.into(),
                            lease.clone(),
                            field.clone(),
                            PUBLISH.into(),
                            latch_ms.clone(),
                        ],
                        deadline,
                    )
                    .await
                }
                Kind::Spin => {
                    self.eval_write(
                        &scripts::SPIN_RELEASE,
                        &[name.clone(), latch.clone()],
                        &[lease.clone(), field.clone(), latch_ms.clone()],
                        deadline,
                    )
                    .await
                }
                Kind::Fair => {
                    self.eval_write(
                        &scripts::FAIR_RELEASE,
                        &[
                            name.clone(),
                            self.queue_name(),
                            self.timeout_set_name(),
                            self.channel(),
                            latch.clone(),
                        ],
                        &[
                            UNLOCK_MESSAGE.into(),
                            lease.clone(),
                            field.clone(),
                            self.client.now_ms().to_string(),
                            PUBLISH.into(),
                            latch_ms.clone(),
                        ],
                        deadline,
                    )
                    .await
                }
                Kind::Read => {
                    self.eval_write(
                        &scripts::READ_RELEASE,
                        &[
                            name.clone(),
                            self.channel(),
                            self.read_timeout_prefix(),
                            self.read_key_prefix(),
                            latch.clone(),
                        ],
                        &[
                            UNLOCK_MESSAGE.into(),
                            field.clone(),
                            PUBLISH.into(),
                            latch_ms.clone(),
                        ],
                        deadline,
                    )
                    .await
                }
                Kind::Write => {
                    self.eval_write(
                        &scripts::WRITE_RELEASE,
                        &[name.clone(), self.channel(), latch.clone()],
                        &[
                            READ_UNLOCK_MESSAGE.into(),
                            lease.clone(),
                            field.clone(),
                            PUBLISH.into(),
                            latch_ms.clone(),
                        ],
                        deadline,
                    )
                    .await
                }
            };
            match r {
                Err(e) if e.is_connection_error() && tries < 3 => continue,
                other => break other,
            }
        };
        {
            // Redisson deletes the latch once the answer is in; fire and forget.
            let mut conn = self.client.connection();
            self.client.inner.runtime.spawn(async move {
                let _: redis::RedisResult<i64> =
                    redis::cmd("DEL").arg(latch).query_async(&mut conn).await;
            });
        }
        res
    }

    async fn acquire_failed(&self, wait: Option<Duration>) -> Result<()> {
        if self.kind != Kind::Fair {
            return Ok(());
        }
        let _: () = self
            .eval(
                &scripts::FAIR_ACQUIRE_FAILED,
                &[self.queue_name(), self.timeout_set_name()],
                &[self.field.clone(), self.fair_wait_ms(wait).to_string()],
            )
            .await?;
        Ok(())
    }

    // ---- acquire --------------------------------------------------------------------------

    /// Records the hold taken by an acquire script sent at `sent`.
    fn register(&self, lease: Option<Duration>, sent: Instant) {
        let mode = match lease {
            Some(l) => HoldMode::Lease(l),
            None => HoldMode::Watchdog(self.client.options().watchdog_timeout),
        };
        self.client.inner.registry.register(
            &self.client,
            &self.name,
            &self.field,
            self.renewal(),
            mode,
            sent,
        );
    }

    /// One attempt, safe to cancel: the script runs in a spawned task; if the caller is gone
    /// when it finishes and it acquired, the task releases the hold again (Redisson's
    /// testLockIsNotRenewedAfterInterruptedTryLock).
    /// Its replica sync ends by `deadline` (see [`Core::acquire_script`]).
    async fn attempt(
        &self,
        lease: Option<Duration>,
        wait: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Result<Attempt> {
        self.client.check_alive()?;
        let core = self.clone();
        let task = |tx: oneshot::Sender<Result<Attempt>>| async move {
            let eff = lease.unwrap_or(core.client.options().watchdog_timeout);
            let sent = Instant::now();
            let res = core.acquire_script(eff, wait, deadline).await;
            if let Ok(Attempt::Acquired(_)) = &res {
                core.state.last_lease_ms.store(ms(eff), Ordering::Relaxed);
                core.register(lease, sent);
                Metrics::inc(&core.client.inner.metrics.acquired);
            }
            if let Err(Ok(Attempt::Acquired(_))) = tx.send(res) {
                tracing::debug!(name = %core.name, "acquisition completed after cancellation; releasing");
                let _ = core.release().await;
            }
        };
        self.client.answered(&self.name, "acquire", task).await
    }

    /// Acquires, waiting up to `wait` (`None`: forever). `Ok(None)`: not acquired in time.
    pub(crate) async fn acquire(
        &self,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<Option<i64>>> {
        use tracing::Instrument;
        if let Some(l) = lease {
            lease_ms(&self.name, l)?;
        }
        let span = tracing::debug_span!("acquire", name = %self.name, owner = %self.field, kind = ?self.kind);
        self.acquire_inner(wait, lease).instrument(span).await
    }

    async fn acquire_inner(
        &self,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<Option<i64>>> {
        let start = Instant::now();
        let deadline = wait.and_then(|w| deadline_after(start, w));
        // A fair waiter joins the queue on its first attempt; leave it again if this future is
        // dropped or fails before acquiring, so an abandoned waiter does not block the queue.
        let mut guard = QueueGuard {
            core: (self.kind == Kind::Fair && wait != Some(Duration::ZERO)).then(|| self.clone()),
            wait,
        };
        let acquired = if self.kind == Kind::Spin {
            self.spin(deadline, wait, lease).await
        } else {
            let on = WaitOn {
                client: &self.client,
                channel: &self.waiter_channel(),
                wake: Wake::Lock,
                deadline,
            };
            // A busy lock is looked at again when a release message comes, or at the latest
            // when its TTL ends (a crashed holder publishes nothing).
            wait_until(on, move || async move {
                Ok(match self.attempt(lease, wait, deadline).await? {
                    Attempt::Acquired(t) => Step::Done(t),
                    Attempt::Busy(ttl) => Step::Again(ttl),
                })
            })
            .await
        };
        match acquired? {
            Some(t) => {
                guard.core = None;
                tracing::debug!(waited_ms = start.elapsed().as_millis() as u64, "acquired");
                Ok(Some(t))
            }
            None => {
                guard.leave(self).await?;
                Metrics::inc(&self.client.inner.metrics.acquire_failed);
                tracing::debug!("gave up waiting");
                Ok(None)
            }
        }
    }

    /// The spin lock's wait: an attempt, then attempts after a back-off each (no channel:
    /// its release publishes nothing), until one succeeds or the deadline passed (`None`).
    async fn spin(
        &self,
        deadline: Option<Instant>,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<Option<i64>>> {
        if let Attempt::Acquired(t) = self.attempt(lease, wait, deadline).await? {
            return Ok(Some(t));
        }
        let mut n = 0u32;
        loop {
            let mut d = self.backoff.delay(n);
            if !self.backoff.jitter.is_zero() {
                let j = self
                    .client
                    .random_range(0..=self.backoff.jitter.as_millis() as u64);
                d += Duration::from_millis(j);
            }
            if let Some(dl) = deadline {
                let rem = dl.saturating_duration_since(Instant::now());
                if rem.is_zero() {
                    return Ok(None);
                }
                d = d.min(rem);
            }
            Metrics::inc(&self.client.inner.metrics.waits);
            tokio::time::sleep(d).await;
            n = n.saturating_add(1);
            if let Attempt::Acquired(t) = self.attempt(lease, wait, deadline).await? {
                return Ok(Some(t));
            }
        }
    }

    // ---- release and queries ----------------------------------------------------------------

    /// Releases one hold. The work runs in a task of its own, so a caller that stops waiting
    /// (a dropped future, a timeout) does not leave it half done, and the watchdog's hold is
    /// dropped whatever the script answered or failed with, as Redisson cancels renewal
    /// whatever the unlock's outcome (after its issues #1602 and #1966): a failed release
    /// leaves the key to expire after its lease instead of renewing it forever.
    pub(crate) async fn release(&self) -> Result<()> {
        let core = self.clone();
        self.client
            .inner
            .runtime
            .spawn(async move { core.release_now().await })
            .await
            .map_err(|e| LockError::from_join(&self.name, "release", Some(e)))?
    }

    async fn release_now(&self) -> Result<()> {
        // A hold the library saw lost (its lease ran out, a renewal found it gone) is not ours
        // any more, whatever a kind's script answers (the fair lock's answers "released" for a
        // key that expired): every kind then reports NotOwner, as `Lock` always did.
        let lost = self.client.inner.registry.is_lost(&self.name, &self.field);
        // Redisson's fair release answers 1 ("released") for a missing key, so its answer
        // cannot tell an unlock by an owner that never held the lock: the registry can.
        let never_held =
            self.kind == Kind::Fair && !self.client.inner.registry.holds(&self.name, &self.field);
        let r = self.release_script(None).await;
        let fully = match &r {
            // Not held by this owner (expired, or taken over): nothing of ours to renew.
            Ok((None, _)) => true,
            Ok((Some(v), _)) => *v == 1,
            // Unknown outcome: drop this hold all the same.
            Err(_) => false,
        };
        self.client
            .inner
            .registry
            .release(&self.client, &self.name, &self.field, fully);
        let (r, synced) = r?;
        match r {
            Some(_) if lost || never_held => Err(LockError::NotOwner {
                name: self.name.clone(),
                client_id: self.client.id().to_owned(),
                owner_id: self.owner.id(),
            }),
            None => Err(LockError::NotOwner {
                name: self.name.clone(),
                client_id: self.client.id().to_owned(),
                owner_id: self.owner.id(),
            }),
            Some(v) => {
                Metrics::inc(&self.client.inner.metrics.released);
                tracing::debug!(name = %self.name, owner = %self.field, fully = v == 1, "released");
                // The release ran on the master: an error now would invite a retry that
                // releases twice. A release the replicas did not confirm is only logged.
                note_unsynced(&self.name, "release", synced);
                Ok(())
            }
        }
    }

    /// Acquires as [`Core::acquire`] and wraps the hold in a guard.
    pub(crate) async fn acquire_guard(
        &self,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<LockGuard>> {
        Ok(self
            .acquire(wait, lease)
            .await?
            .map(|token| LockGuard::new(self.clone(), token)))
    }

    pub(crate) async fn force_release(&self) -> Result<bool> {
        self.client.inner.registry.release_all(&self.name);
        let now = self.client.now_ms().to_string();
        let r: i64 = match self.kind {
            Kind::Plain | Kind::NonReentrant | Kind::Fenced => {
                self.eval(
                    &scripts::LOCK_FORCE_RELEASE,
                    &[self.name.clone(), self.channel()],
                    &[UNLOCK_MESSAGE.into(), PUBLISH.into()],
                )
                .await?
            }
            Kind::Spin => {
                self.eval(
                    &scripts::SPIN_FORCE_RELEASE,
                    std::slice::from_ref(&self.name),
                    &[],
                )
                .await?
            }
            Kind::Fair => {
                self.eval(
                    &scripts::FAIR_FORCE_RELEASE,
                    &[
                        self.name.clone(),
                        self.queue_name(),
                        self.timeout_set_name(),
                        self.channel(),
                    ],
                    &[UNLOCK_MESSAGE.into(), now, PUBLISH.into()],
                )
                .await?
            }
            Kind::Read => {
                self.eval(
                    &scripts::READ_FORCE_RELEASE,
                    &[self.name.clone(), self.channel()],
                    &[UNLOCK_MESSAGE.into(), PUBLISH.into()],
                )
                .await?
            }
            Kind::Write => {
                self.eval(
                    &scripts::WRITE_FORCE_RELEASE,
                    &[self.name.clone(), self.channel()],
                    &[READ_UNLOCK_MESSAGE.into(), PUBLISH.into()],
                )
                .await?
            }
        };
        Ok(r == 1)
    }

    pub(crate) async fn is_locked(&self) -> Result<bool> {
        let mut conn = self.client.connection();
        match self.kind {
            Kind::Read | Kind::Write => {
                let mode: Option<String> = redis::cmd("HGET")
                    .arg(&self.name)
                    .arg("mode")
                    .query_async(&mut conn)
                    .await?;
                let want = if self.kind == Kind::Read {
                    "read"
                } else {
                    "write"
                };
                Ok(mode.as_deref() == Some(want))
            }
            _ => {
                let n: i64 = redis::cmd("EXISTS")
                    .arg(&self.name)
                    .query_async(&mut conn)
                    .await?;
                Ok(n > 0)
            }
        }
    }

    pub(crate) async fn hold_count(&self) -> Result<u64> {
        let mut conn = self.client.connection();
        let v: Option<u64> = redis::cmd("HGET")
            .arg(&self.name)
            .arg(&self.field)
            .query_async(&mut conn)
            .await?;
        Ok(v.unwrap_or(0))
    }

    pub(crate) async fn is_held_by_me(&self) -> Result<bool> {
        let mut conn = self.client.connection();
        let v: bool = redis::cmd("HEXISTS")
            .arg(&self.name)
            .arg(&self.field)
            .query_async(&mut conn)
            .await?;
        Ok(v)
    }

    pub(crate) async fn remaining_ttl(&self) -> Result<Option<Duration>> {
        let mut conn = self.client.connection();
        let v: i64 = redis::cmd("PTTL")
            .arg(&self.name)
            .query_async(&mut conn)
            .await?;
        Ok((v >= 0).then(|| Duration::from_millis(v as u64)))
    }

    pub(crate) fn lost_signal(&self) -> Option<LostSignal> {
        self.client.inner.registry.signal(&self.name, &self.field)
    }

    /// Sets the key's lease to `lease` if this owner holds it (the owner-checked PEXPIRE a
    /// MultiLock ends with) and restarts the hold's lease timer from the send time. `Ok(false)`
    /// when the lock is not held by this owner any more.
    pub(crate) async fn set_lease(&self, lease: Duration) -> Result<bool> {
        lease_ms(&self.name, lease)?;
        let sent = Instant::now();
        let mut conn = self.client.connection();
        let renewed: i64 = scripts::RENEW
            .key(&self.name)
            .arg(ms(lease))
            .arg(&self.field)
            .invoke_async(&mut conn)
            .await?;
        if renewed == 1 {
            self.state.last_lease_ms.store(ms(lease), Ordering::Relaxed);
            self.client
                .inner
                .registry
                .relet(&self.client, &self.name, &self.field, lease, sent);
        }
        Ok(renewed == 1)
    }

    pub(crate) fn is_renewing(&self) -> bool {
        self.client
            .inner
            .registry
            .is_renewing(&self.name, &self.field)
    }
}

/// Logs a write that ran but that the replicas did not confirm (`WAIT` short or failed): the
/// write stands on the master, so the caller gets no error it might retry on.
pub(crate) fn note_unsynced(name: &str, what: &str, synced: Result<bool>) {
    match synced {
        Ok(true) => {}
        Ok(false) => tracing::warn!(name, what, "no replica acknowledged the write"),
        Err(e) => tracing::warn!(name, what, error = %e, "WAIT failed after the write"),
    }
}

struct QueueGuard {
    core: Option<Core>,
    wait: Option<Duration>,
}

impl QueueGuard {
    /// Leaves the fair queue after a failed acquisition. The guard stays armed until the
    /// script answered: a caller that stops waiting meanwhile, or a failed call, still has the
    /// queue left from its Drop.
    async fn leave(&mut self, core: &Core) -> Result<()> {
        core.acquire_failed(self.wait).await?;
        self.core = None;
        Ok(())
    }
}

impl Drop for QueueGuard {
    fn drop(&mut self) {
        if let Some(core) = self.core.take() {
            let wait = self.wait;
            // On the client's runtime, where the watchdog lives: the current one may end
            // before the task runs (a `block_on` helper).
            core.client.inner.runtime.clone().spawn(async move {
                let _ = core.acquire_failed(wait).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_ttl_retries_at_once_and_a_negative_one_waits_for_the_release() {
        assert!(matches!(
            Attempt::from_ttl_reply(None),
            Attempt::Acquired(None)
        ));
        assert!(matches!(
            Attempt::from_ttl_reply(Some(250)),
            Attempt::Busy(Some(d)) if d == Duration::from_millis(250)
        ));
        assert!(matches!(
            Attempt::from_ttl_reply(Some(0)),
            Attempt::Busy(Some(Duration::ZERO))
        ));
        assert!(matches!(
            Attempt::from_ttl_reply(Some(-1)),
            Attempt::Busy(None)
        ));
    }
}
