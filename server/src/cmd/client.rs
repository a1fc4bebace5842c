//! `CLIENT` and its subcommands: ID, SETNAME, GETNAME, LIST, INFO, KILL, SETINFO, NO-EVICT,
//! NO-TOUCH, REPLY, PAUSE, UNPAUSE, TRACKING, CACHING, GETREDIR, TRACKINGINFO, HELP.

use super::connection::set_client_name;
use super::{lossy, parse_i64, Args, CmdResult, Command, CommandError, Ctx};
use crate::client::ClientHandle;
use crate::node::lockfree::PauseMode;
use bytes::Bytes;
use locksmith_resp::Frame;
use std::fmt::Write as _;
use std::sync::Arc;

static SUBCOMMANDS: &[Command] = &[
    Command::new("id", id),
    Command::new("setname", setname),
    Command::new("getname", getname),
    Command::new("list", list),
    Command::new("info", info),
    Command::new("kill", kill),
    Command::new("unblock", unblock),
    Command::new("setinfo", setinfo),
    Command::new("no-evict", no_evict),
    Command::new("no-touch", no_touch),
    Command::new("reply", reply),
    Command::new("pause", pause),
    Command::new("unpause", unpause),
    Command::new("getredir", getredir),
    Command::new("tracking", tracking),
    Command::new("caching", caching),
    Command::new("trackinginfo", trackinginfo),
    Command::new("help", help),
];

/// The CLIENT family's table.
pub(crate) static COMMANDS: &[Command] = &[Command::new("client", help).subs(SUBCOMMANDS)];

/// ```text
/// CLIENT ID
/// ```
fn id(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(ctx.client.id() as i64))
}

/// ```text
/// CLIENT SETNAME connection-name
/// ```
fn setname(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.bytes()?;
    set_client_name(ctx, name)?;
    Ok(Frame::ok())
}

/// ```text
/// CLIENT GETNAME
/// ```
fn getname(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(ctx
        .client
        .handle
        .info()
        .name
        .map_or(Frame::Null, Frame::Bulk))
}

/// Client types of `CLIENT LIST TYPE` and `CLIENT KILL TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientType {
    Normal,
    Replica,
    Pubsub,
    Master,
}

fn client_type(name: &[u8]) -> Result<ClientType, CommandError> {
    match name.to_ascii_lowercase().as_slice() {
        b"normal" => Ok(ClientType::Normal),
        b"slave" | b"replica" => Ok(ClientType::Replica),
        b"pubsub" => Ok(ClientType::Pubsub),
        b"master" => Ok(ClientType::Master),
        _ => Err(CommandError::err(format!(
            "Unknown client type '{}'",
            lossy(name, 128)
        ))),
    }
}

fn type_of(handle: &ClientHandle) -> ClientType {
    let info = handle.info();
    if info.flags.contains('S') {
        ClientType::Replica
    } else if info.flags.contains('M') {
        ClientType::Master
    } else if info.sub + info.psub + info.ssub > 0 {
        ClientType::Pubsub
    } else {
        ClientType::Normal
    }
}

