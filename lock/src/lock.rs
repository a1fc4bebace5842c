//! The public Redisson-style lock kinds: [`Lock`] (RLock), [`FairLock`], [`SpinLock`],
//! [`FencedLock`], and [`ReadWriteLock`] with its [`ReadLock`] and [`WriteLock`].
//!
//! Every handle is bound to one [`Owner`], the identity reentrancy follows (Redisson's thread
//! id): handles with the same owner re-enter each other. **A clone is a new owner**, like a new
//! Java thread: clone a handle into each task that must be excluded from the others (sharing
//! one handle, e.g. through an `Arc`, shares its owner, so the tasks re-enter each other; use
//! [`NonReentrantLock`] where even the same owner must not enter twice). [`Lock::with_owner`]
//! and the `*_for` constructors give explicit owners (to act as a given Redisson thread).
//! Dropping a handle does not stop the watchdog (as in Redisson, whose `getLock("x").lock()`
//! is renewed until `unlock`, whatever happens to the Java object): a hold is renewed until it
//! is unlocked through a handle of the same owner ([`Lock::with_owner`], the `*_for`
//! constructors), lost, or the client shuts down. A guard ([`LockGuard`]) releases on drop.

use std::time::Duration;

use crate::client::Client;
use crate::error::Result;
use crate::guard::{LockGuard, Section};
use crate::hold::{Core, Kind};
use crate::kind::DistributedLock;
use crate::options::Backoff;
use crate::owner::Owner;
use crate::watchdog::LostSignal;

