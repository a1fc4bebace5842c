//! One client connection: read, decode every complete request in the buffer, execute them in
//! order, append the replies to one write buffer and flush once (pipelining); out-of-band
//! frames (pub/sub messages, MONITOR lines) are interleaved between batches.
//!
//! Protocol errors get `-ERR Protocol error: …` and the connection closes, as in Redis.
//! Command errors are ordinary replies. Scripts run off the reactor thread
//! (`spawn_blocking`) holding the state lock; while one runs past `busy-reply-threshold`,
//! other clients get `BUSY` instead of waiting.

use crate::client::{ClientHandle, ClientInfo, ClientState, Outbox, OutboxReceiver};
use crate::cmd::{self, flags, CommandError, Resolved};
use crate::shared::{Effects, Node, State};
use bytes::{Bytes, BytesMut};
use locksmith_resp::{encode, Frame, Limits, RequestDecoder};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{broadcast, OwnedMutexGuard};

/// `BUSY` reply while a script runs past the threshold.
pub(crate) const BUSY_ERROR: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

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
    let handle = Arc::new(ClientHandle {
        id,
        addr,
        laddr,
        created_ms: node.clock.now_ms(),
        info: Mutex::new(ClientInfo {
            flags: "N".into(),
            multi: -1,
            resp: 2,
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
        rbuf: BytesMut::with_capacity(16 * 1024),
        wbuf: BytesMut::with_capacity(16 * 1024),
        decoder,
        outbox_rx,
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
    rbuf: BytesMut,
    wbuf: BytesMut,
    decoder: RequestDecoder,
    outbox_rx: OutboxReceiver,
}

impl Connection {
    async fn run(&mut self, shutdown: &mut broadcast::Receiver<()>) -> std::io::Result<()> {
        let handle = self.client.handle.clone();
        loop {
            if handle.is_killed() {
                return Ok(());
            }
            tokio::select! {
                _ = handle.kill_notify.notified() => return Ok(()),
                _ = shutdown.recv() => return Ok(()),
                Some(frame) = self.outbox_rx.recv() => {
                    self.push_out_of_band(frame);
                    while let Some(frame) = self.outbox_rx.try_recv() {
                        self.push_out_of_band(frame);
                    }
                    self.flush().await?;
                }
                read = self.socket.read_buf(&mut self.rbuf) => {
                    if read? == 0 {
                        return Ok(());
                    }
                    let keep_open = self.process_input().await;
                    self.flush().await?;
                    if !keep_open {
                        return Ok(());
                    }
                }
            }
        }
    }

    fn push_out_of_band(&mut self, frame: Frame) {
        let before = self.wbuf.len();
        encode(&frame, self.client.resp, &mut self.wbuf);
        self.outbox_rx.written(self.wbuf.len() - before);
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        if !self.wbuf.is_empty() {
            self.socket.write_all(&self.wbuf).await?;
            self.wbuf.clear();
        }
        Ok(())
    }

    /// Executes every complete request in the read buffer; false when the connection must
    /// close (protocol error, QUIT, killed).
    async fn process_input(&mut self) -> bool {
        let mut guard: Option<OwnedMutexGuard<State>> = None;
        let mut effects = Effects::default();
        let mut keep_open = true;
        loop {
            match self.decoder.decode(&mut self.rbuf) {
                Ok(Some(argv)) => {
                    let reply = self.run_command(&mut guard, &argv, &mut effects).await;
                    encode(&reply, self.client.resp, &mut self.wbuf);
                    if self.client.close_after_reply {
                        keep_open = false;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let reply = Frame::error(format!("ERR Protocol error: {e}"));
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

    async fn run_command(
        &mut self,
        guard: &mut Option<OwnedMutexGuard<State>>,
        argv: &[Bytes],
        effects: &mut Effects,
    ) -> Frame {
        let resolved = match cmd::resolve(argv) {
            Ok(resolved) => resolved,
            Err(e) => return e.into(),
        };
        if resolved.spec.has(flags::RUNS_SCRIPT) {
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
                    Some(handler) => return handler(&self.node, argv),
                    None => return busy,
                },
            }
        }
        let Some(state) = guard.as_mut() else {
            return CommandError::err("internal error: state lock lost").into();
        };
        let now = self.node.clock.now_ms();
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

    fn note_command(&self, resolved: Resolved, now: u64) {
        let db = self.client.db;
        self.client.handle.update(|info| {
            info.db = db;
            info.last_cmd.clear();
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
                Some(elapsed) if elapsed >= threshold => return Err(Frame::error(BUSY_ERROR)),
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
