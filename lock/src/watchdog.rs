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
    holds: u32,
    task: Option<JoinHandle<()>>,
    lost_tx: watch::Sender<Option<LostReason>>,
}

/// A signal the holder can select on: resolves when the lock is lost.
///
/// [`LostSignal::lost`] returns `Some(reason)` when the lock was lost and `None` when the hold
/// ended normally (unlocked, or the client shut down) without a loss.
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
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Registry {
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut.load(Ordering::Acquire)
    }

    /// Records one more hold of (name, field) and (re)starts its background task in `mode`.
    pub(crate) fn register(
        &self,
        client: &Client,
        name: &str,
        field: &str,
        renewal: Renewal,
        mode: HoldMode,
    ) {
        if self.is_shut_down() {
            return;
        }
        let mut map = lock(&self.entries);
        let key = (name.to_owned(), field.to_owned());
        let e = map.entry(key).or_insert_with(|| Entry {
            holds: 0,
            task: None,
            lost_tx: watch::channel(None).0,
        });
        if e.lost_tx.borrow().is_some() {
            // The previous hold was lost; this acquisition starts a new one with a fresh signal
            // (existing subscribers keep seeing the loss).
            e.holds = 0;
            e.lost_tx = watch::channel(None).0;
        }
        e.holds += 1;
        if let Some(t) = e.task.take() {
            t.abort();
        }
        let task = Task {
            client: client.weak(),
            name: name.to_owned(),
            field: field.to_owned(),
            renewal,
            lost_tx: e.lost_tx.clone(),
        };
        e.task = Some(tokio::spawn(task.run(mode)));
    }

    /// Drops one hold (or all with `fully`); the last one stops the task and ends the signal.
    pub(crate) fn release(&self, name: &str, field: &str, fully: bool) {
        let mut map = lock(&self.entries);
        let key = (name.to_owned(), field.to_owned());
        let remove = match map.get_mut(&key) {
            Some(e) => {
                e.holds = e.holds.saturating_sub(1);
                fully || e.holds == 0
            }
            None => false,
        };
        if remove {
            if let Some(e) = map.remove(&key) {
                if let Some(t) = e.task {
                    t.abort();
                }
            }
        }
    }

    /// Forgets every hold of `name` (after `force_unlock`).
    pub(crate) fn release_all(&self, name: &str) {
        let mut map = lock(&self.entries);
        map.retain(|(n, _), e| {
            if n == name {
                if let Some(t) = e.task.take() {
                    t.abort();
                }
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

    pub(crate) fn is_registered(&self, name: &str, field: &str) -> bool {
        lock(&self.entries).contains_key(&(name.to_owned(), field.to_owned()))
    }

    pub(crate) fn shutdown(&self) {
        self.shut.store(true, Ordering::Release);
        let mut map = lock(&self.entries);
        for (_, e) in map.drain() {
            if let Some(t) = e.task {
                t.abort();
            }
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
    async fn run(self, mode: HoldMode) {
        match mode {
            HoldMode::Lease(lease) => {
                tokio::time::sleep(lease).await;
                self.lost(LostReason::LeaseExpired);
            }
            HoldMode::Watchdog(lease) => {
                let period = lease / 3;
                let mut last_ok = tokio::time::Instant::now();
                loop {
                    tokio::time::sleep(period).await;
                    let Some(inner) = self.client.upgrade() else {
                        return;
                    };
                    let client = Client { inner };
                    let span =
                        tracing::debug_span!("renew", name = %self.name, owner = %self.field);
                    match tracing::Instrument::instrument(self.renew_retrying(&client, lease), span)
                        .await
                    {
                        Ok(true) => {
                            Metrics::inc(&client.inner.metrics.renewals);
                            tracing::trace!(name = %self.name, "lock renewed");
                            last_ok = tokio::time::Instant::now();
                        }
                        Ok(false) => {
                            Metrics::inc(&client.inner.metrics.lost);
                            self.lost(LostReason::NotHeld);
                            return;
                        }
                        Err(e) => {
                            Metrics::inc(&client.inner.metrics.renewal_failures);
                            tracing::warn!(name = %self.name, error = %e, "lock renewal failed");
                            if last_ok.elapsed() >= lease {
                                Metrics::inc(&client.inner.metrics.lost);
                                self.lost(LostReason::RenewalFailed);
                                return;
                            }
                        }
                    }
                }
            }
        }
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
