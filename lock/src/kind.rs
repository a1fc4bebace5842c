//! [`DistributedLock`]: the one trait every Redisson-style lock kind implements (Redisson's
//! `RLock` interface), so code can be generic over kinds and [`MultiLock`](crate::MultiLock)
//! and [`RedLock`](crate::RedLock) can hold any mix of them.
//!
//! The trait is object safe (`Box<dyn DistributedLock>` implements it too); its async methods
//! return boxed futures for that reason. Each kind also has the same methods as inherent
//! `async fn`s, which need no import and no boxing.

use std::future::Future;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;

use crate::client::Client;
use crate::error::{LockError, Result};
use crate::guard::{LockGuard, Section};
use crate::owner::Owner;
use crate::watchdog::LostSignal;

// The sealed supertrait: every implementation is a lock kind of this crate, built on the
// shared `Core`. Its items are crate-internal even though the trait must be `pub`.
#[allow(unreachable_pub)]
pub(crate) mod sealed {
    use super::DistributedLock;
    use crate::hold::Core;

    pub trait Sealed {
        /// The machinery shared by every kind.
        fn core(&self) -> &Core;
        /// A handle on the same lock for a new owner (what `Clone` does on each kind).
        fn new_owner_boxed(&self) -> Box<dyn DistributedLock>;
    }
}

/// A Redisson-style lock of any kind: [`Lock`](crate::Lock), [`FairLock`](crate::FairLock),
/// [`SpinLock`](crate::SpinLock), [`FencedLock`](crate::FencedLock),
/// [`NonReentrantLock`](crate::NonReentrantLock), [`ReadLock`](crate::ReadLock),
/// [`WriteLock`](crate::WriteLock), and `Box<dyn DistributedLock>`.
///
/// The methods behave as the kinds' inherent methods of the same name (see
/// [`Lock`](crate::Lock)); this trait is sealed (only this crate's kinds implement it).
///
/// # Examples
/// A [`MultiLock`](crate::MultiLock) over a fair lock and both halves of a read-write lock:
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let server = locksmith_server::Server::builder().start().await?;
/// # let url = server.url();
/// use locksmith_lock::{Client, DistributedLock, MultiLock};
///
/// let client = Client::open(&url).await?;
/// let rw = client.read_write_lock("catalog");
/// let all = MultiLock::new(vec![
///     client.fair_lock("orders").boxed(),
///     rw.read_lock().boxed(),
///     client.read_write_lock("prices").write_lock().boxed(),
/// ]);
/// let guard = all.acquire(None).await?;
/// assert!(all.is_held_by_me().await?);
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
pub trait DistributedLock: sealed::Sealed + Send + Sync + std::fmt::Debug {
    /// The lock name (the Redis key of the hash).
    fn name(&self) -> &str {
        &self.core().name
    }

    /// The owner this handle acts for.
    fn owner(&self) -> Owner {
        self.core().owner
    }

    /// The Redis hash field this handle writes.
    fn owner_field(&self) -> &str {
        &self.core().field
    }

    /// The client this handle talks through.
    fn client(&self) -> &Client {
        &self.core().client
    }

    /// This handle boxed, to mix kinds in one collection.
    fn boxed(self) -> Box<dyn DistributedLock>
    where
        Self: Sized + 'static,
    {
        Box::new(self)
    }

    /// A handle on the same lock for a **new owner** (what `Clone` does on each kind).
    fn clone_boxed(&self) -> Box<dyn DistributedLock> {
        self.new_owner_boxed()
    }

