//! The command table and dispatch.
//!
//! One [`CommandSpec`] per command (name, arity, flags, key positions, handler) drives lookup
//! (case-insensitive), the arity error, `COMMAND`/`COMMAND INFO`, script key checks and
//! replication. Each family module exports a `COMMANDS` table; [`table`] joins them.
//! Handlers are synchronous: they run against a [`Ctx`] under the state lock and return the
//! reply, so `MULTI`/`EXEC`, `redis.call` and replication reuse the same code.

pub(crate) mod acl;
mod bitmap;
mod client;
mod cluster;
mod command;
mod config;
mod connection;
mod debug;
#[cfg(test)]
mod effects_tests;
mod expire;
mod function;
mod geo;
mod hash;
mod hyperloglog;
mod keys;
mod latency;
mod ldouble;
mod list;
mod lolwut;
mod memory;
mod migrate;
mod module;
mod persistence;
pub(crate) mod pubsub;
pub(crate) mod replication;
mod scan;
mod script;
mod server;
mod set;
mod slowlog;
mod sort;
mod stream;
mod string;
mod transaction;
mod zset;

pub(crate) use crate::args::{
    atoi, parse_f64, parse_f64_saturating, parse_i32, parse_i64, random_count, repeated_picks,
    strtod, Args,
};
pub(crate) use crate::error::CommandError;
pub(crate) use crate::error::{lossy, CmdResult};
pub(crate) use persistence::load_at_start;
pub(crate) use script::{command_exists, command_flags as script_command_flags};

use crate::client::ClientState;
pub(crate) use crate::command_meta::{BeginSearch, CommandMeta, DocArg, KeySpec, Resolved};
use crate::db::{Db, Entry, Found, Inserted, Removed, Value};
use crate::node::{key_expired, CommandHooks, Effects, Node, State};
use bytes::Bytes;
use locksmith_resp::Frame;
use std::sync::LazyLock;

pub(crate) use crate::flags;

/// A command handler.
pub(crate) type Handler = fn(&mut Ctx<'_>, &mut Args<'_>) -> CmdResult;

/// What an `allow_busy` command does without the state lock while a script is busy
/// (`SCRIPT KILL`): it gets the node and the command line.
pub(crate) type BusyHandler = fn(&Node, &[Bytes]) -> Frame;

/// One entry of the command table: the command's description ([`CommandMeta`], which
/// `CommandSpec` derefs to) and how it runs.
#[derive(Debug)]
pub(crate) struct CommandSpec {
    /// Name, arity, flags, key positions, documentation.
    pub(crate) meta: CommandMeta,
    /// The handler (for a container, runs when no subcommand is given or matched).
    pub(crate) handler: Handler,
    /// Subcommands (`CONFIG GET`…); empty for plain commands.
    pub(crate) subcommands: &'static [CommandSpec],
    /// Run instead of `handler`, without the state lock, while a script is busy.
    pub(crate) busy_handler: Option<BusyHandler>,
}

impl std::ops::Deref for CommandSpec {
    type Target = CommandMeta;

    fn deref(&self) -> &CommandMeta {
        &self.meta
    }
}

impl CommandSpec {
    /// A plain command with no keys; chain the `keys`/`flags`/`doc` setters.
    pub(crate) const fn new(name: &'static str, arity: i32, handler: Handler) -> Self {
        CommandSpec {
            meta: CommandMeta::new(name, arity),
            handler,
            subcommands: &[],
            busy_handler: None,
        }
    }

    /// Sets explicit key specifications (see [`CommandMeta::key_specs`]).
    pub(crate) const fn key_specs(mut self, specs: &'static [KeySpec]) -> Self {
        self.meta.key_specs = specs;
        self
    }

    /// Sets the flags.
    pub(crate) const fn flags(mut self, flags: u32) -> Self {
        self.meta.flags = flags;
        self
    }

    /// Sets the key positions.
    pub(crate) const fn keys(mut self, first: i32, last: i32, step: i32) -> Self {
        self.meta.first_key = first;
        self.meta.last_key = last;
        self.meta.step = step;
        self
    }

    /// Sets the group and summary.
    pub(crate) const fn doc(mut self, group: &'static str, summary: &'static str) -> Self {
        self.meta.group = group;
        self.meta.summary = summary;
        self
    }

    /// Sets the command tips `COMMAND INFO` shows.
    pub(crate) const fn tips(mut self, tips: &'static [&'static str]) -> Self {
        self.meta.tips = tips;
        self
    }

    /// Sets the key specification's flags (when not the ones the read/write flags imply).
    pub(crate) const fn key_flags(mut self, flags: &'static [&'static str]) -> Self {
        self.meta.key_flags = flags;
        self
    }

    /// Sets the version that added the command and its complexity (`COMMAND DOCS`).
    pub(crate) const fn since(mut self, since: &'static str, complexity: &'static str) -> Self {
        self.meta.since = since;
        self.meta.complexity = complexity;
        self
    }

    /// Sets the history of changes (`COMMAND DOCS`).
    pub(crate) const fn history(
        mut self,
        history: &'static [(&'static str, &'static str)],
    ) -> Self {
        self.meta.history = history;
        self
    }

    /// Sets the documented arguments (`COMMAND DOCS`).
    pub(crate) const fn args(mut self, arguments: &'static [DocArg]) -> Self {
        self.meta.arguments = arguments;
        self
    }

    /// Sets the handler used while a script is busy (`allow_busy` commands).
    pub(crate) const fn busy(mut self, handler: BusyHandler) -> Self {
        self.busy_handler = Some(handler);
        self
    }

    /// Sets the subcommands.
    pub(crate) const fn subs(mut self, subs: &'static [CommandSpec]) -> Self {
        self.subcommands = subs;
        self
    }
}

