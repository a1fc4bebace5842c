//! The replica's side of replication over the network, after `REPLICAOF host port` on a node
//! whose replication no embedder manages: a task connects to the master and speaks Redis's
//! handshake (`PING`, `AUTH` with `masteruser`/`masterauth`, `REPLCONF listening-port`,
//! `REPLCONF capa eof capa psync2`, `PSYNC`), loads the RDB payload of a full
//! synchronisation (length-prefixed or the diskless `$EOF:<mark>` form) or continues from its
//! offset, then applies the master's stream as the master's client, answers
//! `REPLCONF GETACK` and acknowledges its offset every second. The payload is spooled to a
//! temporary file as it arrives (as Redis's replica writes `temp-<pid>.<time>.rdb`), so a
//! huge or endless payload takes disk, not memory, and never stalls other clients; it is
//! read back once complete. A lost link is retried every
//! second, continuing from the offset where the master's backlog allows; `repl-timeout`
//! seconds without data drop it.

use super::{master_client, Role};
use crate::node::{Effects, Node, State};
use bytes::{Buf, Bytes, BytesMut};
use locksmith_resp::{Frame, Limits, RequestDecoder};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest status line the handshake reads.
const MAX_LINE: usize = 64 * 1024;
/// Most bytes of a full synchronisation's payload accepted (Redis's `proto-max-bulk-len`
/// does not bound it; this bounds the disk a bad master can make a replica fill).
const MAX_PAYLOAD: u64 = 1 << 36;
/// Bytes read from the master at a time while its payload is spooled.
const SPOOL_CHUNK: usize = 64 * 1024;
/// Tells apart the spool files of replicas in one process.
static SPOOLS: AtomicU64 = AtomicU64::new(0);

/// The link to a master over the network, kept in the replica's [`super::ReplState`].
#[derive(Debug)]
pub(crate) struct Upstream {
    /// The master's host, as `REPLICAOF` named it.
    pub(crate) host: String,
    /// The master's port.
    pub(crate) port: u16,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the link's task reports.
#[derive(Debug, Default)]
struct Shared {
    /// The stream is flowing (Redis's `REPL_STATE_CONNECTED`).
    up: AtomicBool,
    /// A full synchronisation's payload is being received.
    syncing: AtomicBool,
    /// Node-clock ms of the last data from the master.
    last_io_ms: AtomicU64,
    /// Node-clock ms when the link went down (or the node became a replica).
    down_since_ms: AtomicU64,
    /// The payload's declared size, -1 for the `$EOF:` form (`master_sync_total_bytes`).
    sync_total: std::sync::atomic::AtomicI64,
    /// Bytes of the payload received so far (`master_sync_read_bytes`).
    sync_read: AtomicU64,
}

/// The link's state for `INFO`.
#[derive(Debug)]
pub(crate) struct LinkStatus {
    /// The master's host.
    pub(crate) host: String,
    /// Whether the stream flows.
    pub(crate) up: bool,
    /// Seconds since the last data from the master.
    pub(crate) last_io_seconds_ago: i64,
    /// Whether a full synchronisation is being received.
    pub(crate) syncing: bool,
    /// Seconds the link has been down.
    pub(crate) down_since_seconds: u64,
    /// The payload's declared size (-1 when it ends with a mark) and the bytes received.
    pub(crate) transfer: (i64, u64),
}

impl Upstream {
    /// The link's state at `now_ms`.
    pub(crate) fn status(&self, now_ms: u64) -> LinkStatus {
        let s = &self.shared;
        let secs = |ms: &AtomicU64| now_ms.saturating_sub(ms.load(Ordering::Acquire)) / 1000;
        LinkStatus {
            host: self.host.clone(),
            up: s.up.load(Ordering::Acquire),
            last_io_seconds_ago: i64::try_from(secs(&s.last_io_ms)).unwrap_or(i64::MAX),
            syncing: s.syncing.load(Ordering::Acquire),
            down_since_seconds: secs(&s.down_since_ms),
            transfer: (
                s.sync_total.load(Ordering::Acquire),
                s.sync_read.load(Ordering::Acquire),
            ),
        }
    }

