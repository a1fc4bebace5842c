//! Functions: FCALL, FCALL_RO and FUNCTION LOAD|DELETE|LIST|FLUSH|DUMP|RESTORE|STATS|KILL|HELP,
//! as Redis 7.0's `functions.c`. Libraries live in [`crate::script::Libraries`] on their own
//! interpreter; a function runs through the same checks and `redis.call` path as `EVAL`.

use super::script::{command_exists, feed_monitors, kill_running, run_checked, Runnable};
use super::{bulk_str, flags::*, Args, CmdResult, Command, CommandError, Ctx};
use crate::config::runtime::LuaSettings;
use crate::glob::glob_match;
use crate::node::Node;
use crate::script::{script_flags, Engine, RestorePolicy};
use bytes::Bytes;
use locksmith_resp::Frame;
use std::time::Duration;

/// How long `FUNCTION LOAD` lets a library's code run (`LOAD_TIMEOUT_MS`).
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// The functions family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("fcall", fcall).extra_flags(MAY_REPLICATE | RUNS_SCRIPT),
    Command::new("fcall_ro", fcall_ro).extra_flags(RUNS_SCRIPT),
    Command::new("function", function_container).subs(FUNCTION_SUBCOMMANDS),
];

static FUNCTION_SUBCOMMANDS: &[Command] = &[
    Command::new("dump", function_dump),
    Command::new("load", function_load).extra_flags(RUNS_SCRIPT),
    Command::new("help", function_help),
    Command::new("stats", function_stats).busy(function_stats_busy),
    Command::new("delete", function_delete),
    Command::new("restore", function_restore).extra_flags(RUNS_SCRIPT),
    Command::new("kill", function_kill).busy(function_kill_busy),
    Command::new("list", function_list),
    Command::new("flush", function_flush),
];

/// `FUNCTION` without a subcommand.
fn function_container(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::WrongArity("function".into()))
}

/// The error Redis's `addReplySubcommandSyntaxError` gives, naming the subcommand as sent.
fn subcommand_syntax(args: &Args<'_>) -> CommandError {
    CommandError::subcommand_syntax("FUNCTION", args.argv())
}

/// Makes the functions interpreter (on first use and after `FUNCTION FLUSH`).
fn make_engine(node: &Node, lua: LuaSettings) -> impl FnOnce() -> Result<Engine, String> {
    let kill = node.script.kill.clone();
    move || {
        Engine::new_functions(kill, command_exists, lua).map_err(|e| {
            tracing::error!(error = %e, "cannot create the Lua interpreter for functions");
            "Lua interpreter unavailable".to_string()
        })
    }
}

/// Publishes the library counts `FUNCTION STATS` reads while a script is busy.
fn publish_counts(ctx: &Ctx<'_>) {
    if let Ok(mut counts) = ctx.node.script.function_counts.lock() {
        *counts = ctx.state.functions.counts();
    }
}

/// ```text
/// FCALL function numkeys [key [key ...]] [arg [arg ...]]
/// ```
fn fcall(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    fcall_generic(ctx, args, false)
}

/// ```text
/// FCALL_RO function numkeys [key [key ...]] [arg [arg ...]]
/// ```
fn fcall_ro(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    fcall_generic(ctx, args, true)
}

fn fcall_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, ro: bool) -> CmdResult {
    // Functions are fed to monitors before the commands they run (fcallCommandGeneric).
    feed_monitors(ctx, args.argv());
    let command = args.argv();
    let name = args.bytes()?;
    let numkeys = args.bytes()?;
    let rest = args.rest();
    // The libraries are taken out for the run, so `redis.call` can borrow the rest of the
    // state (FUNCTION commands are refused inside scripts, so nothing reads them meanwhile).
    let libraries = std::mem::take(&mut ctx.state.functions);
    let reply = match libraries.function(name) {
        None => Err(CommandError::err("Function not found")),
        Some((engine, function)) => match super::parse_i64(numkeys) {
            Err(_) => Err(CommandError::err("Bad number of keys provided")),
            Ok(n) if n > rest.len() as i64 => Err(CommandError::err(
                "Number of keys can't be greater than number of args",
            )),
            Ok(n) if n < 0 => Err(CommandError::err("Number of keys can't be negative")),
            Ok(n) => {
                let (keys, argv) = rest.split_at(n as usize);
                run_checked(
                    ctx,
                    engine,
                    Runnable::Function(function, command),
                    (keys, argv),
                    ro,
                )
            }
        },
    };
    ctx.state.functions = libraries;
    reply
}

