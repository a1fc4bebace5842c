//! Waiters: one shared pub/sub connection per client multiplexes every waiter's channel, with
//! reference-counted `SUBSCRIBE`/`UNSUBSCRIBE` and a dispatcher task that routes messages.
//!
//! On a lock channel ([`Wake::Lock`]) message `0` wakes one waiter (a permit is kept if nobody
//! waits at that instant, as Redisson's latch semaphore does) and message `1` wakes all of them.
//! On semaphore and count-down-latch channels ([`Wake::All`]) every message wakes every waiter,
//! which then re-checks the state in Redis.
//!
//! After a failover ([`PubSubHub::switch`]) the connection moves to the new master, every channel
//! is subscribed again and every waiter is woken to retry there. When the connection dies on its
//! own (killed, reset), its dispatcher wakes every waiter of that node at once (they retry
//! instead of sleeping until the holder's TTL) and reconnects in the background, subscribing
//! every channel again. In a cluster, a node that cannot be reached may have failed over: the
//! slot map is read again and its channels move to the masters serving their slots now.
//! Connecting, `SUBSCRIBE` and `UNSUBSCRIBE` are bounded in time, and each node's connection
//! has a lock of its own, so a hung node holds only its own waiters (those of other nodes
//! subscribe meanwhile) and them no longer than the bound.
//!
//! A client opened over a [`Connector`](crate::Connector) dials each pub/sub connection as a
//! new stream of that connector, with the same reconnect and resubscribe behaviour.
//!
//! Channels and connections are kept in `BTreeMap`s: a reconnect subscribes, and a lost
//! connection wakes, channels in name order, the same in every run of a seeded simulation.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use redis::aio::PubSubSink;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::cluster::{key_slot, SlotMap};
use crate::connector::Dialer;
use crate::error::Result;

pub(crate) struct PubSubHub {
    shared: Arc<Shared>,
}

/// How a message on a channel wakes its waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Redisson's `LockPubSub`: `0` wakes one waiter, `1` wakes all.
    Lock,
    /// `SemaphorePubSub` / `CountDownLatchPubSub`: every message wakes every waiter.
    All,
}

struct Shared {
    // std Mutex, never held across an await; replaced on failover.
    client: Mutex<Source>,
    /// Set for a Redis Cluster: channels are subscribed on the node owning their slot.
    cluster: Option<ClusterNodes>,
    /// One pub/sub connection per node ("" for the single server outside a cluster), each
    /// behind its own async lock, which serializes that node's SUBSCRIBE/UNSUBSCRIBE so
    /// reference counts and server state agree. The map itself is a std Mutex, never held
    /// across an await.
    conns: Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<Conn>>>>,
    /// The hub was shut down: no new subscription.
    shut: AtomicBool,
    // std Mutex: only touched synchronously (never across an await), also by the dispatcher.
    channels: Mutex<BTreeMap<String, ChannelEntry>>,
    /// Bound on a connect, `SUBSCRIBE` or `UNSUBSCRIBE`.
    timeout: Duration,
}

/// Where the single server's pub/sub connections come from.
#[derive(Clone)]
enum Source {
    /// A URL client (also the new master's after a Sentinel failover).
    Client(redis::Client),
    /// Streams of the client's connector.
    Dialer(Dialer),
}

impl Source {
    async fn pubsub(&self) -> redis::RedisResult<redis::aio::PubSub> {
        match self {
            Source::Client(c) => c.get_async_pubsub().await,
            Source::Dialer(d) => d.pubsub().await,
        }
    }
}

/// How to reach the node owning a slot.
struct ClusterNodes {
    conn: redis::cluster_async::ClusterConnection,
    /// Connection settings (password, protocol…) of the first node; the address is swapped.
    template: redis::ConnectionInfo,
    slots: Mutex<SlotMap>,
}

