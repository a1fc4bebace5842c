//! What the server knows about a command apart from how to run it ([`CommandMeta`]: name,
//! arity, flags, key positions, ACL categories, key specifications, and the reference's own
//! description it was read from), the one key finder every part asks for a command line's
//! keys ([`CommandMeta::keys`]: cluster routing, client tracking, ACL key permissions,
//! `COMMAND GETKEYS`), and a command line resolved against the table ([`Resolved`]). The node
//! state below the command layer (statistics, the MULTI queue, cluster routing, protected
//! commands) needs only this; the handlers live with the command table in `cmd`, which maps a
//! [`Resolved`] back to its handler.

use crate::command_acl::{key, CATEGORIES};
use crate::flags;
use crate::redis_table::{map_get, Described};
use bytes::Bytes;
use locksmith_resp::Frame;

/// A command's description: everything but its handler, read from the reference's
/// `COMMAND INFO` entry ([`CommandMeta::describe`]).
#[derive(Debug)]
pub(crate) struct CommandMeta {
    /// Lowercase name (a subcommand's without its container: `get` for `config|get`).
    pub(crate) name: &'static str,
    /// Redis arity: N = exactly N arguments (name included), -N = at least N.
    pub(crate) arity: i32,
    /// [`crate::flags`] bits: the description's, and the few of ours it does not carry.
    pub(crate) flags: u32,
    /// Index of the first key (0 = no keys; the rest of the legacy key positions is in the
    /// description, the keys are found by [`CommandMeta::keys`]).
    pub(crate) first_key: i32,
    /// ACL categories: bit `i` is [`CATEGORIES`]`[i]`.
    pub(crate) categories: u32,
    /// Redis 7's key specifications, in the description's order.
    pub(crate) key_specs: Box<[KeySpec]>,
    /// The description itself (`COMMAND INFO` and `COMMAND DOCS` answer with it).
    pub(crate) described: &'static Described,
}

/// One key specification (Redis 7's `keySpec`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeySpec {
    /// Its flags ([`crate::command_acl::key`] bits).
    pub(crate) flags: u16,
    /// Where the search for the keys starts.
    pub(crate) begin: BeginSearch,
    /// How the keys are found from there.
    pub(crate) find: FindKeys,
}

/// Where a key specification's search starts (`begin_search`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BeginSearch {
    /// At this argument index.
    Index(i32),
    /// After `keyword`, searched from argument `startfrom` on (negative: from the end,
    /// backwards).
    Keyword {
        /// The keyword, as Redis spells it (`STORE`).
        keyword: Box<str>,
        /// Where the search starts.
        startfrom: i32,
    },
    /// Left to the command's own key finder.
    Unknown,
}

/// How a key specification finds its keys once the search began (`find_keys`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FindKeys {
    /// A range: the last key relative to the first (negative: from the end), the step, and
    /// for a negative last key a limit (the keys are `1/limit` of what remains).
    Range {
        /// The last key.
        lastkey: i32,
        /// The step between keys.
        keystep: i32,
        /// The limit.
        limit: i32,
    },
    /// A count of keys: where it is (relative to the start), the first key after the start,
    /// the step.
    Keynum {
        /// Where the count is.
        keynumidx: i32,
        /// The first key.
        firstkey: i32,
        /// The step between keys.
        keystep: i32,
    },
    /// Left to the command's own key finder.
    Unknown,
}