/// ```text
/// FUNCTION LOAD [REPLACE] function-code
/// ```
fn function_load(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut replace = false;
    while args.remaining() > 1 {
        if args.eat("replace") {
            replace = true;
            continue;
        }
        let option = args.bytes()?;
        return Err(CommandError::err(format!(
            "Unknown option given: {}",
            String::from_utf8_lossy(option)
        )));
    }
    let code = args
        .bytes()
        .map_err(|_| CommandError::err("Function code is missing"))?;
    // What the master sends is applied whatever it takes (`mustObeyClient`).
    let timeout = (ctx.client.id() != crate::replication::MASTER_CLIENT_ID).then_some(LOAD_TIMEOUT);
    let make = make_engine(ctx.node, ctx.node.config.lua());
    let name = ctx
        .state
        .functions
        .load(code, replace, timeout, make)
        .map_err(CommandError::err)?;
    ctx.state.dirty += 1;
    publish_counts(ctx);
    Ok(Frame::Bulk(Bytes::from(name)))
}

/// ```text
/// FUNCTION DELETE library-name
/// ```
fn function_delete(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.bytes()?;
    if !ctx.state.functions.delete(name) {
        return Err(CommandError::err("Library not found"));
    }
    ctx.state.dirty += 1;
    publish_counts(ctx);
    Ok(Frame::ok())
}

/// ```text
/// FUNCTION FLUSH [ASYNC | SYNC]
/// ```
fn function_flush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    match args.remaining() {
        0 => {}
        1 if args.eat("sync") || args.eat("async") => {}
        1 => {
            return Err(CommandError::err(
                "FUNCTION FLUSH only supports SYNC|ASYNC option",
            ))
        }
        _ => return Err(subcommand_syntax(args)),
    }
    ctx.state.functions.flush();
    ctx.state.dirty += 1;
    publish_counts(ctx);
    Ok(Frame::ok())
}

/// ```text
/// FUNCTION LIST [LIBRARYNAME library-name-pattern] [WITHCODE]
/// ```
fn function_list(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut with_code = false;
    let mut pattern: Option<Bytes> = None;
    while let Some(arg) = args.next() {
        if !with_code && arg.eq_ignore_ascii_case(b"withcode") {
            with_code = true;
            continue;
        }
        if pattern.is_none() && arg.eq_ignore_ascii_case(b"libraryname") {
            match args.next() {
                Some(p) => pattern = Some(p.clone()),
                None => return Err(CommandError::err("library name argument was not given")),
            }
            continue;
        }
        return Err(CommandError::err(format!(
            "Unknown argument {}",
            String::from_utf8_lossy(arg)
        )));
    }
    let mut out = Vec::new();
    for library in ctx.state.functions.libraries() {
        if let Some(p) = &pattern {
            if !glob_match(p, library.name.as_bytes(), true) {
                continue;
            }
        }
        let functions = library
            .functions
            .iter()
            .map(|f| {
                let flags = script_flags::NAMES
                    .iter()
                    .filter(|(_, bit)| f.flags & bit != 0)
                    .map(|(name, _)| Frame::Simple(Bytes::from_static(name.as_bytes())))
                    .collect();
                Frame::Map(vec![
                    (bulk_str("name"), bulk_str(&f.name)),
                    (
                        bulk_str("description"),
                        f.description.clone().map_or(Frame::Null, Frame::Bulk),
                    ),
                    (bulk_str("flags"), Frame::Set(flags)),
                ])
            })
            .collect();
        let mut fields = vec![
            (bulk_str("library_name"), bulk_str(&library.name)),
            (bulk_str("engine"), bulk_str("LUA")),
            (bulk_str("functions"), Frame::Array(functions)),
        ];
        if with_code {
            fields.push((bulk_str("library_code"), Frame::Bulk(library.code.clone())));
        }
        out.push(Frame::Map(fields));
    }
    Ok(Frame::Array(out))
}

