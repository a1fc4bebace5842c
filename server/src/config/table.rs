//! Every configuration parameter Redis 7.0 knows (`CONFIG GET|SET`), with Redis's defaults,
//! validation and error texts. The values themselves live in
//! [`RuntimeConfig`](super::runtime::RuntimeConfig).
//!
//! The table was taken from a real `redis-server` 7.0.15 (`CONFIG GET *`, then `CONFIG SET`
//! of each name with good and bad values to learn its type, range and mutability). Parameters
//! that change our behaviour have a binding in [`super::runtime::BINDINGS`]; the others are
//! stored, validated as Redis validates them, and reported back.

use super::runtime::{OutputLimit, RuntimeConfig};
use crate::compat::Compat;

/// `CONFIG SET` refuses it: `can't set immutable config`.
pub(crate) const IMMUTABLE: u8 = 1 << 0;
/// `CONFIG SET` refuses it unless `enable-protected-configs`: `can't set protected config`.
pub(crate) const PROTECTED: u8 = 1 << 1;
/// Holds a secret.
pub(crate) const SENSITIVE: u8 = 1 << 2;
/// Not listed by a `CONFIG GET` pattern, only by its exact name (Redis's test and debugging
/// parameters, `HIDDEN_CONFIG`).
pub(crate) const HIDDEN: u8 = 1 << 3;

/// How a parameter's value is parsed and validated.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// `yes` / `no`.
    Bool,
    /// A decimal integer within `min..=max`.
    Int {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// An octal integer within `0..=max` (a file mode: `unixsocketperm 700`); shown in octal.
    Octal {
        /// Largest accepted value.
        max: u32,
    },
    /// A byte count with an optional unit (`1gb`, `100k`); shown in bytes.
    Memory,
    /// A byte count or a percentage (`10%`).
    MemoryOrPercent,
    /// One of these words (case-insensitive).
    Enum(&'static [&'static str]),
    /// Any string.
    Str,
    /// `save`: pairs of `<seconds> <changes>`, or empty.
    Save,
    /// `client-output-buffer-limit`: `<class> <hard> <soft> <seconds>` groups.
    ClientOutputBufferLimit,
    /// `notify-keyspace-events` flag characters.
    NotifyKeyspaceEvents,
    /// `oom-score-adj-values`: three integers in -2000..=2000.
    OomScoreAdjValues,
    /// `latency-tracking-info-percentiles`: floats in 0..=100.
    Percentiles,
    /// `bind`: the listener's addresses (only the current value is accepted).
    Bind,
    /// `port`: the listener's port (only the current value is accepted).
    Port,
}

/// One configuration parameter.
#[derive(Debug)]
pub(crate) struct Param {
    /// Canonical name.
    pub(crate) name: &'static str,
    /// The old name Redis still accepts (`slave-read-only`, `lua-time-limit`…).
    pub(crate) alias: Option<&'static str>,
    /// Redis's default (ours where we differ: `save ""`).
    pub(crate) default: &'static str,
    /// Value syntax.
    pub(crate) kind: Kind,
    /// [`IMMUTABLE`], [`PROTECTED`], [`SENSITIVE`].
    pub(crate) flags: u8,
}

/// The `maxmemory-policy` values, in Redis's order (the run-time configuration stores the
/// policy as an index into it).
pub(crate) const MAXMEMORY_POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