/// Every command family's table.
fn families() -> [&'static [CommandSpec]; 29] {
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
/// fixed at compile time and a probe ends with an exact name comparison, so a client cannot
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
}

impl Table {
    fn build() -> Table {
        let count = families().iter().map(|f| f.len()).sum::<usize>();
        let size = (count * 2).next_power_of_two().max(16);
        let mut slots: Vec<Option<&'static CommandSpec>> = vec![None; size];
        for spec in families().into_iter().flatten() {
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

static TABLE: LazyLock<Table> = LazyLock::new(Table::build);

/// Every top-level command, in no particular order.
pub(crate) fn table() -> &'static [&'static CommandSpec] {
    &TABLE.specs
}

/// The command `resolved` names, with its handler.
pub(crate) fn spec_of(resolved: &Resolved) -> Option<&'static CommandSpec> {
    TABLE
        .by_stat
        .get(usize::try_from(resolved.stat).ok()?)
        .copied()
        .flatten()
}

/// Looks a command up by name, ignoring ASCII case (no allocation: names longer than any
/// command are unknown).
pub(crate) fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    lookup_slot(name).map(|(spec, _)| spec)
}

/// [`lookup`], with the command's slot in the table.
fn lookup_slot(name: &[u8]) -> Option<(&'static CommandSpec, usize)> {
    let mut buf = [0u8; 32];
    let lower = buf.get_mut(..name.len())?;
    let mut hash = FNV_OFFSET;
    for (l, b) in lower.iter_mut().zip(name) {
        *l = b.to_ascii_lowercase();
        hash = (hash ^ u64::from(*l)).wrapping_mul(FNV_PRIME);
    }
    TABLE.find(hash, lower)
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

    /// [`lookup_slot`] through the cache.
    fn lookup_slot(&mut self, name: &[u8]) -> Option<(&'static CommandSpec, usize)> {
        if let Some(found) = self.found {
            if self.name.get(..self.len) == Some(name) {
                return Some(found);
            }
        }
        let found = lookup_slot(name)?;
        if let Some(slot) = self.name.get_mut(..name.len()) {
            slot.copy_from_slice(name);
            self.len = name.len();
            self.found = Some(found);
        }
        Some(found)
    }
}

/// Looks up the spec `argv` names: the subcommand's spec for a container command.
///
/// # Errors
///
/// Unknown command or subcommand, or the arity check failing, with Redis's texts.
pub(crate) fn resolve(argv: &[Bytes]) -> Result<Resolved, CommandError> {
    resolve_with(argv, lookup_slot)
}

/// [`resolve`], the name looked up through the client's `cache`.
///
/// # Errors
///
/// As [`resolve`].
pub(crate) fn resolve_cached(
    argv: &[Bytes],
    cache: &mut NameCache,
) -> Result<Resolved, CommandError> {
    resolve_with(argv, |name| cache.lookup_slot(name))
}

/// [`resolve`] with the name looked up by `lookup`.
#[inline]
fn resolve_with(
    argv: &[Bytes],
    lookup: impl FnOnce(&[u8]) -> Option<(&'static CommandSpec, usize)>,
) -> Result<Resolved, CommandError> {
    // Not `ok_or`: the eager error would go through `CommandError`'s drop glue every call.
    let Some(name) = argv.first() else {
        return Err(CommandError::Syntax);
    };
    let (spec, slot) = lookup(name).ok_or_else(|| CommandError::unknown_command(argv))?;
    resolve_found(argv, spec, slot)
}

/// The rest of [`resolve`] once the name was found at `slot`: the subcommand and the arity.
fn resolve_found(
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
                stat: TABLE.stat(slot, Some(p)),
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
        stat: TABLE.stat(slot, None),
    })
}

/// The spec `argv` names, whatever its arity (to count a call refused for its arity).
pub(crate) fn resolve_name(argv: &[Bytes]) -> Option<Resolved> {
    let (spec, slot) = lookup_slot(argv.first()?)?;
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
            stat: TABLE.stat(slot, Some(p)),
        });
    }
    Some(Resolved {
        spec: &spec.meta,
        first_arg: 1,
        parent: None,
        stat: TABLE.stat(slot, None),
    })
}

