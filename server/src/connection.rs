//! One client connection: read, decode every complete request in the buffer, execute them in
//! order, append the replies to one write buffer and flush once (pipelining); out-of-band
//! frames (pub/sub messages, MONITOR lines) are interleaved between batches.
//!
//! Protocol errors get `-ERR Protocol error: …` and the connection closes, as in Redis.
//! Command errors are ordinary replies. Scripts run holding the state lock; while one runs
//! past `busy-reply-threshold`, other clients get `BUSY` instead of waiting. On a multi-thread
//! runtime a script runs inline on the connection's worker, like any command, and moves the
//! worker's other tasks to another thread if it runs long ([`crate::script::InlineRun`]); on
//! the current-thread runtime (which cannot do that) it runs on the blocking pool
//! (`spawn_blocking`).

use crate::blocking::BlockRequest;
use crate::client::{ClientHandle, ClientInfo, ClientState, Outbox, OutboxReceiver};
use crate::cmd::{self, CommandError, Resolved};
use crate::shared::{Effects, Node, State};
use crate::transaction;
use bytes::{Bytes, BytesMut};
use locksmith_resp::{encode, Frame, Limits, RequestDecoder};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{broadcast, OwnedMutexGuard};

/// Bounds of the room made in the read buffer before a read: it starts small (most requests
/// are small, and an idle connection should cost little) and doubles while reads fill it.
const READ_CHUNK_MIN: usize = 1024;
const READ_CHUNK_MAX: usize = 64 * 1024;

/// `BUSY` reply while a script (`EVAL`) runs past the threshold.
pub(crate) const BUSY_ERROR: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// `BUSY` reply while a function (`FCALL`) runs past the threshold.
pub(crate) const BUSY_FUNCTION_ERROR: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// Serves one accepted socket until the peer leaves, the client is killed, or the server
/// shuts down.
pub(crate) async fn serve(
    node: Arc<Node>,
    socket: TcpStream,
    mut shutdown: broadcast::Receiver<()>,
) {
    let _ = socket.set_nodelay(true);
    let (Ok(addr), Ok(laddr)) = (socket.peer_addr(), socket.local_addr()) else {
        return;
    };
    let id = node.next_client_id();
    let (outbox, outbox_rx) = Outbox::new();
    let created_ms = node.clock.now_ms();
    let handle = Arc::new(ClientHandle {
        id,
        addr,
        laddr,
        created_ms,
        info: Mutex::new(ClientInfo {
            flags: "N".into(),
            multi: -1,
            resp: 2,
            last_interaction_ms: created_ms,
            ..Default::default()
        }),
        outbox,
        killed: Default::default(),
        kill_notify: Default::default(),
    });
    node.clients.insert(handle.clone());
    let auth_required = node.requires_auth();
    let mut decoder = RequestDecoder::new(Limits::default());
    decoder.set_auth_required(auth_required);
    let mut conn = Connection {
        client: ClientState::new(handle.clone(), !auth_required),
        node: node.clone(),
        socket,
        rbuf: BytesMut::new(),
        wbuf: BytesMut::new(),
        read_chunk: READ_CHUNK_MIN,
        decoder,
        outbox_rx,
        out_of_band: 0,
        inline_scripts: tokio::runtime::Handle::current().runtime_flavor()
            == tokio::runtime::RuntimeFlavor::MultiThread,
    };
    if let Err(e) = conn.run(&mut shutdown).await {
        tracing::debug!(client = id, error = %e, "connection closed");
    }
    node.clients.remove(id);
    node.state.lock().await.client_gone(id);
}

struct Connection {
    node: Arc<Node>,
    client: ClientState,
    socket: TcpStream,
    /// How much room the next read gets (adaptive, [`READ_CHUNK_MIN`]..[`READ_CHUNK_MAX`]).
    read_chunk: usize,
    rbuf: BytesMut,
    wbuf: BytesMut,
    decoder: RequestDecoder,
    outbox_rx: OutboxReceiver,
    /// Bytes of out-of-band frames in `wbuf`, still counted as pending in the outbox (so a
    /// subscriber whose socket does not drain stays accountable for them) until flushed.
    out_of_band: usize,
    /// Scripts run inline on this worker (multi-thread runtime), not on the blocking pool.
    inline_scripts: bool,
}

