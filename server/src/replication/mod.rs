//! Replication: a master's stream of write effects to its replicas, the offsets `WAIT` counts,
//! and the `ROLE`, `WAIT` and `REPLICAOF` commands.
//!
//! Every write a node executes leaves `(db, argv)` entries in [`Effects::propagate`] (commands
//! as executed, scripts as the writes they made, relative expiries as absolute ones, expiries as
//! `DEL`). [`feed`] appends them, under the state lock and in execution order, to the master's
//! stream: each entry advances `master_repl_offset` by its RESP-encoded length (a `SELECT` is
//! emitted when the database changes), as Redis counts its backlog, and the batch goes to every
//! replica link. A link ([`run_link`]) applies its delay, jitter or stall on tokio's clock, then
//! executes the batch on the replica's state as the master's client (the only client a replica
//! accepts writes from) and acknowledges the offset. `WAIT` answers from those acknowledgements.
//! A node's journal ([`crate::journal`]), when one runs, records the same entries (those it
//! applies, on a replica) and the dataset each full synchronisation installs.
//!
//! Replicas over the network speak Redis's protocol: [`serve`] is the master's side of a
//! connection that sent `SYNC`/`PSYNC` (the RDB, then the stream, from the [`backlog`] when
//! the replica continues), [`follow`] the replica's side after `REPLICAOF host port`.

pub(crate) mod backlog;
pub(crate) mod follow;
pub(crate) mod serve;

use crate::client::{ClientHandle, ClientInfo, ClientState, Outbox};
use crate::config::runtime::{ClientClass, OutputLimit, RuntimeConfig};
use crate::journal::{Journal, Snapshot};
use crate::node::{Effects, Node};
use backlog::Backlog;
use bytes::{Bytes, BytesMut};
use locksmith_resp::Frame;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Client id of the pseudo-client a replica executes its master's stream as.
pub(crate) const MASTER_CLIENT_ID: u64 = u64::MAX;

/// What a replica answers a normal client's write.
pub(crate) const READONLY_ERROR: &str = "READONLY You can't write against a read only replica.";

/// What a replica answers while its link is down under `replica-serve-stale-data no`.
pub(crate) const MASTERDOWN_ERROR: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// A node's replication role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Role {
    /// Accepts writes and feeds its replicas.
    Master,
    /// Applies the stream of the master at this (advertised) address; read-only for clients.
    Replica {
        /// The master's advertised address.
        master: SocketAddr,
    },
}

/// One batch of the stream: the commands one atomic unit (a command, `EXEC` or script) wrote.
#[derive(Debug)]
pub(crate) struct Batch {
    commands: Arc<Vec<Vec<Bytes>>>,
    /// The same commands as the stream's bytes (RESP arrays of bulk strings).
    bytes: Bytes,
    end_offset: u64,
    sent_at: Instant,
}

/// The master's end of one replica link.
#[derive(Debug)]
struct Feed {
    link: u64,
    addr: SocketAddr,
    tx: mpsc::UnboundedSender<Batch>,
    ack: Arc<AtomicU64>,
    /// Set when the master drops the link for its output buffer limit: the replica discards
    /// what is in flight and synchronises again, as a Redis replica reconnects.
    cut: Arc<AtomicBool>,
    /// Since when the stream not yet applied is over the soft limit.
    soft_since: Option<Instant>,
    /// The link's delivery settings: a stalled link, or one slower than
    /// `min-replicas-max-lag`, does not count as a good replica.
    ctl: Arc<LinkControl>,
    /// A replica connected over the network: its acknowledgements and synchronisation.
    remote: Option<Arc<Remote>>,
}

/// What a master knows of a replica connected over the network beyond its offset.
#[derive(Debug)]
pub(crate) struct Remote {
    /// When (node-clock ms) it last acknowledged.
    pub(crate) acked_at: AtomicU64,
    /// Where its synchronisation is: [`Remote::WAIT_BGSAVE`], [`Remote::SEND_BULK`] or
    /// [`Remote::ONLINE`].
    pub(crate) phase: std::sync::atomic::AtomicU8,
}

impl Remote {
    /// The dataset is being serialised.
    pub(crate) const WAIT_BGSAVE: u8 = 0;
    /// The dataset is being sent.
    pub(crate) const SEND_BULK: u8 = 1;
    /// The stream flows.
    pub(crate) const ONLINE: u8 = 2;

    /// The phase as `INFO`'s `state=` names it.
    fn state_name(&self) -> &'static str {
        match self.phase.load(Ordering::Acquire) {
            Self::WAIT_BGSAVE => "wait_bgsave",
            Self::SEND_BULK => "send_bulk",
            _ => "online",
        }
    }
}

