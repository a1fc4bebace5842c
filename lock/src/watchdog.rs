//! The watchdog and the lock-lost signal.
//!
//! Renewal is batched as Redisson 3.2x's renewal scheduler (`RenewalTask`, `LockTask`,
//! `ReadLockTask`) does it: one scheduler task per client, while any hold wants renewal, wakes
//! every lease/3 and renews **all** watchdog holds of the client in chunks of
//! [`ClientOptions::watchdog_batch_size`](crate::ClientOptions::watchdog_batch_size) (Redisson's
//! `lockWatchdogBatchSize`, 100), one script call per chunk (in a cluster, per chunk of one hash
//! slot). A service holding thousands of locks pays tens of round trips per period, not
//! thousands.
//!
//! Each hold has a small task of its own that keeps the lost-signal promise: it fires the
//! signal at the moment the key may have expired (send time of the last successful renewal +
//! lease − [`safety_margin`]) unless a renewal moved that deadline first; a renewal that finds
//! the lock gone fires it at once. Locks taken with an explicit lease get no renewal; their
//! signal fires when the lease runs out.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::client::{ms, Client, Inner, Metrics};
use crate::cluster::{key_slot, Connection};
use crate::error::LostReason;
use crate::scripts;

/// How a hold is renewed.
#[derive(Debug, Clone)]
pub(crate) enum Renewal {
    /// `hexists` + `pexpire` on the hash field (`LockTask`).
    Hash,
    /// Redisson's read-lock renewal (`ReadLockTask`: also renews each read-hold timeout key).
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
    state: Mutex<State>,
    shut: AtomicBool,
}

#[derive(Default)]
struct State {
    /// BTreeMap: renewal rounds list the holds (and so order their script arguments) the same
    /// way in every run.
    entries: BTreeMap<Key, Entry>,
    /// The renewal scheduler, while any hold wants renewal.
    scheduler: Option<Scheduler>,
}

struct Scheduler {
    task: JoinHandle<()>,
    /// Holds to renew at once (a leased re-entry cut the key's TTL under a renewed hold).
    urgent: mpsc::UnboundedSender<Key>,
}

