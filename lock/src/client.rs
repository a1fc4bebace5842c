//! `Client`: the client id (UUID v4), the command connection, the shared pub/sub hub, the
//! watchdog registry, the random source and wall clock, counters, and helpers shared by every
//! lock kind (names, `WAIT`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::cluster::{key_slot, Connection, SlotMap};
use crate::connector::{Connector, Dialer, StreamConnection};
use crate::entropy::Entropy;
use crate::error::{LockError, Result};
use crate::options::{ClientOptions, ReplicaSync};
use crate::owner::Owner;
use crate::sync::{eval_on, evalsha, Source, SyncPool};
use crate::waiter::PubSubHub;
use crate::watchdog::Registry;

/// A connection to one Redis deployment, with its own id (Redisson's connection manager id).
///
/// Cheap to clone; all clones share the connections. Create lock handles with
/// [`Client::lock`] and friends.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.inner.id)
            .finish()
    }
}

pub(crate) struct Inner {
    pub(crate) id: String,
    // std RwLock, never held across an await: a failover swaps in a connection to the new master.
    pub(crate) conn: std::sync::RwLock<Connection>,
    pub(crate) hub: PubSubHub,
    /// Connections for lock writes followed by `WAIT` (never the shared `conn`).
    pub(crate) sync_pool: SyncPool,
    pub(crate) registry: Registry,
    pub(crate) options: ClientOptions,
    /// Recomputed after a failover when `ReplicaSync::Auto`.
    pub(crate) sync_replicas: AtomicUsize,
    /// `ReplicaSync::Auto` outside a cluster: a client that knows no replica asks again.
    auto_recheck: bool,
    /// A Redis Cluster client: a synced write's `WAIT` goes to its slot's master alone.
    in_cluster: bool,
    /// `ReplicaSync::Auto` in a cluster: each master's replicas, waited for by the writes
    /// that master takes.
    cluster_replicas: Option<ClusterReplicas>,
    /// When it last asked (ms since `clock_base`).
    replicas_checked_ms: AtomicU64,
    /// Set when the client follows a Sentinel-monitored master.
    pub(crate) sentinel: Option<crate::sentinel::SentinelState>,
    pub(crate) metrics: Metrics,
    /// Every random draw of this client (seeded with `ClientOptions::seed`).
    pub(crate) entropy: Arc<Entropy>,
    /// tokio's and the OS's monotonic clocks at connect: their difference since is how far a
    /// paused test clock was advanced (always 0 outside paused-time tests).
    pub(crate) clock_base: tokio::time::Instant,
    pub(crate) clock_base_std: std::time::Instant,
    /// The runtime the client was opened on: background work started from a thread outside
    /// any runtime (a guard dropped there, a blocking facade call) runs on it.
    pub(crate) runtime: tokio::runtime::Handle,
}

impl Client {
    /// Connects to `url` (`redis://host:port/db`) with default options.
    ///
    /// # Errors
    /// When the URL is invalid or the server cannot be reached.
    pub async fn open(url: &str) -> Result<Client> {
        Client::open_with(url, ClientOptions::default()).await
    }

    /// Connects to `url` with `options`.
    ///
    /// # Errors
    /// When the URL is invalid or the server cannot be reached.
    pub async fn open_with(url: &str, options: ClientOptions) -> Result<Client> {
        let client = redis::Client::open(url)?;
        Client::from_redis_client(client, options).await
    }

