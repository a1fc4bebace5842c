//! `ACL` and its subcommands, and what the pipeline, `EXEC` and scripts use to check a
//! command line against the client's user: the check itself with Redis's `NOPERM` texts,
//! the ACL log entry a refusal leaves, and the disconnection of clients whose user was
//! removed or lost channel permissions.

use super::client::help_reply;
use super::{
    bulk_str, flags::*, lossy, table, Args, CmdResult, Command, CommandError, Ctx, Resolved,
};
use crate::acl::{self, Catalog, Context, Denied, Line, LogEntry, Reason, User};
use crate::command_acl;
use crate::compat::Compat;
use bytes::Bytes;
use locksmith_resp::Frame;
use std::sync::{Arc, OnceLock};

/// `ACL`'s subcommands.
static ACL_SUBCOMMANDS: &[Command] = &[
    Command::new("cat", acl_cat),
    Command::new("deluser", acl_deluser),
    Command::new("dryrun", acl_dryrun),
    Command::new("genpass", acl_genpass),
    Command::new("getuser", acl_getuser),
    Command::new("help", acl_help),
    Command::new("list", acl_list),
    Command::new("load", acl_load),
    Command::new("log", acl_log),
    Command::new("save", acl_save),
    Command::new("setuser", acl_setuser),
    Command::new("users", acl_users),
    Command::new("whoami", acl_whoami),
];

/// The ACL family's table.
pub(crate) static COMMANDS: &[Command] =
    &[Command::new("acl", acl_container).subs(ACL_SUBCOMMANDS)];

/// Every command and subcommand of `compat`'s table as ACL rules know them, built once per
/// target from its command table.
pub(crate) fn catalog(compat: Compat) -> &'static Catalog {
    static CATALOGS: [OnceLock<Catalog>; Compat::ALL.len()] =
        [const { OnceLock::new() }; Compat::ALL.len()];
    CATALOGS[compat as usize].get_or_init(|| {
        let mut catalog = Catalog::default();
        for &spec in table(compat) {
            let Some(resolved) =
                super::resolve_name(compat, &[Bytes::from_static(spec.name.as_bytes())])
            else {
                continue;
            };
            let subs: Vec<(u32, String, u32)> = spec
                .subcommands
                .iter()
                .filter_map(|sub| {
                    let argv = [
                        Bytes::from_static(spec.name.as_bytes()),
                        Bytes::from_static(sub.name.as_bytes()),
                    ];
                    let r = super::resolve_name(compat, &argv)?;
                    Some((r.stat, fullname(&r), category_mask(&r)))
                })
                .collect();
            catalog.add((resolved.stat, spec.name, category_mask(&resolved)), &subs);
        }
        catalog
    })
}

/// A command's full name (`config|get`).
pub(crate) fn fullname(resolved: &Resolved) -> String {
    match resolved.parent {
        Some(parent) => format!("{}|{}", parent.name, resolved.spec.name),
        None => resolved.spec.name.to_string(),
    }
}

/// A command's ACL categories, as its description has them.
pub(crate) fn category_mask(resolved: &Resolved) -> u32 {
    resolved.spec.categories
}

/// The category names of a mask, in Redis's order (`@read`...).
pub(crate) fn category_names(mask: u32) -> impl Iterator<Item = &'static str> {
    command_acl::CATEGORIES
        .iter()
        .enumerate()
        .filter(move |(i, _)| mask & (1 << i) != 0)
        .map(|(_, n)| *n)
}

/// The user a client acts as.
pub(crate) fn user_of<'a>(
    node: &'a crate::node::Node,
    client: &'a crate::client::ClientState,
) -> &'a Arc<User> {
    client.user.as_ref().unwrap_or(node.acl.default_user())
}

/// Checks `argv` (resolved as `resolved`) against `user` (Redis's `ACLCheckAllUserCommandPerm`).
pub(crate) fn check(user: &User, resolved: &Resolved, argv: &[Bytes]) -> Result<(), Denied> {
    if user.unrestricted() {
        return Ok(());
    }
    // The catalog's name: no allocation per check.
    let owned;
    let name = match catalog(resolved.compat).name_of(resolved.stat) {
        Some(name) => name,
        None => {
            owned = fullname(resolved);
            &owned
        }
    };
    user.check(&Line {
        id: resolved.stat,
        spec: resolved.spec,
        fullname: name,
        no_auth: resolved.spec.has(NO_AUTH),
        is_sub: resolved.parent.is_some(),
        argv,
    })
}

