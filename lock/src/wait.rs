//! The one wait loop of every waiting kind (the locks, both semaphores, the latch), in
//! Redisson's order (`RedissonLock.tryLock`, `RedissonSemaphore.tryAcquire`): attempt;
//! subscribe to the kind's channel, bounded by the wait; then attempt and wait for a message or
//! a cap, until an attempt succeeds or the wait runs out. Each round registers for the next
//! message before its attempt, so a message published while the attempt runs is not missed
//! (Redisson's latch semaphore keeps such a release as a permit).

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::{Client, Metrics};
use crate::error::Result;
use crate::waiter::Wake;

/// What one attempt found.
pub(crate) enum Step<T> {
    /// Done: the answer of the wait.
    Done(T),
    /// Not yet. Look again at the latest after this long (a lock's TTL, a permit's lease end),
    /// or, with `None`, after the watchdog timeout (in case a message was lost with the
    /// pub/sub connection).
    Again(Option<Duration>),
}

/// What a wait needs besides its attempt: the client, the channel that announces a change,
/// how its messages wake waiters, and the deadline (`None`: as long as needed).
pub(crate) struct WaitOn<'a> {
    /// The client whose pub/sub hub subscribes and whose options give the cap.
    pub(crate) client: &'a Client,
    /// The channel to subscribe to.
    pub(crate) channel: &'a str,
    /// How its messages wake waiters.
    pub(crate) wake: Wake,
    /// When the wait ends.
    pub(crate) deadline: Option<Instant>,
}

/// Runs `attempt` until it is [`Step::Done`] (`Ok(Some(answer))`) or the deadline passed
/// (`Ok(None)`, also when the subscription itself did not complete in time). Errors of an
/// attempt or of subscribing end the wait.
pub(crate) async fn wait_until<T, F, Fut>(on: WaitOn<'_>, mut attempt: F) -> Result<Option<T>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Step<T>>>,
{
    let expired = |d: Option<Instant>| d.is_some_and(|d| Instant::now() >= d);
    if let Step::Done(v) = attempt().await? {
        return Ok(Some(v));
    }
    if expired(on.deadline) {
        return Ok(None);
    }
    let sub = on
        .client
        .inner
        .hub
        .subscribe_until(on.channel, on.wake, on.deadline)
        .await?;
    let Some(sub) = sub else {
        // The wait ran out while subscribing (a slow or hung pub/sub node): not done, as
        // Redisson's tryLock returns false when its subscription times out.
        return Ok(None);
    };
    loop {
        // Registered before the attempt: a message published while it runs wakes this round
        // (a wake-all reaches only registered waiters).
        let notified = sub.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let cap = match attempt().await? {
            Step::Done(v) => return Ok(Some(v)),
            Step::Again(cap) => cap.unwrap_or(on.client.options().watchdog_timeout),
        };
        let remaining = on
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        if remaining.is_some_and(|r| r.is_zero()) {
            return Ok(None);
        }
        // A cap of 0 (a lock that expires this very millisecond) is looked at again a
        // millisecond later: at once would spin until the clock moves, hot on a real clock
        // and forever on a paused one.
        let sleep_for = remaining
            .map_or(cap, |r| r.min(cap))
            .max(Duration::from_millis(1));
        Metrics::inc(&on.client.inner.metrics.waits);
        tracing::trace!(?sleep_for, "waiting");
        // biased (here and in every select of this crate): tokio's unbiased select draws from
        // an unseeded RNG, which would break a seeded simulation's replay. A message first:
        // when both are ready the next attempt follows either way.
        tokio::select! {
            biased;
            _ = notified => {}
            _ = tokio::time::sleep(sleep_for) => {}
        }
    }
}

/// `Ok(None)` as a metric: an acquisition that gave up counts in `acquire_failed`.
pub(crate) fn count_failure<T>(client: &Client, r: &Result<Option<T>>) {
    if let Ok(None) = r {
        Metrics::inc(&client.inner.metrics.acquire_failed);
    }
}
