//! `COMMAND` and its subcommands: the command table as Redis describes it (flags, key specs,
//! ACL categories, docs).

use super::client::help_lines;
use super::{
    bulk_str, flags, flags::*, table, Args, BeginSearch, CmdResult, CommandError, CommandSpec, Ctx,
    KeySpec,
};
use crate::glob::glob_match;
use bytes::Bytes;
use locksmith_resp::Frame;

pub(super) static COMMAND_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("count", 2, command_count)
        .flags(LOADING | STALE)
        .doc("server", "Returns a count of commands."),
    CommandSpec::new("info", -2, command_info)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Returns information about one, multiple or all commands.",
        ),
    CommandSpec::new("docs", -2, command_docs)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Returns documentary information about one, multiple or all commands.",
        ),
    CommandSpec::new("list", -2, command_list)
        .flags(LOADING | STALE)
        .doc("server", "Returns a list of command names."),
    CommandSpec::new("getkeys", -4, command_getkeys)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Extracts the key names from an arbitrary command.",
        ),
    CommandSpec::new("getkeysandflags", -4, command_getkeysandflags)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Extracts the key names and access flags for an arbitrary command.",
        ),
    CommandSpec::new("help", 2, command_help)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Returns helpful text about the different subcommands.",
        ),
];

/// ACL categories as `COMMAND INFO` lists them (`@read`...), in Redis's order.
fn acl_categories(spec: &CommandSpec, parent: Option<&CommandSpec>) -> Vec<String> {
    let resolved = resolved_of(spec, parent);
    super::acl::category_names(resolved.map_or(0, |r| super::acl::category_mask(&r)))
        .map(|c| format!("@{c}"))
        .collect()
}

/// The table's resolution of `spec` (a subcommand of `parent`).
fn resolved_of(spec: &CommandSpec, parent: Option<&CommandSpec>) -> Option<super::Resolved> {
    let mut argv = Vec::with_capacity(2);
    if let Some(p) = parent {
        argv.push(Bytes::from_static(p.name.as_bytes()));
    }
    argv.push(Bytes::from_static(spec.name.as_bytes()));
    super::resolve_name(&argv)
}

/// The key specifications: the command's own, or the one Redis 7 derives from
/// (first, last, step).
fn key_specs(spec: &CommandSpec) -> Frame {
    if !spec.key_specs.is_empty() {
        return Frame::Set(spec.key_specs.iter().map(key_spec_entry).collect());
    }
    if spec.first_key <= 0 {
        return Frame::Set(Vec::new());
    }
    let key_flags: &[&'static str] = if !spec.key_flags.is_empty() {
        spec.key_flags
    } else if spec.has(WRITE) {
        &["RW", "update"]
    } else {
        &["RO", "access"]
    };
    let last_relative = if spec.last_key >= 0 {
        spec.last_key - spec.first_key
    } else {
        spec.last_key
    };
    let derived = KeySpec {
        flags: key_flags,
        begin: BeginSearch::Index(spec.first_key),
        range: (last_relative, spec.step, 0),
    };
    Frame::Set(vec![key_spec_entry(&derived)])
}

/// One key specification as `COMMAND INFO` shows it (`addReplyCommandKeySpecs`).
fn key_spec_entry(ks: &KeySpec) -> Frame {
    let entry = |k: &'static str, v: Frame| (bulk_str(k), v);
    let begin = match ks.begin {
        BeginSearch::Index(index) => Frame::Map(vec![
            entry("type", bulk_str("index")),
            entry(
                "spec",
                Frame::Map(vec![entry("index", Frame::Integer(index.into()))]),
            ),
        ]),
        BeginSearch::Keyword { keyword, startfrom } => Frame::Map(vec![
            entry("type", bulk_str("keyword")),
            entry(
                "spec",
                Frame::Map(vec![
                    entry("keyword", bulk_str(keyword)),
                    entry("startfrom", Frame::Integer(startfrom.into())),
                ]),
            ),
        ]),
    };
    let (lastkey, keystep, limit) = ks.range;
    Frame::Map(vec![
        entry(
            "flags",
            Frame::Set(ks.flags.iter().map(|f| Frame::simple(f)).collect()),
        ),
        entry("begin_search", begin),
        entry(
            "find_keys",
            Frame::Map(vec![
                entry("type", bulk_str("range")),
                entry(
                    "spec",
                    Frame::Map(vec![
                        entry("lastkey", Frame::Integer(lastkey.into())),
                        entry("keystep", Frame::Integer(keystep.into())),
                        entry("limit", Frame::Integer(limit.into())),
                    ]),
                ),
            ]),
        ),
    ])
}