/// One `CLIENT LIST` line (without the newline), in Redis 7's field order. Fields we have no
/// equivalent for (query buffer, reply buffer) carry plausible fixed values.
pub(super) fn client_line(ctx: &Ctx<'_>, handle: &Arc<ClientHandle>, own_cmd: &str) -> String {
    let info = handle.info();
    let own = handle.id == ctx.client.id();
    let now = ctx.now;
    let age = now.saturating_sub(handle.created_ms) / 1000;
    let idle = now.saturating_sub(
        handle
            .last_interaction_ms
            .load(std::sync::atomic::Ordering::Relaxed),
    ) / 1000;
    let mut flags = info.flags.clone();
    let (no_evict, no_touch) = if own {
        (ctx.client.modes.no_evict, ctx.client.modes.no_touch)
    } else {
        (false, false)
    };
    if no_evict {
        flags.push('e');
    }
    if no_touch {
        flags.push('T');
    }
    if flags.len() > 1 {
        flags = flags.replace('N', "");
    }
    let omem = handle
        .outbox
        .pending
        .load(std::sync::atomic::Ordering::Relaxed);
    // The command running now is the one that asked, as in Redis.
    let (cmd, db, resp) = if own {
        (
            own_cmd.to_string(),
            ctx.client.db,
            match ctx.client.resp {
                locksmith_resp::Version::Resp2 => 2,
                locksmith_resp::Version::Resp3 => 3,
            },
        )
    } else {
        let cmd = if info.last_cmd.is_empty() {
            "NULL".to_string()
        } else {
            info.last_cmd.clone()
        };
        (cmd, info.db, info.resp)
    };
    let (qbuf, qbuf_free, argv_mem) = if own { (26, 20448, 10) } else { (0, 0, 0) };
    let name = info
        .name
        .as_ref()
        .map(|n| lossy(n, usize::MAX))
        .unwrap_or_default();
    let mut line = String::with_capacity(300);
    let _ = write!(
        line,
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} \
         ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem=0 rbs=1024 rbp=0 obl=0 \
         oll=0 omem={} tot-mem={} events=r cmd={} user={} redir={} resp={}",
        handle.id,
        handle.addr_text(),
        handle.laddr_text(),
        handle.id + 7,
        name,
        age,
        idle,
        flags,
        db,
        info.sub,
        info.psub,
        info.ssub,
        info.multi,
        qbuf,
        qbuf_free,
        argv_mem,
        omem,
        1024 + qbuf + qbuf_free + argv_mem + omem as u64 + 800,
        cmd,
        lossy(
            info.user
                .as_ref()
                .map_or(&b"default"[..], |u| &u.name()[..]),
            usize::MAX
        ),
        ctx.state
            .tracking
            .mode(handle.id)
            .map_or(-1, |m| i64::try_from(m.redirect).unwrap_or(-1)),
        resp
    );
    if let Some(lib) = &info.lib_name {
        let _ = write!(line, " lib-name={}", lossy(lib, usize::MAX));
    }
    if let Some(ver) = &info.lib_ver {
        let _ = write!(line, " lib-ver={}", lossy(ver, usize::MAX));
    }
    line
}

fn verbatim(text: String) -> Frame {
    Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from(text),
    }
}

/// ```text
/// CLIENT LIST [TYPE <NORMAL | MASTER | REPLICA | PUBSUB>] [ID client-id [client-id ...]]
/// ```
fn list(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let rest = args.rest();
    let mut kind = None;
    let mut ids: Option<Vec<u64>> = None;
    match rest {
        [] => {}
        [word, name] if word.eq_ignore_ascii_case(b"type") => kind = Some(client_type(name)?),
        [word, list @ ..] if word.eq_ignore_ascii_case(b"id") && !list.is_empty() => {
            let mut parsed = Vec::with_capacity(list.len());
            for arg in list {
                match locksmith_resp::parse_integer(arg) {
                    Some(n) if n >= 1 => parsed.push(n as u64),
                    _ => return Err(CommandError::err("Invalid client ID")),
                }
            }
            ids = Some(parsed);
        }
        _ => return Err(CommandError::Syntax),
    }
    let mut out = String::new();
    for handle in ctx.node.clients.all() {
        if kind.is_some_and(|k| type_of(&handle) != k) {
            continue;
        }
        if ids.as_ref().is_some_and(|ids| !ids.contains(&handle.id)) {
            continue;
        }
        out.push_str(&client_line(ctx, &handle, "client|list"));
        out.push('\n');
    }
    Ok(verbatim(out))
}

/// ```text
/// CLIENT INFO
/// ```
fn info(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let handle = ctx.client.handle.clone();
    let mut line = client_line(ctx, &handle, "client|info");
    line.push('\n');
    Ok(verbatim(line))
}

