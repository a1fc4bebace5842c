//! Clients over streams the caller makes: the [`Connector`] trait (a factory of byte streams,
//! for example in-memory `tokio::io::duplex` pairs of a simulation) and [`StreamConnection`],
//! the reconnecting command connection a [`Client::open_over`](crate::Client::open_over) client
//! sends its commands through. The client's pub/sub connections dial the same connector.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisConnectionInfo, RedisFuture, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;

use crate::entropy::Entropy;

/// A byte stream a [`Connector`] makes: anything tokio can read and write, such as a
/// `tokio::io::DuplexStream` or a `tokio::net::TcpStream`. Implemented for every such type.
pub trait ConnectorStream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T> ConnectorStream for T where T: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

/// The future [`Connector::connect`] returns.
pub type Connecting = Pin<Box<dyn Future<Output = io::Result<Box<dyn ConnectorStream>>> + Send>>;

/// Makes a new stream to the server each time the client needs a connection: the command
/// connection (again after it broke) and each pub/sub connection.
///
/// A closure `Fn() -> Fut`, where `Fut` resolves to `io::Result<S>` for a stream `S`, is a
/// connector; implement the trait by hand for anything else.
///
/// # Examples
///
/// A connector as a type of its own, serving each stream from a node without a listener (see
/// [`Client::open_over`](crate::Client::open_over) for one as a closure):
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::net::SocketAddr;
/// use std::sync::atomic::{AtomicU16, Ordering};
///
/// use locksmith_lock::{Client, ClientOptions, Connecting, Connector, ConnectorStream};
/// use locksmith_server::{Server, StreamAcceptor};
///
/// /// Streams to one node, each seen by the node as coming from a new port.
/// struct ToNode {
///     acceptor: StreamAcceptor,
///     next_port: AtomicU16,
/// }
///
/// impl Connector for ToNode {
///     fn connect(&self) -> Connecting {
///         let (ours, theirs) = tokio::io::duplex(64 * 1024);
///         let port = self.next_port.fetch_add(1, Ordering::Relaxed);
///         self.acceptor
///             .serve_stream(theirs, SocketAddr::from(([127, 0, 0, 1], port)));
///         let stream: Box<dyn ConnectorStream> = Box::new(ours);
///         Box::pin(async move { Ok(stream) })
///     }
/// }
///
/// let node = Server::builder()
///     .in_memory("127.0.0.1:7000".parse()?)
///     .start()
///     .await?;
/// let connector = ToNode {
///     acceptor: node.acceptor(),
///     next_port: AtomicU16::new(40000),
/// };
/// let client = Client::open_over(connector, ClientOptions::default()).await?;
/// let lock = client.lock("orders");
/// lock.lock().await?;
/// lock.unlock().await?;
/// # node.shutdown().await;
/// # Ok(()) }
/// ```
pub trait Connector: Send + Sync + 'static {
    /// A new stream to the server. A stream the server does not answer on is given up after
    /// the client's `connection_timeout`.
    fn connect(&self) -> Connecting;
}

impl<F, Fut, S> Connector for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = io::Result<S>> + Send + 'static,
    S: ConnectorStream,
{
    fn connect(&self) -> Connecting {
        let fut = self();
        Box::pin(async move {
            let stream: Box<dyn ConnectorStream> = Box::new(fut.await?);
            Ok(stream)
        })
    }
}

/// How often a broken connection is dialed again before a command fails (after the first
/// attempt), as the redis crate's `ConnectionManager` is configured for URL clients.
const RECONNECT_RETRIES: u32 = 2;
/// Upper bound of the first reconnect backoff; each retry doubles it.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(100);

/// How a client dials its server over a [`Connector`]: shared by the command connection and
/// the pub/sub hub.
#[derive(Clone)]
pub(crate) struct Dialer {
    connector: Arc<dyn Connector>,
    info: RedisConnectionInfo,
}

impl Dialer {
    pub(crate) fn new(connector: Arc<dyn Connector>, info: RedisConnectionInfo) -> Dialer {
        Dialer { connector, info }
    }

    /// A pub/sub connection over a new stream (its driver runs in a task of the redis crate).
    pub(crate) async fn pubsub(&self) -> redis::RedisResult<redis::aio::PubSub> {
        let stream = self.connector.connect().await?;
        redis::aio::PubSub::new(&self.info, stream).await
    }
}

/// The command connection of a client opened with
/// [`Client::open_over`](crate::Client::open_over): one multiplexed connection over a stream
/// of the client's [`Connector`], replaced when it breaks, in the manner of the redis crate's
/// `ConnectionManager`.
///
/// A command that fails with an I/O error (the stream closed or reset, a response timeout) or
/// an error the redis crate says needs a reconnect returns that error, and the next command
/// dials a new stream first; so does a command issued after the connection's stream ended. A
/// dial that fails is retried twice, after a random backoff of up to 100 ms, then 200 ms
/// (drawn from the client's RNG, so seeded with [`ClientOptions::seed`]), each dial bounded by
/// the client's `connection_timeout`; each command by its `response_timeout`. Unlike
/// `ConnectionManager`, a response timeout replaces the connection too: the stream's state is
/// unknown after it (a partitioned link may never deliver again).
///
/// Cheap to clone; clones share the connection.
///
/// [`ClientOptions::seed`]: crate::ClientOptions::seed
#[derive(Clone)]
pub struct StreamConnection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for StreamConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamConnection")
            .field("db", &self.shared.dialer.info.db())
            .finish()
    }
}

