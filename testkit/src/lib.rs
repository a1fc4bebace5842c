//! Test support for the workspace (not published): an in-process server on 127.0.0.1:0, a real
//! `redis-server` (or `valkey-server`, for the Valkey target) on a free loopback port when one
//! is on the PATH (one launcher for every crate's tests), raw-bytes exchanges, side-by-side comparison with real Redis, the harness
//! scenarios' helpers ([`harness`]) and where timelines are written ([`write_timeline!`]).
//!
//! Test files use it as their `support` module: `use locksmith_testkit as support;`.

pub mod harness;
pub mod timeline;

use locksmith_server::{Compat, Server, ServerHandle};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Our server, in-process, on a free port.
pub async fn start() -> ServerHandle {
    Server::builder().start().await.unwrap()
}

/// Our server and, when `redis-server` is on the PATH, a real one: the targets of a scenario
/// run on each and compared.
pub async fn both() -> (ServerHandle, Option<RealRedis>) {
    (start().await, RealRedis::start())
}

/// [`both`], the two with `DEBUG` enabled (`enable-debug-command yes`).
pub async fn both_with_debug() -> (ServerHandle, Option<RealRedis>) {
    let ours = Server::builder()
        .enable_debug_command(locksmith_server::EnableCommand::Yes)
        .start()
        .await
        .unwrap();
    (
        ours,
        RealRedis::start_with(&["--enable-debug-command", "yes"]),
    )
}

/// The URLs of [`both`]'s servers, ours first.
pub fn urls(ours: &ServerHandle, real: &Option<RealRedis>) -> Vec<String> {
    std::iter::once(ours.url())
        .chain(real.as_ref().map(RealRedis::url))
        .collect()
}

/// The loopback addresses of [`both`]'s servers, ours first.
pub fn addrs(ours: &ServerHandle, real: &Option<RealRedis>) -> Vec<SocketAddr> {
    std::iter::once(ours.addr())
        .chain(real.as_ref().map(RealRedis::addr))
        .collect()
}

/// A `redis::Client` for `url`.
pub fn client(url: &str) -> redis::Client {
    redis::Client::open(url).unwrap()
}

/// An async multiplexed connection to `url`. Its response timeout (30 s) only guards against
/// a hang: the crate's default (500 ms) failed replies that a loaded 2-core CI machine gave
/// late (a first `EVAL` among 80 tests running at once), which no test means to assert.
pub async fn conn(url: &str) -> redis::aio::MultiplexedConnection {
    conn_answering_within(url, Duration::from_secs(30)).await
}

/// A connection that waits as long as a long script runs (the crate's default response
/// timeout is shorter than some scripts the tests run); 120 s is only a hang guard.
pub async fn patient_conn(url: &str) -> redis::aio::MultiplexedConnection {
    conn_answering_within(url, Duration::from_secs(120)).await
}

/// An async multiplexed connection to `url` whose replies may take up to `timeout`.
async fn conn_answering_within(url: &str, timeout: Duration) -> redis::aio::MultiplexedConnection {
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(timeout));
    client(url)
        .get_multiplexed_async_connection_with_config(&config)
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

/// A reference server a test compares ours with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reference {
    /// `redis-server` 7.0.15, on the PATH.
    Redis,
    /// `valkey-server` 8.1.8: the path in `VALKEY_SERVER`, else `valkey-server` on the PATH.
    Valkey,
}

impl Reference {
    /// The reference of a compatibility target.
    pub fn of(compat: Compat) -> Reference {
        match compat {
            Compat::Redis70 => Reference::Redis,
            Compat::Valkey81 => Reference::Valkey,
        }
    }

    /// The reference of the target this test run is for: the one `LOCKSMITH_COMPAT` names
    /// (the target our in-process servers start with, through `Config::default`), Redis when
    /// it is unset. A name no target has fails the test at once.
    pub fn of_run() -> Reference {
        match locksmith_server::compat_from_env() {
            Ok(compat) => Reference::of(compat),
            Err(e) => panic!("{e}"),
        }
    }