struct ChannelEntry {
    refs: usize,
    notify: Arc<Notify>,
    wake: Wake,
    /// The node (`host:port`, empty outside a cluster) the channel is subscribed on.
    node: String,
}

#[derive(Default)]
struct Conn {
    sink: Option<PubSubSink>,
    dispatcher: Option<JoinHandle<()>>,
}

impl Conn {
    fn alive(&self) -> bool {
        self.dispatcher.as_ref().is_some_and(|d| !d.is_finished())
    }
}

/// One waiter's interest in a channel; dropping it releases the reference (the last one
/// sends `UNSUBSCRIBE` from a spawned task).
pub(crate) struct Subscription {
    shared: Arc<Shared>,
    channel: String,
    notify: Arc<Notify>,
}

impl Subscription {
    /// Resolves on the next message routed to this waiter (or a permit left by an earlier one).
    /// A waiter that reads state before waiting calls `enable()` on it first, so that a
    /// wake-all message arriving between the read and the wait is not missed.
    pub(crate) fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let shared = self.shared.clone();
        let channel = std::mem::take(&mut self.channel);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move { shared.release(&channel).await });
        }
    }
}

impl PubSubHub {
    pub(crate) fn new(client: redis::Client, timeout: Duration) -> Self {
        PubSubHub::with(Source::Client(client), None, timeout)
    }

    /// A hub whose connections are streams of a connector.
    pub(crate) fn over(dialer: Dialer, timeout: Duration) -> Self {
        PubSubHub::with(Source::Dialer(dialer), None, timeout)
    }

    /// A hub for a Redis Cluster: each channel is subscribed on the master owning its slot.
    pub(crate) fn cluster(
        client: redis::Client,
        conn: redis::cluster_async::ClusterConnection,
        timeout: Duration,
    ) -> Self {
        let template = client.get_connection_info().clone();
        PubSubHub::with(
            Source::Client(client),
            Some(ClusterNodes {
                conn,
                template,
                slots: Mutex::new(SlotMap::default()),
            }),
            timeout,
        )
    }

    fn with(client: Source, cluster: Option<ClusterNodes>, timeout: Duration) -> Self {
        PubSubHub {
            shared: Arc::new(Shared {
                client: Mutex::new(client),
                cluster,
                conns: Mutex::new(BTreeMap::new()),
                shut: AtomicBool::new(false),
                channels: Mutex::new(BTreeMap::new()),
                timeout,
            }),
        }
    }

    /// Subscribes (or adds a reference to an existing subscription of) `channel`, with the wake
    /// policy `wake` (the first subscriber of a channel decides it). Returns once the server
    /// confirmed the subscription, so a message published afterwards is seen.
    pub(crate) async fn subscribe_with(&self, channel: &str, wake: Wake) -> Result<Subscription> {
        let shared = &self.shared;
        // The node the channel is subscribed on already, else the one owning its slot. Bounded:
        // the channel changes nodes only when a reconnect re-homes it, rarely twice in a row.
        let mut stale = false;
        for _ in 0..4 {
            let known = lock(&shared.channels).get(channel).map(|e| e.node.clone());
            let node = match known {
                Some(node) => node,
                None => shared.node_for(channel, stale).await?,
            };
            let conn = shared.conn(&node);
            let mut conn = conn.lock().await;
            if shared.shut.load(Ordering::Acquire) {
                return Err(crate::LockError::Shutdown);
            }
            let subscribed = match lock(&shared.channels).get_mut(channel) {
                // Moved to another node meanwhile: start over there.
                Some(e) if e.node != node => continue,
                Some(e) if conn.alive() => {
                    e.refs += 1;
                    return Ok(Subscription {
                        shared: shared.clone(),
                        channel: channel.to_owned(),
                        notify: e.notify.clone(),
                    });
                }
                // A channel whose connection died is subscribed again with the others of
                // its node when the connection is made anew.
                Some(_) => true,
                None => false,
            };
            if let Err(e) = shared.ensure_connected(&mut conn, &node).await {
                // In a cluster the node may have failed over: read the slot map again and
                // move its channels to the new owners, then try there, once.
                if shared.cluster.is_none() || stale {
                    return Err(e);
                }
                drop(conn);
                stale = true;
                shared.rehome(&node).await;
                continue;
            }
            let sink = conn.sink.as_mut().ok_or(crate::LockError::Shutdown)?;
            if !subscribed {
                if let Err(e) = bounded(shared.timeout, sink.subscribe(channel)).await {
                    conn.sink = None;
                    return Err(e.into());
                }
            }
            let mut map = lock(&shared.channels);
            let e = map
                .entry(channel.to_owned())
                .or_insert_with(|| ChannelEntry {
                    refs: 0,
                    notify: Arc::new(Notify::new()),
                    wake,
                    node,
                });
            e.refs += 1;
            return Ok(Subscription {
                shared: shared.clone(),
                channel: channel.to_owned(),
                notify: e.notify.clone(),
            });
        }
        Err(crate::LockError::Redis(redis::RedisError::from((
            redis::ErrorKind::Client,
            "the channel kept moving between nodes",
            channel.to_owned(),
        ))))
    }

