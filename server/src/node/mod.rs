//! One node's state, shared by every connection: the keyspace and everything commands mutate
//! ([`State`], behind one async mutex, so a command, a `MULTI`/`EXEC` block or a script is
//! atomic), plus the parts read without that lock ([`Node`]: clock, client registry, and the
//! limits, counters and pause in [`lockfree`]).

pub(crate) mod lockfree;

use crate::client::{ClientRegistry, ClientState};
use crate::clock::Clock;
use crate::config::runtime::RuntimeConfig;
use crate::db::Db;
use bytes::Bytes;
use locksmith_resp::Frame;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{Mutex, Notify};

/// `BUSY` reply while a script (`EVAL`) runs past the threshold, by the server's title.
const BUSY_ERROR: [(&str, &str); 2] = [
    (
        "Redis",
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    ),
    (
        "Valkey",
        "BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    ),
];
/// `BUSY` reply while a function (`FCALL`) runs past the threshold, by the server's title.
const BUSY_FUNCTION_ERROR: [(&str, &str); 2] = [
    (
        "Redis",
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.",
    ),
    (
        "Valkey",
        "BUSY Valkey is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.",
    ),
];

/// Everything commands read and write, guarded by [`Node::state`].
#[derive(Debug)]
pub(crate) struct State {
    /// The numbered databases.
    pub(crate) dbs: Vec<Db>,
    /// The node's run-time configuration (the same one [`Node::config`] holds).
    pub(crate) config: Arc<RuntimeConfig>,
    /// Writes since start (`rdb_changes_since_last_save`); a command that changed data bumps it.
    pub(crate) dirty: u64,
    /// The node's seeded random source.
    pub(crate) rng: StdRng,
    /// Counters for `INFO stats`.
    pub(crate) stats: Stats,
    /// Clients blocked on keys (BLPOP, BZPOPMIN…).
    pub(crate) blocked: crate::blocking::Blocked,
    /// Pub/sub subscriptions and the subscribers' output limit.
    pub(crate) pubsub: crate::pubsub::PubSub,
    /// WATCHed keys and which clients' transactions they invalidated.
    pub(crate) watches: crate::transaction::Watches,
    /// Replication role, offset and the feeds to replicas.
    pub(crate) repl: crate::replication::ReplState,
    /// The Lua interpreter and script cache (created on first use; taken out while a script
    /// runs, so `redis.call` can borrow the rest of the state).
    pub(crate) scripting: Option<Box<crate::script::Engine>>,
    /// Function libraries (`FUNCTION LOAD`, `FCALL`); they survive `FLUSHALL` and
    /// `SCRIPT FLUSH`.
    pub(crate) functions: crate::script::Libraries,
    /// Calls, time and failures per command (`INFO commandstats`, `INFO latencystats`).
    pub(crate) cmdstats: crate::cmdstats::CommandStats,
    /// `maxmemory`, its policy and the eviction candidates.
    pub(crate) eviction: crate::evict::Eviction,
    /// Commands slower than `slowlog-log-slower-than` (`SLOWLOG`), and under Valkey's target
    /// those with large requests or replies (`COMMANDLOG`).
    pub(crate) commandlog: crate::slowlog::CommandLogs,
    /// Events slower than `latency-monitor-threshold` (`LATENCY`).
    pub(crate) latency: crate::latency::LatencyMonitor,
    /// `MIGRATE`'s connections to other servers.
    pub(crate) migrate: crate::outbound::MigrateSockets,
    /// Client-side caching: tracking clients, the keys they read, `BCAST` prefixes.
    pub(crate) tracking: crate::tracking::Tracking,
}

/// Counters reported by `INFO`.
#[derive(Debug, Default, Clone)]
pub(crate) struct Stats {
    /// Commands executed.
    pub(crate) commands: u64,
    /// Key lookups that found a key.
    pub(crate) keyspace_hits: u64,
    /// Key lookups that found nothing.
    pub(crate) keyspace_misses: u64,
    /// Keys removed because their TTL ran out.
    pub(crate) expired_keys: u64,
    /// Active expiry cycles that stopped at their time budget with keys still due (Redis's
    /// `expired_time_cap_reached_count`).
    pub(crate) expired_time_cap_reached_count: u64,
    /// Microseconds the active expiry cycle held the state lock (Redis reports
    /// `expire_cycle_cpu_milliseconds`).
    pub(crate) expire_cycle_us: u64,
    /// Keys removed to stay under `maxmemory`.
    pub(crate) evicted_keys: u64,
    /// Scripts `EVAL` added that were evicted from the cache (Valkey's `evicted_scripts`).
    pub(crate) evicted_scripts: u64,
    /// Full synchronisations this node served as a master (Redis's `sync_full`; every link
    /// starts with one, and none resumes partially).
    pub(crate) sync_full: u64,
    /// `PSYNC`s answered `+CONTINUE` (Redis's `sync_partial_ok`).
    pub(crate) sync_partial_ok: u64,
    /// `PSYNC`s naming a replication id and offset that could not continue.
    pub(crate) sync_partial_err: u64,
}

/// The error for a write while fewer good replicas than `min-replicas-to-write` are attached.
pub(crate) const NOREPLICAS_ERROR: &str = "NOREPLICAS Not enough good replicas to write.";

/// The side effects of `key` having expired, already removed from `db` (Redis's
/// `expireIfNeeded` and `activeExpireCycle`): counted, the `expired` event, WATCH
/// invalidation and a DEL for replicas (UNLINK under `lazyfree-lazy-expire`). On `State`'s
/// fields, so a command can call it while it holds another entry of the keyspace.
pub(crate) fn key_expired(
    stats: &mut Stats,
    repl: &crate::replication::ReplState,
    config: &RuntimeConfig,
    effects: &mut Effects,
    db: usize,
    key: &Bytes,
) {
    stats.expired_keys += 1;
    let propagate_as = effects
        .propagating(repl)
        .then(|| deletion_command(config.lazyfree_lazy_expire()));
    effects.key_expired(db, key, propagate_as);
}

/// The command a deletion the server decides on goes to replicas as: `UNLINK` when the
/// matching `lazyfree-lazy-*` parameter frees it lazily, `DEL` otherwise (Redis's
/// `propagateDeletion`).
pub(crate) fn deletion_command(lazy: bool) -> Bytes {
    if lazy {
        Bytes::from_static(b"UNLINK")
    } else {
        Bytes::from_static(b"DEL")
    }
}

impl State {
    /// Redis's `checkGoodReplicasStatus`: whether writes may run, as far as
    /// `min-replicas-to-write` and `min-replicas-max-lag` go (a replica always may).
    pub(crate) fn enough_good_replicas(&self, node: &Node) -> bool {
        let min = node.config.min_replicas_to_write();
        if min == 0 || self.repl.is_replica() {
            return true;
        }
        let max_lag = node.config.min_replicas_max_lag();
        max_lag == 0 || self.repl.good_replicas(max_lag, node.clock.now_ms()) as u64 >= min
    }

    /// Fresh state for a node configured by `config`.
    pub(crate) fn new(config: Arc<RuntimeConfig>, seed: u64) -> Self {
        let mut state = State {
            dbs: (0..config.databases()).map(|_| Db::default()).collect(),
            dirty: 0,
            rng: StdRng::seed_from_u64(seed),
            stats: Stats::default(),
            repl: crate::replication::ReplState::new(seed),
            blocked: Default::default(),
            pubsub: Default::default(),
            watches: Default::default(),
            scripting: None,
            functions: Default::default(),
            cmdstats: Default::default(),
            eviction: Default::default(),
            commandlog: Default::default(),
            latency: Default::default(),
            migrate: Default::default(),
            tracking: Default::default(),
            config,
        };
        state.apply_eviction_config();
        state
    }

    /// Removes `key` from `db` because its TTL ran out, with Redis's side effects: the
    /// `expired` keyspace event, a `DEL` propagated to replicas, and WATCH invalidation.
    pub(crate) fn expire_key(&mut self, db: usize, key: &Bytes, effects: &mut Effects) {
        if let Some(d) = self.dbs.get_mut(db) {
            if d.remove(key).is_some() {
                self.expired(db, key, effects);
            }
        }
    }

    /// The side effects of `key`, already removed from `db`, having expired.
    fn expired(&mut self, db: usize, key: &Bytes, effects: &mut Effects) {
        key_expired(&mut self.stats, &self.repl, &self.config, effects, db, key);
    }

    /// [`State::expired`] for the active cycle, which reclaims keys by the thousand: records
    /// only the effects something will consume (the event while `notify-keyspace-events`
    /// has `x` and someone is subscribed, the key while a client WATCHes keys or is blocked,
    /// the `DEL` while replicas are fed), so a wave of expiring keys copies no key for nothing.
    fn expired_in_cycle(&mut self, db: usize, key: crate::db::Key, effects: &mut Effects) {
        self.stats.expired_keys += 1;
        let event = self.config.notify_keyspace_events() & crate::notify::EXPIRED != 0
            && !self.pubsub.is_empty();
        let propagating = effects.propagating(&self.repl);
        let modified = self.hears_modified_keys();
        if !(event || propagating || modified) {
            return;
        }
        let key = key.into_bytes();
        if event {
            effects.keyspace_event(db, crate::notify::EXPIRED, "expired", &key);
        }
        if propagating {
            let del = deletion_command(self.config.lazyfree_lazy_expire());
            effects.propagate.push((db, vec![del, key.clone()]));
        }
        if modified {
            effects.modified.push((db, key));
        }
    }

    /// One step of the active expiry cycle: examines up to `limit` due entries of the
    /// databases' deadline indexes, earliest first in each database, the databases in turn,
    /// reclaiming the keys whose deadline passed at `now`; returns how many entries it
    /// examined. Fewer than `limit` means no key is due any more.
    pub(crate) fn active_expire(&mut self, now: u64, limit: usize, effects: &mut Effects) -> usize {
        // Replicas do not expire keys themselves: they wait for the master's DEL (as Redis).
        if self.repl.is_replica() {
            return 0;
        }
        let mut examined = 0;
        let mut keys = Vec::new();
        for db in 0..self.dbs.len() {
            let Some(d) = self.dbs.get_mut(db) else {
                continue;
            };
            examined += d.take_expired(now, limit - examined, &mut keys);
            for key in keys.drain(..) {
                self.expired_in_cycle(db, key, effects);
            }
            if examined >= limit {
                break;
            }
        }
        examined
    }

    /// Moves the buckets of resizing keyspace tables into their new tables, as Redis's
    /// `incrementallyRehash` does from its cron, so a table resized by a burst of writes or
    /// deletions does not stay split in two while the node is idle. `more_time` is asked after
    /// every 100 buckets.
    pub(crate) fn rehash_keyspace(&mut self, mut more_time: impl FnMut() -> bool) {
        for db in &mut self.dbs {
            // Bounded: 10 000 steps of 100 buckets at most per table.
            for _ in 0..10_000 {
                if !db.rehash(100) || !more_time() {
                    break;
                }
            }
        }
    }
}

/// Side effects of executing commands, applied by the connection once the command is done.
#[derive(Debug)]
pub(crate) struct Effects {
    /// Pub/sub messages to deliver, in publish order: (channel, message).
    pub(crate) publishes: Vec<(Bytes, Bytes)>,
    /// Shard-channel messages (`SPUBLISH`) to deliver, in order: (channel, message).
    pub(crate) shard_publishes: Vec<(Bytes, Bytes)>,
    /// For each entry of `events`, how many `publishes` preceded it, so keyspace
    /// notifications and `PUBLISH`ed messages reach subscribers in the order they happened.
    pub(crate) event_marks: Vec<usize>,
    /// Keyspace events raised: (db, class flag, event, key); turned into publishes according to
    /// `notify-keyspace-events`.
    pub(crate) events: Vec<(usize, u32, &'static str, Bytes)>,
    /// Keys written: (db, key); drives WATCH invalidation and blocked-client wake-ups.
    pub(crate) modified: Vec<(usize, Bytes)>,
    /// Keys that may serve blocked clients though no write changed them (SWAPDB brings one
    /// database's keys under another's index): (db, key). WATCH does not hear of them.
    pub(crate) ready: Vec<(usize, Bytes)>,
    /// Write effects for replicas, in order: (db, argv). Recorded only while
    /// [`Effects::propagating`] says something will consume them.
    pub(crate) propagate: Vec<(usize, Vec<Bytes>)>,
    /// Record `propagate` even when no replication backlog consumes it. On in unit tests
    /// (which inspect what a command propagates without a replica), off otherwise.
    pub(crate) record_propagation: bool,
    /// How many of `modified` client tracking has invalidated already (see
    /// [`crate::tracking`]).
    pub(crate) tracked: usize,
    /// Indexes in `modified` of keys that expired while a command read them (no client
    /// changed them, which `BCAST` with `NOLOOP` tells apart).
    pub(crate) unowned: Vec<usize>,
    /// Indexes in `modified`, ascending, of keys whose entry was measured when it was written
    /// (a whole new value stored): [`State::account_modified`] need not measure them again.
    pub(crate) measured: Vec<usize>,
    /// The client whose command made these effects, kept only while a write observer is
    /// installed (see [`crate::observe`]).
    pub(crate) client: Option<Arc<crate::client::ClientHandle>>,
    /// The time (ms) the last command that made these effects ran at: a transaction's or a
    /// script's commands all run at its start. Serving blocked clients judges expiry at it
    /// under Redis 7.2's rules (its cached command time); `None` outside a command.
    pub(crate) command_now: Option<u64>,
}

/// Entries an [`Effects`] buffer may keep room for between batches ([`Effects::reset`]).
const REUSED_EFFECTS_MAX: usize = 256;

// Not derived: `record_propagation` defaults to on in unit tests.
#[allow(clippy::derivable_impls)]
impl Default for Effects {
    fn default() -> Self {
        Effects {
            publishes: Vec::new(),
            shard_publishes: Vec::new(),
            event_marks: Vec::new(),
            events: Vec::new(),
            modified: Vec::new(),
            ready: Vec::new(),
            propagate: Vec::new(),
            record_propagation: cfg!(test),
            tracked: 0,
            unowned: Vec::new(),
            measured: Vec::new(),
            client: None,
            command_now: None,
        }
    }
}

impl Effects {
    /// Wraps the writes propagated since index `from` in `MULTI`/`EXEC` when there are
    /// several, as Redis replicates a transaction or a script's effects (`db`: the database
    /// of an empty wrap).
    pub(crate) fn wrap_in_transaction(&mut self, from: usize, db: usize) {
        if self.propagate.len().saturating_sub(from) < 2 {
            return;
        }
        let first_db = self.propagate.get(from).map_or(db, |(db, _)| *db);
        self.propagate
            .insert(from, (first_db, vec![Bytes::from_static(b"MULTI")]));
        let last_db = self.propagate.last().map_or(first_db, |(db, _)| *db);
        self.propagate
            .push((last_db, vec![Bytes::from_static(b"EXEC")]));
    }

    /// Whether write effects must be recorded in `propagate`: only
    /// [`crate::replication::feed`] and the journal read them, and `feed` drops them unless
    /// the node has a replication backlog, so without one and without a journal, copying every
    /// write's argv is wasted. The backlog never goes away once it exists, and a node that
    /// gains one mid-command (becoming a replica) drops its own effects anyway, so this never
    /// loses an entry `feed` would send; a journal starts and stops between commands.
    pub(crate) fn propagating(&self, repl: &crate::replication::ReplState) -> bool {
        self.record_propagation || repl.records_writes()
    }

    /// Records the side effects of reclaiming expired `key` in `db` (already removed): the
    /// `expired` keyspace event, WATCH invalidation and, if propagating, the deletion for
    /// replicas as `propagate_as` (`DEL` or `UNLINK`).
    pub(crate) fn key_expired(&mut self, db: usize, key: &Bytes, propagate_as: Option<Bytes>) {
        self.keyspace_event(db, crate::notify::EXPIRED, "expired", key);
        self.unowned.push(self.modified.len());
        self.modified.push((db, key.clone()));
        if let Some(del) = propagate_as {
            self.propagate.push((db, vec![del, key.clone()]));
        }
    }

    /// Records a keyspace event of class `class` (see [`crate::notify`]).
    pub(crate) fn keyspace_event(
        &mut self,
        db: usize,
        class: u32,
        event: &'static str,
        key: &Bytes,
    ) {
        self.events.push((db, class, event, key.clone()));
        self.event_marks.push(self.publishes.len());
    }

    /// Forgets everything recorded, keeping the buffers' room for the next batch (what
    /// dropping it would do, without allocating again); a buffer grown past
    /// [`REUSED_EFFECTS_MAX`] entries by a large batch is let go.
    pub(crate) fn reset(&mut self) {
        fn clear<T>(v: &mut Vec<T>) {
            if v.capacity() > REUSED_EFFECTS_MAX {
                *v = Vec::new();
            } else {
                clear_kept(v);
            }
        }
        let Effects {
            publishes,
            shard_publishes,
            event_marks,
            events,
            modified,
            ready,
            propagate,
            record_propagation: _,
            tracked,
            unowned,
            measured,
            client,
            command_now,
        } = self;
        *client = None;
        *command_now = None;
        clear(publishes);
        clear(shard_publishes);
        clear(event_marks);
        clear(events);
        clear(modified);
        clear(ready);
        clear(propagate);
        *tracked = 0;
        clear(unowned);
        clear(measured);
    }

    /// Records that `key` in `db` was written with a whole new value whose size the keyspace
    /// measured as it stored it.
    pub(crate) fn modified_measured(&mut self, db: usize, key: Bytes) {
        self.measured.push(self.modified.len());
        self.modified.push((db, key));
    }

    /// Whether nothing was recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.publishes.is_empty()
            && self.shard_publishes.is_empty()
            && self.events.is_empty()
            && self.modified.is_empty()
            && self.ready.is_empty()
            && self.propagate.is_empty()
    }
}

/// Empties `v`, keeping its room. An empty list is left alone: `Vec::clear` calls the
/// elements' drop loop out of line even for none, and most of a command's effect lists are
/// empty (four such calls cost 2 % of an HSET).
pub(crate) fn clear_kept<T>(v: &mut Vec<T>) {
    if !v.is_empty() {
        v.clear();
    }
}

/// What a running script looks like from outside the state lock (for `BUSY` and
/// `SCRIPT KILL`).
#[derive(Debug, Default)]
pub(crate) struct ScriptStatus {
    /// A script is executing now.
    pub(crate) running: AtomicBool,
    /// Node-clock ms when it started.
    pub(crate) started_ms: AtomicU64,
    /// Node-clock µs when it started (`TIME` inside it under Redis 7.2's rules).
    pub(crate) started_us: AtomicU64,
    /// `SCRIPT KILL` asked it to stop (shared with the Lua instruction hook).
    pub(crate) kill: Arc<AtomicBool>,
    /// It performed a write (then it cannot be killed).
    pub(crate) wrote: AtomicBool,
    /// The running script is a function (`FCALL`): its name and command line, for
    /// `FUNCTION STATS`; `None` for `EVAL`.
    pub(crate) function: std::sync::Mutex<Option<(String, Vec<bytes::Bytes>)>>,
    /// Set with `function`, read without its lock (which `BUSY` text, which KILL applies).
    pub(crate) is_function: AtomicBool,
    /// (libraries, functions) loaded, for `FUNCTION STATS` while a script is busy.
    pub(crate) function_counts: std::sync::Mutex<(usize, usize)>,
    /// Signalled when a script finishes.
    pub(crate) done: Notify,
}

/// A boxed future of a command's reply, `Send` so connections can await it.
pub type ReplyFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = locksmith_resp::Frame> + Send + 'static>>;

/// Commands a node hands to its embedder instead of running them itself.
///
/// The node asks [`AdminHook::serves`] about every command of a name it does not know, and
/// about `REPLICAOF`/`SLAVEOF` (after their arity check): a node whose replication is managed
/// from outside lets the embedder re-point it. Served commands run without the node's state
/// lock (they may stop or restart the very node they arrived on), after authentication.
pub trait AdminHook: Send + Sync + 'static {
    /// Whether the hook serves the command named `name` (as sent, any case).
    fn serves(&self, name: &[u8]) -> bool;

    /// Runs `argv`, sent by the client at `origin`.
    fn run(&self, origin: SocketAddr, argv: Vec<Bytes>) -> ReplyFuture;
}