/// A bulk string copied from `s` (names and values the server formats).
pub(crate) fn bulk_str(s: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

/// Keys up to this long are copied rather than shared when recorded ([`recorded_key`]).
const SHORT_KEY: usize = 64;

/// `key` as [`Effects::modified`] records it: a short key is copied, since the first reference
/// to a request's argument costs an allocation and atomic operations, where a copy of a few
/// bytes costs neither; a long one is shared.
fn recorded_key(key: &Bytes) -> Bytes {
    if key.len() <= SHORT_KEY {
        Bytes::copy_from_slice(key)
    } else {
        key.clone()
    }
}

/// Everything a handler may touch while it runs.
pub(crate) struct Ctx<'a> {
    /// The keyspace and mutable server state.
    pub(crate) state: &'a mut State,
    /// The node (clock, clients, lock-free parts).
    pub(crate) node: &'a Node,
    /// The calling client.
    pub(crate) client: &'a mut ClientState,
    /// Node-clock ms at the start of the command (frozen for a script, as Redis 7 does).
    pub(crate) now: u64,
    /// Side effects to apply after the command.
    pub(crate) effects: &'a mut Effects,
    /// Whether the command is a write command: its lookups are then Redis's `lookupKeyWrite`
    /// (no keyspace hit or miss, no `keymiss`) unless it reads a key with
    /// [`Ctx::lookup_read`], as Redis's write commands read their sources.
    pub(crate) write: bool,
}

