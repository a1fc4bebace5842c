//! One ACL selector (Redis's `aclSelector`): the commands it allows (a bitmap by command id,
//! plus first arguments of otherwise blocked commands), its key patterns with their read/write
//! permissions, and its channel patterns; the rules that change it (`+get`, `~key*`, `&chan`,
//! ...), how it checks a command line, and how it describes itself back as rules.

use super::{Catalog, SetError};
use crate::command_acl::{self, ChannelUse};
use crate::command_meta::CommandMeta;
use crate::glob::glob_match;
use bytes::Bytes;
use std::collections::BTreeMap;

/// Words of the command bitmap: ids below 1023; the last bit says "future commands" (set only
/// by `+@all`/`allcommands`, as Redis's reserved bit).
pub(super) const WORDS: usize = 16;
/// The reserved bit.
const FUTURE_BIT: u32 = (WORDS as u32) * 64 - 1;

/// The user's first selector, the one rules outside parentheses change.
pub(super) const ROOT: u8 = 1;
/// `allkeys` / `~*`.
pub(super) const ALLKEYS: u8 = 1 << 1;
/// `allchannels` / `&*`.
pub(super) const ALLCHANNELS: u8 = 1 << 2;
/// `allcommands` / `+@all`, and no command removed since.
pub(super) const ALLCOMMANDS: u8 = 1 << 3;

/// `%R~`: the keys may be read.
pub(super) const READ: u8 = 1;
/// `%W~`: the keys may be written.
pub(super) const WRITE: u8 = 2;

/// Why a command line is refused, in Redis's order of relevance (`ACL_DENIED_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Denied {
    /// The command (or subcommand) is not allowed.
    Command,
    /// The key at this argument index is not allowed.
    Key(usize),
    /// The channel at this argument index is not allowed.
    Channel(usize),
}

impl Denied {
    /// Redis's ranking (`ACL_DENIED_CMD` 1, `KEY` 2, `CHANNEL` 4) and the argument index.
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }
}

/// The command line being checked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<'a> {
    /// The command's id ([`Catalog`]).
    pub(crate) id: u32,
    /// Its description (its keys are found by it).
    pub(crate) spec: &'a CommandMeta,
    /// Its full name (`config|get`).
    pub(crate) fullname: &'a str,
    /// `no_auth` commands (`AUTH`, `HELLO`) are never refused for the command itself.
    pub(crate) no_auth: bool,
    /// A subcommand: its first argument is the one after the subcommand's name.
    pub(crate) is_sub: bool,
    /// The arguments, the command's name first.
    pub(crate) argv: &'a [Bytes],
}

/// The keys of a line, found once for all the selectors checked.
#[derive(Debug, Default)]
pub(super) struct KeyCache(Option<Vec<(usize, u16)>>);

impl KeyCache {
    fn get(&mut self, line: &Line<'_>) -> &[(usize, u16)] {
        self.0
            .get_or_insert_with(|| line.spec.keys(line.argv, false))
    }
}

/// One key pattern and what it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct KeyPattern {
    pub(super) pattern: Bytes,
    pub(super) perms: u8,
}

/// An ACL selector.
#[derive(Debug, Clone)]
pub(crate) struct Selector {
    pub(super) flags: u8,
    allowed: [u64; WORDS],
    /// Allowed first arguments of commands otherwise blocked (`+select|0`), by command id.
    firstargs: BTreeMap<u32, Vec<Bytes>>,
    pub(super) patterns: Vec<KeyPattern>,
    pub(super) channels: Vec<Bytes>,
}

impl Selector {
    /// An empty selector (no commands, keys or channels) with `flags`, plus `allchannels`
    /// when `acl-pubsub-default` says so (Redis's `ACLCreateSelector`).
    pub(super) fn new(flags: u8, all_channels_default: bool) -> Self {
        Selector {
            flags: flags | if all_channels_default { ALLCHANNELS } else { 0 },
            allowed: [0; WORDS],
            firstargs: BTreeMap::new(),
            patterns: Vec::new(),
            channels: Vec::new(),
        }
    }

    /// Whether every command, key and channel is allowed (the permission check's fast path).
    pub(super) fn unrestricted(&self) -> bool {
        self.flags & (ALLKEYS | ALLCHANNELS | ALLCOMMANDS) == ALLKEYS | ALLCHANNELS | ALLCOMMANDS
    }