    /// Acquires, waiting as long as needed (watchdog).
    fn lock(&self) -> BoxFuture<'_, Result<()>> {
        async move { self.core().acquire(None, None).await.map(|_| ()) }.boxed()
    }

    /// Acquires with a fixed lease (no watchdog).
    fn lock_with_lease(&self, lease: Duration) -> BoxFuture<'_, Result<()>> {
        async move { self.core().acquire(None, Some(lease)).await.map(|_| ()) }.boxed()
    }

    /// One attempt, no waiting.
    fn try_lock(&self) -> BoxFuture<'_, Result<bool>> {
        async move {
            Ok(self
                .core()
                .acquire(Some(Duration::ZERO), None)
                .await?
                .is_some())
        }
        .boxed()
    }

    /// Waits up to `wait`; `lease` or the watchdog.
    fn try_lock_for(&self, wait: Duration, lease: Option<Duration>) -> BoxFuture<'_, Result<bool>> {
        async move { Ok(self.core().acquire(Some(wait), lease).await?.is_some()) }.boxed()
    }

    /// Releases one hold.
    fn unlock(&self) -> BoxFuture<'_, Result<()>> {
        self.core().release().boxed()
    }

    /// Acquires (watchdog) and returns a guard that releases on drop.
    fn acquire(&self) -> BoxFuture<'_, Result<LockGuard>> {
        async move {
            self.core()
                .acquire_guard(None, None)
                .await?
                .ok_or_else(|| LockError::unexpected("acquire", "no hold without a wait limit"))
        }
        .boxed()
    }

    /// Acquires with a fixed lease and returns a guard.
    fn acquire_with_lease(&self, lease: Duration) -> BoxFuture<'_, Result<LockGuard>> {
        async move {
            self.core()
                .acquire_guard(None, Some(lease))
                .await?
                .ok_or_else(|| LockError::unexpected("acquire", "no hold without a wait limit"))
        }
        .boxed()
    }

    /// One attempt; a guard when acquired.
    fn try_acquire(&self) -> BoxFuture<'_, Result<Option<LockGuard>>> {
        self.core()
            .acquire_guard(Some(Duration::ZERO), None)
            .boxed()
    }

    /// Waits up to `wait`; a guard when acquired.
    fn try_acquire_for(
        &self,
        wait: Duration,
        lease: Option<Duration>,
    ) -> BoxFuture<'_, Result<Option<LockGuard>>> {
        self.core().acquire_guard(Some(wait), lease).boxed()
    }

    /// A scoped critical section, cancelled when the lock is lost (see
    /// [`Lock::with_lock`](crate::Lock::with_lock)).
    fn with_lock<F, Fut, T>(&self, f: F) -> impl Future<Output = Result<T>>
    where
        Self: Sized,
        F: FnOnce(Section) -> Fut,
        Fut: Future<Output = T>,
    {
        async move { self.acquire().await?.scope(f).await }
    }

    /// Sets this owner's lease (owner-checked).
    fn set_lease(&self, lease: Duration) -> BoxFuture<'_, Result<bool>> {
        self.core().set_lease(lease).boxed()
    }

    /// Deletes the lock whoever holds it.
    fn force_unlock(&self) -> BoxFuture<'_, Result<bool>> {
        self.core().force_release().boxed()
    }

    /// Whether anyone holds the lock.
    fn is_locked(&self) -> BoxFuture<'_, Result<bool>> {
        self.core().is_locked().boxed()
    }

    /// Whether this handle's owner holds the lock.
    fn is_held_by_me(&self) -> BoxFuture<'_, Result<bool>> {
        self.core().is_held_by_me().boxed()
    }

    /// This owner's reentrant hold count.
    fn hold_count(&self) -> BoxFuture<'_, Result<u64>> {
        self.core().hold_count().boxed()
    }

    /// Remaining time to live of the lock key.
    fn remaining_ttl(&self) -> BoxFuture<'_, Result<Option<Duration>>> {
        self.core().remaining_ttl().boxed()
    }

    /// The lock-lost signal of the current hold.
    fn lost_signal(&self) -> Option<LostSignal> {
        self.core().lost_signal()
    }

    /// Whether a watchdog (or lease timer) of this client tracks the hold.
    fn is_renewing(&self) -> bool {
        self.core().is_renewing()
    }
}

impl sealed::Sealed for Box<dyn DistributedLock> {
    fn core(&self) -> &crate::hold::Core {
        (**self).core()
    }
    fn new_owner_boxed(&self) -> Box<dyn DistributedLock> {
        (**self).new_owner_boxed()
    }
}

impl DistributedLock for Box<dyn DistributedLock> {
    /// Already boxed: no second box.
    fn boxed(self) -> Box<dyn DistributedLock> {
        self
    }
}