/// Every parameter, sorted by name.
pub(crate) static PARAMS: &[Param] = &[
    Param {
        name: "acl-pubsub-default",
        alias: None,
        default: "resetchannels",
        kind: Kind::Enum(&["allchannels", "resetchannels"]),
        flags: 0,
    },
    Param {
        name: "aclfile",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "acllog-max-len",
        alias: None,
        default: "128",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "active-defrag-cycle-max",
        alias: None,
        default: "25",
        kind: Kind::Int { min: 1, max: 99 },
        flags: 0,
    },
    Param {
        name: "active-defrag-cycle-min",
        alias: None,
        default: "1",
        kind: Kind::Int { min: 1, max: 99 },
        flags: 0,
    },
    Param {
        name: "active-defrag-ignore-bytes",
        alias: None,
        default: "104857600",
        kind: Kind::Memory,
        flags: 0,
    },
    Param {
        name: "active-defrag-max-scan-fields",
        alias: None,
        default: "1000",
        kind: Kind::Int {
            min: 1,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "active-defrag-threshold-lower",
        alias: None,
        default: "10",
        kind: Kind::Int { min: 0, max: 1000 },
        flags: 0,
    },
    Param {
        name: "active-defrag-threshold-upper",
        alias: None,
        default: "100",
        kind: Kind::Int { min: 0, max: 1000 },
        flags: 0,
    },
    Param {
        name: "active-expire-effort",
        alias: None,
        default: "1",
        kind: Kind::Int { min: 1, max: 10 },
        flags: 0,
    },
    Param {
        name: "activedefrag",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "activerehashing",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "always-show-logo",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: IMMUTABLE,
    },
    Param {
        name: "aof-disable-auto-gc",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "aof-load-truncated",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "aof-rewrite-incremental-fsync",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "aof-timestamp-enabled",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "aof-use-rdb-preamble",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "aof_rewrite_cpulist",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "appenddirname",
        alias: None,
        default: "appendonlydir",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "appendfilename",
        alias: None,
        default: "appendonly.aof",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "appendfsync",
        alias: None,
        default: "everysec",
        kind: Kind::Enum(&["everysec", "always", "no"]),
        flags: 0,
    },
    Param {
        name: "appendonly",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "auto-aof-rewrite-min-size",
        alias: None,
        default: "67108864",
        kind: Kind::Memory,
        flags: 0,
    },
    Param {
        name: "auto-aof-rewrite-percentage",
        alias: None,
        default: "100",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "bgsave_cpulist",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "bind",
        alias: None,
        default: "127.0.0.1",
        kind: Kind::Bind,
        flags: 0,
    },
    Param {
        name: "bind-source-addr",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "bio_cpulist",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "busy-reply-threshold",
        alias: Some("lua-time-limit"),
        default: "5000",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "client-output-buffer-limit",
        alias: None,
        default: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        kind: Kind::ClientOutputBufferLimit,
        flags: 0,
    },
    Param {
        name: "client-query-buffer-limit",
        alias: None,
        default: "1073741824",
        kind: Kind::Memory,
        flags: 0,
    },
    Param {
        name: "cluster-allow-pubsubshard-when-down",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "cluster-allow-reads-when-down",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "cluster-allow-replica-migration",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "cluster-announce-bus-port",
        alias: None,
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        flags: 0,
    },
    Param {
        name: "cluster-announce-hostname",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "cluster-announce-ip",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "cluster-announce-port",
        alias: None,
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        flags: 0,
    },
    Param {
        name: "cluster-announce-tls-port",
        alias: None,
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        flags: 0,
    },
    Param {
        name: "cluster-config-file",
        alias: None,
        default: "nodes.conf",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "cluster-enabled",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: IMMUTABLE,
    },
    Param {
        name: "cluster-link-sendbuf-limit",
        alias: None,
        default: "0",
        kind: Kind::Memory,
        flags: 0,
    },
    Param {
        name: "cluster-migration-barrier",
        alias: None,
        default: "1",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "cluster-node-timeout",
        alias: None,
        default: "15000",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "cluster-port",
        alias: None,
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        flags: IMMUTABLE,
    },
    Param {
        name: "cluster-preferred-endpoint-type",
        alias: None,
        default: "ip",
        kind: Kind::Enum(&["ip", "hostname", "unknown-endpoint"]),
        flags: 0,
    },
    Param {
        name: "cluster-replica-no-failover",
        alias: Some("cluster-slave-no-failover"),
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "cluster-replica-validity-factor",
        alias: Some("cluster-slave-validity-factor"),
        default: "10",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "cluster-require-full-coverage",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "crash-log-enabled",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "crash-memcheck-enabled",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "daemonize",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: IMMUTABLE,
    },
    Param {
        name: "databases",
        alias: None,
        default: "16",
        kind: Kind::Int {
            min: 1,
            max: i32::MAX as i64,
        },
        flags: IMMUTABLE,
    },
    Param {
        name: "dbfilename",
        alias: None,
        default: "dump.rdb",
        kind: Kind::Str,
        flags: PROTECTED,
    },
    Param {
        name: "dir",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: PROTECTED,
    },
    Param {
        name: "disable-thp",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: IMMUTABLE,
    },
    Param {
        name: "dynamic-hz",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "enable-debug-command",
        alias: None,
        default: "no",
        kind: Kind::Enum(&["no", "yes", "local"]),
        flags: IMMUTABLE,
    },
    Param {
        name: "enable-module-command",
        alias: None,
        default: "no",
        kind: Kind::Enum(&["no", "yes", "local"]),
        flags: IMMUTABLE,
    },
    Param {
        name: "enable-protected-configs",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: IMMUTABLE,
    },
    Param {
        name: "hash-max-listpack-entries",
        alias: Some("hash-max-ziplist-entries"),
        default: "512",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "hash-max-listpack-value",
        alias: Some("hash-max-ziplist-value"),
        default: "64",
        kind: Kind::Memory,
        flags: 0,
    },
    Param {
        name: "hll-sparse-max-bytes",
        alias: None,
        default: "3000",
        kind: Kind::Memory,
        flags: 0,
    },
    Param {
        name: "hz",
        alias: None,
        default: "10",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "ignore-warnings",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "io-threads",
        alias: None,
        default: "1",
        kind: Kind::Int { min: 1, max: 128 },
        flags: IMMUTABLE,
    },
    Param {
        name: "io-threads-do-reads",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: IMMUTABLE,
    },
    Param {
        name: "jemalloc-bg-thread",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "key-load-delay",
        alias: None,
        default: "0",
        kind: Kind::Int {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
        // Hidden in Redis (a test and debugging parameter): shown by exact name only.
        flags: HIDDEN,
    },
    Param {
        name: "latency-monitor-threshold",
        alias: None,
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "latency-tracking",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "latency-tracking-info-percentiles",
        alias: None,
        default: "50 99 99.9",
        kind: Kind::Percentiles,
        flags: 0,
    },
    Param {
        name: "lazyfree-lazy-eviction",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "lazyfree-lazy-expire",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "lazyfree-lazy-server-del",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "lazyfree-lazy-user-del",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "lazyfree-lazy-user-flush",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "lfu-decay-time",
        alias: None,
        default: "1",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "lfu-log-factor",
        alias: None,
        default: "10",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "list-compress-depth",
        alias: None,
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "list-max-listpack-size",
        alias: Some("list-max-ziplist-size"),
        default: "-2",
        kind: Kind::Int {
            min: -2_147_483_648,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "loading-process-events-interval-bytes",
        alias: None,
        default: "2097152",
        kind: Kind::Int {
            min: 1024,
            max: i32::MAX as i64,
        },
        // Hidden in Redis (a test and debugging parameter): shown by exact name only.
        flags: HIDDEN,
    },
    Param {
        name: "logfile",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "loglevel",
        alias: None,
        default: "notice",
        kind: Kind::Enum(&["debug", "verbose", "notice", "warning"]),
        flags: 0,
    },
    Param {
        name: "masterauth",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: SENSITIVE,
    },
    Param {
        name: "masteruser",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: SENSITIVE,
    },
    Param {
        name: "maxclients",
        alias: None,
        default: "10000",
        kind: Kind::Int {
            min: 1,
            max: 4_294_967_295,
        },
        flags: 0,
    },
    Param {
        name: "maxmemory",
        alias: None,
        default: "0",
        kind: Kind::Memory,
        flags: 0,
    },
    Param {
        name: "maxmemory-clients",
        alias: None,
        default: "0",
        kind: Kind::MemoryOrPercent,
        flags: 0,
    },
    Param {
        name: "maxmemory-eviction-tenacity",
        alias: None,
        default: "10",
        kind: Kind::Int { min: 0, max: 100 },
        flags: 0,
    },
    Param {
        name: "maxmemory-policy",
        alias: None,
        default: "noeviction",
        kind: Kind::Enum(MAXMEMORY_POLICIES),
        flags: 0,
    },
    Param {
        name: "maxmemory-samples",
        alias: None,
        default: "5",
        kind: Kind::Int {
            min: 1,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "min-replicas-max-lag",
        alias: Some("min-slaves-max-lag"),
        default: "10",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "min-replicas-to-write",
        alias: Some("min-slaves-to-write"),
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "no-appendfsync-on-rewrite",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "notify-keyspace-events",
        alias: None,
        default: "",
        kind: Kind::NotifyKeyspaceEvents,
        flags: 0,
    },
    Param {
        name: "oom-score-adj",
        alias: None,
        default: "no",
        kind: Kind::Enum(&["no", "yes", "relative", "absolute"]),
        flags: 0,
    },
    Param {
        name: "oom-score-adj-values",
        alias: None,
        default: "0 200 800",
        kind: Kind::OomScoreAdjValues,
        flags: 0,
    },
    Param {
        name: "pidfile",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "port",
        alias: None,
        default: "6379",
        kind: Kind::Port,
        flags: 0,
    },
    Param {
        name: "proc-title-template",
        alias: None,
        default: "{title} {listen-addr} {server-mode}",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "propagation-error-behavior",
        alias: None,
        default: "ignore",
        kind: Kind::Enum(&["ignore", "panic", "panic-on-replicas"]),
        flags: 0,
    },
    Param {
        name: "protected-mode",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "proto-max-bulk-len",
        alias: None,
        default: "536870912",
        kind: Kind::Memory,
        flags: 0,
    },
    Param {
        name: "rdb-del-sync-files",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "rdb-key-save-delay",
        alias: None,
        default: "0",
        kind: Kind::Int {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
        // Hidden in Redis (a test and debugging parameter): shown by exact name only.
        flags: HIDDEN,
    },
    Param {
        name: "rdb-save-incremental-fsync",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "rdbchecksum",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: IMMUTABLE,
    },
    Param {
        name: "rdbcompression",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "repl-backlog-size",
        alias: None,
        default: "1048576",
        kind: Kind::Memory,
        flags: 0,
    },
    Param {
        name: "repl-backlog-ttl",
        alias: None,
        default: "3600",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "repl-disable-tcp-nodelay",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "repl-diskless-load",
        alias: None,
        default: "disabled",
        kind: Kind::Enum(&["disabled", "on-empty-db", "swapdb"]),
        flags: 0,
    },
    Param {
        name: "repl-diskless-sync",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "repl-diskless-sync-delay",
        alias: None,
        default: "5",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "repl-diskless-sync-max-replicas",
        alias: None,
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "repl-ping-replica-period",
        alias: Some("repl-ping-slave-period"),
        default: "10",
        kind: Kind::Int {
            min: 1,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "repl-timeout",
        alias: None,
        default: "60",
        kind: Kind::Int {
            min: 1,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "replica-announce-ip",
        alias: Some("slave-announce-ip"),
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "replica-announce-port",
        alias: Some("slave-announce-port"),
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        flags: 0,
    },
    Param {
        name: "replica-announced",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "replica-ignore-disk-write-errors",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "replica-ignore-maxmemory",
        alias: Some("slave-ignore-maxmemory"),
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "replica-lazy-flush",
        alias: Some("slave-lazy-flush"),
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "replica-priority",
        alias: Some("slave-priority"),
        default: "100",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "replica-read-only",
        alias: Some("slave-read-only"),
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "replica-serve-stale-data",
        alias: Some("slave-serve-stale-data"),
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "replicaof",
        alias: Some("slaveof"),
        default: "",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "requirepass",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: SENSITIVE,
    },
    Param {
        name: "sanitize-dump-payload",
        alias: None,
        default: "no",
        kind: Kind::Enum(&["no", "yes", "clients"]),
        flags: 0,
    },
    Param {
        name: "save",
        alias: None,
        default: "",
        kind: Kind::Save,
        flags: 0,
    },
    Param {
        name: "server_cpulist",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "set-max-intset-entries",
        alias: None,
        default: "512",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "set-proc-title",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: IMMUTABLE,
    },
    Param {
        name: "shutdown-on-sigint",
        alias: None,
        default: "default",
        kind: Kind::Enum(&["default", "save", "nosave", "now", "force"]),
        flags: 0,
    },
    Param {
        name: "shutdown-on-sigterm",
        alias: None,
        default: "default",
        kind: Kind::Enum(&["default", "save", "nosave", "now", "force"]),
        flags: 0,
    },
    Param {
        name: "shutdown-timeout",
        alias: None,
        default: "10",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "slowlog-log-slower-than",
        alias: None,
        default: "10000",
        kind: Kind::Int {
            min: -1,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "slowlog-max-len",
        alias: None,
        default: "128",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "socket-mark-id",
        alias: None,
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: u32::MAX as i64,
        },
        flags: IMMUTABLE,
    },
    Param {
        name: "stop-writes-on-bgsave-error",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "stream-node-max-bytes",
        alias: None,
        default: "4096",
        kind: Kind::Memory,
        flags: 0,
    },
    Param {
        name: "stream-node-max-entries",
        alias: None,
        default: "100",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "supervised",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: IMMUTABLE,
    },
    Param {
        name: "syslog-enabled",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: IMMUTABLE,
    },
    Param {
        name: "syslog-facility",
        alias: None,
        default: "local0",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "syslog-ident",
        alias: None,
        default: "redis",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "tcp-backlog",
        alias: None,
        default: "511",
        kind: Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        flags: IMMUTABLE,
    },
    Param {
        name: "tcp-keepalive",
        alias: None,
        default: "300",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "timeout",
        alias: None,
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "tls-auth-clients",
        alias: None,
        default: "yes",
        kind: Kind::Enum(&["no", "yes", "optional"]),
        flags: 0,
    },
    Param {
        name: "tls-ca-cert-dir",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-ca-cert-file",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-cert-file",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-ciphers",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-ciphersuites",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-client-cert-file",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-client-key-file",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-client-key-file-pass",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-cluster",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "tls-dh-params-file",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-key-file",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-key-file-pass",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-port",
        alias: None,
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        flags: 0,
    },
    Param {
        name: "tls-prefer-server-ciphers",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "tls-protocols",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: 0,
    },
    Param {
        name: "tls-replication",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "tls-session-cache-size",
        alias: None,
        default: "20480",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "tls-session-cache-timeout",
        alias: None,
        default: "300",
        kind: Kind::Int {
            min: 0,
            max: 2_147_483_647,
        },
        flags: 0,
    },
    Param {
        name: "tls-session-caching",
        alias: None,
        default: "yes",
        kind: Kind::Bool,
        flags: 0,
    },
    Param {
        name: "tracking-table-max-keys",
        alias: None,
        default: "1000000",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "unixsocket",
        alias: None,
        default: "",
        kind: Kind::Str,
        flags: IMMUTABLE,
    },
    Param {
        name: "unixsocketperm",
        alias: None,
        default: "0",
        kind: Kind::Octal { max: 0o777 },
        flags: IMMUTABLE,
    },
    Param {
        name: "use-exit-on-panic",
        alias: None,
        default: "no",
        kind: Kind::Bool,
        // Hidden in Redis (a test and debugging parameter): shown by exact name only.
        flags: HIDDEN,
    },
    Param {
        name: "watchdog-period",
        alias: None,
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        // Hidden in Redis (a test and debugging parameter): shown by exact name only.
        flags: HIDDEN,
    },
    Param {
        name: "zset-max-listpack-entries",
        alias: Some("zset-max-ziplist-entries"),
        default: "128",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        flags: 0,
    },
    Param {
        name: "zset-max-listpack-value",
        alias: Some("zset-max-ziplist-value"),
        default: "64",
        kind: Kind::Memory,
        flags: 0,
    },
];

/// Parameters Valkey 8.1.8 has and Redis 7.0.15 lacks (its renamed ones aside: see
/// [`crate::compat::ConfigChanges`]), sorted by name: types, ranges and defaults as
/// valkey-server 8.1.8 answers `CONFIG GET` and `CONFIG SET` of bad values. They are stored
/// and reported; `availability-zone` also shows in `HELLO` and `INFO server`, and the
/// `commandlog-*` ones are the command log's (bound in [`super::runtime::BINDINGS`]).
pub(crate) static VALKEY_8_1_ADDED: &[Param] = &[
    int("active-defrag-cycle-us", "500", 0, 100_000, 0),
    text("availability-zone", "", 0),
    text("cluster-announce-client-ipv4", "", 0),
    text("cluster-announce-client-ipv6", "", 0),
    text("cluster-announce-human-nodename", "", 0),
    int("cluster-blacklist-ttl", "60", 0, i64::MAX, 0),
    int(
        "cluster-manual-failover-timeout",
        "5000",
        1,
        i32::MAX as i64,
        0,
    ),
    boolean("cluster-slot-stats-enabled", "no"),
    int("commandlog-large-reply-max-len", "128", 0, i64::MAX, 0),
    int("commandlog-large-request-max-len", "128", 0, i64::MAX, 0),
    int("commandlog-reply-larger-than", "1048576", -1, i64::MAX, 0),
    int("commandlog-request-larger-than", "1048576", -1, i64::MAX, 0),
    boolean("dual-channel-replication-enabled", "no"),
    boolean("extended-redis-compatibility", "no"),
    boolean("hide-user-data-from-log", "yes"),
    boolean("import-mode", "no"),
    text("locale-collate", "", 0),
    Param {
        name: "log-format",
        alias: None,
        default: "legacy",
        kind: Kind::Enum(&["legacy", "logfmt"]),
        flags: 0,
    },
    Param {
        name: "log-timestamp-format",
        alias: None,
        default: "legacy",
        kind: Kind::Enum(&["legacy", "iso8601", "milliseconds"]),
        flags: 0,
    },
    int("max-new-connections-per-cycle", "10", 1, 1000, 0),
    int("max-new-tls-connections-per-cycle", "1", 1, 1000, 0),
    int("prefetch-batch-max-size", "16", 0, 128, 0),
    Param {
        name: "rdb-version-check",
        alias: None,
        default: "strict",
        kind: Kind::Enum(&["strict", "relaxed"]),
        flags: 0,
    },
    text("rdma-bind", "", IMMUTABLE),
    int(
        "rdma-completion-vector",
        "-1",
        -1,
        i32::MAX as i64,
        IMMUTABLE,
    ),
    int("rdma-port", "0", 0, 65_535, 0),
    int("rdma-rx-size", "1048576", 0, i64::MAX, IMMUTABLE),
    int("set-max-listpack-entries", "128", 0, i64::MAX, 0),
    int("set-max-listpack-value", "64", 0, i64::MAX, 0),
    text("unixsocketgroup", "", IMMUTABLE),
];

/// An integer parameter of [`VALKEY_8_1_ADDED`].
const fn int(name: &'static str, default: &'static str, min: i64, max: i64, flags: u8) -> Param {
    Param {
        name,
        alias: None,
        default,
        kind: Kind::Int { min, max },
        flags,
    }
}

/// A yes/no parameter of [`VALKEY_8_1_ADDED`].
const fn boolean(name: &'static str, default: &'static str) -> Param {
    Param {
        name,
        alias: None,
        default,
        kind: Kind::Bool,
        flags: 0,
    }
}

/// A text parameter of [`VALKEY_8_1_ADDED`].
const fn text(name: &'static str, default: &'static str, flags: u8) -> Param {
    Param {
        name,
        alias: None,
        default,
        kind: Kind::Str,
        flags,
    }
}

/// The parameters only `compat` has.
fn added(compat: Compat) -> &'static [Param] {
    match compat {
        Compat::Redis70 => &[],
        Compat::Valkey81 => VALKEY_8_1_ADDED,
    }
}

/// Every parameter `compat` has, Redis's first (as their names are in [`PARAMS`]).
pub(crate) fn params(compat: Compat) -> impl Iterator<Item = &'static Param> {
    let removed = compat.profile().config.removed;
    PARAMS
        .iter()
        .filter(move |p| !removed.contains(&p.name))
        .chain(added(compat))
}

/// The names `compat` lists for `param` under a `CONFIG GET` pattern: none for a hidden one,
/// else its name, its alias and the target's new names for it.
pub(crate) fn listed_names(compat: Compat, param: &'static Param) -> Vec<&'static str> {
    let changes = &compat.profile().config;
    if param.flags & HIDDEN != 0 || changes.hidden.contains(&param.name) {
        return Vec::new();
    }
    let renamed = changes
        .renamed
        .iter()
        .filter(|(_, old)| *old == param.name)
        .map(|(new, _)| *new);
    std::iter::once(param.name)
        .chain(param.alias)
        .chain(renamed)
        .collect()
}

/// The parameter called `name` (or aliased so) under `compat`, ignoring ASCII case.
pub(crate) fn find_for(compat: Compat, name: &[u8]) -> Option<&'static Param> {
    let changes = &compat.profile().config;
    let name = changes
        .renamed
        .iter()
        .find(|(new, _)| name.eq_ignore_ascii_case(new.as_bytes()))
        .map_or(name, |(_, old)| old.as_bytes());
    params(compat).find(|p| {
        name.eq_ignore_ascii_case(p.name.as_bytes())
            || p.alias
                .is_some_and(|a| name.eq_ignore_ascii_case(a.as_bytes()))
    })
}

/// The parameter called `name` (or aliased so) in Redis 7.0.15's table, ignoring ASCII case.
pub(crate) fn find(name: &[u8]) -> Option<&'static Param> {
    find_for(Compat::Redis70, name)
}

/// The parameter called `name` under any target (what a start-up argument may name, and the
/// sensitive parameters the slow log redacts).
pub(crate) fn find_any(name: &[u8]) -> Option<&'static Param> {
    Compat::ALL.into_iter().find_map(|c| find_for(c, name))
}

/// An octal number as Redis reads a file mode: C's `strtoll` in base 8 that must reach the
/// end of the text (blanks first, then an optional sign, then octal digits; the empty text is
/// 0), `None` past `i64` or on anything else.
pub(crate) fn parse_octal(value: &[u8]) -> Option<i64> {
    if value.is_empty() {
        return Some(0);
    }
    let start = value
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))?;
    let rest = value.get(start..)?;
    let (negative, digits) = match rest.split_first() {
        Some((b'-', digits)) => (true, digits),
        Some((b'+', digits)) => (false, digits),
        _ => (false, rest),
    };
    if digits.is_empty() {
        return None;
    }
    // Accumulated negatively, so that i64::MIN itself fits, as in strtoll.
    let magnitude = digits.iter().try_fold(0i64, |n, &d| {
        (b'0'..=b'7')
            .contains(&d)
            .then(|| n.checked_mul(8)?.checked_sub(i64::from(d - b'0')))
            .flatten()
    })?;
    if negative {
        Some(magnitude)
    } else {
        magnitude.checked_neg()
    }
}

/// Parses a memory value as Redis's `memtoull`: digits with an optional unit `b`, `k`, `kb`,
/// `m`, `mb`, `g`, `gb` (case-insensitive; `k` = 1000, `kb` = 1024).
pub(crate) fn parse_memory(text: &[u8]) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let split = lower
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    let mul: u64 = match unit {
        b"" | b"b" => 1,
        b"k" => 1000,
        b"kb" => 1024,
        b"m" => 1000 * 1000,
        b"mb" => 1024 * 1024,
        b"g" => 1000 * 1000 * 1000,
        b"gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits.is_empty() {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    n.checked_mul(mul)
}

/// Client classes of `client-output-buffer-limit`, in Redis's order.
const BUFFER_CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

/// Parses `client-output-buffer-limit` groups (`<class> <hard> <soft> <seconds>`) over the
/// `current` limits of the normal, replica and pubsub classes.
pub(crate) fn parse_buffer_limits(
    value: &[u8],
    current: [OutputLimit; 3],
) -> Result<[OutputLimit; 3], &'static str> {
    let words: Vec<&[u8]> = value
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() || !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.");
    }
    let mut limits = current;
    for group in words.chunks(4) {
        let [class, hard, soft, secs] = group else {
            return Err("Wrong number of arguments in buffer limit configuration.");
        };
        let index = match class.to_ascii_lowercase().as_slice() {
            b"normal" => 0,
            b"slave" | b"replica" => 1,
            b"pubsub" => 2,
            _ => return Err("Invalid client class specified in buffer limit configuration."),
        };
        let bad = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
        let hard = parse_memory(hard).ok_or(bad)?;
        let soft = parse_memory(soft).ok_or(bad)?;
        let soft_seconds = locksmith_resp::parse_integer(secs)
            .filter(|&s| s >= 0)
            .ok_or(bad)? as u64;
        if let Some(slot) = limits.get_mut(index) {
            *slot = OutputLimit {
                hard_bytes: hard,
                soft_bytes: soft,
                soft_seconds,
            };
        }
    }
    Ok(limits)
}