    /// [`subscribe_with`](Self::subscribe_with) bounded by a waiter's `deadline`, as Redisson
    /// bounds an acquire's subscription by the time left: `None` when the deadline passed
    /// first (the wait is over; a subscription completed after it is released again).
    pub(crate) async fn subscribe_until(
        &self,
        channel: &str,
        wake: Wake,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Option<Subscription>> {
        let subscribing = self.subscribe_with(channel, wake);
        match deadline {
            None => subscribing.await.map(Some),
            Some(d) => match tokio::time::timeout_at(d, subscribing).await {
                Ok(r) => r.map(Some),
                Err(_) => Ok(None),
            },
        }
    }

    /// Moves the pub/sub connection to `client` (the new master after a failover): drops the
    /// old connection, subscribes every live channel on the new one, and wakes every waiter so
    /// it retries against the new master.
    ///
    /// # Errors
    /// When the new server cannot be reached (the next `subscribe` tries again).
    pub(crate) async fn switch(&self, client: redis::Client) -> Result<()> {
        let shared = &self.shared;
        let conn = shared.conn("");
        let mut conn = conn.lock().await;
        *lock(&shared.client) = Source::Client(client);
        conn.sink = None;
        if let Some(d) = conn.dispatcher.take() {
            d.abort();
        }
        let res = if lock(&shared.channels).is_empty() {
            Ok(())
        } else {
            shared.ensure_connected(&mut conn, "").await
        };
        for e in lock(&shared.channels).values() {
            e.notify.notify_waiters();
            e.notify.notify_one();
        }
        res
    }

    pub(crate) async fn shutdown(&self) {
        self.shared.shut.store(true, Ordering::Release);
        let conns: Vec<_> = lock(&self.shared.conns).values().cloned().collect();
        for conn in conns {
            let mut conn = conn.lock().await;
            conn.sink = None;
            if let Some(d) = conn.dispatcher.take() {
                d.abort();
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `fut` within `limit`, a timeout being a Redis I/O error like the others.
async fn bounded<T>(
    limit: Duration,
    fut: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> redis::RedisResult<T> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "pub/sub operation timed out",
        ))),
    }
}

impl Shared {
    /// The connection (and its lock) of `node`.
    fn conn(&self, node: &str) -> Arc<tokio::sync::Mutex<Conn>> {
        lock(&self.conns)
            .entry(node.to_owned())
            .or_default()
            .clone()
    }

