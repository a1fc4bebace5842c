//! Per-connection client state ([`ClientState`], owned by the connection task) and the shared
//! view of every client ([`ClientHandle`] in the [`ClientRegistry`]) that `CLIENT LIST|KILL`
//! and pub/sub delivery use.

use bytes::Bytes;
use locksmith_resp::{Frame, Version};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, Notify};

/// Mutable details other clients can see (`CLIENT LIST`, `CLIENT INFO`).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientInfo {
    /// `CLIENT SETNAME`.
    pub(crate) name: Option<Bytes>,
    /// `CLIENT SETINFO LIB-NAME`.
    pub(crate) lib_name: Option<Bytes>,
    /// `CLIENT SETINFO LIB-VER`.
    pub(crate) lib_ver: Option<Bytes>,
    /// It declared `CLIENT CAPA redirect` (Valkey's `capa=r`).
    pub(crate) redirect_capa: bool,
    /// Selected database.
    pub(crate) db: usize,
    /// Last command name (lowercase).
    pub(crate) last_cmd: String,
    /// Protocol version.
    pub(crate) resp: u8,
    /// Channel subscriptions.
    pub(crate) sub: usize,
    /// Pattern subscriptions.
    pub(crate) psub: usize,
    /// Shard-channel subscriptions.
    pub(crate) ssub: usize,
    /// In MULTI: queued commands, else -1.
    pub(crate) multi: i64,
    /// Flags as `CLIENT LIST` shows them (`N` normal, `P` pubsub, `x` multi, `b` blocked…).
    pub(crate) flags: String,
    /// The user the client authenticated as (`None`: the default user).
    pub(crate) user: Option<Arc<crate::acl::User>>,
}

impl ClientInfo {
    /// Sets or clears one `CLIENT LIST` flag letter, keeping Redis's order of letters
    /// (`catClientInfoString`) and its `N` when no other flag is set.
    pub(crate) fn set_flag(&mut self, flag: char, on: bool) {
        const ORDER: &str = "OSMPxbtRBdcuAUre";
        let mut present: Vec<char> = self.flags.chars().filter(|&c| c != 'N').collect();
        present.retain(|&c| c != flag);
        if on {
            present.push(flag);
        }
        present.sort_by_key(|c| ORDER.find(*c).unwrap_or(ORDER.len()));
        self.flags = if present.is_empty() {
            "N".into()
        } else {
            present.into_iter().collect()
        };
    }
}

/// The two ends of a client's connection, as its [`ClientHandle`] keeps them.
#[derive(Debug, Clone)]
pub(crate) struct Endpoints {
    /// The peer's address (see [`ClientHandle::addr`]).
    pub(crate) addr: SocketAddr,
    /// The node's address.
    pub(crate) laddr: SocketAddr,
    /// The Unix socket's path, for a client connected to it.
    pub(crate) unix: Option<Arc<str>>,
}

impl Endpoints {
    /// A TCP connection from `addr` to `laddr`.
    pub(crate) fn tcp(addr: SocketAddr, laddr: SocketAddr) -> Self {
        Endpoints {
            addr,
            laddr,
            unix: None,
        }
    }
}

