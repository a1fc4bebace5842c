//! Server commands: CONFIG, INFO, DBSIZE, FLUSHDB, FLUSHALL, TIME, LASTSAVE, DEBUG, COMMAND,
//! SHUTDOWN.

use super::client::help_lines;
use super::{flags, flags::*, lossy, table, Args, CmdResult, CommandError, CommandSpec, Ctx};
use crate::config_table::{self, Param};
use crate::glob::glob_match;
use crate::shared::{Node, State, Stats};
use bytes::Bytes;
use locksmith_resp::Frame;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::Duration;

static CONFIG_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("get", -3, config_get)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .doc(
            "server",
            "Returns the effective values of configuration parameters.",
        ),
    CommandSpec::new("set", -4, config_set)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .doc("server", "Sets configuration parameters in-flight."),
    CommandSpec::new("resetstat", 2, config_resetstat)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .doc("server", "Resets the server's statistics."),
    CommandSpec::new("rewrite", 2, config_rewrite)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .doc("server", "Persists the effective configuration to file."),
    CommandSpec::new("help", 2, config_help)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Returns helpful text about the different subcommands.",
        ),
];

static COMMAND_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("count", 2, command_count)
        .flags(LOADING | STALE)
        .doc("server", "Returns a count of commands."),
    CommandSpec::new("info", -2, command_info)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Returns information about one, multiple or all commands.",
        ),
    CommandSpec::new("docs", -2, command_docs)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Returns documentary information about one, multiple or all commands.",
        ),
    CommandSpec::new("list", -2, command_list)
        .flags(LOADING | STALE)
        .doc("server", "Returns a list of command names."),
    CommandSpec::new("getkeys", -4, command_getkeys)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Extracts the key names from an arbitrary command.",
        ),
    CommandSpec::new("help", 2, command_help)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Returns helpful text about the different subcommands.",
        ),
];

/// The server family's table.
pub(crate) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("config", -2, config_help)
        .doc("server", "A container for server configuration commands.")
        .subs(CONFIG_SUBCOMMANDS),
    CommandSpec::new("info", -1, info)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Returns information and statistics about the server.",
        ),
    CommandSpec::new("dbsize", 1, dbsize)
        .flags(READONLY | FAST)
        .doc("server", "Returns the number of keys in the database."),
    CommandSpec::new("flushdb", -1, flushdb)
        .flags(WRITE)
        .doc("server", "Remove all keys from the current database."),
    CommandSpec::new("flushall", -1, flushall)
        .flags(WRITE)
        .doc("server", "Removes all keys from all databases."),
    CommandSpec::new("time", 1, time)
        .flags(LOADING | STALE | FAST)
        .doc("server", "Returns the server time."),
    CommandSpec::new("lastsave", 1, lastsave)
        .flags(LOADING | STALE | FAST)
        .doc(
            "server",
            "Returns the Unix timestamp of the last successful save to disk.",
        ),
    // Runs on the blocking pool (RUNS_SCRIPT) so DEBUG SLEEP can hold the state lock, as
    // Redis blocks, without stalling the reactor.
    CommandSpec::new("debug", -2, debug)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE | PROTECTED | RUNS_SCRIPT)
        .doc("server", "A container for debugging commands."),
    CommandSpec::new("command", -1, command)
        .flags(LOADING | STALE)
        .doc("server", "Returns detailed information about all commands.")
        .subs(COMMAND_SUBCOMMANDS),
    CommandSpec::new("shutdown", -1, shutdown)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY)
        .busy(shutdown_busy)
        .doc(
            "server",
            "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        ),
];

fn bulk_str(s: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

// ---------------------------------------------------------------------------------------
// CONFIG

/// The value `CONFIG GET` shows for `param`.
fn param_value(state: &State, param: &Param) -> String {
    state.settings.get(param.name).to_string()
}

/// ```text
/// CONFIG GET parameter [parameter ...]
/// ```
fn config_get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut out = Vec::new();
    for pattern in args.rest() {
        // Without glob characters the name is looked up directly and echoed as given,
        // as Redis 7 does.
        if !pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
            if let Some(param) = config_table::find(pattern) {
                if seen.insert(pattern.to_vec()) {
                    out.push((
                        Frame::Bulk(pattern.clone()),
                        bulk_str(&param_value(ctx.state, param)),
                    ));
                }
            }
            continue;
        }
        for param in config_table::PARAMS {
            for name in std::iter::once(param.name).chain(param.alias) {
                if glob_match(pattern, name.as_bytes(), true)
                    && seen.insert(name.as_bytes().to_vec())
                {
                    out.push((bulk_str(name), bulk_str(&param_value(ctx.state, param))));
                }
            }
        }
    }
    Ok(Frame::Map(out))
}