struct Entry {
    /// The modes of the holds, in acquisition order (re-entries nest: the newest goes first).
    holds: Vec<HoldMode>,
    renewal: Renewal,
    /// The lease timer (leased holds) or the deadline watcher (watchdog).
    task: Option<JoinHandle<()>>,
    /// Whether the scheduler renews this hold (rather than a lease timer running out).
    renewing: bool,
    /// While renewing: when the key may have expired unless renewed; renewals move it.
    deadline_tx: Option<watch::Sender<Instant>>,
    lost_tx: watch::Sender<Option<LostReason>>,
    /// A periodic renewal of this hold is under way (its node may be slow): later rounds
    /// leave the hold to it instead of piling up calls behind it.
    in_flight: bool,
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
        self.deadline_tx = None;
    }

    /// Runs the task `mode` needs, `sent` being when the request that set the key's TTL was
    /// sent: a deadline watcher the scheduler's renewals push forward, or a lease timer.
    fn start(&mut self, client: &Client, key: &Key, mode: HoldMode, sent: Instant) {
        self.stop_task();
        let watch = Watch {
            client: client.weak(),
            name: key.0.clone(),
            field: key.1.clone(),
            lost_tx: self.lost_tx.clone(),
        };
        let rt = &client.inner.runtime;
        self.task = Some(match mode {
            HoldMode::Lease(lease) => {
                rt.spawn(watch.lease_timer(sent + lease.saturating_sub(safety_margin(lease))))
            }
            HoldMode::Watchdog(lease) => {
                let (tx, rx) = watch::channel(sent + valid_for(lease));
                self.deadline_tx = Some(tx);
                self.renewing = true;
                rt.spawn(watch.deadline(rx))
            }
        });
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

/// How long after its send time a request that set `lease` keeps the key certainly alive.
fn valid_for(lease: Duration) -> Duration {
    lease.saturating_sub(safety_margin(lease))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reports a loss unless one was reported already (the first reason stands).
fn report_lost(lost_tx: &watch::Sender<Option<LostReason>>, reason: LostReason) -> bool {
    lost_tx.send_if_modified(|v| {
        if v.is_some() {
            return false;
        }
        *v = Some(reason);
        true
    })
}

impl Registry {
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut.load(Ordering::Acquire)
    }

    /// Records one more hold of (name, field) taken in `mode` by a request sent at `sent`, and
    /// runs what the holds need: renewal while any hold wants it (a leased re-entry leaves it
    /// running, and has the key renewed at once), else a timer for the newest lease.
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
        let mut st = lock(&self.state);
        let key = (name.to_owned(), field.to_owned());
        let e = st.entries.entry(key.clone()).or_insert_with(|| Entry {
            holds: Vec::new(),
            renewal: renewal.clone(),
            task: None,
            renewing: false,
            deadline_tx: None,
            lost_tx: watch::channel(None).0,
            in_flight: false,
        });
        if e.lost_tx.borrow().is_some() {
            // The previous hold was lost; this acquisition starts a new one with a fresh signal
            // (existing subscribers keep seeing the loss).
            e.holds.clear();
            e.stop_task();
            e.lost_tx = watch::channel(None).0;
        }
        e.renewal = renewal;
        e.holds.push(mode);
        let mut urgent = false;
        match (e.watchdog(), mode) {
            // Already renewing, and this re-entry set the watchdog's own lease again.
            (Some(_), HoldMode::Watchdog(_)) if e.renewing && e.task.is_some() => {}
            // A leased re-entry under a renewed hold cut the key's TTL to its lease: renew at
            // once, so the outer hold keeps the watchdog's lease.
            (Some(lease), HoldMode::Lease(short)) => {
                if !e.renewing {
                    e.start(client, &key, HoldMode::Watchdog(lease), sent);
                }
                // The key now lives only as long as the re-entry's lease: so does the
                // signal's promise, until the urgent renewal gives it the watchdog's again.
                if let Some(tx) = &e.deadline_tx {
                    let cut = sent + valid_for(short);
                    tx.send_if_modified(|d| {
                        let earlier = cut < *d;
                        if earlier {
                            *d = cut;
                        }
                        earlier
                    });
                }
                urgent = true;
            }
            (Some(lease), _) => e.start(client, &key, HoldMode::Watchdog(lease), sent),
            (None, mode) => e.start(client, &key, mode, sent),
        }
        let renewing = e.renewing;
        if renewing {
            let s = ensure_scheduler(&mut st, client);
            if urgent {
                let _ = s.urgent.send(key);
            }
        }
    }

    /// Drops one hold (the newest), or all with `fully`; the last one stops the task and ends
    /// the signal. Called whatever the release script answered, as Redisson cancels renewal
    /// whatever the unlock's outcome.
    pub(crate) fn release(&self, client: &Client, name: &str, field: &str, fully: bool) {
        let mut st = lock(&self.state);
        let key = (name.to_owned(), field.to_owned());
        let Some(e) = st.entries.get_mut(&key) else {
            return;
        };
        if fully {
            e.holds.clear();
        } else {
            e.holds.pop();
        }
        if e.holds.is_empty() {
            if let Some(mut e) = st.entries.remove(&key) {
                e.stop_task();
            }
            return;
        }
        if e.renewing && e.watchdog().is_none() {
            // The last hold that wanted renewal is gone: the leased ones left run out.
            if let Some(lease) = e.newest_lease() {
                e.start(client, &key, HoldMode::Lease(lease), Instant::now());
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
        let mut st = lock(&self.state);
        let key = (name.to_owned(), field.to_owned());
        let Some(e) = st.entries.get_mut(&key) else {
            return;
        };
        if let Some(last) = e.holds.last_mut() {
            *last = HoldMode::Lease(lease);
        }
        if e.watchdog().is_none() && e.lost_tx.borrow().is_none() {
            e.start(client, &key, HoldMode::Lease(lease), sent);
        }
    }

    /// The periodic renewals of `items` have answered (or failed): the next round may renew
    /// them again.
    fn landed(&self, items: &[Item]) {
        let mut st = lock(&self.state);
        for i in items {
            if let Some(e) = st.entries.get_mut(&(i.name.clone(), i.field.clone())) {
                e.in_flight = false;
            }
        }
    }

    /// Renews every renewing hold at once, as urgent holds are (after a failover: a hold the
    /// new master lacks is found lost now, not a renewal period later).
    pub(crate) fn renew_all_now(&self) {
        let st = lock(&self.state);
        let Some(s) = &st.scheduler else {
            return;
        };
        for (k, e) in &st.entries {
            if e.renewing && e.lost_tx.borrow().is_none() {
                let _ = s.urgent.send(k.clone());
            }
        }
    }

    /// Forgets every hold of `name` (after `force_unlock`).
    pub(crate) fn release_all(&self, name: &str) {
        let mut st = lock(&self.state);
        st.entries.retain(|(n, _), e| {
            if n == name {
                e.stop_task();
                false
            } else {
                true
            }
        });
    }

    pub(crate) fn signal(&self, name: &str, field: &str) -> Option<LostSignal> {
        let st = lock(&self.state);
        st.entries
            .get(&(name.to_owned(), field.to_owned()))
            .map(|e| LostSignal {
                rx: e.lost_tx.subscribe(),
            })
    }

    /// Whether this client holds (name, field) as far as it knows: a hold was registered by an
    /// acquisition and not released since (lost or not).
    pub(crate) fn holds(&self, name: &str, field: &str) -> bool {
        lock(&self.state)
            .entries
            .contains_key(&(name.to_owned(), field.to_owned()))
    }

    /// Whether the hold of (name, field) was reported lost (and not released since).
    pub(crate) fn is_lost(&self, name: &str, field: &str) -> bool {
        lock(&self.state)
            .entries
            .get(&(name.to_owned(), field.to_owned()))
            .is_some_and(|e| e.lost_tx.borrow().is_some())
    }

    /// Whether a hold that wants renewal remains after the newest one is released (the lease
    /// an unlock's PEXPIRE must leave on the key).
    pub(crate) fn renews_after_release(&self, name: &str, field: &str) -> bool {
        lock(&self.state)
            .entries
            .get(&(name.to_owned(), field.to_owned()))
            .is_some_and(|e| {
                let n = e.holds.len().saturating_sub(1);
                e.holds
                    .get(..n)
                    .is_some_and(|rest| rest.iter().any(|m| matches!(m, HoldMode::Watchdog(_))))
            })
    }

    /// Whether the watchdog renews (name, field) right now: held, renewing, and not lost.
    pub(crate) fn is_renewing(&self, name: &str, field: &str) -> bool {
        lock(&self.state)
            .entries
            .get(&(name.to_owned(), field.to_owned()))
            .is_some_and(|e| e.renewing && e.lost_tx.borrow().is_none())
    }

    pub(crate) fn shutdown(&self) {
        self.shut.store(true, Ordering::Release);
        let mut st = lock(&self.state);
        for (_, mut e) in std::mem::take(&mut st.entries) {
            e.stop_task();
        }
        if let Some(s) = st.scheduler.take() {
            s.task.abort();
        }
    }

    /// The holds to renew now: those given (urgent), or every renewing hold whose last
    /// periodic renewal has answered (those are marked in flight until theirs does). With none
    /// left at a periodic round, the scheduler is retired (under the same lock `register`
    /// starts it under, so no hold is left without one).
    fn due(&self, only: Option<&[Key]>) -> Option<Vec<Item>> {
        let mut st = lock(&self.state);
        let renewing = |e: &Entry| e.renewing && e.lost_tx.borrow().is_none();
        if only.is_none() && !st.entries.values().any(renewing) {
            st.scheduler = None;
            return None;
        }
        let item = |k: &Key, e: &Entry| {
            let deadline_tx = e.deadline_tx.clone()?;
            (e.renewing && e.lost_tx.borrow().is_none()).then(|| Item {
                name: k.0.clone(),
                field: k.1.clone(),
                renewal: e.renewal.clone(),
                deadline_tx,
                lost_tx: e.lost_tx.clone(),
            })
        };
        match only {
            Some(keys) => Some(
                keys.iter()
                    .filter_map(|k| st.entries.get(k).and_then(|e| item(k, e)))
                    .collect(),
            ),
            None => {
                let items: Vec<Item> = st
                    .entries
                    .iter()
                    .filter(|(_, e)| !e.in_flight)
                    .filter_map(|(k, e)| item(k, e))
                    .collect();
                for i in &items {
                    if let Some(e) = st.entries.get_mut(&(i.name.clone(), i.field.clone())) {
                        e.in_flight = true;
                    }
                }
                Some(items)
            }
        }
    }

    /// A renewal found (name, field) not held: reports the loss and stops its task, only while
    /// the hold the renewal was for is still registered. A hold released meanwhile (a clean
    /// unlock racing the renewal, which read the holds before the unlock and ran after it) or
    /// replaced by a newer one was not lost: nothing is reported. True when a loss was.
    fn not_held(&self, item: &Item) -> bool {
        let mut st = lock(&self.state);
        let current = st
            .entries
            .get_mut(&(item.name.clone(), item.field.clone()))
            .filter(|e| e.lost_tx.same_channel(&item.lost_tx));
        let Some(e) = current else {
            return false;
        };
        e.stop_task();
        drop(st);
        let reported = report_lost(&item.lost_tx, LostReason::NotHeld);
        if reported {
            tracing::warn!(name = %item.name, owner = %item.field, reason = ?LostReason::NotHeld, "lock lost");
        }
        reported
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for e in st.entries.values_mut() {
            e.stop_task();
        }
        if let Some(s) = st.scheduler.take() {
            s.task.abort();
        }
    }
}

/// Starts the client's renewal scheduler unless it runs.
fn ensure_scheduler<'a>(st: &'a mut State, client: &Client) -> &'a Scheduler {
    if st.scheduler.as_ref().is_some_and(|s| s.task.is_finished()) {
        st.scheduler = None;
    }
    st.scheduler.get_or_insert_with(|| {
        let (urgent, rx) = mpsc::unbounded_channel();
        let task = client.inner.runtime.spawn(run_scheduler(
            client.weak(),
            rx,
            client.options().watchdog_timeout,
        ));
        Scheduler { task, urgent }
    })
}

