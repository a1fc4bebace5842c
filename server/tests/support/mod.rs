//! Shared test helpers: an in-process server on 127.0.0.1:0, a real `redis-server` on a free
//! loopback port when one is on the PATH, raw-bytes exchanges, and side-by-side comparison.
#![allow(dead_code, unreachable_pub, missing_docs)]

use locksmith_server::{Server, ServerHandle};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Our server, in-process, on a free port.
pub async fn start() -> ServerHandle {
    Server::builder().start().await.unwrap()
}

/// A `redis::Client` for `url`.
pub fn client(url: &str) -> redis::Client {
    redis::Client::open(url).unwrap()
}

/// An async multiplexed connection to `url`.
pub async fn conn(url: &str) -> redis::aio::MultiplexedConnection {
    client(url)
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// A free loopback port (bind port 0, read it, release it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A real `redis-server` child process on a free loopback port, killed on drop.
pub struct RealRedis {
    child: Child,
    pub port: u16,
}

impl RealRedis {
    /// Starts `redis-server` if it is on the PATH; otherwise prints one line and returns None.
    pub fn start() -> Option<RealRedis> {
        Self::start_with(&[])
    }

    /// Like [`RealRedis::start`] with extra `--name value` arguments.
    pub fn start_with(extra: &[&str]) -> Option<RealRedis> {
        let port = free_port();
        let spawned = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(_) => {
                eprintln!("redis-server not on PATH: skipping the comparison with real Redis");
                return None;
            }
        };
        let real = RealRedis { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
                let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                if s.write_all(b"PING\r\n").is_ok() {
                    let mut buf = [0u8; 64];
                    if let Ok(n) = s.read(&mut buf) {
                        // With --requirepass, NOAUTH also proves the server is up.
                        if buf[..n].starts_with(b"+PONG") || buf[..n].starts_with(b"-NOAUTH") {
                            return Some(real);
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server did not answer PING on port {port} within 10 s");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }
}

impl Drop for RealRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `bytes` to `addr` and reads until the peer closes or `idle` passes without data
/// (bounded: at most 5 s in all). Blocking; call from `spawn_blocking` inside async tests.
pub fn raw_exchange(addr: SocketAddr, bytes: &[u8], idle: Duration) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(idle)).unwrap();
    stream.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    out
}

/// Async wrapper of [`raw_exchange`].
pub async fn raw(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let bytes = bytes.to_vec();
    tokio::task::spawn_blocking(move || raw_exchange(addr, &bytes, Duration::from_millis(300)))
        .await
        .unwrap()
}

/// Builds a `redis::Cmd` from string arguments.
pub fn cmd(args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

/// Runs `args` on `con`, returning the reply or the error text as a `redis::Value`-like
/// string form that compares servers exactly.
pub async fn run(con: &mut redis::aio::MultiplexedConnection, args: &[&str]) -> String {
    let reply: redis::RedisResult<redis::Value> = cmd(args).query_async(con).await;
    match reply {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("ERROR {}", error_text(&e)),
    }
}

/// The full error line (code and message) of a redis-rs error.
pub fn error_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

/// Our server and, when available, a real one, fed the same commands.
pub struct Pair {
    pub ours: ServerHandle,
    pub real: Option<RealRedis>,
    pub ours_con: redis::aio::MultiplexedConnection,
    pub real_con: Option<redis::aio::MultiplexedConnection>,
}

impl Pair {
    pub async fn start() -> Pair {
        let ours = start().await;
        let ours_con = conn(&ours.url()).await;
        let real = RealRedis::start();
        let real_con = match &real {
            Some(r) => Some(conn(&r.url()).await),
            None => None,
        };
        Pair {
            ours,
            real,
            ours_con,
            real_con,
        }
    }

    /// Runs `args` on both; asserts equal replies; returns ours.
    pub async fn same(&mut self, args: &[&str]) -> String {
        let ours = run(&mut self.ours_con, args).await;
        if let Some(real_con) = &mut self.real_con {
            let real = run(real_con, args).await;
            assert_eq!(
                ours, real,
                "reply to {args:?} differs (left: ours, right: redis)"
            );
        }
        ours
    }

    /// Runs every command of `script` on both and asserts equal replies.
    pub async fn all_same(&mut self, script: &[&[&str]]) {
        for args in script {
            self.same(args).await;
        }
    }

    /// Runs `args` on both, parses integer replies, asserts |ours - real| <= tolerance.
    pub async fn close(&mut self, args: &[&str], tolerance: i64) -> i64 {
        let ours: i64 = cmd(args).query_async(&mut self.ours_con).await.unwrap();
        if let Some(real_con) = &mut self.real_con {
            let real: i64 = cmd(args).query_async(real_con).await.unwrap();
            assert!(
                (ours - real).abs() <= tolerance,
                "{args:?}: ours {ours}, redis {real}"
            );
        }
        ours
    }
}