/// ```text
/// CONFIG SET parameter value [parameter value ...]
/// ```
///
/// All or nothing: every pair is validated before any is applied.
fn config_set(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let rest = args.rest();
    if !rest.len().is_multiple_of(2) {
        return Err(CommandError::Syntax);
    }
    let failed = |name: &[u8], reason: &str| {
        CommandError::err(format!(
            "CONFIG SET failed (possibly related to argument '{}') - {reason}",
            lossy(name, 128)
        ))
    };
    let mut changes: Vec<(&'static Param, String)> = Vec::new();
    let mut names_seen: HashSet<Vec<u8>> = HashSet::new();
    for pair in rest.chunks(2) {
        let [name, value] = pair else {
            return Err(CommandError::Syntax);
        };
        let Some(param) = config_table::find(name) else {
            return Err(CommandError::err(format!(
                "Unknown option or number of arguments for CONFIG SET - '{}'",
                lossy(name, 128)
            )));
        };
        if !names_seen.insert(name.to_ascii_lowercase()) {
            return Err(failed(name, "duplicate parameter"));
        }
        let normalized = param
            .validate(value, &ctx.state.settings)
            .map_err(|reason| failed(name, &reason))?;
        changes.push((param, normalized));
    }
    for (param, value) in changes {
        set_param(ctx.state, ctx.node, param, value);
    }
    Ok(Frame::ok())
}

/// Applies the start-up `settings` ([`crate::Config::settings`]) to a node, as `CONFIG SET`
/// would, one at a time and in order; the error names the first that cannot be set.
pub(crate) fn apply_startup_settings(
    state: &mut State,
    node: &Node,
    settings: &[(String, String)],
) -> Result<(), String> {
    for (name, value) in settings {
        let Some(param) = config_table::find(name.as_bytes()) else {
            return Err(format!("unknown config parameter '{name}'"));
        };
        let value = param
            .validate_value(value.as_bytes(), &state.settings)
            .map_err(|reason| format!("'{name} {value}': {reason}"))?;
        set_param(state, node, param, value);
    }
    Ok(())
}

/// Sets one validated parameter: its stored value and what it changes.
fn set_param(state: &mut State, node: &Node, param: &'static Param, value: String) {
    apply(state, node, param, &value);
    state.settings.set(param.name, value);
    if param.name == "client-output-buffer-limit" {
        // The normal class is enforced by each connection, the pub/sub class by the
        // subscriber registry, the replica class by the replication feeds.
        let [normal, replica, pubsub] = state.settings.buffer_limits();
        for (slot, v) in node.live.normal_output_limit.iter().zip([
            normal.hard,
            normal.soft,
            normal.soft_seconds,
        ]) {
            slot.store(v, Ordering::Relaxed);
        }
        state.set_pubsub_output_limit(pubsub.hard, pubsub.soft, pubsub.soft_seconds);
        state.repl.replica_limit = crate::replication::ReplicaLimit {
            hard: replica.hard,
            soft: replica.soft,
            soft_seconds: replica.soft_seconds,
        };
    }
}

/// Applies a validated parameter that changes our behaviour.
fn apply(state: &mut State, node: &Node, param: &Param, value: &str) {
    let number = || value.parse::<u64>().unwrap_or(0);
    match param.name {
        "requirepass" => {
            state.config.requirepass = (!value.is_empty()).then(|| value.to_string());
            node.auth_required
                .store(!value.is_empty(), Ordering::Relaxed);
        }
        "busy-reply-threshold" => {
            state.config.busy_reply_threshold = Duration::from_millis(number());
            node.busy_threshold_ms.store(number(), Ordering::Relaxed);
        }
        "notify-keyspace-events" => {
            state.set_notify_flags(crate::notify::parse_flags(value.as_bytes()).unwrap_or(0));
        }
        "maxclients" => {
            state.config.maxclients = number() as usize;
            node.live.maxclients.store(number(), Ordering::Relaxed);
        }
        "proto-max-bulk-len" => node
            .live
            .proto_max_bulk_len
            .store(number(), Ordering::Relaxed),
        "timeout" => node.live.idle_timeout_s.store(number(), Ordering::Relaxed),
        "maxmemory" => {
            state.eviction.maxmemory = number();
            node.live.maxmemory.store(number(), Ordering::Relaxed);
        }
        "maxmemory-policy" | "lfu-log-factor" | "lfu-decay-time" => {
            state.settings.set(param.name, value.to_string());
            let (policy, access) = eviction_settings(&state.settings);
            state.set_eviction_policy(policy, access);
        }
        "client-query-buffer-limit" => node
            .live
            .query_buffer_limit
            .store(number(), Ordering::Relaxed),
        _ => {}
    }
}

/// `maxmemory-policy` and how it records accesses (`lfu-log-factor`, `lfu-decay-time`).
pub(crate) fn eviction_settings(
    settings: &crate::config_table::Settings,
) -> (crate::evict::Policy, crate::db::Access) {
    let policy = crate::evict::Policy::parse(settings.get("maxmemory-policy"));
    let access = if policy.is_lfu() {
        crate::db::Access::Lfu {
            log_factor: u32::try_from(settings.int("lfu-log-factor").max(0)).unwrap_or(u32::MAX),
            decay_minutes: settings.int("lfu-decay-time").max(0) as u64,
        }
    } else {
        crate::db::Access::Lru
    };
    (policy, access)
}

/// ```text
/// CONFIG RESETSTAT
/// ```
fn config_resetstat(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    ctx.state.stats = Stats::default();
    ctx.node.live.reset_stats();
    ctx.node.connections_received.store(0, Ordering::Relaxed);
    Ok(Frame::ok())
}

/// ```text
/// CONFIG REWRITE
/// ```
fn config_rewrite(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::err(
        "The server is running without a config file",
    ))
}