    /// Whether the stream flows.
    pub(crate) fn is_up(&self) -> bool {
        self.shared.up.load(Ordering::Acquire)
    }
}

/// `REPLICAOF host port` on a standalone node: the node becomes a replica of `host:port` at
/// once (writes refused, its own replicas dropped, clients blocked on keys released) and a
/// task synchronises with the master; `REPLICAOF NO ONE` stops the task and makes the node a
/// master again, keeping its data.
pub(crate) fn replicaof(state: &mut State, node: &Node, target: Option<(String, u16)>) -> Frame {
    let Some((host, port)) = target else {
        if state.repl.is_replica() {
            state.repl.upstream = None;
            state.repl.become_master();
            tracing::info!("MASTER MODE enabled (user request)");
        }
        return Frame::ok();
    };
    if let Some(up) = &state.repl.upstream {
        if up.host.eq_ignore_ascii_case(&host) && up.port == port {
            return Frame::Simple(Bytes::from_static(
                b"OK Already connected to specified master",
            ));
        }
    }
    let Some(me) = node.me.get() else {
        return Frame::error("ERR this node cannot connect to a master");
    };
    // The address `ROLE` and the role keep; the task resolves the host on each attempt.
    let ip = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::from([127, 0, 0, 1])
    } else {
        host.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
    };
    let shared = Arc::new(Shared::default());
    shared
        .down_since_ms
        .store(node.clock.now_ms(), Ordering::Release);
    let task = tokio::spawn(run(me.clone(), host.clone(), port, shared.clone()));
    state.repl.upstream = Some(Upstream {
        host: host.clone(),
        port,
        shared,
        task,
    });
    state.repl.follow(SocketAddr::new(ip, port));
    // Clients blocked on keys are released, as Redis's `disconnectAllBlockedClients`.
    state.blocked.unblock_all(&Frame::error(
        "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
    ));
    tracing::info!(%host, port, "Connecting to MASTER (REPLICAOF, user request)");
    Frame::ok()
}

/// Stops following a master (the node shuts down).
pub(crate) async fn stop(node: &Node) {
    node.state.lock().await.repl.upstream = None;
}