/// The shared handle of one connected client.
#[derive(Debug)]
pub(crate) struct ClientHandle {
    /// Unique, increasing id (`CLIENT ID`).
    pub(crate) id: u64,
    /// Peer address. A Unix socket's client has none: it is the loopback address with
    /// port 0 here, as local as Redis counts such a client (`enable-debug-command local`,
    /// the admin hook's origin); [`ClientHandle::addr_text`] shows its path.
    pub(crate) addr: SocketAddr,
    /// Local address (for a Unix socket's client, the node's TCP address).
    pub(crate) laddr: SocketAddr,
    /// The path of the Unix socket the client connected to, if it did.
    pub(crate) unix: Option<Arc<str>>,
    /// Node-clock ms when connected.
    pub(crate) created_ms: u64,
    /// Details other clients read.
    pub(crate) info: Mutex<ClientInfo>,
    /// Node-clock ms of the last command (`CLIENT LIST`'s `idle`): written after every
    /// command, so kept out of `info`'s lock.
    pub(crate) last_interaction_ms: AtomicU64,
    /// Out-of-band frames for this client (pub/sub messages, MONITOR lines, wake-ups).
    pub(crate) outbox: Outbox,
    /// Set by `CLIENT KILL` or a full output buffer; the connection closes.
    pub(crate) killed: AtomicBool,
    /// Wakes the connection task when killed.
    pub(crate) kill_notify: Notify,
    /// Bytes read from the client (Valkey's `tot-net-in`).
    pub(crate) net_in: AtomicU64,
    /// Bytes written to the client (Valkey's `tot-net-out`).
    pub(crate) net_out: AtomicU64,
    /// Commands it ran, those its transactions and scripts ran included, a blocked one once
    /// served or timed out (Valkey's `tot-cmds`).
    pub(crate) commands: AtomicU64,
}

impl ClientHandle {
    /// The handle of a new client (`id` a fresh one of its node's, created at its node's
    /// `created_ms`; flags `N`, or `U` for a Unix socket's, RESP2), connected as `ends` says.
    pub(crate) fn new(id: u64, created_ms: u64, ends: Endpoints, outbox: Outbox) -> Self {
        let Endpoints { addr, laddr, unix } = ends;
        let mut info = ClientInfo {
            multi: -1,
            resp: 2,
            ..Default::default()
        };
        info.set_flag('U', unix.is_some());
        ClientHandle {
            id,
            addr,
            laddr,
            unix,
            created_ms,
            info: Mutex::new(info),
            last_interaction_ms: AtomicU64::new(created_ms),
            outbox,
            killed: Default::default(),
            kill_notify: Default::default(),
            net_in: AtomicU64::new(0),
            net_out: AtomicU64::new(0),
            commands: AtomicU64::new(0),
        }
    }

    /// The peer as `CLIENT LIST` shows it: `ip:port`, or `path:0` for a Unix socket's client.
    pub(crate) fn addr_text(&self) -> String {
        self.end_text(self.addr)
    }

    /// The node's end as `CLIENT LIST` shows it (`laddr`): `ip:port`, or `path:0`.
    pub(crate) fn laddr_text(&self) -> String {
        self.end_text(self.laddr)
    }

    /// `addr` as `CLIENT LIST` shows an end of this client's connection: both ends of a Unix
    /// socket's connection are its path, with port 0 (Redis's `path:0`).
    fn end_text(&self, addr: SocketAddr) -> String {
        match &self.unix {
            Some(path) => format!("{path}:0"),
            None => addr.to_string(),
        }
    }

    /// Asks the connection to close.
    pub(crate) fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        // Every wait of the connection (its main loop, a CLIENT PAUSE wait) must see it; a
        // `Notified` created before this call is woken even if not yet polled.
        self.kill_notify.notify_waiters();
    }

    /// Whether the client was killed.
    pub(crate) fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// A copy of the visible details.
    pub(crate) fn info(&self) -> ClientInfo {
        self.info.lock().map(|i| i.clone()).unwrap_or_default()
    }

    /// The name (`CLIENT SETNAME`), empty without one.
    pub(crate) fn name(&self) -> Bytes {
        self.info
            .lock()
            .ok()
            .and_then(|i| i.name.clone())
            .unwrap_or_default()
    }

    /// Updates the visible details.
    pub(crate) fn update(&self, f: impl FnOnce(&mut ClientInfo)) {
        if let Ok(mut info) = self.info.lock() {
            f(&mut info);
        }
    }
}

/// A client's queue of out-of-band frames, with the bytes pending in it counted so a
/// subscriber that does not read can be disconnected (`client-output-buffer-limit`).
#[derive(Debug)]
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Frame>,
    /// Approximate bytes queued and not yet written.
    pub(crate) pending: Arc<AtomicUsize>,
    /// Frames in the channel: the connection looks at this after each reply instead of
    /// polling the channel.
    queued: Arc<AtomicUsize>,
    /// Frames that follow the reply of the command running now ([`Outbox::defer`]).
    deferred: Arc<Deferred>,
}

