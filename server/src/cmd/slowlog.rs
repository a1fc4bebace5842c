//! `SLOWLOG GET|LEN|RESET|HELP`: the slow log ([`crate::slowlog`]) as Redis 7.0 shows it;
//! Valkey 8.1's `COMMANDLOG GET|LEN|RESET|HELP`, which shows its three logs the same way
//! (its table alone describes it, so it exists only under its target). What gets logged is
//! decided where commands run (`cmd::call`).

use super::client::help_reply;
use super::{bulk_str, Args, CmdResult, Command, CommandError, Ctx};
use crate::slowlog::{LogType, SlowLog};
use bytes::Bytes;
use locksmith_resp::Frame;

/// `SLOWLOG`, `COMMANDLOG` and their subcommands.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("slowlog", slowlog).subs(SLOWLOG_SUBCOMMANDS),
    Command::new("commandlog", commandlog).subs(COMMANDLOG_SUBCOMMANDS),
];

/// In Redis's `COMMAND INFO` order.
static SLOWLOG_SUBCOMMANDS: &[Command] = &[
    Command::new("get", slowlog_get),
    Command::new("len", slowlog_len),
    Command::new("reset", slowlog_reset),
    Command::new("help", slowlog_help),
];

/// `SLOWLOG` alone (the arity check answers first; kept for the table).
fn slowlog(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::WrongArity("slowlog".into()))
}

/// ```text
/// SLOWLOG GET [count]
/// ```
///
/// The `count` newest entries (10 by default, `-1` for all), newest first, each `[id, unix
/// time, microseconds, [args...], client address, client name]`.
fn slowlog_get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let count = match args.rest() {
        [] => 10,
        [count] => parse_count(count)?,
        _ => return Err(CommandError::subcommand_syntax("SLOWLOG", args.argv())),
    };
    Ok(entries(ctx.state.commandlog.get(LogType::Slow), count))
}

/// A `GET` count: `-1` for all; any bad count gets the range message (Redis's
/// getRangeLongFromObjectOrReply).
fn parse_count(count: &Bytes) -> Result<usize, CommandError> {
    match locksmith_resp::parse_integer(count) {
        Some(-1) => Ok(usize::MAX),
        Some(n) if n >= 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        _ => Err(CommandError::err(
            "count should be greater than or equal to -1",
        )),
    }
}

/// The `count` newest entries of `log`, newest first, each `[id, unix time, value, [args...],
/// client address, client name]`.
fn entries(log: &SlowLog, count: usize) -> Frame {
    let entries = log
        .newest(count)
        .map(|e| {
            Frame::Array(vec![
                Frame::Integer(i64::try_from(e.id).unwrap_or(i64::MAX)),
                Frame::Integer(i64::try_from(e.time).unwrap_or(i64::MAX)),
                Frame::Integer(i64::try_from(e.value).unwrap_or(i64::MAX)),
                Frame::Array(e.argv.iter().cloned().map(Frame::Bulk).collect()),
                bulk_str(&e.peer),
                Frame::Bulk(e.name.clone()),
            ])
        })
        .collect();
    Frame::Array(entries)
}

/// ```text
/// SLOWLOG LEN
/// ```
fn slowlog_len(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(
        i64::try_from(ctx.state.commandlog.get(LogType::Slow).len()).unwrap_or(i64::MAX),
    ))
}

/// ```text
/// SLOWLOG RESET
/// ```
fn slowlog_reset(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    ctx.state.commandlog.get_mut(LogType::Slow).reset();
    Ok(Frame::ok())
}

/// ```text
/// SLOWLOG HELP
/// ```
fn slowlog_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "SLOWLOG"))
}

/// In Valkey's `COMMAND INFO` order.
static COMMANDLOG_SUBCOMMANDS: &[Command] = &[
    Command::new("get", commandlog_get),
    Command::new("help", commandlog_help),
    Command::new("len", commandlog_len),
    Command::new("reset", commandlog_reset),
];

/// `COMMANDLOG` alone (the arity check answers first; kept for the table).
fn commandlog(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::WrongArity("commandlog".into()))
}

/// The log a `COMMANDLOG` type argument names (Valkey's `commandlogGetTypeOrReply`).
fn log_type(name: &[u8]) -> Result<LogType, CommandError> {
    LogType::parse(name).ok_or_else(|| {
        CommandError::err("type should be one of the following: slow, large-request, large-reply")
    })
}

/// ```text
/// COMMANDLOG GET count slow|large-request|large-reply
/// ```
///
/// The `count` newest entries of the log (`-1` for all), as `SLOWLOG GET` shows them; the
/// count is checked first.
fn commandlog_get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let [count, name] = args.rest() else {
        return Err(CommandError::WrongArity("commandlog|get".into()));
    };
    let count = parse_count(count)?;
    let t = log_type(name)?;
    Ok(entries(ctx.state.commandlog.get(t), count))
}

/// ```text
/// COMMANDLOG LEN slow|large-request|large-reply
/// ```
fn commandlog_len(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let [name] = args.rest() else {
        return Err(CommandError::WrongArity("commandlog|len".into()));
    };
    let t = log_type(name)?;
    Ok(Frame::Integer(
        i64::try_from(ctx.state.commandlog.get(t).len()).unwrap_or(i64::MAX),
    ))
}

/// ```text
/// COMMANDLOG RESET slow|large-request|large-reply
/// ```
///
/// Drops the log's entries (its ids keep counting).
fn commandlog_reset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let [name] = args.rest() else {
        return Err(CommandError::WrongArity("commandlog|reset".into()));
    };
    let t = log_type(name)?;
    ctx.state.commandlog.get_mut(t).reset();
    Ok(Frame::ok())
}

/// ```text
/// COMMANDLOG HELP
/// ```
fn commandlog_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "COMMANDLOG"))
}
