//! Synced writes (Redisson's `syncSlaves`: a write and its `WAIT` in one batch): with replicas
//! to wait for, a lock write and its `WAIT` go out back to back, both written before either
//! answer is read, on a connection of a small pool, never on the client's shared multiplexed
//! connection. Redis blocks a connection for the whole `WAIT`: on the shared one a lagging
//! replica would stall every other command of the client (renewals, other locks, plain
//! queries) for the sync timeout.
//!
//! The two commands are sent as two requests of one pipelined connection rather than as one
//! pipeline, so their answers come back apart: a `WAIT` that fails (the connection dropped, the
//! server refused it) after a write that ran is told from a write that failed, and the caller
//! can roll that write back.

use std::sync::Mutex;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, FromRedisValue, Script, ToRedisArgs, Value};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::cluster::Connection;
use crate::connector::{Dialer, StreamConnection};
use crate::entropy::Entropy;
use crate::error::{LockError, Result};

/// How many pooled connections synced writes may use at once (more wait for one). Each is
/// busy for one write and its `WAIT`; Redisson keeps a pool of connections per master too.
pub(crate) const SYNC_POOL_SIZE: usize = 16;

/// Where the pool's connections come from.
#[derive(Clone)]
pub(crate) enum Source {
    /// A standalone or replicated master (a Sentinel's current master).
    Url(Box<redis::Client>),
    /// A Redis Cluster (a client built with the pool's longer response timeout).
    Cluster(Box<redis::cluster::ClusterClient>),
    /// Streams of a caller's connector.
    Stream(Dialer, std::sync::Arc<Entropy>),
}

/// The pool of connections synced writes run on.
pub(crate) struct SyncPool {
    /// The source and its generation: a master switch bumps it, and connections of an older
    /// generation are not kept.
    source: Mutex<(Source, u64)>,
    idle: Mutex<Vec<(Connection, u64)>>,
    slots: Semaphore,
    connection_timeout: Duration,
    /// The client's response timeout plus the sync timeout: a `WAIT` may block that long.
    response_timeout: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One pooled connection, checked out for one synced write.
struct Leased<'a> {
    conn: Connection,
    generation: u64,
    _slot: SemaphorePermit<'a>,
}

impl SyncPool {
    /// A pool of connections to `source`; none is made before the first synced write.
    pub(crate) fn new(
        source: Source,
        connection_timeout: Duration,
        response_timeout: Duration,
    ) -> SyncPool {
        SyncPool {
            source: Mutex::new((source, 0)),
            idle: Mutex::new(Vec::new()),
            slots: Semaphore::new(SYNC_POOL_SIZE),
            connection_timeout,
            response_timeout,
        }
    }

    /// Points the pool at a new master: idle connections to the old one are closed.
    pub(crate) fn switch(&self, source: Source) {
        let mut s = lock(&self.source);
        s.0 = source;
        s.1 += 1;
        lock(&self.idle).clear();
    }