impl CommandMeta {
    /// The command `name` as `described` (its `COMMAND INFO` entry: arity, flags, key
    /// positions, ACL categories, key specifications) says, with `extra_flags` of ours added
    /// (see [`crate::flags::RUNS_SCRIPT`]). `None` if the entry does not have that shape.
    pub(crate) fn describe(
        name: &'static str,
        described: &'static Described,
        extra_flags: u32,
    ) -> Option<CommandMeta> {
        let Frame::Array(fields) = &described.info else {
            return None;
        };
        let int = |i: usize| match fields.get(i) {
            Some(Frame::Integer(n)) => i32::try_from(*n).ok(),
            _ => None,
        };
        let flags = words(fields.get(2))
            .filter_map(|w| flags::NAMES.iter().find(|(_, n)| n.as_bytes() == w))
            .fold(extra_flags, |all, (bit, _)| all | bit);
        let categories = words(fields.get(6))
            .filter_map(|w| w.strip_prefix(b"@"))
            .filter_map(|c| CATEGORIES.iter().position(|n| n.as_bytes() == c))
            .fold(0, |all, i| all | 1 << i);
        let key_specs = match fields.get(8) {
            Some(Frame::Set(specs) | Frame::Array(specs)) => {
                specs.iter().map(KeySpec::describe).collect::<Option<_>>()?
            }
            _ => Box::default(),
        };
        Some(CommandMeta {
            name,
            arity: int(1)?,
            flags,
            first_key: int(3)?,
            categories,
            key_specs,
            described,
        })
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

    /// Whether the command may name keys at all (Redis's `doesCommandHaveKeys`: a key
    /// specification that is not `not_key`).
    pub(crate) fn has_keys(&self) -> bool {
        self.key_specs.iter().any(|s| s.flags & key::NOT_KEY == 0)
    }

    /// The keys of `argv` (the command line, the command's name first; for a subcommand the
    /// container's name first) as (argument index, [`key`] flags), found as Redis's
    /// `getKeysFromCommandWithSpecs` finds them: by the key specifications, unless one is
    /// incomplete, invalid for these arguments or has variable flags, in which case by the
    /// command's own key finder (Redis's `getkeys_proc`). `not_keys`: include what a
    /// `not_key` specification names (a shard channel, which cluster routing hashes as a
    /// key; `GET_KEYSPEC_INCLUDE_NOT_KEYS`). A command line that is a syntax error may yield
    /// no keys: the command then fails by itself. Cluster routing, client tracking, ACL key
    /// permissions and `COMMAND GETKEYS` all find keys here.
    pub(crate) fn keys(&self, argv: &[Bytes], not_keys: bool) -> Vec<(usize, u16)> {
        let variable = self
            .key_specs
            .iter()
            .any(|s| s.flags & key::VARIABLE_FLAGS != 0);
        if !variable {
            if let Some(keys) = keys_by_specs(&self.key_specs, argv, not_keys) {
                return keys;
            }
        }
        own_finder(self.name, argv)
    }

    /// The key arguments of `argv` themselves, shard channels included ([`CommandMeta::keys`]
    /// for cluster routing and client tracking).
    pub(crate) fn keys_of<'a>(&self, argv: &'a [Bytes]) -> Vec<&'a Bytes> {
        self.keys(argv, true)
            .into_iter()
            .filter_map(|(i, _)| argv.get(i))
            .collect()
    }
}

/// The simple strings or bulks of a set or array, as bytes.
fn words(frame: Option<&Frame>) -> impl Iterator<Item = &[u8]> {
    let items: &[Frame] = match frame {
        Some(Frame::Set(items) | Frame::Array(items)) => items,
        _ => &[],
    };
    items.iter().filter_map(|f| match f {
        Frame::Simple(b) | Frame::Bulk(b) => Some(&b[..]),
        _ => None,
    })
}