/// Frames held until the running command's reply is written (tracking invalidations a
/// command caused for its own client, Redis's `tracking_pending_keys`).
#[derive(Debug, Default)]
struct Deferred {
    frames: Mutex<Vec<(Frame, usize)>>,
    /// Set while `frames` holds any: the connection looks at this after each reply.
    any: AtomicBool,
}

impl Outbox {
    /// A new outbox and its receiving end.
    pub(crate) fn new() -> (Outbox, OutboxReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let queued = Arc::new(AtomicUsize::new(0));
        let deferred = Arc::new(Deferred::default());
        (
            Outbox {
                tx,
                pending: pending.clone(),
                queued: queued.clone(),
                deferred: deferred.clone(),
            },
            OutboxReceiver {
                rx,
                pending,
                queued,
                deferred,
            },
        )
    }

    /// Queues `frame` of about `size` bytes; returns the bytes now pending.
    pub(crate) fn send(&self, frame: Frame, size: usize) -> usize {
        let now = self.pending.fetch_add(size, Ordering::AcqRel) + size;
        // Counted before it is sent: a receiver that sees 0 finds the frame on its next
        // wait for one.
        self.queued.fetch_add(1, Ordering::AcqRel);
        if self.tx.send(frame).is_err() {
            self.pending.fetch_sub(size, Ordering::AcqRel);
            self.queued.fetch_sub(1, Ordering::AcqRel);
        }
        now
    }

    /// Queues `frame` of about `size` bytes to follow the reply of the command running now
    /// for this client (the connection sends it right after that reply).
    pub(crate) fn defer(&self, frame: Frame, size: usize) {
        if let Ok(mut frames) = self.deferred.frames.lock() {
            self.pending.fetch_add(size, Ordering::AcqRel);
            frames.push((frame, size));
            self.deferred.any.store(true, Ordering::Release);
        }
    }
}

/// The connection's end of its [`Outbox`].
#[derive(Debug)]
pub(crate) struct OutboxReceiver {
    rx: mpsc::UnboundedReceiver<Frame>,
    pending: Arc<AtomicUsize>,
    queued: Arc<AtomicUsize>,
    deferred: Arc<Deferred>,
}

impl OutboxReceiver {
    /// Waits for the next frame.
    pub(crate) async fn recv(&mut self) -> Option<Frame> {
        let frame = self.rx.recv().await;
        if frame.is_some() {
            self.queued.fetch_sub(1, Ordering::AcqRel);
        }
        frame
    }

    /// The next frame if one is queued: one load while none is.
    #[inline]
    pub(crate) fn try_recv(&mut self) -> Option<Frame> {
        if self.queued.load(Ordering::Acquire) == 0 {
            return None;
        }
        let frame = self.rx.try_recv().ok();
        if frame.is_some() {
            self.queued.fetch_sub(1, Ordering::AcqRel);
        }
        frame
    }

    /// Whether frames wait for the last reply ([`Outbox::defer`]): one load per reply.
    #[inline]
    pub(crate) fn has_deferred(&self) -> bool {
        self.deferred.any.load(Ordering::Acquire)
    }

    /// The frames deferred until the last reply ([`Outbox::defer`]), oldest first.
    pub(crate) fn take_deferred(&self) -> Vec<(Frame, usize)> {
        if !self.has_deferred() {
            return Vec::new();
        }
        self.deferred
            .frames
            .lock()
            .map(|mut frames| {
                self.deferred.any.store(false, Ordering::Release);
                std::mem::take(&mut *frames)
            })
            .unwrap_or_default()
    }

    /// Marks `size` bytes as written.
    pub(crate) fn written(&self, size: usize) {
        let _ = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                Some(p.saturating_sub(size))
            });
    }
}

/// Every connected client, by id (ordered, so `CLIENT LIST` is stable).
#[derive(Debug, Default)]
pub(crate) struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
}

