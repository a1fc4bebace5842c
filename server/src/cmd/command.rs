//! `COMMAND` and its subcommands: the command table as its source describes it (flags, key
//! specs, ACL categories, tips, docs: the source's own replies).

use super::client::help_reply;
use super::{bulk_str, flags::*, table, Args, CmdResult, Command, CommandError, CommandSpec, Ctx};
use crate::glob::glob_match;
use bytes::Bytes;
use locksmith_resp::Frame;

/// `COMMAND`'s subcommands.
pub(super) static COMMAND_SUBCOMMANDS: &[Command] = &[
    Command::new("count", command_count),
    Command::new("info", command_info),
    Command::new("docs", command_docs),
    Command::new("list", command_list),
    Command::new("getkeys", command_getkeys),
    Command::new("getkeysandflags", command_getkeysandflags),
    Command::new("help", command_help),
];

/// ACL categories as `COMMAND INFO` lists them (`@read`...), in Redis's order.
fn acl_categories(spec: &CommandSpec) -> Vec<String> {
    super::acl::category_names(spec.categories)
        .map(|c| format!("@{c}"))
        .collect()
}

/// One `COMMAND INFO` entry: the source's own (Redis's shape: name, arity, flags, first key,
/// last key, step, ACL categories, tips, key specs, subcommands), a container's listing the
/// subcommands this server has.
fn command_entry(spec: &CommandSpec) -> Frame {
    let mut entry = spec.described.info.clone();
    if let (Frame::Array(fields), false) = (&mut entry, spec.subcommands.is_empty()) {
        if let Some(subs) = fields.get_mut(9) {
            *subs = Frame::Array(spec.subcommands.iter().map(command_entry).collect());
        }
    }
    entry
}

/// Every top-level command of the node's table, by name.
fn sorted_commands(ctx: &Ctx<'_>) -> Vec<&'static CommandSpec> {
    let mut all: Vec<&'static CommandSpec> = table(ctx.node.config.compat()).to_vec();
    all.sort_by_key(|s| s.name);
    all
}

/// Looks up `name` or `container|sub` in the node's table.
fn find_spec(
    ctx: &Ctx<'_>,
    name: &[u8],
) -> Option<(&'static CommandSpec, Option<&'static CommandSpec>)> {
    let compat = ctx.node.config.compat();
    let text = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
    match text.split_once('|') {
        None => super::lookup(compat, text.as_bytes()).map(|s| (s, None)),
        Some((container, sub)) => {
            let parent = super::lookup(compat, container.as_bytes())?;
            let spec = parent.subcommands.iter().find(|s| s.name == sub)?;
            Some((spec, Some(parent)))
        }
    }
}

/// ```text
/// COMMAND
/// ```
pub(super) fn command(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Array(
        sorted_commands(ctx)
            .into_iter()
            .map(command_entry)
            .collect(),
    ))
}

/// ```text
/// COMMAND COUNT
/// ```
fn command_count(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(table(ctx.node.config.compat()).len() as i64))
}

/// ```text
/// COMMAND INFO [command-name [command-name ...]]
/// ```
fn command_info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.is_empty() {
        return command(ctx, args);
    }
    Ok(Frame::Array(
        args.rest()
            .iter()
            .map(|name| match find_spec(ctx, name) {
                Some((spec, _)) => command_entry(spec),
                None => Frame::Null,
            })
            .collect(),
    ))
}

/// ```text
/// COMMAND DOCS [command-name [command-name ...]]
/// ```
fn command_docs(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    /// The source's documentation of `spec`, a container's listing the subcommands we have.
    fn docs(spec: &CommandSpec) -> Frame {
        let mut doc = spec.described.docs.clone();
        if let (Frame::Map(fields), false) = (&mut doc, spec.subcommands.is_empty()) {
            let subs = spec
                .subcommands
                .iter()
                .map(|s| {
                    (
                        Frame::Bulk(Bytes::from(format!("{}|{}", spec.name, s.name))),
                        docs(s),
                    )
                })
                .collect();
            for (k, v) in fields.iter_mut() {
                if matches!(k, Frame::Bulk(b) | Frame::Simple(b) if b.as_ref() == b"subcommands") {
                    *v = Frame::Map(subs);
                    break;
                }
            }
        }
        doc
    }
    let mut out = Vec::new();
    if args.is_empty() {
        for spec in sorted_commands(ctx) {
            out.push((bulk_str(spec.name), docs(spec)));
        }
    }
    for name in args.rest() {
        if let Some((spec, parent)) = find_spec(ctx, name) {
            let full = match parent {
                Some(p) => format!("{}|{}", p.name, spec.name),
                None => spec.name.to_string(),
            };
            out.push((Frame::Bulk(Bytes::from(full)), docs(spec)));
        }
    }
    Ok(Frame::Map(out))
}

