//! One client connection: read, decode every complete request in the buffer, run them in
//! order through the pipeline ([`crate::dispatch`]), append the replies to one write buffer
//! and flush once (pipelining); out-of-band frames (pub/sub messages, MONITOR lines) are
//! interleaved between batches.
//!
//! Protocol errors get `-ERR Protocol error: …` and the connection closes, as in Redis.
//! Command errors are ordinary replies. Scripts run holding the state lock; while one runs
//! past `busy-reply-threshold`, other clients get `BUSY` instead of waiting. On a multi-thread
//! runtime a script runs inline on the connection's worker, like any command, and moves the
//! worker's other tasks to another thread if it runs long ([`crate::script::InlineRun`]); on
//! the current-thread runtime (which cannot do that) it runs on the blocking pool
//! (`spawn_blocking`).

use crate::client::{ClientHandle, ClientState, Outbox, OutboxReceiver};
use crate::config::runtime::{ClientClass, OutputLimit};
use crate::dispatch::{Guard, ScriptPlace, Session, Transport};
use crate::node::{Effects, Node};
use bytes::BytesMut;
use locksmith_resp::{encode, Frame, Limits, RequestDecoder, Version};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::broadcast;

/// Bounds of the room made in the read buffer before a read: it starts small (most requests
/// are small, and an idle connection should cost little) and doubles while reads fill it.
const READ_CHUNK_MIN: usize = 1024;
const READ_CHUNK_MAX: usize = 64 * 1024;
/// Room made in the (released while idle) write buffer before a batch's replies: growing it
/// from nothing reply by reply cost several reallocations per pipelined batch.
const WRITE_CHUNK_MIN: usize = 1024;

/// A byte stream a node can serve a client over: anything tokio reads and writes (one end of
/// [`tokio::io::duplex`], a TLS stream…).
pub trait ClientStream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<S: AsyncRead + AsyncWrite + Send + Unpin + 'static> ClientStream for S {}