impl ClientRegistry {
    /// Adds a client.
    pub(crate) fn insert(&self, handle: Arc<ClientHandle>) {
        if let Ok(mut map) = self.clients.lock() {
            map.insert(handle.id, handle);
        }
    }

    /// Removes a client.
    pub(crate) fn remove(&self, id: u64) {
        if let Ok(mut map) = self.clients.lock() {
            map.remove(&id);
        }
    }

    /// The client with `id`.
    pub(crate) fn get(&self, id: u64) -> Option<Arc<ClientHandle>> {
        self.clients.lock().ok()?.get(&id).cloned()
    }

    /// All clients, by id.
    pub(crate) fn all(&self) -> Vec<Arc<ClientHandle>> {
        self.clients
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }
}

/// State of one connection, owned by its task and lent to commands through `Ctx`.
#[derive(Debug)]
pub(crate) struct ClientState {
    /// The shared handle.
    pub(crate) handle: Arc<ClientHandle>,
    /// (db, RESP version, command) last written to the handle's `info`, which then needs no
    /// update (and no lock) while a client repeats one command.
    pub(crate) noted: Option<(usize, u8, u32)>,
    /// Selected database.
    pub(crate) db: usize,
    /// Protocol version (`HELLO`).
    pub(crate) resp: Version,
    /// Whether `AUTH` succeeded (or no password is required).
    pub(crate) authenticated: bool,
    /// The user the client acts as (`None`: the default user); see [`ClientState::set_user`].
    pub(crate) user: Option<Arc<crate::acl::User>>,
    /// Close the connection once the current replies are written (`QUIT`).
    pub(crate) close_after_reply: bool,
    /// Where the running command comes from: a script, `EXEC`, a blocked client served.
    pub(crate) origin: CallOrigin,
    /// Subscriptions of every kind (channels, patterns, shard channels); in RESP2 a client
    /// with any is in subscribed mode.
    pub(crate) subscriptions: usize,
    /// `MULTI` state: the queued commands, or `None` outside a transaction.
    pub(crate) multi: Option<crate::transaction::MultiState>,
    /// Set by a blocking command that found nothing: the connection blocks the client.
    pub(crate) block: Option<crate::blocking::BlockRequest>,
    /// `CLIENT REPLY`: which replies are sent.
    pub(crate) reply: ReplyMode,
    /// What the client asked of the server for itself: `CLIENT NO-EVICT`, `CLIENT NO-TOUCH`,
    /// `READONLY`.
    pub(crate) modes: ClientModes,
    /// The transaction ended while a script was busy (no state lock): its WATCHes are
    /// forgotten at the next command that takes the lock.
    pub(crate) unwatch_pending: bool,
    /// What the pipeline and `cmd::call` note about the command running now: its clock
    /// readings, the OOM state it started in, its error counted, its propagation.
    pub(crate) command: RunningCommand,
    /// A replica on this connection: `REPLCONF` options and the link `SYNC`/`PSYNC` registered.
    pub(crate) replica: ReplicaSide,
}

/// Where the command running for a client comes from, when not straight from its connection.
/// Both may hold at once (a script run by `EXEC`).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CallOrigin {
    /// The command runs inside a script (`redis.call`).
    pub(crate) in_script: bool,
    /// `EXEC` is running this client's queued commands (blocking commands must not block).
    pub(crate) in_exec: bool,
    /// The command is a blocked command run again to serve it: MONITOR saw it when it
    /// blocked and does not see it again (Redis serves a blocked client without `call()`).
    pub(crate) reprocessing: bool,
}

/// `CLIENT REPLY ON|OFF|SKIP`: which replies are sent.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReplyMode {
    /// `CLIENT REPLY OFF`: no replies until `CLIENT REPLY ON`.
    pub(crate) off: bool,
    /// The reply of the command running now is dropped (`CLIENT REPLY SKIP` drops its own
    /// reply and the next command's).
    pub(crate) skip: bool,
    /// `CLIENT REPLY SKIP`: drop the next command's reply.
    pub(crate) skip_next: bool,
}

