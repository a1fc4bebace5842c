//! Redis 7.0.15's own description of its commands: the RESP3 replies of `COMMAND INFO` and
//! `COMMAND DOCS` of a real redis-server, captured by `server/tools/capture-command-table.py`
//! into `redis_table/info.resp` and `docs.resp` and embedded here. `COMMAND INFO`/`DOCS`
//! answer from them for every command the server has (so flags, ACL categories, tips, key
//! specifications and documentation are Redis's to the byte), ACL categories are read from
//! them, and a test holds the command table's own arity, flags and key positions to them.
//!
//! Redis 7.0 is distributed under the 3-clause BSD license (Copyright (c) 2006-2020,
//! Salvatore Sanfilippo); these descriptions are its `src/commands/*.json`, as the server
//! reports them.

use bytes::{Bytes, BytesMut};
use locksmith_resp::{Frame, FrameDecoder, Limits};
use std::collections::HashMap;
use std::sync::OnceLock;

static INFO: &[u8] = include_bytes!("redis_table/info.resp");
static DOCS: &[u8] = include_bytes!("redis_table/docs.resp");

/// One command (or subcommand, named `container|sub`) as redis-server describes it.
#[derive(Debug)]
pub(crate) struct Described {
    /// Its `COMMAND INFO` entry (RESP3 shapes: sets, maps).
    pub(crate) info: Frame,
    /// Its `COMMAND DOCS` map, subcommands included for a container.
    pub(crate) docs: Frame,
}

impl Described {
    /// A field of the `COMMAND INFO` entry by position.
    fn field(&self, i: usize) -> Option<&Frame> {
        match &self.info {
            Frame::Array(items) => items.get(i),
            _ => None,
        }
    }

    /// Its arity.
    #[cfg(test)]
    pub(crate) fn arity(&self) -> Option<i64> {
        match self.field(1) {
            Some(Frame::Integer(n)) => Some(*n),
            _ => None,
        }
    }

    /// Its flags (`write`, `denyoom`...).
    #[cfg(test)]
    pub(crate) fn flags(&self) -> Vec<&str> {
        words(self.field(2))
    }

    /// First key, last key and step.
    #[cfg(test)]
    pub(crate) fn key_positions(&self) -> Option<(i64, i64, i64)> {
        match (self.field(3), self.field(4), self.field(5)) {
            (Some(Frame::Integer(f)), Some(Frame::Integer(l)), Some(Frame::Integer(s))) => {
                Some((*f, *l, *s))
            }
            _ => None,
        }
    }

    /// Its ACL categories, `@` included (`@write`, `@string`...).
    pub(crate) fn acl_categories(&self) -> Vec<&str> {
        words(self.field(6))
    }

    /// Its key specifications, as `COMMAND INFO` sends them.
    pub(crate) fn key_specs(&self) -> &[Frame] {
        match self.field(8) {
            Some(Frame::Set(specs) | Frame::Array(specs)) => specs,
            _ => &[],
        }
    }
}

/// The text of the simple strings or bulks in a set or array.
fn words(frame: Option<&Frame>) -> Vec<&str> {
    let items: &[Frame] = match frame {
        Some(Frame::Set(items) | Frame::Array(items)) => items,
        _ => &[],
    };
    items
        .iter()
        .filter_map(|f| match f {
            Frame::Simple(b) | Frame::Bulk(b) => std::str::from_utf8(b).ok(),
            _ => None,
        })
        .collect()
}

/// The value of `key` in a RESP3 map.
pub(crate) fn map_get<'a>(map: &'a Frame, key: &str) -> Option<&'a Frame> {
    match map {
        Frame::Map(pairs) => pairs.iter().find_map(|(k, v)| match k {
            Frame::Simple(b) | Frame::Bulk(b) if b.as_ref() == key.as_bytes() => Some(v),
            _ => None,
        }),
        _ => None,
    }
}

/// Parses one embedded reply.
fn parse(bytes: &'static [u8]) -> Frame {
    let mut buf = BytesMut::from(bytes);
    let limits = Limits {
        max_multibulk_len: usize::MAX,
        max_bulk_len: usize::MAX,
        ..Limits::default()
    };
    // The files are checked by the tests below; a damaged one describes nothing.
    FrameDecoder::new(limits)
        .decode(&mut buf)
        .ok()
        .flatten()
        .unwrap_or(Frame::Array(Vec::new()))
}

/// The name an entry or docs key holds.
fn name_of(frame: &Frame) -> Option<String> {
    match frame {
        Frame::Bulk(b) | Frame::Simple(b) => std::str::from_utf8(b).ok().map(str::to_owned),
        _ => None,
    }
}

