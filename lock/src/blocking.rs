//! A blocking facade for code without an async runtime (feature `blocking`): CLI tools,
//! synchronous services and test suites.
//!
//! A [`Client`] owns a small tokio runtime (one worker thread) on which the library's
//! background work runs (the watchdog keeps renewing while the calling thread does synchronous
//! work); every method blocks the calling thread until its async counterpart completes. Do not
//! call it from inside an async runtime (it would block a worker): use the async API there.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let server_rt = tokio::runtime::Runtime::new()?;
//! # let server = server_rt.block_on(locksmith_server::Server::builder().start())?;
//! # let url = server.url();
//! use locksmith_lock::blocking::Client;
//!
//! let client = Client::open(&url)?;
//! let lock = client.lock("nightly-report");
//! {
//!     let _guard = lock.acquire()?; // the watchdog renews it meanwhile
//!     // ... synchronous critical section ...
//! } // released here, before the next line runs
//! assert!(!lock.is_locked()?);
//! # Ok(()) }
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;

use crate::error::{LockError, Result};
use crate::kind::DistributedLock;
use crate::options::ClientOptions;
use crate::owner::Owner;

/// Owns the runtime; the last handle to go shuts it down without waiting for its tasks.
struct Rt(Option<Runtime>);

impl Rt {
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        match &self.0 {
            Some(rt) => rt.block_on(f),
            // Only `Drop` takes the runtime, and then no handle is left to call this.
            None => unreachable!("the blocking runtime is gone while a handle uses it"),
        }
    }
}

impl Drop for Rt {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// A blocking [`crate::Client`]: the async client plus the runtime it runs on.
#[derive(Clone)]
pub struct Client {
    inner: crate::Client,
    rt: Arc<Rt>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::Client")
            .field("id", &self.inner.id())
            .finish()
    }
}

impl Client {
    /// Connects to `url` with default options, starting the client's runtime.
    ///
    /// # Errors
    /// When the runtime cannot start, the URL is invalid or the server cannot be reached.
    pub fn open(url: &str) -> Result<Client> {
        Client::open_with(url, ClientOptions::default())
    }

    /// Connects to `url` with `options`.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_with(url: &str, options: ClientOptions) -> Result<Client> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("locksmith-lock")
            .enable_all()
            .build()
            .map_err(|e| {
                LockError::Redis(redis::RedisError::from((
                    redis::ErrorKind::Io,
                    "cannot start the blocking client's runtime",
                    e.to_string(),
                )))
            })?;
        let rt = Arc::new(Rt(Some(rt)));
        let inner = rt.block_on(crate::Client::open_with(url, options))?;
        Ok(Client { inner, rt })
    }

    /// The async client underneath (its handles must be used from async code, for example
    /// through [`block_on`](Self::block_on)).
    pub fn as_async(&self) -> &crate::Client {
        &self.inner
    }

    /// Runs any async call of the library on this client's runtime, blocking until it is done.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// This client's id.
    pub fn id(&self) -> &str {
        self.inner.id()
    }

    fn wrap(&self, lock: impl DistributedLock + 'static) -> Lock {
        Lock {
            inner: lock.boxed(),
            rt: self.rt.clone(),
            timeout: self.inner.options().response_timeout,
        }
    }

    /// A reentrant [`crate::Lock`] on `name` for a fresh owner.
    pub fn lock(&self, name: &str) -> Lock {
        self.wrap(self.inner.lock(name))
    }

    /// A reentrant lock on `name` for `owner`.
    pub fn lock_for(&self, name: &str, owner: Owner) -> Lock {
        self.wrap(self.inner.lock_for(name, owner))
    }

    /// A [`crate::FairLock`] on `name`.
    pub fn fair_lock(&self, name: &str) -> Lock {
        self.wrap(self.inner.fair_lock(name))
    }

    /// A [`crate::SpinLock`] on `name`.
    pub fn spin_lock(&self, name: &str) -> Lock {
        self.wrap(self.inner.spin_lock(name))
    }

    /// A [`crate::FencedLock`] on `name`: its guards carry the token.
    pub fn fenced_lock(&self, name: &str) -> Lock {
        self.wrap(self.inner.fenced_lock(name))
    }

    /// A [`crate::NonReentrantLock`] on `name`.
    pub fn non_reentrant_lock(&self, name: &str) -> Lock {
        self.wrap(self.inner.non_reentrant_lock(name))
    }

    /// The read and the write half of a [`crate::ReadWriteLock`] on `name`, for one owner.
    pub fn read_write_lock(&self, name: &str) -> (Lock, Lock) {
        let rw = self.inner.read_write_lock(name);
        (self.wrap(rw.read_lock()), self.wrap(rw.write_lock()))
    }

    /// Stops every watchdog of the client (see [`crate::Client::shutdown`]).
    pub fn shutdown(&self) {
        self.rt.block_on(self.inner.shutdown());
    }
}

/// A blocking handle on a lock of any kind (see [`DistributedLock`]).
pub struct Lock {
    inner: Box<dyn DistributedLock>,
    rt: Arc<Rt>,
    timeout: Duration,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::Lock")
            .field("lock", &self.inner)
            .finish()
    }
}

/// A handle on the same lock for a **new owner**, as the async kinds' `Clone`.
impl Clone for Lock {
    fn clone(&self) -> Self {
        Lock {
            inner: self.inner.clone_boxed(),
            rt: self.rt.clone(),
            timeout: self.timeout,
        }
    }
}

impl Lock {
    /// The lock name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The owner this handle acts for.
    pub fn owner(&self) -> Owner {
        self.inner.owner()
    }