/// One `COMMAND INFO` entry in Redis 7's shape: name, arity, flags, first key, last key,
/// step, ACL categories, tips, key specs, subcommands (sets in RESP3, as Redis sends them).
fn command_entry(spec: &CommandSpec, parent: Option<&CommandSpec>) -> Frame {
    let name = match parent {
        Some(p) => format!("{}|{}", p.name, spec.name),
        None => spec.name.to_string(),
    };
    if let Some(redis) = crate::redis_table::get(&name) {
        // Redis's own entry; a container lists the subcommands this server has.
        let mut entry = redis.info.clone();
        if let (Frame::Array(fields), false) = (&mut entry, spec.subcommands.is_empty()) {
            if let Some(subs) = fields.get_mut(9) {
                *subs = Frame::Array(
                    spec.subcommands
                        .iter()
                        .map(|s| command_entry(s, Some(spec)))
                        .collect(),
                );
            }
        }
        return entry;
    }
    let flag_names = flags::NAMES
        .iter()
        .filter(|(bit, _)| spec.flags & bit != 0)
        .map(|(_, n)| Frame::simple(n))
        .collect();
    let cats = acl_categories(spec, parent)
        .into_iter()
        .map(|c| Frame::Simple(Bytes::from(c)))
        .collect();
    let subs = spec
        .subcommands
        .iter()
        .map(|s| command_entry(s, Some(spec)))
        .collect();
    Frame::Array(vec![
        Frame::Bulk(Bytes::from(name)),
        Frame::Integer(spec.arity.into()),
        Frame::Set(flag_names),
        Frame::Integer(spec.first_key.into()),
        Frame::Integer(spec.last_key.into()),
        Frame::Integer(spec.step.into()),
        Frame::Set(cats),
        // Redis 7.0 sends the tips as a set (`~2` for KEYS under RESP3).
        Frame::Set(spec.tips.iter().map(|t| bulk_str(t)).collect()),
        key_specs(spec),
        // Redis 7.0 sends an empty set when there are no subcommands, an array otherwise.
        if spec.subcommands.is_empty() {
            Frame::Set(Vec::new())
        } else {
            Frame::Array(subs)
        },
    ])
}

/// Every top-level command, by name.
fn sorted_commands() -> Vec<&'static CommandSpec> {
    let mut all: Vec<&'static CommandSpec> = table().to_vec();
    all.sort_by_key(|s| s.name);
    all
}

/// Looks up `name` or `container|sub`.
fn find_spec(name: &[u8]) -> Option<(&'static CommandSpec, Option<&'static CommandSpec>)> {
    let text = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
    match text.split_once('|') {
        None => super::lookup(text.as_bytes()).map(|s| (s, None)),
        Some((container, sub)) => {
            let parent = super::lookup(container.as_bytes())?;
            let spec = parent.subcommands.iter().find(|s| s.name == sub)?;
            Some((spec, Some(parent)))
        }
    }
}

/// ```text
/// COMMAND
/// ```
pub(super) fn command(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Array(
        sorted_commands()
            .into_iter()
            .map(|s| command_entry(s, None))
            .collect(),
    ))
}

/// ```text
/// COMMAND COUNT
/// ```
fn command_count(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(table().len() as i64))
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
            .map(|name| match find_spec(name) {
                Some((spec, parent)) => command_entry(spec, parent),
                None => Frame::Null,
            })
            .collect(),
    ))
}

/// One argument in `COMMAND DOCS`, its fields in Redis's order.
fn doc_argument(arg: &super::DocArg) -> Frame {
    let entry = |k: &'static str, v: Frame| (bulk_str(k), v);
    let mut fields = vec![
        entry("name", bulk_str(arg.name)),
        entry("type", bulk_str(arg.kind)),
    ];
    if let Some(index) = arg.key_spec_index {
        fields.push(entry("key_spec_index", Frame::Integer(index)));
    }
    if let Some(token) = arg.token {
        fields.push(entry("token", bulk_str(token)));
    }
    if !arg.flags.is_empty() {
        let flags = arg.flags.iter().map(|f| Frame::simple(f)).collect();
        fields.push(entry("flags", Frame::Set(flags)));
    }
    Frame::Map(fields)
}