/// The link's task: a session with the master, retried every second after it ends.
async fn run(node: Weak<Node>, host: String, port: u16, shared: Arc<Shared>) {
    loop {
        let result = session(&node, &host, port, &shared).await;
        let Some(strong) = node.upgrade() else {
            return;
        };
        if shared.up.swap(false, Ordering::AcqRel) || shared.syncing.load(Ordering::Acquire) {
            shared
                .down_since_ms
                .store(strong.clock.now_ms(), Ordering::Release);
        }
        shared.syncing.store(false, Ordering::Release);
        drop(strong);
        if let Err(e) = result {
            tracing::warn!(%host, port, "replication link: {e}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The node, or the error that ends a session once it is gone.
fn alive(node: &Weak<Node>) -> Result<Arc<Node>, String> {
    node.upgrade().ok_or_else(|| "the node stopped".to_string())
}

/// The connection to the master, with what was read and not yet used.
struct MasterConn {
    stream: TcpStream,
    buf: BytesMut,
    timeout: Duration,
    /// The node, for the clock that marks the payload's progress.
    node: Weak<Node>,
}

impl MasterConn {
    async fn fill(&mut self) -> Result<(), String> {
        self.buf.reserve(16 * 1024);
        match tokio::time::timeout(self.timeout, self.stream.read_buf(&mut self.buf)).await {
            Err(_) => Err("Timeout reading from the MASTER".into()),
            Ok(Err(e)) => Err(format!("Error reading from MASTER: {e}")),
            Ok(Ok(0)) => Err("Connection with master lost".into()),
            Ok(Ok(_)) => Ok(()),
        }
    }

    async fn send(&mut self, argv: &[&[u8]]) -> Result<(), String> {
        let mut out = Vec::new();
        locksmith_resp::encode_command(argv, &mut out);
        self.stream
            .write_all(&out)
            .await
            .map_err(|e| format!("Error writing to MASTER: {e}"))
    }

    /// The next line (without its CRLF), skipping the bare newlines a master sends to keep
    /// a waiting replica's link alive.
    async fn line(&mut self) -> Result<String, String> {
        loop {
            while self.buf.first() == Some(&b'\n') {
                self.buf.advance(1);
            }
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let line = self.buf.split_to(end + 1);
                let text = line.strip_suffix(b"\r\n").unwrap_or(&line[..end]);
                return Ok(String::from_utf8_lossy(text).into_owned());
            }
            if self.buf.len() > MAX_LINE {
                return Err("Protocol error: too long a line from MASTER".into());
            }
            self.fill().await?;
        }
    }

    /// A command's reply line, an error reply made an `Err`.
    async fn reply(&mut self, what: &str) -> Result<String, String> {
        let line = self.line().await?;
        match line.strip_prefix('-') {
            Some(e) => Err(format!("{what}: -{e}")),
            None => Ok(line),
        }
    }

    /// Receives a full synchronisation's payload into a spool file in `dir`: `$<len>\r\n`
    /// and that many bytes, or `$EOF:<40-byte mark>\r\n`, the data, then the mark. Only a
    /// chunk at a time is held; a payload that does not start as an RDB file does (`REDIS`)
    /// ends the link at once, and one past [`MAX_PAYLOAD`] when it gets there.
    async fn payload(&mut self, dir: &str, shared: &Shared) -> Result<Spool, String> {
        let header = self.line().await?;
        let bad = || format!("Bad protocol from MASTER, the first byte is not '$': {header}");
        let spec = header.strip_prefix('$').ok_or_else(bad)?;
        let (mark, len) = match spec.strip_prefix("EOF:") {
            Some(mark) if mark.len() == 40 => (Some(mark.as_bytes().to_vec()), None),
            Some(_) => return Err(bad()),
            None => (None, Some(spec.parse::<u64>().map_err(|_| bad())?)),
        };
        if len.is_some_and(|len| len > MAX_PAYLOAD) {
            return Err("the MASTER's payload is too large".into());
        }
        shared.sync_total.store(
            len.and_then(|l| i64::try_from(l).ok()).unwrap_or(-1),
            Ordering::Release,
        );
        let mut spool = Spool::create(dir)?;
        if let Some(node) = self.node.upgrade() {
            shared
                .last_io_ms
                .store(node.clock.now_ms(), Ordering::Release);
        }
        tracing::info!(
            bytes = len.map_or_else(|| "EOF".to_string(), |l| l.to_string()),
            file = %spool.path.display(),
            "MASTER <-> REPLICA sync: receiving the payload to disk"
        );
        let mut got = 0u64;
        loop {
            // What of the buffer is payload; with a mark, the last 40 bytes read may be it
            // and stay in the buffer until more arrives.
            let (take, done) = match (&mark, len) {
                (Some(mark), _) if self.buf.len() >= mark.len() && self.buf.ends_with(mark) => {
                    (self.buf.len() - mark.len(), true)
                }
                (Some(mark), _) => (self.buf.len().saturating_sub(mark.len()), false),
                (None, Some(len)) => {
                    let left = len - got;
                    let take =
                        usize::try_from(left).map_or(self.buf.len(), |l| l.min(self.buf.len()));
                    (take, take as u64 == left)
                }
                (None, None) => (0, true),
            };
            // An RDB file starts with its signature: anything else is no payload to keep.
            let start = usize::try_from(got).unwrap_or(usize::MAX);
            if let Some(expected) = b"REDIS".get(start..) {
                let n = expected.len().min(self.buf.len());
                if self.buf[..n] != expected[..n] {
                    return Err("Bad protocol from MASTER: the payload is not an RDB file".into());
                }
            }
            if take > 0 {
                spool.write(&self.buf[..take]).await?;
                self.buf.advance(take);
                got += take as u64;
                shared.sync_read.store(got, Ordering::Release);
            }
            if done {
                if mark.is_some() {
                    self.buf.clear();
                }
                spool.finish().await?;
                return Ok(spool);
            }
            if got > MAX_PAYLOAD {
                return Err("the MASTER's payload is too large".into());
            }
            self.buf.reserve(SPOOL_CHUNK);
            self.fill().await?;
            if let Some(node) = self.node.upgrade() {
                shared
                    .last_io_ms
                    .store(node.clock.now_ms(), Ordering::Release);
            }
        }
    }
}

/// A full synchronisation's payload on disk, in `dir` (the system's temporary directory
/// when the node has none) as `temp-<pid>.<n>.rdb`; the file goes when this is dropped (the
/// payload loaded or refused, the link lost, `REPLICAOF NO ONE` or the node's end dropping
/// the task), as Redis unlinks its transfer file on every path out of a sync.
struct Spool {
    path: std::path::PathBuf,
    file: tokio::fs::File,
}

impl Spool {
    /// Creates the file. Synchronously, as Redis's `open` on its main thread: created
    /// through tokio's blocking pool, a file whose task was dropped while the pool opened it
    /// (`REPLICAOF NO ONE`, the link or the node ending right after `+FULLRESYNC`) was left
    /// behind, empty, with no `Spool` to remove it.
    fn create(dir: &str) -> Result<Self, String> {
        let dir = if dir.is_empty() {
            std::env::temp_dir()
        } else {
            std::path::PathBuf::from(dir)
        };
        let n = SPOOLS.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("temp-{}.{n}.rdb", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| {
                format!("Opening the temp file needed for MASTER <-> REPLICA synchronization: {e}")
            })?;
        Ok(Spool {
            path,
            file: tokio::fs::File::from_std(file),
        })
    }

    /// Appends `chunk`.
    async fn write(&mut self, chunk: &[u8]) -> Result<(), String> {
        self.file.write_all(chunk).await.map_err(|e| {
            format!("Write error or short write writing to the DB dump file needed for MASTER <-> REPLICA synchronization: {e}")
        })
    }

    async fn finish(&mut self) -> Result<(), String> {
        self.file
            .flush()
            .await
            .map_err(|e| format!("Failed trying to flush the MASTER synchronization DB: {e}"))
    }

    /// The whole payload, read on a blocking thread.
    async fn read(&self) -> Result<Vec<u8>, String> {
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || std::fs::read(path))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
            .map_err(|e| {
                format!("Failed trying to load the MASTER synchronization DB from disk: {e}")
            })
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One connection to the master: handshake, synchronisation, then the stream until the link
/// fails.
async fn session(weak: &Weak<Node>, host: &str, port: u16, shared: &Shared) -> Result<(), String> {
    let (timeout, credentials, listening_port, position, dir) = {
        let node = alive(weak)?;
        let config = &node.config;
        let announce = config.replica_announce_port();
        let own_port = if announce > 0 {
            announce
        } else {
            node.addr.port()
        };
        let position = node.state.lock().await.repl.psync_position();
        (
            Duration::from_secs(config.repl_timeout()),
            config.master_credentials(),
            own_port,
            position,
            config.dir(),
        )
    };
    let addr = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("Unable to connect to MASTER: {e}"))?
        .next()
        .ok_or("Unable to connect to MASTER: no address")?;
    let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| "Timeout connecting to the MASTER".to_string())?
        .map_err(|e| format!("Unable to connect to MASTER: {e}"))?;
    let _ = stream.set_nodelay(true);
    let mut conn = MasterConn {
        stream,
        buf: BytesMut::new(),
        timeout,
        node: weak.clone(),
    };
    conn.send(&[b"PING"]).await?;
    let pong = conn.line().await?;
    // A master that requires a password answers -NOAUTH; AUTH follows.
    if pong.starts_with('-')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(format!("Error reply to PING from master: '{pong}'"));
    }
    if let Some((user, pass)) = &credentials {
        match user {
            Some(user) => {
                conn.send(&[b"AUTH", user.as_bytes(), pass.as_bytes()])
                    .await?
            }
            None => conn.send(&[b"AUTH", pass.as_bytes()]).await?,
        }
        conn.reply("Unable to AUTH to MASTER").await?;
    }
    let port_text = listening_port.to_string();
    conn.send(&[b"REPLCONF", b"listening-port", port_text.as_bytes()])
        .await?;
    // Refused by old masters; not needed.
    let _ = conn.line().await?;
    conn.send(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])
        .await?;
    let _ = conn.line().await?;
    let (replid, from) = position.unwrap_or_else(|| ("?".into(), 0));
    let from_text = if replid == "?" {
        "-1".to_string()
    } else {
        from.to_string()
    };
    conn.send(&[b"PSYNC", replid.as_bytes(), from_text.as_bytes()])
        .await?;
    let answer = conn.reply("Unexpected reply to PSYNC from master").await?;
    let mut words = answer.split(' ');
    match (words.next(), words.next(), words.next()) {
        (Some("+FULLRESYNC"), Some(id), Some(offset)) => {
            let offset: u64 = offset
                .parse()
                .map_err(|_| format!("Master replied with wrong +FULLRESYNC syntax: {answer}"))?;
            let id = id.to_string();
            shared.sync_total.store(-1, Ordering::Release);
            shared.sync_read.store(0, Ordering::Release);
            shared.syncing.store(true, Ordering::Release);
            let spool = conn.payload(&dir, shared).await?;
            let data = spool.read().await?;
            drop(spool);
            let node = alive(weak)?;
            let loaded = install(&node, &data, addr, offset, id).await?;
            drop(data);
            shared.syncing.store(false, Ordering::Release);
            tracing::info!(
                keys = loaded,
                "MASTER <-> REPLICA sync: Finished with success"
            );
        }
        (Some("+CONTINUE"), id, _) => {
            let node = alive(weak)?;
            let mut state = node.state.lock().await;
            let id = id.map_or_else(|| state.repl.replid().to_string(), str::to_string);
            state.repl.continue_replica(addr, id);
            tracing::info!("Successful partial resynchronization with master.");
        }
        _ => return Err(format!("Unexpected reply to PSYNC from master: {answer}")),
    }
    {
        let node = alive(weak)?;
        shared
            .last_io_ms
            .store(node.clock.now_ms(), Ordering::Release);
    }
    shared.up.store(true, Ordering::Release);
    apply_stream(weak, &mut conn, shared).await
}

