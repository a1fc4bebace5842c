//! Connection commands: PING, ECHO, SELECT, QUIT, HELLO, AUTH, RESET.

use super::{Args, CmdResult, Command, CommandError, Ctx};
use bytes::Bytes;
use locksmith_resp::{Frame, Version};

/// `WRONGPASS` reply of `AUTH` and `HELLO … AUTH`.
const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// The connection family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("ping", ping),
    Command::new("echo", echo),
    Command::new("select", select),
    Command::new("quit", quit),
    Command::new("hello", hello),
    Command::new("auth", auth),
    Command::new("reset", reset),
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
        1 => Ok(Frame::Bulk(args.bytes()?.clone())),
        _ => Err(CommandError::WrongArity("ping".into())),
    }
}

/// ```text
/// ECHO message
/// ```
fn echo(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Bulk(args.bytes()?.clone()))
}

/// ```text
/// SELECT index
/// ```
fn select(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let index = super::parse_i32(args.next().ok_or(CommandError::Syntax)?, None)?;
    if index != 0 && ctx.node.cluster.get().is_some() {
        return Err(CommandError::err("SELECT is not allowed in cluster mode"));
    }
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

/// Redis's `ACLAuthenticateUser`: on success the client acts as the user; on failure the
/// attempt goes to the ACL log.
fn authenticate(
    ctx: &mut Ctx<'_>,
    command: &Bytes,
    user: &Bytes,
    password: &[u8],
) -> Result<(), CommandError> {
    match ctx.node.acl.authenticate(user, password) {
        Some(found) => {
            ctx.client.authenticated = true;
            let default = std::sync::Arc::ptr_eq(&found, ctx.node.acl.default_user());
            ctx.client.set_user((!default).then_some(found));
            Ok(())
        }
        None => {
            super::acl::log_auth_failure(ctx, command, user);
            Err(CommandError::Raw(WRONGPASS.into()))
        }
    }
}

/// ```text
/// AUTH [username] password
/// ```
fn auth(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (user, password) = match args.rest() {
        [password] => {
            // Redis keeps the old error for the one-argument form while the default user has
            // no password.
            if ctx.node.acl.default_user().rules().nopass() {
                return Err(CommandError::err(
                    "AUTH <password> called without any password configured for the default \
                     user. Are you sure your configuration is correct?",
                ));
            }
            (Bytes::from_static(b"default"), password)
        }
        [user, password] => (user.clone(), password),
        _ => return Err(CommandError::Syntax),
    };
    let command = args.argv().first().cloned().unwrap_or_default();
    authenticate(ctx, &command, &user, password)?;
    Ok(Frame::ok())
}

/// `CLIENT SETNAME` / `HELLO SETNAME` validation: no spaces, newlines or other characters
/// outside `!`..=`~`.
pub(crate) fn valid_client_name(name: &[u8]) -> Result<(), CommandError> {
    if name.iter().all(|&c| (b'!'..=b'~').contains(&c)) {
        Ok(())
    } else {
        Err(CommandError::err(
            "Client names cannot contain spaces, newlines or special characters.",
        ))
    }
}

/// Stores `name` as the client's name (empty clears it).
pub(crate) fn set_client_name(ctx: &mut Ctx<'_>, name: &Bytes) -> Result<(), CommandError> {
    valid_client_name(name)?;
    let name = (!name.is_empty()).then(|| name.clone());
    ctx.client.handle.update(|info| info.name = name);
    Ok(())
}

/// ```text
/// HELLO [protover [AUTH username password] [SETNAME clientname]]
/// ```
fn hello(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut version = None;
    if let Some(arg) = args.next() {
        let v = locksmith_resp::parse_integer(arg).ok_or_else(|| {
            CommandError::err("Protocol version is not an integer or out of range")
        })?;
        version = match v {
            2 => Some(Version::Resp2),
            3 => Some(Version::Resp3),
            _ => {
                return Err(CommandError::Raw(
                    "NOPROTO unsupported protocol version".into(),
                ))
            }
        };
    }
    let mut credentials = None;
    let mut name = None;
    while let Some(opt) = args.next() {
        if opt.eq_ignore_ascii_case(b"AUTH") && args.remaining() >= 2 {
            credentials = Some((args.bytes()?, args.bytes()?));
        } else if opt.eq_ignore_ascii_case(b"SETNAME") && args.remaining() >= 1 {
            name = Some(args.bytes()?);
        } else {
            return Err(CommandError::err(format!(
                "Syntax error in HELLO option '{}'",
                super::lossy(opt, 128)
            )));
        }
    }
    if let Some((user, password)) = credentials {
        let command = args.argv().first().cloned().unwrap_or_default();
        authenticate(ctx, &command, user, password)?;
    }
    if !ctx.client.authenticated {
        return Err(CommandError::Raw(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time"
                .into(),
        ));
    }
    if let Some(name) = name {
        set_client_name(ctx, name)?;
    }
    if let Some(version) = version {
        ctx.client.resp = version;
    }
    let proto = match ctx.client.resp {
        Version::Resp2 => 2,
        Version::Resp3 => 3,
    };
    let entry = |k: &'static str, v: Frame| (Frame::Bulk(Bytes::from_static(k.as_bytes())), v);
    let (server, version) = ctx.node.config.hello_identity();
    let mut reply = vec![
        entry("server", Frame::bulk(server)),
        entry("version", Frame::bulk(version)),
        entry("proto", Frame::Integer(proto)),
        entry("id", Frame::Integer(ctx.client.id() as i64)),
        entry("mode", Frame::bulk("standalone")),
        entry("role", Frame::bulk("master")),
        entry("modules", Frame::Array(Vec::new())),
    ];
    // Valkey adds the zone only when one is set.
    let zone = ctx.node.config.availability_zone();
    if !zone.is_empty() {
        reply.push(entry("availability_zone", Frame::bulk(zone)));
    }
    Ok(Frame::Map(reply))
}

/// ```text
/// RESET
/// ```
fn reset(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    // Subscriptions, watched keys and blocked waits held in the shared state go as when the
    // connection closes; the connection's own state returns to a new connection's.
    crate::transaction::reset(ctx.state, ctx.client);
    super::pubsub::reset(ctx);
    ctx.state.client_gone(ctx.client.id());
    // A monitor stops monitoring, before its RESET is shown to the monitors left.
    if ctx.node.monitors.remove(ctx.client.id()) {
        ctx.client.handle.update(|info| info.set_flag('O', false));
    }
    let authenticated = !ctx.node.requires_auth();
    ctx.client.reset(authenticated);
    Ok(Frame::simple("RESET"))
}