impl Ctx<'_> {
    /// The selected database.
    pub(crate) fn db(&mut self) -> &mut Db {
        let index = self.client.db;
        // The selected index is always validated by SELECT/SWAPDB against `databases`.
        &mut self.state.dbs[index]
    }

    /// Finds `key` in the selected db, hashing it once: a live entry (its access time touched
    /// if `touch`, as Redis's lookups do unless `LOOKUP_NOTOUCH`), or nothing, after
    /// reclaiming the key with the expiry side effects if its TTL ran out. A read command's
    /// lookup (Redis's `lookupKeyRead`) counts a keyspace hit or miss and raises `keymiss` on
    /// a miss; a write command's (`lookupKeyWrite`) does neither.
    pub(crate) fn find(&mut self, key: &Bytes, touch: bool) -> Option<&mut Entry> {
        self.find_for(key, touch, !self.write, true)
    }

    /// A write command's read of a source key (Redis's `lookupKeyRead` in `SET .. GET`,
    /// `GETDEL`, `COPY`, the `*STORE` commands): counted and notified as a read command's.
    pub(crate) fn lookup_read(&mut self, key: &Bytes) -> Option<&Entry> {
        self.find_read(key).map(|e| &*e)
    }

    /// [`Ctx::lookup_read`], for changing the entry (`XACK` and `XCLAIM` read their stream
    /// with Redis's `lookupKeyRead`).
    pub(crate) fn find_read(&mut self, key: &Bytes) -> Option<&mut Entry> {
        self.find_for(key, true, true, true)
    }

    /// A read command's write of `key` (`PFCOUNT` caching the count in the value, Redis's
    /// `lookupKeyWrite` there): not counted, no `keymiss`.
    pub(crate) fn lookup_write(&mut self, key: &Bytes) -> Option<&mut Entry> {
        self.find_for(key, true, false, false)
    }

    /// [`Ctx::get_string`] as a write command reads a source ([`Ctx::lookup_read`]).
    pub(crate) fn read_string(&mut self, key: &Bytes) -> Result<Option<Bytes>, CommandError> {
        string_of(self.lookup_read(key))
    }

    /// [`Ctx::lookup`] as `OBJECT` reads (`LOOKUP_NOTOUCH | LOOKUP_NONOTIFY`): counted, not
    /// touched, no `keymiss`.
    pub(crate) fn lookup_quiet(&mut self, key: &Bytes) -> Option<&Entry> {
        self.find_for(key, false, true, false).map(|e| &*e)
    }

    /// [`Ctx::find`] counting a hit or miss if `read`, and raising `keymiss` on a miss if
    /// `read && notify`.
    fn find_for(
        &mut self,
        key: &Bytes,
        touch: bool,
        read: bool,
        notify: bool,
    ) -> Option<&mut Entry> {
        self.look(key, read, notify, |db, now| db.find_live(key, now, touch))
    }

    /// Runs `change` on the live value at `key` where it lies, measured again there or, when
    /// it empties an aggregate, the key removed (see [`crate::db::Db::change_live`]); with
    /// [`Ctx::find`]'s lookup rules (lazy expiry, the stats of a read command). `None` when the
    /// key is absent or expired; else `change`'s first result and whether the key was
    /// removed. The caller finishes with [`Ctx::changed_in_place`] if it wrote.
    pub(crate) fn change_existing<R>(
        &mut self,
        key: &Bytes,
        change: impl FnOnce(&mut Value) -> (R, bool),
    ) -> Option<(R, bool)> {
        let read = !self.write;
        self.look(key, read, true, |db, now| db.change_live(key, now, change))
    }

    /// The rules of every lookup around `op`, the selected database's own lookup of `key`:
    /// during a CLIENT PAUSE an expired key reads as missing but stays (deleting it would be a
    /// write: Redis's `expireIfNeeded` while paused); an expired key `op` removed gets its
    /// expiry side effects; a read counts a keyspace hit or miss, and raises `keymiss` on a
    /// miss if `notify` (and `notify-keyspace-events` has `m`).
    fn look<'s, T>(
        &'s mut self,
        key: &Bytes,
        read: bool,
        notify: bool,
        op: impl FnOnce(&'s mut Db, u64) -> Found<T>,
    ) -> Option<T> {
        let (db, now) = (self.client.db, self.now);
        let state = &mut *self.state;
        let pause = &self.node.live.pause;
        let found = if pause.maybe_active()
            && pause.is_paused(now)
            && state.dbs.get(db).and_then(|d| d.get(key, now)).is_none()
        {
            None
        } else {
            match state.dbs.get_mut(db).map(|d| op(d, now)) {
                Some(Found::Live(found)) => Some(found),
                Some(Found::Expired(expired)) => {
                    key_expired(&mut state.stats, &state.repl, self.effects, db, &expired);
                    None
                }
                Some(Found::Missing) | None => None,
            }
        };
        if read {
            if found.is_some() {
                state.stats.keyspace_hits += 1;
            } else {
                state.stats.keyspace_misses += 1;
                if notify && state.config.notify_keyspace_events() & crate::notify::KEY_MISS != 0 {
                    self.effects
                        .keyspace_event(db, crate::notify::KEY_MISS, "keymiss", key);
                }
            }
        }
        found
    }

    /// After [`Ctx::change_existing`] changed the value at `key`: raises `event` of `class`,
    /// then `del` if the key was `removed`, and marks the key modified (already measured).
    pub(crate) fn changed_in_place(
        &mut self,
        key: &Bytes,
        class: u32,
        event: &'static str,
        removed: bool,
    ) {
        self.notify(class, event, key);
        if removed {
            self.notify(crate::notify::GENERIC, "del", key);
        }
        self.modified_measured(key);
    }

    /// The live entry at `key` (touched), or a new one holding `make()` with no deadline if the
    /// key is absent or expired (an expired key gets its expiry side effects first), with one
    /// hash; and whether it existed. A write lookup: no keyspace hit or miss is counted. The
    /// caller checks the type of what it gets.
    pub(crate) fn find_or_insert(
        &mut self,
        key: &Bytes,
        make: impl FnOnce() -> Value,
    ) -> (&mut Entry, bool) {
        self.write_or_create(key, |db, now| db.find_or_insert(key, now, make))
    }

    /// [`Ctx::find_or_insert`], then `change` on the value, measured again in place when
    /// `change` says it changed it (see [`crate::db::Db::change_or_insert`]): the caller marks
    /// the key with [`Ctx::modified_measured`] if it wrote. Returns `change`'s first result
    /// and whether a live entry existed.
    pub(crate) fn change_or_insert<R>(
        &mut self,
        key: &Bytes,
        make: impl FnOnce() -> Value,
        change: impl FnOnce(&mut Value) -> (R, bool),
    ) -> (R, bool) {
        self.write_or_create(key, |db, now| db.change_or_insert(key, now, make, change))
    }

    /// Runs `op`, a [`crate::db::Db`] write that creates `key` if absent or expired, on the
    /// selected database, then owes what it reported: the expiry of the key it replaced and
    /// the `new` event of a key it created. Returns `op`'s result and whether a live entry
    /// existed.
    fn write_or_create<'s, T>(
        &'s mut self,
        key: &Bytes,
        op: impl FnOnce(&'s mut Db, u64) -> (T, bool, Option<Bytes>),
    ) -> (T, bool) {
        let (db, now) = (self.client.db, self.now);
        let state = &mut *self.state;
        // The selected index is always validated by SELECT/SWAPDB against `databases`.
        let (result, existed, expired) = op(&mut state.dbs[db], now);
        if let Some(expired) = expired {
            key_expired(&mut state.stats, &state.repl, self.effects, db, &expired);
        }
        if !existed && state.config.notify_keyspace_events() & crate::notify::NEW != 0 {
            self.effects
                .keyspace_event(db, crate::notify::NEW, "new", key);
        }
        (result, existed)
    }

    /// Looks `key` up (lazy expiry; hit/miss stats and `keymiss` for a read command, see
    /// [`Ctx::find`]).
    pub(crate) fn lookup(&mut self, key: &Bytes) -> Option<&Entry> {
        self.find(key, true).map(|e| &*e)
    }

    /// The entry at `key` again, after this command's own lookup found it: not touched,
    /// counted or notified a second time (Redis looks a key up once per write).
    pub(crate) fn entry_again(&mut self, key: &Bytes) -> Option<&mut Entry> {
        self.find_for(key, false, false, false)
    }

    /// [`Ctx::lookup`], for changing the entry.
    pub(crate) fn lookup_mut(&mut self, key: &Bytes) -> Option<&mut Entry> {
        self.find(key, true)
    }

    /// The string at `key`: `Ok(None)` if absent, `WRONGTYPE` if another type.
    pub(crate) fn get_string(&mut self, key: &Bytes) -> Result<Option<Bytes>, CommandError> {
        string_of(self.lookup(key))
    }

    /// Stores `value` at `key` with `expire_at`, replacing what was there, with one hash: a
    /// key whose TTL had run out gets its expiry side effects first, as a lookup would have
    /// given it, so a caller needs no lookup of its own.
    pub(crate) fn set(&mut self, key: &Bytes, value: Value, expire_at: Option<u64>) {
        let now = self.now;
        match self.db().insert(key, value, expire_at, now) {
            Inserted::Replaced => {}
            Inserted::Expired => {
                let state = &mut *self.state;
                key_expired(
                    &mut state.stats,
                    &state.repl,
                    self.effects,
                    self.client.db,
                    key,
                );
                self.created(key);
            }
            Inserted::New => self.created(key),
        }
        // `insert` measured the new entry.
        self.modified_measured(key);
    }

    /// Marks `key` modified when its accounted size is still right (a value stored whole and
    /// measured, or changed in place to one of the same size): only WATCH, blocked clients
    /// and client tracking need to hear of it, and without them nothing is recorded (no copy
    /// of the key).
    pub(crate) fn modified_measured(&mut self, key: &Bytes) {
        self.state.dirty += 1;
        if self.state.hears_modified_keys() {
            self.effects
                .modified_measured(self.client.db, recorded_key(key));
        }
    }

    /// Raises the `new` keyspace event for `key`, just added to the selected db (Redis's
    /// `dbAdd`), when `notify-keyspace-events` has `n` (checked first: keys are created often).
    pub(crate) fn created(&mut self, key: &Bytes) {
        if self.state.config.notify_keyspace_events() & crate::notify::NEW != 0 {
            self.notify(crate::notify::NEW, "new", key);
        }
    }

    /// Deletes `key`; returns whether it existed (expired keys count as absent).
    pub(crate) fn delete(&mut self, key: &Bytes) -> bool {
        self.delete_freeing(key, false)
    }

    /// [`Ctx::delete`], the value freed on the lazy free thread if `lazily` and it is large
    /// (Redis's `dbAsyncDelete`: UNLINK, and DEL under `lazyfree-lazy-user-del`).
    pub(crate) fn delete_freeing(&mut self, key: &Bytes, lazily: bool) -> bool {
        let (db, now) = (self.client.db, self.now);
        let state = &mut *self.state;
        match state.dbs.get_mut(db).map(|d| d.remove_live(key, now)) {
            Some(Removed::Live(entry)) => {
                if lazily {
                    self.free_lazily(entry.value);
                }
                self.modified(key);
                true
            }
            Some(Removed::Expired(key)) => {
                key_expired(&mut state.stats, &state.repl, self.effects, db, &key);
                false
            }
            Some(Removed::Missing) | None => false,
        }
    }

    /// Drops `value` on the lazy free thread if freeing it takes more than
    /// [`crate::lazyfree::LAZYFREE_THRESHOLD`] allocations, here otherwise.
    pub(crate) fn free_lazily(&self, value: Value) {
        let live = &self.node.live;
        // A list is measured by its quicklist nodes, which its fill and packed threshold set.
        let (fill, packed) = match value {
            Value::List(_) => (
                self.state.config.list_max_listpack_size(),
                live.quicklist_packed_threshold
                    .load(std::sync::atomic::Ordering::Relaxed),
            ),
            _ => (0, 0),
        };
        if value.costs_more_to_free_than(crate::lazyfree::LAZYFREE_THRESHOLD, fill, packed) {
            live.lazyfree.free(value, 1);
        }
    }

    /// After writing into the aggregate at `key`: deletes it if it became empty (with the `del`
    /// event, as Redis does) and marks it modified.
    pub(crate) fn written(&mut self, key: &Bytes) {
        // A look, not a lookup: the write's own lookup already touched the key (a second
        // touch would count twice toward its LFU frequency).
        let now = self.now;
        if self
            .db()
            .get(key, now)
            .is_some_and(|e| e.value.is_empty_aggregate())
        {
            self.db().remove(key);
            self.notify(crate::notify::GENERIC, "del", key);
        }
        self.modified(key);
    }

    /// Records that `key` in the selected db was written (WATCH, blocked clients, dirty).
    pub(crate) fn modified(&mut self, key: &Bytes) {
        self.state.dirty += 1;
        self.effects
            .modified
            .push((self.client.db, recorded_key(key)));
    }

    /// Raises keyspace event `event` of `class` for `key` in the selected db, if
    /// `notify-keyspace-events` enables its class now (Redis's `notifyKeyspaceEvent` checks
    /// the flags when the event happens; most writes raise one, and most servers have
    /// notifications off).
    pub(crate) fn notify(&mut self, class: u32, event: &'static str, key: &Bytes) {
        if self.state.config.notify_keyspace_events() & class != 0 {
            self.effects
                .keyspace_event(self.client.db, class, event, key);
        }
    }

    /// Whether write effects are being recorded for replication (see
    /// [`Effects::propagating`]); callers may skip building an argv that would be dropped.
    pub(crate) fn propagating(&self) -> bool {
        self.effects.propagating(&self.state.repl)
    }

    /// Replicates nothing of this command beyond what it gives [`Ctx::propagate`] (Redis's
    /// `preventCommandPropagation`), though it changed data.
    pub(crate) fn prevent_propagation(&mut self) {
        self.client.command.prevent_propagation = true;
    }

    /// Replicates `argv` instead of the command as sent (e.g. `SET k v PXAT abs` for `EX`).
    pub(crate) fn propagate(&mut self, argv: Vec<Bytes>) {
        if self.propagating() {
            self.effects.propagate.push((self.client.db, argv));
        }
    }
}

