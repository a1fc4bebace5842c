//! Redis 7.0.15's own description of its commands: the RESP3 replies of `COMMAND INFO` and
//! `COMMAND DOCS` of a real redis-server, captured by `server/tools/capture-command-table.py`
//! into `redis_table/info.resp` and `docs.resp` and embedded here. `COMMAND INFO`/`DOCS`
//! answer from them for every command the server has (so flags, ACL categories, tips, key
//! specifications and documentation are Redis's to the byte), and a test holds the command
//! table's own arity, flags and key positions to them. (What ACL checks need of the same
//! descriptions, categories and key specifications, is compiled into
//! [`crate::command_acl`]'s typed table; a test holds the two together.)
//!
//! Redis 7.0 is distributed under the 3-clause BSD license (Copyright (c) 2006-2020,
//! Salvatore Sanfilippo); these descriptions are its `src/commands/*.json`, as the server
//! reports them.

use bytes::BytesMut;
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
    #[cfg(test)]
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
    #[cfg(test)]
    pub(crate) fn acl_categories(&self) -> Vec<&str> {
        words(self.field(6))
    }

    /// Its key specifications, as `COMMAND INFO` sends them.
    #[cfg(test)]
    pub(crate) fn key_specs(&self) -> &[Frame] {
        match self.field(8) {
            Some(Frame::Set(specs) | Frame::Array(specs)) => specs,
            _ => &[],
        }
    }
}

/// The text of the simple strings or bulks in a set or array.
#[cfg(test)]
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

    /// The ACL table (categories and key specification flags compiled for the checks) says
    /// what redis-server's description says, for every command.
    #[test]
    fn the_acl_table_agrees_with_the_captured_description() {
        use crate::command_acl::{categories, key, CATEGORIES};
        for (name, described) in all() {
            let mask = categories(name).unwrap_or_else(|| panic!("{name} not in the ACL table"));
            let ours: Vec<String> = CATEGORIES
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, c)| format!("@{c}"))
                .collect();
            let mut theirs: Vec<String> = described
                .acl_categories()
                .iter()
                .map(|c| c.to_string())
                .collect();
            let mut ours = ours;
            ours.sort();
            theirs.sort();
            assert_eq!(ours, theirs, "{name}");
            for spec in described.key_specs() {
                for flag in words(map_get(spec, "flags")) {
                    assert!(
                        key::NAMES.iter().any(|(_, n)| *n == flag),
                        "{name}: unknown key flag {flag}"
                    );
                }
            }
        }
    }
}