macro_rules! common_lock_api {
    ($ty:ident) => {
        /// A handle on the same lock for a **new owner** (see the module docs): the clone
        /// and the original exclude each other.
        impl Clone for $ty {
            fn clone(&self) -> Self {
                self.with_owner(self.core.client.new_owner())
            }
        }

        impl $ty {
            /// The lock name (the Redis key of the hash).
            pub fn name(&self) -> &str {
                &self.core.name
            }

            /// The owner this handle acts for.
            pub fn owner(&self) -> Owner {
                self.core.owner
            }

            /// The Redis hash field this handle writes (`"<client-id>:<owner-id>"`).
            pub fn owner_field(&self) -> &str {
                &self.core.field
            }

            /// The client this handle talks through.
            pub fn client(&self) -> &Client {
                &self.core.client
            }

            /// A handle on the same lock acting for `owner`.
            pub fn with_owner(&self, owner: Owner) -> Self {
                $ty {
                    core: self.core.with_owner(owner),
                }
            }

            /// Acquires, waiting as long as needed, and returns a guard that releases the lock
            /// when dropped; the watchdog renews the lease while the guard lives. Dropping the
            /// future cancels the wait and never leaves the lock behind.
            ///
            /// # Errors
            /// Redis errors; [`LockError::Shutdown`](crate::LockError::Shutdown) after shutdown.
            pub async fn acquire(&self) -> Result<LockGuard> {
                self.core.acquire_guard(None, None).await?.ok_or_else(|| {
                    crate::LockError::unexpected("acquire", "no hold without a wait limit")
                })
            }

            /// [`acquire`](Self::acquire) with a fixed lease (no watchdog): the lock expires
            /// after `lease` unless the guard releases it before.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn acquire_with_lease(&self, lease: Duration) -> Result<LockGuard> {
                self.core
                    .acquire_guard(None, Some(lease))
                    .await?
                    .ok_or_else(|| {
                        crate::LockError::unexpected("acquire", "no hold without a wait limit")
                    })
            }

            /// One attempt, no waiting: a guard when acquired (watchdog-renewed).
            ///
            /// # Errors
            /// Redis errors (never turned into `None`).
            #[must_use = "the attempt may have failed: check its result"]
            pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
                self.core.acquire_guard(Some(Duration::ZERO), None).await
            }

            /// Waits up to `wait`; a guard when acquired. With `lease` the lock expires after
            /// it, with `None` the watchdog renews it while the guard lives.
            ///
            /// # Errors
            /// Redis errors.
            #[must_use = "the attempt may have failed: check its result"]
            pub async fn try_acquire_for(
                &self,
                wait: Duration,
                lease: Option<Duration>,
            ) -> Result<Option<LockGuard>> {
                self.core.acquire_guard(Some(wait), lease).await
            }

            /// A scoped critical section: acquires (watchdog), runs the future `f` returns, and
            /// releases. When the lock is lost while the section runs, the call returns
            /// [`LockError::Lost`](crate::LockError::Lost) and the future is dropped, which
            /// cancels it at the `.await` it waits at: code between two `.await`s or blocking
            /// code runs on until it yields, and work it handed elsewhere is not stopped (see
            /// [`LockGuard::run`](crate::LockGuard::run); a fencing token checked where the
            /// writes land is what stops a late one). `f` receives a [`Section`] (for the
            /// fenced lock, with its token). A panic in the section releases the lock as the
            /// guard unwinds.
            ///
            /// # Errors
            /// [`LockError::Lost`](crate::LockError::Lost) (`is_lost()`) when the lock was lost
            /// during the section; acquisition errors. A failed release after a completed
            /// section is logged (the hold expires after its lease), not returned.
            pub async fn with_lock<F, Fut, T>(&self, f: F) -> Result<T>
            where
                F: FnOnce(Section) -> Fut,
                Fut: std::future::Future<Output = T>,
            {
                self.acquire().await?.scope(f).await
            }

            /// Acquires, waiting as long as needed; the watchdog renews the lease until
            /// [`unlock`](Self::unlock). Dropping the future cancels the wait and never leaves
            /// the lock behind.
            ///
            /// # Errors
            /// Redis errors; [`LockError::Shutdown`](crate::LockError::Shutdown) after shutdown.
            pub async fn lock(&self) -> Result<()> {
                self.core.acquire(None, None).await.map(|_| ())
            }

            /// Acquires with a fixed lease (no watchdog): the lock expires after `lease` unless
            /// released before.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn lock_with_lease(&self, lease: Duration) -> Result<()> {
                self.core.acquire(None, Some(lease)).await.map(|_| ())
            }

            /// One attempt, no waiting; the watchdog renews on success.
            ///
            /// # Errors
            /// Redis errors (never turned into `false`).
            #[must_use = "the attempt may have failed: check its result"]
            pub async fn try_lock(&self) -> Result<bool> {
                Ok(self
                    .core
                    .acquire(Some(Duration::ZERO), None)
                    .await?
                    .is_some())
            }

            /// Waits up to `wait`; with `lease` the lock expires after it, with `None` the
            /// watchdog renews it. `Ok(false)` when the wait ran out.
            ///
            /// # Errors
            /// Redis errors.
            #[must_use = "the attempt may have failed: check its result"]
            pub async fn try_lock_for(
                &self,
                wait: Duration,
                lease: Option<Duration>,
            ) -> Result<bool> {
                Ok(self.core.acquire(Some(wait), lease).await?.is_some())
            }

            /// Releases one hold; the last one deletes the lock and wakes waiters. The watchdog
            /// stops whatever the outcome, and the release completes even if this future is
            /// dropped.
            ///
            /// # Errors
            /// [`LockError::NotOwner`](crate::LockError::NotOwner) (Redisson's
            /// IllegalMonitorStateException message) when this owner does not hold it: never
            /// took it, its lease ran out or the lock was otherwise lost (the lost signal
            /// fired), or its key was deleted by someone else. One case the library cannot
            /// tell: a [`FairLock`] this client took whose key someone else deleted (a
            /// `force_unlock`) before any renewal noticed unlocks with `Ok`, because Redisson's
            /// fair release script answers "released" for a missing key. Redis errors.
            pub async fn unlock(&self) -> Result<()> {
                self.core.release().await
            }

            /// Sets the lease of this owner's hold to `lease` (owner-checked: `Ok(false)` when
            /// the lock is no longer held by this owner), and its lost signal's deadline with it.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn set_lease(&self, lease: Duration) -> Result<bool> {
                self.core.set_lease(lease).await
            }

            /// Deletes the lock whoever holds it; `true` when there was one.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn force_unlock(&self) -> Result<bool> {
                self.core.force_release().await
            }

            /// Whether anyone holds the lock.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn is_locked(&self) -> Result<bool> {
                self.core.is_locked().await
            }

            /// Whether this handle's owner holds the lock.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn is_held_by_me(&self) -> Result<bool> {
                self.core.is_held_by_me().await
            }

            /// This owner's reentrant hold count (0 when not held).
            ///
            /// # Errors
            /// Redis errors.
            pub async fn hold_count(&self) -> Result<u64> {
                self.core.hold_count().await
            }

            /// Remaining time to live of the lock key; `None` when it does not exist (or has
            /// no expiry).
            ///
            /// # Errors
            /// Redis errors.
            pub async fn remaining_ttl(&self) -> Result<Option<Duration>> {
                self.core.remaining_ttl().await
            }

            /// The lock-lost signal of the current hold, `None` when this client does not
            /// hold the lock for this owner.
            pub fn lost_signal(&self) -> Option<LostSignal> {
                self.core.lost_signal()
            }

            /// Whether a watchdog (or lease timer) of this client tracks the hold.
            pub fn is_renewing(&self) -> bool {
                self.core.is_renewing()
            }
        }

        impl crate::kind::sealed::Sealed for $ty {
            fn core(&self) -> &Core {
                &self.core
            }
            fn new_owner_boxed(&self) -> Box<dyn DistributedLock> {
                Box::new(self.clone())
            }
        }

        impl DistributedLock for $ty {}
    };
}