    /// Connects to a Redis Cluster through any of its nodes (`redis://host:port` each), as
    /// Redisson's cluster mode: lock scripts run on the node owning their keys' slot (the
    /// keys share Redisson's `{name}` hash tag), and waiters subscribe on the node owning
    /// their channel's slot. With [`ReplicaSync::Auto`] a write waits for the replicas of the
    /// master that took it (`WAIT` on that master alone, for as many replicas as `CLUSTER
    /// SLOTS` lists for its slot, re-read at most once a second and after a short `WAIT`), as
    /// Redisson waits per master entry; an explicit [`ReplicaSync::Replicas`] count is waited
    /// for on that master alone too (the redis crate would route a bare `WAIT` to every
    /// master, so one hung or lagging shard would fail the writes of all).
    ///
    /// # Errors
    /// When no URL is valid or no node can be reached.
    pub async fn open_cluster<I, S>(urls: I, options: ClientOptions) -> Result<Client>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let urls: Vec<String> = urls.into_iter().map(|u| u.as_ref().to_owned()).collect();
        let first = urls.first().ok_or_else(|| {
            LockError::Redis(redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "no cluster node given",
            )))
        })?;
        let template = redis::Client::open(first.as_str())?;
        let cluster = redis::cluster::ClusterClient::builder(urls.clone())
            .connection_timeout(options.connection_timeout)
            .response_timeout(options.response_timeout)
            .build()?;
        let conn = cluster.get_async_connection().await?;
        let pool_cluster = redis::cluster::ClusterClient::builder(urls.clone())
            .connection_timeout(options.connection_timeout)
            .response_timeout(sync_response_timeout(&options))
            .build()?;
        let to_sync = match options.replica_sync {
            ReplicaSync::Replicas(n) => ToSync::Count(n),
            ReplicaSync::Off => ToSync::Count(0),
            ReplicaSync::Auto => ToSync::PerMaster(SlotMap::fetch(&mut conn.clone()).await?),
        };
        let entropy = Arc::new(Entropy::new(options.seed));
        let hub = PubSubHub::cluster(template, conn.clone(), hub_config(&options, &entropy));
        Ok(Client::assemble(
            Connection::Cluster(conn),
            hub,
            Source::Cluster(Box::new(pool_cluster)),
            to_sync,
            options,
            None,
            entropy,
        ))
    }

    /// Connects over streams made by `connector` instead of sockets, with no password and
    /// database 0 (see [`Client::open_over_with_info`]): for code under test that joins a
    /// simulation whose servers and links live in memory (a current-thread runtime with
    /// paused time and `tokio::io::duplex` streams), where together with
    /// [`ClientOptions::seed`] and [`ClientOptions::wall_clock`] a run replays exactly.
    ///
    /// The command connection is a [`StreamConnection`]: replaced on the next command when it
    /// breaks. Each pub/sub connection of the client's waiters is a new stream of the same
    /// connector, and is made anew (its channels subscribed again) when it ends, as with a URL.
    /// Every lock kind works as over a URL; a [`Client::connection`] is
    /// [`Connection::Stream`].
    ///
    /// # Errors
    /// When no connection can be made (after the retries [`StreamConnection`] describes), or
    /// the server refuses the handshake.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use locksmith_lock::{Client, ClientOptions};
    /// use locksmith_server::Server;
    ///
    /// let node = Server::builder()
    ///     .in_memory("127.0.0.1:7000".parse()?)
    ///     .start()
    ///     .await?;
    /// let acceptor = node.acceptor();
    /// let connector = move || {
    ///     let acceptor = acceptor.clone();
    ///     async move {
    ///         let (ours, theirs) = tokio::io::duplex(64 * 1024);
    ///         acceptor.serve_stream(theirs, "127.0.0.1:40000".parse().unwrap());
    ///         Ok::<_, std::io::Error>(ours)
    ///     }
    /// };
    /// // A virtual wall clock: a fixed epoch plus tokio's (paused) time since the start.
    /// let start = tokio::time::Instant::now();
    /// let options = ClientOptions::default()
    ///     .seed(42)
    ///     .wall_clock(move || 1_700_000_000_000 + start.elapsed().as_millis() as u64);
    /// let client = Client::open_over(connector, options).await?;
    /// let guard = client.fair_lock("orders").acquire().await?;
    /// guard.unlock().await?;
    /// # node.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn open_over(connector: impl Connector, options: ClientOptions) -> Result<Client> {
        Client::open_over_with_info(connector, redis::RedisConnectionInfo::default(), options).await
    }

    /// [`Client::open_over`] with the connection settings `info` (password and username for
    /// `AUTH`, database for `SELECT`, protocol; keep RESP2, the protocol of the pub/sub
    /// connections), sent on every stream after it is made.
    ///
    /// # Errors
    /// As [`Client::open_over`]; a wrong password or database fails at once.
    pub async fn open_over_with_info(
        connector: impl Connector,
        info: redis::RedisConnectionInfo,
        options: ClientOptions,
    ) -> Result<Client> {
        let entropy = Arc::new(Entropy::new(options.seed));
        let dialer = Dialer::new(Arc::new(connector), info);
        let conn = StreamConnection::connect(
            dialer.clone(),
            options.connection_timeout,
            options.response_timeout,
            entropy.clone(),
        )
        .await?;
        let mut conn = Connection::Stream(conn);
        let sync_replicas = replicas_to_sync(&mut conn, &options).await?;
        let source = Source::Stream(dialer.clone(), entropy.clone());
        let hub = PubSubHub::over(dialer, hub_config(&options, &entropy));
        Ok(Client::assemble(
            conn,
            hub,
            source,
            ToSync::Count(sync_replicas),
            options,
            None,
            entropy,
        ))
    }

    /// Builds a client on an existing `redis::Client` (any connection config it carries).
    ///
    /// # Errors
    /// When the server cannot be reached.
    pub async fn from_redis_client(
        client: redis::Client,
        options: ClientOptions,
    ) -> Result<Client> {
        Client::build(client, options, None).await
    }

    pub(crate) async fn build(
        client: redis::Client,
        options: ClientOptions,
        sentinel: Option<crate::sentinel::SentinelState>,
    ) -> Result<Client> {
        let mut conn = Connection::Single(command_connection(&client, &options).await?);
        let sync_replicas = replicas_to_sync(&mut conn, &options).await?;
        let entropy = Arc::new(Entropy::new(options.seed));
        Ok(Client::assemble(
            conn,
            PubSubHub::new(client.clone(), hub_config(&options, &entropy)),
            Source::Url(Box::new(client)),
            ToSync::Count(sync_replicas),
            options,
            sentinel,
            entropy,
        ))
    }

    fn assemble(
        conn: Connection,
        hub: PubSubHub,
        source: Source,
        to_sync: ToSync,
        options: ClientOptions,
        sentinel: Option<crate::sentinel::SentinelState>,
        entropy: Arc<Entropy>,
    ) -> Client {
        let (sync_replicas, cluster_replicas) = match to_sync {
            ToSync::Count(n) => (n, None),
            ToSync::PerMaster(map) => (0, Some(map)),
        };
        // The id was the random source's first draw: with a seed it does not depend on how
        // connecting went.
        let id = entropy.client_id().to_owned();
        let sync_pool = SyncPool::new(
            source,
            options.connection_timeout,
            sync_response_timeout(&options),
        );
        let in_cluster = matches!(conn, Connection::Cluster(_));
        let auto_recheck = matches!(options.replica_sync, ReplicaSync::Auto) && !in_cluster;
        let inner = Arc::new(Inner {
            hub,
            sync_pool,
            auto_recheck,
            in_cluster,
            cluster_replicas: cluster_replicas.map(|map| ClusterReplicas {
                map: std::sync::Mutex::new(map),
            }),
            replicas_checked_ms: AtomicU64::new(0),
            registry: Registry::default(),
            id,
            conn: std::sync::RwLock::new(conn),
            options,
            sync_replicas: AtomicUsize::new(sync_replicas),
            sentinel,
            metrics: Metrics::default(),
            entropy,
            clock_base: tokio::time::Instant::now(),
            clock_base_std: std::time::Instant::now(),
            runtime: tokio::runtime::Handle::current(),
        });
        tracing::debug!(client_id = %inner.id, sync_replicas, "locksmith client connected");
        Client { inner }
    }

    /// Points the command and pub/sub connections at `client` (the new master after a
    /// failover), renews every held lock there at once (one the new master lacks is reported
    /// lost now, not a renewal period later) and wakes every waiter so it retries there.
    pub(crate) async fn switch_master(&self, client: redis::Client) -> Result<()> {
        let mut conn = Connection::Single(command_connection(&client, &self.inner.options).await?);
        let n = replicas_to_sync(&mut conn, &self.inner.options).await?;
        self.inner.sync_replicas.store(n, Ordering::Relaxed);
        *self.inner.conn.write().unwrap_or_else(|p| p.into_inner()) = conn;
        self.inner.registry.renew_all_now();
        self.inner
            .sync_pool
            .switch(Source::Url(Box::new(client.clone())));
        Metrics::inc(&self.inner.metrics.master_switches);
        self.inner.hub.switch(client).await
    }

    /// This client's id (a UUID v4, drawn from the seeded RNG with [`ClientOptions::seed`]),
    /// the first half of every owner field it writes.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The options in effect.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// How many replicas each lock write waits for (0: no `WAIT`). A cluster client with
    /// [`ReplicaSync::Auto`] answers 0: its writes wait for their own master's replicas.
    pub fn sync_replicas(&self) -> usize {
        self.inner.sync_replicas.load(Ordering::Relaxed)
    }

    /// A snapshot of the counters (acquisitions, waits, renewals, releases, losses).
    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.metrics.snapshot()
    }

    /// A connection for raw commands, sharing the client's command connection (a cluster
    /// connection, routing by key slot, for a client of a Redis Cluster).
    pub fn connection(&self) -> Connection {
        self.inner
            .conn
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The Redis field `"<client-id>:<owner-id>"` an owner writes through this client.
    pub fn owner_field(&self, owner: &Owner) -> String {
        format!("{}:{}", self.inner.id, owner.id())
    }

    /// Stops every watchdog of this client (held locks then expire after their lease, as when a
    /// Redisson client shuts down) and the pub/sub dispatcher. Lock handles keep working for
    /// explicit commands, but no longer renew.
    pub async fn shutdown(&self) {
        self.inner.registry.shutdown();
        if let Some(s) = &self.inner.sentinel {
            s.stop();
        }
        self.inner.hub.shutdown().await;
    }

    pub(crate) fn weak(&self) -> Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    /// Milliseconds since the epoch, read from the wall clock at each call as Java's
    /// `System.currentTimeMillis()` is (the fair lock shares its queue's timestamps with
    /// Redisson's Java clients), used where Redisson sends it to a script. From
    /// [`ClientOptions::wall_clock`] when set; else the system clock, which in paused-time
    /// tests also moves with tokio's clock (by how far that clock was advanced).
    pub(crate) fn now_ms(&self) -> u64 {
        if let Some(clock) = &self.inner.options.wall_clock {
            return clock.now_ms();
        }
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let virtual_ms = self.inner.clock_base.elapsed().as_millis();
        let real_ms = self.inner.clock_base_std.elapsed().as_millis();
        let advanced = u64::try_from(virtual_ms.saturating_sub(real_ms)).unwrap_or(u64::MAX);
        wall.saturating_add(advanced)
    }

    /// Runs a script that writes. Without replicas to sync, on the shared connection, and the
    /// second value is `Ok(true)`. With replicas, the script and its `WAIT` go out back to back
    /// on a pooled connection (see [`crate::sync`]); the second value says whether the write is
    /// synced: `Ok(false)` when no replica acknowledged it, `Err` when the `WAIT` itself failed
    /// (a dropped connection, a refusal): either way the write ran, and the caller decides
    /// whether to roll it back.
    ///
    /// With [`ReplicaSync::Auto`], a `WAIT` that fewer replicas acknowledged than expected
    /// re-reads `INFO replication` (as Redisson refreshes its replica list when the synced
    /// count differs): replicas that are gone are no longer waited for, so losing every
    /// replica does not roll back every acquisition from then on.
    ///
    /// # Errors
    /// When the script failed or its answer was lost (whether it ran is then unknown).
    pub(crate) async fn eval_write<T, K, A>(
        &self,
        script: &redis::Script,
        keys: &[K],
        args: &[A],
    ) -> Result<(T, Result<bool>)>
    where
        T: redis::FromRedisValue,
        K: redis::ToRedisArgs,
        A: redis::ToRedisArgs,
    {
        self.eval_write_until(script, keys, args, None).await
    }

    /// [`Client::eval_write`] for a call that must end by `deadline` (an acquisition's wait,
    /// and the rollback of an attempt of it): the `WAIT` blocks at most until then, i.e. its
    /// timeout is the sync timeout or the time left, whichever is shorter, and at least 1 ms
    /// (`WAIT` with 0 blocks forever). A `WAIT` cut short that way answers short, and the
    /// acquisition is rolled back as for any unacknowledged write.
    ///
    /// Redisson's `syncedEval` gives its `WAIT` the whole sync timeout and its `tryLock`
    /// looks at the time left only after the attempt returned, so a last attempt can overrun
    /// the wait by the sync timeout; here the wait bounds the attempt as well, and a call with
    /// a wait returns within that wait plus one round trip.
    ///
    /// # Errors
    /// As [`Client::eval_write`].
    pub(crate) async fn eval_write_until<T, K, A>(
        &self,
        script: &redis::Script,
        keys: &[K],
        args: &[A],
        deadline: Option<tokio::time::Instant>,
    ) -> Result<(T, Result<bool>)>
    where
        T: redis::FromRedisValue,
        K: redis::ToRedisArgs,
        A: redis::ToRedisArgs,
    {
        let eval = evalsha(script, keys, args);
        let timeout = sync_timeout_until(self.inner.options.replica_sync_timeout, deadline);
        // In a cluster the `WAIT` goes to the master serving the write's slot alone, whatever
        // the replica count (the redis crate would send a bare `WAIT` to every master).
        let slot = self.inner.in_cluster.then(|| {
            let key = keys.first().map(|k| k.to_redis_args()).unwrap_or_default();
            key_slot(key.first().map_or(&[][..], Vec::as_slice))
        });
        if let (Some(cluster), Some(slot)) = (&self.inner.cluster_replicas, slot) {
            return self
                .eval_write_in_cluster(cluster, script, &eval, slot, timeout)
                .await;
        }
        let n = self.sync_replicas();
        if n == 0 {
            self.recheck_replicas();
            let v = eval_on(&mut self.connection(), script, &eval).await?;
            return Ok((v, Ok(true)));
        }
        let (v, acked) = self
            .inner
            .sync_pool
            .eval_and_wait(script, &eval, n, timeout, slot)
            .await?;
        let synced = match acked {
            Ok(k) => Ok(self.judge_ack(n, k).await),
            Err(e) => Err(e),
        };
        Ok((v, synced))
    }

    /// [`Client::eval_write`] in a cluster with [`ReplicaSync::Auto`]: the write waits for the
    /// replicas of the master serving `slot` (none: no `WAIT`). A short count re-reads the
    /// cluster's replicas at once, and a master left without any no longer rolls writes back.
    async fn eval_write_in_cluster<T: redis::FromRedisValue>(
        &self,
        cluster: &ClusterReplicas,
        script: &redis::Script,
        eval: &redis::Cmd,
        slot: u16,
        timeout: Duration,
    ) -> Result<(T, Result<bool>)> {
        self.recheck_replicas();
        let n = cluster.replicas(slot);
        if n == 0 {
            let v = eval_on(&mut self.connection(), script, eval).await?;
            return Ok((v, Ok(true)));
        }
        let (v, acked) = self
            .inner
            .sync_pool
            .eval_and_wait(script, eval, n, timeout, Some(slot))
            .await?;
        let synced = match acked {
            Ok(k) if k >= n as i64 => Ok(true),
            Ok(k) => {
                let now = match self.connection() {
                    Connection::Cluster(mut c) => match SlotMap::fetch(&mut c).await {
                        Ok(map) => cluster.replace(map).replicas(slot),
                        Err(_) => n,
                    },
                    _ => n,
                };
                if now != n {
                    tracing::info!(
                        was = n,
                        now,
                        slot,
                        "replica count changed; waiting for the new count"
                    );
                }
                Ok(k > 0 || now == 0)
            }
            Err(e) => Err(e),
        };
        Ok((v, synced))
    }

    /// With [`ReplicaSync::Auto`] and no replica known, re-reads `INFO replication` in the
    /// background, at most once per [`REPLICA_RECHECK`]: a replica attached after the client
    /// connected is waited for from then on (Redisson follows its topology the same way). In
    /// a cluster, re-reads every master's replicas (`CLUSTER SLOTS`) as often.
    fn recheck_replicas(&self) {
        if !self.inner.auto_recheck && self.inner.cluster_replicas.is_none() {
            return;
        }
        let now = u64::try_from(self.inner.clock_base.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.inner.replicas_checked_ms.load(Ordering::Relaxed);
        let due = now.saturating_sub(last) >= ms(REPLICA_RECHECK);
        if !due
            || self
                .inner
                .replicas_checked_ms
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let client = self.clone();
        if self.inner.cluster_replicas.is_some() {
            self.inner.runtime.spawn(async move {
                if let (Some(cluster), Connection::Cluster(mut c)) =
                    (&client.inner.cluster_replicas, client.connection())
                {
                    if let Ok(map) = SlotMap::fetch(&mut c).await {
                        cluster.replace(map);
                    }
                }
            });
            return;
        }
        self.inner.runtime.spawn(async move {
            let info: redis::RedisResult<String> = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut client.connection())
                .await;
            if let Ok(info) = info {
                let now = connected_replicas(&info);
                if now > 0 && client.sync_replicas() == 0 {
                    tracing::info!(now, "replicas attached; waiting for them from now on");
                    client.inner.sync_replicas.store(now, Ordering::Relaxed);
                }
            }
        });
    }

    /// Runs a script that only reads (or whose writes need no sync) on the shared connection.
    ///
    /// # Errors
    /// Redis errors.
    pub(crate) async fn eval_read<T, K, A>(
        &self,
        script: &redis::Script,
        keys: &[K],
        args: &[A],
    ) -> Result<T>
    where
        T: redis::FromRedisValue,
        K: redis::ToRedisArgs,
        A: redis::ToRedisArgs,
    {
        eval_on(&mut self.connection(), script, &evalsha(script, keys, args)).await
    }

    /// Whether `acked` acknowledgements of a `WAIT` for `n` replicas count as synced: any
    /// one does. With [`ReplicaSync::Auto`] a short count re-reads the replica count.
    async fn judge_ack(&self, n: usize, acked: i64) -> bool {
        if acked >= n as i64 || !matches!(self.inner.options.replica_sync, ReplicaSync::Auto) {
            return acked > 0;
        }
        let mut conn = self.connection();
        let info: redis::RedisResult<String> = redis::cmd("INFO")
            .arg("replication")
            .query_async(&mut conn)
            .await;
        let Ok(info) = info else {
            return acked > 0;
        };
        let now = connected_replicas(&info);
        if now != n {
            tracing::info!(
                was = n,
                now,
                "replica count changed; waiting for the new count"
            );
            self.inner.sync_replicas.store(now, Ordering::Relaxed);
        }
        acked > 0 || now == 0
    }
}

