//! What the server knows about a command apart from how to run it ([`CommandMeta`]: name,
//! arity, flags, key positions, documentation), and a command line resolved against the table
//! ([`Resolved`]). The node state below the command layer (statistics, the MULTI queue, cluster
//! routing, protected commands) needs only this; the handlers live with the command table in
//! `cmd`, which maps a [`Resolved`] back to its handler.

use crate::flags;
use bytes::Bytes;

/// A command's description: everything but its handler.
#[derive(Debug)]
pub(crate) struct CommandMeta {
    /// Lowercase name.
    pub(crate) name: &'static str,
    /// Redis arity: N = exactly N arguments (name included), -N = at least N.
    pub(crate) arity: i32,
    /// [`crate::flags`] bits.
    pub(crate) flags: u32,
    /// Index of the first key (0 = no keys).
    pub(crate) first_key: i32,
    /// Index of the last key (-1 = last argument, -2 = one before it…).
    pub(crate) last_key: i32,
    /// Step between keys.
    pub(crate) step: i32,
    /// ACL category/group for `COMMAND DOCS` (`string`, `generic`, `connection`…).
    pub(crate) group: &'static str,
    /// One-line summary for `COMMAND DOCS`.
    pub(crate) summary: &'static str,
    /// Redis 7's key specifications, for commands the key positions above describe only in
    /// part (a destination key found by a keyword); empty: derived from the positions.
    pub(crate) key_specs: &'static [KeySpec],
    /// Redis's command tips for `COMMAND INFO` (`nondeterministic_output`,
    /// `request_policy:all_nodes`…), in Redis's order.
    pub(crate) tips: &'static [&'static str],
    /// The key specification's flags when they are not the ones the read/write flags imply
    /// (`RO`/`access`, `RW`/`update`); empty: implied.
    pub(crate) key_flags: &'static [&'static str],
    /// The version that added the command, for `COMMAND DOCS` (empty: not shown).
    pub(crate) since: &'static str,
    /// Its time complexity, for `COMMAND DOCS` (empty: not shown).
    pub(crate) complexity: &'static str,
    /// (version, change) pairs, for `COMMAND DOCS`.
    pub(crate) history: &'static [(&'static str, &'static str)],
    /// Its arguments, for `COMMAND DOCS` (empty: not shown).
    pub(crate) arguments: &'static [DocArg],
}

/// One argument of a command as `COMMAND DOCS` describes it.
#[derive(Debug)]
pub(crate) struct DocArg {
    /// The argument's name (`count`, `key`).
    pub(crate) name: &'static str,
    /// Its type (`key`, `string`, `integer`…).
    pub(crate) kind: &'static str,
    /// For a key, the index of its key specification.
    pub(crate) key_spec_index: Option<i64>,
    /// The word that introduces it (`SAMPLES`).
    pub(crate) token: Option<&'static str>,
    /// `optional`, `multiple`…
    pub(crate) flags: &'static [&'static str],
}

impl DocArg {
    /// An argument of type `kind`.
    pub(crate) const fn new(name: &'static str, kind: &'static str) -> Self {
        DocArg {
            name,
            kind,
            key_spec_index: None,
            token: None,
            flags: &[],
        }
    }

    /// A key argument, found by key specification `index`.
    pub(crate) const fn key(name: &'static str, index: i64) -> Self {
        DocArg {
            key_spec_index: Some(index),
            ..DocArg::new(name, "key")
        }
    }

    /// Sets the introducing word.
    pub(crate) const fn token(mut self, token: &'static str) -> Self {
        self.token = Some(token);
        self
    }

    /// Sets the flags.
    pub(crate) const fn flags(mut self, flags: &'static [&'static str]) -> Self {
        self.flags = flags;
        self
    }
}

/// One key specification of `COMMAND INFO` (Redis 7's `keySpec`).
#[derive(Debug)]
pub(crate) struct KeySpec {
    /// Its flags as `COMMAND INFO` names them (`RO`, `OW`, `access`, `update`...).
    pub(crate) flags: &'static [&'static str],
    /// Where the search for the key starts.
    pub(crate) begin: BeginSearch,
    /// `find_keys` as a range: the last key relative to the first, the step, the limit.
    pub(crate) range: (i32, i32, i32),
}