/// A node's [`AdminHook`] (a newtype, so [`Node`] stays `Debug`).
#[derive(Clone)]
pub(crate) struct AdminHookSlot(pub(crate) Arc<dyn AdminHook>);

impl std::ops::Deref for AdminHookSlot {
    type Target = dyn AdminHook;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl std::fmt::Debug for AdminHookSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminHook")
    }
}

/// One server node: the shared handle every connection holds.
#[derive(Debug)]
pub(crate) struct Node {
    /// The keyspace and all mutable command state.
    pub(crate) state: Arc<Mutex<State>>,
    /// This node's clock.
    pub(crate) clock: Clock,
    /// Connected clients.
    pub(crate) clients: ClientRegistry,
    /// The address the listener is bound to.
    pub(crate) addr: SocketAddr,
    /// 40 hex characters, fixed for the node's life (`INFO server` run_id).
    pub(crate) run_id: String,
    /// Node-clock ms at start.
    pub(crate) started_ms: u64,
    /// The running script, if any.
    pub(crate) script: ScriptStatus,
    /// Total connections accepted.
    pub(crate) connections_received: AtomicU64,
    /// The run-time configuration, read without the state lock (the state holds the same).
    pub(crate) config: Arc<RuntimeConfig>,
    /// The last client id handed out.
    pub(crate) last_client_id: AtomicU64,
    /// The embedder's hook for commands it serves (a harness's admin commands, REPLICAOF).
    pub(crate) admin_hook: std::sync::OnceLock<AdminHookSlot>,
    /// Counters and `CLIENT PAUSE`, readable without the state lock.
    pub(crate) live: crate::node::lockfree::Live,
    /// Clients in MONITOR mode.
    pub(crate) monitors: crate::monitor::Monitors,
    /// Set in cluster mode: the cluster and this node's place in it.
    pub(crate) cluster: std::sync::OnceLock<crate::cluster::Cluster>,
    /// Users, their permissions and the ACL log.
    pub(crate) acl: crate::acl::Acl,
    /// How this layer runs commands (see [`CommandHooks`]).
    pub(crate) commands: CommandHooks,
    /// Whether the node is a replica ([`crate::replication::ReplState::replica_mirror`]).
    pub(crate) replica: Arc<std::sync::atomic::AtomicBool>,
    /// The node itself, for the tasks a command starts (a replica's link to its master);
    /// set once the node is shared.
    pub(crate) me: std::sync::OnceLock<std::sync::Weak<Node>>,
}