    fn bit(&self, id: u32) -> bool {
        let (word, bit) = (id as usize / 64, id % 64);
        self.allowed.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    fn set_bit(&mut self, id: u32, on: bool) {
        let (word, bit) = (id as usize / 64, id % 64);
        if let Some(w) = self.allowed.get_mut(word) {
            if on {
                *w |= 1 << bit;
            } else {
                *w &= !(1 << bit);
                self.flags &= !ALLCOMMANDS;
            }
        }
    }

    /// Redis's `ACLChangeSelectorPerm`: a command and its subcommands.
    fn change_perm(&mut self, catalog: &Catalog, index: usize, on: bool) {
        let Some(entry) = catalog.entries.get(index) else {
            return;
        };
        self.set_bit(entry.id, on);
        self.firstargs.remove(&entry.id);
        for &sub in &entry.subs {
            if let Some(s) = catalog.entries.get(sub) {
                self.set_bit(s.id, on);
            }
        }
    }

    /// `+@cat` / `-@cat` over every command and subcommand in category bit `cat`.
    fn change_category(&mut self, catalog: &Catalog, cat: u32, on: bool) {
        for &top in &catalog.top {
            let Some(entry) = catalog.entries.get(top) else {
                continue;
            };
            if entry.categories & cat != 0 {
                self.change_perm(catalog, top, on);
            }
            for &sub in &entry.subs {
                if catalog
                    .entries
                    .get(sub)
                    .is_some_and(|s| s.categories & cat != 0)
                {
                    self.change_perm(catalog, sub, on);
                }
            }
        }
    }

    /// Commands in category `cat` this selector allows and does not.
    fn count_category(&self, catalog: &Catalog, cat: u32) -> (u32, u32) {
        let (mut on, mut off) = (0, 0);
        for entry in &catalog.entries {
            if entry.categories & cat != 0 {
                if self.bit(entry.id) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    fn all_commands(&mut self, on: bool) {
        self.allowed = [if on { u64::MAX } else { 0 }; WORDS];
        if on {
            self.flags |= ALLCOMMANDS;
        } else {
            self.flags &= !ALLCOMMANDS;
        }
        self.firstargs.clear();
    }

    /// Applies one rule (Redis's `ACLSetSelector`).
    pub(super) fn apply(&mut self, catalog: &Catalog, op: &[u8]) -> Result<(), SetError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if is("allkeys") || is("~*") {
            self.flags |= ALLKEYS;
            self.patterns.clear();
        } else if is("resetkeys") {
            self.flags &= !ALLKEYS;
            self.patterns.clear();
        } else if is("allchannels") || is("&*") {
            self.flags |= ALLCHANNELS;
            self.channels.clear();
        } else if is("resetchannels") {
            self.flags &= !ALLCHANNELS;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.all_commands(true);
        } else if is("nocommands") || is("-@all") {
            self.all_commands(false);
        } else if let Some(&first @ (b'~' | b'%')) = op.first() {
            self.add_key_pattern(first, op)?;
        } else if let Some(pattern) = op.strip_prefix(b"&") {
            if self.flags & ALLCHANNELS != 0 {
                return Err(SetError::ChannelAfterAll);
            }
            if has_spaces(pattern) {
                return Err(SetError::Syntax);
            }
            if !self.channels.iter().any(|c| c[..] == *pattern) {
                self.channels.push(Bytes::copy_from_slice(pattern));
            }
            self.flags &= !ALLCHANNELS;
        } else if let Some(cat) = op.strip_prefix(b"+@").or_else(|| op.strip_prefix(b"-@")) {
            let bit = command_acl::category_bit(cat).ok_or(SetError::Unknown)?;
            self.change_category(catalog, bit, op.first() == Some(&b'+'));
        } else if let Some(name) = op.strip_prefix(b"+") {
            self.allow_command(catalog, name)?;
        } else if let Some(name) = op.strip_prefix(b"-") {
            let index = catalog.find(name).ok_or(SetError::Unknown)?;
            self.change_perm(catalog, index, false);
        } else {
            return Err(SetError::Syntax);
        }
        Ok(())
    }

    /// `~pattern`, `%R~pattern`, `%W~pattern`, `%RW~pattern`.
    fn add_key_pattern(&mut self, first: u8, op: &[u8]) -> Result<(), SetError> {
        if self.flags & ALLKEYS != 0 {
            return Err(SetError::KeyAfterAll);
        }
        let mut perms = 0;
        let mut offset = 1;
        if first == b'%' {
            // As Redis 7.0.15 (with the CVE-2024-31227 fix) reads it: R and W at most once
            // each, then `~` and the pattern; the pattern may be empty and its `~` left out
            // (`%R` is `%R~`), but a rule with no permission (`%~x`) or another letter is a
            // syntax error.
            loop {
                match op.get(offset).map(u8::to_ascii_uppercase) {
                    Some(b'R') if perms & READ == 0 => perms |= READ,
                    Some(b'W') if perms & WRITE == 0 => perms |= WRITE,
                    Some(b'~') => {
                        offset += 1;
                        break;
                    }
                    None => break,
                    _ => return Err(SetError::Syntax),
                }
                offset += 1;
            }
            if perms == 0 {
                return Err(SetError::Syntax);
            }
        } else {
            perms = READ | WRITE;
        }
        let pattern = op.get(offset..).unwrap_or_default();
        if has_spaces(pattern) {
            return Err(SetError::Syntax);
        }
        match self.patterns.iter_mut().find(|p| p.pattern[..] == *pattern) {
            Some(existing) => existing.perms |= perms,
            None => self.patterns.push(KeyPattern {
                pattern: Bytes::copy_from_slice(pattern),
                perms,
            }),
        }
        self.flags &= !ALLKEYS;
        Ok(())
    }

    /// `+command`, `+container|sub`, `+command|firstarg`.
    fn allow_command(&mut self, catalog: &Catalog, name: &[u8]) -> Result<(), SetError> {
        let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
            let index = catalog.find(name).ok_or(SetError::Unknown)?;
            self.change_perm(catalog, index, true);
            return Ok(());
        };
        let (command, sub) = (&name[..bar], &name[bar + 1..]);
        let index = catalog.find(command).ok_or(SetError::Unknown)?;
        let entry = catalog.entries.get(index).ok_or(SetError::Unknown)?;
        if entry.is_sub {
            return Err(SetError::FirstArgOfSubcommand);
        }
        if sub.is_empty() {
            return Err(SetError::Syntax);
        }
        if !entry.subs.is_empty() {
            let index = catalog.find(name).ok_or(SetError::Unknown)?;
            self.change_perm(catalog, index, true);
        } else {
            // SELECT|0, DEBUG|OBJECT: an allowed first argument of an otherwise blocked
            // command (deprecated in Redis, still honoured).
            tracing::warn!(
                "Deprecation warning: Allowing a first arg of an otherwise blocked command is a \
                 misuse of ACL and may get disabled in the future (offender: +{})",
                String::from_utf8_lossy(name)
            );
            let list = self.firstargs.entry(entry.id).or_default();
            if !list.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                list.push(Bytes::copy_from_slice(sub));
            }
        }
        Ok(())
    }

    /// Redis's `ACLSelectorCheckCmd`.
    pub(super) fn check(&self, line: &Line<'_>, keys: &mut KeyCache) -> Result<(), Denied> {
        if self.flags & ALLCOMMANDS == 0 && !line.no_auth && !self.bit(line.id) {
            let at = if line.is_sub { 2 } else { 1 };
            let first = line.argv.get(at);
            let allowed = match (self.firstargs.get(&line.id), first) {
                (Some(list), Some(first)) => list.iter().any(|a| a.eq_ignore_ascii_case(first)),
                _ => false,
            };
            if !allowed {
                return Err(Denied::Command);
            }
        }
        if self.flags & ALLKEYS == 0 && line.spec.has_keys() {
            for &(at, flags) in keys.get(line) {
                let key = line.argv.get(at).map_or(&[][..], |k| &k[..]);
                if !self.key_allowed(key, flags) {
                    return Err(Denied::Key(at));
                }
            }
        }
        if self.flags & ALLCHANNELS == 0 && command_acl::has_channels(line.fullname) {
            for (at, kind) in command_acl::acl_channels(line.fullname, line.argv) {
                let channel = line.argv.get(at).map_or(&[][..], |c| &c[..]);
                let pattern = kind == ChannelUse::SubscribePattern;
                if !channel_allowed(&self.channels, channel, pattern) {
                    return Err(Denied::Channel(at));
                }
            }
        }
        Ok(())
    }

    /// Redis's `ACLSelectorCheckKey`: a pattern with the permissions the key's flags need.
    pub(super) fn key_allowed(&self, key: &[u8], flags: u16) -> bool {
        if self.flags & ALLKEYS != 0 {
            return true;
        }
        let needed = key_perms(flags);
        self.patterns
            .iter()
            .any(|p| p.perms & needed == needed && glob_match(&p.pattern, key, false))
    }

    /// Redis's `ACLSelectorHasUnrestrictedKeyAccess` for reads (`SORT ... BY/GET`).
    pub(super) fn reads_every_key(&self) -> bool {
        self.flags & ALLKEYS != 0
            || self
                .patterns
                .iter()
                .any(|p| p.perms & READ == READ && p.pattern[..] == b"*"[..])
    }

    /// The command rules as Redis writes them (`ACLDescribeSelectorCommandRules`): `+@all` or
    /// `-@all`, the categories that fit best, then single commands.
    pub(super) fn describe_commands(&self, catalog: &Catalog) -> String {
        let mut rules = String::new();
        let mut fake = Selector::new(0, false);
        let additive = !self.bit(FUTURE_BIT);
        if additive {
            rules.push_str("-@all ");
            fake.all_commands(false);
        } else {
            rules.push_str("+@all ");
            fake.all_commands(true);
        }
        let mut temp = Selector::new(0, false);
        temp.allowed = self.allowed;
        let mut applied = [false; command_acl::CATEGORIES.len()];
        loop {
            let mut best = None;
            let (mut min_diff, mut max_same) = (u32::MAX, 0);
            for (j, done) in applied.iter().enumerate() {
                if *done {
                    continue;
                }
                let (on, off) = temp.count_category(catalog, 1 << j);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                    best = Some(j);
                    min_diff = diff;
                    max_same = same;
                }
            }
            let Some(j) = best else { break };
            let name = command_acl::CATEGORIES.get(j).copied().unwrap_or_default();
            fake.change_category(catalog, 1 << j, additive);
            temp.change_category(catalog, 1 << j, !additive);
            rules.push_str(if additive { "+@" } else { "-@" });
            rules.push_str(name);
            rules.push(' ');
            if let Some(done) = applied.get_mut(j) {
                *done = true;
            }
        }
        for &top in &catalog.top {
            self.describe_single(catalog, &mut fake, top, &mut rules);
        }
        rules.pop();
        rules
    }

