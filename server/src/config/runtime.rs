//! The one run-time configuration of a node ([`RuntimeConfig`]): every parameter a command,
//! a connection or the background tasks honour is a typed field here, read live where it
//! matters, and written only through its [`Binding`] (by `CONFIG SET`, or at start). The
//! parameters we accept and report without acting on are kept as text beside them.
//!
//! Nothing else holds a copy: a change is seen by the next command that reads it.

use super::table::{self, Param, MAXMEMORY_POLICIES};
use super::{Config, EnableCommand};
use crate::slowlog::LogType;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Mutex, RwLock};

/// A client class of `client-output-buffer-limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientClass {
    /// Ordinary clients.
    Normal = 0,
    /// Replicas fed by this node.
    Replica = 1,
    /// Clients subscribed to a channel.
    Pubsub = 2,
}

/// `client-output-buffer-limit` for one client class: a hard limit in bytes (0 = none), a
/// soft limit in bytes (0 = none) and how long the soft limit may be exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct OutputLimit {
    /// Disconnect as soon as this many bytes are pending.
    pub(crate) hard_bytes: u64,
    /// Disconnect when at least this many bytes stay pending for longer than `soft_seconds`.
    pub(crate) soft_bytes: u64,
    /// Seconds the soft limit may be exceeded.
    pub(crate) soft_seconds: u64,
}

impl OutputLimit {
    /// Whether a client with `pending` bytes queued at time `now_ms` must be disconnected, as
    /// Redis's `checkClientOutputBufferLimits`: the hard limit at once, the soft limit once it
    /// has been exceeded continuously for more than `soft_seconds`. `soft_since` remembers
    /// when the soft limit was first exceeded and is reset when the client drops below it.
    pub(crate) fn exceeded(&self, pending: u64, now_ms: u64, soft_since: &mut Option<u64>) -> bool {
        if self.hard_bytes > 0 && pending >= self.hard_bytes {
            return true;
        }
        if self.soft_bytes > 0 && pending >= self.soft_bytes {
            match *soft_since {
                None => {
                    *soft_since = Some(now_ms);
                    false
                }
                Some(since) => now_ms.saturating_sub(since) > self.soft_seconds * 1000,
            }
        } else {
            *soft_since = None;
            false
        }
    }
}

/// How one honoured parameter is read and written: `get` formats the typed value as `CONFIG
/// GET` shows it, `set` stores a value the table has already validated and normalized, and
/// `then` names what the node's state must redo once it changed.
#[derive(Debug)]
pub(crate) struct Binding {
    /// The canonical name in [`table::PARAMS`].
    pub(crate) name: &'static str,
    /// The value as `CONFIG GET` shows it.
    pub(crate) get: fn(&RuntimeConfig) -> String,
    /// Stores a validated value.
    pub(crate) set: fn(&RuntimeConfig, &str),
    /// The node-state step after a change, for the few parameters whose value is also
    /// applied to data structures (the rest are read live where they matter).
    pub(crate) then: Option<StateStep>,
}

/// A change the node's state applies after a parameter changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateStep {
    /// The eviction policy and how keys record accesses (LRU clock or LFU counter).
    Eviction,
    /// The slow log drops its entries beyond `slowlog-max-len` (when it is enabled), and
    /// Valkey's other command logs theirs beyond their max lengths.
    SlowLog,
    /// `requirepass` is the default user's password (Redis 7's
    /// `ACLUpdateDefaultUserPassword`).
    DefaultPassword,
    /// Keys are evicted at once when a lower `maxmemory` is exceeded (Redis's
    /// `updateMaxmemory`, which starts its eviction time event).
    MaxMemory,
}

/// The run-time configuration of one node, shared by the node and its state.
#[derive(Debug)]
pub(crate) struct RuntimeConfig {
    // Fixed for the node's life (immutable in Redis); atomics so that start-up settings go
    // through the same bindings as `CONFIG SET`.
    bind: RwLock<IpAddr>,
    port: AtomicU64,
    databases: AtomicU64,
    cluster_enabled: AtomicBool,
    enable_debug_command: AtomicU8,
    enable_module_command: AtomicU8,
    tcp_backlog: AtomicU64,
    /// Not a Redis parameter: the Lua interpreter's memory bound ([`Config::lua_memory_limit`]).
    lua_memory_limit: u64,
    /// The server the node reproduces ([`Config::compat`]).
    compat: crate::compat::Compat,
    /// Its profile's `Semantics::commandlog`, read by every command.
    commandlog: bool,

    requirepass: RwLock<Option<String>>,
    busy_reply_threshold_ms: AtomicU64,
    maxclients: AtomicU64,
    proto_max_bulk_len: AtomicU64,
    client_query_buffer_limit: AtomicU64,
    timeout_s: AtomicU64,
    maxmemory: AtomicU64,
    maxmemory_policy: AtomicU8,
    lfu_log_factor: AtomicU32,
    lfu_decay_time: AtomicU64,
    min_replicas_to_write: AtomicU64,
    min_replicas_max_lag: AtomicU64,
    repl_backlog_size: AtomicU64,
    replica_read_only: AtomicBool,
    replica_serve_stale_data: AtomicBool,
    notify_keyspace_events: AtomicU32,
    output_limits: [[AtomicU64; 3]; 3],
    hz: AtomicU64,
    active_expire_effort: AtomicU64,
    hash_max_listpack_entries: AtomicU64,
    hash_max_listpack_value: AtomicU64,
    set_max_intset_entries: AtomicU64,
    set_max_listpack_entries: AtomicU64,
    set_max_listpack_value: AtomicU64,
    hll_sparse_max_bytes: AtomicU64,
    stream_node_max_bytes: AtomicU64,
    stream_node_max_entries: AtomicU64,
    dir: RwLock<String>,
    dbfilename: RwLock<String>,
    slowlog_log_slower_than_us: AtomicI64,
    slowlog_max_len: AtomicU64,
    /// Valkey's `commandlog-request-larger-than` and `commandlog-reply-larger-than` in bytes
    /// (negative: that log is off; always off under Redis's target, which lacks them).
    commandlog_larger_than: [AtomicI64; 2],
    /// Valkey's `commandlog-large-request-max-len` and `commandlog-large-reply-max-len`.
    commandlog_max_len: [AtomicU64; 2],
    latency_monitor_threshold_ms: AtomicU64,
    /// Derived from the two above: the duration in µs from which a command interests the slow
    /// log or the latency monitor (`u64::MAX`: neither is on), so the pipeline decides with one
    /// load whether to time a command and with one comparison whether to look further.
    watch_calls_from_us: AtomicU64,
    tracking_table_max_keys: AtomicU64,
    lazyfree_lazy_eviction: AtomicBool,
    lazyfree_lazy_expire: AtomicBool,
    lazyfree_lazy_server_del: AtomicBool,
    lazyfree_lazy_user_del: AtomicBool,
    lazyfree_lazy_user_flush: AtomicBool,