/// One hold to renew, with the senders of the entry it was read from.
struct Item {
    name: String,
    field: String,
    renewal: Renewal,
    deadline_tx: watch::Sender<Instant>,
    lost_tx: watch::Sender<Option<LostReason>>,
}

/// Renews every watchdog hold every lease/3 (counted from the end of the previous round, as
/// Redisson reschedules its renewal task), and urgent holds at once.
async fn run_scheduler(
    client: Weak<Inner>,
    mut urgent: mpsc::UnboundedReceiver<Key>,
    lease: Duration,
) {
    let period = lease / 3;
    let mut next = Instant::now() + period;
    loop {
        // Urgent holds first: their key's TTL was just cut to a short lease; a periodic round
        // due at the same instant follows on the next turn of the loop.
        let only = tokio::select! {
            biased;
            Some(k) = urgent.recv() => {
                let mut keys = vec![k];
                while let Ok(k) = urgent.try_recv() {
                    keys.push(k);
                }
                Some(keys)
            }
            _ = tokio::time::sleep_until(next) => None,
        };
        let Some(inner) = client.upgrade() else {
            return;
        };
        let client = Client { inner };
        let Some(items) = client.inner.registry.due(only.as_deref()) else {
            return;
        };
        let periodic = only.is_none();
        // Each chunk in a task of its own, not awaited here: a slow or hung node (a shard
        // of a cluster) delays only its own holds, not the next round of the others.
        for chunk in chunks(&client, items) {
            let client = client.clone();
            client.inner.runtime.clone().spawn(async move {
                renew_chunk(&client, &chunk, lease).await;
                if periodic {
                    client.inner.registry.landed(&chunk);
                }
            });
        }
        drop(client);
        if periodic {
            next = Instant::now() + period;
        }
    }
}