/// ```text
/// CONFIG HELP
/// ```
fn config_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_lines(
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    ))
}

// ---------------------------------------------------------------------------------------
// Keyspace-wide commands

/// ```text
/// DBSIZE
/// ```
fn dbsize(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(ctx.db().len() as i64))
}

/// `[ASYNC | SYNC]`: both empty at once here; anything else is a syntax error.
fn flush_mode(args: &mut Args<'_>) -> Result<(), CommandError> {
    match args.rest() {
        [] => Ok(()),
        [mode] if mode.eq_ignore_ascii_case(b"async") || mode.eq_ignore_ascii_case(b"sync") => {
            Ok(())
        }
        _ => Err(CommandError::Syntax),
    }
}

/// Empties database `db`, recording every key as modified (WATCH, blocked clients).
fn flush_db(ctx: &mut Ctx<'_>, db: usize) {
    let Some(d) = ctx.state.dbs.get_mut(db) else {
        return;
    };
    let keys: Vec<Bytes> = d.keys().cloned().collect();
    d.clear();
    ctx.state.dirty += keys.len() as u64;
    ctx.effects
        .modified
        .extend(keys.into_iter().map(|k| (db, k)));
}

/// ```text
/// FLUSHDB [ASYNC | SYNC]
/// ```
fn flushdb(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    flush_mode(args)?;
    let db = ctx.client.db;
    flush_db(ctx, db);
    // Redis always propagates a flush, even of an empty database.
    ctx.state.dirty += 1;
    Ok(Frame::ok())
}

/// ```text
/// FLUSHALL [ASYNC | SYNC]
/// ```
fn flushall(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    flush_mode(args)?;
    for db in 0..ctx.state.dbs.len() {
        flush_db(ctx, db);
    }
    ctx.state.dirty += 1;
    Ok(Frame::ok())
}

/// ```text
/// TIME
/// ```
fn time(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let us = ctx.node.clock.now_us();
    Ok(Frame::Array(vec![
        bulk_str(&(us / 1_000_000).to_string()),
        bulk_str(&(us % 1_000_000).to_string()),
    ]))
}

/// ```text
/// LASTSAVE
/// ```
fn lastsave(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(ctx.state.last_save_unix as i64))
}