/// What a connection reads and writes: an accepted TCP socket (read on readiness, without
/// an intermediate future), or any other stream.
pub(crate) enum Socket {
    /// A socket the listener accepted.
    Tcp(TcpStream),
    /// A stream given to [`crate::ServerHandle::serve_stream`].
    Stream(Box<dyn ClientStream>),
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Socket::Stream(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Socket::Stream(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_flush(cx),
            Socket::Stream(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Socket::Stream(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// Serves one accepted socket (or stream) until the peer leaves, the client is killed, or
/// the server shuts down. `addr` is the peer's address, `laddr` the node's.
pub(crate) async fn serve(
    node: Arc<Node>,
    socket: Socket,
    addr: SocketAddr,
    laddr: SocketAddr,
    mut shutdown: broadcast::Receiver<()>,
) {
    let (outbox, outbox_rx) = Outbox::new();
    let handle = Arc::new(ClientHandle::new(&node, addr, laddr, outbox));
    let id = handle.id;
    node.clients.insert(handle.clone());
    let auth_required = node.requires_auth();
    let mut decoder = RequestDecoder::new(Limits::default());
    decoder.set_auth_required(auth_required);
    let multi_thread = tokio::runtime::Handle::current().runtime_flavor()
        == tokio::runtime::RuntimeFlavor::MultiThread;
    let scripts = match &socket {
        // A stream's client (a simulation's) runs its scripts on its own task.
        Socket::Stream(_) => ScriptPlace::Caller,
        Socket::Tcp(_) if multi_thread => ScriptPlace::Worker,
        Socket::Tcp(_) => ScriptPlace::BlockingPool,
    };
    let mut conn = Connection {
        session: Session::new(
            node.clone(),
            ClientState::new(handle, !auth_required),
            scripts,
        ),
        io: Io {
            socket,
            rbuf: BytesMut::new(),
            wbuf: BytesMut::new(),
            read_chunk: READ_CHUNK_MIN,
            outbox_rx,
            out_of_band: 0,
        },
        decoder,
        effects: Effects::default(),
    };
    if let Err(e) = conn.run(&mut shutdown).await {
        tracing::debug!(client = id, error = %e, "connection closed");
    }
    node.clients.remove(id);
    node.state.lock().await.client_gone(id);
}

/// One connection: the client's session in the pipeline, its socket side, the decoder, and
/// the effects of a batch (kept between batches for their buffers' room).
struct Connection {
    session: Session,
    io: Io,
    decoder: RequestDecoder,
    effects: Effects,
}

/// The socket side of a connection: the socket, its buffers and the out-of-band queue.
struct Io {
    socket: Socket,
    /// How much room the next read gets (adaptive, [`READ_CHUNK_MIN`]..[`READ_CHUNK_MAX`]).
    read_chunk: usize,
    rbuf: BytesMut,
    wbuf: BytesMut,
    outbox_rx: OutboxReceiver,
    /// Bytes of out-of-band frames in `wbuf`, still counted as pending in the outbox (so a
    /// subscriber whose socket does not drain stays accountable for them) until flushed.
    out_of_band: usize,
}

impl Connection {
    async fn run(&mut self, shutdown: &mut broadcast::Receiver<()>) -> std::io::Result<()> {
        let handle = self.session.client.handle.clone();
        let node = self.session.node.clone();
        // The kill and shutdown waits live across iterations: registering them again for
        // every read showed up in profiles of small requests.
        let killed = handle.kill_notify.notified();
        tokio::pin!(killed);
        let mut pause_shutdown = shutdown.resubscribe();
        let stop = shutdown.recv();
        tokio::pin!(stop);
        loop {
            if handle.is_killed() {
                return Ok(());
            }
            let idle_timeout = node.config.timeout_s();
            // Biased, in this order: a seeded simulation must not depend on tokio's random
            // branch choice, and input that arrived beats the idle timer.
            tokio::select! {
                biased;
                _ = &mut killed => return Ok(()),
                _ = &mut stop => return Ok(()),
                read = read_some(&mut self.io.socket, &mut self.io.rbuf, &mut self.io.read_chunk) => {
                    let Some(read) = read? else {
                        continue;
                    };
                    if read == 0 {
                        return Ok(());
                    }
                    let limit = node.config.client_query_buffer_limit();
                    if self.io.rbuf.len() as u64 > limit {
                        tracing::warn!(
                            client = handle.id,
                            addr = %handle.addr,
                            "Closing client that reached max query buffer length"
                        );
                        return Ok(());
                    }
                    node.live.net_input.fetch_add(read as u64, Ordering::Relaxed);
                    let keep_open = self.process_input(&mut pause_shutdown).await;
                    // Let the other connections with input run before writing (as Redis
                    // writes every client's replies after processing the whole batch of
                    // ready sockets): a peer woken by the first write then finds the other
                    // replies already there instead of sleeping and being woken once per
                    // reply, which cost ~7 % of a pipelined script benchmark in wake-ups.
                    if !self.io.wbuf.is_empty() {
                        tokio::task::yield_now().await;
                    }
                    self.io.flush(&self.session).await?;
                    if !keep_open {
                        return Ok(());
                    }
                    self.io.release_idle_buffers();
                }
                Some(frame) = self.io.outbox_rx.recv() => {
                    let resp = self.session.client.resp;
                    self.io.push_out_of_band(frame, resp);
                    self.io.drain_outbox(resp);
                    self.io.flush(&self.session).await?;
                    self.io.release_idle_buffers();
                }
                _ = idle(idle_timeout) => {
                    // `timeout`: Redis closes idle clients, except subscribers.
                    let info = handle.info();
                    if info.sub + info.psub + info.ssub == 0 {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Executes every complete request in the read buffer through the pipeline; false when
    /// the connection must close (protocol error, QUIT, killed).
    async fn process_input(&mut self, shutdown: &mut broadcast::Receiver<()>) -> bool {
        let mut guard: Guard = None;
        let mut effects = std::mem::take(&mut self.effects);
        let mut keep_open = true;
        self.sync_limits();
        if self.io.wbuf.capacity() == 0 {
            self.io.wbuf.reserve(WRITE_CHUNK_MIN);
        }
        loop {
            match self.decoder.decode(&mut self.io.rbuf) {
                Ok(Some(argv)) => {
                    let session = &mut self.session;
                    if !session
                        .wait_while_paused(&mut self.io, &argv, &mut guard, &mut effects, shutdown)
                        .await
                    {
                        keep_open = false;
                        break;
                    }
                    let mut reply = session.process(&mut guard, &argv, &mut effects).await;
                    if let Some(request) = session.client.block.take() {
                        let served = session
                            .wait_blocked(
                                &mut self.io,
                                &mut guard,
                                &mut effects,
                                &argv,
                                request,
                                shutdown,
                            )
                            .await;
                        match served {
                            Some(served) => reply = served,
                            None => {
                                keep_open = false;
                                break;
                            }
                        }
                    }
                    // Messages this command sent to the client itself come first, as in Redis;
                    // its tracking invalidations of its own keys follow the reply.
                    self.io.drain_outbox(self.session.client.resp);
                    self.emit(&reply);
                    if self.io.outbox_rx.has_deferred() {
                        self.io.drain_deferred(self.session.client.resp);
                    }
                    if self.session.client.close_after_reply {
                        keep_open = false;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let reply = Frame::error(format!("ERR Protocol error: {e}"));
                    self.session.node.live.count_error(b"ERR");
                    encode(&reply, self.session.client.resp, &mut self.io.wbuf);
                    keep_open = false;
                    break;
                }
            }
        }
        if let Some(mut state) = guard {
            state.finish_effects(&self.session.node, &mut effects);
        }
        effects.reset();
        self.effects = effects;
        keep_open && !self.session.client.handle.is_killed()
    }

    /// Applies the run-time limits that `CONFIG SET` and `AUTH` change to the decoder.
    fn sync_limits(&mut self) {
        let node = &self.session.node;
        let client = &mut self.session.client;
        let max_bulk = node.config.proto_max_bulk_len();
        self.decoder.set_limits(Limits {
            max_bulk_len: usize::try_from(max_bulk).unwrap_or(usize::MAX),
            ..Limits::default()
        });
        if !client.authenticated && !node.requires_auth() {
            // `CONFIG SET requirepass ""` lifts the requirement for waiting clients too.
            client.authenticated = true;
        }
        self.decoder
            .set_auth_required(!client.authenticated && node.requires_auth());
    }

    /// Appends `reply` unless `CLIENT REPLY OFF|SKIP` drops it (a push goes anyway); counts
    /// errors for `INFO`; lifts the pre-`AUTH` request limits once `AUTH`/`HELLO AUTH`
    /// succeeded (and restores them after `RESET`).
    fn emit(&mut self, reply: &Frame) {
        self.session.count_reply(reply);
        let node = &self.session.node;
        let client = &mut self.session.client;
        // Pub/sub confirmations are pushes, which Redis sends even under `CLIENT REPLY OFF`
        // (its `CLIENT_PUSHING`).
        let permitted = client.take_reply_permission();
        if permitted || matches!(reply, Frame::Push(_)) {
            encode(reply, client.resp, &mut self.io.wbuf);
        }
        self.decoder
            .set_auth_required(!client.authenticated && node.requires_auth());
    }
}

impl Io {
    /// Drops the read and write buffers once everything read was handled and everything
    /// written went out, so an idle connection costs a few KB (as Redis's) instead of 32 KB.
    fn release_idle_buffers(&mut self) {
        if self.rbuf.is_empty() && self.rbuf.capacity() > 0 {
            self.rbuf = BytesMut::new();
        }
        if self.wbuf.is_empty() && self.wbuf.capacity() > 0 {
            self.wbuf = BytesMut::new();
        }
    }

    fn push_out_of_band(&mut self, frame: Frame, resp: Version) {
        let before = self.wbuf.len();
        encode(&frame, resp, &mut self.wbuf);
        self.out_of_band += self.wbuf.len() - before;
    }

    /// Moves the frames deferred until the last reply (tracking invalidations) into the write
    /// buffer; they stay counted as pending until written, as the outbox's frames.
    #[cold]
    fn drain_deferred(&mut self, resp: Version) {
        for (frame, _) in self.outbox_rx.take_deferred() {
            self.push_out_of_band(frame, resp);
        }
    }

    /// Moves every queued out-of-band frame (pub/sub messages, extra subscribe
    /// confirmations) into the write buffer, so they precede the reply being written.
    fn drain_outbox(&mut self, resp: Version) {
        while let Some(frame) = self.outbox_rx.try_recv() {
            self.push_out_of_band(frame, resp);
        }
    }
}

impl Transport for Io {
    /// Writes the buffer out. A killed client (e.g. a subscriber past its output-buffer
    /// limit whose socket no longer drains) stops waiting at once.
    async fn flush(&mut self, session: &Session) -> std::io::Result<()> {
        if !self.wbuf.is_empty() {
            let node = &session.node;
            let handle = &session.client.handle;
            // `client-output-buffer-limit normal` (subscribers have the pub/sub class): past
            // the hard limit the client is closed at once, past the soft one when the output
            // has not drained within its seconds.
            let pending = self.wbuf.len() as u64;
            let OutputLimit {
                hard_bytes: hard,
                soft_bytes: soft,
                soft_seconds,
            } = node.config.output_limit(ClientClass::Normal);
            let normal = session.client.subscriptions == 0;
            let over_limit = || {
                tracing::warn!(
                    client = handle.id,
                    addr = %handle.addr,
                    "Client scheduled to be closed ASAP for overcoming of output buffer limits."
                );
                std::io::Error::other("output buffer limit")
            };
            if normal && hard > 0 && pending > hard {
                return Err(over_limit());
            }
            let soft_deadline = (normal && soft > 0 && pending > soft)
                .then(|| Duration::from_secs(soft_seconds).max(Duration::from_millis(1)));
            node.live.net_output.fetch_add(pending, Ordering::Relaxed);
            tokio::select! {
                biased;
                written = self.socket.write_all(&self.wbuf) => written?,
                _ = handle.kill_notify.notified() => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "client killed",
                    ));
                }
                _ = async {
                    match soft_deadline {
                        Some(d) => tokio::time::sleep(d).await,
                        None => std::future::pending().await,
                    }
                } => return Err(over_limit()),
            }
            self.wbuf.clear();
        }
        self.outbox_rx
            .written(std::mem::take(&mut self.out_of_band));
        Ok(())
    }

    /// Reads on while the client waits (its input runs after the reply), until the peer
    /// closes or the socket fails.
    async fn closed(&mut self) {
        loop {
            match self.socket.read_buf(&mut self.rbuf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    }
}

/// Reads what the socket has into the read buffer, adapting the room given to the next read
/// (`chunk`); `None` when a readiness was spurious. Cancel safe: nothing is read unless it
/// returns.
async fn read_some(
    socket: &mut Socket,
    rbuf: &mut BytesMut,
    chunk: &mut usize,
) -> std::io::Result<Option<usize>> {
    // The read buffer of a socket exists only while there is input: an idle connection
    // holds none (Redis frees an idle client's query buffer the same way).
    let (read, room) = match socket {
        Socket::Tcp(socket) => {
            socket.readable().await?;
            rbuf.reserve(*chunk);
            let room = rbuf.capacity() - rbuf.len();
            // A read that did not fill the room drained the socket (epoll is edge-triggered):
            // report it as `WouldBlock` to `try_io` as well, which forgets the readiness it
            // read before the call (not one that arrived since), as tokio's own `poll_read`
            // does. Otherwise the next wait returns at once and the read after it fails with
            // EAGAIN: one wasted `recvfrom` per pipelined batch.
            let mut drained = None;
            let result = socket.try_io(tokio::io::Interest::READABLE, || {
                match socket.try_read_buf(rbuf) {
                    Ok(n) if n > 0 && n < room => {
                        drained = Some(n);
                        Err(std::io::ErrorKind::WouldBlock.into())
                    }
                    other => other,
                }
            });
            match (result, drained) {
                (_, Some(n)) | (Ok(n), None) => (n, room),
                (Err(e), None) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
                (Err(e), None) => return Err(e),
            }
        }
        Socket::Stream(stream) => {
            rbuf.reserve(*chunk);
            let room = rbuf.capacity() - rbuf.len();
            (stream.read_buf(rbuf).await?, room)
        }
    };
    *chunk = if read >= room {
        (*chunk * 2).min(READ_CHUNK_MAX)
    } else if read < *chunk / 4 {
        (*chunk / 2).max(READ_CHUNK_MIN)
    } else {
        *chunk
    };
    Ok(Some(read))
}

/// Resolves after `timeout_s` seconds, or never when it is 0 (`timeout 0`).
async fn idle(timeout_s: u64) {
    if timeout_s == 0 {
        std::future::pending::<()>().await;
    } else {
        tokio::time::sleep(Duration::from_secs(timeout_s)).await;
    }
}