/// What the state layer asks of the commands layer above it, which supplies these to
/// [`Node::new`] (`crate::cmd::HOOKS`): running a command as a client (a served blocked
/// client's command, a replica applying its master's stream), finding a command's
/// description, and whether a script's `redis.call` names a command. The state layer never
/// names the commands layer itself (`layer_tests`).
#[derive(Clone, Copy)]
pub(crate) struct CommandHooks {
    /// Runs `argv` for `client` under the state lock at node-clock ms `now` (Redis's `call`).
    pub(crate) call_argv:
        fn(&mut State, &Node, &mut ClientState, &[Bytes], u64, &mut Effects) -> Frame,
    /// The description of the command `argv` names, if it exists with a valid arity.
    pub(crate) resolve:
        fn(crate::compat::Compat, &[Bytes]) -> Option<crate::command_meta::Resolved>,
    /// Whether `argv` names a command (for the functions engine's `redis.call` checks).
    pub(crate) exists: fn(crate::compat::Compat, &[Bytes]) -> bool,
    /// A replica's full synchronisation: replaces the dataset and function libraries with
    /// the master's RDB payload, as `FLUSHALL` then a load would; the keys loaded.
    pub(crate) install_dataset: fn(&mut State, &Node, &[u8], u64) -> Result<usize, String>,
}

