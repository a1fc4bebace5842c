//! Test backends: every behaviour test runs against each backend returned by [`backends`].
//! Today that is a real `redis-server` started on a free loopback port (skipped with one notice
//! when it is not on the PATH); our in-process server is added here as a second backend.

#![allow(dead_code, unreachable_pub)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::Duration;

use locksmith_lock::{Client, ClientOptions};

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
        if let Some(s) = self._guard.downcast_mut::<RedisServer>() {
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

/// Holds our in-process server; `Backend::stop` drops it, which stops the node.
struct OurServer(Option<locksmith_server::ServerHandle>);

static NOTICE: Once = Once::new();

fn redis_available() -> bool {
    let ok = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        NOTICE.call_once(|| eprintln!("redis-server not on PATH: skipping the real-Redis backend"));
    }
    ok
}

/// Starts `redis-server` on a free loopback port with extra arguments.
pub fn real_redis(extra: &[&str]) -> Option<Backend> {
    if !redis_available() {
        return None;
    }
    let server = RedisServer::start(extra);
    Some(Backend {
        name: "redis-server",
        url: format!("redis://127.0.0.1:{}/", server.port),
        port: server.port,
        _guard: Box::new(server),
    })
}

pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
}

impl RedisServer {
    fn start(extra: &[&str]) -> RedisServer {
        // Redis cannot bind port 0: take a free port from the OS, release it, and use it.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = RedisServer {
            port,
            child: Some(child),
        };
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
        for _ in 0..250 {
            if let Ok(mut c) = client.get_connection() {
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return server;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server on port {port} did not answer PING within 5 s");
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
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

/// A `redis-server --sentinel` monitoring `127.0.0.1:<master_port>` as `master_name` with a
/// quorum of 1 and short timeouts; its config lives in a temp dir removed on drop.
pub struct Sentinel {
    pub port: u16,
    pub url: String,
    child: Option<Child>,
    dir: std::path::PathBuf,
}

impl Sentinel {
    pub fn start(master_name: &str, master_port: u16) -> Option<Sentinel> {
        if !redis_available() {
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!(
            "locksmith-sentinel-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\n\
                 sentinel monitor {master_name} 127.0.0.1 {master_port} 1\n\
                 sentinel down-after-milliseconds {master_name} 1000\n\
                 sentinel failover-timeout {master_name} 5000\n\
                 sentinel parallel-syncs {master_name} 1\n",
                dir = dir.display()
            ),
        )
        .unwrap();
        let child = Command::new("redis-server")
            .arg(&conf)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = Sentinel {
            port,
            url: format!("redis://127.0.0.1:{port}/"),
            child: Some(child),
            dir,
        };
        let client = redis::Client::open(s.url.as_str()).unwrap();
        for _ in 0..250 {
            if let Ok(mut c) = client.get_connection() {
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return Some(s);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("sentinel on port {port} did not answer PING within 5 s");
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