    /// The node to subscribe `channel` on: "" outside a cluster, else the `host:port` of the
    /// master owning the channel's slot (the slot map is read again when it has no owner, or
    /// when `stale`).
    async fn node_for(&self, channel: &str, stale: bool) -> Result<String> {
        let Some(cluster) = &self.cluster else {
            return Ok(String::new());
        };
        let slot = key_slot(channel.as_bytes());
        if !stale {
            if let Some(node) = lock(&cluster.slots).node(slot) {
                return Ok(node.to_owned());
            }
        }
        let mut conn = cluster.conn.clone();
        let map = bounded(self.timeout, SlotMap::fetch(&mut conn)).await?;
        let node = map.node(slot).map(str::to_owned);
        *lock(&cluster.slots) = map;
        node.ok_or_else(|| {
            crate::LockError::Redis(redis::RedisError::from((
                redis::ErrorKind::ClusterConnectionNotFound,
                "no node serves the slot of",
                channel.to_owned(),
            )))
        })
    }

    /// After the connection to cluster node `from` failed: reads the slot map again and moves
    /// each channel of `from` whose slot another master serves now (a failover) to that
    /// master, subscribing it there, and wakes its waiters so they retry against the new
    /// owner. Best effort: when the map cannot be read, nothing moves (the caller retries).
    async fn rehome(self: &Arc<Self>, from: &str) {
        let Some(cluster) = &self.cluster else {
            return;
        };
        let mut conn = cluster.conn.clone();
        let map = match bounded(self.timeout, SlotMap::fetch(&mut conn)).await {
            Ok(map) => map,
            Err(e) => {
                tracing::debug!(error = %e, node = from, "cannot read the slot map");
                return;
            }
        };
        let mut moved: BTreeMap<String, Vec<(String, Arc<Notify>)>> = BTreeMap::new();
        for (channel, e) in lock(&self.channels).iter_mut() {
            if e.node != from {
                continue;
            }
            if let Some(owner) = map.node(key_slot(channel.as_bytes())) {
                if owner != from {
                    e.node = owner.to_owned();
                    moved
                        .entry(owner.to_owned())
                        .or_default()
                        .push((channel.clone(), e.notify.clone()));
                }
            }
        }
        *lock(&cluster.slots) = map;
        for (node, channels) in moved {
            tracing::info!(
                from,
                to = node,
                channels = channels.len(),
                "pub/sub channels moved after a failover"
            );
            let conn = self.conn(&node);
            let mut conn = conn.lock().await;
            // A new connection subscribes every channel of its node; an existing one gets
            // the moved channels now (subscribing twice on one connection is harmless).
            if self.ensure_connected(&mut conn, &node).await.is_ok() {
                if let Some(sink) = conn.sink.as_mut() {
                    let names: Vec<&str> = channels.iter().map(|(c, _)| c.as_str()).collect();
                    if let Err(e) = bounded(self.timeout, sink.subscribe(&names)).await {
                        tracing::debug!(error = %e, node, "subscribe after re-homing failed");
                        conn.sink = None;
                    }
                }
            }
            for (_, notify) in &channels {
                notify.notify_waiters();
                notify.notify_one();
            }
        }
    }

