//! `SLOWLOG GET|LEN|RESET|HELP`: the slow log ([`crate::slowlog`]) as Redis 7.0 shows it.
//! What gets logged is decided where commands run (`cmd::call`).

use super::client::help_reply;
use super::{bulk_str, Args, CmdResult, Command, CommandError, Ctx};
use locksmith_resp::Frame;

/// `SLOWLOG` and its subcommands.
pub(crate) static COMMANDS: &[Command] =
    &[Command::new("slowlog", slowlog).subs(SLOWLOG_SUBCOMMANDS)];

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
        // Any bad count gets the range message (Redis's getRangeLongFromObjectOrReply).
        [count] => match locksmith_resp::parse_integer(count) {
            Some(-1) => usize::MAX,
            Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => {
                return Err(CommandError::err(
                    "count should be greater than or equal to -1",
                ))
            }
        },
        _ => return Err(CommandError::subcommand_syntax("SLOWLOG", args.argv())),
    };
    let entries = ctx
        .state
        .slowlog
        .newest(count)
        .map(|e| {
            Frame::Array(vec![
                Frame::Integer(i64::try_from(e.id).unwrap_or(i64::MAX)),
                Frame::Integer(i64::try_from(e.time).unwrap_or(i64::MAX)),
                Frame::Integer(i64::try_from(e.duration_us).unwrap_or(i64::MAX)),
                Frame::Array(e.argv.iter().cloned().map(Frame::Bulk).collect()),
                bulk_str(&e.peer),
                Frame::Bulk(e.name.clone()),
            ])
        })
        .collect();
    Ok(Frame::Array(entries))
}

/// ```text
/// SLOWLOG LEN
/// ```
fn slowlog_len(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(
        i64::try_from(ctx.state.slowlog.len()).unwrap_or(i64::MAX),
    ))
}

/// ```text
/// SLOWLOG RESET
/// ```
fn slowlog_reset(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    ctx.state.slowlog.reset();
    Ok(Frame::ok())
}

/// ```text
/// SLOWLOG HELP
/// ```
fn slowlog_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "SLOWLOG"))
}
