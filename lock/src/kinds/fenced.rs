//! [`FencedLock`] (Redisson's `RFencedLock`): every acquisition hands out a new fencing token.

use std::time::Duration;

use crate::client::Client;
use crate::error::Result;
use crate::hold::{Core, Kind};
use crate::owner::Owner;

/// Redisson's `RFencedLock`: a [`Lock`](crate::Lock) whose every acquisition increments the token counter
/// `redisson_lock_token:{name}` and returns the new value.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct FencedLock {
    pub(crate) core: Core,
}
super::common_lock_api!(FencedLock);

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

impl Client {
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
}