/// Where a key specification's search starts (`begin_search`).
#[derive(Debug)]
pub(crate) enum BeginSearch {
    /// At this argument index.
    Index(i32),
    /// After `keyword`, searched from argument `startfrom` on (negative: from the end).
    Keyword {
        /// The keyword, as Redis spells it (`STORE`).
        keyword: &'static str,
        /// Where the search starts.
        startfrom: i32,
    },
}

impl CommandMeta {
    /// A command with no keys, no flags and no documentation.
    pub(crate) const fn new(name: &'static str, arity: i32) -> Self {
        CommandMeta {
            name,
            arity,
            flags: 0,
            first_key: 0,
            last_key: 0,
            step: 0,
            group: "generic",
            summary: "",
            key_specs: &[],
            tips: &[],
            key_flags: &[],
            since: "",
            complexity: "",
            history: &[],
            arguments: &[],
        }
    }

    /// Whether `argc` arguments satisfy the arity.
    pub(crate) fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }

    /// Whether the command has `flag` (one of [`crate::flags`]).
    pub(crate) fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    /// The key arguments of a command line of `argc` arguments, by the key positions.
    pub(crate) fn key_indexes(&self, argc: usize) -> Vec<usize> {
        if self.first_key <= 0 {
            return Vec::new();
        }
        let first = self.first_key as usize;
        let last = if self.last_key < 0 {
            argc as i64 + i64::from(self.last_key)
        } else {
            i64::from(self.last_key)
        };
        let step = self.step.max(1) as usize;
        (first..)
            .step_by(step)
            .take_while(|&i| (i as i64) <= last && i < argc)
            .collect()
    }

    /// The key arguments of `argv`: the key positions, or for commands whose keys
    /// follow a `numkeys` argument (`EVAL`, `ZUNIONSTORE`, `LMPOP`…) the keys it announces.
    /// A `numkeys` that does not parse or overruns the arguments yields no keys: the command
    /// then reports its own error.
    pub(crate) fn keys_of<'a>(&self, argv: &'a [Bytes]) -> Vec<&'a Bytes> {
        if !self.key_specs.is_empty() {
            return keys_by_specs(self.key_specs, argv);
        }
        if !self.has(flags::MOVABLE_KEYS) {
            return self
                .key_indexes(argv.len())
                .into_iter()
                .filter_map(|i| argv.get(i))
                .collect();
        }
        if matches!(self.name, "sort" | "sort_ro" | "migrate") {
            // Their own key finders (Redis's `sortGetKeys`, `migrateGetKeys`), kept once, in
            // the ACL table.
            return crate::command_acl::acl_keys(self.name, argv)
                .into_iter()
                .filter_map(|(i, _)| argv.get(i))
                .collect();
        }
        if matches!(self.name, "xread" | "xreadgroup") {
            // The keys are the first half of what follows STREAMS.
            let Some(at) = argv
                .iter()
                .skip(1)
                .position(|a| a.eq_ignore_ascii_case(b"streams"))
            else {
                return Vec::new();
            };
            let rest = argv.get(at + 2..).unwrap_or_default();
            if rest.len() % 2 != 0 {
                return Vec::new();
            }
            return rest.iter().take(rest.len() / 2).collect();
        }
        // (index of numkeys, keys before it)
        let (numkeys_at, fixed): (usize, &[usize]) = match self.name {
            "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => (2, &[]),
            "zunionstore" | "zinterstore" | "zdiffstore" => (2, &[1]),
            "blmpop" | "bzmpop" => (2, &[]),
            _ => (1, &[]),
        };
        let mut keys: Vec<&Bytes> = fixed.iter().filter_map(|&i| argv.get(i)).collect();
        let Some(n) = argv
            .get(numkeys_at)
            .and_then(|n| std::str::from_utf8(n).ok())
            .and_then(|n| n.parse::<usize>().ok())
        else {
            return keys;
        };
        let first = numkeys_at + 1;
        match argv.get(first..first.saturating_add(n)) {
            Some(more) => keys.extend(more),
            None => return Vec::new(),
        }
        keys
    }
}