/// ```text
/// DEBUG SLEEP seconds
/// DEBUG SET-ACTIVE-EXPIRE <0 | 1>
/// DEBUG HELP
/// ```
fn debug(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.bytes()?;
    let lower = sub.to_ascii_lowercase();
    match (lower.as_slice(), args.remaining()) {
        (b"sleep", 1) => {
            // Redis parses with atof: garbage is 0.
            let secs = args
                .next()
                .and_then(|a| super::parse_f64(a))
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(0.0);
            // The state lock stays held: every other client waits, as when Redis sleeps. A
            // shutdown ends the sleep early.
            let deadline = std::time::Instant::now() + Duration::from_secs_f64(secs.min(3600.0));
            let live = &ctx.node.live;
            let sleep = || {
                while !live.stop_requested() {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    std::thread::sleep(left.min(Duration::from_millis(10)));
                }
            };
            // Inline on a tokio worker, hand the worker's other tasks (and its timers) to
            // another thread first, so the runtime keeps running meanwhile.
            match tokio::runtime::Handle::try_current() {
                Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                    tokio::task::block_in_place(sleep)
                }
                _ => sleep(),
            }
            Ok(Frame::ok())
        }
        (b"set-active-expire", 1) => {
            let on = args
                .next()
                .and_then(|a| locksmith_resp::parse_integer(a))
                .unwrap_or(0)
                != 0;
            ctx.node.live.active_expire.store(on, Ordering::Relaxed);
            Ok(Frame::ok())
        }
        (b"help", 0) => Ok(help_lines(
            "DEBUG",
            &[
                "SET-ACTIVE-EXPIRE <0|1>",
                "    Setting it to 0 disables expiring keys in background when they are not",
                "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
                "    default.",
                "SLEEP <seconds>",
                "    Stop the server for <seconds>. Decimals allowed.",
            ],
        )),
        _ => Err(CommandError::err(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            lossy(&sub, 128)
        ))),
    }
}

/// The options of `SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]`: `Ok(nosave)`, or the
/// error for a bad combination or `ABORT` (we never delay a shutdown, so none is in progress).
fn shutdown_options(argv: &[Bytes]) -> Result<bool, CommandError> {
    let mut abort = false;
    let mut nosave = false;
    let mut save = false;
    for arg in argv.get(1..).unwrap_or_default() {
        match arg.to_ascii_lowercase().as_slice() {
            b"nosave" => nosave = true,
            b"save" => save = true,
            b"now" | b"force" => {}
            b"abort" => abort = true,
            _ => return Err(CommandError::Syntax),
        }
    }
    if (nosave && save) || (abort && argv.len() > 2) {
        return Err(CommandError::Syntax);
    }
    if abort {
        return Err(CommandError::err("No shutdown in progress."));
    }
    Ok(nosave)
}

/// ```text
/// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]
/// ```
fn shutdown(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    shutdown_options(args.argv())?;
    // No persistence: SAVE and NOSAVE both just stop. Redis sends no reply on success.
    tracing::info!("User requested shutdown...");
    ctx.node.live.request_stop();
    ctx.client.reply_skip = true;
    ctx.client.close_after_reply = true;
    Ok(Frame::ok())
}

/// `SHUTDOWN` while a script is busy (served without the state lock): `NOSAVE` stops the node
/// whatever the script did (the connection then closes without a reply, as Redis exits);
/// without it, Redis's `BUSY` error.
fn shutdown_busy(node: &Node, argv: &[Bytes]) -> Frame {
    match shutdown_options(argv) {
        Ok(true) => {
            tracing::warn!("User requested shutdown NOSAVE during a busy script...");
            node.live.request_stop();
            // Stop the script too (an embedded node outlives its listener).
            node.script.kill.store(true, Ordering::Release);
            Frame::ok()
        }
        Ok(false) => Frame::error(crate::connection::BUSY_ERROR),
        Err(e) => e.into(),
    }
}

// ---------------------------------------------------------------------------------------
// INFO

/// Sections in Redis's order, and whether `INFO` without arguments (`default`) shows them.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("errorstats", true),
    ("cluster", true),
    ("keyspace", true),
];

/// ```text
/// INFO [section [section ...]]
/// ```
fn info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut wanted: Vec<&str> = Vec::new();
    let requested = args.rest();
    if requested.is_empty() {
        wanted.extend(SECTIONS.iter().filter(|(_, d)| *d).map(|(n, _)| *n));
    }
    for arg in requested {
        let lower = arg.to_ascii_lowercase();
        match lower.as_slice() {
            b"default" => wanted.extend(SECTIONS.iter().filter(|(_, d)| *d).map(|(n, _)| *n)),
            b"all" | b"everything" => wanted.extend(SECTIONS.iter().map(|(n, _)| *n)),
            other => {
                if let Some((name, _)) = SECTIONS.iter().find(|(n, _)| n.as_bytes() == other) {
                    wanted.push(name);
                }
            }
        }
    }
    let mut out = String::with_capacity(4096);
    for (name, _) in SECTIONS {
        if !wanted.contains(name) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        info_section(ctx, name, &mut out);
    }
    Ok(Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from(out),
    })
}

