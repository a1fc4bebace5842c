//! Following a Sentinel-monitored master, as Redisson's `SentinelConnectionManager` does: ask a
//! sentinel `SENTINEL get-master-addr-by-name`, connect to that master, subscribe to
//! `+switch-master` on the sentinel, and move the command and pub/sub connections to the new
//! master when it fires.
//!
//! The follower is one task per client. When its sentinel connection drops it moves to the next
//! sentinel and asks for the master again (a switch it missed is caught there). Locks held
//! across a failover are only as safe as replication made them: a plain lock can be granted
//! twice after a failover (DESIGN.md, seed 004).

use std::sync::{Mutex, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::task::JoinHandle;

use crate::client::{Client, Inner};
use crate::error::{LockError, Result};
use crate::options::ClientOptions;

/// Pause before the follower retries after its sentinel connection failed.
const RETRY: Duration = Duration::from_millis(500);
/// How often the follower asks the sentinel for the master again, in case a `+switch-master`
/// was missed (Redisson's sentinel scan interval is 1 s).
const REPOLL: Duration = Duration::from_secs(1);
/// The sentinel channel announcing a new master.
const SWITCH_MASTER: &str = "+switch-master";

pub(crate) struct SentinelState {
    master_name: String,
    /// How to reach a master besides its address: password, database, TLS.
    template: redis::ConnectionInfo,
    current: Mutex<(String, u16)>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl SentinelState {
    pub(crate) fn stop(&self) {
        if let Some(t) = lock(&self.task).take() {
            t.abort();
        }
    }
}

impl Drop for SentinelState {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Client {
    /// Connects to the master that the sentinels at `sentinel_urls` (`redis://host:port`)
    /// monitor as `master_name`, and follows it across failovers: on `+switch-master` the
    /// command and pub/sub connections move to the new master and every waiter retries there.
    ///
    /// The master is reached as `redis://<host>:<port>/` with the address the sentinel reports
    /// and the user name and password of the first sentinel URL (as Redisson uses its
    /// `password` for both unless a `sentinelPassword` is set); give the master's own with
    /// [`open_sentinel_with_master`](Self::open_sentinel_with_master).
    ///
    /// # Errors
    /// [`LockError::MasterNotFound`] when no sentinel knows `master_name`; Redis errors when the
    /// master cannot be reached.
    pub async fn open_sentinel(
        sentinel_urls: &[&str],
        master_name: &str,
        options: ClientOptions,
    ) -> Result<Client> {
        let mut master = redis::RedisConnectionInfo::default();
        if let Some(first) = sentinel_urls.first() {
            let info = redis::Client::open(*first)?.get_connection_info().clone();
            let auth = info.redis_settings();
            if let Some(user) = auth.username() {
                master = master.set_username(user);
            }
            if let Some(password) = auth.password() {
                master = master.set_password(password);
            }
        }
        let template = redis::Client::open("redis://127.0.0.1/")?
            .get_connection_info()
            .clone()
            .set_redis_settings(master);
        Client::open_sentinel_with(sentinel_urls, master_name, template, options).await
    }

    /// [`open_sentinel`](Self::open_sentinel) for a master that needs more than its address:
    /// `master_url` gives the scheme (`rediss://` for TLS), user, password and database
    /// (`redis://:secret@_/2`); its host and port are ignored and replaced by the address the
    /// sentinels report, before and after every failover.
    ///
    /// # Errors
    /// As [`open_sentinel`](Self::open_sentinel); a `master_url` that is not a Redis URL.
    pub async fn open_sentinel_with_master(
        sentinel_urls: &[&str],
        master_name: &str,
        master_url: &str,
        options: ClientOptions,
    ) -> Result<Client> {
        let template = redis::Client::open(master_url)?
            .get_connection_info()
            .clone();
        Client::open_sentinel_with(sentinel_urls, master_name, template, options).await
    }

    async fn open_sentinel_with(
        sentinel_urls: &[&str],
        master_name: &str,
        template: redis::ConnectionInfo,
        options: ClientOptions,
    ) -> Result<Client> {
        let sentinels = sentinel_urls
            .iter()
            .map(|u| redis::Client::open(*u))
            .collect::<redis::RedisResult<Vec<_>>>()?;
        let mut found = None;
        for s in &sentinels {
            match master_addr(s, master_name, options.connection_timeout).await {
                Ok(Some(addr)) => {
                    found = Some(addr);
                    break;
                }
                Ok(None) => {}
                Err(e) => tracing::debug!(error = %e, "sentinel unreachable"),
            }
        }
        let Some((host, port)) = found else {
            return Err(LockError::MasterNotFound {
                master: master_name.to_owned(),
            });
        };
        let state = SentinelState {
            master_name: master_name.to_owned(),
            template: template.clone(),
            current: Mutex::new((host.clone(), port)),
            task: Mutex::new(None),
        };
        let client =
            Client::build(master_client(&template, &host, port)?, options, Some(state)).await?;
        let task = tokio::spawn(follow(
            client.weak(),
            sentinels,
            master_name.to_owned(),
            client.options().connection_timeout,
        ));
        if let Some(s) = &client.inner.sentinel {
            *lock(&s.task) = Some(task);
        }
        tracing::debug!(master = master_name, %host, port, "following sentinel master");
        Ok(client)
    }

    /// The master this client talks to, for a client opened with
    /// [`open_sentinel`](Self::open_sentinel); `None` otherwise.
    pub fn master_addr(&self) -> Option<(String, u16)> {
        self.inner
            .sentinel
            .as_ref()
            .map(|s| lock(&s.current).clone())
    }

    /// The Sentinel master name, for a client opened with [`open_sentinel`](Self::open_sentinel).
    pub fn master_name(&self) -> Option<&str> {
        self.inner.sentinel.as_ref().map(|s| s.master_name.as_str())
    }
}

/// A client for the master at `host:port` with the rest of `template` (password, database,
/// TLS settings).
fn master_client(template: &redis::ConnectionInfo, host: &str, port: u16) -> Result<redis::Client> {
    let host = host.to_owned();
    let addr = match template.addr() {
        redis::ConnectionAddr::TcpTls {
            insecure,
            tls_params,
            ..
        } => redis::ConnectionAddr::TcpTls {
            host,
            port,
            insecure: *insecure,
            tls_params: tls_params.clone(),
        },
        _ => redis::ConnectionAddr::Tcp(host, port),
    };
    Ok(redis::Client::open(template.clone().set_addr(addr))?)
}

/// `fut` within `limit`, a timeout being a Redis I/O error.
async fn bounded<T>(
    limit: Duration,
    fut: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => Ok(r?),
        Err(_) => Err(LockError::Redis(redis::RedisError::from(
            std::io::Error::from(std::io::ErrorKind::TimedOut),
        ))),
    }
}

/// Asks a sentinel, on a connection of its own, for the address of `master`.
async fn master_addr(
    sentinel: &redis::Client,
    master: &str,
    timeout: Duration,
) -> Result<Option<(String, u16)>> {
    let mut conn = bounded(timeout, sentinel.get_multiplexed_async_connection()).await?;
    ask(&mut conn, master, timeout).await
}

/// Asks the sentinel behind `conn` for the address of `master`.
async fn ask(
    conn: &mut redis::aio::MultiplexedConnection,
    master: &str,
    timeout: Duration,
) -> Result<Option<(String, u16)>> {
    let mut cmd = redis::cmd("SENTINEL");
    cmd.arg("get-master-addr-by-name").arg(master);
    bounded(timeout, cmd.query_async::<Option<(String, u16)>>(conn)).await
}

/// Parses `<master> <old-ip> <old-port> <new-ip> <new-port>` for `master`.
fn parse_switch(payload: &str, master: &str) -> Option<(String, u16)> {
    let parts: Vec<&str> = payload.split_whitespace().collect();
    match parts.as_slice() {
        [name, _, _, ip, port] if *name == master => Some(((*ip).to_owned(), port.parse().ok()?)),
        _ => None,
    }
}

async fn follow(
    weak: Weak<Inner>,
    sentinels: Vec<redis::Client>,
    master: String,
    timeout: Duration,
) {
    for i in 0usize.. {
        let sentinel = &sentinels[i % sentinels.len()];
        if let Err(e) = watch(&weak, sentinel, &master, timeout).await {
            tracing::debug!(error = %e, "sentinel follower: retrying");
        }
        if weak.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(RETRY).await;
    }
}

async fn watch(
    weak: &Weak<Inner>,
    sentinel: &redis::Client,
    master: &str,
    timeout: Duration,
) -> Result<()> {
    let mut pubsub = bounded(timeout, sentinel.get_async_pubsub()).await?;
    bounded(timeout, pubsub.subscribe(SWITCH_MASTER)).await?;
    // One connection for every question to this sentinel, the re-polls included.
    let mut conn = bounded(timeout, sentinel.get_multiplexed_async_connection()).await?;
    // Subscribed first, then asked: a switch between the two is seen either way.
    if let Some(addr) = ask(&mut conn, master, timeout).await? {
        apply(weak, addr).await?;
    }
    let mut stream = pubsub.on_message();
    let mut repoll = tokio::time::interval(REPOLL);
    repoll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // The sentinel's own announcement first; the re-poll is the fallback for a missed one.
        tokio::select! {
            biased;
            msg = stream.next() => {
                let Some(msg) = msg else { return Ok(()) };
                let payload: String = msg.get_payload()?;
                if let Some(addr) = parse_switch(&payload, master) {
                    tracing::info!(master, host = %addr.0, port = addr.1, "sentinel: +switch-master");
                    apply(weak, addr).await?;
                }
            }
            _ = repoll.tick() => {
                // A switch announced while this connection was not listening, or lost.
                if let Some(addr) = ask(&mut conn, master, timeout).await? {
                    apply(weak, addr).await?;
                }
            }
        }
        if weak.strong_count() == 0 {
            return Ok(());
        }
    }
}

async fn apply(weak: &Weak<Inner>, addr: (String, u16)) -> Result<()> {
    let Some(inner) = weak.upgrade() else {
        return Ok(());
    };
    let client = Client { inner };
    let Some(state) = client.inner.sentinel.as_ref() else {
        return Ok(());
    };
    if *lock(&state.current) == addr {
        return Ok(());
    }
    client
        .switch_master(master_client(&state.template, &addr.0, addr.1)?)
        .await?;
    *lock(&state.current) = addr;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_master_messages_are_parsed_for_our_master_only() {
        assert_eq!(
            parse_switch("mymaster 127.0.0.1 6379 127.0.0.1 6380", "mymaster"),
            Some(("127.0.0.1".to_owned(), 6380))
        );
        assert_eq!(
            parse_switch("other 127.0.0.1 6379 127.0.0.1 6380", "mymaster"),
            None
        );
        assert_eq!(parse_switch("mymaster 1 2", "mymaster"), None);
    }
}