impl ReplyMode {
    /// Whether the reply of the command that just ran is sent, and moves a pending `SKIP` on
    /// to the next command, as Redis's `resetClient` does.
    pub(crate) fn take_permission(&mut self) -> bool {
        let send = !(self.off || self.skip);
        self.skip = std::mem::take(&mut self.skip_next);
        send
    }
}

/// What a client asked of the server for itself (Redis's `CLIENT_NO_EVICT`,
/// `CLIENT_NO_TOUCH` and `CLIENT_READONLY` flags).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ClientModes {
    /// `CLIENT NO-EVICT ON`.
    pub(crate) no_evict: bool,
    /// `CLIENT NO-TOUCH ON`.
    pub(crate) no_touch: bool,
    /// `READONLY`: a cluster replica serves this client's reads of its master's slots (and,
    /// under Valkey's target, a replica does not redirect them).
    pub(crate) cluster_readonly: bool,
    /// `CLIENT CAPA redirect` (Valkey): a replica answers this client's data commands with
    /// `-REDIRECT` to its master.
    pub(crate) redirect: bool,
}

/// What the pipeline and `cmd::call` note about a client's running command.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RunningCommand {
    /// Memory was over `maxmemory` with nothing left to evict when the current command
    /// started (Redis's `pre_command_oom_state`): a script then may not start writing with a
    /// command that can grow memory.
    pub(crate) pre_command_oom: bool,
    /// The error reply being sent was already counted in `INFO errorstats` (a script's error
    /// raised by a command it ran, counted when that command failed).
    pub(crate) error_counted: bool,
    /// The running command asked that it not be replicated as sent
    /// ([`crate::cmd::Ctx::prevent_propagation`]).
    pub(crate) prevent_propagation: bool,
    /// The clock reading ([`crate::clock::Clock::tick_us`]) at which the command about to
    /// run started, when the pipeline read it already; taken by `cmd::call`.
    pub(crate) start_tick: Option<u64>,
    /// The clock reading at which the last command `cmd::call` timed for this client ended
    /// (`None` if it was not timed); the pipeline may start the next command of the same
    /// batch from it instead of reading the clock again.
    pub(crate) end_tick: Option<u64>,
    /// Under Valkey's command log: the bytes of the request being run as the client sent it
    /// (Valkey's `net_input_bytes_curr_cmd`), which the commands of its transaction or script
    /// are logged with too.
    pub(crate) request_bytes: u64,
    /// Under Valkey's command log: the bytes written to the client since its last command
    /// ended (Valkey's `net_output_bytes_curr_cmd`): messages that arrived in between, then
    /// the command's reply (a transaction's so far).
    pub(crate) reply_bytes: u64,
    /// How long the run that blocked the client took, in µs, when it was timed (Valkey logs
    /// a command that times out with it).
    pub(crate) blocked_call_us: Option<u64>,
}

/// A replica's side of its connection to this master.
#[derive(Debug, Default)]
pub(crate) struct ReplicaSide {
    /// `REPLCONF listening-port`: the port the replica on this connection listens on.
    pub(crate) listening_port: Option<u16>,
    /// `REPLCONF rdb-only 1`: a `SYNC` sends the dataset only (`redis-cli --rdb`).
    pub(crate) rdb_only: bool,
    /// The replica link `SYNC`/`PSYNC` registered, for the connection to run.
    pub(crate) handoff: Option<Box<crate::replication::serve::Handoff>>,
}

impl ClientState {
    /// State for a new connection.
    pub(crate) fn new(handle: Arc<ClientHandle>, authenticated: bool) -> Self {
        ClientState {
            handle,
            noted: None,
            db: 0,
            resp: Version::Resp2,
            authenticated,
            user: None,
            close_after_reply: false,
            origin: CallOrigin::default(),
            subscriptions: 0,
            multi: None,
            block: None,
            reply: ReplyMode::default(),
            modes: ClientModes::default(),
            unwatch_pending: false,
            command: RunningCommand::default(),
            replica: ReplicaSide::default(),
        }
    }