impl Feed {
    /// Seconds the replica is behind: a link's delay, or since a network replica's last
    /// acknowledgement (Redis's `lag`, which a Redis replica refreshes every second).
    fn lag_seconds(&self, now_ms: u64) -> u64 {
        match &self.remote {
            Some(r) => now_ms.saturating_sub(r.acked_at.load(Ordering::Acquire)) / 1000,
            None => self.ctl.lag_seconds(),
        }
    }
}

/// Replication state of one node, kept in [`crate::node::State`].
#[derive(Debug)]
pub(crate) struct ReplState {
    role: Role,
    replid: String,
    /// `master_repl_offset` (master) or the applied offset (replica).
    offset: u64,
    /// `offset`, readable without the state lock.
    mirror: Arc<AtomicU64>,
    /// Whether the node is a replica, readable without the state lock.
    replica_mirror: Arc<AtomicBool>,
    /// The previous replication id after a promotion, and the first offset it does not
    /// cover (Redis's `replid2` and `second_replid_offset`): replicas of the old master may
    /// continue from it.
    replid2: Option<(String, u64)>,
    /// The backlog, once a replica attached (Redis only counts offsets from then on).
    backlog: Option<Backlog>,
    /// The link to the master over the network, on a replica made by `REPLICAOF host port`.
    pub(crate) upstream: Option<follow::Upstream>,
    /// The database the stream last selected.
    stream_db: Option<usize>,
    /// When the stream last carried a `PING` (or no network replica was attached).
    last_ping_ms: u64,
    feeds: Vec<Feed>,
    /// Replica links dropped for their output buffer limit (part of Valkey's
    /// `client_output_buffer_limit_disconnections`; `CONFIG RESETSTAT` clears it).
    pub(crate) output_limit_disconnections: u64,
    /// Bumped on every acknowledgement, so `WAIT` can sleep until one arrives.
    acked: Arc<watch::Sender<u64>>,
    rng: StdRng,
    /// The journal of the node's writes, the stream's other reader, when the embedder started
    /// one ([`crate::control::NodeControl::start_journal`]).
    journal: Option<Journal>,
    /// The embedder's observer of the node's writes, when one is installed
    /// ([`crate::control::NodeControl::set_observer`]).
    observer: Option<Arc<dyn crate::observe::WriteObserver>>,
}