/// Renews `items` in chunks of the batch size (one hash slot per chunk in a cluster), all
/// chunks at once.
#[cfg(test)]
async fn renew(client: &Client, items: Vec<Item>, lease: Duration) {
    let futs = chunks(client, items)
        .into_iter()
        .map(|c| async move { renew_chunk(client, &c, lease).await });
    futures::future::join_all(futs).await;
}

/// `items` in chunks of the batch size, one hash slot per chunk in a cluster, in a
/// deterministic order.
fn chunks(client: &Client, items: Vec<Item>) -> Vec<Vec<Item>> {
    let batch = client.options().watchdog_batch_size.max(1);
    let cluster = matches!(client.connection(), Connection::Cluster(_));
    // BTreeMap: a deterministic chunk order.
    let mut groups: BTreeMap<(bool, u16), Vec<Item>> = BTreeMap::new();
    for item in items {
        let read = matches!(item.renewal, Renewal::Read { .. });
        let slot = if cluster {
            key_slot(item.name.as_bytes())
        } else {
            0
        };
        groups.entry((read, slot)).or_default().push(item);
    }
    let mut chunks: Vec<Vec<Item>> = Vec::new();
    for group in groups.into_values() {
        let mut group = group.into_iter().peekable();
        while group.peek().is_some() {
            chunks.push(group.by_ref().take(batch).collect());
        }
    }
    chunks
}