/// Redis's `bytesToHuman`.
fn human_bytes(n: u64) -> String {
    let n_f = n as f64;
    match n {
        0..=1023 => format!("{n}B"),
        1024..=1_048_575 => format!("{:.2}K", n_f / 1024.0),
        1_048_576..=1_073_741_823 => format!("{:.2}M", n_f / 1_048_576.0),
        1_073_741_824..=1_099_511_627_775 => format!("{:.2}G", n_f / 1_073_741_824.0),
        _ => format!("{:.2}T", n_f / 1_099_511_627_776.0),
    }
}

/// A rough estimate of the memory the keyspace uses (we have no allocator statistics).
fn used_memory(state: &State) -> u64 {
    state.used_memory()
}

/// User and system CPU seconds of this process, from `/proc/self/stat` (Linux).
fn cpu_seconds() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 100.0
    };
    (ticks(11), ticks(12))
}

fn os_name() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        other => other,
    };
    format!("{os} {release} {}", std::env::consts::ARCH)
}

fn info_section(ctx: &Ctx<'_>, name: &str, out: &mut String) {
    let node = ctx.node;
    let state = &*ctx.state;
    let now = ctx.now;
    let title = {
        let mut t = name.to_string();
        if let Some(first) = t.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        match name {
            "cpu" => "CPU".to_string(),
            "errorstats" => "Errorstats".to_string(),
            _ => t,
        }
    };
    let _ = write!(out, "# {title}\r\n");
    let mut line = |k: &str, v: &dyn std::fmt::Display| {
        let _ = write!(out, "{k}:{v}\r\n");
    };
    match name {
        "server" => {
            let uptime = now.saturating_sub(node.started_ms) / 1000;
            let hz = state.settings.hz();
            line("redis_version", &super::connection::REDIS_VERSION);
            line("redis_git_sha1", &"00000000");
            line("redis_git_dirty", &0);
            line("redis_build_id", &"0");
            line("redis_mode", &"standalone");
            line("os", &os_name());
            line("arch_bits", &(usize::BITS));
            line("monotonic_clock", &"POSIX clock_gettime");
            line("multiplexing_api", &"epoll");
            line("atomicvar_api", &"c11-builtin");
            line("gcc_version", &"0.0.0");
            line("process_id", &std::process::id());
            line("process_supervised", &"no");
            line("run_id", &node.run_id);
            line("tcp_port", &node.addr.port());
            line("server_time_usec", &node.clock.now_us());
            line("uptime_in_seconds", &uptime);
            line("uptime_in_days", &(uptime / 86_400));
            line("hz", &hz);
            line("configured_hz", &hz);
            line("lru_clock", &((now / 1000) & ((1 << 24) - 1)));
            let exe = std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            line("executable", &exe);
            line("config_file", &"");
            line("io_threads_active", &0);
        }
        "clients" => {
            let clients = node.clients.all();
            let blocked = state.blocked_clients();
            line("connected_clients", &clients.len());
            line("cluster_connections", &0);
            line("maxclients", &node.live.maxclients.load(Ordering::Relaxed));
            line("client_recent_max_input_buffer", &0);
            line("client_recent_max_output_buffer", &0);
            line("blocked_clients", &blocked);
            line("tracking_clients", &0);
            line("clients_in_timeout_table", &0);
        }
        "memory" => {
            let used = used_memory(state);
            let maxmemory = state.settings.int("maxmemory").max(0) as u64;
            line("used_memory", &used);
            line("used_memory_human", &human_bytes(used));
            line("used_memory_rss", &used);
            line("used_memory_rss_human", &human_bytes(used));
            line("used_memory_peak", &used);
            line("used_memory_peak_human", &human_bytes(used));
            // Before the first script there is no interpreter; Redis's empty one holds 31 KB.
            let lua = state
                .scripting
                .as_ref()
                .map_or(31_744, |engine| engine.memory_used() as u64);
            line("used_memory_lua", &lua);
            line("used_memory_lua_human", &human_bytes(lua));
            let cached_scripts = state.scripting.as_ref().map_or(0, |engine| engine.len());
            line("number_of_cached_scripts", &cached_scripts);
            line("maxmemory", &maxmemory);
            line("maxmemory_human", &human_bytes(maxmemory));
            line("maxmemory_policy", &state.settings.get("maxmemory-policy"));
            line("mem_fragmentation_ratio", &"1.00");
            line("mem_allocator", &"libc");
            line("lazyfree_pending_objects", &0);
        }
        "persistence" => {
            line("loading", &0);
            line("async_loading", &0);
            line("rdb_changes_since_last_save", &state.dirty);
            line("rdb_bgsave_in_progress", &0);
            line("rdb_last_save_time", &state.last_save_unix);
            line("rdb_last_bgsave_status", &"ok");
            line("rdb_saves", &0);
            line("aof_enabled", &0);
            line("aof_rewrite_in_progress", &0);
            line("aof_rewrite_scheduled", &0);
            line("aof_last_bgrewrite_status", &"ok");
            line("aof_last_write_status", &"ok");
        }
        "stats" => {
            let live = &node.live;
            line(
                "total_connections_received",
                &node.connections_received.load(Ordering::Relaxed),
            );
            line("total_commands_processed", &state.stats.commands);
            line("instantaneous_ops_per_sec", &live.ops_per_sec());
            line(
                "total_net_input_bytes",
                &live.net_input.load(Ordering::Relaxed),
            );
            line(
                "total_net_output_bytes",
                &live.net_output.load(Ordering::Relaxed),
            );
            line("instantaneous_input_kbps", &"0.00");
            line("instantaneous_output_kbps", &"0.00");
            line(
                "rejected_connections",
                &live.rejected.load(Ordering::Relaxed),
            );
            line("sync_full", &0);
            line("sync_partial_ok", &0);
            line("sync_partial_err", &0);
            line("expired_keys", &state.stats.expired_keys);
            line("evicted_keys", &state.stats.evicted_keys);
            line("keyspace_hits", &state.stats.keyspace_hits);
            line("keyspace_misses", &state.stats.keyspace_misses);
            line(
                "total_error_replies",
                &live.total_errors.load(Ordering::Relaxed),
            );
        }
        "replication" => out.push_str(&crate::replication::replication_info(&state.repl)),
        "cpu" => {
            let (user, sys) = cpu_seconds();
            line("used_cpu_sys", &format!("{sys:.6}"));
            line("used_cpu_user", &format!("{user:.6}"));
            line("used_cpu_sys_children", &"0.000000");
            line("used_cpu_user_children", &"0.000000");
        }
        "errorstats" => {
            for (code, count) in node.live.error_counts() {
                line(&format!("errorstat_{code}"), &format!("count={count}"));
            }
        }
        "cluster" => line("cluster_enabled", &u8::from(node.cluster.get().is_some())),
        "keyspace" => {
            for (i, db) in state.dbs.iter().enumerate() {
                if db.len() == 0 {
                    continue;
                }
                let (expires, avg_ttl) = volatile_stats(db, now);
                line(
                    &format!("db{i}"),
                    &format!("keys={},expires={expires},avg_ttl={avg_ttl}", db.len()),
                );
            }
        }
        _ => {}
    }
}