/// ```text
/// COMMAND DOCS [command-name [command-name ...]]
/// ```
fn command_docs(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    fn docs(spec: &CommandSpec, parent: Option<&CommandSpec>) -> Frame {
        let entry = |k: &'static str, v: Frame| (bulk_str(k), v);
        let full = |s: &CommandSpec| format!("{}|{}", spec.name, s.name);
        let name = match parent {
            Some(p) => format!("{}|{}", p.name, spec.name),
            None => spec.name.to_string(),
        };
        if let Some(redis) = crate::redis_table::get(&name) {
            // Redis's own documentation; a container's lists the subcommands we have.
            let mut doc = redis.docs.clone();
            if let (Frame::Map(fields), false) = (&mut doc, spec.subcommands.is_empty()) {
                let subs = spec
                    .subcommands
                    .iter()
                    .map(|s| (Frame::Bulk(Bytes::from(full(s))), docs(s, Some(spec))))
                    .collect();
                for (k, v) in fields.iter_mut() {
                    if matches!(k, Frame::Bulk(b) | Frame::Simple(b) if b.as_ref() == b"subcommands")
                    {
                        *v = Frame::Map(subs);
                        break;
                    }
                }
            }
            return doc;
        }
        let mut fields = vec![entry("summary", bulk_str(spec.summary))];
        if !spec.since.is_empty() {
            fields.push(entry("since", bulk_str(spec.since)));
        }
        fields.push(entry(
            "group",
            bulk_str(parent.map_or(spec.group, |p| p.group)),
        ));
        if !spec.complexity.is_empty() {
            fields.push(entry("complexity", bulk_str(spec.complexity)));
        }
        if !spec.history.is_empty() {
            let history = spec
                .history
                .iter()
                .map(|(version, change)| Frame::Array(vec![bulk_str(version), bulk_str(change)]))
                .collect();
            fields.push(entry("history", Frame::Array(history)));
        }
        if !spec.arguments.is_empty() {
            let arguments = spec.arguments.iter().map(doc_argument).collect();
            fields.push(entry("arguments", Frame::Array(arguments)));
        }
        if !spec.subcommands.is_empty() {
            let subs = spec
                .subcommands
                .iter()
                .map(|s| {
                    (
                        Frame::Bulk(Bytes::from(format!("{}|{}", spec.name, s.name))),
                        docs(s, Some(spec)),
                    )
                })
                .collect();
            fields.push(entry("subcommands", Frame::Map(subs)));
        }
        Frame::Map(fields)
    }
    let mut out = Vec::new();
    if args.is_empty() {
        for spec in sorted_commands() {
            out.push((bulk_str(spec.name), docs(spec, None)));
        }
    }
    for name in args.rest() {
        if let Some((spec, parent)) = find_spec(name) {
            let full = match parent {
                Some(p) => format!("{}|{}", p.name, spec.name),
                None => spec.name.to_string(),
            };
            out.push((Frame::Bulk(Bytes::from(full)), docs(spec, parent)));
        }
    }
    Ok(Frame::Map(out))
}

/// ```text
/// COMMAND LIST [FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]
/// ```
fn command_list(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
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
    for spec in sorted_commands() {
        let mut candidates = vec![(spec.name.to_string(), spec, None)];
        for sub in spec.subcommands {
            candidates.push((format!("{}|{}", spec.name, sub.name), sub, Some(spec)));
        }
        for (name, s, parent) in candidates {
            let keep = match &filter {
                Filter::None => true,
                Filter::Module => false,
                Filter::AclCat(cat) => acl_categories(s, parent).contains(cat),
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
/// `getKeysFromCommandWithSpecs` finds them (GETKEYS and GETKEYSANDFLAGS, through the ACL
/// table's [`crate::command_acl::acl_keys`]); with Redis's errors for an unknown command, a
/// wrong arity, a command without keys or keys not found.
fn keys_and_flags(argv: &[Bytes]) -> Result<Vec<(Bytes, Vec<&'static str>)>, CommandError> {
    let resolved = match super::resolve(argv) {
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
    let name = match resolved.parent {
        Some(p) => format!("{}|{}", p.name, spec.name),
        None => spec.name.to_string(),
    };
    let keys: Vec<(Bytes, Vec<&'static str>)> = crate::command_acl::acl_keys(&name, argv)
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
fn command_getkeys(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let keys = keys_and_flags(args.rest())?;
    Ok(Frame::Array(
        keys.into_iter().map(|(k, _)| Frame::Bulk(k)).collect(),
    ))
}

/// ```text
/// COMMAND GETKEYSANDFLAGS command [arg [arg ...]]
/// ```
fn command_getkeysandflags(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let keys = keys_and_flags(args.rest())?;
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
fn command_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_lines(
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    ))
}