async fn renew_chunk(client: &Client, chunk: &[Item], lease: Duration) {
    let span = tracing::debug_span!("renew", locks = chunk.len());
    let sent = Instant::now();
    let res = tracing::Instrument::instrument(renew_retrying(client, chunk, lease), span).await;
    let metrics = &client.inner.metrics;
    match res {
        Ok(flags) if flags.len() == chunk.len() => {
            for (item, renewed) in chunk.iter().zip(flags) {
                if renewed == 1 {
                    Metrics::inc(&metrics.renewals);
                    item.deadline_tx.send_replace(sent + valid_for(lease));
                } else if client.inner.registry.not_held(item) {
                    Metrics::inc(&metrics.lost);
                }
            }
            tracing::trace!(locks = chunk.len(), "locks renewed");
        }
        other => {
            for _ in chunk {
                Metrics::inc(&metrics.renewal_failures);
            }
            tracing::warn!(locks = chunk.len(), result = ?other, "lock renewal failed");
        }
    }
}

/// [`renew_batch`], tried once more at once when the connection was dropped: the command
/// connection reconnects on its own (to the new master after a failover behind a stable
/// address), and waiting a whole period would hide a lost lock for that long.
async fn renew_retrying(
    client: &Client,
    chunk: &[Item],
    lease: Duration,
) -> redis::RedisResult<Vec<i64>> {
    match renew_batch(client, chunk, lease).await {
        Err(e) if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() => {
            tracing::debug!(error = %e, "renewal connection dropped; retrying");
            renew_batch(client, chunk, lease).await
        }
        other => other,
    }
}

/// One script call renewing every hold of `chunk` (all of one renewal kind).
async fn renew_batch(
    client: &Client,
    chunk: &[Item],
    lease: Duration,
) -> redis::RedisResult<Vec<i64>> {
    let read = chunk
        .first()
        .is_some_and(|i| matches!(i.renewal, Renewal::Read { .. }));
    let mut inv = if read {
        scripts::READ_RENEW_BATCH.prepare_invoke()
    } else {
        scripts::RENEW_BATCH.prepare_invoke()
    };
    inv.arg(ms(lease));
    for item in chunk {
        inv.key(&item.name);
        match &item.renewal {
            Renewal::Read { key_prefix } => {
                inv.key(key_prefix).arg(1).arg(&item.field);
            }
            Renewal::Hash => {
                inv.arg(&item.field);
            }
        }
    }
    let mut conn = client.connection();
    inv.invoke_async(&mut conn).await
}

