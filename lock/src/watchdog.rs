//! The watchdog: one renewal task per held (lock, owner), renewing every lease/3 until release,
//! and the lock-lost signal it raises when a renewal finds the lock gone or renewals fail past
//! the lease. Locks taken with an explicit lease get no renewal; their signal fires when the
//! lease runs out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::client::{ms, Client, Inner, Metrics};
use crate::error::LostReason;
use crate::scripts;

/// How a hold is renewed.
#[derive(Debug, Clone)]
pub(crate) enum Renewal {
    /// `RENEW` on the hash field.
    Hash,
    /// Redisson's read-lock renewal (also renews each read-hold timeout key).
    Read { key_prefix: String },
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum HoldMode {
    Watchdog(Duration),
    Lease(Duration),
}

type Key = (String, String);

#[derive(Default)]
pub(crate) struct Registry {
    entries: Mutex<HashMap<Key, Entry>>,
    shut: AtomicBool,
}

struct Entry {
    /// The modes of the holds, in acquisition order (re-entries nest: the newest goes first).
    holds: Vec<HoldMode>,
    task: Option<JoinHandle<()>>,
    /// Whether `task` is the watchdog (renewing) rather than a lease timer.
    renewing: bool,
    lost_tx: watch::Sender<Option<LostReason>>,
}

impl Entry {
    /// The watchdog lease while any hold wants renewal (Redisson keeps renewing an outer
    /// `lock()` across a leased re-entry), else `None`.
    fn watchdog(&self) -> Option<Duration> {
        self.holds.iter().find_map(|m| match m {
            HoldMode::Watchdog(lease) => Some(*lease),
            HoldMode::Lease(_) => None,
        })
    }

    /// The newest lease among the holds (the TTL the server was given last).
    fn newest_lease(&self) -> Option<Duration> {
        self.holds.iter().rev().find_map(|m| match m {
            HoldMode::Lease(lease) => Some(*lease),
            HoldMode::Watchdog(_) => None,
        })
    }

    fn stop_task(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        self.renewing = false;
    }

    /// Starts `task` in `mode`, `sent` being when the request that set the key's TTL was sent;
    /// with `renew_now` the watchdog renews at once instead of after a period.
    fn start(&mut self, task: Task, mode: HoldMode, sent: Instant, renew_now: bool) {
        self.stop_task();
        self.renewing = matches!(mode, HoldMode::Watchdog(_));
        self.task = Some(tokio::spawn(task.run(mode, sent, renew_now)));
    }
}

/// A signal the holder can select on: resolves when the lock is lost.
///
/// [`LostSignal::lost`] returns `Some(reason)` when the lock was lost and `None` when the hold
/// ended normally (unlocked, or the client shut down) without a loss.
///
/// The promise: the signal fires no later than the moment the key may have expired on the
/// server, that is the send time of the last successful acquisition or renewal, plus the lease,
/// minus a safety margin for clock drift ([`safety_margin`]: 1 % of the lease plus 2 ms, as
/// Redlock computes it). A renewal that finds the lock gone fires it at once; a server that
/// stops answering fires it at that deadline, without waiting for the renewal to time out.
#[derive(Debug, Clone)]
pub struct LostSignal {
    rx: watch::Receiver<Option<LostReason>>,
}

impl LostSignal {
    /// Waits until the lock is lost (`Some`) or the hold ends without loss (`None`).
    pub async fn lost(&mut self) -> Option<LostReason> {
        loop {
            if let Some(r) = self.rx.borrow_and_update().clone() {
                return Some(r);
            }
            if self.rx.changed().await.is_err() {
                return self.rx.borrow().clone();
            }
        }
    }

    /// True once the lock has been reported lost.
    pub fn is_lost(&self) -> bool {
        self.rx.borrow().is_some()
    }

