//! Connection commands: PING, ECHO, SELECT, QUIT.

use super::{flags::*, Args, CmdResult, CommandError, CommandSpec, Ctx};
use locksmith_resp::Frame;

/// The connection family's table.
pub(crate) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("ping", -1, ping)
        .flags(FAST | STALE | LOADING)
        .doc("connection", "Returns the server's liveliness response."),
    CommandSpec::new("echo", 2, echo)
        .flags(FAST | STALE | LOADING)
        .doc("connection", "Returns the given string."),
    CommandSpec::new("select", 2, select)
        .flags(FAST | STALE | LOADING)
        .doc("connection", "Changes the selected database."),
    CommandSpec::new("quit", -1, quit)
        .flags(FAST | STALE | LOADING | NO_AUTH | ALLOW_BUSY | NOSCRIPT)
        .doc("connection", "Closes the connection."),
];

/// ```text
/// PING [message]
/// ```
fn ping(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.remaining() <= 1
        && ctx.client.subscriptions > 0
        && ctx.client.resp == locksmith_resp::Version::Resp2
    {
        // RESP2 subscribed mode: `["pong", message or ""]`, as Redis's pingCommand.
        let message = args.next().cloned().unwrap_or_default();
        return Ok(Frame::Array(vec![
            Frame::Bulk(bytes::Bytes::from_static(b"pong")),
            Frame::Bulk(message),
        ]));
    }
    match args.remaining() {
        0 => Ok(Frame::simple("PONG")),
        1 => Ok(Frame::Bulk(args.bytes()?)),
        _ => Err(CommandError::WrongArity("ping".into())),
    }
}

/// ```text
/// ECHO message
/// ```
fn echo(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Bulk(args.bytes()?))
}

/// ```text
/// SELECT index
/// ```
fn select(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let index = args.i64()?;
    if index < 0 || index as usize >= ctx.state.dbs.len() {
        return Err(CommandError::err("DB index is out of range"));
    }
    ctx.client.db = index as usize;
    Ok(Frame::ok())
}

/// ```text
/// QUIT
/// ```
fn quit(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    ctx.client.close_after_reply = true;
    Ok(Frame::ok())
}
