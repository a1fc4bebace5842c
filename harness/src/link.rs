//! Client links: a proxy per advertised address (each node's, and the front address) that
//! forwards to an upstream and runs every chunk through the link's rules (turmoil-net's
//! `rule.rs` shape): the first verdict that is not [`Verdict::Pass`] wins. Rules give added
//! latency, black holes and resets; the upstream can be switched (failover) or removed (a dead
//! node: new connections are reset at once, as a refused connect would fail).
//!
//! A proxy listens on a loopback socket, or, in an in-memory topology, on nothing: its
//! connections are [`tokio::io::duplex`] pairs opened by [`Proxy::connect`], forwarded to the
//! node's [`StreamAcceptor`] through the same rules.

use locksmith_server::StreamAcceptor;
use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Bytes an in-memory link buffers each way (a socket's buffers, roughly).
const DUPLEX_CAPACITY: usize = 64 * 1024;

/// Where a proxy sends new connections.
#[derive(Clone)]
pub(crate) enum Upstream {
    /// A node, or another proxy, listening on a socket.
    Tcp(SocketAddr),
    /// An in-memory node.
    Memory(StreamAcceptor),
    /// Another in-memory proxy (the front address's hop to the master's own proxy, whose
    /// rules then apply as they do to a socket's connection).
    Hop(Arc<Shared>),
}

/// Which way a chunk travels on a client link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Direction {
    /// From the client to the node (requests).
    ToNode,
    /// From the node to the client (replies, pushes).
    ToClient,
}

/// One chunk of bytes seen on a client link.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Chunk {
    /// Which way it travels.
    pub direction: Direction,
    /// Its length in bytes.
    pub len: usize,
    /// The proxied connection it belongs to (unique per link).
    pub connection: u64,
}

/// What a rule decides for a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Let it through (the next rule decides).
    Pass,
    /// Deliver it after this long.
    Delay(Duration),
    /// Discard it silently (a black hole: the peer waits forever).
    Drop,
    /// Reset the connection.
    Reset,
}

/// A client-link rule: sees every chunk and returns a [`Verdict`]. Closures
/// `Fn(&Chunk) -> Verdict` are rules.
pub trait LinkRule: Send + Sync + 'static {
    /// The verdict for `chunk`.
    fn verdict(&self, chunk: &Chunk) -> Verdict;
}

impl<F> LinkRule for F
where
    F: Fn(&Chunk) -> Verdict + Send + Sync + 'static,
{
    fn verdict(&self, chunk: &Chunk) -> Verdict {
        self(chunk)
    }
}

/// One proxied connection.
struct ConnEntry {
    cancel: CancellationToken,
    /// The client's address as this proxy sees it.
    downstream: SocketAddr,
    /// Our side of the upstream connection (the client address the upstream sees).
    upstream_local: Option<SocketAddr>,
}

#[derive(Default)]
pub(crate) struct Shared {
    upstream: Mutex<Option<Upstream>>,
    rules: Mutex<BTreeMap<u64, Arc<dyn LinkRule>>>,
    conns: Mutex<BTreeMap<u64, ConnEntry>>,
    next: AtomicU64,
    /// In-memory proxies: where the addresses of their connections' two hops come from.
    ports: Option<Arc<PortCounter>>,
}

/// Gives the in-memory connections of one topology distinct loopback addresses (for
/// `CLIENT LIST`, and for sparing an admin command's own connection), deterministically.
#[derive(Debug, Default)]
pub(crate) struct PortCounter(AtomicU64);

impl PortCounter {
    fn next(&self) -> SocketAddr {
        let n = self.0.fetch_add(1, Ordering::Relaxed);
        // The dynamic port range, cycled; nothing binds these.
        let port = 49152 + (n % 16384) as u16;
        SocketAddr::from(([127, 0, 0, 1], port))
    }
}

impl Shared {
    fn verdict(&self, chunk: &Chunk) -> Verdict {
        let rules: Vec<_> = self
            .rules
            .lock()
            .map(|r| r.values().cloned().collect())
            .unwrap_or_default();
        rules
            .iter()
            .map(|r| r.verdict(chunk))
            .find(|v| *v != Verdict::Pass)
            .unwrap_or(Verdict::Pass)
    }
}

/// A listening proxy.
pub(crate) struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// The accept loop of a listening proxy.
    accept: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("addr", &self.addr).finish()
    }
}