/// Installs a full synchronisation's RDB payload: the node's data is replaced and it becomes
/// a replica of `master` at `offset` of the stream `replid`.
async fn install(
    node: &Arc<Node>,
    data: &[u8],
    master: SocketAddr,
    offset: u64,
    replid: String,
) -> Result<usize, String> {
    let mut state = node.state.lock().await;
    // Still following (not `REPLICAOF NO ONE` while the payload arrived).
    if !state.repl.is_replica() {
        return Err("the node is no longer a replica".into());
    }
    let now = node.clock.now_ms();
    let loaded = (node.commands.install_dataset)(&mut state, node, data, now)
        .map_err(|e| format!("Failed trying to load the MASTER synchronization DB: {e}"))?;
    state.repl.become_replica(master, offset, replid);
    Ok(loaded)
}

/// Applies the master's stream: each command as the master's client, the offset advanced
/// by its bytes; `REPLCONF GETACK` answered with the offset before it; an acknowledgement
/// every second.
async fn apply_stream(
    weak: &Weak<Node>,
    conn: &mut MasterConn,
    shared: &Shared,
) -> Result<(), String> {
    let mut decoder = RequestDecoder::new(Limits::default());
    // Bytes the decoder took of a command that is not complete yet.
    let mut partial = Vec::new();
    let mut client = {
        let node = alive(weak)?;
        master_client(&node)
    };
    let mut ack_every = tokio::time::interval(Duration::from_secs(1));
    ack_every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            read = tokio::time::timeout(conn.timeout, conn.stream.read_buf(&mut conn.buf)) => {
                match read {
                    Err(_) => return Err("MASTER timeout: no data nor PING received".into()),
                    Ok(Err(e)) => return Err(format!("Error reading from MASTER: {e}")),
                    Ok(Ok(0)) => return Err("Connection with master lost".into()),
                    Ok(Ok(n)) => {
                        let node = alive(weak)?;
                        node.live.net_repl_input.fetch_add(n as u64, Ordering::Relaxed);
                        shared.last_io_ms.store(node.clock.now_ms(), Ordering::Release);
                        let acks = apply(&node, &mut decoder, &mut conn.buf, &mut partial, &mut client).await?;
                        for offset in acks {
                            send_ack(conn, offset).await?;
                        }
                    }
                }
            }
            _ = ack_every.tick() => {
                let node = alive(weak)?;
                let offset = node.state.lock().await.repl.offset();
                send_ack(conn, offset).await?;
            }
        }
    }
}