impl ReplState {
    /// A standalone master.
    pub(crate) fn new(seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x7e91_1ca7);
        ReplState {
            role: Role::Master,
            replid: random_id(&mut rng),
            offset: 0,
            mirror: Arc::new(AtomicU64::new(0)),
            replica_mirror: Arc::new(AtomicBool::new(false)),
            replid2: None,
            backlog: None,
            upstream: None,
            stream_db: None,
            last_ping_ms: 0,
            feeds: Vec::new(),
            output_limit_disconnections: 0,
            acked: Arc::new(watch::channel(0).0),
            rng,
            journal: None,
            observer: None,
        }
    }

    /// The node's role.
    pub(crate) fn role(&self) -> &Role {
        &self.role
    }

    /// `master_repl_offset` (master) or the applied offset (replica).
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Each attached replica's advertised address and acknowledged offset.
    pub(crate) fn replica_acks(&self) -> impl Iterator<Item = (SocketAddr, &Arc<AtomicU64>)> {
        self.feeds.iter().map(|f| (f.addr, &f.ack))
    }

    /// Replicas that count for `min-replicas-to-write`: their link delivers (not stalled, not
    /// dropped) with a lag of at most `max_lag` seconds. A Redis replica acknowledges every
    /// second, so its lag is the link's delay; ours acknowledges each batch it applies.
    pub(crate) fn good_replicas(&self, max_lag: u64, now_ms: u64) -> usize {
        self.feeds
            .iter()
            .filter(|f| {
                !f.cut.load(Ordering::Acquire)
                    && !f.ctl.is_blocked()
                    && f.lag_seconds(now_ms) <= max_lag
            })
            .count()
    }

    /// Changes on every acknowledgement (for `WAIT`).
    pub(crate) fn ack_changes(&self) -> watch::Receiver<u64> {
        self.acked.subscribe()
    }

    /// Whether the node is a replica.
    pub(crate) fn is_replica(&self) -> bool {
        matches!(self.role, Role::Replica { .. })
    }

    /// The offset, readable without the state lock.
    pub(crate) fn offset_mirror(&self) -> Arc<AtomicU64> {
        self.mirror.clone()
    }

    /// Whether a replication backlog exists (a replica attached once, or the node is a
    /// replica): only then does [`feed`] consume write effects.
    pub(crate) fn has_backlog(&self) -> bool {
        self.backlog.is_some()
    }

    /// Whether anything reads the node's write effects: a replication backlog (see
    /// [`ReplState::has_backlog`]), a journal or an observer.
    pub(crate) fn records_writes(&self) -> bool {
        self.backlog.is_some() || self.journal.is_some() || self.observer.is_some()
    }

    /// The observer of the node's writes, if one is installed.
    pub(crate) fn observer(&self) -> Option<&Arc<dyn crate::observe::WriteObserver>> {
        self.observer.as_ref()
    }

    /// Installs (or with `None` removes) the observer of the node's writes.
    pub(crate) fn set_observer(
        &mut self,
        observer: Option<Arc<dyn crate::observe::WriteObserver>>,
    ) {
        self.observer = observer;
    }

    /// The node's journal, if one runs.
    pub(crate) fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    /// Installs `journal` as the node's journal; returns the one it replaces.
    pub(crate) fn set_journal(&mut self, journal: Journal) -> Option<Journal> {
        self.journal.replace(journal)
    }

    /// Whether a write from `client` must be refused (`READONLY`): on a read-only replica
    /// (`replica-read-only`), from anyone but the master's stream.
    pub(crate) fn refuses_write_from(&self, client: &ClientState, config: &RuntimeConfig) -> bool {
        self.is_replica() && client.id() != MASTER_CLIENT_ID && config.replica_read_only()
    }

    /// Whether a command not flagged `stale` must be refused (`MASTERDOWN`): on a replica
    /// whose link to its master over the network is down, under
    /// `replica-serve-stale-data no`.
    pub(crate) fn refuses_stale(&self, client: &ClientState, config: &RuntimeConfig) -> bool {
        client.id() != MASTER_CLIENT_ID
            && !config.replica_serve_stale_data()
            && self.upstream.as_ref().is_some_and(|u| !u.is_up())
    }

    fn set_role(&mut self, role: Role) {
        self.replica_mirror
            .store(matches!(role, Role::Replica { .. }), Ordering::Release);
        self.role = role;
    }

    /// Whether the node is a replica, readable without the state lock (the pipeline's
    /// replica rules are skipped on a master without taking it).
    pub(crate) fn replica_mirror(&self) -> Arc<AtomicBool> {
        self.replica_mirror.clone()
    }

    fn set_offset(&mut self, offset: u64) {
        self.offset = offset;
        self.mirror.store(offset, Ordering::Release);
    }

    /// Makes the node a replica of `master` whose stream is at `offset` with id `replid`; the
    /// caller installs the master's dataset in the same critical section.
    pub(crate) fn become_replica(&mut self, master: SocketAddr, offset: u64, replid: String) {
        self.set_role(Role::Replica { master });
        self.replid = replid;
        self.replid2 = None;
        self.feeds.clear();
        self.stream_db = None;
        self.backlog = Some(Backlog::new(offset, usize::MAX));
        self.set_offset(offset);
    }

    /// Makes the node a replica of `master` over the network (`REPLICAOF host port`): writes
    /// are refused from now on, and its own replicas are dropped (they synchronise again);
    /// the data, id and offset stay until the master's dataset replaces them.
    pub(crate) fn follow(&mut self, master: SocketAddr) {
        self.set_role(Role::Replica { master });
        for f in &self.feeds {
            f.cut.store(true, Ordering::Release);
        }
        self.feeds.clear();
        self.stream_db = None;
    }

    /// Continues as a replica of `master` after a partial resync: the data and offset stay,
    /// the master's id may be new (it was promoted meanwhile).
    pub(crate) fn continue_replica(&mut self, master: SocketAddr, replid: String) {
        if self.replid != replid {
            let old = std::mem::replace(&mut self.replid, replid);
            self.replid2 = Some((old, self.offset + 1));
        }
        self.set_role(Role::Replica { master });
        self.feeds.clear();
        self.stream_db = None;
    }

    /// The stream a replica applied from its master (over the network, or a harness link's
    /// batch): the bytes go to the backlog (so the node can serve its own replicas' `PSYNC`,
    /// now or once promoted), advance the offset, and go on as they are to the node's own
    /// replicas (chained replication: the same stream, ids and offsets as the master's).
    pub(crate) fn applied(&mut self, bytes: Bytes, config: &RuntimeConfig) {
        let size = config.repl_backlog_size();
        let offset = self.offset;
        self.backlog
            .get_or_insert_with(|| Backlog::new(offset, size))
            .append(&bytes, size);
        let end = offset + bytes.len() as u64;
        self.set_offset(end);
        if !self.feeds.is_empty() {
            let sent_at = Instant::now();
            self.feeds.retain(|f| {
                f.tx.send(Batch {
                    commands: Arc::default(),
                    bytes: bytes.clone(),
                    end_offset: end,
                    sent_at,
                })
                .is_ok()
            });
        }
    }

    /// The replication id and offset a replica asks its master to continue from
    /// (`PSYNC replid offset+1`), if it has a dataset it synchronised.
    pub(crate) fn psync_position(&self) -> Option<(String, u64)> {
        self.backlog
            .as_ref()
            .map(|_| (self.replid.clone(), self.offset + 1))
    }

    /// The stream from byte `from` to the end, if a replica asking `PSYNC replid from` can
    /// continue (Redis's `masterTryPartialResynchronization`): `replid` is this node's id,
    /// or its previous one and `from` lies within what that id covered, and the backlog
    /// still holds `from`.
    pub(crate) fn continuation(&self, replid: &[u8], from: u64) -> Option<Vec<u8>> {
        let known = replid == self.replid.as_bytes()
            || self
                .replid2
                .as_ref()
                .is_some_and(|(id, until)| replid == id.as_bytes() && from <= *until);
        if !known {
            return None;
        }
        self.backlog.as_ref()?.since(from)
    }

    /// A replica connects over the network at `now_ms`: the first of them starts the
    /// `repl-ping-replica-period` count.
    pub(crate) fn network_replica_attaching(&mut self, now_ms: u64) {
        if !has_network_replicas(self) {
            self.last_ping_ms = now_ms;
        }
    }

    /// The replication id.
    pub(crate) fn replid(&self) -> &str {
        &self.replid
    }

    /// Makes the node a master (after `REPLICAOF NO ONE` or a promotion): a new replication id,
    /// the offset carried on, as Redis's PSYNC2 does.
    pub(crate) fn become_master(&mut self) {
        if self.is_replica() {
            self.set_role(Role::Master);
            let old = std::mem::replace(&mut self.replid, random_id(&mut self.rng));
            self.replid2 = Some((old, self.offset + 1));
            self.stream_db = None;
        }
    }

    /// Registers a replica link fed from now on; returns (offset, replid, ack notifier).
    fn add_feed(
        &mut self,
        feed: Feed,
        config: &RuntimeConfig,
    ) -> (u64, String, Arc<watch::Sender<u64>>) {
        feed.ack.store(self.offset, Ordering::Release);
        self.feeds.push(feed);
        let offset = self.offset;
        self.backlog
            .get_or_insert_with(|| Backlog::new(offset, config.repl_backlog_size()));
        // The next write selects its database again, as Redis resets `slaveseldb`.
        self.stream_db = None;
        (self.offset, self.replid.clone(), self.acked.clone())
    }

    /// Forgets the link `link` (its replica died, was re-pointed or the link was cut).
    pub(crate) fn remove_feed(&mut self, link: u64) {
        self.feeds.retain(|f| f.link != link);
    }
}

