//! State shared by every connection of one node: the keyspace and everything commands mutate
//! ([`State`], behind one async mutex, so a command, a `MULTI`/`EXEC` block or a script is
//! atomic), plus the parts read without that lock ([`Node`]: clock, client registry, stats).

use crate::client::ClientRegistry;
use crate::clock::Clock;
use crate::config::Config;
use crate::db::Db;
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{Mutex, Notify};

/// Everything commands read and write, guarded by [`Node::state`].
#[derive(Debug)]
pub(crate) struct State {
    /// The numbered databases.
    pub(crate) dbs: Vec<Db>,
    /// Run-time configuration.
    pub(crate) config: Config,
    /// Writes since start (`rdb_changes_since_last_save`); a command that changed data bumps it.
    pub(crate) dirty: u64,
    /// The node's seeded random source.
    pub(crate) rng: StdRng,
    /// Counters for `INFO stats`.
    pub(crate) stats: Stats,
    /// The Lua interpreter and script cache (created on first use; taken out while a script
    /// runs, so `redis.call` can borrow the rest of the state).
    pub(crate) scripting: Option<Box<crate::script::Engine>>,
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
}

impl State {
    /// Fresh state for `config`.
    pub(crate) fn new(config: Config, seed: u64) -> Self {
        State {
            dbs: (0..config.databases).map(|_| Db::default()).collect(),
            config,
            dirty: 0,
            rng: StdRng::seed_from_u64(seed),
            stats: Stats::default(),
            scripting: None,
        }
    }

    /// Removes `key` from `db` because its TTL ran out, with Redis's side effects: the
    /// `expired` keyspace event, a `DEL` propagated to replicas, and WATCH invalidation.
    pub(crate) fn expire_key(&mut self, db: usize, key: &Bytes, effects: &mut Effects) {
        if let Some(d) = self.dbs.get_mut(db) {
            if d.remove(key).is_some() {
                self.stats.expired_keys += 1;
                effects.keyspace_event(db, crate::notify::EXPIRED, "expired", key);
                effects.modified.push((db, key.clone()));
                effects
                    .propagate
                    .push((db, vec![Bytes::from_static(b"DEL"), key.clone()]));
            }
        }
    }

    /// One pass of the active expiry cycle: reclaims keys whose deadline passed at `now`
    /// (at most `budget` per database, as Redis bounds each cycle).
    pub(crate) fn active_expire(&mut self, now: u64, budget: usize, effects: &mut Effects) {
        for db in 0..self.dbs.len() {
            let keys = self.dbs.get(db).map(|d| d.expired_keys(now, budget));
            for key in keys.unwrap_or_default() {
                self.expire_key(db, &key, effects);
            }
        }
    }
}

/// Side effects of executing commands, applied by the connection once the command is done.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    /// Pub/sub messages to deliver, in publish order: (channel, message).
    pub(crate) publishes: Vec<(Bytes, Bytes)>,
    /// Keyspace events raised: (db, class flag, event, key); turned into publishes according to
    /// `notify-keyspace-events`.
    pub(crate) events: Vec<(usize, u32, &'static str, Bytes)>,
    /// Keys written: (db, key); drives WATCH invalidation and blocked-client wake-ups.
    pub(crate) modified: Vec<(usize, Bytes)>,
    /// Write effects for replicas, in order: (db, argv).
    pub(crate) propagate: Vec<(usize, Vec<Bytes>)>,
}

impl Effects {
    /// Records a keyspace event of class `class` (see [`crate::notify`]).
    pub(crate) fn keyspace_event(
        &mut self,
        db: usize,
        class: u32,
        event: &'static str,
        key: &Bytes,
    ) {
        self.events.push((db, class, event, key.clone()));
    }

    /// Whether nothing was recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.publishes.is_empty()
            && self.events.is_empty()
            && self.modified.is_empty()
            && self.propagate.is_empty()
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
    /// `SCRIPT KILL` asked it to stop (shared with the Lua instruction hook).
    pub(crate) kill: Arc<AtomicBool>,
    /// It performed a write (then it cannot be killed).
    pub(crate) wrote: AtomicBool,
    /// Signalled when a script finishes.
    pub(crate) done: Notify,
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
    /// The `busy-reply-threshold` in ms, readable without the state lock.
    pub(crate) busy_threshold_ms: AtomicU64,
    /// Whether `requirepass` is set, readable without the state lock.
    pub(crate) auth_required: AtomicBool,
    /// The last client id handed out.
    pub(crate) last_client_id: AtomicU64,
    /// Clients in MONITOR mode.
    pub(crate) monitors: crate::monitor::Monitors,
}

impl Node {
    /// A fresh, increasing client id.
    pub(crate) fn next_client_id(&self) -> u64 {
        self.last_client_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Whether new connections must `AUTH` first.
    pub(crate) fn requires_auth(&self) -> bool {
        self.auth_required.load(Ordering::Relaxed)
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
    pub(crate) fn finish_effects(&mut self, _node: &Node, effects: &mut Effects) {
        effects.events.clear();
        effects.publishes.clear();
        effects.modified.clear();
        effects.propagate.clear();
    }

    /// Forgets everything held for client `id` (subscriptions, watched keys, blocked waits)
    /// when its connection closes.
    pub(crate) fn client_gone(&mut self, _id: u64) {}
}
