//! The command table and lookup: the families' commands as the table's source describes them
//! ([`super::spec::CommandSpec::build`]), found by name (case-insensitive, through the
//! client's [`NameCache`]) and resolved against a command line ([`resolve`]: the
//! subcommand, the arity error).

use super::spec::{Command, CommandSpec};
use super::*;
use crate::compat::Compat;
use crate::redis_table::map_get;
use bytes::Bytes;
use locksmith_resp::Frame;
use std::sync::OnceLock;

/// Every command family's table.
fn families() -> [&'static [Command]; 29] {
    [
        acl::COMMANDS,
        connection::COMMANDS,
        sort::COMMANDS,
        bitmap::COMMANDS,
        keys::COMMANDS,
        string::COMMANDS,
        expire::COMMANDS,
        hash::COMMANDS,
        pubsub::COMMANDS,
        transaction::COMMANDS,
        replication::COMMANDS,
        list::COMMANDS,
        zset::COMMANDS,
        set::COMMANDS,
        client::COMMANDS,
        server::COMMANDS,
        script::COMMANDS,
        function::COMMANDS,
        stream::COMMANDS,
        persistence::COMMANDS,
        hyperloglog::COMMANDS,
        geo::COMMANDS,
        cluster::COMMANDS,
        slowlog::COMMANDS,
        latency::COMMANDS,
        memory::COMMANDS,
        module::COMMANDS,
        migrate::COMMANDS,
        lolwut::COMMANDS,
    ]
}

/// FNV-1a offset basis and prime (64-bit).
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// The command table: open addressing over the FNV-1a hash of the lowercase name. The table is
/// fixed once built (from the families and the source) and a probe ends with an exact name comparison, so a client cannot
/// flood it (the worst a chosen name does is one short probe sequence); an unkeyed hash is
/// enough and spares SipHash on every command.
struct Table {
    /// Power-of-two sized, at most half full, so every probe sequence meets an empty slot.
    slots: Box<[Option<&'static CommandSpec>]>,
    /// Every top-level command once.
    specs: Vec<&'static CommandSpec>,
    /// Per slot: where its subcommands' statistics indexes start (see [`Resolved::stat`]).
    sub_base: Box<[u32]>,
    /// Every command and subcommand by its statistics index ([`Resolved::stat`]).
    by_stat: Box<[Option<&'static CommandSpec>]>,
    /// The target whose source it was built from.
    compat: Compat,
}

impl Table {
    /// The families' commands that `compat`'s source describes, each as that source
    /// describes it.
    fn build(compat: Compat) -> Table {
        let described = compat.profile().commands.descriptions();
        let built: Vec<CommandSpec> = families()
            .into_iter()
            .flatten()
            .filter_map(|command| CommandSpec::build(command, None, described))
            .collect();
        // Built once per process and source, and used until the process ends.
        let built: &'static [CommandSpec] = Box::leak(built.into_boxed_slice());
        let size = (built.len() * 2).next_power_of_two().max(16);
        let mut slots: Vec<Option<&'static CommandSpec>> = vec![None; size];
        for spec in built {
            let mut i = name_hash(spec.name.as_bytes()) as usize & (size - 1);
            // A later family's spec with the same name replaces the earlier one.
            while let Some(Some(other)) = slots.get(i) {
                if other.name == spec.name {
                    break;
                }
                i = (i + 1) & (size - 1);
            }
            if let Some(slot) = slots.get_mut(i) {
                *slot = Some(spec);
            }
        }
        let specs = slots.iter().flatten().copied().collect();
        // A top-level command's statistics index is its slot; subcommands follow the slots.
        let mut by_stat = slots.clone();
        let sub_base = slots
            .iter()
            .map(|slot| {
                let base = by_stat.len();
                by_stat.extend(slot.iter().flat_map(|spec| spec.subcommands).map(Some));
                u32::try_from(base).unwrap_or(u32::MAX)
            })
            .collect();
        Table {
            slots: slots.into_boxed_slice(),
            specs,
            sub_base,
            by_stat: by_stat.into_boxed_slice(),
            compat,
        }
    }

    /// The spec named `lower` (already lowercase), whose name hashes to `hash`, and its slot.
    fn find(&self, hash: u64, lower: &[u8]) -> Option<(&'static CommandSpec, usize)> {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        for _ in 0..self.slots.len() {
            let spec = (*self.slots.get(i)?)?;
            if spec.name.as_bytes() == lower {
                return Some((spec, i));
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// The statistics index of `spec` at `slot`, or of its subcommand at `sub`.
    fn stat(&self, slot: usize, sub: Option<usize>) -> u32 {
        match sub {
            None => u32::try_from(slot).unwrap_or(u32::MAX),
            Some(p) => self
                .sub_base
                .get(slot)
                .map_or(u32::MAX, |base| base.saturating_add(p as u32)),
        }
    }
}

/// FNV-1a of a lowercase name.
fn name_hash(lower: &[u8]) -> u64 {
    lower.iter().fold(FNV_OFFSET, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    })
}

/// Each compatibility target's table (in [`Compat::ALL`]'s order), built from its
/// [`crate::compat::Profile::commands`] at first use.
static TABLES: [OnceLock<Table>; Compat::ALL.len()] =
    [const { OnceLock::new() }; Compat::ALL.len()];

/// The table of `compat`'s source.
fn of(compat: Compat) -> &'static Table {
    // `Compat::ALL` lists every target, in the order of its discriminants.
    TABLES[compat as usize].get_or_init(|| Table::build(compat))
}

/// Every top-level command of `compat`'s table, in no particular order.
pub(crate) fn table(compat: Compat) -> &'static [&'static CommandSpec] {
    &of(compat).specs
}

/// The command `resolved` names (in the table that resolved it), with its handler.
pub(crate) fn spec_of(resolved: &Resolved) -> Option<&'static CommandSpec> {
    of(resolved.compat)
        .by_stat
        .get(usize::try_from(resolved.stat).ok()?)
        .copied()
        .flatten()
}