/// A command line resolved against the command table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved {
    /// The command to run (a subcommand's for container commands).
    pub(crate) spec: &'static CommandMeta,
    /// Index of the first argument after the command (and subcommand) name.
    pub(crate) first_arg: usize,
    /// The container command for a subcommand (`client` for `CLIENT LIST`).
    pub(crate) parent: Option<&'static CommandMeta>,
    /// Its index in the table: per-command statistics are kept by it, and the command table
    /// finds the handler by it.
    pub(crate) stat: u32,
}

impl Resolved {
    /// The command's name when it is a top-level command, `""` for a subcommand (so a
    /// subcommand named like a command, `CLIENT PAUSE`'s `pause`, never matches one).
    pub(crate) fn top_name(&self) -> &'static str {
        if self.first_arg > 1 {
            ""
        } else {
            self.spec.name
        }
    }
}

/// The keys a command's explicit key specifications find, in their order (Redis 7's
/// `getKeysUsingKeySpecs`, which it prefers to a command's own key finder): an index, or the
/// argument after a keyword searched from `startfrom` up to, not including, the last argument;
/// a keyword not found finds nothing.
fn keys_by_specs<'a>(specs: &[KeySpec], argv: &'a [Bytes]) -> Vec<&'a Bytes> {
    let argc = argv.len() as i64;
    let mut keys = Vec::new();
    for ks in specs {
        let first = match ks.begin {
            BeginSearch::Index(index) => i64::from(index),
            BeginSearch::Keyword { keyword, startfrom } => {
                let start = i64::from(startfrom);
                let (start, end) = if start > 0 {
                    (start, argc - 1)
                } else {
                    (argc + start, 0)
                };
                let step = if start <= end { 1 } else { -1 };
                let mut found = None;
                let mut i = start;
                while i != end && (1..argc).contains(&i) {
                    let matched = usize::try_from(i)
                        .ok()
                        .and_then(|i| argv.get(i))
                        // `strcasecmp`: the argument up to a NUL byte.
                        .and_then(|a| a.split(|&b| b == 0).next())
                        .is_some_and(|a| a.eq_ignore_ascii_case(keyword.as_bytes()));
                    if matched {
                        found = Some(i + 1);
                        break;
                    }
                    i += step;
                }
                match found {
                    Some(first) => first,
                    None => continue,
                }
            }
        };
        let (lastkey, keystep, _) = ks.range;
        let last = if lastkey >= 0 {
            first + i64::from(lastkey)
        } else {
            argc + i64::from(lastkey)
        };
        if last >= argc || last < first || first >= argc {
            // An invalid spec: Redis falls back to the command's key finder, which agrees
            // for every spec we have.
            continue;
        }
        let mut i = first;
        while i <= last {
            if let Some(key) = usize::try_from(i).ok().and_then(|i| argv.get(i)) {
                keys.push(key);
            }
            i += i64::from(keystep.max(1));
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arity_and_key_positions_follow_redis() {
        let mset = CommandMeta {
            first_key: 1,
            last_key: -1,
            step: 2,
            ..CommandMeta::new("mset", -3)
        };
        assert!(mset.arity_ok(3) && mset.arity_ok(5) && !mset.arity_ok(2));
        assert_eq!(mset.key_indexes(5), [1, 3]);
        let get = CommandMeta {
            first_key: 1,
            last_key: 1,
            step: 1,
            flags: flags::READONLY,
            ..CommandMeta::new("get", 2)
        };
        assert!(get.arity_ok(2) && !get.arity_ok(3));
        assert_eq!(get.key_indexes(2), [1]);
        assert!(get.has(flags::READONLY) && !get.has(flags::WRITE));
        assert!(CommandMeta::new("ping", -1).key_indexes(3).is_empty());
    }
}
