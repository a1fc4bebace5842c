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

use crate::client::{ClientHandle, ClientState, Endpoints, Outbox, OutboxReceiver};
use crate::config::runtime::{ClientClass, OutputLimit};
use crate::db::{Db, Lookahead, LOOKAHEAD_MAX};
use crate::dispatch::{Guard, ScriptPlace, Session, Transport};
use crate::net_stream::NetStream;
use crate::node::{Effects, Node, State};
use crate::write_round::{PendingReplies, WriteRound};
use bytes::BytesMut;
use locksmith_resp::{encode_with, Doubles, Frame, Limits, RequestDecoder, Version};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
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

/// What a connection reads and writes: an accepted TCP or Unix socket (read and written on
/// readiness, without an intermediate future, and shared with the listener's
/// [`WriteRound`]), or any other stream.
pub(crate) enum Socket {
    /// A socket a listener accepted.
    Net(Arc<NetStream>),
    /// A stream given to [`crate::ServerHandle::serve_stream`].
    Stream(Box<dyn ClientStream>),
}

impl Socket {
    /// Writes all of `buf`.
    pub(crate) async fn write_all(&mut self, mut buf: &[u8]) -> std::io::Result<()> {
        match self {
            Socket::Net(socket) => {
                while !buf.is_empty() {
                    socket.writable().await?;
                    match socket.try_write(buf) {
                        Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                        Ok(n) => buf = &buf[n..],
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            }
            Socket::Stream(stream) => stream.write_all(buf).await,
        }
    }

    /// Reads what arrives into `buf`; 0 at the end of the stream. Cancel safe.
    pub(crate) async fn read_buf(&mut self, buf: &mut BytesMut) -> std::io::Result<usize> {
        match self {
            Socket::Net(socket) => loop {
                socket.readable().await?;
                buf.reserve(READ_CHUNK_MIN);
                match socket.try_read_buf(buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    read => return read,
                }
            },
            Socket::Stream(stream) => stream.read_buf(buf).await,
        }
    }
}

/// Serves one accepted socket (or stream) until the peer leaves, the client is killed, or
/// the server shuts down; `ends` are the two ends of the connection.
pub(crate) async fn serve(
    node: Arc<Node>,
    socket: Socket,
    ends: Endpoints,
    round: Option<Arc<WriteRound>>,
    mut shutdown: broadcast::Receiver<()>,
) {
    let (outbox, outbox_rx) = Outbox::new();
    let handle = Arc::new(ClientHandle::new(
        node.next_client_id(),
        node.clock.now_ms(),
        ends,
        outbox,
    ));
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
        Socket::Net(_) if multi_thread => ScriptPlace::Worker,
        Socket::Net(_) => ScriptPlace::BlockingPool,
    };
    let round = match (&socket, round) {
        (Socket::Net(socket), Some(round)) => {
            Some((round, Arc::new(PendingReplies::new(socket.clone()))))
        }
        _ => None,
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
            round,
            doubles: node.config.profile().encodings.doubles,
        },
        decoder,
        effects: Effects::default(),
        prefetching: false,
        lookahead: Lookahead::default(),
        commandlog: node.config.commandlog(),
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
    /// Whether the client's database was large enough for prefetching at the end of its last
    /// batch (`Db::worth_prefetching`): a batch then asks for its first keys before it runs.
    prefetching: bool,
    /// The keys of the next requests, fetched into the caches ahead of their commands.
    lookahead: Lookahead,
    /// The target keeps Valkey's command log: each request's size and the bytes written
    /// between commands are counted for its large-request and large-reply logs.
    commandlog: bool,
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
    /// Where a TCP connection's replies wait for the end of the scheduler's round.
    round: Option<(Arc<WriteRound>, Arc<PendingReplies>)>,
    /// How the node's target writes doubles in replies.
    doubles: Doubles,
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
                            addr = %handle.addr_text(),
                            "Closing client that reached max query buffer length"
                        );
                        node.live
                            .query_buffer_limit_disconnections
                            .fetch_add(1, Ordering::Relaxed);
                        return Ok(());
                    }
                    node.live.net_input.fetch_add(read as u64, Ordering::Relaxed);
                    handle.net_in.fetch_add(read as u64, Ordering::Relaxed);
                    node.live.reads.fetch_add(1, Ordering::Relaxed);
                    let keep_open = self.process_input(&mut pause_shutdown).await;
                    self.io.flush_after_round(&self.session).await?;
                    if !keep_open {
                        return Ok(());
                    }
                    if let Some(link) = self.session.client.replica.handoff.take() {
                        // SYNC/PSYNC: the connection is a replica link from now on.
                        return crate::replica_link::run(
                            &node,
                            &mut self.io.socket,
                            &mut self.io.rbuf,
                            &handle,
                            *link,
                            &mut pause_shutdown,
                        )
                        .await;
                    }
                    self.io.release_idle_buffers();
                }
                Some(frame) = self.io.outbox_rx.recv() => {
                    let resp = self.session.client.resp;
                    let before = self.io.wbuf.len();
                    self.io.push_out_of_band(frame, resp);
                    self.io.drain_outbox(resp);
                    if self.commandlog {
                        // Valkey counts what reaches a client between its commands into the
                        // next one's reply.
                        let written = self.io.wbuf.len().saturating_sub(before);
                        self.session.client.command.reply_bytes += written as u64;
                    }
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
        // Every `LOOKAHEAD_MAX` requests the keys of the next ones are looked ahead at: the
        // first batch before the first request runs (the state lock taken only if free, and
        // given back), the others under the lock the batch holds; between, each command's
        // lookahead steps are taken as the one before it ends.
        let mut ran = 0usize;
        self.sync_limits();
        // When the lock is busy (another worker runs commands), the first request runs
        // unaided and the next ones are looked at under the lock it takes.
        let mut asked_first = false;
        if self.prefetching {
            if let Ok(state) = self.session.node.state.try_lock() {
                look_ahead(
                    &mut self.lookahead,
                    &state,
                    self.session.client.db,
                    &self.decoder,
                    &self.io.rbuf,
                );
                asked_first = true;
            }
        }
        if self.io.wbuf.capacity() == 0 {
            self.io.wbuf.reserve(WRITE_CHUNK_MIN);
        }
        loop {
            match self.decoder.decode(&mut self.io.rbuf) {
                Ok(Some(argv)) => {
                    let session = &mut self.session;
                    if self.commandlog {
                        session.client.command.request_bytes =
                            self.decoder.request_len(&argv) as u64;
                    }
                    // Checked here first: building the wait's future costs more than the check.
                    if session.node.live.pause.maybe_active()
                        && !session
                            .wait_while_paused(
                                &mut self.io,
                                &argv,
                                &mut guard,
                                &mut effects,
                                shutdown,
                            )
                            .await
                    {
                        keep_open = false;
                        break;
                    }
                    let mut reply = session.process(&mut guard, &argv, &mut effects).await;
                    ran += 1;
                    if let Some(state) = &guard {
                        let db = session.client.db;
                        if ran.is_multiple_of(LOOKAHEAD_MAX) || (ran == 1 && !asked_first) {
                            look_ahead(
                                &mut self.lookahead,
                                state,
                                db,
                                &self.decoder,
                                &self.io.rbuf,
                            );
                        } else if let Some(keys) = state.dbs.get(db) {
                            self.lookahead.advance(db, keys);
                        }
                    }
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
                    if self.commandlog {
                        self.session.client.command.reply_bytes = 0;
                    }
                    if self.session.client.close_after_reply {
                        keep_open = false;
                        break;
                    }
                    self.decoder.recycle(argv);
                    if self.session.client.replica.handoff.is_some() {
                        // What follows `SYNC`/`PSYNC` is the replica link's to read.
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let reply = Frame::error(format!("ERR Protocol error: {e}"));
                    self.session.node.live.count_error(b"ERR");
                    encode_with(
                        &reply,
                        self.session.client.resp,
                        self.io.doubles,
                        &mut self.io.wbuf,
                    );
                    keep_open = false;
                    break;
                }
            }
        }
        if let Some(mut state) = guard {
            self.prefetching = state
                .dbs
                .get(self.session.client.db)
                .is_some_and(Db::worth_prefetching);
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
            encode_with(reply, client.resp, self.io.doubles, &mut self.io.wbuf);
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
        encode_with(&frame, resp, self.doubles, &mut self.wbuf);
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

    /// Writes the replies of a processed batch once the other connections ready in this
    /// round have processed theirs, as Redis writes every client's replies before it sleeps
    /// (see [`crate::write_round`]): a peer woken by the first write then finds the other
    /// replies there instead of sleeping and being woken once per reply.
    async fn flush_after_round(&mut self, session: &Session) -> std::io::Result<()> {
        if self.wbuf.is_empty() {
            return self.flush(session).await;
        }
        let soft_deadline = self.admit_output(session)?;
        match &self.round {
            Some((round, replies)) => {
                let turn = round.defer(replies, &mut self.wbuf);
                tokio::task::yield_now().await;
                round.write_through(turn);
                replies.take_unwritten(&mut self.wbuf);
            }
            None => tokio::task::yield_now().await,
        }
        if !self.wbuf.is_empty() {
            self.write_out(session, soft_deadline).await?;
        }
        self.outbox_rx
            .written(std::mem::take(&mut self.out_of_band));
        Ok(())
    }

    /// Counts the write buffer as output and holds it to `client-output-buffer-limit
    /// normal` (subscribers have the pub/sub class): past the hard limit the client is closed
    /// at once; past the soft one the answer is how long its output may take to drain.
    fn admit_output(&self, session: &Session) -> std::io::Result<Option<Duration>> {
        let node = &session.node;
        let pending = self.wbuf.len() as u64;
        let OutputLimit {
            hard_bytes: hard,
            soft_bytes: soft,
            soft_seconds,
        } = node.config.output_limit(ClientClass::Normal);
        let normal = session.client.subscriptions == 0;
        if normal && hard > 0 && pending > hard {
            return Err(over_output_limit(node, &session.client.handle));
        }
        // CVE-2025-21605: a client that has not authenticated where a password is required
        // may not pile up replies it does not read. Redis closes it past 1024 bytes of its
        // reply list (`REPLY_BUFFER_SIZE_UNAUTHENTICATED_CLIENT`), which starts after the
        // 16 KB buffer every client has (`PROTO_REPLY_CHUNK_BYTES`).
        if !session.client.authenticated
            && node.requires_auth()
            && pending > UNAUTHENTICATED_OUTPUT_LIMIT
        {
            return Err(over_output_limit(node, &session.client.handle));
        }
        node.live.net_output.fetch_add(pending, Ordering::Relaxed);
        session
            .client
            .handle
            .net_out
            .fetch_add(pending, Ordering::Relaxed);
        node.live.writes.fetch_add(1, Ordering::Relaxed);
        Ok((normal && soft > 0 && pending > soft)
            .then(|| Duration::from_secs(soft_seconds).max(Duration::from_millis(1))))
    }

    /// Writes the whole buffer out. A killed client (e.g. a subscriber past its output-buffer
    /// limit whose socket no longer drains) stops waiting at once, as does one whose output
    /// has not drained by `soft_deadline`.
    async fn write_out(
        &mut self,
        session: &Session,
        soft_deadline: Option<Duration>,
    ) -> std::io::Result<()> {
        let handle = &session.client.handle;
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
            } => return Err(over_output_limit(&session.node, handle)),
        }
        self.wbuf.clear();
        Ok(())
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
            let soft_deadline = self.admit_output(session)?;
            self.write_out(session, soft_deadline).await?;
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
        Socket::Net(socket) => {
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

/// Starts `ahead` over the requests waiting in `rbuf` (the next one first), so that a
/// pipeline over a large keyspace does not take its cache misses one request at a time. The
/// first key of a request is its second argument, or the fourth of a script call with keys;
/// others are a hint that costs nothing but the lookup. Over a small keyspace it does not
/// look at `rbuf`.
fn look_ahead(
    ahead: &mut Lookahead,
    state: &State,
    db: usize,
    decoder: &RequestDecoder,
    rbuf: &[u8],
) {
    let Some(keys_db) = state.dbs.get(db) else {
        return;
    };
    let mut keys: [Option<&[u8]>; LOOKAHEAD_MAX] = [None; LOOKAHEAD_MAX];
    let mut n = 0;
    if keys_db.worth_prefetching() {
        decoder.peek(rbuf, LOOKAHEAD_MAX, |args| {
            let key = match args {
                [name, _, numkeys, key, ..] if is_script_call(name) && numkeys != b"0" => {
                    Some(*key)
                }
                [name, _, ..] if is_script_call(name) => None,
                [_, key, ..] => Some(*key),
                _ => None,
            };
            if let Some(slot) = keys.get_mut(n) {
                *slot = key;
                n += 1;
            }
        });
    }
    ahead.start(db, keys_db, keys.into_iter().take(n));
}

/// Whether `name` is a command whose keys follow a script and their count.
fn is_script_call(name: &[u8]) -> bool {
    [
        "EVALSHA",
        "EVAL",
        "EVALSHA_RO",
        "EVAL_RO",
        "FCALL",
        "FCALL_RO",
    ]
    .iter()
    .any(|c| c.as_bytes().eq_ignore_ascii_case(name))
}

/// Logs and returns the error that closes a client past its output-buffer limit.
/// The most output a client that has not authenticated may have waiting: Redis's 16 KB
/// reply buffer and 1024 bytes of reply list.
const UNAUTHENTICATED_OUTPUT_LIMIT: u64 = 16 * 1024 + 1024;

fn over_output_limit(node: &Node, handle: &ClientHandle) -> std::io::Error {
    node.live
        .output_buffer_limit_disconnections
        .fetch_add(1, Ordering::Relaxed);
    tracing::warn!(
        client = handle.id,
        addr = %handle.addr_text(),
        "Client scheduled to be closed ASAP for overcoming of output buffer limits."
    );
    std::io::Error::other("output buffer limit")
}

/// Resolves after `timeout_s` seconds, or never when it is 0 (`timeout 0`).
async fn idle(timeout_s: u64) {
    if timeout_s == 0 {
        std::future::pending::<()>().await;
    } else {
        tokio::time::sleep(Duration::from_secs(timeout_s)).await;
    }
}