    /// One command (then its subcommands) of the final pass of [`Self::describe_commands`].
    fn describe_single(
        &self,
        catalog: &Catalog,
        fake: &mut Selector,
        index: usize,
        out: &mut String,
    ) {
        let Some(entry) = catalog.entries.get(index) else {
            return;
        };
        let on = self.bit(entry.id);
        if on != fake.bit(entry.id) {
            out.push(if on { '+' } else { '-' });
            out.push_str(&entry.fullname);
            out.push(' ');
            fake.change_perm(catalog, index, on);
        }
        for &sub in &entry.subs {
            self.describe_single(catalog, fake, sub, out);
        }
        if !on {
            for arg in self.firstargs.get(&entry.id).into_iter().flatten() {
                out.push('+');
                out.push_str(&entry.fullname);
                out.push('|');
                out.push_str(&String::from_utf8_lossy(arg));
                out.push(' ');
            }
        }
    }

    /// The key patterns as `ACL GETUSER` shows them (`~*`, or `%R~a ~b`).
    pub(super) fn describe_keys(&self) -> String {
        if self.flags & ALLKEYS != 0 {
            return "~*".into();
        }
        let parts: Vec<String> = self.patterns.iter().map(pattern_rule).collect();
        parts.join(" ")
    }

    /// The channel patterns as `ACL GETUSER` shows them (`&*`, or `&a &b`).
    pub(super) fn describe_channels(&self) -> String {
        if self.flags & ALLCHANNELS != 0 {
            return "&*".into();
        }
        let parts: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        parts.join(" ")
    }