    /// Whether the reply of the command that just ran is sent (`CLIENT REPLY OFF|SKIP`), and
    /// moves a pending `SKIP` on to the next command, as Redis's `resetClient` does.
    pub(crate) fn take_reply_permission(&mut self) -> bool {
        self.reply.take_permission()
    }

    /// Under Valkey's command log: counts `frame` among the bytes written to the client for
    /// its current command ([`RunningCommand::reply_bytes`]), unless `CLIENT REPLY OFF|SKIP`
    /// drops it (Valkey counts what it writes).
    pub(crate) fn count_reply_bytes(&mut self, frame: &Frame) {
        if !(self.reply.off || self.reply.skip) {
            self.command.reply_bytes += locksmith_resp::encoded_len(frame, self.resp) as u64;
        }
    }

    /// [`ClientState::count_reply_bytes`] of `len` bytes written.
    pub(crate) fn count_reply_len(&mut self, len: usize) {
        if !(self.reply.off || self.reply.skip) {
            self.command.reply_bytes += len as u64;
        }
    }

    /// `RESET`: back to a fresh connection's state (db 0, RESP2, no name, replies on,
    /// authenticated only if no password is required). Subsystems that keep per-connection
    /// state here (MULTI, subscriptions, tracking) reset theirs in this method too.
    pub(crate) fn reset(&mut self, authenticated: bool) {
        self.set_user(None);
        self.db = 0;
        self.resp = Version::Resp2;
        self.authenticated = authenticated;
        self.reply = ReplyMode::default();
        // The capabilities a client declared describe the library behind the connection
        // and stay (Valkey's `clearClientConnectionState` keeps `capa`).
        self.modes = ClientModes {
            redirect: self.modes.redirect,
            ..ClientModes::default()
        };
        self.subscriptions = 0;
        self.multi = None;
        self.origin.in_exec = false;
        self.block = None;
        self.noted = None;
        let unix = self.handle.unix.is_some();
        self.handle.update(|info| {
            info.name = None;
            info.db = 0;
            info.resp = 2;
            info.sub = 0;
            info.psub = 0;
            info.ssub = 0;
            info.multi = -1;
            info.flags = "N".into();
            // RESET keeps what the connection is: a Unix socket's client stays `U`.
            info.set_flag('U', unix);
        });
    }

    /// The client id.
    pub(crate) fn id(&self) -> u64 {
        self.handle.id
    }

    /// Makes the client act as `user` (`None`: the default user), also as `CLIENT LIST`
    /// shows it.
    pub(crate) fn set_user(&mut self, user: Option<Arc<crate::acl::User>>) {
        self.handle.update(|info| info.user = user.clone());
        self.user = user;
    }
}

#[cfg(test)]
impl ClientState {
    /// An authenticated client with `id` on a loopback address, for unit tests that run
    /// commands without a socket (its outbox receiver is dropped).
    pub(crate) fn for_tests(id: u64) -> ClientState {
        let addr = SocketAddr::from(([127, 0, 0, 1], 1));
        let (outbox, _rx) = Outbox::new();
        let handle = Arc::new(ClientHandle {
            id,
            addr,
            laddr: addr,
            unix: None,
            created_ms: 0,
            info: Default::default(),
            last_interaction_ms: Default::default(),
            outbox,
            killed: Default::default(),
            kill_notify: Default::default(),
            net_in: Default::default(),
            net_out: Default::default(),
            commands: Default::default(),
        });
        ClientState::new(handle, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_keep_redis_order_and_fall_back_to_n() {
        let mut info = ClientInfo {
            flags: "N".into(),
            ..Default::default()
        };
        info.set_flag('x', true);
        info.set_flag('P', true);
        assert_eq!(info.flags, "Px");
        info.set_flag('P', false);
        info.set_flag('x', false);
        assert_eq!(info.flags, "N");
    }
}