/// ```text
/// FUNCTION DUMP
/// ```
fn function_dump(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let compress = ctx.state.config.rdbcompression();
    let version = ctx.state.config.profile().encodings.rdb_version;
    Ok(Frame::Bulk(Bytes::from(
        ctx.state.functions.dump_as(compress, version),
    )))
}

/// ```text
/// FUNCTION RESTORE serialized-value [FLUSH | APPEND | REPLACE]
/// ```
fn function_restore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.remaining() > 2 {
        return Err(subcommand_syntax(args));
    }
    let payload = args.bytes()?;
    let policy = match args.next() {
        None => RestorePolicy::Append,
        Some(p) if p.eq_ignore_ascii_case(b"append") => RestorePolicy::Append,
        Some(p) if p.eq_ignore_ascii_case(b"replace") => RestorePolicy::Replace,
        Some(p) if p.eq_ignore_ascii_case(b"flush") => RestorePolicy::Flush,
        Some(_) => {
            return Err(CommandError::err(
                "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ))
        }
    };
    let make = make_engine(ctx.node, ctx.node.config.lua());
    let version = ctx.state.config.profile().encodings.rdb_version;
    ctx.state
        .functions
        .restore(payload, version, policy, make)
        .map_err(CommandError::err)?;
    ctx.state.dirty += 1;
    publish_counts(ctx);
    Ok(Frame::ok())
}

/// ```text
/// FUNCTION STATS
/// ```
fn function_stats(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    // Under the state lock no script runs: only the counts matter.
    Ok(stats_reply(None, ctx.state.functions.counts()))
}

/// FUNCTION STATS while a script is busy (without the state lock).
fn function_stats_busy(node: &Node, _argv: &[Bytes]) -> Frame {
    let status = &node.script;
    if status.running.load(std::sync::atomic::Ordering::Acquire)
        && !status
            .is_function
            .load(std::sync::atomic::Ordering::Acquire)
    {
        // Redis refuses it while an EVAL runs (`slowevalerr`).
        return Frame::error(node.busy_error_of(false));
    }
    let running = status.function.lock().ok().and_then(|f| f.clone());
    let duration = node.script_running_for().unwrap_or(0);
    let counts = status.function_counts.lock().map(|c| *c).unwrap_or((0, 0));
    stats_reply(running.map(|(name, argv)| (name, argv, duration)), counts)
}

/// The `FUNCTION STATS` reply.
fn stats_reply(running: Option<(String, Vec<Bytes>, u64)>, (libs, funcs): (usize, usize)) -> Frame {
    let running = match running {
        None => Frame::Null,
        Some((name, argv, duration)) => Frame::Map(vec![
            (bulk_str("name"), bulk_str(&name)),
            (
                bulk_str("command"),
                Frame::Array(argv.into_iter().map(Frame::Bulk).collect()),
            ),
            (
                bulk_str("duration_ms"),
                Frame::Integer(i64::try_from(duration).unwrap_or(i64::MAX)),
            ),
        ]),
    };
    Frame::Map(vec![
        (bulk_str("running_script"), running),
        (
            bulk_str("engines"),
            Frame::Map(vec![(
                bulk_str("LUA"),
                Frame::Map(vec![
                    (
                        bulk_str("libraries_count"),
                        Frame::Integer(i64::try_from(libs).unwrap_or(i64::MAX)),
                    ),
                    (
                        bulk_str("functions_count"),
                        Frame::Integer(i64::try_from(funcs).unwrap_or(i64::MAX)),
                    ),
                ]),
            )]),
        ),
    ])
}

/// ```text
/// FUNCTION KILL
/// ```
fn function_kill(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(kill_running(ctx.node, true))
}

/// FUNCTION KILL while a script is busy.
fn function_kill_busy(node: &Node, _argv: &[Bytes]) -> Frame {
    kill_running(node, true)
}

/// ```text
/// FUNCTION HELP
/// ```
fn function_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(super::client::help_reply(ctx, "FUNCTION"))
}