/// Whether the client's user may run `argv` and read every key (Redis's
/// `ACLUserCheckCmdWithUnrestrictedKeyAccess` with `CMD_KEY_ACCESS`): `SORT`'s `BY` and
/// `GET` read keys no key specification names.
pub(crate) fn may_read_any_key(ctx: &Ctx<'_>, argv: &[Bytes]) -> bool {
    let user = user_of(ctx.node, ctx.client);
    if user.unrestricted() {
        return true;
    }
    let Some(resolved) = super::resolve_name(ctx.node.config.compat(), argv) else {
        return false;
    };
    let name = fullname(&resolved);
    user.may_read_any_key(&Line {
        id: resolved.stat,
        spec: resolved.spec,
        fullname: &name,
        no_auth: resolved.spec.has(NO_AUTH),
        is_sub: resolved.parent.is_some(),
        argv,
    })
}

/// A refusal's text from the target's template for it ([`crate::compat::AclTexts`]).
fn refusal(
    templates: (&str, &str, &str),
    user: &User,
    resolved: &Resolved,
    argv: &[Bytes],
    denied: Denied,
) -> String {
    let (template, at) = match denied {
        Denied::Command => (templates.0, None),
        Denied::Key(at) => (templates.1, Some(at)),
        Denied::Channel(at) => (templates.2, Some(at)),
    };
    let object = at
        .and_then(|at| argv.get(at))
        .map(|o| lossy(o, usize::MAX))
        .unwrap_or_default();
    template
        .replace("{user}", &lossy(user.name(), usize::MAX))
        .replace("{command}", &fullname(resolved))
        .replace("{object}", &object)
}

/// The top-level refusal (`processCommand`'s texts).
pub(crate) fn noperm_error(
    texts: &crate::compat::AclTexts,
    user: &User,
    resolved: &Resolved,
    argv: &[Bytes],
    denied: Denied,
) -> Frame {
    let templates = (texts.command, texts.key, texts.channel);
    Frame::error(format!(
        "NOPERM {}",
        refusal(templates, user, resolved, argv, denied)
    ))
}

/// The refusal of a command queued before the rules changed (`execCommand`'s text).
pub(crate) fn exec_noperm_error(denied: Denied) -> Frame {
    let reason = match denied {
        Denied::Command => "no permission to execute the command or subcommand",
        Denied::Key(_) => "no permission to touch the specified keys",
        Denied::Channel(_) => "no permission to access one of the channels used as arguments",
    };
    Frame::error(format!(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the \
         EXEC call. This command is no longer allowed for the following reason: {reason}"
    ))
}

/// The refusal of a script's command (`scriptVerifyACL` with `getAclErrorMessage`).
pub(crate) fn script_noperm_error(
    texts: &crate::compat::AclTexts,
    user: &User,
    resolved: &Resolved,
    argv: &[Bytes],
    denied: Denied,
) -> String {
    let templates = (texts.script_command, texts.script_key, texts.script_channel);
    format!("ERR {}", refusal(templates, user, resolved, argv, denied))
}

/// Records a refusal in the ACL log (Redis's `addACLLogEntry`).
pub(crate) fn log_denial(
    ctx: &Ctx<'_>,
    resolved: &Resolved,
    argv: &[Bytes],
    denied: Denied,
    context: Context,
) {
    let (reason, object) = match denied {
        Denied::Command => (Reason::Command, Bytes::from(fullname(resolved))),
        Denied::Key(at) => (Reason::Key, argv.get(at).cloned().unwrap_or_default()),
        Denied::Channel(at) => (Reason::Channel, argv.get(at).cloned().unwrap_or_default()),
    };
    let username = user_of(ctx.node, ctx.client).name().clone();
    add_log_entry(ctx, reason, context, object, username, &fullname(resolved));
}

/// Records a failed authentication as `user` (object `AUTH`, or `HELLO`: the command's name as
/// sent, as Redis logs `argv[0]`).
pub(crate) fn log_auth_failure(ctx: &Ctx<'_>, command: &Bytes, user: &Bytes) {
    // An AUTH queued in MULTI runs in EXEC, where Redis's client is still flagged MULTI.
    let context = if ctx.client.multi.is_some() || ctx.client.origin.in_exec {
        Context::Multi
    } else {
        Context::Toplevel
    };
    let cmd = String::from_utf8_lossy(command).to_ascii_lowercase();
    add_log_entry(
        ctx,
        Reason::Auth,
        context,
        command.clone(),
        user.clone(),
        &cmd,
    );
}