fn random_id(rng: &mut StdRng) -> String {
    (0..40)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}

/// Appends the write effects of one atomic unit to the master's stream and sends them to every
/// replica link. Called from [`crate::node::State::finish_effects`] under the state lock, so
/// the stream order is the execution order. Replicas ignore their own effects: their offset is
/// the master's, set when a batch is applied. A replica whose unapplied stream passes
/// `client-output-buffer-limit replica` in `config` is dropped.
pub(crate) fn feed(
    repl: &mut ReplState,
    propagate: &[(usize, Vec<Bytes>)],
    config: &RuntimeConfig,
) {
    if propagate.is_empty() || repl.is_replica() || repl.backlog.is_none() {
        return;
    }
    let mut commands = Vec::with_capacity(propagate.len() + 1);
    for (db, argv) in propagate {
        if repl.stream_db != Some(*db) {
            commands.push(vec![
                Bytes::from_static(b"SELECT"),
                Bytes::from(db.to_string()),
            ]);
            repl.stream_db = Some(*db);
        }
        commands.push(argv.clone());
    }
    send(repl, commands, config);
}

/// Appends a command that belongs to no database (`PING`, `REPLCONF GETACK`) to the stream.
fn feed_unselected(repl: &mut ReplState, argv: &[&'static [u8]], config: &RuntimeConfig) {
    if repl.is_replica() || repl.backlog.is_none() {
        return;
    }
    let argv = argv.iter().map(|a| Bytes::from_static(a)).collect();
    send(repl, vec![argv], config);
}

/// Appends `commands` to the stream and the backlog, and sends them to every replica link,
/// dropping a link past `client-output-buffer-limit replica`.
fn send(repl: &mut ReplState, commands: Vec<Vec<Bytes>>, config: &RuntimeConfig) {
    let mut bytes = BytesMut::new();
    for argv in &commands {
        locksmith_resp::encode_command(argv, &mut bytes);
    }
    let bytes = bytes.freeze();
    let offset = repl.offset + bytes.len() as u64;
    if let Some(backlog) = &mut repl.backlog {
        backlog.append(&bytes, config.repl_backlog_size());
    }
    repl.set_offset(offset);
    let limit = config.output_limit(ClientClass::Replica);
    let commands = Arc::new(commands);
    let sent_at = Instant::now();
    let mut dropped = 0;
    repl.feeds.retain_mut(|f| {
        if over_output_limit(f, offset, limit, sent_at) {
            dropped += 1;
            tracing::warn!(
                replica = %f.addr,
                pending = offset.saturating_sub(f.ack.load(Ordering::Acquire)),
                "Client addr={} flags=S scheduled to be closed ASAP for overcoming of output \
                 buffer limits.",
                f.addr
            );
            f.cut.store(true, Ordering::Release);
            return false;
        }
        f.tx.send(Batch {
            commands: commands.clone(),
            bytes: bytes.clone(),
            end_offset: offset,
            sent_at,
        })
        .is_ok()
    });
    repl.output_limit_disconnections += dropped;
}

/// Whether a replica connected over the network is attached (it needs `PING`s and
/// `REPLCONF GETACK`s in the stream; a harness link does not).
fn has_network_replicas(repl: &ReplState) -> bool {
    repl.feeds.iter().any(|f| f.remote.is_some())
}

/// Asks the replicas connected over the network to acknowledge their offset at once
/// (`REPLCONF GETACK *` in the stream, as Redis sends it for a waiting `WAIT`).
pub(crate) fn request_acks(repl: &mut ReplState, config: &RuntimeConfig) {
    if has_network_replicas(repl) {
        feed_unselected(repl, &[b"REPLCONF", b"GETACK", b"*"], config);
    }
}

/// The master's periodic work: a `PING` in the stream every `repl-ping-replica-period`
/// seconds while replicas are connected over the network (a Redis replica drops a link
/// silent for `repl-timeout`).
pub(crate) fn cron(repl: &mut ReplState, config: &RuntimeConfig, now_ms: u64) {
    if !has_network_replicas(repl) {
        repl.last_ping_ms = now_ms;
        return;
    }
    if now_ms.saturating_sub(repl.last_ping_ms) >= config.repl_ping_replica_period() * 1000 {
        repl.last_ping_ms = now_ms;
        feed_unselected(repl, &[b"PING"], config);
    }
}

/// Whether the stream `f` has not applied yet, up to `offset`, is past the replica output
/// buffer limit: the hard one, or the soft one for longer than its seconds (Redis's
/// `checkClientOutputBufferLimits`).
fn over_output_limit(f: &mut Feed, offset: u64, limit: OutputLimit, now: Instant) -> bool {
    let pending = offset.saturating_sub(f.ack.load(Ordering::Acquire));
    if limit.hard_bytes > 0 && pending >= limit.hard_bytes {
        return true;
    }
    if limit.soft_bytes > 0 && pending >= limit.soft_bytes {
        let since = *f.soft_since.get_or_insert(now);
        return now.duration_since(since) > Duration::from_secs(limit.soft_seconds);
    }
    f.soft_since = None;
    false
}

/// Delay, jitter and stall of one replica link, changed at run time by whoever attached it
/// ([`crate::control::NodeControl::attach_replica`]).
#[derive(Debug)]
pub struct LinkControl {
    delay_ms: AtomicU64,
    jitter_ms: AtomicU64,
    /// Stalled or partitioned: nothing is delivered until it is false again.
    blocked: watch::Sender<bool>,
}

impl LinkControl {
    /// A link delivering after `delay` plus up to `jitter`.
    pub fn new(delay: Duration, jitter: Duration, blocked: bool) -> Self {
        LinkControl {
            delay_ms: AtomicU64::new(delay.as_millis() as u64),
            jitter_ms: AtomicU64::new(jitter.as_millis() as u64),
            blocked: watch::channel(blocked).0,
        }
    }

    /// Sets the delay and jitter for batches not yet delivered.
    pub fn set_delay(&self, delay: Duration, jitter: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::Relaxed);
        self.jitter_ms
            .store(jitter.as_millis() as u64, Ordering::Relaxed);
    }

    /// Stops (true) or resumes (false) delivery.
    pub fn set_blocked(&self, blocked: bool) {
        self.blocked.send_if_modified(|b| {
            let changed = *b != blocked;
            *b = blocked;
            changed
        });
    }

    /// Whether delivery is stopped.
    pub fn is_blocked(&self) -> bool {
        *self.blocked.borrow()
    }

    /// Seconds a batch takes to arrive (the delay, rounded down), as `INFO`'s `lag=`.
    pub(crate) fn lag_seconds(&self) -> u64 {
        self.delay_ms.load(Ordering::Relaxed) / 1000
    }
}

