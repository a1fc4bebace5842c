//! The public Redisson-style lock kinds, one module each: [`Lock`] (RLock),
//! [`NonReentrantLock`], [`FairLock`], [`SpinLock`], [`FencedLock`], and [`ReadWriteLock`] with
//! its [`ReadLock`] and [`WriteLock`]. What they share, the acquire, wait, release and query
//! machinery, is [`Core`] (crate::hold); the methods every kind offers on it are written once,
//! in `common_lock_api!` below.
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

use crate::client::Client;
use crate::owner::Owner;

mod fair;
mod fenced;
mod lock;
mod non_reentrant;
mod read_write;
mod spin;

pub use fair::FairLock;
pub use fenced::FencedLock;
pub use lock::Lock;
pub use non_reentrant::NonReentrantLock;
pub use read_write::{ReadLock, ReadWriteLock, WriteLock};
pub use spin::SpinLock;

macro_rules! common_lock_api {
    ($ty:ident) => {
        /// A handle on the same lock for a **new owner** (see the module docs): the clone
        /// and the original exclude each other.
        impl ::std::clone::Clone for $ty {
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
            pub fn owner(&self) -> $crate::Owner {
                self.core.owner
            }

            /// The Redis hash field this handle writes (`"<client-id>:<owner-id>"`).
            pub fn owner_field(&self) -> &str {
                &self.core.field
            }

            /// The client this handle talks through.
            pub fn client(&self) -> &$crate::Client {
                &self.core.client
            }

            /// A handle on the same lock acting for `owner`.
            pub fn with_owner(&self, owner: $crate::Owner) -> Self {
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
            pub async fn acquire(&self) -> $crate::Result<$crate::LockGuard> {
                self.core.acquire_guard(None, None).await?.ok_or_else(|| {
                    $crate::LockError::unexpected("acquire", "no hold without a wait limit")
                })
            }

            /// [`acquire`](Self::acquire) with a fixed lease (no watchdog): the lock expires
            /// after `lease` unless the guard releases it before.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn acquire_with_lease(
                &self,
                lease: ::std::time::Duration,
            ) -> $crate::Result<$crate::LockGuard> {
                self.core
                    .acquire_guard(None, Some(lease))
                    .await?
                    .ok_or_else(|| {
                        $crate::LockError::unexpected("acquire", "no hold without a wait limit")
                    })
            }

            /// One attempt, no waiting: a guard when acquired (watchdog-renewed).
            ///
            /// # Errors
            /// Redis errors (never turned into `None`).
            #[must_use = "the attempt may have failed: check its result"]
            pub async fn try_acquire(
                &self,
            ) -> $crate::Result<::std::option::Option<$crate::LockGuard>> {
                self.core
                    .acquire_guard(Some(::std::time::Duration::ZERO), None)
                    .await
            }

            /// Waits up to `wait`; a guard when acquired. With `lease` the lock expires after
            /// it, with `None` the watchdog renews it while the guard lives.
            ///
            /// # Errors
            /// Redis errors.
            #[must_use = "the attempt may have failed: check its result"]
            pub async fn try_acquire_for(
                &self,
                wait: ::std::time::Duration,
                lease: ::std::option::Option<::std::time::Duration>,
            ) -> $crate::Result<::std::option::Option<$crate::LockGuard>> {
                self.core.acquire_guard(Some(wait), lease).await
            }

            /// A scoped critical section: acquires (watchdog), runs the future `f` returns, and
            /// releases. When the lock is lost while the section runs, the call returns
            /// [`LockError::Lost`](crate::LockError::Lost) and the future is dropped, which
            /// cancels it at the `.await` it waits at: code between two `.await`s or blocking
            /// code runs on until it yields, and work it handed elsewhere is not stopped (see
            /// [`LockGuard::run`](crate::LockGuard::run); a fencing token checked where the
            /// writes land is what stops a late one). `f` receives a [`Section`](crate::Section) (for the
            /// fenced lock, with its token). A panic in the section releases the lock as the
            /// guard unwinds.
            ///
            /// # Errors
            /// [`LockError::Lost`](crate::LockError::Lost) (`is_lost()`) when the lock was lost
            /// during the section; acquisition errors. A failed release after a completed
            /// section is logged (the hold expires after its lease), not returned.
            pub async fn with_lock<F, Fut, T>(&self, f: F) -> $crate::Result<T>
            where
                F: FnOnce($crate::Section) -> Fut,
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
            pub async fn lock(&self) -> $crate::Result<()> {
                self.core.acquire(None, None).await.map(|_| ())
            }

            /// Acquires with a fixed lease (no watchdog): the lock expires after `lease` unless
            /// released before.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn lock_with_lease(
                &self,
                lease: ::std::time::Duration,
            ) -> $crate::Result<()> {
                self.core.acquire(None, Some(lease)).await.map(|_| ())
            }

            /// One attempt, no waiting; the watchdog renews on success.
            ///
            /// # Errors
            /// Redis errors (never turned into `false`).
            #[must_use = "the attempt may have failed: check its result"]
            pub async fn try_lock(&self) -> $crate::Result<bool> {
                Ok(self
                    .core
                    .acquire(Some(::std::time::Duration::ZERO), None)
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
                wait: ::std::time::Duration,
                lease: ::std::option::Option<::std::time::Duration>,
            ) -> $crate::Result<bool> {
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
            /// tell: a [`FairLock`](crate::FairLock) this client took whose key someone else deleted (a
            /// `force_unlock`) before any renewal noticed unlocks with `Ok`, because Redisson's
            /// fair release script answers "released" for a missing key. Redis errors.
            pub async fn unlock(&self) -> $crate::Result<()> {
                self.core.release().await
            }

            /// Sets the lease of this owner's hold to `lease` (owner-checked: `Ok(false)` when
            /// the lock is no longer held by this owner), and its lost signal's deadline with it.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn set_lease(&self, lease: ::std::time::Duration) -> $crate::Result<bool> {
                self.core.set_lease(lease).await
            }

            /// Deletes the lock whoever holds it; `true` when there was one.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn force_unlock(&self) -> $crate::Result<bool> {
                self.core.force_release().await
            }

            /// Whether anyone holds the lock.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn is_locked(&self) -> $crate::Result<bool> {
                self.core.is_locked().await
            }

            /// Whether this handle's owner holds the lock.
            ///
            /// # Errors
            /// Redis errors.
            pub async fn is_held_by_me(&self) -> $crate::Result<bool> {
                self.core.is_held_by_me().await
            }

            /// This owner's reentrant hold count (0 when not held).
            ///
            /// # Errors
            /// Redis errors.
            pub async fn hold_count(&self) -> $crate::Result<u64> {
                self.core.hold_count().await
            }

            /// Remaining time to live of the lock key; `None` when it does not exist (or has
            /// no expiry).
            ///
            /// # Errors
            /// Redis errors.
            pub async fn remaining_ttl(
                &self,
            ) -> $crate::Result<::std::option::Option<::std::time::Duration>> {
                self.core.remaining_ttl().await
            }

            /// The lock-lost signal of the current hold, `None` when this client does not
            /// hold the lock for this owner.
            pub fn lost_signal(&self) -> ::std::option::Option<$crate::LostSignal> {
                self.core.lost_signal()
            }

            /// Whether a watchdog (or lease timer) of this client tracks the hold.
            pub fn is_renewing(&self) -> bool {
                self.core.is_renewing()
            }
        }

        impl $crate::kind::sealed::Sealed for $ty {
            fn core(&self) -> &$crate::hold::Core {
                &self.core
            }
            fn new_owner_boxed(&self) -> Box<dyn $crate::DistributedLock> {
                Box::new(self.clone())
            }
        }

        impl $crate::DistributedLock for $ty {}
    };
}
use common_lock_api;

impl Client {
    /// A new owner identity: [`Owner::new`], or, for a client with
    /// [`ClientOptions::seed`](crate::ClientOptions::seed), the next of the client's own
    /// sequence (so that a replayed simulation writes the same owner fields). The lock
    /// constructors without an owner and the clones of lock handles take their owners here.
    pub fn new_owner(&self) -> Owner {
        self.inner.entropy.owner()
    }
}