fn add_log_entry(
    ctx: &Ctx<'_>,
    reason: Reason,
    context: Context,
    object: Bytes,
    username: Bytes,
    own_cmd: &str,
) {
    let client_info = super::client::client_line(ctx, &ctx.client.handle, own_cmd);
    let entry = LogEntry {
        count: 1,
        reason,
        context,
        object,
        username,
        time_ms: ctx.node.clock.now_ms(),
        client_info,
    };
    let max_len = usize::try_from(ctx.node.config.acllog_max_len()).unwrap_or(usize::MAX);
    if let Ok(mut log) = ctx.node.acl.log.lock() {
        log.add(entry, max_len);
    }
}

/// Disconnects the clients authenticated as `user` (removed): the calling client after its
/// reply, the others now (Redis's `ACLFreeUserAndKillClients`).
fn disconnect_users_clients(ctx: &mut Ctx<'_>, removed: &[Arc<User>]) {
    if removed.is_empty() {
        return;
    }
    for handle in ctx.node.clients.all() {
        let info = handle.info();
        let Some(user) = info.user.as_ref() else {
            continue;
        };
        if !removed.iter().any(|r| Arc::ptr_eq(r, user)) {
            continue;
        }
        if handle.id == ctx.client.id() {
            ctx.client.set_user(None);
            ctx.client.authenticated = false;
            ctx.client.close_after_reply = true;
        } else {
            handle.kill();
        }
    }
}

/// Disconnects `user`'s pub/sub clients subscribed to something `allowed` no longer covers
/// (Redis's `ACLKillPubsubClientsIfNeeded`); they are gone from `CLIENT LIST` at once.
fn disconnect_revoked_subscribers(ctx: &mut Ctx<'_>, user: &Arc<User>, allowed: &[Bytes]) {
    use crate::pubsub::Kind;
    for handle in ctx.node.clients.all() {
        let info = handle.info();
        if !info.user.as_ref().is_some_and(|u| Arc::ptr_eq(u, user)) {
            continue;
        }
        if info.sub + info.psub + info.ssub == 0 {
            continue;
        }
        let pubsub = &ctx.state.pubsub;
        let revoked = pubsub
            .subscriptions(handle.id, Kind::Pattern)
            .iter()
            .any(|p| !acl::channel_in(allowed, p, true))
            || [Kind::Channel, Kind::Shard].into_iter().any(|kind| {
                pubsub
                    .subscriptions(handle.id, kind)
                    .iter()
                    .any(|c| !acl::channel_in(allowed, c, false))
            });
        if !revoked {
            continue;
        }
        if handle.id == ctx.client.id() {
            ctx.client.close_after_reply = true;
        } else {
            handle.kill();
            ctx.node.clients.remove(handle.id);
            ctx.state.client_gone(handle.id);
        }
    }
}

/// Whether new users start with every channel (`acl-pubsub-default allchannels`).
fn all_channels_default(ctx: &Ctx<'_>) -> bool {
    ctx.node.config.acl_pubsub_default_all()
}

/// A bare `ACL` (no subcommand).
fn acl_container(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::WrongArity("acl".into()))
}

/// ```text
/// ACL SETUSER username [rule [rule ...]]
/// ```
fn acl_setuser(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.bytes()?;
    if !acl::valid_username(name) {
        return Err(CommandError::err(
            "Usernames can't contain spaces or null characters",
        ));
    }
    let all_channels = all_channels_default(ctx);
    let fallout = ctx
        .node
        .acl
        .set_user(
            catalog(ctx.node.config.compat()),
            name,
            args.rest(),
            all_channels,
        )
        .map_err(CommandError::err)?;
    if let Some((user, allowed)) = fallout.channels_revoked {
        disconnect_revoked_subscribers(ctx, &user, &allowed);
    }
    Ok(Frame::ok())
}

/// ```text
/// ACL DELUSER username [username ...]
/// ```
fn acl_deluser(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let names = args.rest();
    if names.iter().any(|n| n[..] == b"default"[..]) {
        return Err(CommandError::err("The 'default' user cannot be removed"));
    }
    let removed = ctx.node.acl.delete(names);
    disconnect_users_clients(ctx, &removed);
    Ok(Frame::Integer(removed.len() as i64))
}