/// ```text
/// COMMAND LIST [FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]
/// ```
fn command_list(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    enum Filter {
        None,
        Module,
        AclCat(String),
        Pattern(Bytes),
    }
    let filter = match args.rest() {
        [] => Filter::None,
        [by, kind, value] if by.eq_ignore_ascii_case(b"filterby") => {
            match kind.to_ascii_lowercase().as_slice() {
                b"module" => Filter::Module,
                b"aclcat" => Filter::AclCat(format!(
                    "@{}",
                    String::from_utf8_lossy(value).to_ascii_lowercase()
                )),
                b"pattern" => Filter::Pattern(value.clone()),
                _ => return Err(CommandError::Syntax),
            }
        }
        _ => return Err(CommandError::Syntax),
    };
    let mut names = Vec::new();
    for spec in sorted_commands(ctx) {
        let mut candidates = vec![(spec.name.to_string(), spec, None)];
        for sub in spec.subcommands {
            candidates.push((format!("{}|{}", spec.name, sub.name), sub, Some(spec)));
        }
        for (name, s, _parent) in candidates {
            let keep = match &filter {
                Filter::None => true,
                Filter::Module => false,
                Filter::AclCat(cat) => acl_categories(s).contains(cat),
                Filter::Pattern(p) => glob_match(p, name.as_bytes(), true),
            };
            if keep {
                names.push(Frame::Bulk(Bytes::from(name)));
            }
        }
    }
    Ok(Frame::Array(names))
}

/// The keys of the command line `argv` with their flags' names, as Redis 7.0's
/// `getKeysFromCommandWithSpecs` finds them (GETKEYS and GETKEYSANDFLAGS, through the one key
/// finder, [`crate::command_meta::CommandMeta::keys`]); with Redis's errors for an unknown command, a
/// wrong arity, a command without keys or keys not found.
fn keys_and_flags(
    ctx: &Ctx<'_>,
    argv: &[Bytes],
) -> Result<Vec<(Bytes, Vec<&'static str>)>, CommandError> {
    let resolved = match super::resolve(ctx.node.config.compat(), argv) {
        Ok(resolved) => resolved,
        Err(CommandError::WrongArity(_)) => {
            return Err(CommandError::err(
                "Invalid number of arguments specified for command",
            ))
        }
        Err(_) => return Err(CommandError::err("Invalid command specified")),
    };
    let spec = resolved.spec;
    if spec.first_key <= 0 && !spec.has(MOVABLE_KEYS) {
        return Err(CommandError::err("The command has no key arguments"));
    }
    let keys: Vec<(Bytes, Vec<&'static str>)> = spec
        .keys(argv, false)
        .into_iter()
        .filter_map(|(i, flags)| {
            let names = crate::command_acl::key::NAMES
                .iter()
                .filter(|(bit, _)| flags & bit != 0)
                .map(|(_, n)| *n)
                .collect();
            Some((argv.get(i)?.clone(), names))
        })
        .collect();
    if keys.is_empty() && !spec.has(NO_MANDATORY_KEYS) {
        return Err(CommandError::err("Invalid arguments specified for command"));
    }
    Ok(keys)
}

/// ```text
/// COMMAND GETKEYS command [arg [arg ...]]
/// ```
fn command_getkeys(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let keys = keys_and_flags(ctx, args.rest())?;
    Ok(Frame::Array(
        keys.into_iter().map(|(k, _)| Frame::Bulk(k)).collect(),
    ))
}

/// ```text
/// COMMAND GETKEYSANDFLAGS command [arg [arg ...]]
/// ```
fn command_getkeysandflags(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let keys = keys_and_flags(ctx, args.rest())?;
    Ok(Frame::Array(
        keys.into_iter()
            .map(|(k, flags)| {
                Frame::Array(vec![
                    Frame::Bulk(k),
                    Frame::Set(flags.into_iter().map(Frame::simple).collect()),
                ])
            })
            .collect(),
    ))
}

/// ```text
/// COMMAND HELP
/// ```
fn command_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "COMMAND"))
}