/// How often a [`ReplicaSync::Auto`] client that knows no replica asks again (in a cluster:
/// re-reads every master's replicas, as Redisson rescans its cluster topology every second).
const REPLICA_RECHECK: Duration = Duration::from_secs(1);

/// What a new client's writes wait for.
enum ToSync {
    /// This many replicas (0: no `WAIT`).
    Count(usize),
    /// In a cluster with [`ReplicaSync::Auto`]: each master's own replicas.
    PerMaster(SlotMap),
}

/// Each master's replicas, for [`ReplicaSync::Auto`] in a cluster (from `CLUSTER SLOTS`).
pub(crate) struct ClusterReplicas {
    map: std::sync::Mutex<SlotMap>,
}

impl ClusterReplicas {
    /// How many replicas the master serving `slot` has.
    fn replicas(&self, slot: u16) -> usize {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replicas(slot)
    }

    /// Takes a newly read map; returns it.
    fn replace(&self, map: SlotMap) -> SlotMap {
        *self.map.lock().unwrap_or_else(|p| p.into_inner()) = map.clone();
        map
    }
}

/// The `WAIT` timeout of a synced write that must end by `deadline`: `sync` or the time left,
/// whichever is shorter, at least 1 ms (`WAIT` with 0 blocks forever, so a sync timeout of 0
/// is no bound and the time left is). Without a deadline, `sync` as configured.
fn sync_timeout_until(sync: Duration, deadline: Option<tokio::time::Instant>) -> Duration {
    let Some(deadline) = deadline else {
        return sync;
    };
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    let bounded = if sync.is_zero() { left } else { sync.min(left) };
    bounded.max(Duration::from_millis(1))
}

