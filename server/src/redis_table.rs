//! The command table's source: a reference server's own description of its commands, the
//! RESP3 replies of `COMMAND INFO` and `COMMAND DOCS` captured from it by
//! `server/tools/capture-command-table.py` ([`Source`]: Redis 7.0.15's, [`REDIS_7_0`], in
//! `redis_table/info.resp` and `docs.resp`; Valkey 8.1.8's, [`VALKEY_8_1`], in
//! `redis_table/valkey-8.1/`), plus the commands of ours that the reference lacks, described
//! in the same format in `redis_table/ours.resp`. The node's compatibility target picks the
//! source ([`crate::compat::Profile::commands`]). Every command's arity, flags, key
//! positions, ACL categories and key specifications are read from it
//! ([`crate::command_meta::CommandMeta::describe`]), and `COMMAND INFO`/`DOCS` answer with it
//! (so tips and documentation are the reference's to the byte).
//!
//! Redis 7.0 is distributed under the 3-clause BSD license (Copyright (c) 2006-2020,
//! Salvatore Sanfilippo), Valkey 8.1 under the same license (Copyright (c) 2024-present,
//! Valkey contributors); these descriptions are their `src/commands/*.json`, as the servers
//! report them.

use bytes::BytesMut;
use locksmith_resp::{Frame, FrameDecoder, Limits};
use std::collections::HashMap;
use std::sync::OnceLock;

/// Redis 7.0.15's description of its commands.
pub(crate) static REDIS_7_0: Source = Source {
    info: include_bytes!("redis_table/info.resp"),
    docs: include_bytes!("redis_table/docs.resp"),
    parsed: OnceLock::new(),
};

/// The lines of `command`'s `HELP` reply in `captured` (a profile's
/// [`crate::compat::Profile::help`]: a `## NAME` line before each reply's lines), if it has
/// them.
pub(crate) fn help_of(captured: &'static str, command: &str) -> Option<Vec<&'static str>> {
    let mut lines = captured.lines();
    lines.find(|l| l.strip_prefix("## ") == Some(command))?;
    Some(lines.take_while(|l| !l.starts_with("## ")).collect())
}

/// Valkey 8.1.8's description of its commands.
pub(crate) static VALKEY_8_1: Source = Source {
    info: include_bytes!("redis_table/valkey-8.1/info.resp"),
    docs: include_bytes!("redis_table/valkey-8.1/docs.resp"),
    parsed: OnceLock::new(),
};

/// Our own commands the reference lacks (the 7.2 `CLIENT` subcommands), as a reference would
/// describe them: a `COMMAND INFO` reply followed by a `COMMAND DOCS` reply.
static OURS: &[u8] = include_bytes!("redis_table/ours.resp");

/// One captured description of a server's commands.
#[derive(Debug)]
pub(crate) struct Source {
    /// Its `COMMAND INFO` reply (RESP3).
    info: &'static [u8],
    /// Its `COMMAND DOCS` reply (RESP3).
    docs: &'static [u8],
    /// Both parsed, with ours added, by full name.
    parsed: OnceLock<HashMap<String, Described>>,
}

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

/// Parses the embedded replies in `bytes`, one after the other.
fn parse(bytes: &'static [u8]) -> Vec<Frame> {
    let mut buf = BytesMut::from(bytes);
    let limits = Limits {
        max_multibulk_len: usize::MAX,
        max_bulk_len: usize::MAX,
        ..Limits::default()
    };
    let mut decoder = FrameDecoder::new(limits);
    // The files are checked by the tests below; what does not decode describes nothing.
    let mut frames = Vec::new();
    while let Ok(Some(frame)) = decoder.decode(&mut buf) {
        frames.push(frame);
    }
    frames
}

/// The name an entry or docs key holds.
fn name_of(frame: &Frame) -> Option<String> {
    match frame {
        Frame::Bulk(b) | Frame::Simple(b) => std::str::from_utf8(b).ok().map(str::to_owned),
        _ => None,
    }
}

/// Adds to `table` every command and subcommand of a `COMMAND INFO` reply and its
/// `COMMAND DOCS` reply, by lowercase full name, unless `table` has it already.
fn add(table: &mut HashMap<String, Described>, info: Frame, docs: Frame) {
    let mut by_name: HashMap<String, Frame> = HashMap::new();
    if let Frame::Map(pairs) = docs {
        for (k, v) in pairs {
            let Some(name) = name_of(&k) else { continue };
            if let Some(Frame::Map(subs)) = map_get(&v, "subcommands") {
                for (sk, sv) in subs {
                    if let Some(sub) = name_of(sk) {
                        by_name.insert(sub, sv.clone());
                    }
                }
            }
            by_name.insert(name, v);
        }
    }
    let mut entries: Vec<Frame> = match info {
        Frame::Array(items) => items,
        _ => Vec::new(),
    };
    while let Some(entry) = entries.pop() {
        if let Frame::Array(fields) = &entry {
            if let Some(Frame::Array(subs)) = fields.get(9) {
                entries.extend(subs.iter().cloned());
            }
            if let Some(name) = fields.first().and_then(name_of) {
                let docs = by_name.remove(&name).unwrap_or(Frame::Map(Vec::new()));
                table.entry(name).or_insert(Described { info: entry, docs });
            }
        }
    }
}

impl Source {
    /// Every command and subcommand the source describes, by lowercase full name (`get`,
    /// `client|list`): the reference's, and ours that it lacks.
    pub(crate) fn descriptions(&self) -> &HashMap<String, Described> {
        self.parsed.get_or_init(|| {
            let mut table = HashMap::new();
            let first = |bytes| parse(bytes).into_iter().next().unwrap_or(Frame::Null);
            add(&mut table, first(self.info), first(self.docs));
            let mut ours = parse(OURS).into_iter();
            let (info, docs) = (ours.next(), ours.next());
            add(
                &mut table,
                info.unwrap_or(Frame::Null),
                docs.unwrap_or(Frame::Null),
            );
            table
        })
    }
}

/// Every command and subcommand of the server's source ([`REDIS_7_0`]), ours included.
#[cfg(test)]
pub(crate) fn all() -> &'static HashMap<String, Described> {
    REDIS_7_0.descriptions()
}

/// The description of `name` (`get`, `client|list`), if the source has the command.
#[cfg(test)]
pub(crate) fn get(name: &str) -> Option<&'static Described> {
    all().get(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_redis_command_is_described() {
        // Ours: the two 7.2 CLIENT subcommands, each with its documentation.
        let mut with_ours = HashMap::new();
        let mut ours = parse(OURS).into_iter();
        add(&mut with_ours, ours.next().unwrap(), ours.next().unwrap());
        let mut ours: Vec<&String> = with_ours.keys().collect();
        ours.sort();
        assert_eq!(ours, ["client|no-touch", "client|setinfo"]);
        let redis: Vec<&String> = all()
            .keys()
            .filter(|n| !with_ours.contains_key(*n))
            .collect();
        // Redis 7.0.15: 240 commands (what COMMAND COUNT counts) and 126 subcommands.
        assert_eq!(redis.iter().filter(|n| !n.contains('|')).count(), 240);
        assert_eq!(redis.len(), 366);
        let setinfo = get("client|setinfo").expect("CLIENT SETINFO");
        assert_eq!(setinfo.arity(), Some(4));
        assert!(map_get(&setinfo.docs, "arguments").is_some());
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
