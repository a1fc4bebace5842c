//! [`Ctx`]: everything a handler may touch while it runs, and the lookups and writes every
//! command makes through it (lazy expiry, keyspace statistics and events, the keys it
//! modified).

use super::CommandError;
use crate::client::ClientState;
use crate::db::{Db, Entry, Found, Inserted, Removed, Value};
use crate::node::{key_expired, Effects, Node, State};
use bytes::Bytes;

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
    /// Whether the node's target documents `token` as an argument of the command `name`
    /// ([`super::table::documents`]): an option a later release added.
    pub(crate) fn documents(&self, name: &str, token: &str) -> bool {
        super::table::documents(self.node.config.compat(), name, token)
    }

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
                    key_expired(
                        &mut state.stats,
                        &state.repl,
                        &state.config,
                        self.effects,
                        db,
                        &expired,
                    );
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
            key_expired(
                &mut state.stats,
                &state.repl,
                &state.config,
                self.effects,
                db,
                &expired,
            );
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
                    &state.config,
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
                key_expired(
                    &mut state.stats,
                    &state.repl,
                    &state.config,
                    self.effects,
                    db,
                    &key,
                );
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
            Value::List(..) => {
                let fill = self.state.config.list_max_listpack_size();
                let packed = live
                    .quicklist_packed_threshold
                    .load(std::sync::atomic::Ordering::Relaxed);
                let large_plain = self.state.config.profile().encodings.large_elements_plain;
                (
                    fill,
                    crate::db::memory::plain_threshold(packed, fill, large_plain),
                )
            }
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

/// The string `entry` holds: `Ok(None)` without an entry, `WRONGTYPE` for another type.
fn string_of(entry: Option<&Entry>) -> Result<Option<Bytes>, CommandError> {
    match entry.map(|e| &e.value) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.to_bytes())),
        Some(_) => Err(CommandError::WrongType),
    }
}