/// Keys with a TTL and their average remaining TTL in ms (exact for small databases; Redis
/// itself only estimates it).
fn volatile_stats(db: &crate::db::Db, now: u64) -> (usize, u64) {
    let expires = db.volatile_len();
    if expires == 0 || db.len() > 100_000 {
        return (expires, 0);
    }
    let ttls: Vec<u64> = db
        .keys()
        .filter_map(|k| db.get(k, now).and_then(|e| e.expire_at))
        .map(|at| at.saturating_sub(now))
        .collect();
    let avg = if ttls.is_empty() {
        0
    } else {
        ttls.iter().sum::<u64>() / ttls.len() as u64
    };
    (expires, avg)
}

// ---------------------------------------------------------------------------------------
// COMMAND

/// ACL categories in Redis's bit order, with the test that puts a command in each.
fn acl_categories(spec: &CommandSpec, group: &str) -> Vec<&'static str> {
    let mut cats = Vec::new();
    let has = |f: u32| spec.flags & f != 0;
    if group == "generic" {
        cats.push("@keyspace");
    }
    if has(READONLY) {
        cats.push("@read");
    }
    if has(WRITE) {
        cats.push("@write");
    }
    match group {
        "set" => cats.push("@set"),
        "sorted_set" => cats.push("@sortedset"),
        "list" => cats.push("@list"),
        "hash" => cats.push("@hash"),
        "string" => cats.push("@string"),
        _ => {}
    }
    if has(PUBSUB) || group == "pubsub" {
        cats.push("@pubsub");
    }
    if has(ADMIN) {
        cats.push("@admin");
    }
    if has(FAST) {
        cats.push("@fast");
    } else {
        cats.push("@slow");
    }
    if has(BLOCKING) {
        cats.push("@blocking");
    }
    if has(ADMIN) {
        cats.push("@dangerous");
    }
    match group {
        "connection" => cats.push("@connection"),
        "transactions" => cats.push("@transaction"),
        "scripting" => cats.push("@scripting"),
        _ => {}
    }
    cats
}