impl std::fmt::Debug for CommandHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CommandHooks")
    }
}

impl Node {
    /// A node with fresh state configured by `config`, reading time from `clock`.
    pub(crate) fn new(
        config: Arc<RuntimeConfig>,
        clock: Clock,
        addr: SocketAddr,
        run_id: String,
        seed: u64,
        commands: CommandHooks,
    ) -> Node {
        let state = State::new(config.clone(), seed);
        let replica = state.repl.replica_mirror();
        let acl = crate::acl::Acl::new();
        if let Some(password) = config.requirepass() {
            acl.set_default_password(Some(password.as_bytes()));
        }
        let node = Node {
            acl,
            config,
            last_client_id: AtomicU64::new(0),
            started_ms: clock.now_ms(),
            state: Arc::new(Mutex::new(state)),
            clock,
            clients: Default::default(),
            addr,
            run_id,
            script: Default::default(),
            connections_received: AtomicU64::new(0),
            admin_hook: Default::default(),
            live: crate::node::lockfree::Live::new(),
            monitors: Default::default(),
            cluster: Default::default(),
            commands,
            replica,
            me: Default::default(),
        };
        // Before any save, LASTSAVE reports the start time (as Redis does).
        node.live
            .saves
            .last_save_unix
            .store(node.clock.now_ms() / 1000, Ordering::Relaxed);
        node
    }