impl Proxy {
    /// Listens on `127.0.0.1:port` (0 = a free port) with no upstream yet.
    pub(crate) async fn bind(ip: std::net::IpAddr, port: u16) -> io::Result<Proxy> {
        let listener = locksmith_server::control::listen(std::net::SocketAddr::new(ip, port), 511)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Proxy {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// An in-memory proxy advertised at `addr` (nothing is bound): connections come from
    /// [`Proxy::connect`].
    pub(crate) fn memory(addr: SocketAddr, ports: Arc<PortCounter>) -> Proxy {
        Proxy {
            addr,
            shared: Arc::new(Shared {
                ports: Some(ports),
                ..Shared::default()
            }),
            accept: None,
        }
    }

    /// Opens a connection through an in-memory proxy: the client's end of a duplex stream
    /// whose other end is forwarded to the upstream through the rules. Refused when the
    /// node is down (or the proxy listens on a socket instead).
    pub(crate) fn connect(&self) -> io::Result<DuplexStream> {
        self.shared.open().map(|(stream, _)| stream)
    }

    /// How another proxy reaches this one.
    pub(crate) fn as_upstream(&self) -> Upstream {
        match self.shared.ports {
            Some(_) => Upstream::Hop(self.shared.clone()),
            None => Upstream::Tcp(self.addr),
        }
    }

    /// The advertised address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Routes new connections to `upstream`; `None` resets them (the node is down).
    pub(crate) fn set_upstream(&self, upstream: Option<Upstream>) {
        if let Ok(mut u) = self.shared.upstream.lock() {
            *u = upstream;
        }
    }

    /// Resets every open connection; returns how many there were.
    pub(crate) fn reset_all(&self) -> usize {
        self.reset_except(&[]).0
    }

    /// Resets every open connection except those whose upstream side is in `spare` (the
    /// connection carrying the admin command that asked for the reset, so its reply gets
    /// out); returns how many were reset and the client addresses of the spared ones.
    pub(crate) fn reset_except(&self, spare: &[SocketAddr]) -> (usize, Vec<SocketAddr>) {
        let mut reset = 0;
        let mut kept = Vec::new();
        if let Ok(mut conns) = self.shared.conns.lock() {
            conns.retain(|_, c| {
                if c.upstream_local.is_some_and(|a| spare.contains(&a)) {
                    kept.push(c.downstream);
                    true
                } else {
                    c.cancel.cancel();
                    reset += 1;
                    false
                }
            });
        }
        (reset, kept)
    }

    /// Adds a rule after the existing ones; returns its id.
    pub(crate) fn add_rule(&self, rule: Arc<dyn LinkRule>) -> u64 {
        let id = self.shared.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut rules) = self.shared.rules.lock() {
            rules.insert(id, rule);
        }
        id
    }

    /// Removes every rule.
    pub(crate) fn clear_rules(&self) {
        if let Ok(mut rules) = self.shared.rules.lock() {
            rules.clear();
        }
    }

    /// A handle that removes rule `id` later without borrowing the proxy.
    pub(crate) fn rule_remover(&self, id: u64) -> impl FnOnce() + Send + 'static {
        let shared = self.shared.clone();
        move || {
            if let Ok(mut rules) = shared.rules.lock() {
                rules.remove(&id);
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(accept) = &self.accept {
            accept.abort();
        }
        self.reset_all();
    }
}

impl Shared {
    /// [`Proxy::connect`]; also returns the address this hop sees the connection from.
    fn open(self: &Arc<Self>) -> io::Result<(DuplexStream, SocketAddr)> {
        let refused = || io::Error::from(io::ErrorKind::ConnectionRefused);
        let ports = self.ports.as_ref().ok_or_else(refused)?;
        let upstream = self.upstream.lock().ok().and_then(|u| u.clone());
        let downstream = ports.next();
        let (far, upstream_local) = match upstream {
            Some(Upstream::Memory(acceptor)) => {
                let (far, node_end) = tokio::io::duplex(DUPLEX_CAPACITY);
                let local = ports.next();
                acceptor.serve_stream(node_end, local);
                (far, local)
            }
            Some(Upstream::Hop(next)) => next.open()?,
            Some(Upstream::Tcp(_)) | None => return Err(refused()),
        };
        let (client, near) = tokio::io::duplex(DUPLEX_CAPACITY);
        let (id, token) = self.register(downstream, Some(upstream_local));
        let shared = self.clone();
        tokio::spawn(async move {
            let (mut near, mut far) = (near, far);
            relay(&mut near, &mut far, &shared, id, &token).await;
            if let Ok(mut conns) = shared.conns.lock() {
                conns.remove(&id);
            }
        });
        Ok((client, downstream))
    }

    /// Records a new proxied connection; returns its id and the token that resets it.
    fn register(
        &self,
        downstream: SocketAddr,
        upstream_local: Option<SocketAddr>,
    ) -> (u64, CancellationToken) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        if let Ok(mut conns) = self.conns.lock() {
            conns.insert(
                id,
                ConnEntry {
                    cancel: token.clone(),
                    downstream,
                    upstream_local,
                },
            );
        }
        (id, token)
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let (socket, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "proxy accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let (id, token) = shared.register(peer, None);
        let shared = shared.clone();
        tokio::spawn(async move {
            serve(socket, &shared, id, token).await;
            if let Ok(mut conns) = shared.conns.lock() {
                conns.remove(&id);
            }
        });
    }
}

/// How a proxied connection ended.
enum End {
    /// A peer closed its side cleanly.
    Closed,
    /// Reset (fault, dead node, failover, I/O error).
    Reset,
}

fn reset(socket: TcpStream) {
    // SO_LINGER 0: close with RST, as a dead peer's kernel answers.
    let _ = socket.set_zero_linger();
    drop(socket);
}

async fn serve(mut client: TcpStream, shared: &Shared, id: u64, cancel: CancellationToken) {
    let _ = client.set_nodelay(true);
    let upstream = shared.upstream.lock().ok().and_then(|u| u.clone());
    let Some(Upstream::Tcp(upstream)) = upstream else {
        reset(client);
        return;
    };
    let mut server = tokio::select! {
        biased;
        _ = cancel.cancelled() => {
            reset(client);
            return;
        }
        s = TcpStream::connect(upstream) => match s {
            Ok(s) => s,
            Err(_) => {
                reset(client);
                return;
            }
        },
    };
    let _ = server.set_nodelay(true);
    if let (Ok(local), Ok(mut conns)) = (server.local_addr(), shared.conns.lock()) {
        if let Some(c) = conns.get_mut(&id) {
            c.upstream_local = Some(local);
        }
    }
    if let End::Reset = relay(&mut client, &mut server, shared, id, &cancel).await {
        reset(client);
        reset(server);
    }
}

/// Forwards both ways between a client's stream and the node's until one side closes, a
/// rule resets the connection, or it is cancelled. An in-memory stream is reset by dropping
/// it (its peer reads the end).
async fn relay<C, S>(
    client: &mut C,
    server: &mut S,
    shared: &Shared,
    id: u64,
    cancel: &CancellationToken,
) -> End
where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut cr, mut cw) = tokio::io::split(client);
    let (mut sr, mut sw) = tokio::io::split(server);
    let up = pump(&mut cr, &mut sw, Direction::ToNode, shared, id);
    let down = pump(&mut sr, &mut cw, Direction::ToClient, shared, id);
    tokio::pin!(up, down);
    // Biased: a seeded in-memory run must not depend on tokio's random branch choice.
    tokio::select! {
        biased;
        _ = cancel.cancelled() => End::Reset,
        end = &mut up => match end {
            // The client half-closed: let the replies already asked for come back.
            End::Closed => tokio::select! {
                biased;
                _ = cancel.cancelled() => End::Reset,
                end = &mut down => end,
            },
            End::Reset => End::Reset,
        },
        end = &mut down => end,
    }
}

async fn pump<R, W>(r: &mut R, w: &mut W, direction: Direction, shared: &Shared, id: u64) -> End
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) => {
                let _ = w.shutdown().await;
                return End::Closed;
            }
            Ok(n) => n,
            Err(_) => return End::Reset,
        };
        let chunk = Chunk {
            direction,
            len: n,
            connection: id,
        };
        match shared.verdict(&chunk) {
            Verdict::Pass => {}
            Verdict::Delay(d) => tokio::time::sleep(d).await,
            Verdict::Drop => continue,
            Verdict::Reset => return End::Reset,
        }
        let Some(data) = buf.get(..n) else {
            return End::Reset;
        };
        if w.write_all(data).await.is_err() {
            return End::Reset;
        }
    }
}