    /// The whole selector as rules (`ACLDescribeSelector`), as `ACL LIST` shows it.
    pub(super) fn describe(&self, catalog: &Catalog) -> String {
        let mut out = String::new();
        if self.flags & ALLKEYS != 0 {
            out.push_str("~* ");
        } else {
            for p in &self.patterns {
                out.push_str(&pattern_rule(p));
                out.push(' ');
            }
        }
        if self.flags & ALLCHANNELS != 0 {
            out.push_str("&* ");
        } else {
            out.push_str("resetchannels ");
            for c in &self.channels {
                out.push('&');
                out.push_str(&String::from_utf8_lossy(c));
                out.push(' ');
            }
        }
        out.push_str(&self.describe_commands(catalog));
        out
    }
}

/// `~p`, `%R~p` or `%W~p`.
fn pattern_rule(p: &KeyPattern) -> String {
    let prefix = match p.perms {
        READ => "%R~",
        WRITE => "%W~",
        _ => "~",
    };
    format!("{prefix}{}", String::from_utf8_lossy(&p.pattern))
}

/// The permissions a key with specification flags `flags` needs.
fn key_perms(flags: u16) -> u8 {
    let mut perms = 0;
    if command_acl::reads(flags) {
        perms |= READ;
    }
    if command_acl::writes(flags) {
        perms |= WRITE;
    }
    perms
}

/// Redis's `ACLCheckChannelAgainstList`: a channel is matched against the patterns; a
/// subscribed pattern (`PSUBSCRIBE`) only equals one literally.
pub(super) fn channel_allowed(list: &[Bytes], channel: &[u8], is_pattern: bool) -> bool {
    list.iter().any(|p| {
        if is_pattern {
            p[..] == *channel
        } else {
            glob_match(p, channel, false)
        }
    })
}

/// Redis's `ACLStringHasSpaces`: whitespace or NUL.
pub(super) fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c == 0 || c == b' ' || (b'\t'..=b'\r').contains(&c))
}

/// Picks the refusal to report from several selectors' (Redis's `relevant_error`): the most
/// relevant kind, then the latest argument.
pub(super) fn more_relevant(a: Denied, b: Denied) -> Denied {
    if b.rank() > a.rank() {
        b
    } else {
        a
    }
}