    /// Redis's refusal of a protected command (`DEBUG`, `MODULE LOAD`...) that
    /// `enable-debug-command` or `enable-module-command` does not allow for a client connected
    /// from `peer`.
    pub(crate) fn check_protected(
        &self,
        spec: &crate::command_meta::CommandMeta,
        peer: SocketAddr,
    ) -> Result<(), crate::error::CommandError> {
        let (allowed, command) = if spec.flags & crate::flags::PROTECTED != 0 {
            (self.config.enable_debug_command(), "DEBUG")
        } else if spec.flags & crate::flags::PROTECTED_MODULE != 0 {
            (self.config.enable_module_command(), "MODULE")
        } else {
            return Ok(());
        };
        if allowed.allows(peer) {
            return Ok(());
        }
        Err(crate::error::CommandError::err(format!(
            "{command} command not allowed. If the enable-{}-command option is set to \"local\", \
             you can run it from a local connection, otherwise you need to set this option in \
             the configuration file, and then restart the server.",
            command.to_ascii_lowercase()
        )))
    }

    /// A fresh, increasing client id.
    pub(crate) fn next_client_id(&self) -> u64 {
        self.last_client_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Whether new connections must `AUTH` first: the default user has a password or is
    /// off (Redis's `authRequired`).
    pub(crate) fn requires_auth(&self) -> bool {
        self.acl.requires_auth()
    }

    /// The `BUSY` error for the script running now: Redis names the command that may stop it
    /// (`SCRIPT KILL` for `EVAL`, `FUNCTION KILL` for `FCALL`).
    pub(crate) fn busy_error(&self) -> &'static str {
        self.busy_error_of(self.script.is_function.load(Ordering::Acquire))
    }

