//! [`CountDownLatch`] (Redisson's `RCountDownLatch`): a counter in a string key; the count-down
//! that reaches zero deletes it and publishes, waking every waiter.
//!
//! Layout: string `name` = count; channel `redisson_countdownlatch__channel__{name}` (always
//! braces, as Redisson builds it); message `0` (count reached zero) and `1` (count set or
//! latch deleted).

use std::time::Duration;

use tokio::time::Instant;

use crate::client::{deadline_after, Client};
use crate::error::Result;
use crate::scripts;
use crate::wait::{wait_until, Step, WaitOn};
use crate::waiter::Wake;

/// `CountDownLatchPubSub.ZERO_COUNT_MESSAGE`.
const ZERO_COUNT_MESSAGE: &str = "0";
/// `CountDownLatchPubSub.NEW_COUNT_MESSAGE`.
const NEW_COUNT_MESSAGE: &str = "1";
const PUBLISH: &str = "PUBLISH";

/// Redisson's `RCountDownLatch`. Unlike `java.util.concurrent.CountDownLatch` it can be set
/// again once it reached zero ([`try_set_count`](Self::try_set_count)).
#[derive(Debug, Clone)]
pub struct CountDownLatch {
    client: Client,
    name: String,
}

impl Client {
    /// A [`CountDownLatch`] on `name`.
    pub fn count_down_latch(&self, name: &str) -> CountDownLatch {
        CountDownLatch {
            client: self.clone(),
            name: name.to_owned(),
        }
    }
}

impl CountDownLatch {
    /// The key holding the count.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The channel (`redisson_countdownlatch__channel__{name}`).
    pub fn channel(&self) -> String {
        format!("redisson_countdownlatch__channel__{{{}}}", self.name)
    }

    async fn eval<T: redis::FromRedisValue>(
        &self,
        script: &'static redis::Script,
        args: &[&str],
    ) -> Result<T> {
        let keys = [self.name.clone(), self.channel()];
        let (r, synced) = self.client.eval_write(script, &keys, args).await?;
        crate::hold::note_unsynced(&self.name, "latch write", synced);
        Ok(r)
    }

    /// Sets the count when the latch does not exist (count 0); `false` otherwise.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        let count = count.to_string();
        let r: i64 = self
            .eval(
                &scripts::LATCH_TRY_SET,
                &[NEW_COUNT_MESSAGE, &count, PUBLISH],
            )
            .await?;
        Ok(r == 1)
    }

    /// Decrements the count; reaching zero deletes the latch and wakes every waiter. On a
    /// missing latch it does nothing lasting (the count never goes below zero).
    ///
    /// # Errors
    /// Redis errors.
    pub async fn count_down(&self) -> Result<()> {
        self.eval(&scripts::LATCH_COUNT_DOWN, &[ZERO_COUNT_MESSAGE, PUBLISH])
            .await
    }

    /// The current count (0 when the latch does not exist).
    ///
    /// # Errors
    /// Redis errors.
    pub async fn count(&self) -> Result<u64> {
        let mut conn = self.client.connection();
        let v: Option<i64> = redis::cmd("GET")
            .arg(&self.name)
            .query_async(&mut conn)
            .await?;
        Ok(v.unwrap_or(0).max(0) as u64)
    }

    /// Deletes the latch (waking waiters to re-check); `true` when it existed.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn delete(&self) -> Result<bool> {
        let r: i64 = self
            .eval(&scripts::LATCH_DELETE, &[NEW_COUNT_MESSAGE, PUBLISH])
            .await?;
        Ok(r == 1)
    }

    /// Waits until the count is zero (Redisson's `await()`). Dropping the future cancels it.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn wait(&self) -> Result<()> {
        self.wait_inner(None).await.map(|_| ())
    }

    /// Waits up to `timeout` for the count to reach zero; `false` when it did not.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn wait_for(&self, timeout: Duration) -> Result<bool> {
        self.wait_inner(deadline_after(Instant::now(), timeout))
            .await
    }

    async fn wait_inner(&self, deadline: Option<Instant>) -> Result<bool> {
        self.client.check_alive()?;
        let on = WaitOn {
            client: &self.client,
            channel: &self.channel(),
            wake: Wake::All,
            deadline,
        };
        // The count-down to zero publishes; without a message the watchdog timeout caps a
        // wait, in case the pub/sub connection dropped one.
        let r = wait_until(on, move || async move {
            Ok(if self.count().await? == 0 {
                Step::Done(())
            } else {
                Step::Again(None)
            })
        })
        .await?;
        Ok(r.is_some())
    }
}