/// ```text
/// CLIENT KILL ip:port
/// CLIENT KILL <ID client-id | TYPE <NORMAL | MASTER | SLAVE | REPLICA | PUBSUB> |
///   USER username | ADDR ip:port | LADDR ip:port | SKIPME <YES | NO> | MAXAGE maxage>
///   [...]
/// ```
fn kill(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let rest = args.rest();
    let mut id = None;
    let mut kind = None;
    let mut addr: Option<&[u8]> = None;
    let mut laddr: Option<&[u8]> = None;
    let mut maxage: Option<u64> = None;
    let mut user: Option<Arc<crate::acl::User>> = None;
    let old_form = rest.len() == 1;
    // MAXAGE is Valkey 8.0's (Redis 7.4's): a syntax error where the target lacks it.
    let takes_maxage = ctx.documents("client|kill", "MAXAGE");
    // With the old form a client may kill itself.
    let mut skipme = !old_form;
    if old_form {
        addr = rest.first().map(|a| &a[..]);
    } else {
        let mut pairs = rest.chunks(2);
        for pair in &mut pairs {
            let [opt, value] = pair else {
                return Err(CommandError::Syntax);
            };
            match opt.to_ascii_lowercase().as_slice() {
                b"id" => match locksmith_resp::parse_integer(value) {
                    Some(n) if n >= 1 => id = Some(n as u64),
                    _ => return Err(CommandError::err("client-id should be greater than 0")),
                },
                b"type" => kind = Some(client_type(value)?),
                b"addr" => addr = Some(value),
                b"laddr" => laddr = Some(value),
                b"user" => match ctx.node.acl.user(value) {
                    Some(found) => user = Some(found),
                    None => {
                        return Err(CommandError::err(format!(
                            "No such user '{}'",
                            lossy(value, 128)
                        )))
                    }
                },
                b"skipme" => match value.to_ascii_lowercase().as_slice() {
                    b"yes" => skipme = true,
                    b"no" => skipme = false,
                    _ => return Err(CommandError::Syntax),
                },
                b"maxage" if takes_maxage => match locksmith_resp::parse_integer(value) {
                    Some(n) if n >= 1 => maxage = Some(n as u64),
                    Some(_) => return Err(CommandError::err("maxage should be greater than 0")),
                    None => {
                        return Err(CommandError::err(
                            "maxage is not an integer or out of range",
                        ))
                    }
                },
                _ => return Err(CommandError::Syntax),
            }
        }
    }
    let mut killed = 0;
    for handle in ctx.node.clients.all() {
        let own = handle.id == ctx.client.id();
        if id.is_some_and(|id| handle.id != id)
            || kind.is_some_and(|k| type_of(&handle) != k)
            || addr.is_some_and(|a| handle.addr_text().as_bytes() != a)
            || laddr.is_some_and(|a| handle.laddr_text().as_bytes() != a)
            || maxage.is_some_and(|m| ctx.now.saturating_sub(handle.created_ms) / 1000 < m)
            || user.as_ref().is_some_and(|u| {
                let info = handle.info();
                let theirs = info.user.as_ref().unwrap_or(ctx.node.acl.default_user());
                !Arc::ptr_eq(u, theirs)
            })
            || (skipme && own)
        {
            continue;
        }
        if own {
            // Our own connection closes once this reply is written.
            ctx.client.close_after_reply = true;
        }
        handle.kill();
        killed += 1;
    }
    if old_form {
        if killed == 0 {
            Err(CommandError::err("No such client"))
        } else {
            Ok(Frame::ok())
        }
    } else {
        Ok(Frame::Integer(killed))
    }
}

/// ```text
/// CLIENT SETINFO <LIB-NAME libname | LIB-VER libver>
/// ```
fn setinfo(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let attr = args.bytes()?;
    let value = args.bytes()?;
    let lib_name = match attr.to_ascii_lowercase().as_slice() {
        b"lib-name" => true,
        b"lib-ver" => false,
        _ => {
            return Err(CommandError::err(format!(
                "Unrecognized option '{}'",
                lossy(attr, 128)
            )))
        }
    };
    // Redis 7.2: the same character rule as client names.
    if !value.iter().all(|&c| (b'!'..=b'~').contains(&c)) {
        return Err(CommandError::err(format!(
            "{} cannot contain spaces, newlines or special characters.",
            if lib_name { "lib-name" } else { "lib-ver" }
        )));
    }
    let value = (!value.is_empty()).then_some(value);
    ctx.client.handle.update(|info| {
        if lib_name {
            info.lib_name = value.cloned();
        } else {
            info.lib_ver = value.cloned();
        }
    });
    Ok(Frame::ok())
}