    /// The `BUSY` error while an `EVAL` (`function` false) or an `FCALL` runs, with the name
    /// the server gives itself.
    pub(crate) fn busy_error_of(&self, function: bool) -> &'static str {
        let title = self.config.title();
        let texts = if function {
            &BUSY_FUNCTION_ERROR
        } else {
            &BUSY_ERROR
        };
        texts
            .iter()
            .find(|(t, _)| *t == title)
            .map_or(texts[0].1, |(_, text)| text)
    }

    /// Milliseconds since the running script started, if one runs.
    pub(crate) fn script_running_for(&self) -> Option<u64> {
        if self.script.running.load(Ordering::Acquire) {
            let started = self.script.started_ms.load(Ordering::Acquire);
            Some(self.clock.now_ms().saturating_sub(started))
        } else {
            None
        }
    }
}

impl State {
    /// Applies the side effects of the commands just run, still under the state lock, so
    /// they take effect atomically after the command (or script, or `EXEC`) and before any
    /// other client's command: keyspace events become publishes, publishes are fanned out to
    /// subscribers, written keys invalidate WATCHes and wake blocked clients, and write effects
    /// go to replicas. Each subsystem adds its part here.
    pub(crate) fn finish_effects(&mut self, node: &Node, effects: &mut Effects) {
        // Keys changed outside a command (expiry cycle, eviction), before any served client's
        // command runs: no client caused them.
        if self.tracking.is_active() {
            crate::tracking::after_effects(&mut self.tracking, node, effects);
        }
        // First, so the pops of served clients join the events, WATCH and propagation below.
        crate::blocking::serve_ready(self, node, effects);
        self.account_modified(&effects.modified, &effects.measured);
        crate::transaction::touch_watched(self, node, &effects.modified);
        crate::cluster::broadcast(node, &effects.publishes);
        // Reading the clock costs about as much as a small command; `deliver` only needs it
        // when there are subscribers.
        let now = if self.pubsub.is_empty() {
            0
        } else {
            node.clock.now_ms()
        };
        crate::pubsub::deliver(self, effects, now);
        crate::replication::feed(&mut self.repl, &effects.propagate, &self.config);
        if let Some(journal) = self.repl.journal() {
            journal.record(&effects.propagate, || crate::journal::Snapshot {
                dbs: self.dbs.clone(),
                functions: self.functions.dump(false),
            });
        }
        if let Some(observer) = self.repl.observer() {
            let replica = self.repl.is_replica();
            crate::observe::notify(
                &**observer,
                &effects.propagate,
                effects.client.take(),
                replica,
            );
        }
        effects.reset();
    }

