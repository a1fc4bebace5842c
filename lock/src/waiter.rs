//! Waiters: one shared pub/sub connection per client multiplexes every waiter's channel, with
//! reference-counted `SUBSCRIBE`/`UNSUBSCRIBE` and a dispatcher task that routes messages.
//!
//! On a lock channel ([`Wake::Lock`]) message `0` wakes one waiter (a permit is kept if nobody
//! waits at that instant, as Redisson's latch semaphore does) and message `1` wakes all of them.
//! On semaphore channels ([`Wake::Count`]) a message is the count of permits the script saw
//! available and wakes that many waiters at most, as Redisson's `SemaphorePubSub` releases
//! `min(waiters, count)`; on count-down-latch channels ([`Wake::All`]) every message wakes every
//! waiter. A woken waiter re-checks the state in Redis.
//!
//! After a failover ([`PubSubHub::switch`]) the connection moves to the new master, every channel
//! is subscribed again and every waiter is woken to retry there. When the connection dies on its
//! own (killed, reset), or answers no `PING` within the response timeout (a half-open
//! connection: the dispatcher pings every [`ClientOptions::pubsub_ping_interval`], as Redisson
//! pings every `pingConnectionInterval`), its dispatcher wakes every waiter of that node at once
//! (they retry instead of sleeping until the holder's TTL) and a task reconnects in the
//! background, with a jittered back-off, subscribing every channel again. In a cluster, a node
//! that cannot be reached may have failed over: the slot map is read again and its channels
//! move to the masters serving their slots now.
//!
//! A subscriber that finds its node's connection down (dead, reconnecting, or failing to
//! connect) does not fail at once: it tries again, with the same back-off, until its wait ends
//! (a waiter without a bound: the pub/sub timeout, Redisson's subscription timeout), so a lock
//! asked for during a reconnect waits for it. Connecting, `SUBSCRIBE` and `UNSUBSCRIBE` are
//! bounded in time, and each node's connection has a lock of its own, so a hung node holds only
//! its own waiters; those queued behind a connect that failed share its outcome instead of each
//! trying again, so N waiters behind a hung node take one connect timeout, not N.
//!
//! A client opened over a [`Connector`](crate::Connector) dials each pub/sub connection as a
//! new stream of that connector, with the same reconnect and resubscribe behaviour.
//!
//! Channels and connections are kept in `BTreeMap`s: a reconnect subscribes, and a lost
//! connection wakes, channels in name order, the same in every run of a seeded simulation.
//!
//! [`ClientOptions::pubsub_ping_interval`]: crate::ClientOptions::pubsub_ping_interval

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use redis::aio::PubSubSink;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::cluster::{key_slot, SlotMap};
use crate::connector::Dialer;
use crate::entropy::Entropy;
use crate::error::{LockError, Result};

/// First delay of the pub/sub reconnect back-off; each failure doubles it, up to
/// [`RECONNECT_MAX`], and a random part of up to as much again is added.
const RECONNECT_FIRST: Duration = Duration::from_millis(10);
/// Largest delay of the pub/sub reconnect back-off, before jitter.
const RECONNECT_MAX: Duration = Duration::from_secs(1);

pub(crate) struct PubSubHub {
    shared: Arc<Shared>,
}

/// How a message on a channel wakes its waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Redisson's `LockPubSub`: `0` wakes one waiter, `1` wakes all.
    Lock,
    /// `CountDownLatchPubSub`: every message wakes every waiter.
    All,
    /// `SemaphorePubSub`: a message is a count of available permits and wakes that many
    /// waiters at most (every waiter when it is not a number).
    Count,
}

/// The hub's bounds and random source, from the client's options.
pub(crate) struct HubConfig {
    /// Bound on a connect, `SUBSCRIBE` or `UNSUBSCRIBE`, and on the subscription of a waiter
    /// without a bound of its own.
    pub(crate) timeout: Duration,
    /// How often an idle connection is pinged (zero: never).
    pub(crate) ping_interval: Duration,
    /// How long a `PING` may go unanswered before the connection counts as dead.
    pub(crate) ping_timeout: Duration,
    /// The client's random source (the back-off's jitter).
    pub(crate) entropy: Arc<Entropy>,
}