fn on_off(args: &mut Args<'_>) -> Result<bool, CommandError> {
    match args.bytes()?.to_ascii_lowercase().as_slice() {
        b"on" => Ok(true),
        b"off" => Ok(false),
        _ => Err(CommandError::Syntax),
    }
}

/// ```text
/// CLIENT NO-EVICT <ON | OFF>
/// ```
fn no_evict(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    ctx.client.modes.no_evict = on_off(args)?;
    Ok(Frame::ok())
}

/// ```text
/// CLIENT UNBLOCK client-id [TIMEOUT | ERROR]
/// ```
///
/// Ends a blocking command's wait as its timeout would (the default), or with Redis's
/// `UNBLOCKED` error; 1 if the client was blocked.
fn unblock(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (id, reason) = match args.rest() {
        [id] => (id, None),
        [id, reason] => (id, Some(reason)),
        // As sent: Redis echoes the subcommand's own spelling.
        _ => return Err(CommandError::subcommand_syntax("CLIENT", args.argv())),
    };
    // Redis checks the reason before the id.
    let reply = match reason {
        None => Frame::NullArray,
        Some(r) if r.eq_ignore_ascii_case(b"timeout") => Frame::NullArray,
        Some(r) if r.eq_ignore_ascii_case(b"error") => {
            Frame::error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
        }
        Some(_) => {
            return Err(CommandError::err(
                "CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    let id = parse_i64(id)?;
    let unblocked = u64::try_from(id).is_ok_and(|id| ctx.state.blocked.unblock(id, reply));
    Ok(Frame::Integer(i64::from(unblocked)))
}

/// ```text
/// CLIENT NO-TOUCH <ON | OFF>
/// ```
fn no_touch(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    ctx.client.modes.no_touch = on_off(args)?;
    Ok(Frame::ok())
}

/// ```text
/// CLIENT REPLY <ON | OFF | SKIP>
/// ```
fn reply(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    match args.bytes()?.to_ascii_lowercase().as_slice() {
        b"on" => {
            // A SKIP just before is undone, and this command's own reply is sent.
            ctx.client.reply.off = false;
            ctx.client.reply.skip = false;
            ctx.client.reply.skip_next = false;
        }
        b"off" => ctx.client.reply.off = true,
        b"skip" => {
            if !ctx.client.reply.off {
                // Neither this command nor the next one gets a reply.
                ctx.client.reply.skip = true;
                ctx.client.reply.skip_next = true;
            }
        }
        _ => return Err(CommandError::Syntax),
    }
    Ok(Frame::ok())
}

/// ```text
/// CLIENT PAUSE timeout [WRITE | ALL]
/// ```
fn pause(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.remaining() > 2 {
        return Err(CommandError::err(
            "unknown subcommand or wrong number of arguments for 'pause'. Try CLIENT HELP.",
        ));
    }
    let timeout = locksmith_resp::parse_integer(args.bytes()?)
        .ok_or_else(|| CommandError::err("timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(CommandError::err("timeout is negative"));
    }
    let mode = match args.next() {
        None => PauseMode::All,
        Some(m) if m.eq_ignore_ascii_case(b"all") => PauseMode::All,
        Some(m) if m.eq_ignore_ascii_case(b"write") => PauseMode::Write,
        Some(_) => return Err(CommandError::err("CLIENT PAUSE mode must be WRITE or ALL")),
    };
    let end = ctx.now.saturating_add(timeout as u64);
    ctx.node.live.pause.pause(mode, end, ctx.now);
    Ok(Frame::ok())
}

/// ```text
/// CLIENT UNPAUSE
/// ```
fn unpause(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    ctx.node.live.pause.unpause();
    Ok(Frame::ok())
}

/// ```text
/// CLIENT TRACKING <ON | OFF> [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]]
///   [BCAST] [OPTIN] [OPTOUT] [NOLOOP]
/// ```
///
/// Checks the options in Redis's order, with its error texts.
fn tracking(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let switch = args.bytes()?;
    let mut mode = crate::tracking::Mode::default();
    let mut prefixes: Vec<Bytes> = Vec::new();
    while let Some(opt) = args.next() {
        let more = args.remaining() > 0;
        match opt.to_ascii_lowercase().as_slice() {
            b"redirect" if more => {
                let id = args.bytes()?;
                if mode.redirect != 0 {
                    return Err(CommandError::err(
                        "A client can only redirect to a single other client",
                    ));
                }
                let id = parse_i64(id)?;
                let found = u64::try_from(id)
                    .ok()
                    .filter(|&id| ctx.node.clients.get(id).is_some());
                match found {
                    Some(id) => mode.redirect = id,
                    None => {
                        return Err(CommandError::err(
                            "The client ID you want redirect to does not exist",
                        ))
                    }
                }
            }
            b"bcast" => mode.bcast = true,
            b"optin" => mode.optin = true,
            b"optout" => mode.optout = true,
            b"noloop" => mode.noloop = true,
            b"prefix" if more => prefixes.push(args.bytes()?.clone()),
            _ => return Err(CommandError::Syntax),
        }
    }
    let id = ctx.client.id();
    match switch.to_ascii_lowercase().as_slice() {
        b"on" => {
            let current = ctx.state.tracking.mode(id);
            if !mode.bcast && !prefixes.is_empty() {
                return Err(CommandError::err(
                    "PREFIX option requires BCAST mode to be enabled",
                ));
            }
            if current.is_some_and(|c| c.bcast != mode.bcast) {
                return Err(CommandError::err(
                    "You can't switch BCAST mode on/off before disabling tracking for this \
                     client, and then re-enabling it with a different mode.",
                ));
            }
            if mode.bcast && (mode.optin || mode.optout) {
                return Err(CommandError::err(
                    "OPTIN and OPTOUT are not compatible with BCAST",
                ));
            }
            if mode.optin && mode.optout {
                return Err(CommandError::err(
                    "You can't specify both OPTIN mode and OPTOUT mode",
                ));
            }
            if current.is_some_and(|c| (mode.optin && c.optout) || (mode.optout && c.optin)) {
                return Err(CommandError::err(
                    "You can't switch OPTIN/OPTOUT mode before disabling tracking for this \
                     client, and then re-enabling it with a different mode.",
                ));
            }
            if mode.bcast {
                check_prefix_overlaps(current.map(|c| &c.prefixes), &prefixes)?;
            }
            mode.prefixes = prefixes.into_iter().collect();
            let handle = ctx.client.handle.clone();
            ctx.state.tracking.enable(&handle, mode);
        }
        b"off" => {
            let handle = ctx.client.handle.clone();
            ctx.state.tracking.disable(id, Some(&handle));
        }
        _ => return Err(CommandError::Syntax),
    }
    Ok(Frame::ok())
}

/// Redis's `checkPrefixCollisionsOrReply`: two prefixes overlap when one starts the other
/// (the same prefix twice included), among the new ones and with the client's own.
fn check_prefix_overlaps(
    existing: Option<&std::collections::BTreeSet<Bytes>>,
    new: &[Bytes],
) -> Result<(), CommandError> {
    let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    for (i, prefix) in new.iter().enumerate() {
        if let Some(old) = existing
            .into_iter()
            .flatten()
            .find(|old| overlap(old, prefix))
        {
            return Err(CommandError::err(format!(
                "Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single \
                 client must not overlap.",
                lossy(prefix, usize::MAX),
                lossy(old, usize::MAX)
            )));
        }
        if let Some(other) = new.iter().skip(i + 1).find(|other| overlap(prefix, other)) {
            return Err(CommandError::err(format!(
                "Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a \
                 single client must not overlap.",
                lossy(prefix, usize::MAX),
                lossy(other, usize::MAX)
            )));
        }
    }
    Ok(())
}

/// ```text
/// CLIENT CACHING <YES | NO>
/// ```
fn caching(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let id = ctx.client.id();
    let Some(mode) = ctx.state.tracking.mode(id) else {
        return Err(CommandError::err(
            "CLIENT CACHING can be called only when the client is in tracking mode with OPTIN \
             or OPTOUT mode enabled",
        ));
    };
    match args.bytes()?.to_ascii_lowercase().as_slice() {
        b"yes" if mode.optin => {}
        b"yes" => {
            return Err(CommandError::err(
                "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ))
        }
        b"no" if mode.optout => {}
        b"no" => {
            return Err(CommandError::err(
                "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ))
        }
        _ => return Err(CommandError::Syntax),
    }
    ctx.state.tracking.set_caching(id);
    Ok(Frame::ok())
}

/// ```text
/// CLIENT GETREDIR
/// ```
///
/// The redirect client's id, 0 when tracking without one, -1 when not tracking.
fn getredir(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let redirect = ctx.state.tracking.mode(ctx.client.id()).map(|m| m.redirect);
    Ok(Frame::Integer(
        redirect.map_or(-1, |r| i64::try_from(r).unwrap_or(-1)),
    ))
}

/// ```text
/// CLIENT TRACKINGINFO
/// ```
///
/// A map of `flags` (a set), `redirect` and `prefixes`, as Redis.
fn trackinginfo(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let mode = ctx.state.tracking.mode(ctx.client.id());
    let bulk = |s: &'static str| Frame::Bulk(Bytes::from_static(s.as_bytes()));
    let mut flags = vec![bulk(if mode.is_some() { "on" } else { "off" })];
    if let Some(m) = mode {
        let named = [
            (m.bcast, "bcast"),
            (m.optin, "optin"),
            (m.optin && m.caching, "caching-yes"),
            (m.optout, "optout"),
            (m.optout && m.caching, "caching-no"),
            (m.noloop, "noloop"),
            (m.broken_redirect, "broken_redirect"),
        ];
        flags.extend(
            named
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, name)| bulk(name)),
        );
    }
    let redirect = mode.map_or(-1, |m| i64::try_from(m.redirect).unwrap_or(-1));
    let prefixes = mode
        .map(|m| m.prefixes.iter().cloned().map(Frame::Bulk).collect())
        .unwrap_or_default();
    Ok(Frame::Map(vec![
        (bulk("flags"), Frame::Set(flags)),
        (bulk("redirect"), Frame::Integer(redirect)),
        (bulk("prefixes"), Frame::Array(prefixes)),
    ]))
}

/// ```text
/// CLIENT HELP
/// ```
fn help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_lines(
        "CLIENT",
        &[
            "CACHING (YES|NO)",
            "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
            "GETREDIR",
            "    Return the client ID we are redirecting to when tracking is enabled.",
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are:",
            "    * ADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made from the specified address",
            "    * LADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made to specified local address",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Kill connections by type.",
            "    * USER <username>",
            "      Kill connections authenticated by <username>.",
            "    * SKIPME (YES|NO)",
            "      Skip killing current connection (default: yes).",
            "    * ID <client-id>",
            "      Kill connections by client id.",
            "    * MAXAGE <maxage>",
            "      Kill connections older than the specified age.",
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "UNPAUSE",
            "    Stop the current client pause, resuming traffic.",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Suspend all, or just write, clients for <timeout> milliseconds.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "SETINFO <option> <value>",
            "    Set client meta attr. Options are:",
            "    * LIB-NAME: the client lib name.",
            "    * LIB-VER: the client lib version.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    Unblock the specified blocked client.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Control server assisted client side caching.",
            "TRACKINGINFO",
            "    Report tracking status for the current connection.",
            "NO-EVICT (ON|OFF)",
            "    Protect current client connection from eviction.",
            "NO-TOUCH (ON|OFF)",
            "    Will not touch LRU/LFU stats when this mode is on.",
        ],
    ))
}

/// A `<CMD> HELP` reply: Redis's header line, `lines`, then the HELP entry.
pub(crate) fn help_lines(command: &str, lines: &[&str]) -> Frame {
    help_lines_ending(command, lines, "    Prints this help.")
}

/// [`help_lines`] with `help` as the text under `HELP` (Valkey's commands of its own end in
/// `Print this help.`).
pub(crate) fn help_lines_ending(command: &str, lines: &[&str], help: &str) -> Frame {
    let mut out = Vec::with_capacity(lines.len() + 3);
    out.push(Frame::Simple(Bytes::from(format!(
        "{command} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ))));
    for line in lines {
        out.push(Frame::Simple(Bytes::copy_from_slice(line.as_bytes())));
    }
    out.push(Frame::simple("HELP"));
    out.push(Frame::Simple(Bytes::copy_from_slice(help.as_bytes())));
    Frame::Array(out)
}