/// Looks a command up by name in `compat`'s table, ignoring ASCII case (no allocation: names
/// longer than any command are unknown).
pub(crate) fn lookup(compat: Compat, name: &[u8]) -> Option<&'static CommandSpec> {
    lookup_slot(of(compat), name).map(|(spec, _)| spec)
}

/// [`lookup`] in `table`, with the command's slot.
fn lookup_slot(table: &'static Table, name: &[u8]) -> Option<(&'static CommandSpec, usize)> {
    let mut buf = [0u8; 32];
    let lower = buf.get_mut(..name.len())?;
    let mut hash = FNV_OFFSET;
    for (l, b) in lower.iter_mut().zip(name) {
        *l = b.to_ascii_lowercase();
        hash = (hash ^ u64::from(*l)).wrapping_mul(FNV_PRIME);
    }
    table.find(hash, lower)
}

/// Whether `compat`'s description of the command `name` (`hscan`, `client|kill`) documents an
/// argument introduced by `token` (`NOVALUES`): how a handler tells an option a later
/// release added (accepted under the target whose table has it) from a syntax error.
pub(crate) fn documents(compat: Compat, name: &str, token: &str) -> bool {
    /// Whether `arguments` (a docs `arguments` array) or any argument nested in it has
    /// `token`.
    fn within(arguments: Option<&Frame>, token: &str) -> bool {
        let Some(Frame::Array(arguments)) = arguments else {
            return false;
        };
        arguments.iter().any(|arg| {
            matches!(map_get(arg, "token"), Some(Frame::Bulk(t) | Frame::Simple(t))
                if t.eq_ignore_ascii_case(token.as_bytes()))
                || within(map_get(arg, "arguments"), token)
        })
    }
    compat
        .profile()
        .commands
        .descriptions()
        .get(name)
        .is_some_and(|d| within(map_get(&d.docs, "arguments"), token))
}