    /// The binary's name.
    pub fn name(self) -> &'static str {
        match self {
            Reference::Redis => "redis-server",
            Reference::Valkey => "valkey-server",
        }
    }

    /// The program to run.
    fn program(self) -> std::ffi::OsString {
        match self {
            Reference::Redis => "redis-server".into(),
            Reference::Valkey => std::env::var_os("VALKEY_SERVER")
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| "valkey-server".into()),
        }
    }

    /// The one line a test prints when the binary is missing.
    fn missing(self) -> &'static str {
        match self {
            Reference::Redis => "redis-server not on PATH: skipping the comparison with real Redis",
            Reference::Valkey => {
                "valkey-server not on PATH (nor VALKEY_SERVER): skipping the comparison with \
                 real Valkey"
            }
        }
    }
}

/// A real reference server (`redis-server`, or `valkey-server` through
/// [`RealRedis::start_reference`]) child process on a free loopback port, killed on drop. Its `dir`
/// is a temporary directory of its own, removed on drop (a replica writes the dataset it
/// received there).
pub struct RealRedis {
    child: Option<Child>,
    dir: std::path::PathBuf,
    /// The port it listens on.
    pub port: u16,
}

impl RealRedis {
    /// Starts the reference server of the target the run is for (`redis-server`, or
    /// `valkey-server` under `LOCKSMITH_COMPAT=valkey-8.1`, see [`Reference::of_run`]) if it
    /// is there; otherwise prints one line and returns None.
    pub fn start() -> Option<RealRedis> {
        Self::start_with(&[])
    }

    /// Like [`RealRedis::start`] with extra `--name value` arguments.
    pub fn start_with(extra: &[&str]) -> Option<RealRedis> {
        Self::start_reference(Reference::of_run(), extra)
    }

    /// Starts `valkey-server` (from `VALKEY_SERVER`, or on the PATH) with extra `--name value`
    /// arguments; where it is missing prints one line and returns None.
    pub fn start_valkey(extra: &[&str]) -> Option<RealRedis> {
        Self::start_reference(Reference::Valkey, extra)
    }