    async fn checkout(&self) -> Result<Leased<'_>> {
        let slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| LockError::Shutdown)?;
        let (source, generation) = lock(&self.source).clone();
        let idle = {
            let mut idle = lock(&self.idle);
            idle.retain(|(_, g)| *g == generation);
            idle.pop()
        };
        let conn = match idle {
            Some((conn, _)) => conn,
            None => self.connect(source).await?,
        };
        Ok(Leased {
            conn,
            generation,
            _slot: slot,
        })
    }

    fn checkin(&self, leased: Leased<'_>) {
        if lock(&self.source).1 == leased.generation {
            lock(&self.idle).push((leased.conn, leased.generation));
        }
    }

    async fn connect(&self, source: Source) -> Result<Connection> {
        Ok(match source {
            Source::Url(client) => {
                let client = *client;
                let config = ConnectionManagerConfig::new()
                    .set_number_of_retries(2)
                    .set_connection_timeout(Some(self.connection_timeout))
                    .set_response_timeout(Some(self.response_timeout));
                Connection::Single(ConnectionManager::new_with_config(client, config).await?)
            }
            Source::Cluster(cluster) => Connection::Cluster(cluster.get_async_connection().await?),
            Source::Stream(dialer, entropy) => Connection::Stream(
                StreamConnection::connect(
                    dialer,
                    self.connection_timeout,
                    self.response_timeout,
                    entropy,
                )
                .await?,
            ),
        })
    }

    /// Runs `script` (as `EVALSHA`, loading it on `NOSCRIPT`) followed by
    /// `WAIT replicas timeout` on one pooled connection. `Err` when the script failed (or its
    /// answer could not be read: then whether it ran is unknown); otherwise its answer and
    /// the `WAIT`'s: how many replicas acknowledged, or why the `WAIT` failed.
    ///
    /// With `slot` (a cluster client waiting per master, as Redisson's `syncSlaves` does for
    /// the master entry of the key), the `WAIT` goes only to the master serving that slot, once
    /// the write answered: a cluster connection queues requests through its own task, which
    /// does not promise that two requests sent together reach the node in order, and a `WAIT`
    /// that overtook its write would return at once.
    pub(crate) async fn eval_and_wait<T: FromRedisValue>(
        &self,
        script: &Script,
        eval: &Cmd,
        replicas: usize,
        timeout: Duration,
        slot: Option<u16>,
    ) -> Result<(T, Result<i64>)> {
        let mut leased = self.checkout().await?;
        let mut wait = redis::cmd("WAIT");
        wait.arg(replicas)
            .arg(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        let mut loaded = false;
        loop {
            let mut a = leased.conn.clone();
            let mut b = leased.conn.clone();
            // Both requests are queued on the connection before either answer is awaited:
            // one round trip, the WAIT right behind the write it waits for.
            let (written, waited) = match slot {
                None => {
                    let (written, waited) =
                        futures::join!(a.req_packed_command(eval), b.req_packed_command(&wait));
                    (
                        written.and_then(Value::extract_error),
                        waited.and_then(Value::extract_error),
                    )
                }
                Some(slot) => {
                    let written = a
                        .req_packed_command(eval)
                        .await
                        .and_then(Value::extract_error);
                    let waited = match &written {
                        Ok(_) => b
                            .on_slot_master(wait.clone(), slot)
                            .await
                            .and_then(Value::extract_error),
                        // Not sent: the write's error decides below.
                        Err(_) => Ok(Value::Nil),
                    };
                    (written, waited)
                }
            };
            match written {
                Err(e)
                    if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
                        && !loaded =>
                {
                    // Nothing was written; the WAIT's answer says nothing either.
                    script.load_async(&mut leased.conn).await?;
                    loaded = true;
                }
                Err(e) => {
                    if !(e.is_io_error() || e.is_unrecoverable_error() || e.is_timeout()) {
                        self.checkin(leased);
                    }
                    return Err(e.into());
                }
                Ok(v) => {
                    let healthy = waited.as_ref().map_or_else(
                        |e| !(e.is_io_error() || e.is_unrecoverable_error() || e.is_timeout()),
                        |_| true,
                    );
                    if healthy {
                        self.checkin(leased);
                    }
                    let acked = waited
                        .and_then(|w| i64::from_redis_value(w).map_err(redis::RedisError::from))
                        .map_err(LockError::from);
                    let value = T::from_redis_value(v).map_err(redis::RedisError::from)?;
                    return Ok((value, acked));
                }
            }
        }
    }
}

/// `EVALSHA sha numkeys keys... args...` for `script`.
pub(crate) fn evalsha<K: ToRedisArgs, A: ToRedisArgs>(
    script: &Script,
    keys: &[K],
    args: &[A],
) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.get_hash()).arg(keys.len());
    for k in keys {
        cmd.arg(k);
    }
    for a in args {
        cmd.arg(a);
    }
    cmd
}

/// Runs `eval` (an [`evalsha`] of `script`) on `conn`, loading the script on `NOSCRIPT`, as
/// `redis::ScriptInvocation::invoke_async` does.
pub(crate) async fn eval_on<T: FromRedisValue>(
    conn: &mut Connection,
    script: &Script,
    eval: &Cmd,
) -> Result<T> {
    match eval.query_async::<Value>(conn).await {
        Ok(v) => Ok(T::from_redis_value(v).map_err(redis::RedisError::from)?),
        Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
            script.load_async(conn).await?;
            Ok(eval.query_async(conn).await?)
        }
        Err(e) => Err(e.into()),
    }
}