async fn send_ack(conn: &mut MasterConn, offset: u64) -> Result<(), String> {
    let offset = offset.to_string();
    conn.send(&[b"REPLCONF", b"ACK", offset.as_bytes()]).await
}

/// Applies every complete command in `buf` under one hold of the state lock; returns the
/// offsets to acknowledge for the `REPLCONF GETACK`s among them. `partial` holds the bytes
/// the decoder took of a command not complete at the end of the last read (the decoder
/// keeps its arguments), which count toward that command's offset.
async fn apply(
    node: &Arc<Node>,
    decoder: &mut RequestDecoder,
    buf: &mut BytesMut,
    partial: &mut Vec<u8>,
    client: &mut crate::client::ClientState,
) -> Result<Vec<u64>, String> {
    let mut acks = Vec::new();
    let mut state = node.state.lock().await;
    if !matches!(state.repl.role(), Role::Replica { .. }) {
        return Err("the node is no longer a replica".into());
    }
    let config = state.config.clone();
    let mut effects = Effects::default();
    let now = node.clock.now_ms();
    // The stream's bytes as read, for the backlog and the offset of each command: a
    // command's own bytes are a slice of them, unless it began in an earlier read.
    let read = Bytes::copy_from_slice(buf);
    let mut used = 0;
    loop {
        let argv = match decoder.decode(buf) {
            Ok(Some(argv)) => argv,
            Ok(None) => {
                partial
                    .extend_from_slice(read.get(used..read.len() - buf.len()).unwrap_or_default());
                break;
            }
            Err(e) => return Err(format!("Protocol error from MASTER: {e}")),
        };
        let end = read.len() - buf.len();
        let raw = if partial.is_empty() {
            read.slice(used..end)
        } else {
            partial.extend_from_slice(read.get(used..end).unwrap_or_default());
            Bytes::from(std::mem::take(partial))
        };
        used = end;
        let is = |name: &[u8], sub: &[u8]| {
            argv.first().is_some_and(|a| a.eq_ignore_ascii_case(name))
                && argv.get(1).is_some_and(|a| a.eq_ignore_ascii_case(sub))
        };
        if is(b"replconf", b"getack") {
            acks.push(state.repl.offset());
        } else if !argv
            .first()
            .is_some_and(|a| a.eq_ignore_ascii_case(b"ping"))
        {
            let reply =
                (node.commands.call_argv)(&mut state, node, client, &argv, now, &mut effects);
            if let Frame::Error(e) = reply {
                tracing::warn!(error = %String::from_utf8_lossy(&e), "replica failed to apply a command from its master");
            }
        }
        state.repl.applied(raw, &config);
    }
    state.finish_effects(node, &mut effects);
    Ok(acks)
}