/// The key specification Redis 7 derives from (first, last, step).
fn key_specs(spec: &CommandSpec) -> Frame {
    if spec.first_key <= 0 {
        return Frame::Array(Vec::new());
    }
    let key_flags: &[&'static str] = if spec.has(WRITE) {
        &["RW", "update"]
    } else {
        &["RO", "access"]
    };
    let last_relative = if spec.last_key >= 0 {
        spec.last_key - spec.first_key
    } else {
        spec.last_key
    };
    let entry = |k: &'static str, v: Frame| (bulk_str(k), v);
    Frame::Array(vec![Frame::Map(vec![
        entry(
            "flags",
            Frame::Set(key_flags.iter().map(|f| Frame::simple(f)).collect()),
        ),
        entry(
            "begin_search",
            Frame::Map(vec![
                entry("type", bulk_str("index")),
                entry(
                    "spec",
                    Frame::Map(vec![entry("index", Frame::Integer(spec.first_key.into()))]),
                ),
            ]),
        ),
        entry(
            "find_keys",
            Frame::Map(vec![
                entry("type", bulk_str("range")),
                entry(
                    "spec",
                    Frame::Map(vec![
                        entry("lastkey", Frame::Integer(last_relative.into())),
                        entry("keystep", Frame::Integer(spec.step.into())),
                        entry("limit", Frame::Integer(0)),
                    ]),
                ),
            ]),
        ),
    ])])
}

/// One `COMMAND INFO` entry in Redis 7's shape: name, arity, flags, first key, last key,
/// step, ACL categories, tips, key specs, subcommands.
fn command_entry(spec: &CommandSpec, parent: Option<&CommandSpec>) -> Frame {
    let name = match parent {
        Some(p) => format!("{}|{}", p.name, spec.name),
        None => spec.name.to_string(),
    };
    let flag_names = flags::NAMES
        .iter()
        .filter(|(bit, _)| spec.flags & bit != 0)
        .map(|(_, n)| Frame::simple(n))
        .collect();
    let group = parent.map_or(spec.group, |p| p.group);
    let cats = acl_categories(spec, group)
        .into_iter()
        .map(|c| Frame::Simple(Bytes::from_static(c.as_bytes())))
        .collect();
    let subs = spec
        .subcommands
        .iter()
        .map(|s| command_entry(s, Some(spec)))
        .collect();
    Frame::Array(vec![
        Frame::Bulk(Bytes::from(name)),
        Frame::Integer(spec.arity.into()),
        Frame::Set(flag_names),
        Frame::Integer(spec.first_key.into()),
        Frame::Integer(spec.last_key.into()),
        Frame::Integer(spec.step.into()),
        Frame::Set(cats),
        Frame::Array(Vec::new()),
        key_specs(spec),
        Frame::Array(subs),
    ])
}

/// Every top-level command, by name.
fn sorted_commands() -> Vec<&'static CommandSpec> {
    let mut all: Vec<&'static CommandSpec> = table().to_vec();
    all.sort_by_key(|s| s.name);
    all
}

/// Looks up `name` or `container|sub`.
fn find_spec(name: &[u8]) -> Option<(&'static CommandSpec, Option<&'static CommandSpec>)> {
    let text = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
    match text.split_once('|') {
        None => super::lookup(text.as_bytes()).map(|s| (s, None)),
        Some((container, sub)) => {
            let parent = super::lookup(container.as_bytes())?;
            let spec = parent.subcommands.iter().find(|s| s.name == sub)?;
            Some((spec, Some(parent)))
        }
    }
}

/// ```text
/// COMMAND
/// ```
fn command(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Array(
        sorted_commands()
            .into_iter()
            .map(|s| command_entry(s, None))
            .collect(),
    ))
}

/// ```text
/// COMMAND COUNT
/// ```
fn command_count(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(table().len() as i64))
}