/// Redisson's `RLock`: a reentrant lock with a watchdog.
///
/// Layout: hash `name`, field `"<client-id>:<owner-id>"` = hold count; unlock channel
/// `redisson_lock__channel:{name}`.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct Lock {
    pub(crate) core: Core,
}
common_lock_api!(Lock);

/// Redisson's `RedissonNonReentrantLock`: a lock one owner cannot enter twice. Its acquire
/// script answers an error reply when the owner holds the lock already, which every acquiring
/// call returns as [`LockError::Invalid`](crate::LockError::Invalid) (Redisson's
/// IllegalMonitorStateException), instead of waiting for itself; other owners wait as usual.
///
/// Redisson's [`Lock`] layout (hash `name`, field `"<client-id>:<owner-id>"` = 1, unlock
/// channel `redisson_lock__channel:{name}`, the same release, renewal and force-unlock
/// scripts), and Redisson's acquire script byte for byte, so a Java `RedissonNonReentrantLock`
/// on the same name agrees with this one.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct NonReentrantLock {
    pub(crate) core: Core,
}
common_lock_api!(NonReentrantLock);

/// Redisson's `RFairLock`: FIFO by request order, queue `redisson_lock_queue:{name}`,
/// waiter timeouts in `redisson_lock_timeout:{name}`, one wake channel per waiter.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct FairLock {
    pub(crate) core: Core,
}
common_lock_api!(FairLock);

/// Redisson's spin lock: same layout as [`Lock`], but waiters poll with exponential backoff
/// instead of subscribing, and release publishes nothing.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct SpinLock {
    pub(crate) core: Core,
}
common_lock_api!(SpinLock);

impl SpinLock {
    /// Sets the backoff between attempts.
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.core.backoff = backoff;
        self
    }
}

/// Redisson's `RFencedLock`: a [`Lock`] whose every acquisition increments the token counter
/// `redisson_lock_token:{name}` and returns the new value.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct FencedLock {
    pub(crate) core: Core,
}
common_lock_api!(FencedLock);

impl FencedLock {
    /// Acquires (watchdog) and returns the fencing token of this acquisition.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn lock_and_get_token(&self) -> Result<i64> {
        self.token_of(self.core.acquire(None, None).await?)
    }

    /// Acquires with a fixed lease and returns the token.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn lock_with_lease_and_get_token(&self, lease: Duration) -> Result<i64> {
        self.token_of(self.core.acquire(None, Some(lease)).await?)
    }

    /// One attempt; the token when acquired.
    ///
    /// # Errors
    /// Redis errors.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_lock_and_get_token(&self) -> Result<Option<i64>> {
        match self.core.acquire(Some(Duration::ZERO), None).await? {
            Some(t) => self.token_of(Some(t)).map(Some),
            None => Ok(None),
        }
    }

    /// Waits up to `wait`; the token when acquired.
    ///
    /// # Errors
    /// Redis errors.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_lock_and_get_token_for(
        &self,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<i64>> {
        match self.core.acquire(Some(wait), lease).await? {
            Some(t) => self.token_of(Some(t)).map(Some),
            None => Ok(None),
        }
    }

    /// The current token value (the last one handed out), `None` before the first.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn token(&self) -> Result<Option<i64>> {
        let mut conn = self.core.client.connection();
        Ok(redis::cmd("GET")
            .arg(self.core.token_name())
            .query_async(&mut conn)
            .await?)
    }

    /// A scoped critical section handed this acquisition's fencing token: acquires
    /// (watchdog), runs the future `f(token)` returns, releases; cancelled with
    /// [`LockError::Lost`](crate::LockError::Lost) when the lock is lost meanwhile, as
    /// [`with_lock`](Self::with_lock).
    ///
    /// # Errors
    /// As [`with_lock`](Self::with_lock).
    pub async fn with_token<F, Fut, T>(&self, f: F) -> Result<T>
    where
        F: FnOnce(i64) -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let guard = self.acquire().await?;
        let token = self.token_of(Some(guard.token()))?;
        guard.scope(|_| f(token)).await
    }

    fn token_of(&self, r: Option<Option<i64>>) -> Result<i64> {
        match r {
            Some(Some(t)) => Ok(t),
            other => Err(crate::LockError::unexpected("fenced acquire", other)),
        }
    }
}

/// Redisson's `RReadWriteLock`: many readers or one writer on hash `name` (field `mode`);
/// the writer may also take read locks (downgrade). Its halves share its owner; a clone of the
/// `ReadWriteLock` is a new owner.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct ReadWriteLock {
    read: ReadLock,
    write: WriteLock,
}