/// `client-output-buffer-limit` as `CONFIG GET` shows it.
pub(crate) fn format_buffer_limits(limits: &[OutputLimit; 3]) -> String {
    BUFFER_CLASSES
        .iter()
        .zip(limits)
        .map(|(class, l)| {
            format!(
                "{class} {} {} {}",
                l.hard_bytes, l.soft_bytes, l.soft_seconds
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn words(value: &[u8]) -> Vec<&[u8]> {
    value
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .collect()
}

impl Param {
    /// Validates `value` as Redis's `CONFIG SET` does and returns the normalized text
    /// `CONFIG GET` then shows, or the reason Redis gives after `- `.
    pub(crate) fn validate(&self, value: &[u8], config: &RuntimeConfig) -> Result<String, String> {
        if self.flags & IMMUTABLE != 0 {
            return Err("can't set immutable config".into());
        }
        if self.flags & PROTECTED != 0 {
            return Err("can't set protected config".into());
        }
        self.validate_value(value, config)
    }

    /// Validates `value` as a start-up argument (redis-server's `--name value`): as
    /// [`Param::validate`], but immutable and protected parameters may be given.
    pub(crate) fn validate_value(
        &self,
        value: &[u8],
        config: &RuntimeConfig,
    ) -> Result<String, String> {
        let text = String::from_utf8_lossy(value).into_owned();
        match self.kind {
            Kind::Bool => match text.to_ascii_lowercase().as_str() {
                "yes" => Ok("yes".into()),
                "no" => Ok("no".into()),
                _ => Err("argument must be 'yes' or 'no'".into()),
            },
            Kind::Int { min, max } => {
                let n = locksmith_resp::parse_integer(value)
                    .ok_or("argument couldn't be parsed into an integer")?;
                if n < min || n > max {
                    return Err(format!(
                        "argument must be between {min} and {max} inclusive"
                    ));
                }
                // Redis clamps hz to 1..=500 (CONFIG_MIN_HZ, CONFIG_MAX_HZ).
                let n = if self.name == "hz" {
                    n.clamp(1, 500)
                } else {
                    n
                };
                Ok(n.to_string())
            }
            Kind::Octal { max } => {
                let n =
                    parse_octal(value).ok_or("argument couldn't be parsed as an octal number")?;
                if !(0..=i64::from(max)).contains(&n) {
                    return Err(format!("argument must be between 0 and {max:o} inclusive"));
                }
                Ok(format!("{n:o}"))
            }
            Kind::Memory => {
                let n = parse_memory(value).ok_or("argument must be a memory value")?;
                if self.name == "proto-max-bulk-len" && n < 1024 * 1024 {
                    return Err(format!(
                        "argument must be between 1048576 and {} inclusive",
                        i64::MAX
                    ));
                }
                if n > i64::MAX as u64 {
                    return Err("argument must be a memory value".into());
                }
                Ok(n.to_string())
            }
            Kind::MemoryOrPercent => {
                if let Some(pct) = text.strip_suffix('%') {
                    let n = locksmith_resp::parse_integer(pct.as_bytes())
                        .filter(|&n| n >= 0)
                        .ok_or("argument must be a memory or percent value")?;
                    if n > 100 {
                        return Err("percentage argument must be less or equal to 100".into());
                    }
                    return Ok(format!("{n}%"));
                }
                let n = parse_memory(value).ok_or("argument must be a memory or percent value")?;
                Ok(n.to_string())
            }
            Kind::Enum(values) => values
                .iter()
                .find(|v| v.eq_ignore_ascii_case(&text))
                .map(|v| v.to_string())
                .ok_or_else(|| {
                    format!(
                        "argument(s) must be one of the following: {}",
                        values.join(", ")
                    )
                }),
            Kind::Str => Ok(text),
            Kind::Save => {
                let parts = words(value);
                let valid = parts.len().is_multiple_of(2)
                    && parts
                        .iter()
                        .all(|w| locksmith_resp::parse_integer(w).is_some_and(|n| n >= 0));
                if !valid {
                    return Err("Invalid save parameters".into());
                }
                Ok(parts
                    .iter()
                    .map(|w| String::from_utf8_lossy(w).into_owned())
                    .collect::<Vec<_>>()
                    .join(" "))
            }
            Kind::ClientOutputBufferLimit => {
                let current = [
                    config.output_limit(super::runtime::ClientClass::Normal),
                    config.output_limit(super::runtime::ClientClass::Replica),
                    config.output_limit(super::runtime::ClientClass::Pubsub),
                ];
                let limits = parse_buffer_limits(value, current)?;
                Ok(format_buffer_limits(&limits))
            }
            Kind::NotifyKeyspaceEvents => crate::notify::parse_flags(value)
                .map(crate::notify::format_flags)
                .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into()),
            Kind::OomScoreAdjValues => {
                let parts = words(value);
                if parts.len() != 3 {
                    return Err("wrong number of arguments".into());
                }
                let mut out = Vec::new();
                for w in parts {
                    let n = locksmith_resp::parse_integer(w)
                        .filter(|n| (-2000..=2000).contains(n))
                        .ok_or("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")?;
                    out.push(n.to_string());
                }
                Ok(out.join(" "))
            }
            Kind::Percentiles => {
                let mut out = Vec::new();
                for w in words(value) {
                    let p = crate::args::parse_f64(w)
                        .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
                    if !(0.0..=100.0).contains(&p) {
                        return Err(
                            "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                                .into(),
                        );
                    }
                    out.push(format!("{p}"));
                }
                Ok(out.join(" "))
            }
            Kind::Bind => {
                if text == config.bind().to_string() {
                    Ok(text)
                } else {
                    // We cannot move the listener at run time.
                    Err("Failed to bind to specified addresses.".into())
                }
            }
            Kind::Port => {
                let n = locksmith_resp::parse_integer(value)
                    .ok_or("argument couldn't be parsed into an integer")?;
                if !(0..=65535).contains(&n) {
                    return Err("argument must be between 0 and 65535 inclusive".into());
                }
                if n == i64::from(config.port()) {
                    Ok(n.to_string())
                } else {
                    Err("Unable to listen on this port".into())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> RuntimeConfig {
        RuntimeConfig::new(&crate::Config::default()).expect("default config is valid")
    }

    #[test]
    fn octal_values_are_read_as_strtoll_reads_them() {
        for (text, want) in [
            ("", Some(0)),
            ("0", Some(0)),
            ("700", Some(0o700)),
            ("0755", Some(0o755)),
            ("+7", Some(7)),
            (" \t7", Some(7)),
            ("-0", Some(0)),
            ("-1", Some(-1)),
            ("777777777777777777777", Some(i64::MAX)),
            ("-1000000000000000000000", Some(i64::MIN)),
            ("1000000000000000000000", None),
            ("-1000000000000000000001", None),
            ("8", None),
            ("7a", None),
            ("0x7", None),
            ("-", None),
            (" ", None),
            ("7 ", None),
        ] {
            assert_eq!(parse_octal(text.as_bytes()), want, "{text:?}");
        }
        let perm = find(b"unixsocketperm").expect("unixsocketperm");
        let config = settings();
        let check = |v: &str| perm.validate_value(v.as_bytes(), &config);
        assert_eq!(check("0755"), Ok("755".into()));
        assert_eq!(check(""), Ok("0".into()));
        let range = Err("argument must be between 0 and 777 inclusive".to_string());
        assert_eq!(check("-1"), range);
        assert_eq!(check("1000"), range);
        let parse = Err("argument couldn't be parsed as an octal number".to_string());
        assert_eq!(check("789"), parse);
        assert_eq!(check("1000000000000000000000"), parse);
    }

    #[test]
    fn table_is_sorted_and_unique() {
        for pair in PARAMS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} / {}",
                pair[0].name,
                pair[1].name
            );
        }
        assert!(PARAMS.len() >= 170);
    }

    #[test]
    fn aliases_find_the_canonical_parameter() {
        assert_eq!(
            find(b"lua-time-limit").unwrap().name,
            "busy-reply-threshold"
        );
        assert_eq!(find(b"SLAVE-READ-ONLY").unwrap().name, "replica-read-only");
        assert!(find(b"nosuch").is_none());
    }

    #[test]
    fn values_are_validated_like_redis() {
        let s = settings();
        let check = |name: &str, value: &str| {
            find(name.as_bytes())
                .unwrap()
                .validate(value.as_bytes(), &s)
        };
        assert_eq!(check("maxmemory", "1gb"), Ok("1073741824".into()));
        assert_eq!(
            check("maxmemory", "x"),
            Err("argument must be a memory value".into())
        );
        assert_eq!(check("hz", "1000"), Ok("500".into()));
        assert_eq!(
            check("timeout", "-1"),
            Err("argument must be between 0 and 2147483647 inclusive".into())
        );
        assert_eq!(check("appendonly", "YES"), Ok("yes".into()));
        assert_eq!(
            check("maxmemory-policy", "ALLKEYS-LRU"),
            Ok("allkeys-lru".into())
        );
        assert_eq!(
            check("databases", "4"),
            Err("can't set immutable config".into())
        );
        assert_eq!(
            check("dir", "/tmp"),
            Err("can't set protected config".into())
        );
        assert_eq!(check("notify-keyspace-events", "KEA"), Ok("AKE".into()));
        assert_eq!(
            check("save", "10 1 20"),
            Err("Invalid save parameters".into())
        );
        assert_eq!(
            check("client-output-buffer-limit", "pubsub 1mb 2mb 3"),
            Ok("normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 2097152 3".into())
        );
        assert_eq!(check("maxmemory-clients", "10%"), Ok("10%".into()));
        assert_eq!(
            check("latency-tracking-info-percentiles", "50 99.5"),
            Ok("50 99.5".into())
        );
    }

    #[test]
    fn memory_units_follow_memtoull() {
        assert_eq!(parse_memory(b"1k"), Some(1000));
        assert_eq!(parse_memory(b"1KB"), Some(1024));
        assert_eq!(parse_memory(b"2mb"), Some(2 * 1024 * 1024));
        assert_eq!(parse_memory(b"-1"), None);
        assert_eq!(parse_memory(b"gb"), None);
    }
}