/// ```text
/// COMMAND INFO [command-name [command-name ...]]
/// ```
fn command_info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.is_empty() {
        return command(ctx, args);
    }
    Ok(Frame::Array(
        args.rest()
            .iter()
            .map(|name| match find_spec(name) {
                Some((spec, parent)) => command_entry(spec, parent),
                None => Frame::Null,
            })
            .collect(),
    ))
}

/// ```text
/// COMMAND DOCS [command-name [command-name ...]]
/// ```
fn command_docs(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    fn docs(spec: &CommandSpec, parent: Option<&CommandSpec>) -> Frame {
        let entry = |k: &'static str, v: Frame| (bulk_str(k), v);
        let mut fields = vec![
            entry("summary", bulk_str(spec.summary)),
            entry("group", bulk_str(parent.map_or(spec.group, |p| p.group))),
        ];
        if !spec.subcommands.is_empty() {
            let subs = spec
                .subcommands
                .iter()
                .map(|s| {
                    (
                        Frame::Bulk(Bytes::from(format!("{}|{}", spec.name, s.name))),
                        docs(s, Some(spec)),
                    )
                })
                .collect();
            fields.push(entry("subcommands", Frame::Map(subs)));
        }
        Frame::Map(fields)
    }
    let mut out = Vec::new();
    if args.is_empty() {
        for spec in sorted_commands() {
            out.push((bulk_str(spec.name), docs(spec, None)));
        }
    }
    for name in args.rest() {
        if let Some((spec, parent)) = find_spec(name) {
            let full = match parent {
                Some(p) => format!("{}|{}", p.name, spec.name),
                None => spec.name.to_string(),
            };
            out.push((Frame::Bulk(Bytes::from(full)), docs(spec, parent)));
        }
    }
    Ok(Frame::Map(out))
}

/// ```text
/// COMMAND LIST [FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]
/// ```
fn command_list(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    enum Filter {
        None,
        Module,
        AclCat(String),
        Pattern(Bytes),
    }
    let filter = match args.rest() {
        [] => Filter::None,
        [by, kind, value] if by.eq_ignore_ascii_case(b"filterby") => {
            match kind.to_ascii_lowercase().as_slice() {
                b"module" => Filter::Module,
                b"aclcat" => Filter::AclCat(format!(
                    "@{}",
                    String::from_utf8_lossy(value).to_ascii_lowercase()
                )),
                b"pattern" => Filter::Pattern(value.clone()),
                _ => return Err(CommandError::Syntax),
            }
        }
        _ => return Err(CommandError::Syntax),
    };
    let mut names = Vec::new();
    for spec in sorted_commands() {
        let mut candidates = vec![(spec.name.to_string(), spec, spec.group)];
        for sub in spec.subcommands {
            candidates.push((format!("{}|{}", spec.name, sub.name), sub, spec.group));
        }
        for (name, s, group) in candidates {
            let keep = match &filter {
                Filter::None => true,
                Filter::Module => false,
                Filter::AclCat(cat) => acl_categories(s, group).contains(&cat.as_str()),
                Filter::Pattern(p) => glob_match(p, name.as_bytes(), true),
            };
            if keep {
                names.push(Frame::Bulk(Bytes::from(name)));
            }
        }
    }
    Ok(Frame::Array(names))
}

/// ```text
/// COMMAND GETKEYS command [arg [arg ...]]
/// ```
fn command_getkeys(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let argv = args.rest();
    let spec = match super::resolve(argv) {
        Ok(resolved) => resolved.spec,
        Err(CommandError::WrongArity(_)) => {
            return Err(CommandError::err(
                "Invalid number of arguments specified for command",
            ))
        }
        Err(_) => return Err(CommandError::err("Invalid command specified")),
    };
    if spec.has(MOVABLE_KEYS) || spec.first_key <= 0 {
        if spec.first_key <= 0 && !spec.has(MOVABLE_KEYS) {
            return Err(CommandError::err("The command has no key arguments"));
        }
        return Err(CommandError::err("Invalid arguments specified for command"));
    }
    let keys = spec
        .key_indexes(argv.len())
        .into_iter()
        .filter_map(|i| argv.get(i).cloned())
        .map(Frame::Bulk)
        .collect();
    Ok(Frame::Array(keys))
}

/// ```text
/// COMMAND HELP
/// ```
fn command_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_lines(
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_matches_redis() {
        assert_eq!(human_bytes(0), "0B");
        assert_eq!(human_bytes(1_137_592), "1.08M");
        assert_eq!(human_bytes(83_968), "82.00K");
    }
}