impl KeySpec {
    /// One key specification as `COMMAND INFO` describes it (a map of `flags`,
    /// `begin_search` and `find_keys`); `None` for another shape.
    fn describe(frame: &Frame) -> Option<KeySpec> {
        let flags = words(map_get(frame, "flags"))
            .filter_map(|w| key::NAMES.iter().find(|(_, n)| n.as_bytes() == w))
            .fold(0, |all, (bit, _)| all | bit);
        let int = |map: Option<&Frame>, field: &str| match map.and_then(|m| map_get(m, field)) {
            Some(Frame::Integer(n)) => i32::try_from(*n).ok(),
            _ => None,
        };
        let text = |map: Option<&Frame>, field: &str| match map.and_then(|m| map_get(m, field)) {
            Some(Frame::Simple(b) | Frame::Bulk(b)) => {
                std::str::from_utf8(b).ok().map(str::to_owned)
            }
            _ => None,
        };
        let begin = map_get(frame, "begin_search");
        let begin_spec = begin.and_then(|b| map_get(b, "spec"));
        let begin = match text(begin, "type")?.as_str() {
            "index" => BeginSearch::Index(int(begin_spec, "index")?),
            "keyword" => BeginSearch::Keyword {
                keyword: text(begin_spec, "keyword")?.into(),
                startfrom: int(begin_spec, "startfrom")?,
            },
            _ => BeginSearch::Unknown,
        };
        let find = map_get(frame, "find_keys");
        let find_spec = find.and_then(|f| map_get(f, "spec"));
        let find = match text(find, "type")?.as_str() {
            "range" => FindKeys::Range {
                lastkey: int(find_spec, "lastkey")?,
                keystep: int(find_spec, "keystep")?,
                limit: int(find_spec, "limit")?,
            },
            "keynum" => FindKeys::Keynum {
                keynumidx: int(find_spec, "keynumidx")?,
                firstkey: int(find_spec, "firstkey")?,
                keystep: int(find_spec, "keystep")?,
            },
            _ => FindKeys::Unknown,
        };
        Some(KeySpec { flags, begin, find })
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
    /// The compatibility target whose table resolved it (which `stat` indexes).
    pub(crate) compat: crate::compat::Compat,
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

/// Redis's `getKeysUsingKeySpecs`; `None` when a specification is invalid or incomplete.
/// `not_keys`: include the `not_key` specifications' arguments.
fn keys_by_specs(specs: &[KeySpec], argv: &[Bytes], not_keys: bool) -> Option<Vec<(usize, u16)>> {
    let argc = argv.len() as i64;
    let mut keys = Vec::new();
    for KeySpec { flags, begin, find } in specs {
        if flags & key::NOT_KEY != 0 && !not_keys {
            continue;
        }
        let first = match begin {
            BeginSearch::Index(i) => i64::from(*i),
            BeginSearch::Keyword { keyword, startfrom } => {
                let start = i64::from(*startfrom);
                let (from, to) = if start > 0 {
                    (start, argc - 1)
                } else {
                    (argc + start, 1)
                };
                let mut found = None;
                let mut i = from;
                while i != to {
                    if i >= argc || i < 1 {
                        break;
                    }
                    // Redis compares C strings: an argument ends at its first NUL.
                    let text = arg(argv, i).split(|&b| b == 0).next().unwrap_or_default();
                    if text.eq_ignore_ascii_case(keyword.as_bytes()) {
                        found = Some(i + 1);
                        break;
                    }
                    i += if from <= to { 1 } else { -1 };
                }
                match found {
                    Some(first) => first,
                    None => continue,
                }
            }
            BeginSearch::Unknown => return None,
        };
        let (first, last, step) = match *find {
            FindKeys::Range {
                lastkey,
                keystep: step,
                limit,
            } => {
                let last = if lastkey >= 0 {
                    first + i64::from(lastkey)
                } else if limit == 0 {
                    argc + i64::from(lastkey)
                } else {
                    first + ((argc - first) / i64::from(limit) + i64::from(lastkey))
                };
                (first, last, step)
            }
            FindKeys::Keynum {
                keynumidx: numidx,
                firstkey,
                keystep: step,
            } => {
                if i64::from(numidx) >= argc {
                    return None;
                }
                let count = std::str::from_utf8(arg(argv, first + i64::from(numidx)))
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .filter(|n| *n >= 0)?;
                let first = first + i64::from(firstkey);
                (first, first + count - 1, step)
            }
            FindKeys::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            keys.push((i as usize, *flags));
            i += i64::from(step.max(1));
        }
        if flags & key::INCOMPLETE != 0 {
            return None;
        }
    }
    Some(keys)
}

/// Argument `i` of `argv` (empty past the end).
fn arg(argv: &[Bytes], i: i64) -> &[u8] {
    usize::try_from(i)
        .ok()
        .and_then(|i| argv.get(i))
        .map_or(&[][..], |a| &a[..])
}

/// The key finders of the commands whose specifications do not suffice (Redis's
/// `getkeys_proc`s: `sortGetKeys`, `migrateGetKeys`, `setGetKeys`, `bitfieldGetKeys`,
/// `genericGetKeys` for the `numkeys` commands).
fn own_finder(name: &str, argv: &[Bytes]) -> Vec<(usize, u16)> {
    use key::*;
    let argc = argv.len();
    let is = |i: usize, word: &str| {
        argv.get(i)
            .is_some_and(|a| a.eq_ignore_ascii_case(word.as_bytes()))
    };
    match name {
        "sort" => {
            let mut keys = vec![(1, RO | ACCESS)];
            let mut store = None;
            let mut i = 2;
            while i < argc {
                if is(i, "limit") {
                    i += 2;
                } else if is(i, "get") || is(i, "by") {
                    i += 1;
                } else if is(i, "store") && i + 1 < argc {
                    store = Some(i + 1);
                }
                i += 1;
            }
            keys.extend(store.map(|at| (at, OW | UPDATE)));
            keys
        }
        "sort_ro" => vec![(1, RO | ACCESS)],
        "migrate" => {
            let (mut first, mut num) = (3, 1);
            if argc > 6 {
                let mut i = 6;
                while i < argc {
                    if is(i, "keys") {
                        if argv.get(3).is_some_and(|k| !k.is_empty()) {
                            num = 0;
                        } else {
                            first = i + 1;
                            num = argc - first;
                        }
                        break;
                    }
                    if is(i, "auth") {
                        i += 1;
                    } else if is(i, "auth2") {
                        i += 2;
                    }
                    i += 1;
                }
            }
            (first..first + num)
                .filter(|&i| i < argc)
                .map(|i| (i, RW | ACCESS | DELETE))
                .collect()
        }
        "set" => {
            let get = argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get"));
            let flags = if get {
                RW | ACCESS | UPDATE
            } else {
                OW | UPDATE
            };
            vec![(1, flags)]
        }
        "bitfield" => {
            let mut readonly = true;
            let mut i = 2;
            while i < argc {
                let rem = argc - i - 1;
                if is(i, "get") && rem >= 2 {
                    i += 2;
                } else if (is(i, "set") || is(i, "incrby")) && rem >= 3 {
                    readonly = false;
                    break;
                } else if is(i, "overflow") && rem >= 1 {
                    i += 1;
                } else {
                    readonly = false;
                    break;
                }
                i += 1;
            }
            let flags = if readonly {
                RO | ACCESS
            } else {
                RW | ACCESS | UPDATE
            };
            vec![(1, flags)]
        }
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => {
            generic(argv, 0, 2, 3)
        }
        "zunionstore" | "zinterstore" | "zdiffstore" => generic(argv, 1, 2, 3),
        "zunion" | "zinter" | "zdiff" | "sintercard" | "zintercard" | "lmpop" | "zmpop" => {
            generic(argv, 0, 1, 2)
        }
        "blmpop" | "bzmpop" => generic(argv, 0, 2, 3),
        _ => Vec::new(),
    }
}

/// Redis's `genericGetKeys` (`atoi` of the count; no flags on the keys).
fn generic(argv: &[Bytes], store: usize, count_at: usize, first: usize) -> Vec<(usize, u16)> {
    let num = argv.get(count_at).map_or(0, |a| crate::args::atoi(a));
    let available = argv.len().saturating_sub(first) as i64;
    if num < 1 || num > available {
        return Vec::new();
    }
    let mut keys: Vec<(usize, u16)> = (first..first + num as usize).map(|i| (i, 0)).collect();
    if store > 0 {
        keys.push((store, 0));
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<Bytes> {
        args.iter().map(|a| Bytes::from(a.to_string())).collect()
    }

    /// The description of `name` in the server's command table source.
    fn meta(name: &'static str) -> CommandMeta {
        let described = crate::redis_table::REDIS_7_0
            .descriptions()
            .get(name)
            .expect("described");
        CommandMeta::describe(name, described, 0).expect("well formed")
    }

    #[test]
    fn arity_flags_and_categories_follow_the_description() {
        let mset = meta("mset");
        assert!(mset.arity_ok(3) && mset.arity_ok(5) && !mset.arity_ok(2));
        assert_eq!(mset.first_key, 1);
        assert_eq!(
            mset.keys(&argv(&["mset", "a", "1", "b", "2"]), false),
            [(1, key::OW | key::UPDATE), (3, key::OW | key::UPDATE)]
        );
        let get = meta("get");
        assert!(get.arity_ok(2) && !get.arity_ok(3));
        assert!(get.has(flags::READONLY | flags::FAST) && !get.has(flags::WRITE));
        let names: Vec<&str> = CATEGORIES
            .iter()
            .enumerate()
            .filter(|(i, _)| get.categories & 1 << i != 0)
            .map(|(_, c)| *c)
            .collect();
        assert_eq!(names, ["read", "string", "fast"]);
        assert!(get.has_keys() && !meta("ping").has_keys() && !meta("publish").has_keys());
        assert_eq!(
            *meta("georadius").key_specs,
            [
                KeySpec {
                    flags: key::RO | key::ACCESS,
                    begin: BeginSearch::Index(1),
                    find: FindKeys::Range {
                        lastkey: 0,
                        keystep: 1,
                        limit: 0
                    },
                },
                KeySpec {
                    flags: key::OW | key::UPDATE,
                    begin: BeginSearch::Keyword {
                        keyword: "STORE".into(),
                        startfrom: 6
                    },
                    find: FindKeys::Range {
                        lastkey: 0,
                        keystep: 1,
                        limit: 0
                    },
                },
                KeySpec {
                    flags: key::OW | key::UPDATE,
                    begin: BeginSearch::Keyword {
                        keyword: "STOREDIST".into(),
                        startfrom: 6
                    },
                    find: FindKeys::Range {
                        lastkey: 0,
                        keystep: 1,
                        limit: 0
                    },
                },
            ]
        );
    }

    #[test]
    fn keys_follow_specs_and_fallbacks() {
        let keys = |name: &'static str, args: &[&str]| -> Vec<usize> {
            meta(name)
                .keys(&argv(args), false)
                .into_iter()
                .map(|(i, _)| i)
                .collect()
        };
        assert_eq!(keys("mget", &["mget", "a", "b"]), [1, 2]);
        assert_eq!(keys("mset", &["mset", "a", "1", "b", "2"]), [1, 3]);
        assert_eq!(keys("eval", &["eval", "", "1", "k"]), [3]);
        assert!(keys("eval", &["eval", "", "3", "a", "b"]).is_empty());
        assert!(keys("eval", &["eval", "", "-1", "a"]).is_empty());
        assert_eq!(keys("sort", &["sort", "a", "store", "b"]), [1, 3]);
        assert_eq!(
            keys("zunionstore", &["zunionstore", "d", "2", "a", "b"]),
            [1, 3, 4]
        );
        assert_eq!(
            keys(
                "migrate",
                &["migrate", "h", "p", "", "0", "5", "auth2", "keys", "keys", "keys", "x"]
            ),
            [10]
        );
        assert_eq!(
            keys(
                "georadius",
                &["georadius", "a", "1", "2", "3", "m", "store", "b"]
            ),
            [1, 7]
        );
        assert_eq!(
            keys("xread", &["xread", "streams", "a", "b", "0", "0"]),
            [2, 3]
        );
        let set = meta("set").keys(&argv(&["set", "k", "v", "get"]), false);
        assert!(crate::command_acl::reads(set[0].1) && crate::command_acl::writes(set[0].1));
        let exists = meta("exists").keys(&argv(&["exists", "k"]), false);
        assert!(
            !crate::command_acl::reads(exists[0].1) && !crate::command_acl::writes(exists[0].1)
        );
        // A shard channel is a key to cluster routing only.
        let spublish = argv(&["spublish", "ch", "msg"]);
        assert!(meta("spublish").keys(&spublish, false).is_empty());
        assert_eq!(meta("spublish").keys_of(&spublish), [&spublish[1]]);
    }
}