    /// Where to connect for `node` ("" = the single server).
    fn client_for(&self, node: &str) -> Result<Source> {
        let Some(cluster) = &self.cluster else {
            return Ok(lock(&self.client).clone());
        };
        let (host, port) = node
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.to_owned(), p.parse::<u16>().ok()?)))
            .ok_or_else(|| {
                crate::LockError::Redis(redis::RedisError::from((
                    redis::ErrorKind::Client,
                    "bad node address",
                    node.to_owned(),
                )))
            })?;
        let info = cluster
            .template
            .clone()
            .set_addr(redis::ConnectionAddr::Tcp(host, port));
        Ok(Source::Client(redis::Client::open(info)?))
    }

    async fn ensure_connected(self: &Arc<Self>, conn: &mut Conn, node: &str) -> Result<()> {
        if conn.alive() && conn.sink.is_some() {
            return Ok(());
        }
        if let Some(d) = conn.dispatcher.take() {
            d.abort();
        }
        let client = self.client_for(node)?;
        let (mut sink, mut stream) = bounded(self.timeout, client.pubsub()).await?.split();
        // After a reconnect, subscribe again to every channel of this node that has waiters.
        let existing: Vec<String> = lock(&self.channels)
            .iter()
            .filter(|(_, e)| e.node == node)
            .map(|(c, _)| c.clone())
            .collect();
        if !existing.is_empty() {
            bounded(self.timeout, sink.subscribe(&existing)).await?;
        }
        let weak = Arc::downgrade(self);
        let node = node.to_owned();
        conn.dispatcher = Some(tokio::spawn(async move {
            while let Some(msg) = stream.next().await {
                let Some(shared) = weak.upgrade() else { return };
                let entry = lock(&shared.channels)
                    .get(msg.get_channel_name())
                    .map(|e| (e.notify.clone(), e.wake));
                if let Some((n, wake)) = entry {
                    if wake == Wake::All || msg.get_payload_bytes() == b"1" {
                        n.notify_waiters();
                    }
                    // Also leaves a permit for a waiter between its attempt and its wait.
                    n.notify_one();
                }
            }
            tracing::debug!(node, "pub/sub connection ended");
            if let Some(shared) = weak.upgrade() {
                Shared::reconnect(shared, node).await;
            }
        }));
        conn.sink = Some(sink);
        Ok(())
    }

    /// After the connection to `node` ended by itself: wakes every waiter of its channels (they
    /// retry now instead of sleeping until the holder's TTL), then reconnects and subscribes
    /// them again, retrying with backoff while channels wait there and the hub is open.
    fn reconnect(
        shared: Arc<Shared>,
        node: String,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        // Boxed: the dispatcher task it runs in is spawned by `ensure_connected`, which it
        // calls again.
        Box::pin(async move {
            let wake_all = |shared: &Shared| {
                for e in lock(&shared.channels).values().filter(|e| e.node == node) {
                    e.notify.notify_waiters();
                    e.notify.notify_one();
                }
            };
            wake_all(&shared);
            let mut delay = Duration::from_millis(10);
            loop {
                tokio::time::sleep(delay).await;
                // A cluster node that went away may have failed over: its channels move to
                // the masters serving their slots now.
                shared.rehome(&node).await;
                let conn = shared.conn(&node);
                let mut conn = conn.lock().await;
                let waiting = lock(&shared.channels).values().any(|e| e.node == node);
                if shared.shut.load(Ordering::Acquire) || !waiting {
                    return;
                }
                // Forget the connection that ended (this task), then connect anew.
                conn.sink = None;
                drop(conn.dispatcher.take());
                match shared.ensure_connected(&mut conn, &node).await {
                    Ok(()) => {
                        // Messages published while no connection listened are lost: retry now.
                        wake_all(&shared);
                        return;
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, node, "pub/sub reconnect failed");
                        delay = (delay * 2).min(Duration::from_secs(1));
                    }
                }
            }
        })
    }

    async fn release(&self, channel: &str) {
        // Bounded: the channel changes nodes only when a reconnect re-homes it.
        for _ in 0..4 {
            let Some(node) = lock(&self.channels).get(channel).map(|e| e.node.clone()) else {
                return;
            };
            let conn = self.conn(&node);
            let mut conn = conn.lock().await;
            let last = {
                let mut map = lock(&self.channels);
                match map.get_mut(channel) {
                    Some(e) if e.node != node => continue,
                    Some(e) if e.refs > 1 => {
                        e.refs -= 1;
                        false
                    }
                    Some(_) => {
                        map.remove(channel);
                        true
                    }
                    None => return,
                }
            };
            if last {
                if let Some(sink) = conn.sink.as_mut() {
                    if let Err(e) = bounded(self.timeout, sink.unsubscribe(channel)).await {
                        tracing::debug!(error = %e, channel, "unsubscribe failed");
                        conn.sink = None;
                    }
                }
            }
            return;
        }
    }
}