/// The response timeout of the connections synced writes use: a `WAIT` blocks up to the sync
/// timeout, on top of the usual allowance for an answer.
fn sync_response_timeout(options: &ClientOptions) -> std::time::Duration {
    options
        .response_timeout
        .saturating_add(options.replica_sync_timeout)
}

/// How long a pub/sub connect, `SUBSCRIBE` or `UNSUBSCRIBE` may take: the longer of the
/// connection and response timeouts.
fn pubsub_timeout(options: &ClientOptions) -> std::time::Duration {
    options.connection_timeout.max(options.response_timeout)
}

/// The pub/sub hub's bounds, from the client's options, and the client's random source.
fn hub_config(options: &ClientOptions, entropy: &Arc<Entropy>) -> crate::waiter::HubConfig {
    crate::waiter::HubConfig {
        timeout: pubsub_timeout(options),
        ping_interval: options.pubsub_ping_interval,
        ping_timeout: options.response_timeout,
        entropy: entropy.clone(),
    }
}

async fn command_connection(
    client: &redis::Client,
    options: &ClientOptions,
) -> Result<ConnectionManager> {
    let config = ConnectionManagerConfig::new()
        .set_number_of_retries(2)
        .set_connection_timeout(Some(options.connection_timeout))
        .set_response_timeout(Some(options.response_timeout));
    Ok(ConnectionManager::new_with_config(client.clone(), config).await?)
}