struct Shared {
    dialer: Dialer,
    config: AsyncConnectionConfig,
    connection_timeout: Duration,
    entropy: Arc<Entropy>,
    /// tokio Mutex, held across a reconnect: commands that find the connection broken wait
    /// for the one new connection (in the order they asked) instead of each dialing its own.
    live: tokio::sync::Mutex<Live>,
    /// The newest generation a command found broken (0: none). An atomic, not part of `live`,
    /// so that a failing command returns its error without waiting for a reconnect under way.
    broken: AtomicU64,
}

#[derive(Default)]
struct Live {
    conn: Option<MultiplexedConnection>,
    driver: Option<JoinHandle<()>>,
    /// Counts connections made (the first is 1), so a late failure of an old one does not
    /// condemn a new one.
    generation: u64,
}

impl StreamConnection {
    /// Connects (with the retries a reconnect has).
    pub(crate) async fn connect(
        dialer: Dialer,
        connection_timeout: Duration,
        response_timeout: Duration,
        entropy: Arc<Entropy>,
    ) -> redis::RedisResult<StreamConnection> {
        let conn = StreamConnection {
            shared: Arc::new(Shared {
                dialer,
                config: AsyncConnectionConfig::new().set_response_timeout(Some(response_timeout)),
                connection_timeout,
                entropy,
                live: tokio::sync::Mutex::new(Live::default()),
                broken: AtomicU64::new(0),
            }),
        };
        conn.shared.current().await?;
        Ok(conn)
    }
}

impl Shared {
    /// The connection to send on, dialed anew when the last one broke; with its generation.
    async fn current(&self) -> redis::RedisResult<(MultiplexedConnection, u64)> {
        let mut live = self.live.lock().await;
        let running = live.driver.as_ref().is_some_and(|d| !d.is_finished());
        if running && live.generation > self.broken.load(Ordering::Acquire) {
            if let Some(conn) = &live.conn {
                return Ok((conn.clone(), live.generation));
            }
        }
        // Forget the broken connection (requests still in flight on it keep it until they end).
        live.conn = None;
        live.driver = None;
        let (conn, driver) = self.dial_retrying().await?;
        live.generation += 1;
        live.conn = Some(conn.clone());
        live.driver = Some(driver);
        tracing::debug!(
            generation = live.generation,
            "stream connection established"
        );
        Ok((conn, live.generation))
    }

    /// A command on connection `generation` failed with `e`: condemns that connection when
    /// the error says the stream is no longer to be trusted.
    fn failed(&self, generation: u64, e: &redis::RedisError) {
        if !(e.is_io_error() || e.is_unrecoverable_error()) {
            return;
        }
        if self.broken.fetch_max(generation, Ordering::AcqRel) < generation {
            tracing::debug!(generation, error = %e, "stream connection broken; replacing it on the next command");
        }
    }

    async fn dial_retrying(&self) -> redis::RedisResult<(MultiplexedConnection, JoinHandle<()>)> {
        let mut retry = 0;
        loop {
            match self.dial().await {
                Ok(c) => return Ok(c),
                // Only failures to reach the server are retried; a server's refusal (a wrong
                // password, a bad db) would answer the same again.
                Err(e) if e.is_io_error() && retry < RECONNECT_RETRIES => {
                    let cap = RECONNECT_BACKOFF.saturating_mul(1 << retry);
                    let pause = self.entropy.range(0..=cap.as_millis() as u64);
                    tracing::debug!(error = %e, retry, pause_ms = pause, "dial failed; retrying");
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    retry += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One stream and the connection handshake on it, within the connection timeout.
    async fn dial(&self) -> redis::RedisResult<(MultiplexedConnection, JoinHandle<()>)> {
        let handshake = async {
            let stream = self.dialer.connector.connect().await?;
            MultiplexedConnection::new_with_config(&self.dialer.info, stream, self.config.clone())
                .await
        };
        match tokio::time::timeout(self.connection_timeout, handshake).await {
            Ok(res) => {
                let (conn, driver) = res?;
                Ok((conn, tokio::spawn(driver)))
            }
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "connecting timed out").into()),
        }
    }
}

impl ConnectionLike for StreamConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (mut conn, generation) = self.shared.current().await?;
            let res = conn.req_packed_command(cmd).await;
            if let Err(e) = &res {
                self.shared.failed(generation, e);
            }
            res
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (mut conn, generation) = self.shared.current().await?;
            let res = conn.req_packed_commands(pipeline, offset, count).await;
            if let Err(e) = &res {
                self.shared.failed(generation, e);
            }
            res
        })
    }

    fn get_db(&self) -> i64 {
        self.shared.dialer.info.db()
    }
}