    /// True once the lock was reported lost or the hold ended (released, force-unlocked, or
    /// the client shut down): no longer a hold to rely on.
    pub(crate) fn is_over(&self) -> bool {
        self.rx.borrow().is_some() || self.rx.has_changed().is_err()
    }
}

/// How long before a lease runs out (counted from the send time of the request that set it)
/// a hold counts as possibly expired: 1 % of the lease plus 2 ms for clock drift between this
/// process and the server (the margin Redlock uses).
pub fn safety_margin(lease: Duration) -> Duration {
    lease / 100 + Duration::from_millis(2)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Registry {
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut.load(Ordering::Acquire)
    }

    /// Records one more hold of (name, field) taken in `mode` by a request sent at `sent`, and
    /// runs the background task the holds need: the watchdog while any hold wants renewal (a
    /// leased re-entry leaves it running), else a timer for the newest lease.
    pub(crate) fn register(
        &self,
        client: &Client,
        name: &str,
        field: &str,
        renewal: Renewal,
        mode: HoldMode,
        sent: Instant,
    ) {
        if self.is_shut_down() {
            return;
        }
        let mut map = lock(&self.entries);
        let key = (name.to_owned(), field.to_owned());
        let e = map.entry(key).or_insert_with(|| Entry {
            holds: Vec::new(),
            task: None,
            renewing: false,
            lost_tx: watch::channel(None).0,
        });
        if e.lost_tx.borrow().is_some() {
            // The previous hold was lost; this acquisition starts a new one with a fresh signal
            // (existing subscribers keep seeing the loss).
            e.holds.clear();
            e.stop_task();
            e.lost_tx = watch::channel(None).0;
        }
        e.holds.push(mode);
        let task = Task {
            client: client.weak(),
            name: name.to_owned(),
            field: field.to_owned(),
            renewal,
            lost_tx: e.lost_tx.clone(),
        };
        match (e.watchdog(), mode) {
            // Already renewing, and this re-entry set the watchdog's own lease again.
            (Some(_), HoldMode::Watchdog(_)) if e.renewing && e.task.is_some() => {}
            // A leased re-entry under a renewed hold cut the key's TTL to its lease: renew at
            // once, so the outer hold keeps the watchdog's lease.
            (Some(lease), HoldMode::Lease(_)) => {
                e.start(task, HoldMode::Watchdog(lease), sent, true)
            }
            (Some(lease), _) => e.start(task, HoldMode::Watchdog(lease), sent, false),
            (None, mode) => e.start(task, mode, sent, false),
        }
    }

    /// Drops one hold (the newest), or all with `fully`; the last one stops the task and ends
    /// the signal. Called whatever the release script answered, as Redisson cancels renewal
    /// whatever the unlock's outcome.
    pub(crate) fn release(&self, client: &Client, name: &str, field: &str, fully: bool) {
        let mut map = lock(&self.entries);
        let key = (name.to_owned(), field.to_owned());
        let Some(e) = map.get_mut(&key) else {
            return;
        };
        if fully {
            e.holds.clear();
        } else {
            e.holds.pop();
        }
        if e.holds.is_empty() {
            if let Some(mut e) = map.remove(&key) {
                e.stop_task();
            }
            return;
        }
        if e.renewing && e.watchdog().is_none() {
            // The last hold that wanted renewal is gone: the leased ones left run out.
            if let Some(lease) = e.newest_lease() {
                let task = Task {
                    client: client.weak(),
                    name: name.to_owned(),
                    field: field.to_owned(),
                    renewal: Renewal::Hash,
                    lost_tx: e.lost_tx.clone(),
                };
                e.start(task, HoldMode::Lease(lease), Instant::now(), false);
            }
        }
    }

    /// The newest hold of (name, field) now has `lease`, set by a request sent at `sent` (a
    /// MultiLock's final PEXPIRE): its lease timer restarts from there, unless a hold still
    /// wants the watchdog.
    pub(crate) fn relet(
        &self,
        client: &Client,
        name: &str,
        field: &str,
        lease: Duration,
        sent: Instant,
    ) {
        let mut map = lock(&self.entries);
        let Some(e) = map.get_mut(&(name.to_owned(), field.to_owned())) else {
            return;
        };
        if let Some(last) = e.holds.last_mut() {
            *last = HoldMode::Lease(lease);
        }
        if e.watchdog().is_none() && e.lost_tx.borrow().is_none() {
            let task = Task {
                client: client.weak(),
                name: name.to_owned(),
                field: field.to_owned(),
                renewal: Renewal::Hash,
                lost_tx: e.lost_tx.clone(),
            };
            e.start(task, HoldMode::Lease(lease), sent, false);
        }
    }

    /// Forgets every hold of `name` (after `force_unlock`).
    pub(crate) fn release_all(&self, name: &str) {
        let mut map = lock(&self.entries);
        map.retain(|(n, _), e| {
            if n == name {
                e.stop_task();
                false
            } else {
                true
            }
        });
    }

    pub(crate) fn signal(&self, name: &str, field: &str) -> Option<LostSignal> {
        let map = lock(&self.entries);
        map.get(&(name.to_owned(), field.to_owned()))
            .map(|e| LostSignal {
                rx: e.lost_tx.subscribe(),
            })
    }

    /// Whether the hold of (name, field) was reported lost (and not released since).
    pub(crate) fn is_lost(&self, name: &str, field: &str) -> bool {
        lock(&self.entries)
            .get(&(name.to_owned(), field.to_owned()))
            .is_some_and(|e| e.lost_tx.borrow().is_some())
    }

    /// Whether the watchdog renews (name, field) right now: held, renewing, and not lost.
    /// Whether a hold that wants renewal remains after the newest one is released (the lease
    /// an unlock's PEXPIRE must leave on the key).
    pub(crate) fn renews_after_release(&self, name: &str, field: &str) -> bool {
        lock(&self.entries)
            .get(&(name.to_owned(), field.to_owned()))
            .is_some_and(|e| {
                let n = e.holds.len().saturating_sub(1);
                e.holds
                    .get(..n)
                    .is_some_and(|rest| rest.iter().any(|m| matches!(m, HoldMode::Watchdog(_))))
            })
    }

    pub(crate) fn is_renewing(&self, name: &str, field: &str) -> bool {
        lock(&self.entries)
            .get(&(name.to_owned(), field.to_owned()))
            .is_some_and(|e| e.renewing && e.lost_tx.borrow().is_none())
    }

    pub(crate) fn shutdown(&self) {
        self.shut.store(true, Ordering::Release);
        let mut map = lock(&self.entries);
        for (_, mut e) in map.drain() {
            e.stop_task();
        }
    }
}

struct Task {
    client: Weak<Inner>,
    name: String,
    field: String,
    renewal: Renewal,
    lost_tx: watch::Sender<Option<LostReason>>,
}

impl Task {
    /// Runs until the hold ends (the task is aborted) or the lock is lost. `sent` is when the
    /// request that last set the key's TTL was sent.
    async fn run(self, mode: HoldMode, sent: Instant, renew_now: bool) {
        match mode {
            HoldMode::Lease(lease) => {
                tokio::time::sleep_until(sent + lease.saturating_sub(safety_margin(lease))).await;
                self.lost(LostReason::LeaseExpired);
            }
            HoldMode::Watchdog(lease) => {
                let period = lease / 3;
                let valid_for = lease.saturating_sub(safety_margin(lease));
                // The key may have expired from here on, unless a renewal succeeds first.
                let mut deadline = sent + valid_for;
                let mut wait = if renew_now { Duration::ZERO } else { period };
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => wait = period,
                        _ = tokio::time::sleep_until(deadline) => {
                            self.expired();
                            return;
                        }
                    }
                    let Some(inner) = self.client.upgrade() else {
                        return;
                    };
                    let client = Client { inner };
                    let span =
                        tracing::debug_span!("renew", name = %self.name, owner = %self.field);
                    let sent = Instant::now();
                    let renewed = tokio::select! {
                        r = tracing::Instrument::instrument(self.renew_retrying(&client, lease), span) => r,
                        _ = tokio::time::sleep_until(deadline) => {
                            Metrics::inc(&client.inner.metrics.renewal_failures);
                            self.expired();
                            return;
                        }
                    };
                    match renewed {
                        Ok(true) => {
                            Metrics::inc(&client.inner.metrics.renewals);
                            tracing::trace!(name = %self.name, "lock renewed");
                            deadline = sent + valid_for;
                        }
                        Ok(false) => {
                            Metrics::inc(&client.inner.metrics.lost);
                            self.lost(LostReason::NotHeld);
                            return;
                        }
                        Err(e) => {
                            Metrics::inc(&client.inner.metrics.renewal_failures);
                            tracing::warn!(name = %self.name, error = %e, "lock renewal failed");
                            if Instant::now() >= deadline {
                                self.expired();
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    /// No renewal succeeded within the lease: the key may have expired on the server.
    fn expired(&self) {
        if let Some(inner) = self.client.upgrade() {
            Metrics::inc(&inner.metrics.lost);
        }
        self.lost(LostReason::RenewalFailed);
    }

    fn lost(&self, reason: LostReason) {
        tracing::warn!(name = %self.name, owner = %self.field, ?reason, "lock lost");
        self.lost_tx.send_replace(Some(reason));
    }

    /// [`Task::renew`], tried once more at once when the connection was dropped: the command
    /// connection reconnects on its own (to the new master after a failover behind a stable
    /// address), and waiting a whole period would hide a lost lock for that long.
    async fn renew_retrying(&self, client: &Client, lease: Duration) -> redis::RedisResult<bool> {
        match self.renew(client, lease).await {
            Err(e) if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() => {
                tracing::debug!(name = %self.name, error = %e, "renewal connection dropped; retrying");
                self.renew(client, lease).await
            }
            other => other,
        }
    }

    async fn renew(&self, client: &Client, lease: Duration) -> redis::RedisResult<bool> {
        let mut conn = client.connection();
        let r: i64 = match &self.renewal {
            Renewal::Hash => {
                scripts::RENEW
                    .key(&self.name)
                    .arg(ms(lease))
                    .arg(&self.field)
                    .invoke_async(&mut conn)
                    .await?
            }
            Renewal::Read { key_prefix } => {
                scripts::READ_RENEW
                    .key(&self.name)
                    .key(key_prefix)
                    .arg(ms(lease))
                    .arg(&self.field)
                    .invoke_async(&mut conn)
                    .await?
            }
        };
        Ok(r == 1)
    }
}