/// Runs one command for `client` under the state lock and returns its reply: [`call`] after
/// the lookup. For the replication link and blocked-client re-execution, which enter the
/// pipeline here (see [`crate::dispatch`]).
/// Called by a blocking command that found nothing to pop: inside `MULTI`/`EXEC` or a script
/// it answers `timeout_reply` at once (Redis's `CLIENT_DENY_BLOCKING`), otherwise it asks the
/// connection to block the client on `keys`.
pub(crate) fn block(
    ctx: &mut Ctx<'_>,
    keys: Vec<Bytes>,
    timeout: Option<std::time::Duration>,
    kind: crate::blocking::BlockKind,
    timeout_reply: Frame,
) -> CmdResult {
    if ctx.client.origin.in_script || ctx.client.origin.in_exec {
        return Ok(timeout_reply);
    }
    ctx.client.block = Some(crate::blocking::BlockRequest {
        keys,
        timeout,
        kind,
        argv: None,
    });
    Ok(Frame::NullArray)
}

/// The string `entry` holds: `Ok(None)` without an entry, `WRONGTYPE` for another type.
fn string_of(entry: Option<&Entry>) -> Result<Option<Bytes>, CommandError> {
    match entry.map(|e| &e.value) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.to_bytes())),
        Some(_) => Err(CommandError::WrongType),
    }
}