/// A replica link started by [`crate::control::NodeControl::attach_replica`]: the task that applies the
/// master's stream on the replica. Dropping it leaves the link running; [`ReplicaLink::abort`]
/// stops delivery.
#[derive(Debug)]
pub struct ReplicaLink {
    /// The id the master knows the link by ([`crate::control::NodeControl::drop_replica`]).
    pub id: u64,
    pub(crate) task: tokio::task::JoinHandle<()>,
}

impl ReplicaLink {
    /// Stops delivering the master's stream (what was in flight is lost).
    pub fn abort(&self) {
        self.task.abort();
    }
}

static NEXT_LINK: AtomicU64 = AtomicU64::new(1);

/// Attaches `replica` (advertised as `replica_addr`) to `master` (advertised as `master_addr`):
/// a full synchronisation (the replica's data is replaced by a copy of the master's, taken
/// atomically with registering the feed), then a task that applies the stream through `ctl`.
pub(crate) async fn attach(
    master: &Arc<Node>,
    master_addr: SocketAddr,
    replica: &Arc<Node>,
    replica_addr: SocketAddr,
    ctl: Arc<LinkControl>,
    seed: u64,
) -> ReplicaLink {
    let id = NEXT_LINK.fetch_add(1, Ordering::Relaxed);
    let ends = Ends {
        master: Arc::downgrade(master),
        master_addr,
        replica: replica.clone(),
        replica_addr,
        id,
        ack: Arc::new(AtomicU64::new(0)),
    };
    let stream = ends.full_sync(master, &ctl).await;
    let task = tokio::spawn(run_link(ends, stream, ctl, StdRng::seed_from_u64(seed)));
    ReplicaLink { id, task }
}