    /// Parameters we validate and report but that change nothing here, as text.
    stored: Mutex<HashMap<&'static str, String>>,
}

/// What a new Lua interpreter is made with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LuaSettings {
    /// The interpreter's memory bound in bytes (0: none).
    pub(crate) memory_limit: usize,
    /// The node's compatibility target (the API's global names and version fields).
    pub(crate) compat: crate::compat::Compat,
}

/// A validated integer value (the table has checked it; 0 should it not parse).
fn number(value: &str) -> u64 {
    value.parse().unwrap_or(0)
}

fn read<T: Clone>(lock: &RwLock<T>) -> T {
    match lock.read() {
        Ok(guard) => guard.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

fn write<T>(lock: &RwLock<T>, value: T) {
    match lock.write() {
        Ok(mut guard) => *guard = value,
        Err(poisoned) => *poisoned.into_inner() = value,
    }
}

/// A binding for a parameter held in an `AtomicU64` field.
macro_rules! u64_binding {
    ($name:literal, $field:ident) => {
        Binding {
            name: $name,
            get: |c| c.$field.load(Relaxed).to_string(),
            set: |c, v| c.$field.store(number(v), Relaxed),
            then: None,
        }
    };
}

/// A binding for a `yes`/`no` parameter held in an `AtomicBool` field.
macro_rules! bool_binding {
    ($name:literal, $field:ident) => {
        Binding {
            name: $name,
            get: |c| yes_no(c.$field.load(Relaxed)),
            set: |c, v| c.$field.store(v == "yes", Relaxed),
            then: None,
        }
    };
}

/// Every parameter that changes behaviour, with how it is read and written. The order does
/// not matter; each name is a canonical name of [`table::PARAMS`] (a test checks).
pub(crate) static BINDINGS: &[Binding] = &[
    Binding {
        name: "bind",
        get: |c| read(&c.bind).to_string(),
        set: |c, v| {
            if let Ok(addr) = v.parse() {
                write(&c.bind, addr);
            }
        },
        then: None,
    },
    u64_binding!("port", port),
    u64_binding!("databases", databases),
    Binding {
        name: "cluster-enabled",
        get: |c| yes_no(c.cluster_enabled.load(Relaxed)),
        set: |c, v| c.cluster_enabled.store(v == "yes", Relaxed),
        then: None,
    },
    Binding {
        name: "enable-debug-command",
        get: |c| c.enable_debug_command().as_str().into(),
        set: |c, v| {
            let who: EnableCommand = v.parse().unwrap_or_default();
            c.enable_debug_command.store(who as u8, Relaxed);
        },
        then: None,
    },
    Binding {
        name: "enable-module-command",
        get: |c| c.enable_module_command().as_str().into(),
        set: |c, v| {
            let who: EnableCommand = v.parse().unwrap_or_default();
            c.enable_module_command.store(who as u8, Relaxed);
        },
        then: None,
    },
    u64_binding!("tcp-backlog", tcp_backlog),
    Binding {
        name: "requirepass",
        get: |c| read(&c.requirepass).unwrap_or_default(),
        set: |c, v| write(&c.requirepass, (!v.is_empty()).then(|| v.to_string())),
        then: Some(StateStep::DefaultPassword),
    },
    u64_binding!("busy-reply-threshold", busy_reply_threshold_ms),
    u64_binding!("maxclients", maxclients),
    u64_binding!("proto-max-bulk-len", proto_max_bulk_len),
    u64_binding!("client-query-buffer-limit", client_query_buffer_limit),
    u64_binding!("timeout", timeout_s),
    Binding {
        name: "maxmemory",
        get: |c| c.maxmemory.load(Relaxed).to_string(),
        set: |c, v| c.maxmemory.store(number(v), Relaxed),
        then: Some(StateStep::MaxMemory),
    },
    Binding {
        name: "maxmemory-policy",
        get: |c| c.maxmemory_policy().into(),
        set: |c, v| {
            let index = MAXMEMORY_POLICIES.iter().position(|p| *p == v).unwrap_or(0);
            c.maxmemory_policy.store(index as u8, Relaxed);
        },
        then: Some(StateStep::Eviction),
    },
    Binding {
        name: "lfu-log-factor",
        get: |c| c.lfu_log_factor.load(Relaxed).to_string(),
        set: |c, v| {
            let factor = u32::try_from(number(v)).unwrap_or(u32::MAX);
            c.lfu_log_factor.store(factor, Relaxed);
        },
        then: Some(StateStep::Eviction),
    },
    Binding {
        name: "lfu-decay-time",
        get: |c| c.lfu_decay_time.load(Relaxed).to_string(),
        set: |c, v| c.lfu_decay_time.store(number(v), Relaxed),
        then: Some(StateStep::Eviction),
    },
    u64_binding!("min-replicas-to-write", min_replicas_to_write),
    u64_binding!("min-replicas-max-lag", min_replicas_max_lag),
    u64_binding!("repl-backlog-size", repl_backlog_size),
    bool_binding!("replica-read-only", replica_read_only),
    bool_binding!("replica-serve-stale-data", replica_serve_stale_data),
    Binding {
        name: "notify-keyspace-events",
        get: |c| crate::notify::format_flags(c.notify_keyspace_events()),
        set: |c, v| {
            let flags = crate::notify::parse_flags(v.as_bytes()).unwrap_or(0);
            c.notify_keyspace_events.store(flags, Relaxed);
        },
        then: None,
    },
    Binding {
        name: "client-output-buffer-limit",
        get: |c| {
            table::format_buffer_limits(&[
                c.output_limit(ClientClass::Normal),
                c.output_limit(ClientClass::Replica),
                c.output_limit(ClientClass::Pubsub),
            ])
        },
        set: |c, v| {
            let current = [
                c.output_limit(ClientClass::Normal),
                c.output_limit(ClientClass::Replica),
                c.output_limit(ClientClass::Pubsub),
            ];
            let limits = table::parse_buffer_limits(v.as_bytes(), current).unwrap_or(current);
            for (slots, limit) in c.output_limits.iter().zip(limits) {
                let [hard, soft, seconds] = slots;
                hard.store(limit.hard_bytes, Relaxed);
                soft.store(limit.soft_bytes, Relaxed);
                seconds.store(limit.soft_seconds, Relaxed);
            }
        },
        then: None,
    },
    u64_binding!("hz", hz),
    u64_binding!("active-expire-effort", active_expire_effort),
    u64_binding!("hash-max-listpack-entries", hash_max_listpack_entries),
    u64_binding!("hash-max-listpack-value", hash_max_listpack_value),
    u64_binding!("set-max-intset-entries", set_max_intset_entries),
    u64_binding!("set-max-listpack-entries", set_max_listpack_entries),
    u64_binding!("set-max-listpack-value", set_max_listpack_value),
    u64_binding!("hll-sparse-max-bytes", hll_sparse_max_bytes),
    u64_binding!("stream-node-max-bytes", stream_node_max_bytes),
    u64_binding!("stream-node-max-entries", stream_node_max_entries),
    u64_binding!("tracking-table-max-keys", tracking_table_max_keys),
    bool_binding!("lazyfree-lazy-eviction", lazyfree_lazy_eviction),
    bool_binding!("lazyfree-lazy-expire", lazyfree_lazy_expire),
    bool_binding!("lazyfree-lazy-server-del", lazyfree_lazy_server_del),
    bool_binding!("lazyfree-lazy-user-del", lazyfree_lazy_user_del),
    bool_binding!("lazyfree-lazy-user-flush", lazyfree_lazy_user_flush),
    Binding {
        name: "dir",
        get: |c| read(&c.dir),
        set: |c, v| write(&c.dir, v.to_string()),
        then: None,
    },
    Binding {
        name: "dbfilename",
        get: |c| read(&c.dbfilename),
        set: |c, v| write(&c.dbfilename, v.to_string()),
        then: None,
    },
    Binding {
        name: "slowlog-log-slower-than",
        get: |c| c.slowlog_log_slower_than_us.load(Relaxed).to_string(),
        set: |c, v| {
            c.slowlog_log_slower_than_us
                .store(v.parse().unwrap_or(-1), Relaxed);
            c.update_watch();
        },
        then: Some(StateStep::SlowLog),
    },
    Binding {
        name: "slowlog-max-len",
        get: |c| c.slowlog_max_len.load(Relaxed).to_string(),
        set: |c, v| c.slowlog_max_len.store(number(v), Relaxed),
        then: Some(StateStep::SlowLog),
    },
    Binding {
        name: "commandlog-request-larger-than",
        get: |c| c.commandlog_larger_than[0].load(Relaxed).to_string(),
        set: |c, v| c.commandlog_larger_than[0].store(v.parse().unwrap_or(-1), Relaxed),
        then: Some(StateStep::SlowLog),
    },
    Binding {
        name: "commandlog-large-request-max-len",
        get: |c| c.commandlog_max_len[0].load(Relaxed).to_string(),
        set: |c, v| c.commandlog_max_len[0].store(number(v), Relaxed),
        then: Some(StateStep::SlowLog),
    },
    Binding {
        name: "commandlog-reply-larger-than",
        get: |c| c.commandlog_larger_than[1].load(Relaxed).to_string(),
        set: |c, v| c.commandlog_larger_than[1].store(v.parse().unwrap_or(-1), Relaxed),
        then: Some(StateStep::SlowLog),
    },
    Binding {
        name: "commandlog-large-reply-max-len",
        get: |c| c.commandlog_max_len[1].load(Relaxed).to_string(),
        set: |c, v| c.commandlog_max_len[1].store(number(v), Relaxed),
        then: Some(StateStep::SlowLog),
    },
    Binding {
        name: "latency-monitor-threshold",
        get: |c| c.latency_monitor_threshold_ms.load(Relaxed).to_string(),
        set: |c, v| {
            c.latency_monitor_threshold_ms.store(number(v), Relaxed);
            c.update_watch();
        },
        then: None,
    },
];

fn yes_no(on: bool) -> String {
    if on { "yes" } else { "no" }.into()
}

/// The binding of the parameter called `name` (canonical), if it changes behaviour.
pub(crate) fn binding(name: &str) -> Option<&'static Binding> {
    BINDINGS.iter().find(|b| b.name == name)
}

impl RuntimeConfig {
    /// The configuration of a node started with `config`: Redis's defaults, then the typed
    /// start-up fields, then [`Config::settings`] in order, each through its binding. The
    /// error names the first setting that is unknown or invalid.
    pub(crate) fn new(config: &Config) -> Result<RuntimeConfig, String> {
        let runtime = RuntimeConfig {
            bind: RwLock::new(config.bind),
            port: AtomicU64::new(0),
            databases: AtomicU64::new(0),
            cluster_enabled: AtomicBool::new(false),
            enable_debug_command: AtomicU8::new(0),
            enable_module_command: AtomicU8::new(0),
            tcp_backlog: AtomicU64::new(0),
            lua_memory_limit: config.lua_memory_limit,
            compat: config.compat,
            commandlog: config.compat.profile().semantics.commandlog,
            requirepass: RwLock::new(None),
            busy_reply_threshold_ms: AtomicU64::new(0),
            maxclients: AtomicU64::new(0),
            proto_max_bulk_len: AtomicU64::new(0),
            client_query_buffer_limit: AtomicU64::new(0),
            timeout_s: AtomicU64::new(0),
            maxmemory: AtomicU64::new(0),
            maxmemory_policy: AtomicU8::new(0),
            lfu_log_factor: AtomicU32::new(0),
            lfu_decay_time: AtomicU64::new(0),
            min_replicas_to_write: AtomicU64::new(0),
            min_replicas_max_lag: AtomicU64::new(0),
            repl_backlog_size: AtomicU64::new(0),
            replica_read_only: AtomicBool::new(true),
            replica_serve_stale_data: AtomicBool::new(true),
            notify_keyspace_events: AtomicU32::new(0),
            output_limits: Default::default(),
            hz: AtomicU64::new(0),
            active_expire_effort: AtomicU64::new(0),
            hash_max_listpack_entries: AtomicU64::new(0),
            hash_max_listpack_value: AtomicU64::new(0),
            set_max_intset_entries: AtomicU64::new(0),
            set_max_listpack_entries: AtomicU64::new(0),
            set_max_listpack_value: AtomicU64::new(0),
            hll_sparse_max_bytes: AtomicU64::new(0),
            stream_node_max_bytes: AtomicU64::new(0),
            stream_node_max_entries: AtomicU64::new(0),
            dir: RwLock::new(String::new()),
            dbfilename: RwLock::new(String::new()),
            slowlog_log_slower_than_us: AtomicI64::new(-1),
            slowlog_max_len: AtomicU64::new(0),
            commandlog_larger_than: [AtomicI64::new(-1), AtomicI64::new(-1)],
            commandlog_max_len: [AtomicU64::new(0), AtomicU64::new(0)],
            latency_monitor_threshold_ms: AtomicU64::new(0),
            watch_calls_from_us: AtomicU64::new(u64::MAX),
            tracking_table_max_keys: AtomicU64::new(0),
            lazyfree_lazy_eviction: AtomicBool::new(false),
            lazyfree_lazy_expire: AtomicBool::new(false),
            lazyfree_lazy_server_del: AtomicBool::new(false),
            lazyfree_lazy_user_del: AtomicBool::new(false),
            lazyfree_lazy_user_flush: AtomicBool::new(false),
            stored: Mutex::new(HashMap::new()),
        };
        for param in table::params(config.compat) {
            runtime.store(param, param.default);
        }
        for (name, value) in config.compat.profile().config.defaults {
            runtime.set_at_start(name, value)?;
        }
        let dir = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        // The typed start-up fields are valid by construction; they go through the bindings
        // as they are. The keyspace-event letters are text, so they are validated.
        let typed = [
            ("bind", config.bind.to_string()),
            ("port", config.port.to_string()),
            ("databases", config.databases.max(1).to_string()),
            ("maxclients", config.maxclients.to_string()),
            (
                "busy-reply-threshold",
                config.busy_reply_threshold.as_millis().to_string(),
            ),
            (
                "requirepass",
                config.requirepass.clone().unwrap_or_default(),
            ),
            ("cluster-enabled", yes_no(config.cluster_enabled)),
            ("tcp-backlog", config.tcp_backlog.to_string()),
            (
                "enable-debug-command",
                config.enable_debug_command.as_str().into(),
            ),
            ("dir", dir),
        ];
        for (name, value) in &typed {
            if let Some(binding) = binding(name) {
                (binding.set)(&runtime, value);
            }
        }
        runtime.set_at_start("notify-keyspace-events", &config.notify_keyspace_events)?;
        for (name, value) in &config.settings {
            runtime.set_at_start(name, value)?;
        }
        Ok(runtime)
    }

    /// The default configuration, for unit tests.
    #[cfg(test)]
    pub(crate) fn for_tests() -> RuntimeConfig {
        match RuntimeConfig::new(&Config::default()) {
            Ok(config) => config,
            Err(e) => panic!("the default configuration is invalid: {e}"),
        }
    }

    /// A start-up setting (redis-server's `--name value`): validated as `CONFIG SET`
    /// validates it, except that immutable and protected parameters may be given.
    fn set_at_start(&self, name: &str, value: &str) -> Result<(), String> {
        let Some(param) = self.find(name.as_bytes()) else {
            return Err(format!("unknown config parameter '{name}'"));
        };
        let normalized = param
            .validate_value(value.as_bytes(), self)
            .map_err(|reason| format!("'{name} {value}': {reason}"))?;
        self.store(param, &normalized);
        Ok(())
    }

    /// Stores an already validated value of `param`: through its binding when it changes
    /// behaviour, as text otherwise.
    pub(crate) fn store(&self, param: &'static Param, value: &str) {
        match binding(param.name) {
            Some(binding) => (binding.set)(self, value),
            None => {
                self.stored().insert(param.name, value.to_string());
            }
        }
    }

    /// The parameters kept as text.
    fn stored(&self) -> std::sync::MutexGuard<'_, HashMap<&'static str, String>> {
        match self.stored.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The value of `param` as `CONFIG GET` shows it.
    pub(crate) fn get(&self, param: &Param) -> String {
        match binding(param.name) {
            Some(binding) => (binding.get)(self),
            None => self.stored().get(param.name).cloned().unwrap_or_default(),
        }
    }

    /// The parameter called `name` (or aliased so) under the node's compatibility target.
    pub(crate) fn find(&self, name: &[u8]) -> Option<&'static Param> {
        table::find_for(self.compat, name)
    }

    /// The parameters `CONFIG GET` lists for a pattern under the node's target, each with
    /// every name it is listed by.
    pub(crate) fn listed(&self) -> impl Iterator<Item = (&'static Param, Vec<&'static str>)> {
        let compat = self.compat;
        table::params(compat).map(move |p| (p, table::listed_names(compat, p)))
    }

    /// The node's compatibility target.
    pub(crate) fn compat(&self) -> crate::compat::Compat {
        self.compat
    }

    /// Whether the target keeps Valkey's command log (`compat::Semantics::commandlog`): the
    /// one check every command makes for it.
    #[inline]
    pub(crate) fn commandlog(&self) -> bool {
        self.commandlog
    }

    /// What the node's compatibility target decides (versions, `INFO server`'s fields).
    pub(crate) fn profile(&self) -> &'static crate::compat::Profile {
        self.compat.profile()
    }

    /// `extended-redis-compatibility` (Valkey's parameter): the node names itself as Redis
    /// (`HELLO`, error texts, `INFO`'s mode field). Off under Redis's target.
    pub(crate) fn extended_redis(&self) -> Option<crate::compat::ExtendedRedis> {
        let alias = self.profile().extended_redis?;
        let on = self
            .stored()
            .get("extended-redis-compatibility")
            .is_some_and(|v| v == "yes");
        on.then_some(alias)
    }

    /// `HELLO`'s `server` and `version`.
    pub(crate) fn hello_identity(&self) -> (&'static str, &'static str) {
        match self.extended_redis() {
            Some(alias) => (alias.server_name, alias.version),
            None => (self.profile().server_name, self.profile().version),
        }
    }

    /// What error texts call the server (`Redis`, `Valkey`).
    pub(crate) fn title(&self) -> &'static str {
        self.extended_redis()
            .map_or(self.profile().title, |alias| alias.title)
    }

    /// `availability-zone` (Valkey's parameter; empty when unset or under Redis's target).
    pub(crate) fn availability_zone(&self) -> String {
        self.stored()
            .get("availability-zone")
            .cloned()
            .unwrap_or_default()
    }

    /// `bind`.
    pub(crate) fn bind(&self) -> IpAddr {
        read(&self.bind)
    }

    /// `port` (the port bound, once the listener is).
    pub(crate) fn port(&self) -> u16 {
        u16::try_from(self.port.load(Relaxed)).unwrap_or(0)
    }

    /// Records the port the listener was bound to (`port 0` picks one).
    pub(crate) fn set_bound_port(&self, port: u16) {
        self.port.store(u64::from(port), Relaxed);
    }

    /// `databases`.
    pub(crate) fn databases(&self) -> usize {
        usize::try_from(self.databases.load(Relaxed))
            .unwrap_or(1)
            .max(1)
    }

    /// `cluster-enabled`.
    pub(crate) fn cluster_enabled(&self) -> bool {
        self.cluster_enabled.load(Relaxed)
    }

    /// `enable-debug-command`.
    pub(crate) fn enable_debug_command(&self) -> EnableCommand {
        match self.enable_debug_command.load(Relaxed) {
            1 => EnableCommand::Yes,
            2 => EnableCommand::Local,
            _ => EnableCommand::No,
        }
    }

    /// `enable-module-command`.
    pub(crate) fn enable_module_command(&self) -> EnableCommand {
        match self.enable_module_command.load(Relaxed) {
            1 => EnableCommand::Yes,
            2 => EnableCommand::Local,
            _ => EnableCommand::No,
        }
    }

    /// `tcp-backlog`.
    pub(crate) fn tcp_backlog(&self) -> u32 {
        u32::try_from(self.tcp_backlog.load(Relaxed)).unwrap_or(u32::MAX)
    }

    /// What a new Lua interpreter is made with: its memory bound and the node's target.
    pub(crate) fn lua(&self) -> LuaSettings {
        LuaSettings {
            memory_limit: usize::try_from(self.lua_memory_limit).unwrap_or(usize::MAX),
            compat: self.compat,
        }
    }

    /// `requirepass` (`None`: clients need not authenticate).
    pub(crate) fn requirepass(&self) -> Option<String> {
        read(&self.requirepass)
    }

    /// `busy-reply-threshold` in ms.
    pub(crate) fn busy_reply_threshold_ms(&self) -> u64 {
        self.busy_reply_threshold_ms.load(Relaxed)
    }

    /// `maxclients`.
    pub(crate) fn maxclients(&self) -> u64 {
        self.maxclients.load(Relaxed)
    }

    /// `proto-max-bulk-len`: the longest bulk string a client may send, and the most a
    /// string value may grow to.
    pub(crate) fn proto_max_bulk_len(&self) -> u64 {
        self.proto_max_bulk_len.load(Relaxed)
    }

    /// `client-query-buffer-limit`: a client whose unprocessed input grows past it is closed.
    pub(crate) fn client_query_buffer_limit(&self) -> u64 {
        self.client_query_buffer_limit.load(Relaxed)
    }

    /// `timeout` in seconds: close clients idle this long (0: never).
    pub(crate) fn timeout_s(&self) -> u64 {
        self.timeout_s.load(Relaxed)
    }

    /// `maxmemory` in bytes (0: no limit).
    pub(crate) fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Relaxed)
    }

    /// `maxmemory-policy`, as one of [`MAXMEMORY_POLICIES`].
    pub(crate) fn maxmemory_policy(&self) -> &'static str {
        let index = usize::from(self.maxmemory_policy.load(Relaxed));
        MAXMEMORY_POLICIES
            .get(index)
            .copied()
            .unwrap_or("noeviction")
    }

    /// `lfu-log-factor`.
    pub(crate) fn lfu_log_factor(&self) -> u32 {
        self.lfu_log_factor.load(Relaxed)
    }

    /// `lfu-decay-time` in minutes.
    pub(crate) fn lfu_decay_time(&self) -> u64 {
        self.lfu_decay_time.load(Relaxed)
    }

    /// `min-replicas-to-write` (0: writes never wait for replicas).
    pub(crate) fn min_replicas_to_write(&self) -> u64 {
        self.min_replicas_to_write.load(Relaxed)
    }

    /// `min-replicas-max-lag` in seconds.
    pub(crate) fn min_replicas_max_lag(&self) -> u64 {
        self.min_replicas_max_lag.load(Relaxed)
    }

    /// `notify-keyspace-events`, as [`crate::notify`] flags.
    pub(crate) fn notify_keyspace_events(&self) -> u32 {
        self.notify_keyspace_events.load(Relaxed)
    }

    /// `client-output-buffer-limit` of one client class.
    pub(crate) fn output_limit(&self, class: ClientClass) -> OutputLimit {
        let [hard, soft, seconds] = self
            .output_limits
            .get(class as usize)
            .map(|slots| slots.each_ref().map(|v| v.load(Relaxed)))
            .unwrap_or_default();
        OutputLimit {
            hard_bytes: hard,
            soft_bytes: soft,
            soft_seconds: seconds,
        }
    }

    /// `hz`: background task runs per second (1..=500, as Redis clamps it).
    pub(crate) fn hz(&self) -> u64 {
        self.hz.load(Relaxed).clamp(1, 500)
    }

    /// `active-expire-effort` (1..=10): how much time the active expiry cycle may take, and
    /// so how many keys it reclaims before it lets the others run.
    pub(crate) fn active_expire_effort(&self) -> u64 {
        self.active_expire_effort.load(Relaxed).clamp(1, 10)
    }

    /// `hash-max-listpack-entries`: most fields a hash holds before it becomes a table.
    pub(crate) fn hash_max_listpack_entries(&self) -> usize {
        usize::try_from(self.hash_max_listpack_entries.load(Relaxed)).unwrap_or(usize::MAX)
    }

    /// `hash-max-listpack-value`: longest field or value (bytes) a hash holds before it
    /// becomes a table.
    pub(crate) fn hash_max_listpack_value(&self) -> usize {
        usize::try_from(self.hash_max_listpack_value.load(Relaxed)).unwrap_or(usize::MAX)
    }

    /// `set-max-intset-entries`: most integers a set holds as an intset.
    pub(crate) fn set_max_intset_entries(&self) -> usize {
        usize::try_from(self.set_max_intset_entries.load(Relaxed)).unwrap_or(usize::MAX)
    }

    /// `set-max-listpack-entries` (Valkey's; 0 under a target without it): most members a
    /// set holds as a listpack.
    pub(crate) fn set_max_listpack_entries(&self) -> usize {
        usize::try_from(self.set_max_listpack_entries.load(Relaxed)).unwrap_or(usize::MAX)
    }

    /// `set-max-listpack-value` (Valkey's): longest member a listpack set holds.
    pub(crate) fn set_max_listpack_value(&self) -> usize {
        usize::try_from(self.set_max_listpack_value.load(Relaxed)).unwrap_or(usize::MAX)
    }

    /// `hll-sparse-max-bytes`.
    pub(crate) fn hll_sparse_max_bytes(&self) -> usize {
        usize::try_from(self.hll_sparse_max_bytes.load(Relaxed)).unwrap_or(usize::MAX)
    }

    /// `stream-node-max-bytes` (0: no bound).
    pub(crate) fn stream_node_max_bytes(&self) -> usize {
        usize::try_from(self.stream_node_max_bytes.load(Relaxed)).unwrap_or(usize::MAX)
    }

    /// `stream-node-max-entries` (0: no bound).
    pub(crate) fn stream_node_max_entries(&self) -> usize {
        usize::try_from(self.stream_node_max_entries.load(Relaxed)).unwrap_or(usize::MAX)
    }

    /// `dir`.
    pub(crate) fn dir(&self) -> String {
        read(&self.dir)
    }

    /// A parameter kept as text (no binding), as `CONFIG GET` shows it.
    fn text(&self, name: &str) -> String {
        self.stored().get(name).cloned().unwrap_or_default()
    }

    /// `repl-backlog-size`: bytes of the replication stream kept for partial resyncs.
    pub(crate) fn repl_backlog_size(&self) -> usize {
        usize::try_from(self.repl_backlog_size.load(Relaxed)).unwrap_or(usize::MAX)
    }

    /// `replica-read-only`: a replica refuses writes from its clients.
    pub(crate) fn replica_read_only(&self) -> bool {
        self.replica_read_only.load(Relaxed)
    }

    /// `replica-serve-stale-data`: a replica whose link to its master is down still serves
    /// its clients (no: only commands flagged `stale`).
    pub(crate) fn replica_serve_stale_data(&self) -> bool {
        self.replica_serve_stale_data.load(Relaxed)
    }

    /// `masterauth` (empty: none) and `masteruser` (empty: the default user), what a replica
    /// authenticates to its master with.
    pub(crate) fn master_credentials(&self) -> Option<(Option<String>, String)> {
        let pass = self.text("masterauth");
        let user = self.text("masteruser");
        (!pass.is_empty()).then(|| ((!user.is_empty()).then_some(user), pass))
    }

    /// `repl-ping-replica-period`: seconds between the PINGs a master sends its replicas.
    pub(crate) fn repl_ping_replica_period(&self) -> u64 {
        self.text("repl-ping-replica-period")
            .parse()
            .unwrap_or(10)
            .max(1)
    }

    /// `replicaof host port` given at start: the master to follow.
    pub(crate) fn replicaof(&self) -> Option<(String, u16)> {
        let text = self.text("replicaof");
        let mut words = text.split_whitespace();
        let host = words.next()?.to_string();
        let port = words.next()?.parse().ok().filter(|p| *p > 0)?;
        Some((host, port))
    }

    /// `repl-timeout`: seconds without data after which a replication link is dropped.
    pub(crate) fn repl_timeout(&self) -> u64 {
        self.text("repl-timeout").parse().unwrap_or(60).max(1)
    }

    /// `replica-announce-port` (0: the port the node listens on).
    pub(crate) fn replica_announce_port(&self) -> u16 {
        self.text("replica-announce-port").parse().unwrap_or(0)
    }

    /// `aclfile` (empty: none).
    pub(crate) fn aclfile(&self) -> String {
        self.text("aclfile")
    }

    /// `unixsocket`: the path of the Unix socket to listen on as well (empty: none).
    pub(crate) fn unixsocket(&self) -> String {
        self.text("unixsocket")
    }

    /// `unixsocketperm`: the mode given to the Unix socket's file (0: the umask's).
    pub(crate) fn unixsocketperm(&self) -> u32 {
        super::table::parse_octal(self.text("unixsocketperm").as_bytes())
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    }

    /// `acllog-max-len`.
    pub(crate) fn acllog_max_len(&self) -> u64 {
        self.text("acllog-max-len").parse().unwrap_or(128)
    }

    /// `acl-pubsub-default allchannels`: new users may use every channel.
    pub(crate) fn acl_pubsub_default_all(&self) -> bool {
        self.text("acl-pubsub-default") == "allchannels"
    }

    /// `lazyfree-lazy-eviction`: an evicted key is freed lazily, and goes to replicas as
    /// `UNLINK` (Redis's `propagateDeletion`).
    pub(crate) fn lazyfree_lazy_eviction(&self) -> bool {
        self.lazyfree_lazy_eviction.load(Relaxed)
    }

    /// `lazyfree-lazy-expire`: a key reclaimed because its TTL ran out (or given a TTL in the
    /// past) is freed lazily, and goes to replicas as `UNLINK`.
    pub(crate) fn lazyfree_lazy_expire(&self) -> bool {
        self.lazyfree_lazy_expire.load(Relaxed)
    }

    /// `lazyfree-lazy-server-del`: a key a command deletes as a side effect (SPOP of the last
    /// members, RESTORE REPLACE of an expired payload) goes to replicas as `UNLINK`.
    pub(crate) fn lazyfree_lazy_server_del(&self) -> bool {
        self.lazyfree_lazy_server_del.load(Relaxed)
    }

    /// `lazyfree-lazy-user-del`: DEL frees as UNLINK does.
    pub(crate) fn lazyfree_lazy_user_del(&self) -> bool {
        self.lazyfree_lazy_user_del.load(Relaxed)
    }

    /// `lazyfree-lazy-user-flush`: FLUSHALL and FLUSHDB without a mode free as with `ASYNC`.
    pub(crate) fn lazyfree_lazy_user_flush(&self) -> bool {
        self.lazyfree_lazy_user_flush.load(Relaxed)
    }

    /// `list-max-listpack-size`: a quicklist node's limit, in elements (positive) or as one of
    /// Redis's size classes (-1 for 4 KB .. -5 for 64 KB).
    pub(crate) fn list_max_listpack_size(&self) -> i64 {
        self.stored_int("list-max-listpack-size").unwrap_or(-2)
    }

    /// `list-compress-depth`: nodes at each end of a list left uncompressed (0: none is).
    pub(crate) fn list_compress_depth(&self) -> i64 {
        self.stored_int("list-compress-depth").unwrap_or(0)
    }

    /// `rdbcompression`: strings in RDB files and `DUMP` payloads are LZF-compressed.
    pub(crate) fn rdbcompression(&self) -> bool {
        super::table::find(b"rdbcompression").is_none_or(|param| self.get(param) == "yes")
    }

    /// A parameter kept as text, as an integer.
    fn stored_int(&self, name: &str) -> Option<i64> {
        let param = super::table::find(name.as_bytes())?;
        self.get(param).parse().ok()
    }

    /// `dbfilename`.
    pub(crate) fn dbfilename(&self) -> String {
        read(&self.dbfilename)
    }

    /// `slowlog-log-slower-than` in µs (negative: the slow log is off; 0: every command).
    pub(crate) fn slowlog_log_slower_than(&self) -> i64 {
        self.slowlog_log_slower_than_us.load(Relaxed)
    }

    /// `tracking-table-max-keys` (0: no limit).
    pub(crate) fn tracking_table_max_keys(&self) -> u64 {
        self.tracking_table_max_keys.load(Relaxed)
    }

    /// `slowlog-max-len`.
    pub(crate) fn slowlog_max_len(&self) -> usize {
        usize::try_from(self.slowlog_max_len.load(Relaxed)).unwrap_or(usize::MAX)
    }

    /// The threshold of command log `t` (`slowlog-log-slower-than` in µs for the slow log,
    /// Valkey's `commandlog-*-larger-than` in bytes for the others); negative: the log is off.
    pub(crate) fn commandlog_threshold(&self, t: LogType) -> i64 {
        match t {
            LogType::Slow => self.slowlog_log_slower_than(),
            LogType::LargeRequest => self.commandlog_larger_than[0].load(Relaxed),
            LogType::LargeReply => self.commandlog_larger_than[1].load(Relaxed),
        }
    }

    /// The max length of command log `t` (`slowlog-max-len` for the slow log).
    pub(crate) fn commandlog_max_len(&self, t: LogType) -> usize {
        let len = match t {
            LogType::Slow => return self.slowlog_max_len(),
            LogType::LargeRequest => self.commandlog_max_len[0].load(Relaxed),
            LogType::LargeReply => self.commandlog_max_len[1].load(Relaxed),
        };
        usize::try_from(len).unwrap_or(usize::MAX)
    }

    /// `latency-monitor-threshold` in ms (0: the latency monitor is off).
    pub(crate) fn latency_monitor_threshold_ms(&self) -> u64 {
        self.latency_monitor_threshold_ms.load(Relaxed)
    }

    /// The shortest command duration, in µs, that the slow log or the latency monitor
    /// records; `u64::MAX` when both are off (commands then need not be timed for them).
    pub(crate) fn watch_calls_from_us(&self) -> u64 {
        self.watch_calls_from_us.load(Relaxed)
    }

    /// Recomputes [`RuntimeConfig::watch_calls_from_us`] after either threshold changed.
    fn update_watch(&self) {
        let slowlog = u64::try_from(self.slowlog_log_slower_than()).unwrap_or(u64::MAX);
        let latency = match self.latency_monitor_threshold_ms() {
            0 => u64::MAX,
            ms => ms.saturating_mul(1000),
        };
        self.watch_calls_from_us
            .store(slowlog.min(latency), Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binding_names_a_canonical_parameter_once() {
        let mut seen = std::collections::HashSet::new();
        for b in BINDINGS {
            // A parameter of some target (Valkey's own ones are bound too).
            let param = crate::compat::Compat::ALL
                .into_iter()
                .find_map(|c| table::find_for(c, b.name.as_bytes()))
                .unwrap_or_else(|| panic!("{} is not a parameter", b.name));
            assert_eq!(param.name, b.name, "bindings use canonical names");
            assert!(seen.insert(b.name), "{} bound twice", b.name);
        }
    }

    #[test]
    fn defaults_read_back_as_the_table_has_them() {
        let config = Config::default();
        let runtime = RuntimeConfig::new(&config).expect("default config is valid");
        for param in table::PARAMS {
            let shown = runtime.get(param);
            match param.name {
                // Set from the start-up `Config`, where our defaults differ from Redis's.
                "bind" | "port" | "dir" => continue,
                _ => assert_eq!(shown, param.default, "{}", param.name),
            }
        }
        assert_eq!(runtime.maxmemory_policy(), "noeviction");
        assert_eq!(runtime.busy_reply_threshold_ms(), 5000);
        assert_eq!(runtime.databases(), 16);
        assert!(runtime.requirepass().is_none());
    }

    #[test]
    fn start_up_settings_go_through_the_bindings() {
        let config = Config {
            requirepass: Some("secret".into()),
            settings: vec![
                ("maxmemory".into(), "1mb".into()),
                ("maxmemory-policy".into(), "ALLKEYS-LFU".into()),
                (
                    "client-output-buffer-limit".into(),
                    "pubsub 1mb 2mb 3".into(),
                ),
                ("lua-time-limit".into(), "250".into()),
            ],
            ..Config::default()
        };
        let runtime = RuntimeConfig::new(&config).expect("valid settings");
        assert_eq!(runtime.maxmemory(), 1024 * 1024);
        assert_eq!(runtime.maxmemory_policy(), "allkeys-lfu");
        assert_eq!(runtime.busy_reply_threshold_ms(), 250);
        assert_eq!(runtime.requirepass().as_deref(), Some("secret"));
        assert_eq!(
            runtime.output_limit(ClientClass::Pubsub),
            OutputLimit {
                hard_bytes: 1024 * 1024,
                soft_bytes: 2 * 1024 * 1024,
                soft_seconds: 3
            }
        );
        assert_eq!(
            runtime.output_limit(ClientClass::Replica).hard_bytes,
            256 << 20
        );
        assert_eq!(
            RuntimeConfig::for_tests().output_limit(ClientClass::Pubsub),
            PUBSUB_DEFAULT
        );
        let bad = Config {
            settings: vec![("maxmemory".into(), "lots".into())],
            ..Config::default()
        };
        assert_eq!(
            RuntimeConfig::new(&bad).err().as_deref(),
            Some("'maxmemory lots': argument must be a memory value")
        );
        let unknown = Config {
            settings: vec![("no-such".into(), "1".into())],
            ..Config::default()
        };
        assert!(RuntimeConfig::new(&unknown).is_err());
    }

    /// Redis's default for the pubsub class: `client-output-buffer-limit pubsub 32mb 8mb 60`.
    const PUBSUB_DEFAULT: OutputLimit = OutputLimit {
        hard_bytes: 32 * 1024 * 1024,
        soft_bytes: 8 * 1024 * 1024,
        soft_seconds: 60,
    };

    #[test]
    fn the_call_watch_follows_both_thresholds() {
        let runtime = RuntimeConfig::for_tests();
        // Redis's defaults: the slow log at 10 ms, the latency monitor off.
        assert_eq!(runtime.watch_calls_from_us(), 10_000);
        let set = |name: &str, value: &str| {
            let param = table::find(name.as_bytes()).expect("a parameter");
            runtime.store(param, value);
        };
        set("latency-monitor-threshold", "5");
        assert_eq!(runtime.watch_calls_from_us(), 5_000);
        set("slowlog-log-slower-than", "-1");
        assert_eq!(runtime.watch_calls_from_us(), 5_000);
        set("latency-monitor-threshold", "0");
        assert_eq!(runtime.watch_calls_from_us(), u64::MAX);
        set("slowlog-log-slower-than", "0");
        assert_eq!(runtime.watch_calls_from_us(), 0);
        assert_eq!(runtime.slowlog_log_slower_than(), 0);
        assert_eq!(runtime.slowlog_max_len(), 128);
    }

    #[test]
    fn hard_limit_disconnects_at_once() {
        let limit = PUBSUB_DEFAULT;
        let mut since = None;
        assert!(!limit.exceeded(1024, 0, &mut since));
        assert!(limit.exceeded(32 * 1024 * 1024, 0, &mut since));
    }

    #[test]
    fn soft_limit_disconnects_only_when_sustained_past_its_seconds() {
        let limit = PUBSUB_DEFAULT;
        let mut since = None;
        let over = 9 * 1024 * 1024;
        assert!(!limit.exceeded(over, 1_000, &mut since));
        assert_eq!(since, Some(1_000));
        assert!(!limit.exceeded(over, 61_000, &mut since));
        assert!(limit.exceeded(over, 61_001, &mut since));
        // Dropping below the soft limit resets the clock.
        assert!(!limit.exceeded(10, 62_000, &mut since));
        assert_eq!(since, None);
        assert!(!limit.exceeded(over, 200_000, &mut since));
    }

    #[test]
    fn zero_limits_never_disconnect() {
        let limit = OutputLimit::default();
        let mut since = None;
        assert!(!limit.exceeded(u64::MAX, 0, &mut since));
    }
}
