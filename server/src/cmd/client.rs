//! `CLIENT` and its subcommands: ID, SETNAME, GETNAME, LIST, INFO, KILL, SETINFO, NO-EVICT,
//! NO-TOUCH, REPLY, PAUSE, UNPAUSE, TRACKING, CACHING, GETREDIR, TRACKINGINFO, CAPA, HELP.

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
    Command::new("capa", capa),
    Command::new("help", help),
];

/// The CLIENT family's table.
pub(crate) static COMMANDS: &[Command] = &[Command::new("client", help).subs(SUBCOMMANDS)];

/// ```text
/// CLIENT CAPA capability [capability ...]
/// ```
///
/// Valkey's: the client declares what it understands; `redirect` (a replica then answers its
/// data commands with `-REDIRECT` to the master) is the one capability, others are ignored.
fn capa(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    for capability in args.rest() {
        if capability.eq_ignore_ascii_case(b"redirect") {
            ctx.client.modes.redirect = true;
            ctx.client.handle.update(|info| info.redirect_capa = true);
        }
    }
    Ok(Frame::ok())
}

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

fn client_type(ctx: &Ctx<'_>, name: &[u8]) -> Result<ClientType, CommandError> {
    match name.to_ascii_lowercase().as_slice() {
        b"normal" => Ok(ClientType::Normal),
        b"slave" | b"replica" => Ok(ClientType::Replica),
        b"pubsub" => Ok(ClientType::Pubsub),
        b"master" => Ok(ClientType::Master),
        // Valkey's name for it, where the target's description of CLIENT KILL has it.
        b"primary" if ctx.documents("client|kill", "PRIMARY") => Ok(ClientType::Master),
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
    // Valkey 8.1's fields: the declared capabilities after the flags, the watched keys after
    // `multi`, the library always, and the client's byte and command totals at the end.
    let valkey = ctx.node.config.profile().client_list_totals;
    let capa = if !valkey {
        String::new()
    } else if info.redirect_capa {
        " capa=r".to_string()
    } else {
        " capa=".to_string()
    };
    let watch = if valkey {
        format!(" watch={}", ctx.state.watches.watched_by(handle.id))
    } else {
        String::new()
    };
    let mut line = String::with_capacity(300);
    let _ = write!(
        line,
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={}{capa} db={} sub={} \
         psub={} ssub={} multi={}{watch} qbuf={} qbuf-free={} argv-mem={} multi-mem=0 rbs=1024 \
         rbp=0 obl=0 oll=0 omem={} tot-mem={} events=r cmd={} user={} redir={} resp={}",
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
    let lib = |v: &Option<Bytes>| v.as_ref().map(|v| lossy(v, usize::MAX));
    if valkey {
        let relaxed =
            |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
        let _ = write!(
            line,
            " lib-name={} lib-ver={} tot-net-in={} tot-net-out={} tot-cmds={}",
            lib(&info.lib_name).unwrap_or_default(),
            lib(&info.lib_ver).unwrap_or_default(),
            relaxed(&handle.net_in),
            relaxed(&handle.net_out),
            relaxed(&handle.commands),
        );
        return line;
    }
    if let Some(lib) = lib(&info.lib_name) {
        let _ = write!(line, " lib-name={lib}");
    }
    if let Some(ver) = lib(&info.lib_ver) {
        let _ = write!(line, " lib-ver={ver}");
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
    let filter = if ctx.documents("client|list", "USER") {
        // Valkey 8's filters, KILL's: every one given must match.
        Filter::parse(ctx, rest, false)?
    } else {
        Filter::parse_redis_list(ctx, rest)?
    };
    let mut out = String::new();
    for handle in ctx.node.clients.all() {
        if filter.matches(ctx, &handle) {
            out.push_str(&client_line(ctx, &handle, "client|list"));
            out.push('\n');
        }
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
    let old_form = rest.len() == 1;
    let filter = if old_form {
        // With the old form a client may kill itself.
        Filter {
            addr: rest.first().cloned(),
            ..Filter::default()
        }
    } else if ctx.documents("client|list", "USER") {
        Filter::parse(ctx, rest, true)?
    } else {
        Filter::parse_redis_kill(ctx, rest)?
    };
    let mut killed = 0;
    for handle in ctx.node.clients.all() {
        if !filter.matches(ctx, &handle) {
            continue;
        }
        if handle.id == ctx.client.id() {
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

/// Which clients `CLIENT LIST` shows and `CLIENT KILL` kills: every filter given must match.
/// Parsed by Redis 7.0's rules or by Valkey 8's `parseClientFiltersOrReply` (`ID id [id
/// ...]`, `TYPE type`, `ADDR`, `LADDR`, `USER`, `SKIPME yes|no`, default yes for KILL and no
/// for LIST, `MAXAGE seconds`; a later occurrence of an option replaces an earlier one).
#[derive(Default)]
struct Filter {
    ids: Option<Vec<u64>>,
    kind: Option<ClientType>,
    addr: Option<Bytes>,
    laddr: Option<Bytes>,
    user: Option<Arc<crate::acl::User>>,
    skipme: bool,
    maxage: Option<u64>,
}

impl Filter {
    /// Redis 7.0's `CLIENT LIST [TYPE type | ID id [id ...]]`: any integer id (one below 1
    /// matches no client).
    fn parse_redis_list(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Filter, CommandError> {
        let mut filter = Filter::default();
        match args {
            [] => {}
            [word, name] if word.eq_ignore_ascii_case(b"type") => {
                filter.kind = Some(client_type(ctx, name)?)
            }
            [word, list @ ..] if word.eq_ignore_ascii_case(b"id") && !list.is_empty() => {
                let mut ids = Vec::with_capacity(list.len());
                for arg in list {
                    match locksmith_resp::parse_integer(arg) {
                        Some(n) if n >= 1 => ids.push(n as u64),
                        Some(_) => {}
                        None => return Err(CommandError::err("Invalid client ID")),
                    }
                }
                filter.ids = Some(ids);
            }
            _ => return Err(CommandError::Syntax),
        }
        Ok(filter)
    }

    /// Redis 7.0's `CLIENT KILL <option value> [...]`: one id, the options in pairs, SKIPME
    /// yes by default; MAXAGE only where the target documents it (a syntax error in Redis
    /// 7.0).
    fn parse_redis_kill(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Filter, CommandError> {
        let mut filter = Filter {
            skipme: true,
            ..Filter::default()
        };
        let takes_maxage = ctx.documents("client|kill", "MAXAGE");
        for pair in args.chunks(2) {
            let [opt, value] = pair else {
                return Err(CommandError::Syntax);
            };
            match opt.to_ascii_lowercase().as_slice() {
                b"id" => match locksmith_resp::parse_integer(value) {
                    Some(n) if n >= 1 => filter.ids = Some(vec![n as u64]),
                    _ => return Err(CommandError::err("client-id should be greater than 0")),
                },
                b"maxage" if !takes_maxage => return Err(CommandError::Syntax),
                _ => filter.option(ctx, opt, value)?,
            }
        }
        Ok(filter)
    }

    /// Valkey 8's filters (see [`Filter`]).
    fn parse(ctx: &Ctx<'_>, args: &[Bytes], skipme: bool) -> Result<Filter, CommandError> {
        let mut filter = Filter {
            skipme,
            ..Filter::default()
        };
        let mut i = 0;
        while let Some(option) = args.get(i) {
            let option = option.to_ascii_lowercase();
            if option == b"id" {
                let mut ids = Vec::new();
                i += 1;
                while let Some(n) = args.get(i).and_then(|a| locksmith_resp::parse_integer(a)) {
                    if n < 1 {
                        return Err(CommandError::err("client-id should be greater than 0"));
                    }
                    ids.push(n as u64);
                    i += 1;
                }
                if ids.is_empty() {
                    return Err(CommandError::Syntax);
                }
                filter.ids = Some(ids);
                continue;
            }
            let Some(value) = args.get(i + 1) else {
                return Err(CommandError::Syntax);
            };
            filter.option(ctx, &option, value)?;
            i += 2;
        }
        Ok(filter)
    }

    /// Takes one `option value` pair other than ID (TYPE, ADDR, LADDR, USER, SKIPME,
    /// MAXAGE; the errors both servers give), or a syntax error.
    fn option(&mut self, ctx: &Ctx<'_>, option: &[u8], value: &Bytes) -> Result<(), CommandError> {
        match option.to_ascii_lowercase().as_slice() {
            b"type" => self.kind = Some(client_type(ctx, value)?),
            b"addr" => self.addr = Some(value.clone()),
            b"laddr" => self.laddr = Some(value.clone()),
            b"user" => match ctx.node.acl.user(value) {
                Some(found) => self.user = Some(found),
                None => {
                    return Err(CommandError::err(format!(
                        "No such user '{}'",
                        lossy(value, 128)
                    )))
                }
            },
            b"skipme" => match value.to_ascii_lowercase().as_slice() {
                b"yes" => self.skipme = true,
                b"no" => self.skipme = false,
                _ => return Err(CommandError::Syntax),
            },
            b"maxage" => match locksmith_resp::parse_integer(value) {
                Some(n) if n >= 1 => self.maxage = Some(n as u64),
                Some(_) => return Err(CommandError::err("maxage should be greater than 0")),
                None => {
                    return Err(CommandError::err(
                        "maxage is not an integer or out of range",
                    ))
                }
            },
            _ => return Err(CommandError::Syntax),
        }
        Ok(())
    }

    fn matches(&self, ctx: &Ctx<'_>, handle: &ClientHandle) -> bool {
        let own = handle.id == ctx.client.id();
        !(self
            .ids
            .as_ref()
            .is_some_and(|ids| !ids.contains(&handle.id))
            || self.kind.is_some_and(|k| type_of(handle) != k)
            || self
                .addr
                .as_ref()
                .is_some_and(|a| handle.addr_text().as_bytes() != &a[..])
            || self
                .laddr
                .as_ref()
                .is_some_and(|a| handle.laddr_text().as_bytes() != &a[..])
            || self
                .maxage
                .is_some_and(|m| ctx.now.saturating_sub(handle.created_ms) / 1000 < m)
            || self.user.as_ref().is_some_and(|u| {
                let info = handle.info();
                let theirs = info.user.as_ref().unwrap_or(ctx.node.acl.default_user());
                !Arc::ptr_eq(u, theirs)
            })
            || (self.skipme && own))
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
fn help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "CLIENT"))
}

/// A container's `HELP` reply as the target's reference gives it, to the byte (its text
/// captured by `server/tools/capture-command-table.py`, [`crate::compat::Profile::help`]; as
/// the reference's, it names the few subcommands not built here, which README.md lists). A
/// container the capture lacks answers with its name's header and the HELP entry alone.
pub(crate) fn help_reply(ctx: &Ctx<'_>, command: &str) -> Frame {
    let profile = ctx.node.config.profile();
    match crate::redis_table::help_of(profile.help, command) {
        Some(captured) => Frame::Array(
            captured
                .into_iter()
                .map(|line| Frame::Simple(Bytes::from_static(line.as_bytes())))
                .collect(),
        ),
        None => help_lines(ctx, command, &[]),
    }
}

/// A `<CMD> HELP` reply built here (DEBUG's, CLUSTER's): Redis's header line, `lines`, then
/// the HELP entry with the target's wording.
pub(crate) fn help_lines(ctx: &Ctx<'_>, command: &str, lines: &[&str]) -> Frame {
    let profile = ctx.node.config.profile();
    let mut out = Vec::with_capacity(lines.len() + 3);
    out.push(Frame::Simple(Bytes::from(format!(
        "{command} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ))));
    for line in lines {
        out.push(Frame::Simple(Bytes::copy_from_slice(line.as_bytes())));
    }
    out.push(Frame::simple("HELP"));
    out.push(Frame::simple(profile.help_footer));
    Frame::Array(out)
}