    /// Whether anything reads [`Effects::modified`] beyond memory accounting: WATCH, clients
    /// blocked on keys, client tracking. None of them can start while a command runs.
    pub(crate) fn hears_modified_keys(&self) -> bool {
        !self.watches.is_empty() || !self.blocked.is_empty() || self.tracking.is_active()
    }

    /// Measures the written keys again, so [`State::used_memory`] follows values changed in
    /// place (a key written twice in a row is measured once); `measured` lists the indexes in
    /// `modified`, ascending, of writes the keyspace measured itself (see
    /// [`Effects::measured`]).
    pub(crate) fn account_modified(&mut self, modified: &[(usize, Bytes)], measured: &[usize]) {
        let mut last: Option<&(usize, Bytes)> = None;
        let mut measured = measured.iter().copied().peekable();
        for (i, written) in modified.iter().enumerate() {
            if measured.next_if_eq(&i).is_some() {
                // A later write of the same key in place is measured at its own entry.
                last = None;
                continue;
            }
            if last == Some(written) {
                continue;
            }
            last = Some(written);
            if let Some(db) = self.dbs.get_mut(written.0) {
                db.resize(&written.1);
            }
        }
    }

    /// Forgets everything held for client `id` (subscriptions, watched keys, blocked waits)
    /// when its connection closes.
    pub(crate) fn client_gone(&mut self, id: u64) {
        self.blocked.remove(id);
        self.pubsub.remove_client(id);
        self.watches.remove_client(id);
        self.tracking.disable(id, None);
    }

    /// Number of clients blocked on keys (`INFO clients` `blocked_clients`).
    pub(crate) fn blocked_clients(&self) -> usize {
        self.blocked.len()
    }
}

#[cfg(test)]
impl State {
    /// Fresh state with the default configuration, for unit tests.
    pub(crate) fn for_tests() -> State {
        State::new(Arc::new(RuntimeConfig::for_tests()), 1)
    }
}
