//! `CONFIG GET|SET|RESETSTAT|REWRITE|HELP`, and applying a parameter (at start or by `CONFIG
//! SET`) to what it changes.

use super::client::help_reply;
use super::{bulk_str, lossy, Args, CmdResult, Command, CommandError, Ctx};
use crate::config::runtime::StateStep;
use crate::config::table::Param;
use crate::glob::glob_match;
use crate::node::Stats;
use locksmith_resp::Frame;
use std::collections::HashSet;
use std::sync::atomic::Ordering;

pub(super) static CONFIG_SUBCOMMANDS: &[Command] = &[
    Command::new("get", config_get),
    Command::new("set", config_set),
    Command::new("resetstat", config_resetstat),
    Command::new("rewrite", config_rewrite),
    Command::new("help", config_help),
];

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
            if let Some(param) = ctx.node.config.find(pattern) {
                if seen.insert(pattern.to_vec()) {
                    out.push((
                        Frame::Bulk(pattern.clone()),
                        bulk_str(&ctx.node.config.get(param)),
                    ));
                }
            }
            continue;
        }
        for (param, names) in ctx.node.config.listed() {
            for name in names {
                if glob_match(pattern, name.as_bytes(), true)
                    && seen.insert(name.as_bytes().to_vec())
                {
                    out.push((bulk_str(name), bulk_str(&ctx.node.config.get(param))));
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
        let Some(param) = ctx.node.config.find(name) else {
            return Err(CommandError::err(format!(
                "Unknown option or number of arguments for CONFIG SET - '{}'",
                lossy(name, 128)
            )));
        };
        if !names_seen.insert(name.to_ascii_lowercase()) {
            return Err(failed(name, "duplicate parameter"));
        }
        let normalized = param
            .validate(value, &ctx.node.config)
            .map_err(|reason| failed(name, &reason))?;
        changes.push((param, normalized));
    }
    let mut steps = Vec::new();
    for (param, value) in changes {
        ctx.node.config.store(param, &value);
        let step = crate::config::runtime::binding(param.name).and_then(|b| b.then);
        if let Some(step) = step.filter(|s| !steps.contains(s)) {
            steps.push(step);
        }
    }
    // Evictions a lower `maxmemory` starts follow the policy set by the same CONFIG SET.
    steps.sort_by_key(|step| *step == StateStep::MaxMemory);
    for step in steps {
        match step {
            StateStep::Eviction => ctx.state.apply_eviction_config(),
            StateStep::MaxMemory => {
                let limit = ctx.node.config.maxmemory();
                let used = ctx.state.used_memory();
                if limit > 0 && used > limit {
                    tracing::warn!(
                        "WARNING: the new maxmemory value set via CONFIG SET ({limit}) is \
                         smaller than the current memory usage ({used}). This will result in \
                         key eviction and/or the inability to accept new write commands \
                         depending on the maxmemory-policy."
                    );
                    let _ = ctx.state.perform_evictions(limit, ctx.now, ctx.effects);
                }
            }
            StateStep::DefaultPassword => {
                let password = ctx.node.config.requirepass();
                ctx.node
                    .acl
                    .set_default_password(password.as_deref().map(str::as_bytes));
            }
            // Redis trims the slow log after every command while it is on; Valkey each
            // command log that is on and has a max length.
            StateStep::SlowLog => {
                let valkey = ctx.node.config.commandlog();
                for t in crate::slowlog::LogType::ALL {
                    let max_len = ctx.node.config.commandlog_max_len(t);
                    if ctx.node.config.commandlog_threshold(t) >= 0 && (max_len > 0 || !valkey) {
                        ctx.state.commandlog.get_mut(t).trim(max_len);
                    }
                }
            }
        }
    }
    Ok(Frame::ok())
}

/// ```text
/// CONFIG RESETSTAT
/// ```
fn config_resetstat(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    ctx.state.stats = Stats::default();
    ctx.state.pubsub.output_limit_disconnections = 0;
    ctx.state.repl.output_limit_disconnections = 0;
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
pub(super) fn config_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "CONFIG"))
}