impl Connection {
    async fn run(&mut self, shutdown: &mut broadcast::Receiver<()>) -> std::io::Result<()> {
        let handle = self.client.handle.clone();
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
            let idle_timeout = self.node.live.idle_timeout_s.load(Ordering::Relaxed);
            tokio::select! {
                _ = &mut killed => return Ok(()),
                _ = &mut stop => return Ok(()),
                _ = idle(idle_timeout) => {
                    // `timeout`: Redis closes idle clients, except subscribers.
                    let info = handle.info();
                    if info.sub + info.psub + info.ssub == 0 {
                        return Ok(());
                    }
                }
                Some(frame) = self.outbox_rx.recv() => {
                    self.push_out_of_band(frame);
                    while let Some(frame) = self.outbox_rx.try_recv() {
                        self.push_out_of_band(frame);
                    }
                    self.flush().await?;
                    self.release_idle_buffers();
                }
                ready = self.socket.readable() => {
                    ready?;
                    // The read buffer exists only while there is input: an idle connection
                    // holds none (Redis frees an idle client's query buffer the same way).
                    self.rbuf.reserve(self.read_chunk);
                    let room = self.rbuf.capacity() - self.rbuf.len();
                    let read = match self.socket.try_read_buf(&mut self.rbuf) {
                        Ok(n) => n,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                        Err(e) => return Err(e),
                    };
                    self.read_chunk = if read >= room {
                        (self.read_chunk * 2).min(READ_CHUNK_MAX)
                    } else if read < self.read_chunk / 4 {
                        (self.read_chunk / 2).max(READ_CHUNK_MIN)
                    } else {
                        self.read_chunk
                    };
                    if read == 0 {
                        return Ok(());
                    }
                    let limit = self.node.live.query_buffer_limit.load(Ordering::Relaxed);
                    if self.rbuf.len() as u64 > limit {
                        tracing::warn!(
                            client = self.client.id(),
                            addr = %self.client.handle.addr,
                            "Closing client that reached max query buffer length"
                        );
                        return Ok(());
                    }
                    self.node.live.net_input.fetch_add(read as u64, Ordering::Relaxed);
                    let keep_open = self.process_input(&mut pause_shutdown).await;
                    // Let the other connections with input run before writing (as Redis
                    // writes every client's replies after processing the whole batch of
                    // ready sockets): a peer woken by the first write then finds the other
                    // replies already there instead of sleeping and being woken once per
                    // reply, which cost ~7 % of a pipelined script benchmark in wake-ups.
                    if !self.wbuf.is_empty() {
                        tokio::task::yield_now().await;
                    }
                    self.flush().await?;
                    if !keep_open {
                        return Ok(());
                    }
                    self.release_idle_buffers();
                }
            }
        }
    }

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

    fn push_out_of_band(&mut self, frame: Frame) {
        let before = self.wbuf.len();
        encode(&frame, self.client.resp, &mut self.wbuf);
        self.out_of_band += self.wbuf.len() - before;
    }

    /// Moves every queued out-of-band frame (pub/sub messages, extra subscribe
    /// confirmations) into the write buffer, so they precede the reply being written.
    fn drain_outbox(&mut self) {
        while let Some(frame) = self.outbox_rx.try_recv() {
            self.push_out_of_band(frame);
        }
    }

    /// Writes the buffer out. A killed client (e.g. a subscriber past its output-buffer
    /// limit whose socket no longer drains) stops waiting at once.
    async fn flush(&mut self) -> std::io::Result<()> {
        if !self.wbuf.is_empty() {
            // `client-output-buffer-limit normal` (subscribers have the pub/sub class): past
            // the hard limit the client is closed at once, past the soft one when the output
            // has not drained within its seconds.
            let pending = self.wbuf.len() as u64;
            let [hard, soft, soft_seconds] = self
                .node
                .live
                .normal_output_limit
                .each_ref()
                .map(|v| v.load(Ordering::Relaxed));
            let normal = self.client.subscriptions == 0;
            let over_limit = || {
                tracing::warn!(
                    client = self.client.id(),
                    addr = %self.client.handle.addr,
                    "Client scheduled to be closed ASAP for overcoming of output buffer limits."
                );
                std::io::Error::other("output buffer limit")
            };
            if normal && hard > 0 && pending > hard {
                return Err(over_limit());
            }
            let soft_deadline = (normal && soft > 0 && pending > soft)
                .then(|| Duration::from_secs(soft_seconds).max(Duration::from_millis(1)));
            self.node
                .live
                .net_output
                .fetch_add(pending, Ordering::Relaxed);
            let handle = self.client.handle.clone();
            tokio::select! {
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

    /// Executes every complete request in the read buffer; false when the connection must
    /// close (protocol error, QUIT, killed).
    async fn process_input(&mut self, shutdown: &mut broadcast::Receiver<()>) -> bool {
        let mut guard: Option<OwnedMutexGuard<State>> = None;
        let mut effects = Effects::default();
        let mut keep_open = true;
        self.sync_limits();
        loop {
            match self.decoder.decode(&mut self.rbuf) {
                Ok(Some(argv)) => {
                    if !self
                        .wait_while_paused(&argv, &mut guard, &mut effects, shutdown)
                        .await
                    {
                        keep_open = false;
                        break;
                    }
                    let mut reply = self.run_command(&mut guard, &argv, &mut effects).await;
                    if let Some(request) = self.client.block.take() {
                        // `CLIENT LIST` shows the client blocked (flag b) while it waits.
                        self.client.handle.update(|info| info.set_flag('b', true));
                        let served = self
                            .wait_blocked(&mut guard, &mut effects, &argv, request, shutdown)
                            .await;
                        self.client.handle.update(|info| info.set_flag('b', false));
                        match served {
                            Some(served) => reply = served,
                            None => {
                                keep_open = false;
                                break;
                            }
                        }
                    }
                    // Messages this command sent to the client itself come first, as in Redis.
                    self.drain_outbox();
                    self.emit(&reply);
                    if self.client.close_after_reply {
                        keep_open = false;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let reply = Frame::error(format!("ERR Protocol error: {e}"));
                    self.node.live.count_error(b"ERR");
                    encode(&reply, self.client.resp, &mut self.wbuf);
                    keep_open = false;
                    break;
                }
            }
        }
        if let Some(mut state) = guard {
            state.finish_effects(&self.node, &mut effects);
        }
        keep_open && !self.client.handle.is_killed()
    }

    /// Applies the run-time limits that `CONFIG SET` and `AUTH` change to the decoder.
    fn sync_limits(&mut self) {
        let max_bulk = self.node.live.proto_max_bulk_len.load(Ordering::Relaxed);
        self.decoder.set_limits(Limits {
            max_bulk_len: usize::try_from(max_bulk).unwrap_or(usize::MAX),
            ..Limits::default()
        });
        if !self.client.authenticated && !self.node.requires_auth() {
            // `CONFIG SET requirepass ""` lifts the requirement for waiting clients too.
            self.client.authenticated = true;
        }
        self.decoder
            .set_auth_required(!self.client.authenticated && self.node.requires_auth());
    }

    /// Appends `reply` unless `CLIENT REPLY OFF|SKIP` drops it (a push goes anyway); counts errors for `INFO`;
    /// lifts the pre-`AUTH` request limits once `AUTH`/`HELLO AUTH` succeeded (and restores
    /// them after `RESET`).
    fn emit(&mut self, reply: &Frame) {
        if let Frame::Error(line) = reply {
            if !std::mem::take(&mut self.client.error_counted) {
                self.node.live.count_error(line);
            }
        }
        // Pub/sub confirmations are pushes, which Redis sends even under `CLIENT REPLY OFF`
        // (its `CLIENT_PUSHING`).
        let permitted = self.client.take_reply_permission();
        if permitted || matches!(reply, Frame::Push(_)) {
            encode(reply, self.client.resp, &mut self.wbuf);
        }
        self.decoder
            .set_auth_required(!self.client.authenticated && self.node.requires_auth());
    }

    /// `CLIENT PAUSE`: holds the command back while a pause covers it, releasing the state
    /// lock and flushing the replies so far (as Redis writes them while a client is blocked).
    /// Returns false when the connection must close meanwhile (killed, server shutdown).
    async fn wait_while_paused(
        &mut self,
        argv: &[Bytes],
        guard: &mut Option<OwnedMutexGuard<State>>,
        effects: &mut Effects,
        shutdown: &mut broadcast::Receiver<()>,
    ) -> bool {
        if !self.node.live.pause.maybe_active() {
            return true;
        }
        let node = self.node.clone();
        if !node.live.pause.is_paused(node.clock.now_ms()) {
            return true;
        }
        let Ok(resolved) = cmd::resolve(argv) else {
            return true;
        };
        let command_flags = resolved.spec.flags;
        let handle = self.client.handle.clone();
        // Bounded: each pass either ends the wait or sleeps until the pause ends or changes.
        loop {
            let now = node.clock.now_ms();
            let Some(end) = node.live.pause.holds(command_flags, now) else {
                if guard.is_some() {
                    return true;
                }
                // Look again under the state lock: CLIENT PAUSE runs under it, so a pause
                // that began while we waited for the lock is seen.
                match self.lock_state().await {
                    Ok(state) => *guard = Some(state),
                    Err(_) => return true,
                }
                continue;
            };
            if let Some(mut state) = guard.take() {
                state.finish_effects(&node, effects);
            }
            if self.flush().await.is_err() {
                return false;
            }
            if handle.is_killed() {
                return false;
            }
            let changed = node.live.pause.changed.notified();
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep(Duration::from_millis(end.saturating_sub(now).max(1))) => {}
                _ = handle.kill_notify.notified() => return false,
                _ = shutdown.recv() => return false,
            }
            if handle.is_killed() {
                return false;
            }
        }
    }

    async fn run_command(
        &mut self,
        guard: &mut Option<OwnedMutexGuard<State>>,
        argv: &[Bytes],
        effects: &mut Effects,
    ) -> Frame {
        // WAIT, REPLICAOF and the harness's LOCKSMITH.* commands wait on other tasks or nodes:
        // they run without the state lock.
        if crate::cmd::replication::is_async_command(&self.node, argv) {
            if let Some(mut state) = guard.take() {
                state.finish_effects(&self.node, effects);
            }
            return crate::cmd::replication::run_async_command(&self.node, &self.client, argv)
                .await;
        }
        let resolved = match cmd::resolve(argv).and_then(|resolved| {
            self.node
                .check_protected(resolved.spec, self.client.handle.addr)
                .map(|()| resolved)
        }) {
            Ok(resolved) => resolved,
            Err(e) => {
                transaction::flag_error(&mut self.client);
                if let Some(named) = cmd::resolve_name(argv) {
                    self.node.live.reject_call(named);
                }
                return e.into();
            }
        };
        if let Some(e) =
            crate::cluster::check_command(&self.node, &mut self.client, resolved.spec, argv)
        {
            return self.rejected(resolved, e.into());
        }
        if let Some(reply) = self.busy_transaction_rules(resolved, guard.is_some()) {
            return self.rejected(resolved, reply);
        }
        if self.node.live.maxmemory.load(Ordering::Relaxed) > 0 {
            if let Some(reply) = self.maxmemory_rules(resolved, guard, effects).await {
                return self.rejected(resolved, reply);
            }
        }
        if self.node.live.min_replicas_to_write.load(Ordering::Relaxed) > 0 {
            if let Some(reply) = self.min_replicas_rules(resolved, guard).await {
                return self.rejected(resolved, reply);
            }
        }
        if let Some(reply) = transaction::admit(resolved, &mut self.client, argv) {
            return self.rejected(resolved, reply);
        }
        let runs_script = transaction::runs_script(resolved, &self.client);
        if runs_script && !self.inline_scripts {
            if let Some(mut state) = guard.take() {
                state.finish_effects(&self.node, effects);
            }
            return self.run_blocking(resolved, argv.to_vec()).await;
        }
        if guard.is_none() {
            match self.lock_state().await {
                Ok(state) => *guard = Some(state),
                // `allow_busy` commands (SCRIPT KILL) are served without the lock.
                Err(busy) => match resolved.spec.busy_handler {
                    Some(handler) => {
                        let reply = handler(&self.node, argv);
                        // SHUTDOWN NOSAVE: Redis exits without replying.
                        if self.node.live.stop_requested() {
                            self.client.reply_skip = true;
                            self.client.close_after_reply = true;
                        }
                        return reply;
                    }
                    None => return self.rejected(resolved, busy),
                },
            }
        }
        let Some(state) = guard.as_mut() else {
            return CommandError::err("internal error: state lock lost").into();
        };
        if std::mem::take(&mut self.client.unwatch_pending) {
            state.watches.unwatch_all(self.client.id());
            state.watches.clear_dirty(self.client.id());
        }
        let now = self.node.clock.now_ms();
        let _inline = runs_script.then(crate::script::InlineRun::enter);
        let reply = cmd::execute_resolved(
            resolved,
            state,
            &self.node,
            &mut self.client,
            argv,
            now,
            effects,
        );
        self.note_command(resolved, now);
        if !effects.is_empty() {
            state.finish_effects(&self.node, effects);
        }
        reply
    }

    /// Counts `reply` as a refusal of `resolved` if it is an error (Redis's `rejectCommand`
    /// counts `rejected_calls`); returns it.
    fn rejected(&self, resolved: cmd::Resolved, reply: Frame) -> Frame {
        if reply.is_error() {
            self.node.live.reject_call(resolved);
        }
        reply
    }

    /// Blocks the client (a blocking command found nothing): registers the wait, releases the
    /// state lock, writes the replies of earlier pipelined commands, then waits for a write
    /// to serve it (the reply comes over a oneshot) or for its timeout (tokio time, so paused
    /// clocks work). `None` when the connection must close meanwhile (peer gone, killed,
    /// shutdown); input arriving meanwhile is buffered and runs after the reply.
    async fn wait_blocked(
        &mut self,
        guard: &mut Option<OwnedMutexGuard<State>>,
        effects: &mut Effects,
        argv: &[Bytes],
        request: BlockRequest,
        shutdown: &mut broadcast::Receiver<()>,
    ) -> Option<Frame> {
        let Some(mut state) = guard.take() else {
            return Some(Frame::NullArray);
        };
        let mut served = state.blocked.register(&self.client, argv, &request);
        state.finish_effects(&self.node, effects);
        drop(state);
        self.flush().await.ok()?;
        let handle = self.client.handle.clone();
        let timeout = async {
            match request.timeout {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(timeout);
        loop {
            tokio::select! {
                reply = &mut served => return Some(reply.unwrap_or(Frame::NullArray)),
                _ = &mut timeout => break,
                _ = handle.kill_notify.notified() => return None,
                _ = shutdown.recv() => return None,
                read = self.socket.read_buf(&mut self.rbuf) => match read {
                    Ok(0) | Err(_) => return None,
                    Ok(_) => {}
                },
            }
        }
        // Timed out: stop waiting, unless a write served the client just now.
        let mut state = self.node.state.clone().lock_owned().await;
        state.blocked.remove(self.client.id());
        let reply = match served.try_recv() {
            Ok(reply) => reply,
            Err(_) => {
                // Timed out: the call is counted now (a served one was counted when it ran).
                if let Ok(resolved) = cmd::resolve(argv) {
                    let zero = Duration::ZERO;
                    state.cmdstats.record(resolved, Some(zero), false);
                }
                Frame::NullArray
            }
        };
        *guard = Some(state);
        Some(reply)
    }

    fn note_command(&self, resolved: Resolved, now: u64) {
        let db = self.client.db;
        let resp = match self.client.resp {
            locksmith_resp::Version::Resp2 => 2,
            locksmith_resp::Version::Resp3 => 3,
        };
        self.client.handle.update(|info| {
            info.db = db;
            info.resp = resp;
            info.last_cmd.clear();
            if let Some(parent) = resolved.parent {
                info.last_cmd.push_str(parent.name);
                info.last_cmd.push('|');
            }
            info.last_cmd.push_str(resolved.spec.name);
            info.last_interaction_ms = now;
        });
    }

    /// Runs a script command on the blocking pool with the state lock held, so a long script
    /// never stalls the reactor and other clients can be told `BUSY`.
    async fn run_blocking(&mut self, resolved: Resolved, argv: Vec<Bytes>) -> Frame {
        let mut state = match self.lock_state().await {
            Ok(state) => state,
            Err(busy) => return busy,
        };
        let node = self.node.clone();
        let placeholder = ClientState::new(self.client.handle.clone(), false);
        let mut client = std::mem::replace(&mut self.client, placeholder);
        let task = tokio::task::spawn_blocking(move || {
            let mut effects = Effects::default();
            let now = node.clock.now_ms();
            let reply = cmd::execute_resolved(
                resolved,
                &mut state,
                &node,
                &mut client,
                &argv,
                now,
                &mut effects,
            );
            state.finish_effects(&node, &mut effects);
            (client, reply)
        });
        match task.await {
            Ok((client, reply)) => {
                self.client = client;
                self.note_command(resolved, self.node.clock.now_ms());
                reply
            }
            Err(e) => {
                tracing::error!(error = %e, "script task failed");
                self.client.close_after_reply = true;
                CommandError::err("internal error while running the script").into()
            }
        }
    }

    /// Redis's `processCommand` while a script is busy, for transactions: a command that is not
    /// `allow_busy` is refused with `BUSY` and flags the transaction (so a later EXEC aborts
    /// rather than run half of it), EXEC is refused by discarding its transaction (`EXECABORT
    /// Transaction discarded because of: BUSY ...`), and MULTI and DISCARD work (they only touch
    /// the client). `None` when not busy or nothing applies (`holding`: this connection has the
    /// state lock, so no script of another can be running).
    fn busy_transaction_rules(&mut self, resolved: cmd::Resolved, holding: bool) -> Option<Frame> {
        if holding {
            return None;
        }
        let threshold = self.node.busy_threshold_ms.load(Ordering::Relaxed);
        if self
            .node
            .script_running_for()
            .is_none_or(|elapsed| elapsed < threshold)
        {
            return None;
        }
        let top = if resolved.first_arg > 1 {
            ""
        } else {
            resolved.spec.name
        };
        match top {
            "multi" if self.client.multi.is_none() => {
                self.client.multi = Some(Default::default());
                self.client.handle.update(|info| {
                    info.multi = 0;
                    info.set_flag('x', true);
                });
                Some(Frame::ok())
            }
            "discard" if self.client.multi.is_some() => {
                self.end_transaction_while_busy();
                Some(Frame::ok())
            }
            "exec" if self.client.multi.is_some() => Some(self.exec_abort(self.node.busy_error())),
            _ if self.client.multi.is_some() && !resolved.spec.has(cmd::flags::ALLOW_BUSY) => {
                transaction::flag_error(&mut self.client);
                Some(Frame::error(self.node.busy_error()))
            }
            _ => None,
        }
    }

    /// Redis's `processCommand` under `maxmemory`: an eviction round first; then, if memory is
    /// still over the limit, `OOM` for a command that may grow memory (`denyoom`), for an
    /// EXEC whose queue holds one (`EXECABORT`, the transaction discarded), and for any command
    /// but EXEC, DISCARD, QUIT and RESET inside MULTI (queueing costs memory too). Whether
    /// memory was over is kept for the scripts this command runs.
    async fn maxmemory_rules(
        &mut self,
        resolved: cmd::Resolved,
        guard: &mut Option<OwnedMutexGuard<State>>,
        effects: &mut Effects,
    ) -> Option<Frame> {
        if guard.is_none() {
            // Busy: the command is refused (or served without the lock) further on.
            *guard = Some(self.lock_state().await.ok()?);
        }
        let state = guard.as_mut()?;
        let now = self.node.clock.now_ms();
        let limit = self.node.live.maxmemory.load(Ordering::Relaxed);
        let oom =
            state.perform_evictions(limit, now, effects) == crate::evict::Outcome::OutOfMemory;
        if !effects.is_empty() {
            state.finish_effects(&self.node, effects);
        }
        self.client.pre_command_oom = oom;
        if !oom {
            return None;
        }
        let top = if resolved.first_arg > 1 {
            ""
        } else {
            resolved.spec.name
        };
        let denyoom = cmd::flags::DENYOOM;
        let queued_denyoom = top == "exec"
            && self.client.multi.as_ref().is_some_and(|multi| {
                multi
                    .queue
                    .iter()
                    .any(|(queued, _)| queued.spec.has(denyoom))
            });
        let in_multi = self.client.multi.is_some();
        let reject = resolved.spec.has(denyoom)
            || queued_denyoom
            || (in_multi && !matches!(top, "exec" | "discard" | "quit" | "reset"));
        if !reject {
            return None;
        }
        if top == "exec" && in_multi {
            return Some(self.exec_abort(crate::evict::OOM_ERROR));
        }
        transaction::flag_error(&mut self.client);
        Some(Frame::error(crate::evict::OOM_ERROR))
    }

    /// Redis's `processCommand` under `min-replicas-to-write`: a write command, or an EXEC
    /// whose queue holds one, is refused with `NOREPLICAS` (the transaction discarded) while
    /// fewer good replicas are attached.
    async fn min_replicas_rules(
        &mut self,
        resolved: cmd::Resolved,
        guard: &mut Option<OwnedMutexGuard<State>>,
    ) -> Option<Frame> {
        let top = if resolved.first_arg > 1 {
            ""
        } else {
            resolved.spec.name
        };
        let write = cmd::flags::WRITE;
        let is_exec = top == "exec" && self.client.multi.is_some();
        let queued_write =
            is_exec
                && self.client.multi.as_ref().is_some_and(|multi| {
                    multi.queue.iter().any(|(queued, _)| queued.spec.has(write))
                });
        if !(resolved.spec.has(write) || queued_write) {
            return None;
        }
        if guard.is_none() {
            *guard = Some(self.lock_state().await.ok()?);
        }
        if guard.as_ref()?.enough_good_replicas(&self.node) {
            return None;
        }
        if is_exec {
            return Some(self.exec_abort(crate::shared::NOREPLICAS_ERROR));
        }
        transaction::flag_error(&mut self.client);
        Some(Frame::error(crate::shared::NOREPLICAS_ERROR))
    }

    /// Redis's `execCommandAbort`: EXEC refused before it runs (`reason`, an error line)
    /// discards the transaction and answers `EXECABORT`.
    fn exec_abort(&mut self, reason: &str) -> Frame {
        self.end_transaction_while_busy();
        Frame::error(format!(
            "EXECABORT Transaction discarded because of: {}",
            reason.trim_start_matches('-')
        ))
    }

    /// Leaves the transaction without the state lock; its WATCHes go at the next locked command.
    fn end_transaction_while_busy(&mut self) {
        self.client.multi = None;
        self.client.unwatch_pending = true;
        self.client.handle.update(|info| {
            info.multi = -1;
            info.set_flag('x', false);
            info.set_flag('d', false);
        });
    }

    /// Takes the state lock, or answers `BUSY` while a script runs past the threshold.
    async fn lock_state(&self) -> Result<OwnedMutexGuard<State>, Frame> {
        if let Ok(state) = self.node.state.clone().try_lock_owned() {
            return Ok(state);
        }
        let lock = self.node.state.clone().lock_owned();
        tokio::pin!(lock);
        loop {
            let threshold = self.node.busy_threshold_ms.load(Ordering::Relaxed);
            let wait = match self.node.script_running_for() {
                Some(elapsed) if elapsed >= threshold => {
                    return Err(Frame::error(self.node.busy_error()))
                }
                Some(elapsed) => Duration::from_millis(threshold - elapsed),
                // Re-check now and then: a script may start while we wait for the lock.
                None => Duration::from_millis(threshold.clamp(1, 50)),
            };
            tokio::select! {
                state = &mut lock => return Ok(state),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// Resolves after `timeout_s` seconds, or never when it is 0 (`timeout 0`).
async fn idle(timeout_s: u64) {
    if timeout_s == 0 {
        std::future::pending::<()>().await;
    } else {
        tokio::time::sleep(Duration::from_secs(timeout_s)).await;
    }
}
