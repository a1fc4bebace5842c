//! `CONFIG GET|SET|RESETSTAT|REWRITE|HELP`, and applying a parameter (at start or by `CONFIG
//! SET`) to what it changes.

use super::client::help_lines;
use super::{bulk_str, flags::*, lossy, Args, CmdResult, CommandError, CommandSpec, Ctx};
use crate::config_table::{self, Param};
use crate::glob::glob_match;
use crate::node::{Node, State, Stats};
use locksmith_resp::Frame;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub(super) static CONFIG_SUBCOMMANDS: &[CommandSpec] = &[
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
        "min-replicas-to-write" => {
            node.live
                .min_replicas_to_write
                .store(number(), Ordering::Relaxed);
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
    ctx.state.cmdstats.reset();
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
pub(super) fn config_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
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