struct Shared {
    // std Mutex, never held across an await; replaced on failover.
    client: Mutex<Source>,
    /// Set for a Redis Cluster: channels are subscribed on the node owning their slot.
    cluster: Option<ClusterNodes>,
    /// One pub/sub connection per node ("" for the single server outside a cluster). The map
    /// itself is a std Mutex, never held across an await.
    nodes: Mutex<BTreeMap<String, Arc<Node>>>,
    /// The hub was shut down: no new subscription.
    shut: AtomicBool,
    // std Mutex: only touched synchronously (never across an await), also by the dispatcher.
    channels: Mutex<BTreeMap<String, ChannelEntry>>,
    config: HubConfig,
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

/// One node's pub/sub connection.
#[derive(Default)]
struct Node {
    /// Held while connecting, subscribing and unsubscribing, so reference counts and the
    /// server's state agree.
    conn: tokio::sync::Mutex<Conn>,
    /// Connects ended so far on this node.
    ended: AtomicU64,
    /// The newest failed connect: its number in `ended` and its error. A subscriber that
    /// queued for `conn` while that connect ran takes its outcome instead of trying again.
    failure: Mutex<Option<(u64, redis::RedisError)>>,
}

impl Node {
    /// The error of a connect that ended after `ticket` (a count of `ended` read before
    /// queueing for `conn`) and failed.
    fn failed_since(&self, ticket: u64) -> Option<redis::RedisError> {
        lock(&self.failure)
            .as_ref()
            .filter(|(n, _)| *n > ticket)
            .map(|(_, e)| e.clone())
    }
}

#[derive(Default)]
struct Conn {
    sink: Option<PubSubSink>,
    dispatcher: Option<JoinHandle<()>>,
    /// Counts connections made on this node: a reconnect task of an old one stops when a
    /// newer one is up.
    generation: u64,
}

impl Conn {
    /// A connection that is up: its dispatcher still reads and its sink was not given up.
    fn alive(&self) -> bool {
        self.sink.is_some() && self.dispatcher.as_ref().is_some_and(|d| !d.is_finished())
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

/// Whether a failure to connect or subscribe may pass by itself (the node down, hung or
/// reconnecting) and is worth another try; a server's refusal (a wrong password) is not.
fn transient(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_unrecoverable_error()
}

impl PubSubHub {
    pub(crate) fn new(client: redis::Client, config: HubConfig) -> Self {
        PubSubHub::with(Source::Client(client), None, config)
    }

    /// A hub whose connections are streams of a connector.
    pub(crate) fn over(dialer: Dialer, config: HubConfig) -> Self {
        PubSubHub::with(Source::Dialer(dialer), None, config)
    }

    /// A hub for a Redis Cluster: each channel is subscribed on the master owning its slot.
    pub(crate) fn cluster(
        client: redis::Client,
        conn: redis::cluster_async::ClusterConnection,
        config: HubConfig,
    ) -> Self {
        let template = client.get_connection_info().clone();
        PubSubHub::with(
            Source::Client(client),
            Some(ClusterNodes {
                conn,
                template,
                slots: Mutex::new(SlotMap::default()),
            }),
            config,
        )
    }

    fn with(client: Source, cluster: Option<ClusterNodes>, config: HubConfig) -> Self {
        PubSubHub {
            shared: Arc::new(Shared {
                client: Mutex::new(client),
                cluster,
                nodes: Mutex::new(BTreeMap::new()),
                shut: AtomicBool::new(false),
                channels: Mutex::new(BTreeMap::new()),
                config,
            }),
        }
    }

    /// Subscribes (or adds a reference to an existing subscription of) `channel`, with the wake
    /// policy `wake` (the first subscriber of a channel decides it), by `deadline` (`None`:
    /// within the pub/sub timeout, Redisson's subscription timeout). Returns once the server
    /// confirmed the subscription, so a message published afterwards is seen.
    ///
    /// While the node's connection is down (reconnecting, hung, refusing) it tries again with
    /// the reconnect's back-off until the deadline: `Ok(None)` when the deadline passed first
    /// (the wait is over; a subscription completed after it is released again). Without a
    /// deadline, running out of the pub/sub timeout is [`LockError::Timeout`] (named after
    /// `channel`), or the last connection error seen. A server's refusal fails at once.
    pub(crate) async fn subscribe_until(
        &self,
        channel: &str,
        wake: Wake,
        deadline: Option<Instant>,
    ) -> Result<Option<Subscription>> {
        let start = Instant::now();
        let limit = deadline.unwrap_or_else(|| start + self.shared.config.timeout);
        let last = Mutex::new(None);
        match tokio::time::timeout_at(limit, self.shared.subscribe(channel, wake, &last)).await {
            Ok(r) => r.map(Some),
            Err(_) if deadline.is_some() => Ok(None),
            Err(_) => {
                let last = last.into_inner().unwrap_or_else(|p| p.into_inner());
                tracing::debug!(channel, error = ?last, "no pub/sub subscription in time");
                Err(match last {
                    Some(e) if !e.is_timeout() => LockError::Redis(e),
                    _ => LockError::Timeout {
                        name: channel.to_owned(),
                        waited: start.elapsed(),
                    },
                })
            }
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
        let node = shared.node("");
        let mut conn = node.conn.lock().await;
        *lock(&shared.client) = Source::Client(client);
        conn.sink = None;
        if let Some(d) = conn.dispatcher.take() {
            d.abort();
        }
        let res = if lock(&shared.channels).is_empty() {
            Ok(())
        } else {
            shared
                .connect(&node, &mut conn, "")
                .await
                .map_err(Into::into)
        };
        for e in lock(&shared.channels).values() {
            e.notify.notify_waiters();
            e.notify.notify_one();
        }
        res
    }

    pub(crate) async fn shutdown(&self) {
        self.shared.shut.store(true, Ordering::Release);
        let nodes: Vec<_> = lock(&self.shared.nodes).values().cloned().collect();
        for node in nodes {
            let mut conn = node.conn.lock().await;
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

/// Resolves when the connection behind `sink` stops answering: a `PING` every `every`
/// unanswered within `limit` (or answered with an error). Never resolves when `every` is zero.
async fn silent(mut sink: PubSubSink, every: Duration, limit: Duration) {
    if every.is_zero() {
        return std::future::pending().await;
    }
    loop {
        tokio::time::sleep(every).await;
        match tokio::time::timeout(limit, sink.ping::<redis::Value>()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "pub/sub PING failed");
                return;
            }
            Err(_) => {
                tracing::debug!(?limit, "no PONG on the pub/sub connection");
                return;
            }
        }
    }
}

/// Wakes the waiters of a channel (`refs` of them at most) as a message `payload` on it calls
/// for under `wake`. Each wake-one also leaves a permit for a waiter between its attempt and
/// its wait.
fn wake_for(n: &Notify, wake: Wake, refs: usize, payload: &[u8]) {
    let count = match wake {
        Wake::Lock if payload == b"1" => None,
        Wake::Lock => Some(1),
        Wake::All => None,
        Wake::Count => std::str::from_utf8(payload)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .map(|c| usize::try_from(c).unwrap_or(0).min(refs)),
    };
    match count {
        Some(c) => (0..c).for_each(|_| n.notify_one()),
        None => {
            n.notify_waiters();
            n.notify_one();
        }
    }
}

impl Shared {
    /// The connection (and its lock) of `node`.
    fn node(&self, node: &str) -> Arc<Node> {
        lock(&self.nodes)
            .entry(node.to_owned())
            .or_default()
            .clone()
    }

    /// The delay after the `n`-th failure in a row (0-based): doubling from
    /// [`RECONNECT_FIRST`] up to [`RECONNECT_MAX`], plus a random part of up to as much again,
    /// so clients that lost one server do not all come back in the same millisecond.
    fn backoff(&self, n: u32) -> Duration {
        let base = RECONNECT_FIRST
            .saturating_mul(1u32 << n.min(16))
            .min(RECONNECT_MAX);
        let jitter = self.config.entropy.range(0..=base.as_millis() as u64);
        base + Duration::from_millis(jitter)
    }

    /// [`PubSubHub::subscribe_until`] without its bound: tries until it subscribed, the hub
    /// shut down or a server refused; the newest transient error is left in `last`.
    async fn subscribe(
        self: &Arc<Self>,
        channel: &str,
        wake: Wake,
        last: &Mutex<Option<redis::RedisError>>,
    ) -> Result<Subscription> {
        // Bounded: the channel changes nodes only when a reconnect re-homes it, rarely twice in
        // a row.
        let mut moves = 0;
        let mut failures = 0u32;
        let mut stale = false;
        loop {
            let failed = match self.subscribe_once(channel, wake, &mut stale).await {
                Ok(Step::Done(sub)) => return Ok(sub),
                Ok(Step::Moved) => {
                    moves += 1;
                    if moves >= 4 {
                        return Err(LockError::Redis(redis::RedisError::from((
                            redis::ErrorKind::Client,
                            "the channel kept moving between nodes",
                            channel.to_owned(),
                        ))));
                    }
                    continue;
                }
                Ok(Step::Retry) => continue,
                Ok(Step::Shut) => return Err(LockError::Shutdown),
                Err(e) => e,
            };
            if !transient(&failed) {
                return Err(failed.into());
            }
            tracing::debug!(error = %failed, channel, failures, "pub/sub node down; trying again");
            *lock(last) = Some(failed);
            tokio::time::sleep(self.backoff(failures)).await;
            failures = failures.saturating_add(1);
        }
    }

    /// One try of [`subscribe`](Self::subscribe).
    async fn subscribe_once(
        self: &Arc<Self>,
        channel: &str,
        wake: Wake,
        stale: &mut bool,
    ) -> redis::RedisResult<Step> {
        // The node the channel is subscribed on already, else the one owning its slot.
        let known = lock(&self.channels).get(channel).map(|e| e.node.clone());
        let node_name = match known {
            Some(node) => node,
            None => self.node_for(channel, *stale).await?,
        };
        let node = self.node(&node_name);
        let ticket = node.ended.load(Ordering::Acquire);
        let mut conn = node.conn.lock().await;
        if self.shut.load(Ordering::Acquire) {
            return Ok(Step::Shut);
        }
        let alive = conn.alive();
        let subscribed = match lock(&self.channels).get_mut(channel) {
            // Moved to another node meanwhile: start over there.
            Some(e) if e.node != node_name => return Ok(Step::Moved),
            Some(e) if alive => {
                e.refs += 1;
                return Ok(Step::Done(Subscription {
                    shared: self.clone(),
                    channel: channel.to_owned(),
                    notify: e.notify.clone(),
                }));
            }
            // A channel whose connection died is subscribed again with the others of
            // its node when the connection is made anew.
            Some(_) => true,
            None => false,
        };
        if !alive {
            // A connect that started while this subscriber queued failed: its outcome is
            // this one's too (the node is as hung as it was a moment ago).
            let connected = match node.failed_since(ticket) {
                Some(e) => Err(e),
                None => self.connect(&node, &mut conn, &node_name).await,
            };
            if let Err(e) = connected {
                // In a cluster the node may have failed over: read the slot map again and
                // move its channels to the new owners, then try there, once.
                if self.cluster.is_some() && !*stale {
                    drop(conn);
                    *stale = true;
                    self.rehome(&node_name).await;
                    return Ok(Step::Retry);
                }
                return Err(e);
            }
        }
        let Some(sink) = conn.sink.as_mut() else {
            return Ok(Step::Retry);
        };
        if !subscribed {
            if let Err(e) = bounded(self.config.timeout, sink.subscribe(channel)).await {
                // A dead or half-open connection: made anew on the next try.
                conn.sink = None;
                return Err(e);
            }
        }
        let mut map = lock(&self.channels);
        let e = map
            .entry(channel.to_owned())
            .or_insert_with(|| ChannelEntry {
                refs: 0,
                notify: Arc::new(Notify::new()),
                wake,
                node: node_name,
            });
        e.refs += 1;
        Ok(Step::Done(Subscription {
            shared: self.clone(),
            channel: channel.to_owned(),
            notify: e.notify.clone(),
        }))
    }

    /// The node to subscribe `channel` on: "" outside a cluster, else the `host:port` of the
    /// master owning the channel's slot (the slot map is read again when it has no owner, or
    /// when `stale`).
    async fn node_for(&self, channel: &str, stale: bool) -> redis::RedisResult<String> {
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
        let map = bounded(self.config.timeout, SlotMap::fetch(&mut conn)).await?;
        let node = map.node(slot).map(str::to_owned);
        *lock(&cluster.slots) = map;
        node.ok_or_else(|| {
            redis::RedisError::from((
                redis::ErrorKind::ClusterConnectionNotFound,
                "no node serves the slot of",
                channel.to_owned(),
            ))
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
        let map = match bounded(self.config.timeout, SlotMap::fetch(&mut conn)).await {
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
        for (name, channels) in moved {
            tracing::info!(
                from,
                to = name,
                channels = channels.len(),
                "pub/sub channels moved after a failover"
            );
            let node = self.node(&name);
            let mut conn = node.conn.lock().await;
            // A new connection subscribes every channel of its node; an existing one gets
            // the moved channels now (subscribing twice on one connection is harmless).
            let up = conn.alive() || self.connect(&node, &mut conn, &name).await.is_ok();
            if up {
                if let Some(sink) = conn.sink.as_mut() {
                    let names: Vec<&str> = channels.iter().map(|(c, _)| c.as_str()).collect();
                    if let Err(e) = bounded(self.config.timeout, sink.subscribe(&names)).await {
                        tracing::debug!(error = %e, node = name, "subscribe after re-homing failed");
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
    fn client_for(&self, node: &str) -> redis::RedisResult<Source> {
        let Some(cluster) = &self.cluster else {
            return Ok(lock(&self.client).clone());
        };
        let (host, port) = node
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.to_owned(), p.parse::<u16>().ok()?)))
            .ok_or_else(|| {
                redis::RedisError::from((
                    redis::ErrorKind::Client,
                    "bad node address",
                    node.to_owned(),
                ))
            })?;
        let info = cluster
            .template
            .clone()
            .set_addr(redis::ConnectionAddr::Tcp(host, port));
        Ok(Source::Client(redis::Client::open(info)?))
    }

    /// Wakes every waiter of `node`'s channels (they retry at once).
    fn wake_node(&self, node: &str) {
        for e in lock(&self.channels).values().filter(|e| e.node == node) {
            e.notify.notify_waiters();
            e.notify.notify_one();
        }
    }

    /// Makes a new connection to `node` (the caller holds its lock and found it not alive),
    /// subscribes every channel of the node that has waiters, and starts its dispatcher. A
    /// failure is recorded for the subscribers queued behind.
    async fn connect(
        self: &Arc<Self>,
        node: &Node,
        conn: &mut Conn,
        name: &str,
    ) -> redis::RedisResult<()> {
        let res = self.connect_inner(conn, name).await;
        let ended = node.ended.fetch_add(1, Ordering::AcqRel) + 1;
        *lock(&node.failure) = res.as_ref().err().map(|e| (ended, e.clone()));
        res
    }

    async fn connect_inner(
        self: &Arc<Self>,
        conn: &mut Conn,
        name: &str,
    ) -> redis::RedisResult<()> {
        // The old connection's dispatcher still reading (a connection given up after a failed
        // SUBSCRIBE) stops; dropping its stream closes the connection.
        conn.sink = None;
        if let Some(d) = conn.dispatcher.take() {
            d.abort();
        }
        let client = self.client_for(name)?;
        let (mut sink, mut stream) = bounded(self.config.timeout, client.pubsub()).await?.split();
        // Subscribe again to every channel of this node that has waiters.
        let existing: Vec<String> = lock(&self.channels)
            .iter()
            .filter(|(_, e)| e.node == name)
            .map(|(c, _)| c.clone())
            .collect();
        if !existing.is_empty() {
            bounded(self.config.timeout, sink.subscribe(&existing)).await?;
        }
        conn.generation += 1;
        let generation = conn.generation;
        let weak = Arc::downgrade(self);
        let node = name.to_owned();
        let silent = silent(
            sink.clone(),
            self.config.ping_interval,
            self.config.ping_timeout,
        );
        conn.dispatcher = Some(tokio::spawn(async move {
            tokio::pin!(silent);
            loop {
                // biased (here and in every select of this crate): tokio's unbiased select
                // draws from an unseeded RNG, which would break a seeded simulation's replay.
                let msg = tokio::select! {
                    biased;
                    msg = stream.next() => msg,
                    () = &mut silent => None,
                };
                let Some(msg) = msg else { break };
                let Some(shared) = weak.upgrade() else { return };
                let entry = lock(&shared.channels)
                    .get(msg.get_channel_name())
                    .map(|e| (e.notify.clone(), e.wake, e.refs));
                if let Some((n, wake, refs)) = entry {
                    wake_for(&n, wake, refs, msg.get_payload_bytes());
                }
            }
            // Closes the connection (a half-open one included).
            drop(stream);
            tracing::debug!(node, "pub/sub connection ended");
            if let Some(shared) = weak.upgrade() {
                tokio::spawn(Shared::reconnect(shared, node, generation));
            }
        }));
        conn.sink = Some(sink);
        // Messages published while no connection listened are lost: the node's waiters retry.
        if !existing.is_empty() {
            self.wake_node(name);
        }
        Ok(())
    }

    /// After connection `generation` to `node` ended by itself: wakes every waiter of its
    /// channels (they retry now instead of sleeping until the holder's TTL), then reconnects
    /// and subscribes them again, with a jittered back-off, while channels wait there, the hub
    /// is open and no newer connection is up.
    fn reconnect(
        shared: Arc<Shared>,
        name: String,
        generation: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        // Boxed: it is spawned by `connect`, which it calls again.
        Box::pin(async move {
            shared.wake_node(&name);
            let mut failures = 0u32;
            loop {
                tokio::time::sleep(shared.backoff(failures)).await;
                // A cluster node that went away may have failed over: its channels move to
                // the masters serving their slots now.
                shared.rehome(&name).await;
                let node = shared.node(&name);
                let ticket = node.ended.load(Ordering::Acquire);
                let mut conn = node.conn.lock().await;
                let waiting = lock(&shared.channels).values().any(|e| e.node == name);
                if shared.shut.load(Ordering::Acquire) || !waiting {
                    return;
                }
                // A subscriber (or a failover) made a newer connection meanwhile.
                if conn.generation != generation && conn.alive() {
                    return;
                }
                let res = match node.failed_since(ticket) {
                    Some(e) => Err(e),
                    None => shared.connect(&node, &mut conn, &name).await,
                };
                match res {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::debug!(error = %e, node = name, "pub/sub reconnect failed");
                        failures = failures.saturating_add(1);
                    }
                }
            }
        })
    }

    async fn release(&self, channel: &str) {
        // Bounded: the channel changes nodes only when a reconnect re-homes it.
        for _ in 0..4 {
            let Some(name) = lock(&self.channels).get(channel).map(|e| e.node.clone()) else {
                return;
            };
            let node = self.node(&name);
            let mut conn = node.conn.lock().await;
            let last = {
                let mut map = lock(&self.channels);
                match map.get_mut(channel) {
                    Some(e) if e.node != name => continue,
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
                    if let Err(e) = bounded(self.config.timeout, sink.unsubscribe(channel)).await {
                        tracing::debug!(error = %e, channel, "unsubscribe failed");
                        conn.sink = None;
                    }
                }
            }
            return;
        }
    }
}

/// What one try of a subscription came to.
enum Step {
    /// Subscribed.
    Done(Subscription),
    /// The channel moved to another node meanwhile.
    Moved,
    /// The node's channels were re-homed after a failover: try again at once.
    Retry,
    /// The hub was shut down.
    Shut,
}
