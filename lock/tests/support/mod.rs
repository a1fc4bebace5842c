//! Test backends: every behaviour test runs against each backend returned by [`backends`]:
//! a real `redis-server` on a free loopback port (the testkit's launcher; skipped with one notice
//! when it is not on the PATH) and our in-process server.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use locksmith_lock::{Client, ClientOptions};
use locksmith_testkit::{RealRedis, RealSentinel};

/// One server to run a test against; dropping it stops the server.
pub struct Backend {
    pub name: &'static str,
    pub url: String,
    pub port: u16,
    _guard: Box<dyn std::any::Any + Send>,
}

impl Backend {
    pub async fn client(&self) -> Client {
        Client::open(&self.url).await.unwrap()
    }

    pub async fn client_with(&self, options: ClientOptions) -> Client {
        Client::open_with(&self.url, options).await.unwrap()
    }

    pub async fn raw(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// Stops the server (for failure tests), when the backend supports it.
    pub fn stop(&mut self) {
        if let Some(s) = self._guard.downcast_mut::<RealRedis>() {
            s.stop();
        }
        if let Some(ours) = self._guard.downcast_mut::<OurServer>() {
            ours.0.take();
        }
    }
}

/// The backends to run each test against.
pub async fn backends() -> Vec<Backend> {
    let mut v = Vec::new();
    if let Some(b) = real_redis(&[]) {
        v.push(b);
    }
    v.push(in_process().await);
    v
}

/// Our own server, in-process on a free loopback port, stopped when the backend drops.
pub async fn in_process() -> Backend {
    let server = locksmith_server::Server::builder().start().await.unwrap();
    Backend {
        name: "locksmith",
        url: server.url(),
        port: server.addr().port(),
        _guard: Box::new(OurServer(Some(server))),
    }
}

/// Our own server without a listener, seen by its clients at `port` on 127.0.0.1 (clients
/// reach it over streams the test serves).
pub async fn in_memory_node(port: u16) -> locksmith_server::ServerHandle {
    locksmith_server::Server::builder()
        .in_memory(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .seed(u64::from(port))
        .start()
        .await
        .unwrap()
}

/// Until `client` waits (a waiter at its select) `n` times in all; bounded.
pub async fn until_waiting(client: &Client, n: u64) {
    for _ in 0..10_000 {
        if client.metrics().waits >= n {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the client never waited {n} times");
}

/// Our own server with `DEBUG` enabled (`enable-debug-command yes`).
pub async fn in_process_with_debug() -> Backend {
    let server = locksmith_server::Server::builder()
        .enable_debug_command(locksmith_server::EnableCommand::Yes)
        .start()
        .await
        .unwrap();
    Backend {
        name: "locksmith",
        url: server.url(),
        port: server.addr().port(),
        _guard: Box::new(OurServer(Some(server))),
    }
}

/// Holds our in-process server; `Backend::stop` drops it, which stops the node.
struct OurServer(Option<locksmith_server::ServerHandle>);

/// Starts `redis-server` on a free loopback port with extra arguments (None, with a one-line
/// notice, when it is not on the PATH).
pub fn real_redis(extra: &[&str]) -> Option<Backend> {
    let server = RealRedis::start_with(extra)?;
    Some(Backend {
        name: "redis-server",
        url: server.url(),
        port: server.port,
        _guard: Box::new(server),
    })
}

/// Options with a short watchdog so renewal tests take seconds, not minutes.
pub fn short_watchdog(ms: u64) -> ClientOptions {
    ClientOptions::default().watchdog_timeout(Duration::from_millis(ms))
}

/// A unique lock name per test.
pub fn name(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// Polls `f` every 10 ms until it is true, at most `max` long.
pub async fn eventually<F, Fut>(max: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + max;
    loop {
        if f().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A real Sentinel (see [`RealSentinel`]), with its URL at hand.
pub struct Sentinel {
    pub port: u16,
    pub url: String,
    _server: RealSentinel,
}

impl Sentinel {
    /// Starts a Sentinel monitoring `127.0.0.1:<master_port>` as `master_name`.
    pub fn start(master_name: &str, master_port: u16) -> Option<Sentinel> {
        let server = RealSentinel::start(master_name, master_port)?;
        Some(Sentinel {
            port: server.port,
            url: server.url(),
            _server: server,
        })
    }
}