/// The commands layer as the state layer below it runs it (see [`CommandHooks`]).
pub(crate) const HOOKS: CommandHooks = CommandHooks {
    call_argv,
    resolve: |argv| resolve(argv).ok(),
    exists: script::command_exists,
    install_dataset: persistence::install_from_master,
};

#[cfg(test)]
impl Node {
    /// A node with default config whose clock reads 1 000 000 ms, not listening anywhere,
    /// for unit tests that run commands without a server.
    pub(crate) fn for_tests() -> Node {
        Node::new(
            std::sync::Arc::new(crate::config::runtime::RuntimeConfig::for_tests()),
            crate::clock::Clock::starting_at(1_000_000),
            std::net::SocketAddr::from(([127, 0, 0, 1], 1)),
            String::new(),
            1,
            HOOKS,
        )
    }
}

pub(crate) fn call_argv(
    state: &mut State,
    node: &Node,
    client: &mut ClientState,
    argv: &[Bytes],
    now: u64,
    effects: &mut Effects,
) -> Frame {
    match resolve(argv) {
        Ok(resolved) => call(resolved, state, node, client, argv, now, effects),
        Err(e) => e.into(),
    }
}

/// `change`, a write to one type's value, as [`Ctx::change_existing`] and
/// [`Ctx::change_or_insert`] run it on whatever the key holds: `pick` finds that type's value
/// (e.g. [`Value::as_set_mut`]); a value of another type is `WRONGTYPE`, left unchanged.
pub(crate) fn typed<V: ?Sized, R>(
    pick: impl FnOnce(&mut Value) -> Option<&mut V>,
    change: impl FnOnce(&mut V) -> (R, bool),
) -> impl FnOnce(&mut Value) -> (Result<R, CommandError>, bool) {
    move |value| match pick(value) {
        Some(v) => {
            let (result, changed) = change(v);
            (Ok(result), changed)
        }
        None => (Err(CommandError::WrongType), false),
    }
}

