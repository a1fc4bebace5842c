//! Command flags, named as `COMMAND INFO` reports them (a leaf: the command table, the
//! pipeline, pauses and cluster checks all read them).

/// May modify the keyspace.
pub(crate) const WRITE: u32 = 1 << 0;
/// Only reads.
pub(crate) const READONLY: u32 = 1 << 1;
/// May grow memory.
pub(crate) const DENYOOM: u32 = 1 << 2;
/// Administrative.
pub(crate) const ADMIN: u32 = 1 << 3;
/// Pub/sub command.
pub(crate) const PUBSUB: u32 = 1 << 4;
/// Refused inside scripts.
pub(crate) const NOSCRIPT: u32 = 1 << 5;
/// May block the client.
pub(crate) const BLOCKING: u32 = 1 << 6;
/// Allowed while loading.
pub(crate) const LOADING: u32 = 1 << 7;
/// Allowed on a stale replica.
pub(crate) const STALE: u32 = 1 << 8;
/// Not shown to MONITOR.
pub(crate) const SKIP_MONITOR: u32 = 1 << 9;
/// O(1) or O(log N).
pub(crate) const FAST: u32 = 1 << 10;
/// Allowed before AUTH.
pub(crate) const NO_AUTH: u32 = 1 << 11;
/// May replicate even though not a write.
pub(crate) const MAY_REPLICATE: u32 = 1 << 12;
/// Refused inside MULTI.
pub(crate) const NO_MULTI: u32 = 1 << 13;
/// Served while a script is busy.
pub(crate) const ALLOW_BUSY: u32 = 1 << 14;
/// Keys are found by parsing arguments.
pub(crate) const MOVABLE_KEYS: u32 = 1 << 15;
/// Runs Lua: executed off the reactor thread (not a Redis flag; never shown).
pub(crate) const RUNS_SCRIPT: u32 = 1 << 16;
/// Not logged to the slow log.
pub(crate) const SKIP_SLOWLOG: u32 = 1 << 17;
/// May run with no key arguments although it takes keys.
pub(crate) const NO_MANDATORY_KEYS: u32 = 1 << 18;
/// Refused while loading asynchronously.
pub(crate) const NO_ASYNC_LOADING: u32 = 1 << 19;
/// Allowed only as `enable-debug-command` says (`DEBUG`).
pub(crate) const PROTECTED: u32 = 1 << 20;
/// Allowed only as `enable-module-command` says (`MODULE LOAD|LOADEX|UNLOAD`; not a Redis
/// flag name: Redis marks both kinds `protected` and tells them apart by their handler).
pub(crate) const PROTECTED_MODULE: u32 = 1 << 21;

/// (flag, name) in the order Redis 7.0's `COMMAND INFO` lists them (`addReplyCommandFlags`;
/// `may_replicate` is hidden there on purpose, so it is not listed).
pub(crate) const NAMES: &[(u32, &str)] = &[
    (WRITE, "write"),
    (READONLY, "readonly"),
    (DENYOOM, "denyoom"),
    (ADMIN, "admin"),
    (PUBSUB, "pubsub"),
    (NOSCRIPT, "noscript"),
    (BLOCKING, "blocking"),
    (LOADING, "loading"),
    (STALE, "stale"),
    (SKIP_MONITOR, "skip_monitor"),
    (SKIP_SLOWLOG, "skip_slowlog"),
    // Valkey 8.1's name for it.
    (SKIP_SLOWLOG, "skip_commandlog"),
    (FAST, "fast"),
    (NO_AUTH, "no_auth"),
    (NO_MANDATORY_KEYS, "no_mandatory_keys"),
    (NO_ASYNC_LOADING, "no_async_loading"),
    (NO_MULTI, "no_multi"),
    (MOVABLE_KEYS, "movablekeys"),
    (ALLOW_BUSY, "allow_busy"),
];