/// ```text
/// ACL GETUSER username
/// ```
fn acl_getuser(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.bytes()?;
    let Some(user) = ctx.node.acl.user(name) else {
        return Ok(Frame::Null);
    };
    let rules = user.rules();
    let mut descriptions = rules
        .selector_descriptions(catalog(ctx.node.config.compat()))
        .into_iter();
    let selector_map = |[commands, keys, channels]: [String; 3]| {
        vec![
            (bulk_str("commands"), Frame::Bulk(Bytes::from(commands))),
            (bulk_str("keys"), Frame::Bulk(Bytes::from(keys))),
            (bulk_str("channels"), Frame::Bulk(Bytes::from(channels))),
        ]
    };
    let mut fields = vec![
        (
            bulk_str("flags"),
            Frame::Set(rules.flag_names().into_iter().map(bulk_str).collect()),
        ),
        (
            bulk_str("passwords"),
            Frame::Array(rules.passwords().iter().map(|p| bulk_str(p)).collect()),
        ),
    ];
    if let Some(root) = descriptions.next() {
        fields.extend(selector_map(root));
    }
    fields.push((
        bulk_str("selectors"),
        Frame::Array(descriptions.map(|d| Frame::Map(selector_map(d))).collect()),
    ));
    Ok(Frame::Map(fields))
}

/// ```text
/// ACL LIST
/// ```
fn acl_list(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Array(
        ctx.node
            .acl
            .all()
            .iter()
            .map(|u| {
                let mut line = b"user ".to_vec();
                line.extend_from_slice(u.name());
                line.push(b' ');
                line.extend_from_slice(
                    u.rules()
                        .describe(catalog(ctx.node.config.compat()))
                        .as_bytes(),
                );
                Frame::Bulk(Bytes::from(line))
            })
            .collect(),
    ))
}

/// ```text
/// ACL USERS
/// ```
fn acl_users(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Array(
        ctx.node
            .acl
            .all()
            .iter()
            .map(|u| Frame::Bulk(u.name().clone()))
            .collect(),
    ))
}

/// ```text
/// ACL WHOAMI
/// ```
fn acl_whoami(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Bulk(user_of(ctx.node, ctx.client).name().clone()))
}

/// ```text
/// ACL CAT [category]
/// ```
fn acl_cat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    match args.rest() {
        [] => Ok(Frame::Array(
            command_acl::CATEGORIES
                .iter()
                .map(|c| bulk_str(c))
                .collect(),
        )),
        [category] => {
            let bit = command_acl::category_bit(category).ok_or_else(|| {
                CommandError::err(format!("Unknown category '{}'", lossy(category, 128)))
            })?;
            Ok(Frame::Array(
                catalog(ctx.node.config.compat())
                    .entries
                    .iter()
                    .filter(|e| e.categories & bit != 0)
                    .map(|e| bulk_str(&e.fullname))
                    .collect(),
            ))
        }
        _ => Err(CommandError::subcommand_syntax("ACL", args.argv())),
    }
}

/// ```text
/// ACL GENPASS [bits]
/// ```
fn acl_genpass(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    const MAX_BITS: i64 = 4096;
    let bits = match args.next() {
        Some(b) => super::parse_i64(b)?,
        None => 256,
    };
    if bits <= 0 || bits > MAX_BITS {
        return Err(CommandError::err(format!(
            "ACL GENPASS argument must be the number of bits for the output password, a \
             positive number up to {MAX_BITS}"
        )));
    }
    let chars = ((bits + 3) / 4) as usize;
    // A password must not be guessable from the node's seed: drawn from the OS generator.
    let bytes: Vec<u8> = (0..chars.div_ceil(2))
        .map(|_| rand::random::<u8>())
        .collect();
    let mut text = hex::encode(bytes);
    text.truncate(chars);
    Ok(Frame::Bulk(Bytes::from(text)))
}

/// ```text
/// ACL LOG [count | RESET]
/// ```
fn acl_log(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut count = 10i64;
    if let Some(arg) = args.next() {
        if arg.eq_ignore_ascii_case(b"reset") {
            if let Ok(mut log) = ctx.node.acl.log.lock() {
                log.clear();
            }
            return Ok(Frame::ok());
        }
        count = super::parse_i64(arg)?.max(0);
    }
    let now = ctx.node.clock.now_ms();
    let Ok(log) = ctx.node.acl.log.lock() else {
        return Ok(Frame::Array(Vec::new()));
    };
    let entries = log
        .newest(usize::try_from(count).unwrap_or(usize::MAX))
        .map(|e| {
            Frame::Map(vec![
                (bulk_str("count"), Frame::Integer(e.count as i64)),
                (bulk_str("reason"), bulk_str(e.reason.as_str())),
                (bulk_str("context"), bulk_str(e.context.as_str())),
                (bulk_str("object"), Frame::Bulk(e.object.clone())),
                (bulk_str("username"), Frame::Bulk(e.username.clone())),
                (
                    bulk_str("age-seconds"),
                    Frame::Double(now.saturating_sub(e.time_ms) as f64 / 1000.0),
                ),
                (
                    bulk_str("client-info"),
                    Frame::Bulk(Bytes::from(e.client_info.clone())),
                ),
            ])
        })
        .collect();
    Ok(Frame::Array(entries))
}