/// Redis's `call()`: the execution step every command takes, from a client
/// ([`crate::dispatch::Session::process`]), `EXEC`, a script's `redis.call` or the
/// replication link. Checks authentication and the read-only replica, feeds MONITOR, runs the
/// handler, counts the call, and propagates a write that changed data and did not propagate
/// explicitly as sent. Errors become error replies.
pub(crate) fn call(
    resolved @ Resolved {
        spec, first_arg, ..
    }: Resolved,
    state: &mut State,
    node: &Node,
    client: &mut ClientState,
    argv: &[Bytes],
    now: u64,
    effects: &mut Effects,
) -> Frame {
    if !client.authenticated && !spec.has(flags::NO_AUTH) {
        state.cmdstats.reject(resolved);
        return CommandError::NoAuth.into();
    }
    // A top-level command was checked by the pipeline's replica rules, and a transaction's
    // commands when EXEC was (Redis's `processCommand`); a script's are checked here, as
    // Redis's `scriptCall` does.
    if client.origin.in_script
        && spec.has(flags::WRITE)
        && state.repl.refuses_write_from(client, &state.config)
    {
        state.cmdstats.reject(resolved);
        return CommandError::Raw(crate::replication::READONLY_ERROR.into()).into();
    }
    let tracking_top = !client.origin.in_script && !client.origin.in_exec;
    if tracking_top && state.tracking.is_active() {
        crate::tracking::before_call(state, node, client);
    }
    let dirty_before = state.dirty;
    let propagated_before = effects.propagate.len();
    if state.repl.observer().is_some() && effects.client.is_none() {
        effects.client = Some(client.handle.clone());
    }
    state.stats.commands += 1;
    let db = client.db;
    let mut args = Args::new(argv, first_arg);
    // Every call is timed while the slow log or the latency monitor is on, as Redis times
    // every call; otherwise a sample of calls for `INFO commandstats` (see `cmdstats`). The
    // pipeline may have read the clock for this command already (and EXEC for the commands
    // it runs), so a pipelined command costs no extra reading. The commands a script runs
    // cannot reuse one (Lua runs between them): timing them would cost two readings each
    // (~9 % of a Redisson lock script), so they are timed only with `slowlog-log-slower-than
    // 0`, which logs every command anyway; otherwise the script's own call stands for them.
    // Administrative commands are always timed: they are rare, and `CONFIG SET` may turn the
    // slow log on, which Redis then applies to that very command.
    let given_start = client.command.start_tick.take();
    let watched = node.config.watch_calls_from_us() != u64::MAX
        && (!client.origin.in_script || node.config.slowlog_log_slower_than() == 0);
    let timed = watched
        || spec.has(flags::ADMIN)
        || (!client.origin.in_script && state.cmdstats.should_time(resolved));
    let started = timed.then(|| given_start.unwrap_or_else(|| node.clock.tick_us()));
    let reply = {
        let mut ctx = Ctx {
            state,
            node,
            client,
            now,
            effects,
            write: spec.has(flags::WRITE),
        };
        match spec_of(&resolved) {
            Some(command) => (command.handler)(&mut ctx, &mut args),
            None => Err(CommandError::unknown_command(argv)),
        }
    };
    // MONITOR sees the command once it ran, in the database it left selected (Redis's
    // `call()`); EVAL and FCALL show themselves before the commands they run, and a blocked
    // command served later is not shown again.
    if !client.origin.reprocessing
        && !spec.has(flags::SKIP_MONITOR | flags::ADMIN)
        && node.monitors.active()
    {
        let origin = if client.origin.in_script {
            crate::monitor::Origin::Lua
        } else {
            crate::monitor::Origin::Client(&client.handle)
        };
        node.monitors
            .feed(node.clock.now_us(), client.db, origin, argv);
    }
    let failed = matches!(reply, Err(_) | Ok(Frame::Error(_)));
    let ended = started.map(|_| node.clock.tick_us());
    let elapsed_us = started.zip(ended).map(|(s, e)| e.saturating_sub(s));
    if !client.origin.in_script {
        client.command.end_tick = ended;
    }
    // A command that blocked is counted once, when it is served or times out (as Redis's
    // updateStatsOnUnblock does).
    if client.block.is_none() {
        state.cmdstats.record(resolved, elapsed_us, failed);
    }
    // Nothing more unless the slow log or the latency monitor wants this call: one
    // comparison, with the thresholds as they are now (as Redis checks them after the call).
    if let (Some(us), Some(end)) = (elapsed_us, ended) {
        if us >= node.config.watch_calls_from_us() {
            record_slow_call(state, node, client, resolved, argv, end, us);
        }
    }
    let prevented = std::mem::take(&mut client.command.prevent_propagation);
    if state.dirty != dirty_before
        && !prevented
        && effects.propagate.len() == propagated_before
        && spec.has(flags::WRITE)
        && effects.propagating(&state.repl)
    {
        effects.propagate.push((db, argv.to_vec()));
    }
    // Client-side caching: one check while nobody tracks keys.
    if state.tracking.is_active() {
        crate::tracking::after_call(state, node, client, resolved, argv, effects, tracking_top);
    }
    reply.unwrap_or_else(Frame::from)
}