    /// The async handle underneath.
    pub fn as_async(&self) -> &dyn DistributedLock {
        self.inner.as_ref()
    }

    fn guard(&self, g: crate::LockGuard) -> LockGuard {
        LockGuard {
            inner: Some(g),
            rt: self.rt.clone(),
            timeout: self.timeout,
        }
    }

    /// Acquires, waiting as long as needed; the guard releases when dropped.
    ///
    /// # Errors
    /// As [`crate::Lock::acquire`].
    pub fn acquire(&self) -> Result<LockGuard> {
        let g = self.rt.block_on(self.inner.acquire())?;
        Ok(self.guard(g))
    }

    /// Acquires with a fixed lease (no watchdog).
    ///
    /// # Errors
    /// As [`crate::Lock::acquire_with_lease`].
    pub fn acquire_with_lease(&self, lease: Duration) -> Result<LockGuard> {
        let g = self.rt.block_on(self.inner.acquire_with_lease(lease))?;
        Ok(self.guard(g))
    }

    /// Waits up to `wait`; a guard when acquired.
    ///
    /// # Errors
    /// As [`crate::Lock::try_acquire_for`].
    pub fn try_acquire_for(
        &self,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<LockGuard>> {
        let g = self.rt.block_on(self.inner.try_acquire_for(wait, lease))?;
        Ok(g.map(|g| self.guard(g)))
    }

    /// Redisson-style: acquires (watchdog) until [`unlock`](Self::unlock).
    ///
    /// # Errors
    /// As [`crate::Lock::lock`].
    pub fn lock(&self) -> Result<()> {
        self.rt.block_on(self.inner.lock())
    }

    /// One attempt, no waiting.
    ///
    /// # Errors
    /// As [`crate::Lock::try_lock`].
    pub fn try_lock(&self) -> Result<bool> {
        self.rt.block_on(self.inner.try_lock())
    }

    /// Waits up to `wait`; `lease` or the watchdog.
    ///
    /// # Errors
    /// As [`crate::Lock::try_lock_for`].
    pub fn try_lock_for(&self, wait: Duration, lease: Option<Duration>) -> Result<bool> {
        self.rt.block_on(self.inner.try_lock_for(wait, lease))
    }

    /// Releases one hold.
    ///
    /// # Errors
    /// As [`crate::Lock::unlock`].
    pub fn unlock(&self) -> Result<()> {
        self.rt.block_on(self.inner.unlock())
    }

    /// Deletes the lock whoever holds it.
    ///
    /// # Errors
    /// Redis errors.
    pub fn force_unlock(&self) -> Result<bool> {
        self.rt.block_on(self.inner.force_unlock())
    }

    /// Whether anyone holds the lock.
    ///
    /// # Errors
    /// Redis errors.
    pub fn is_locked(&self) -> Result<bool> {
        self.rt.block_on(self.inner.is_locked())
    }

    /// Whether this handle's owner holds the lock.
    ///
    /// # Errors
    /// Redis errors.
    pub fn is_held_by_me(&self) -> Result<bool> {
        self.rt.block_on(self.inner.is_held_by_me())
    }

    /// This owner's reentrant hold count.
    ///
    /// # Errors
    /// Redis errors.
    pub fn hold_count(&self) -> Result<u64> {
        self.rt.block_on(self.inner.hold_count())
    }
}

/// A blocking [`crate::LockGuard`]. Dropping it releases the lock **before the drop
/// returns** (bounded by the client's response timeout), as a std mutex guard does, because
/// synchronous code expects the lock free on the next line and the runtime may be gone soon
/// after. Dropped inside an async runtime (misuse), or while its thread unwinds from a panic,
/// it hands the release to the client's runtime instead of blocking; a release still
/// unanswered after the response timeout goes on there too.
#[must_use = "dropping a LockGuard releases the lock"]
pub struct LockGuard {
    inner: Option<crate::LockGuard>,
    rt: Arc<Rt>,
    timeout: Duration,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::LockGuard")
            .field("guard", &self.inner)
            .finish()
    }
}

impl LockGuard {
    /// The fencing token of this acquisition (`Some` for a fenced lock).
    pub fn token(&self) -> Option<i64> {
        self.inner.as_ref().and_then(crate::LockGuard::token)
    }

    /// True once the lock was reported lost (or the hold ended under the guard). Synchronous
    /// code cannot be cancelled: check this before each step that needs the lock.
    pub fn is_lost(&self) -> bool {
        self.inner.as_ref().is_none_or(crate::LockGuard::is_lost)
    }

    /// Releases and reports the outcome.
    ///
    /// # Errors
    /// As [`crate::LockGuard::unlock`].
    pub fn unlock(mut self) -> Result<()> {
        match self.inner.take() {
            Some(g) => self.rt.block_on(g.unlock()),
            None => Ok(()),
        }
    }

    /// Keeps the hold without a guard (see [`crate::LockGuard::forget`]).
    pub fn forget(mut self) {
        if let Some(g) = self.inner.take() {
            g.forget();
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let Some(g) = self.inner.take() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_ok() || std::thread::panicking() {
            // Inside a runtime blocking here could stall it, and while unwinding a release
            // that hangs would hold the panic up: the async guard hands the release to the
            // client's runtime instead.
            drop(g);
            return;
        }
        // At most one response timeout: the release goes on in the client's runtime after it.
        let bound = self.timeout;
        // The timer is made inside `block_on`: there is no runtime context out here.
        let release = async move { tokio::time::timeout(bound, g.unlock()).await };
        match self.rt.block_on(release) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(error = %e, "release on blocking guard drop"),
            Err(_) => tracing::warn!("release on blocking guard drop timed out; the lease expires"),
        }
    }
}