async fn replicas_to_sync(conn: &mut Connection, options: &ClientOptions) -> Result<usize> {
    Ok(match options.replica_sync {
        ReplicaSync::Off => 0,
        ReplicaSync::Replicas(n) => n,
        ReplicaSync::Auto => {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(conn)
                .await?;
            connected_replicas(&info)
        }
    })
}

fn connected_replicas(info: &str) -> usize {
    info.lines()
        .find_map(|l| l.trim().strip_prefix("connected_slaves:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Redisson's `prefixName`: `prefix:{name}`, or `prefix:name` when the name already holds `{`.
pub(crate) fn prefix_name(prefix: &str, name: &str) -> String {
    if name.contains('{') {
        format!("{prefix}:{name}")
    } else {
        format!("{prefix}:{{{name}}}")
    }
}

/// Redisson's `suffixName`: `{name}:suffix`, or `name:suffix` when the name already holds `{`.
pub(crate) fn suffix_name(name: &str, suffix: &str) -> String {
    if name.contains('{') {
        format!("{name}:{suffix}")
    } else {
        format!("{{{name}}}:{suffix}")
    }
}

/// Whole milliseconds of `d`, at least 1, saturating at `u64::MAX` (never truncated).
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// The longest lease a lock, permit or semaphore key may be given: 10^12 ms (about 31.7
/// years). The scripts do arithmetic on leases in Lua numbers and hand results back to
/// `PEXPIRE` as text, which Lua writes with `%.14g`: past 14 digits that is `1e+14`, which
/// Redis refuses ("value is not an integer") after the script's first write already ran.
/// 10^12 stays an integer when a script adds two leases (the write lock's re-entry) or a lease
/// to the wall clock (the permit semaphore's timeout date).
pub const MAX_LEASE: Duration = Duration::from_millis(1_000_000_000_000);

/// `lease` in milliseconds, or [`LockError::Invalid`] when it is longer than [`MAX_LEASE`],
/// refused before anything is written (rslock refuses such values too).
pub(crate) fn lease_ms(name: &str, lease: Duration) -> Result<u64> {
    if lease > MAX_LEASE {
        return Err(LockError::Invalid {
            name: name.to_owned(),
            detail: format!(
                "lease of {lease:?} is longer than the longest supported, {MAX_LEASE:?}"
            ),
        });
    }
    Ok(ms(lease))
}

/// The instant `wait` after `start`; `None` (no deadline: wait as long as needed) when that
/// is past what an `Instant` can hold, as with `Duration::MAX`.
pub(crate) fn deadline_after(
    start: tokio::time::Instant,
    wait: Duration,
) -> Option<tokio::time::Instant> {
    start.checked_add(wait)
}

/// Counters a user can export.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    pub(crate) acquired: AtomicU64,
    pub(crate) acquire_failed: AtomicU64,
    pub(crate) waits: AtomicU64,
    pub(crate) renewals: AtomicU64,
    pub(crate) renewal_failures: AtomicU64,
    pub(crate) released: AtomicU64,
    pub(crate) lost: AtomicU64,
    pub(crate) master_switches: AtomicU64,
}

impl Metrics {
    pub(crate) fn inc(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
    fn snapshot(&self) -> MetricsSnapshot {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        MetricsSnapshot {
            acquired: g(&self.acquired),
            acquire_failed: g(&self.acquire_failed),
            waits: g(&self.waits),
            renewals: g(&self.renewals),
            renewal_failures: g(&self.renewal_failures),
            released: g(&self.released),
            lost: g(&self.lost),
            master_switches: g(&self.master_switches),
        }
    }
}

/// Counter values at one point in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Successful acquisitions (re-entries included).
    pub acquired: u64,
    /// Attempts that gave up (timeout or `try_lock` on a held lock).
    pub acquire_failed: u64,
    /// Times a caller waited for a release message or a TTL.
    pub waits: u64,
    /// Successful watchdog renewals.
    pub renewals: u64,
    /// Renewals that failed with an error.
    pub renewal_failures: u64,
    /// Successful releases.
    pub released: u64,
    /// Locks reported lost.
    pub lost: u64,
    /// Times a Sentinel-following client moved to a new master.
    pub master_switches: u64,
}

impl From<&Client> for Client {
    fn from(c: &Client) -> Client {
        c.clone()
    }
}

impl Client {
    /// Runs `task` on the client's runtime, handing it a sender for its answer, and waits for
    /// that answer: the task sees a caller that went away (its send fails) and can undo what
    /// it did. A task that ends without answering is [`LockError::Panicked`] when it panicked
    /// (`what` and `name` say which call), else [`LockError::Shutdown`].
    pub(crate) async fn answered<T, F>(
        &self,
        name: &str,
        what: &'static str,
        task: impl FnOnce(tokio::sync::oneshot::Sender<Result<T>>) -> F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let handle = self.inner.runtime.spawn(task(tx));
        match rx.await {
            Ok(r) => r,
            Err(_) => Err(LockError::from_join(name, what, handle.await.err())),
        }
    }

    pub(crate) fn check_alive(&self) -> Result<()> {
        if self.inner.registry.is_shut_down() {
            return Err(LockError::Shutdown);
        }
        Ok(())
    }

    /// A request id of 32 hex chars (Redisson's `generateId`), for the unlock latch, from
    /// this client's random source.
    pub(crate) fn request_id(&self) -> String {
        self.inner.entropy.request_id()
    }

    /// A number drawn uniformly from `range` by this client's random source.
    pub(crate) fn random_range(&self, range: std::ops::RangeInclusive<u64>) -> u64 {
        self.inner.entropy.range(range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_name_wraps_plain_names_in_braces() {
        assert_eq!(
            prefix_name("redisson_lock__channel", "a"),
            "redisson_lock__channel:{a}"
        );
        assert_eq!(prefix_name("p", "{t}:a"), "p:{t}:a");
        assert_eq!(suffix_name("a", "x"), "{a}:x");
        assert_eq!(suffix_name("{t}a", "x"), "{t}a:x");
    }

    #[test]
    fn a_wait_is_bounded_by_the_time_left_and_lasts_at_least_a_millisecond() {
        let now = tokio::time::Instant::now();
        let sync = Duration::from_millis(1500);
        assert_eq!(sync_timeout_until(sync, None), sync);
        let far = now + Duration::from_secs(60);
        assert_eq!(sync_timeout_until(sync, Some(far)), sync);
        let near = sync_timeout_until(sync, Some(now + Duration::from_millis(400)));
        assert!(near <= Duration::from_millis(400) && near >= Duration::from_millis(1));
        assert_eq!(
            sync_timeout_until(sync, Some(now)),
            Duration::from_millis(1)
        );
        // 0 is "no timeout" to WAIT: the time left bounds it.
        let unbounded = sync_timeout_until(Duration::ZERO, Some(far));
        assert!(unbounded > Duration::from_secs(59));
    }

    #[test]
    fn replica_count_is_read_from_info() {
        assert_eq!(
            connected_replicas("# Replication\r\nrole:master\r\nconnected_slaves:2\r\n"),
            2
        );
        assert_eq!(connected_replicas("role:master\r\n"), 0);
    }
}