/// A call that ran for at least `watch-calls-from` µs (the smaller of the two thresholds),
/// ending at clock reading `end_tick`: the latency monitor's `command` or `fast-command`
/// event, and the slow log unless the command is `SKIP_SLOWLOG` or blocked (a blocked
/// command is logged when it is served), as Redis's `call()` does. A script's commands are
/// logged with the address `?:0` and no name (Redis's Lua client).
#[cold]
fn record_slow_call(
    state: &mut State,
    node: &Node,
    client: &ClientState,
    resolved: Resolved,
    argv: &[Bytes],
    end_tick: u64,
    elapsed_us: u64,
) {
    let now_s = node.clock.us_at(end_tick) / 1_000_000;
    let latency_ms = node.config.latency_monitor_threshold_ms();
    if latency_ms > 0 && elapsed_us / 1000 >= latency_ms {
        let event = if resolved.spec.has(flags::FAST) {
            "fast-command"
        } else {
            "command"
        };
        state.latency.add(event, now_s, elapsed_us / 1000);
    }
    let slower_than = node.config.slowlog_log_slower_than();
    if u64::try_from(slower_than).is_ok_and(|t| elapsed_us >= t)
        && client.block.is_none()
        && !resolved.spec.has(flags::SKIP_SLOWLOG)
    {
        let (peer, name) = if client.origin.in_script {
            ("?:0".to_string(), Bytes::new())
        } else {
            (client.handle.addr_text(), client.handle.name())
        };
        let command = crate::slowlog::Logged {
            argv,
            time: now_s,
            duration_us: elapsed_us,
            peer,
            name,
        };
        state.slowlog.push(command, node.config.slowlog_max_len());
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;

    #[test]
    fn the_name_cache_resolves_as_the_table_does() {
        let mut cache = NameCache::default();
        let argv = |args: &[&str]| -> Vec<Bytes> {
            args.iter().map(|a| Bytes::from(a.to_string())).collect()
        };
        // Repeats, other spellings, arity errors of a cached name, containers, unknown names
        // (never cached), a name longer than the cache holds, and back.
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
            let want = resolve(&argv).map(|r| (r.spec.name, r.first_arg, r.stat));
            let got = resolve_cached(&argv, &mut cache).map(|r| (r.spec.name, r.first_arg, r.stat));
            assert_eq!(got, want, "{args:?}");
        }
    }

    #[test]
    fn lookup_finds_every_command_in_any_case() {
        let mut names: Vec<&str> = families().into_iter().flatten().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(table().len(), names.len());
        for name in names {
            assert_eq!(lookup(name.as_bytes()).map(|s| s.name), Some(name));
            let upper = name.to_ascii_uppercase();
            assert_eq!(lookup(upper.as_bytes()).map(|s| s.name), Some(name));
        }
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(b"").is_none());
        assert!(lookup(&[b'g'; 40]).is_none());
        assert!(lookup(b"g\xffet").is_none());
    }

    /// Every command and subcommand Redis 7.0 also has runs with Redis's arity, flags and key
    /// positions: what `COMMAND INFO` reports (Redis's own description, `redis_table`) is what
    /// the pipeline does.
    #[test]
    fn the_table_agrees_with_redis_s_description() {
        let mut differences = Vec::new();
        let mut checked = 0;
        let mut check = |name: String, spec: &CommandSpec| {
            let Some(redis) = crate::redis_table::get(&name) else {
                return;
            };
            checked += 1;
            if redis.arity() != Some(i64::from(spec.arity)) {
                differences.push(format!(
                    "{name}: arity {} vs {:?}",
                    spec.arity,
                    redis.arity()
                ));
            }
            let ours: Vec<&str> = flags::NAMES
                .iter()
                .filter(|(bit, _)| spec.flags & bit != 0)
                .map(|(_, n)| *n)
                .collect();
            let theirs: Vec<&str> = redis
                .flags()
                .into_iter()
                .filter(|f| flags::NAMES.iter().any(|(_, n)| n == f))
                .collect();
            if ours != theirs {
                differences.push(format!("{name}: flags {ours:?} vs {theirs:?}"));
            }
            let positions = (
                i64::from(spec.first_key),
                i64::from(spec.last_key),
                i64::from(spec.step),
            );
            if redis.key_positions() != Some(positions) {
                differences.push(format!(
                    "{name}: keys {positions:?} vs {:?}",
                    redis.key_positions()
                ));
            }
        };
        for spec in table() {
            check(spec.name.to_string(), spec);
            for sub in spec.subcommands {
                check(format!("{}|{}", spec.name, sub.name), sub);
            }
        }
        assert!(differences.is_empty(), "{}", differences.join("\n"));
        assert!(checked > 300, "{checked}");
    }

    /// Every command and subcommand of Redis 7.0 that the table lacks is listed, with its
    /// reason, in the README's "not implemented" list, and nothing listed there exists.
    #[test]
    fn the_readme_lists_exactly_the_redis_commands_we_lack() {
        let readme = include_str!("../../../README.md");
        let listed = readme
            .split("<!-- not-implemented -->")
            .nth(1)
            .and_then(|rest| rest.split("<!-- /not-implemented -->").next())
            .expect("README has the not-implemented list");
        let has = |name: &str| match name.split_once('|') {
            None => lookup(name.as_bytes()).is_some(),
            Some((container, sub)) => lookup(container.as_bytes())
                .is_some_and(|c| c.subcommands.iter().any(|s| s.name == sub)),
        };
        let mut missing: Vec<String> = crate::redis_table::all()
            .keys()
            .filter(|name| !has(name))
            .map(|name| name.replace('|', " ").to_ascii_uppercase())
            .collect();
        missing.sort();
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
        assert_eq!(missing, named);
    }

    #[test]
    fn writes_are_not_copied_for_replication_without_a_backlog() {
        let node = Node::for_tests();
        let mut state = State::for_tests();
        let mut client = ClientState::for_tests(1);
        let mut effects = Effects {
            record_propagation: false,
            ..Effects::default()
        };
        let argv = |args: &[&str]| -> Vec<Bytes> {
            args.iter().map(|a| Bytes::from(a.to_string())).collect()
        };
        for args in [
            &["SET", "k", "v", "EX", "10"][..],
            &["PEXPIRE", "k", "100"],
            &["HSET", "h", "f", "v"],
        ] {
            let reply = call_argv(&mut state, &node, &mut client, &argv(args), 0, &mut effects);
            assert!(!reply.is_error(), "{args:?}: {reply:?}");
        }
        // The expired key is reclaimed with its event but no DEL for a replica.
        call_argv(
            &mut state,
            &node,
            &mut client,
            &argv(&["GET", "k"]),
            200,
            &mut effects,
        );
        assert!(effects.propagate.is_empty());
        // PEXPIRE and the expiry; the SET stored a value it measured, the HSET measured the
        // hash it changed in place, and nobody (WATCH, a blocked client, tracking) listens, so
        // they left nothing to do afterwards.
        assert_eq!(effects.modified.len(), 2);
        assert_eq!(state.stats.expired_keys, 1);
    }
}
