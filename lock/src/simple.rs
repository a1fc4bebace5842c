//! `SimpleLock`: the baseline of seed 003, `SET name <random> NX PX lease` to acquire and a
//! compare-and-delete script to release. Not reentrant, no watchdog, no pub/sub.

use std::time::Duration;

use tokio::time::Instant;

use crate::client::{deadline_after, lease_ms, Client};
use crate::error::Result;
use crate::options::Backoff;
use crate::scripts;

/// A plain `SET NX PX` lock holding a random value only its handle knows. A clone is a new
/// holder with a value of its own (as a clone of the other kinds is a new owner): clones
/// exclude each other and cannot unlock each other's hold.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct SimpleLock {
    client: Client,
    name: String,
    value: String,
    backoff: Backoff,
}

impl Client {
    /// A [`SimpleLock`] on `name` with a fresh random value.
    pub fn simple_lock(&self, name: &str) -> SimpleLock {
        SimpleLock {
            client: self.clone(),
            name: name.to_owned(),
            value: self.request_id(),
            backoff: Backoff::exponential(Duration::from_millis(2), Duration::from_millis(100), 2)
                .jitter(Duration::from_millis(2)),
        }
    }
}

impl Clone for SimpleLock {
    fn clone(&self) -> Self {
        SimpleLock {
            client: self.client.clone(),
            name: self.name.clone(),
            value: self.client.request_id(),
            backoff: self.backoff.clone(),
        }
    }
}

impl SimpleLock {
    /// The key.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The random value this handle writes.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// `SET name value NX PX lease`: `true` when acquired.
    ///
    /// # Errors
    /// Redis errors.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_lock(&self, lease: Duration) -> Result<bool> {
        let lease_ms = lease_ms(&self.name, lease)?;
        let mut conn = self.client.connection();
        let r: Option<String> = redis::cmd("SET")
            .arg(&self.name)
            .arg(&self.value)
            .arg("NX")
            .arg("PX")
            .arg(lease_ms)
            .query_async(&mut conn)
            .await?;
        Ok(r.is_some())
    }

    /// Retries with backoff for up to `wait`.
    ///
    /// # Errors
    /// Redis errors.
    #[must_use = "the attempt may have failed: check its result"]
    pub async fn try_lock_for(&self, wait: Duration, lease: Duration) -> Result<bool> {
        let deadline = deadline_after(Instant::now(), wait);
        let mut n = 0;
        loop {
            if self.try_lock(lease).await? {
                return Ok(true);
            }
            let rem = deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            });
            if rem.is_zero() {
                return Ok(false);
            }
            let j = self
                .client
                .random_range(0..=self.backoff.jitter.as_millis() as u64);
            tokio::time::sleep((self.backoff.delay(n) + Duration::from_millis(j)).min(rem)).await;
            n += 1;
        }
    }

    /// Compare-and-delete: `true` when this handle's value was there and is now deleted.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn unlock(&self) -> Result<bool> {
        let mut conn = self.client.connection();
        let r: i64 = scripts::SIMPLE_RELEASE
            .key(&self.name)
            .arg(&self.value)
            .invoke_async(&mut conn)
            .await?;
        Ok(r == 1)
    }

    /// Compare-and-extend: resets the lease when this handle still holds the lock.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn extend(&self, lease: Duration) -> Result<bool> {
        let lease_ms = lease_ms(&self.name, lease)?;
        let mut conn = self.client.connection();
        let r: i64 = scripts::SIMPLE_EXTEND
            .key(&self.name)
            .arg(&self.value)
            .arg(lease_ms)
            .invoke_async(&mut conn)
            .await?;
        Ok(r == 1)
    }
}