/// Every command and subcommand Redis 7.0.15 has, by lowercase name (`get`, `client|list`).
pub(crate) fn all() -> &'static HashMap<String, Described> {
    static TABLE: OnceLock<HashMap<String, Described>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut docs: HashMap<String, Frame> = HashMap::new();
        if let Frame::Map(pairs) = parse(DOCS) {
            for (k, v) in pairs {
                let Some(name) = name_of(&k) else { continue };
                if let Some(Frame::Map(subs)) = map_get(&v, "subcommands") {
                    for (sk, sv) in subs {
                        if let Some(sub) = name_of(sk) {
                            docs.insert(sub, sv.clone());
                        }
                    }
                }
                docs.insert(name, v);
            }
        }
        let mut table = HashMap::new();
        let mut entries: Vec<Frame> = match parse(INFO) {
            Frame::Array(items) => items,
            _ => Vec::new(),
        };
        while let Some(entry) = entries.pop() {
            if let Frame::Array(fields) = &entry {
                if let Some(Frame::Array(subs)) = fields.get(9) {
                    entries.extend(subs.iter().cloned());
                }
                if let Some(name) = fields.first().and_then(name_of) {
                    let docs = docs.remove(&name).unwrap_or(Frame::Map(Vec::new()));
                    table.insert(name, Described { info: entry, docs });
                }
            }
        }
        table
    })
}

/// Redis's description of `name` (`get`, `client|list`), if Redis 7.0 has the command.
pub(crate) fn get(name: &str) -> Option<&'static Described> {
    all().get(name)
}

/// An integer field of a RESP3 map.
fn int_at(map: &Frame, key: &str) -> Option<i64> {
    match map_get(map, key) {
        Some(Frame::Integer(n)) => Some(*n),
        _ => None,
    }
}

/// The text of a bulk or simple string field of a RESP3 map.
fn text_at<'a>(map: &'a Frame, key: &str) -> Option<&'a [u8]> {
    match map_get(map, key) {
        Some(Frame::Bulk(b) | Frame::Simple(b)) => Some(b),
        _ => None,
    }
}

/// The keys of `argv` that Redis's key specifications `specs` find (Redis 7.0's
/// `getKeysUsingKeySpecs`), each with its specification's flags, in the specifications'
/// order; `None` when a specification cannot say (an unknown search, an `incomplete` or
/// `variable_flags` one): the command's own key finder decides then, as in Redis.
pub(crate) fn keys_by_specs<'a>(
    specs: &'a [Frame],
    argv: &[Bytes],
) -> Option<Vec<(usize, Vec<&'a str>)>> {
    let argc = i64::try_from(argv.len()).ok()?;
    let mut keys = Vec::new();
    for spec in specs {
        let flags = words(map_get(spec, "flags"));
        if flags
            .iter()
            .any(|f| *f == "incomplete" || *f == "variable_flags")
        {
            return None;
        }
        let begin = map_get(spec, "begin_search")?;
        let begin_spec = map_get(begin, "spec")?;
        let first = match text_at(begin, "type")? {
            b"index" => int_at(begin_spec, "index")?,
            b"keyword" => {
                let keyword = text_at(begin_spec, "keyword")?;
                let startfrom = int_at(begin_spec, "startfrom")?;
                let (start, end) = if startfrom > 0 {
                    (startfrom, argc - 1)
                } else {
                    (argc + startfrom, 1)
                };
                let mut found = None;
                let mut i = start;
                while i != end && (1..argc).contains(&i) {
                    let arg = usize::try_from(i).ok().and_then(|i| argv.get(i))?;
                    // Redis compares C strings: an argument ends at its first NUL.
                    let arg = arg.split(|&b| b == 0).next().unwrap_or_default();
                    if arg.eq_ignore_ascii_case(keyword) {
                        found = Some(i + 1);
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                match found {
                    Some(first) => first,
                    None => continue,
                }
            }
            _ => return None,
        };
        let find = map_get(spec, "find_keys")?;
        let find_spec = map_get(find, "spec")?;
        let (first, last, step) = match text_at(find, "type")? {
            b"range" => {
                let lastkey = int_at(find_spec, "lastkey")?;
                let limit = int_at(find_spec, "limit")?;
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, int_at(find_spec, "keystep")?)
            }
            b"keynum" => {
                let at = first + int_at(find_spec, "keynumidx")?;
                let numkeys = usize::try_from(at)
                    .ok()
                    .and_then(|at| argv.get(at))
                    .and_then(|n| std::str::from_utf8(n).ok())
                    .and_then(|n| n.parse::<i64>().ok())
                    .filter(|n| *n >= 0)?;
                let first = first + int_at(find_spec, "firstkey")?;
                (first, first + numkeys - 1, int_at(find_spec, "keystep")?)
            }
            _ => return None,
        };
        let mut i = first;
        while i <= last && step > 0 {
            // Past the arguments (a variadic command's arity is checked by the command).
            if i < argc {
                keys.push((usize::try_from(i).ok()?, flags.clone()));
            }
            i += step;
        }
    }
    Some(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_redis_command_is_described() {
        let all = all();
        // Redis 7.0.15: 240 commands (what COMMAND COUNT counts) and 126 subcommands.
        assert_eq!(all.keys().filter(|n| !n.contains('|')).count(), 240);
        assert_eq!(all.len(), 366);
        let cmd = get("get").expect("GET");
        assert_eq!(cmd.arity(), Some(2));
        assert_eq!(cmd.flags(), ["readonly", "fast"]);
        assert_eq!(cmd.key_positions(), Some((1, 1, 1)));
        assert_eq!(cmd.acl_categories(), ["@read", "@string", "@fast"]);
        assert_eq!(cmd.key_specs().len(), 1);
        assert!(map_get(&cmd.docs, "summary").is_some());
        let list = get("client|list").expect("CLIENT LIST");
        assert!(list.flags().contains(&"admin"));
        assert!(map_get(&list.docs, "arguments").is_some());
    }
}