/// The last command name a client sent, as it spelled it, and where the table has it: a
/// pipeline of one command looks its name up once (the table never changes while the
/// server runs).
#[derive(Debug, Default)]
pub(crate) struct NameCache {
    name: [u8; NameCache::MAX],
    len: usize,
    found: Option<(&'static CommandSpec, usize)>,
}

impl NameCache {
    /// Longest name kept (every command's but a few module-style ones fit).
    const MAX: usize = 16;

    /// [`lookup_slot`] in `table` through the cache (a client's commands all go to one
    /// node's table).
    fn lookup_slot(
        &mut self,
        table: &'static Table,
        name: &[u8],
    ) -> Option<(&'static CommandSpec, usize)> {
        if let Some(found) = self.found {
            if self.name.get(..self.len) == Some(name) {
                return Some(found);
            }
        }
        let found = lookup_slot(table, name)?;
        if let Some(slot) = self.name.get_mut(..name.len()) {
            slot.copy_from_slice(name);
            self.len = name.len();
            self.found = Some(found);
        }
        Some(found)
    }
}

/// Looks up the spec `argv` names in `compat`'s table: the subcommand's spec for a
/// container command.
///
/// # Errors
///
/// Unknown command or subcommand, or the arity check failing, with Redis's texts.
pub(crate) fn resolve(compat: Compat, argv: &[Bytes]) -> Result<Resolved, CommandError> {
    let table = of(compat);
    resolve_with(table, argv, |name| lookup_slot(table, name))
}

/// [`resolve`], the name looked up through the client's `cache`.
///
/// # Errors
///
/// As [`resolve`].
pub(crate) fn resolve_cached(
    compat: Compat,
    argv: &[Bytes],
    cache: &mut NameCache,
) -> Result<Resolved, CommandError> {
    let table = of(compat);
    resolve_with(table, argv, |name| cache.lookup_slot(table, name))
}

/// [`resolve`] with the name looked up by `lookup`.
#[inline]
fn resolve_with(
    table: &'static Table,
    argv: &[Bytes],
    lookup: impl FnOnce(&[u8]) -> Option<(&'static CommandSpec, usize)>,
) -> Result<Resolved, CommandError> {
    // Not `ok_or`: the eager error would go through `CommandError`'s drop glue every call.
    let Some(name) = argv.first() else {
        return Err(CommandError::Syntax);
    };
    let (spec, slot) = lookup(name).ok_or_else(|| CommandError::unknown_command(argv))?;
    resolve_found(table, argv, spec, slot)
}

/// The rest of [`resolve`] once the name was found at `slot`: the subcommand and the arity.
fn resolve_found(
    table: &'static Table,
    argv: &[Bytes],
    spec: &'static CommandSpec,
    slot: usize,
) -> Result<Resolved, CommandError> {
    if !spec.subcommands.is_empty() && argv.len() >= 2 {
        let sub = argv.get(1).map_or(&[][..], |s| &s[..]);
        let found = spec
            .subcommands
            .iter()
            .enumerate()
            .find(|(_, s)| s.name.as_bytes().eq_ignore_ascii_case(sub));
        return match found {
            Some((p, sub_spec)) if sub_spec.arity_ok(argv.len()) => Ok(Resolved {
                spec: &sub_spec.meta,
                first_arg: 2,
                parent: Some(&spec.meta),
                stat: table.stat(slot, Some(p)),
                compat: table.compat,
            }),
            Some((_, sub_spec)) => Err(CommandError::WrongArity(format!(
                "{}|{}",
                spec.name, sub_spec.name
            ))),
            None => Err(CommandError::UnknownSubcommand {
                container: spec.name.to_ascii_uppercase(),
                sub: lossy(argv.get(1).map(|b| &b[..]).unwrap_or_default(), 128),
            }),
        };
    }
    if !spec.arity_ok(argv.len()) {
        return Err(CommandError::WrongArity(spec.name.to_string()));
    }
    Ok(Resolved {
        spec: &spec.meta,
        first_arg: 1,
        parent: None,
        stat: table.stat(slot, None),
        compat: table.compat,
    })
}

/// The spec `argv` names, whatever its arity (to count a call refused for its arity).
pub(crate) fn resolve_name(compat: Compat, argv: &[Bytes]) -> Option<Resolved> {
    let table = of(compat);
    let (spec, slot) = lookup_slot(table, argv.first()?)?;
    if let (false, Some(sub)) = (spec.subcommands.is_empty(), argv.get(1)) {
        let (p, sub_spec) = spec
            .subcommands
            .iter()
            .enumerate()
            .find(|(_, s)| s.name.as_bytes().eq_ignore_ascii_case(sub))?;
        return Some(Resolved {
            spec: &sub_spec.meta,
            first_arg: 2,
            parent: Some(&spec.meta),
            stat: table.stat(slot, Some(p)),
            compat: table.compat,
        });
    }
    Some(Resolved {
        spec: &spec.meta,
        first_arg: 1,
        parent: None,
        stat: table.stat(slot, None),
        compat: table.compat,
    })
}

#[cfg(test)]
mod table_tests {
    use super::*;

    const R: Compat = Compat::Redis70;

    #[test]
    fn the_name_cache_resolves_as_the_table_does() {
        let argv = |args: &[&str]| -> Vec<Bytes> {
            args.iter().map(|a| Bytes::from(a.to_string())).collect()
        };
        for compat in Compat::ALL {
            let mut cache = NameCache::default();
            // Repeats, other spellings, arity errors of a cached name, containers, unknown
            // names (never cached), a name longer than the cache holds, and back.
            for args in [
                &["GET", "k"][..],
                &["GET", "k"],
                &["get", "k"],
                &["GET"],
                &["GET", "k", "extra"],
                &["SET", "k", "v"],
                &["CONFIG", "GET", "maxmemory"],
                &["CONFIG", "NOPE"],
                &["CONFIG", "GET", "maxmemory"],
                &["NOSUCHCMD", "k"],
                &["NOSUCHCMD", "k"],
                &["GET", "k"],
                &["ZRANGEBYSCORE", "z", "0", "1"],
                &["GEORADIUSBYMEMBER_RO", "g", "m", "1", "km"],
                &["GET", "k"],
            ] {
                let argv = argv(args);
                let want = resolve(compat, &argv).map(|r| (r.spec.name, r.first_arg, r.stat));
                let got = resolve_cached(compat, &argv, &mut cache)
                    .map(|r| (r.spec.name, r.first_arg, r.stat));
                assert_eq!(got, want, "{compat} {args:?}");
            }
        }
    }

    #[test]
    fn the_targets_are_listed_in_the_order_of_their_tables() {
        for (i, compat) in Compat::ALL.into_iter().enumerate() {
            assert_eq!(compat as usize, i);
        }
    }

    #[test]
    fn lookup_finds_every_command_in_any_case() {
        for compat in Compat::ALL {
            let described = compat.profile().commands.descriptions();
            let mut names: Vec<&str> = families()
                .into_iter()
                .flatten()
                .map(|s| s.name)
                .filter(|name| described.contains_key(*name))
                .collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(table(compat).len(), names.len());
            for name in names {
                assert_eq!(lookup(compat, name.as_bytes()).map(|s| s.name), Some(name));
                let upper = name.to_ascii_uppercase();
                assert_eq!(lookup(compat, upper.as_bytes()).map(|s| s.name), Some(name));
            }
            assert!(lookup(compat, b"nosuchcommand").is_none());
            assert!(lookup(compat, b"").is_none());
            assert!(lookup(compat, &[b'g'; 40]).is_none());
            assert!(lookup(compat, b"g\xffet").is_none());
        }
    }

    /// Every command and subcommand the families declare is described by a target's source
    /// (else the server would silently lack it): Redis 7.0's, or Valkey 8.1's for what
    /// came after 7.0 (which the Redis target then does not have).
    #[test]
    fn every_declared_command_is_described() {
        let redis = R.profile().commands.descriptions();
        let valkey = Compat::Valkey81.profile().commands.descriptions();
        let mut missing = Vec::new();
        let mut count = [0; Compat::ALL.len()];
        for command in families().into_iter().flatten() {
            let mut names = vec![command.name.to_string()];
            names.extend(
                command
                    .subcommands
                    .iter()
                    .map(|sub| format!("{}|{}", command.name, sub.name)),
            );
            for name in names {
                let container = name.split('|').next().unwrap_or_default();
                for (i, compat) in Compat::ALL.into_iter().enumerate() {
                    let described = compat.profile().commands.descriptions();
                    if described.contains_key(&name) && described.contains_key(container) {
                        count[i] += 1;
                    }
                }
                if !redis.contains_key(&name) && !valkey.contains_key(&name) {
                    missing.push(name);
                }
            }
        }
        assert!(missing.is_empty(), "{missing:?}");
        for (i, compat) in Compat::ALL.into_iter().enumerate() {
            let built = table(compat).len()
                + table(compat)
                    .iter()
                    .map(|s| s.subcommands.len())
                    .sum::<usize>();
            assert_eq!(built, count[i], "{compat}");
        }
        // A flag of ours comes with the family's entry, the rest with the description.
        for compat in Compat::ALL {
            let eval = lookup(compat, b"eval").expect("EVAL");
            assert!(
                eval.has(flags::RUNS_SCRIPT | flags::MAY_REPLICATE) && eval.has(flags::NOSCRIPT)
            );
            assert!(!lookup(compat, b"get").expect("GET").has(flags::RUNS_SCRIPT));
        }
        // Valkey's name for `skip_slowlog`.
        let exec = |compat| lookup(compat, b"exec").expect("EXEC");
        assert!(
            exec(R).has(flags::SKIP_SLOWLOG) && exec(Compat::Valkey81).has(flags::SKIP_SLOWLOG)
        );
    }

    /// The commands and subcommands of `compat`'s source that its table lacks, as README
    /// spells them (`CLUSTER MEET`).
    fn lacking(compat: Compat) -> Vec<String> {
        let has = |name: &str| match name.split_once('|') {
            None => lookup(compat, name.as_bytes()).is_some(),
            Some((container, sub)) => lookup(compat, container.as_bytes())
                .is_some_and(|c| c.subcommands.iter().any(|s| s.name == sub)),
        };
        let mut missing: Vec<String> = compat
            .profile()
            .commands
            .descriptions()
            .keys()
            .filter(|name| !has(name))
            .map(|name| name.replace('|', " ").to_ascii_uppercase())
            .collect();
        missing.sort();
        missing
    }

    /// The command names in backquotes between README's `<!-- marker -->` and
    /// `<!-- /marker -->`.
    fn readme_list(marker: &str) -> Vec<String> {
        let readme = include_str!("../../../README.md");
        let listed = readme
            .split(&format!("<!-- {marker} -->"))
            .nth(1)
            .and_then(|rest| rest.split(&format!("<!-- /{marker} -->")).next())
            .unwrap_or_else(|| panic!("README has the {marker} list"));
        let mut named: Vec<String> = listed
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|w| {
                w.chars()
                    .all(|c| c.is_ascii_uppercase() || c == ' ' || c == '-')
            })
            .map(str::to_string)
            .collect();
        named.sort();
        named.dedup();
        named
    }

    /// Every command and subcommand of Redis 7.0 that the table lacks is listed, with its
    /// reason, in the README's "not implemented" list, and nothing listed there exists; under
    /// the Valkey target, the same of Valkey 8.1's with the README's Valkey list added.
    #[test]
    fn the_readme_lists_exactly_the_commands_we_lack() {
        let redis = readme_list("not-implemented");
        assert_eq!(lacking(R), redis);
        let mut valkey = readme_list("not-implemented-valkey");
        valkey.extend(redis);
        valkey.sort();
        valkey.dedup();
        assert_eq!(lacking(Compat::Valkey81), valkey);
    }
}