impl Clone for ReadWriteLock {
    /// Both halves for a new owner.
    fn clone(&self) -> Self {
        self.with_owner(self.read.core.client.new_owner())
    }
}

impl ReadWriteLock {
    /// The read half (this lock's owner).
    pub fn read_lock(&self) -> ReadLock {
        self.read.share()
    }
    /// The write half (this lock's owner).
    pub fn write_lock(&self) -> WriteLock {
        self.write.share()
    }
    /// Both halves acting for `owner`.
    pub fn with_owner(&self, owner: Owner) -> Self {
        ReadWriteLock {
            read: self.read.with_owner(owner),
            write: self.write.with_owner(owner),
        }
    }
}

/// The read half of a [`ReadWriteLock`]; each hold also has a timeout key
/// `{name}:<owner>:rwlock_timeout:<n>`.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct ReadLock {
    pub(crate) core: Core,
}
common_lock_api!(ReadLock);

impl ReadLock {
    /// This very handle again (same owner, same watchdog holds).
    fn share(&self) -> Self {
        ReadLock {
            core: self.core.clone(),
        }
    }
}

/// The write half of a [`ReadWriteLock`]; its field carries the `:write` suffix and its release
/// wakes all waiters (message `1`).
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct WriteLock {
    pub(crate) core: Core,
}
common_lock_api!(WriteLock);

impl WriteLock {
    /// This very handle again (same owner, same watchdog holds).
    fn share(&self) -> Self {
        WriteLock {
            core: self.core.clone(),
        }
    }
}

impl Client {
    /// A new owner identity: [`Owner::new`], or, for a client with
    /// [`ClientOptions::seed`](crate::ClientOptions::seed), the next of the client's own
    /// sequence (so that a replayed simulation writes the same owner fields). The lock
    /// constructors without an owner and the clones of lock handles take their owners here.
    pub fn new_owner(&self) -> Owner {
        self.inner.entropy.owner()
    }

    /// A [`Lock`] on `name` for a fresh owner.
    pub fn lock(&self, name: &str) -> Lock {
        self.lock_for(name, self.new_owner())
    }

    /// A [`Lock`] on `name` for `owner`.
    pub fn lock_for(&self, name: &str, owner: Owner) -> Lock {
        Lock {
            core: Core::new(self, name, owner, Kind::Plain),
        }
    }

    /// A [`NonReentrantLock`] on `name` for a fresh owner.
    pub fn non_reentrant_lock(&self, name: &str) -> NonReentrantLock {
        self.non_reentrant_lock_for(name, self.new_owner())
    }

    /// A [`NonReentrantLock`] on `name` for `owner`.
    pub fn non_reentrant_lock_for(&self, name: &str, owner: Owner) -> NonReentrantLock {
        NonReentrantLock {
            core: Core::new(self, name, owner, Kind::NonReentrant),
        }
    }

    /// A [`FairLock`] on `name` for a fresh owner.
    pub fn fair_lock(&self, name: &str) -> FairLock {
        self.fair_lock_for(name, self.new_owner())
    }

    /// A [`FairLock`] on `name` for `owner`.
    pub fn fair_lock_for(&self, name: &str, owner: Owner) -> FairLock {
        FairLock {
            core: Core::new(self, name, owner, Kind::Fair),
        }
    }

    /// A [`SpinLock`] on `name` for a fresh owner.
    pub fn spin_lock(&self, name: &str) -> SpinLock {
        self.spin_lock_for(name, self.new_owner())
    }

    /// A [`SpinLock`] on `name` for `owner`.
    pub fn spin_lock_for(&self, name: &str, owner: Owner) -> SpinLock {
        SpinLock {
            core: Core::new(self, name, owner, Kind::Spin),
        }
    }

    /// A [`FencedLock`] on `name` for a fresh owner.
    pub fn fenced_lock(&self, name: &str) -> FencedLock {
        self.fenced_lock_for(name, self.new_owner())
    }

    /// A [`FencedLock`] on `name` for `owner`.
    pub fn fenced_lock_for(&self, name: &str, owner: Owner) -> FencedLock {
        FencedLock {
            core: Core::new(self, name, owner, Kind::Fenced),
        }
    }

    /// A [`ReadWriteLock`] on `name` for a fresh owner.
    pub fn read_write_lock(&self, name: &str) -> ReadWriteLock {
        self.read_write_lock_for(name, self.new_owner())
    }

    /// A [`ReadWriteLock`] on `name` for `owner`.
    pub fn read_write_lock_for(&self, name: &str, owner: Owner) -> ReadWriteLock {
        ReadWriteLock {
            read: ReadLock {
                core: Core::new(self, name, owner, Kind::Read),
            },
            write: WriteLock {
                core: Core::new(self, name, owner, Kind::Write),
            },
        }
    }
}