/// What a hold's own task watches: its lease, or its renewal deadline.
struct Watch {
    client: Weak<Inner>,
    name: String,
    field: String,
    lost_tx: watch::Sender<Option<LostReason>>,
}

impl Watch {
    /// A leased hold: lost when the lease runs out.
    async fn lease_timer(self, at: Instant) {
        tokio::time::sleep_until(at).await;
        self.lost(LostReason::LeaseExpired);
    }

    /// A renewed hold: lost when no renewal moved the deadline before it passed. Ends when the
    /// hold ends (the entry drops the deadline's sender).
    async fn deadline(self, mut deadline: watch::Receiver<Instant>) {
        loop {
            let at = *deadline.borrow_and_update();
            // A renewal that moved the deadline wins over the old deadline passing at the same
            // instant: the renewal found the key alive, so the new deadline holds.
            tokio::select! {
                biased;
                changed = deadline.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                _ = tokio::time::sleep_until(at) => {
                    // The key may have expired on the server, unless a renewal succeeds first.
                    if let Some(inner) = self.client.upgrade() {
                        Metrics::inc(&inner.metrics.lost);
                    }
                    self.lost(LostReason::RenewalFailed);
                    return;
                }
            }
        }
    }

    fn lost(&self, reason: LostReason) {
        if report_lost(&self.lost_tx, reason.clone()) {
            tracing::warn!(name = %self.name, owner = %self.field, ?reason, "lock lost");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn client() -> (locksmith_server::ServerHandle, Client) {
        let server = locksmith_server::Server::builder().start().await.unwrap();
        let client = Client::open(&server.url()).await.unwrap();
        (server, client)
    }

    fn deadline(client: &Client, name: &str, field: &str) -> Option<Instant> {
        let st = lock(&client.inner.registry.state);
        let e = st.entries.get(&(name.to_owned(), field.to_owned()))?;
        e.deadline_tx.as_ref().map(|tx| *tx.borrow())
    }

    // Issue 36, item 6: a leased re-entry under a renewed hold cuts the key's TTL to its lease;
    // the lost signal's deadline follows at once (before the urgent renewal restores both).
    #[tokio::test]
    async fn a_leased_reentry_brings_the_lost_deadline_forward_to_its_lease() {
        let (_server, client) = client().await;
        let registry = &client.inner.registry;
        let (name, field) = ("reentered", "c:1");
        let t0 = Instant::now();
        let watchdog = client.options().watchdog_timeout;
        registry.register(
            &client,
            name,
            field,
            Renewal::Hash,
            HoldMode::Watchdog(watchdog),
            t0,
        );
        assert_eq!(
            deadline(&client, name, field),
            Some(t0 + valid_for(watchdog))
        );
        let short = Duration::from_millis(500);
        let t1 = Instant::now();
        registry.register(
            &client,
            name,
            field,
            Renewal::Hash,
            HoldMode::Lease(short),
            t1,
        );
        assert_eq!(deadline(&client, name, field), Some(t1 + valid_for(short)));
        registry.release(&client, name, field, true);
    }

    // Issue 36, item 13: a renewal round that read the holds before a clean unlock and ran its
    // script after it finds the key gone; that is no loss (no NotHeld, no count, no warning).
    #[tokio::test]
    async fn a_renewal_that_ran_after_a_clean_unlock_reports_no_loss() {
        let (_server, client) = client().await;
        let lock = client.lock("raced");
        lock.lock().await.unwrap();
        let mut signal = lock.lost_signal().unwrap();
        let items = client.inner.registry.due(None).unwrap();
        assert_eq!(items.len(), 1);
        lock.unlock().await.unwrap();
        renew(&client, items, client.options().watchdog_timeout).await;
        assert_eq!(signal.lost().await, None);
        assert_eq!(client.metrics().lost, 0);
    }
}