/// Both ends of one link, for the full synchronisations it makes.
struct Ends {
    /// Weak, so a link never keeps a killed master alive.
    master: std::sync::Weak<Node>,
    master_addr: SocketAddr,
    replica: Arc<Node>,
    replica_addr: SocketAddr,
    id: u64,
    /// The replica's applied offset, as the master reads it.
    ack: Arc<AtomicU64>,
}

/// What a full synchronisation hands the link task: the stream that follows the snapshot,
/// the flag the master raises when it drops the link, and the acknowledgement notifier.
struct Stream {
    rx: mpsc::UnboundedReceiver<Batch>,
    cut: Arc<AtomicBool>,
    acked: Arc<watch::Sender<u64>>,
}

impl Ends {
    /// A full synchronisation: the master's data is copied and the feed registered in one
    /// critical section, then the replica's data is replaced by the copy.
    async fn full_sync(&self, master: &Node, ctl: &Arc<LinkControl>) -> Stream {
        let (tx, rx) = mpsc::unbounded_channel();
        let cut = Arc::new(AtomicBool::new(false));
        let (snapshot, functions, offset, replid, acked) = {
            let mut state = master.state.lock().await;
            state.stats.sync_full += 1;
            let snapshot = state.dbs.clone();
            // Function libraries travel as Redis sends them in its RDB: their code.
            let functions = state.functions.dump(false);
            let config = state.config.clone();
            let (offset, replid, acked) = state.repl.add_feed(
                Feed {
                    link: self.id,
                    addr: self.replica_addr,
                    tx,
                    ack: self.ack.clone(),
                    cut: cut.clone(),
                    soft_since: None,
                    ctl: ctl.clone(),
                    remote: None,
                },
                &config,
            );
            (snapshot, functions, offset, replid, acked)
        };
        {
            let mut state = self.replica.state.lock().await;
            state.dbs = snapshot;
            let kill = self.replica.script.kill.clone();
            let exists = self.replica.commands.exists;
            let lua = state.config.lua();
            let make = move || {
                crate::script::Engine::new_functions(kill, exists, lua).map_err(|e| e.to_string())
            };
            let policy = crate::script::RestorePolicy::Flush;
            if let Err(e) = state.functions.restore(&functions, u16::MAX, policy, make) {
                tracing::warn!(error = %e, "replica could not load its master's functions");
            }
            state.repl.become_replica(self.master_addr, offset, replid);
            // The replica's disk now holds the master's dataset (Redis saves the RDB it
            // received before loading it).
            if let Some(journal) = state.repl.journal() {
                journal.reset(Snapshot {
                    dbs: state.dbs.clone(),
                    functions: state.functions.dump(false),
                });
            }
        }
        Stream { rx, cut, acked }
    }
}