/// ```text
/// ACL DRYRUN username command [arg [arg ...]]
/// ```
fn acl_dryrun(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.bytes()?;
    let Some(user) = ctx.node.acl.user(name) else {
        return Err(CommandError::err(format!(
            "User '{}' not found",
            lossy(name, usize::MAX)
        )));
    };
    let line = args.rest();
    let resolved = match super::resolve(ctx.node.config.compat(), line) {
        Ok(resolved) => resolved,
        Err(CommandError::WrongArity(name)) => {
            return Err(CommandError::err(format!(
                "wrong number of arguments for '{name}' command"
            )))
        }
        Err(_) => {
            return Err(CommandError::err(format!(
                "Command '{}' not found",
                lossy(line.first().map_or(&[][..], |c| &c[..]), usize::MAX)
            )))
        }
    };
    match check(&user, &resolved, line) {
        Ok(()) => Ok(Frame::ok()),
        Err(denied) => {
            let texts = &ctx.node.config.profile().acl_texts;
            let templates = (texts.dryrun_command, texts.dryrun_key, texts.dryrun_channel);
            let text = refusal(templates, &user, &resolved, line, denied);
            Ok(Frame::Bulk(Bytes::from(text)))
        }
    }
}

/// The `aclfile` path (relative to `dir`) and the setting as given, or Redis's error.
fn aclfile(ctx: &Ctx<'_>) -> Result<(std::path::PathBuf, String), CommandError> {
    let file = ctx.node.config.aclfile();
    if file.is_empty() {
        return Err(CommandError::err(
            "This Redis instance is not configured to use an ACL file. You may want to specify \
             users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you \
             have a Redis configuration file set) in order to store users in the Redis \
             configuration.",
        ));
    }
    Ok((resolve_path(&ctx.node.config.dir(), &file), file))
}

/// `file` relative to `dir` (Redis runs in `dir`).
pub(crate) fn resolve_path(dir: &str, file: &str) -> std::path::PathBuf {
    let path = std::path::Path::new(file);
    if path.is_absolute() || dir.is_empty() {
        path.to_path_buf()
    } else {
        std::path::Path::new(dir).join(path)
    }
}

/// Loads the ACL file into `node`, replacing every user; the removed users' clients are
/// returned for disconnection.
///
/// # Errors
///
/// Redis's description of the problems (nothing changed then).
pub(crate) fn load_acl_file(
    node: &crate::node::Node,
    path: &std::path::Path,
    shown: &str,
) -> Result<Vec<Arc<User>>, String> {
    let all_channels = node.config.acl_pubsub_default_all();
    let users = acl::load_file(path, shown, catalog(node.config.compat()), all_channels)?;
    Ok(node.acl.replace_all(users))
}

/// ```text
/// ACL LOAD
/// ```
fn acl_load(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let (path, shown) = aclfile(ctx)?;
    let removed = load_acl_file(ctx.node, &path, &shown).map_err(CommandError::err)?;
    disconnect_users_clients(ctx, &removed);
    Ok(Frame::ok())
}

/// ```text
/// ACL SAVE
/// ```
fn acl_save(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let (path, _) = aclfile(ctx)?;
    acl::save_file(
        &ctx.node.acl,
        catalog(ctx.node.config.compat()),
        &path,
        ctx.node.clock.now_ms(),
    )
    .map_err(|e| {
        tracing::warn!(error = %e, "Writing ACL file for ACL SAVE");
        CommandError::err(
            "There was an error trying to save the ACLs. Please check the server logs for more \
             information",
        )
    })?;
    Ok(Frame::ok())
}

/// ```text
/// ACL HELP
/// ```
fn acl_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "ACL"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_ids_fit_the_acl_bitmap() {
        for compat in Compat::ALL {
            let c = catalog(compat);
            assert!(c.entries.iter().all(|e| e.id < 1023));
            let mut ids: Vec<u32> = c.entries.iter().map(|e| e.id).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), c.entries.len());
            assert!(c.find(b"CONFIG|GET").is_some() && c.find(b"get").is_some());
        }
    }
}