    /// Starts the `reference` server with extra `--name value` arguments (no snapshots, no
    /// append-only file, a directory of its own); where its binary is missing prints one line
    /// and returns None.
    pub fn start_reference(reference: Reference, extra: &[&str]) -> Option<RealRedis> {
        let program = reference.program();
        let dir = temp_dir(reference.name());
        let started = spawn_on_a_free_port(reference.name(), |port| {
            let mut command = Command::new(&program);
            command
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
                .arg("--dir")
                .arg(&dir)
                .args(extra);
            command
        });
        let Some((child, port)) = started else {
            eprintln!("{}", reference.missing());
            let _ = std::fs::remove_dir_all(&dir);
            return None;
        };
        Some(RealRedis {
            child: Some(child),
            dir,
            port,
        })
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Its loopback address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Kills the server now (a failure test); dropping does the same.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RealRedis {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh directory under the system's temporary one, named for `what`, this process and a
/// counter.
fn temp_dir(what: &str) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "locksmith-{what}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A real `redis-server --sentinel` monitoring `127.0.0.1:<master_port>` as `master_name` with a
/// quorum of 1 and short timeouts; its config lives in a temporary directory removed on drop.
pub struct RealSentinel {
    child: Option<Child>,
    dir: std::path::PathBuf,
    /// The port it listens on.
    pub port: u16,
}

impl RealSentinel {
    /// Starts a Sentinel if `redis-server` is on the PATH; otherwise prints one line and
    /// returns None.
    pub fn start(master_name: &str, master_port: u16) -> Option<RealSentinel> {
        let dir = temp_dir("sentinel");
        let conf = dir.join("sentinel.conf");
        let started = spawn_on_a_free_port("sentinel", |port| {
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
            let mut command = Command::new("redis-server");
            command.arg(&conf).arg("--sentinel");
            command
        });
        let Some((child, port)) = started else {
            eprintln!("redis-server not on PATH: skipping the comparison with real Sentinel");
            let _ = std::fs::remove_dir_all(&dir);
            return None;
        };
        Some(RealSentinel {
            child: Some(child),
            dir,
            port,
        })
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for RealSentinel {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts the child `command(port)` builds on a free loopback port and waits until it answers
/// PING; None when the program cannot be spawned (not on the PATH). A free port can be taken by
/// another test between [`free_port`] and the child's bind, and the child then exits: it is
/// started again on another port (at most 5 tries). Panics when a child runs but does not answer
/// within 10 s.
fn spawn_on_a_free_port(
    what: &str,
    mut command: impl FnMut(u16) -> Command,
) -> Option<(Child, u16)> {
    const TRIES: usize = 5;
    for _ in 0..TRIES {
        let port = free_port();
        let mut child = command(port)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if child.try_wait().ok().flatten().is_some() {
                break;
            }
            // Another server may hold the port until this child fails to bind and exits: the
            // one answering must be the child. With a password INFO is refused; a child that
            // lost the port exits within milliseconds, so it is the child if it still runs a
            // moment after the refusal.
            match answer_from(port, child.id()) {
                Answer::Child => return Some((child, port)),
                Answer::NoAuth => {
                    std::thread::sleep(Duration::from_millis(100));
                    if child.try_wait().ok().flatten().is_none() {
                        return Some((child, port));
                    }
                }
                Answer::Other => {}
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} on port {port} did not answer PING within 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("{what} exited at once on {TRIES} free ports in a row");
}

/// Who answered `INFO server` on a loopback port.
enum Answer {
    /// The process looked for.
    Child,
    /// A server that wants a password first.
    NoAuth,
    /// Nobody yet, or another process.
    Other,
}

/// Whether the server on loopback `port` is the process `pid` (its `INFO server` says so).
fn answer_from(port: u16, pid: u32) -> Answer {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return Answer::Other;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    if s.write_all(b"INFO server\r\n").is_err() {
        return Answer::Other;
    }
    let wanted = format!("\r\nprocess_id:{pid}\r\n");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    // INFO server is a few KB: a bounded number of reads.
    for _ in 0..16 {
        match s.read(&mut buf) {
            Ok(n) if n > 0 => seen.extend_from_slice(buf.get(..n).unwrap_or_default()),
            _ => return Answer::Other,
        }
        if seen.starts_with(b"-NOAUTH") {
            return Answer::NoAuth;
        }
        if String::from_utf8_lossy(&seen).contains(&wanted) {
            return Answer::Child;
        }
        if seen.ends_with(b"\r\n\r\n") || seen.starts_with(b"-") {
            return Answer::Other;
        }
    }
    Answer::Other
}

/// Whether a server on loopback `port` answers PING (`+PONG`, or `-NOAUTH` with a password)
/// within `within`, polling every 20 ms. Blocking.
pub fn answers_ping(port: u16, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            if s.write_all(b"PING\r\n").is_ok() {
                let mut buf = [0u8; 64];
                if let Ok(n) = s.read(&mut buf) {
                    let reply = buf.get(..n).unwrap_or_default();
                    if reply.starts_with(b"+PONG") || reply.starts_with(b"-NOAUTH") {
                        return true;
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
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

/// `INFO section` as its `field:value` lines, in order.
pub async fn info(
    con: &mut redis::aio::MultiplexedConnection,
    section: &str,
) -> Vec<(String, String)> {
    let text: String = cmd(&["INFO", section]).query_async(con).await.unwrap();
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

/// The value of `field` among `info`'s lines (a panic naming the field when it is missing).
pub fn info_value<'a>(info: &'a [(String, String)], field: &str) -> &'a str {
    info.iter()
        .find(|(k, _)| k == field)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {field} in INFO: {info:?}"))
}

/// The `field` of `INFO section`.
pub async fn info_field(
    con: &mut redis::aio::MultiplexedConnection,
    section: &str,
    field: &str,
) -> String {
    info_value(&info(con, section).await, field).to_string()
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
    /// Our server.
    pub ours: ServerHandle,
    /// The real one, when redis-server is on the PATH.
    pub real: Option<RealRedis>,
    /// A connection to ours.
    pub ours_con: redis::aio::MultiplexedConnection,
    /// A connection to the real one.
    pub real_con: Option<redis::aio::MultiplexedConnection>,
}

impl Pair {
    /// Starts both servers and connects to each.
    pub async fn start() -> Pair {
        Self::start_for(Compat::Redis70).await
    }

    /// Starts ours with the compatibility target `compat` and the reference of that target
    /// (`redis-server` for Redis 7.0, `valkey-server` for Valkey 8.1), and connects to each.
    pub async fn start_for(compat: Compat) -> Pair {
        let ours = Server::builder().compat(compat).start().await.unwrap();
        // Patient: some compared commands (a BITFIELD at the last offset) make a server
        // allocate 512 MB, which takes longer than the default timeout on a loaded machine.
        let ours_con = patient_conn(&ours.url()).await;
        let real = RealRedis::start_reference(Reference::of(compat), &[]);
        let real_con = match &real {
            Some(r) => Some(patient_conn(&r.url()).await),
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

/// A raw RESP connection that writes commands and reads whole reply frames, so tests can
/// compare exact bytes (pushes, confirmations) between servers.
pub struct Wire {
    stream: tokio::net::TcpStream,
    buf: bytes::BytesMut,
}

/// The length of the complete RESP2/RESP3 frame at the start of `buf`, if it is all there.
pub fn frame_len(buf: &[u8]) -> Option<usize> {
    let nl = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(buf.get(1..nl)?).ok()?;
    let head = nl + 2;
    match buf.first()? {
        b'$' | b'!' | b'=' => {
            let n: i64 = line.parse().ok()?;
            if n < 0 {
                return Some(head);
            }
            let end = head + n as usize + 2;
            (buf.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n: i64 = line.parse().ok()?;
            let items = match buf[0] {
                b'%' | b'|' => n.max(0) * 2,
                _ => n.max(0),
            };
            let mut at = head;
            for _ in 0..items {
                at += frame_len(buf.get(at..)?)?;
            }
            // An attribute is followed by the frame it describes.
            if buf[0] == b'|' {
                at += frame_len(buf.get(at..)?)?;
            }
            Some(at)
        }
        _ => Some(head),
    }
}

impl Wire {
    /// Connects to `addr`.
    pub async fn connect(addr: SocketAddr) -> Wire {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        Wire {
            stream,
            buf: bytes::BytesMut::new(),
        }
    }

    /// Sends each command as a multibulk request, in one write.
    pub async fn send(&mut self, cmds: &[&[&str]]) {
        let cmds: Vec<Vec<&[u8]>> = cmds
            .iter()
            .map(|c| c.iter().map(|a| a.as_bytes()).collect())
            .collect();
        let refs: Vec<&[&[u8]]> = cmds.iter().map(|c| c.as_slice()).collect();
        self.send_bytes(&refs).await;
    }

    /// Like [`Wire::send`] with binary arguments.
    pub async fn send_bytes(&mut self, cmds: &[&[&[u8]]]) {
        use tokio::io::AsyncWriteExt;
        let mut out = Vec::new();
        for cmd in cmds {
            out.extend_from_slice(format!("*{}\r\n", cmd.len()).as_bytes());
            for arg in cmd.iter() {
                out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
                out.extend_from_slice(arg);
                out.extend_from_slice(b"\r\n");
            }
        }
        self.stream.write_all(&out).await.unwrap();
    }

    /// Sends `bytes` as they are (a partial or malformed request).
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt;
        self.stream.write_all(bytes).await.unwrap();
    }

    /// The raw bytes of the next frame (waits at most 10 s).
    pub async fn frame(&mut self) -> Vec<u8> {
        tokio::time::timeout(Duration::from_secs(10), self.next_frame())
            .await
            .expect("no reply frame within 10 s")
            .expect("connection closed before a reply")
    }

    /// The raw bytes of the next `n` frames.
    pub async fn frames(&mut self, n: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.frame().await);
        }
        out
    }

    /// The next frame, or None at EOF.
    pub async fn next_frame(&mut self) -> Option<Vec<u8>> {
        use tokio::io::AsyncReadExt;
        loop {
            if let Some(len) = frame_len(&self.buf) {
                return Some(self.buf.split_to(len).to_vec());
            }
            if self.stream.read_buf(&mut self.buf).await.unwrap_or(0) == 0 {
                return None;
            }
        }
    }

    /// Sends the commands and returns the raw bytes of the next `n` frames.
    pub async fn call(&mut self, cmds: &[&[&str]], n: usize) -> Vec<Vec<u8>> {
        self.send(cmds).await;
        self.frames(n).await
    }

    /// Reads and discards everything until the peer closes (at most `limit` wall-clock time);
    /// returns the bytes read, or None if the connection was still open at the deadline.
    pub async fn drain_to_eof(&mut self, limit: Duration) -> Option<usize> {
        use tokio::io::AsyncReadExt;
        let mut total = self.buf.len();
        self.buf.clear();
        let mut chunk = vec![0u8; 256 * 1024];
        let read_all = async {
            loop {
                match self.stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return total,
                    Ok(n) => total += n,
                }
            }
        };
        tokio::time::timeout(limit, read_all).await.ok()
    }
}

/// The same raw exchange on our server and (when available) real Redis.
pub struct Twin {
    /// The connection to our server.
    pub ours: Wire,
    /// The connection to the real one.
    pub real: Option<Wire>,
}

impl Twin {
    /// Connects to both servers of `pair`.
    pub async fn connect(pair: &Pair) -> Twin {
        Twin {
            ours: Wire::connect(pair.ours.addr()).await,
            real: match &pair.real {
                Some(r) => Some(Wire::connect(r.addr()).await),
                None => None,
            },
        }
    }

    /// Sends `cmds` to both and asserts the next `n` frames are byte-identical; returns ours.
    pub async fn same(&mut self, cmds: &[&[&str]], n: usize) -> Vec<Vec<u8>> {
        self.send(cmds).await;
        self.expect(n).await
    }

    /// Sends `cmds` to both without reading.
    pub async fn send(&mut self, cmds: &[&[&str]]) {
        self.ours.send(cmds).await;
        if let Some(real) = &mut self.real {
            real.send(cmds).await;
        }
    }

    /// Reads `n` frames from both and asserts they are byte-identical; returns ours.
    pub async fn expect(&mut self, n: usize) -> Vec<Vec<u8>> {
        let ours = self.ours.frames(n).await;
        if let Some(real) = &mut self.real {
            let theirs = real.frames(n).await;
            let show = |f: &Vec<Vec<u8>>| {
                f.iter()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                show(&ours),
                show(&theirs),
                "frames differ (left: ours, right: redis)"
            );
        }
        ours
    }
}

/// RESP3 connections (`?protocol=resp3`) to our server and, when available, a real one, fed
/// the same commands.
pub struct Resp3Pair {
    /// Our server.
    pub ours: ServerHandle,
    /// The real one, when redis-server is on the PATH.
    pub real: Option<RealRedis>,
    /// A RESP3 connection to ours.
    pub ours_con: redis::aio::MultiplexedConnection,
    /// A RESP3 connection to the real one.
    pub real_con: Option<redis::aio::MultiplexedConnection>,
}

impl Resp3Pair {
    /// Starts both servers and connects to each with `HELLO 3`.
    pub async fn start() -> Resp3Pair {
        let ours = start().await;
        let ours_con = conn(&format!("{}?protocol=resp3", ours.url())).await;
        let real = RealRedis::start();
        let real_con = match &real {
            Some(r) => Some(conn(&format!("{}?protocol=resp3", r.url())).await),
            None => None,
        };
        Resp3Pair {
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
                "RESP3 reply to {args:?} differs (left: ours, right: redis)"
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
}