/// The pseudo-client a replica executes its master's stream as (and a recovering node its
/// journal).
pub(crate) fn master_client(node: &Node) -> ClientState {
    let (outbox, _) = Outbox::new();
    let handle = Arc::new(ClientHandle {
        id: MASTER_CLIENT_ID,
        addr: node.addr,
        laddr: node.addr,
        unix: None,
        created_ms: node.clock.now_ms(),
        info: std::sync::Mutex::new(ClientInfo {
            flags: "M".into(),
            multi: -1,
            resp: 2,
            ..Default::default()
        }),
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

/// Delivers batches in order, each no earlier than its send time plus the link's delay and a
/// seeded jitter, never while the link is blocked; applies each atomically on the replica and
/// acknowledges its offset. When the master drops the link (output buffer limit), what is in
/// flight is discarded and, once the link delivers again, the replica synchronises in full.
async fn run_link(ends: Ends, mut stream: Stream, ctl: Arc<LinkControl>, mut rng: StdRng) {
    let replica = ends.replica.clone();
    let mut client = master_client(&replica);
    let mut blocked = ctl.blocked.subscribe();
    let mut last = Instant::now();
    loop {
        let batch = match stream.rx.recv().await {
            Some(batch) if !stream.cut.load(Ordering::Acquire) => batch,
            // The master went away (killed): the harness re-points this replica.
            None if !stream.cut.load(Ordering::Acquire) => return,
            _ => {
                if blocked.wait_for(|b| !*b).await.is_err() {
                    return;
                }
                let Some(master) = ends.master.upgrade() else {
                    return;
                };
                tracing::info!(replica = %ends.replica_addr, "full resync after the master dropped the link");
                stream = ends.full_sync(&master, &ctl).await;
                client = master_client(&replica);
                continue;
            }
        };
        let jitter = ctl.jitter_ms.load(Ordering::Relaxed);
        let extra = if jitter > 0 {
            rng.random_range(0..=jitter)
        } else {
            0
        };
        let delay = ctl.delay_ms.load(Ordering::Relaxed) + extra;
        // FIFO: a batch never overtakes the one before it, whatever its jitter.
        let at = (batch.sent_at + Duration::from_millis(delay)).max(last);
        tokio::time::sleep_until(at).await;
        last = at;
        if blocked.wait_for(|b| !*b).await.is_err() {
            return;
        }
        if stream.cut.load(Ordering::Acquire) {
            continue;
        }
        {
            let mut state = replica.state.lock().await;
            let mut effects = Effects::default();
            let now = replica.clock.now_ms();
            for argv in batch.commands.iter() {
                let reply = (replica.commands.call_argv)(
                    &mut state,
                    &replica,
                    &mut client,
                    argv,
                    now,
                    &mut effects,
                );
                if let Frame::Error(e) = reply {
                    tracing::warn!(error = %String::from_utf8_lossy(&e), "replica failed to apply a command");
                }
            }
            let config = state.config.clone();
            state.repl.applied(batch.bytes.clone(), &config);
            // The replica's offset is the master's: the batches continue the stream from the
            // offset of the full synchronisation.
            debug_assert_eq!(state.repl.offset(), batch.end_offset);
            state.finish_effects(&replica, &mut effects);
        }
        ends.ack.store(batch.end_offset, Ordering::Release);
        stream.acked.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// The fields of `INFO`'s `# Replication` section (the header is the caller's), from the
/// node's real role and offsets; `now_ms` is the node's clock.
pub(crate) fn replication_info(
    repl: &ReplState,
    now_ms: u64,
    backlog_size: usize,
    profile: &crate::compat::Profile,
) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let offset = repl.offset;
    match &repl.role {
        Role::Master => {}
        Role::Replica { master } => {
            let link = repl.upstream.as_ref().map(|u| u.status(now_ms));
            let (host, up, io_ago, syncing) = match &link {
                Some(l) => (l.host.clone(), l.up, l.last_io_seconds_ago, l.syncing),
                None => (master.ip().to_string(), true, 0, false),
            };
            let _ = write!(
                s,
                "role:slave\r\nmaster_host:{host}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\n\
                 master_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\n\
                 slave_read_repl_offset:{offset}\r\nslave_repl_offset:{offset}\r\n",
                master.port(),
                if up { "up" } else { "down" },
                if up { io_ago } else { -1 },
                u8::from(syncing),
            );
            if let Some(l) = link.as_ref().filter(|l| l.syncing) {
                // As Redis's replicationInfo while a payload arrives (its size -1 when it
                // ends with a mark, and the percentage then taken over -1 as Redis takes it).
                let (total, read) = l.transfer;
                let read_signed = i64::try_from(read).unwrap_or(i64::MAX);
                let perc = if total != 0 {
                    read as f64 / total as f64 * 100.0
                } else {
                    0.0
                };
                let _ = write!(
                    s,
                    "master_sync_total_bytes:{total}\r\nmaster_sync_read_bytes:{read}\r\n\
                     master_sync_left_bytes:{}\r\nmaster_sync_perc:{perc:.2}\r\n\
                     master_sync_last_io_seconds_ago:{}\r\n",
                    total.saturating_sub(read_signed),
                    l.last_io_seconds_ago,
                );
            }
            if let Some(l) = &link {
                if !up {
                    let _ = write!(
                        s,
                        "master_link_down_since_seconds:{}\r\n",
                        l.down_since_seconds
                    );
                }
            }
            s.push_str("slave_priority:100\r\nslave_read_only:1\r\nreplica_announced:1\r\n");
        }
    }
    if let Role::Master = repl.role {
        s.push_str("role:master\r\n");
    }
    let _ = write!(s, "connected_slaves:{}\r\n", repl.feeds.len());
    for (i, f) in repl.feeds.iter().enumerate() {
        let ack = f.ack.load(Ordering::Acquire);
        let _ = write!(
            s,
            "slave{i}:ip={},port={},state={},offset={ack},lag={}\r\n",
            f.addr.ip(),
            f.addr.port(),
            f.remote.as_ref().map_or("online", |r| r.state_name()),
            f.lag_seconds(now_ms)
        );
    }
    let (replid2, second) = match &repl.replid2 {
        Some((id, until)) => (id.as_str(), *until as i64),
        None => ("0000000000000000000000000000000000000000", -1),
    };
    let (first, histlen) = repl
        .backlog
        .as_ref()
        .map_or((0, 0), |b| (b.first_byte_offset(), b.histlen()));
    if profile.info_extras.replicas_waiting_psync {
        // Valkey's replicas whose dual-channel sync waits to continue: no such sync here.
        s.push_str("replicas_waiting_psync:0\r\n");
    }
    let _ = write!(
        s,
        "master_failover_state:no-failover\r\nmaster_replid:{}\r\n\
         master_replid2:{replid2}\r\nmaster_repl_offset:{offset}\r\nsecond_repl_offset:{second}\r\n\
         repl_backlog_active:{}\r\nrepl_backlog_size:{backlog_size}\r\n\
         repl_backlog_first_byte_offset:{first}\r\nrepl_backlog_histlen:{histlen}\r\n",
        repl.replid,
        u8::from(repl.backlog.is_some()),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_count_resp_encoded_bytes() {
        let argv = vec![
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"k"),
            Bytes::from_static(b"v"),
        ];
        let mut out = BytesMut::new();
        locksmith_resp::encode_command(&argv, &mut out);
        assert_eq!(&out[..], b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
    }

    #[test]
    fn feed_selects_the_db_once_and_advances_the_offset() {
        let mut repl = ReplState::new(1);
        let (tx, mut rx) = mpsc::unbounded_channel();
        repl.add_feed(
            Feed {
                link: 1,
                addr: SocketAddr::from(([127, 0, 0, 1], 1)),
                tx,
                ack: Arc::new(AtomicU64::new(0)),
                cut: Default::default(),
                soft_since: None,
                ctl: Arc::new(LinkControl::new(Duration::ZERO, Duration::ZERO, false)),
                remote: None,
            },
            &RuntimeConfig::for_tests(),
        );
        let set = vec![
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"k"),
            Bytes::from_static(b"v"),
        ];
        let config = RuntimeConfig::for_tests();
        let from = repl.offset + 1;
        feed(&mut repl, &[(0, set.clone()), (0, set.clone())], &config);
        let batch = rx.try_recv().unwrap();
        assert_eq!(batch.commands.len(), 3);
        assert_eq!(batch.commands[0][0], Bytes::from_static(b"SELECT"));
        // *2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n = 23 bytes
        assert_eq!(repl.offset, 23 + 27 + 27);
        // The backlog holds the stream since the replica attached, as sent.
        let sent = repl
            .continuation(repl.replid.clone().as_bytes(), from)
            .unwrap();
        assert_eq!(sent, batch.bytes.to_vec());
        feed(&mut repl, &[(0, set)], &config);
        assert_eq!(rx.try_recv().unwrap().commands.len(), 1);
        assert!(repl.continuation(b"another-id", from).is_none());
    }

    #[test]
    fn replication_info_of_a_standalone_master() {
        let repl = ReplState::new(7);
        let info = replication_info(&repl, 0, 1 << 20, crate::compat::Compat::Redis70.profile());
        assert!(info.starts_with("role:master\r\nconnected_slaves:0\r\n"));
        assert!(info.contains("master_repl_offset:0\r\n"));
    }
}
