//! The keyspace: databases of keys with values and absolute expiry deadlines (node-clock ms).
//!
//! Every read goes through [`Db::find_live`] (or [`Db::find_or_insert`] for a write that creates
//! the key), which expires lazily against the `now` it is given; the active expiry cycle
//! ([`Db::take_expired`]) reclaims keys in deadline order. Each access hashes the key once: the
//! table is a [`Dict`] (Redis's chained dict, which SCAN's cursor needs) probed with a
//! precomputed hash, so finding, checking the deadline and reclaiming or updating the entry
//! reuse one walk of the key's chain.

pub(crate) mod dict;
mod hash_value;
mod key;
pub(crate) mod lfu;
mod listpack;
pub(crate) mod memory;
mod prefetch;
pub(crate) use prefetch::{Lookahead, LOOKAHEAD_MAX};
pub(crate) mod release;
mod set_value;
mod small;
pub(crate) mod stream;
mod string_value;
mod value;
mod zset;

pub(crate) use key::Key;
pub(crate) use lfu::Access;

pub(crate) use value::{
    HashValue, ListEncoding, ListRules, ListpackLimits, SetEncoding, SetLimits, SetValue,
    StringValue, Value,
};
pub(crate) use zset::ZSet;

use crate::siphash::SipKey;
use bytes::Bytes;
use dict::{Dict, Entry as TableEntry};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// One stored key.
///
/// `repr(C)` here and on [`Slot`]: a lookup reads the key, then the deadline and access time,
/// then the value; in this order they span two cache lines of the table's node, not three.
/// The table's node (hash, link, 24-byte key, this 56-byte entry) takes 96 bytes, one of the
/// allocator's size classes (`node_fits_its_size_class`).
#[derive(Debug, Clone)]
#[repr(C)]
pub(crate) struct Entry {
    /// Absolute deadline in node-clock milliseconds, or [`NO_DEADLINE`] (a plain `u64`: an
    /// `Option` would take 8 bytes more); read it with [`Entry::expire_at`].
    deadline: u64,
    /// The last access for `OBJECT IDLETIME` and eviction, as [`Access`] records it.
    pub(crate) accessed: u32,
    /// The key's estimated memory ([`memory::entry_size`]) when it was last accounted (kept
    /// here, beside `accessed`, where it fills what would be padding).
    size: u32,
    /// The value.
    pub(crate) value: Value,
}

/// [`Entry::deadline`] of a key without a TTL. Deadlines come from signed 64-bit
/// milliseconds (Redis rejects larger ones), so no real deadline reaches it; one that did
/// would be clamped a millisecond short ([`to_deadline`]), which no clock reaches either.
const NO_DEADLINE: u64 = u64::MAX;

/// The stored form of `expire_at`.
fn to_deadline(expire_at: Option<u64>) -> u64 {
    expire_at.map_or(NO_DEADLINE, |at| at.min(NO_DEADLINE - 1))
}

impl Entry {
    /// An entry of `value` (its size is measured when it is stored).
    fn new(value: Value, expire_at: Option<u64>, accessed: u32) -> Entry {
        Entry {
            deadline: to_deadline(expire_at),
            accessed,
            size: 0,
            value,
        }
    }

    /// Absolute deadline in node-clock milliseconds, if the key is volatile.
    pub(crate) fn expire_at(&self) -> Option<u64> {
        (self.deadline != NO_DEADLINE).then_some(self.deadline)
    }

    /// The value and deadline, for moving the key elsewhere.
    pub(crate) fn into_parts(self) -> (Value, Option<u64>) {
        let at = self.expire_at();
        (self.value, at)
    }

    /// Whether the key has a deadline.
    pub(crate) fn is_volatile(&self) -> bool {
        self.deadline != NO_DEADLINE
    }

    /// Sets the deadline of an entry the keyspace does not hold (tests).
    #[cfg(test)]
    pub(crate) fn set_expire_at(&mut self, expire_at: Option<u64>) {
        self.deadline = to_deadline(expire_at);
    }
}

/// A key with its entry, as the table stores them.
#[derive(Debug, Clone)]
#[repr(C)]
struct Slot {
    key: Key,
    entry: Entry,
}

impl Slot {
    fn new(key: Key, mut entry: Entry) -> Slot {
        entry.size = Self::measure(&key, &entry);
        Slot { key, entry }
    }

    /// The size last accounted.
    fn size(&self) -> u32 {
        self.entry.size
    }

    fn measure(key: &[u8], entry: &Entry) -> u32 {
        u32::try_from(memory::entry_size(key, entry)).unwrap_or(u32::MAX)
    }

    /// Replaces the entry and measures it; returns the (old, new) sizes.
    fn replace(&mut self, entry: Entry) -> (u32, u32) {
        let old = self.entry.size;
        self.entry = entry;
        self.entry.size = old;
        self.remeasure()
    }

    /// Measures the slot again; returns (old, new) sizes.
    fn remeasure(&mut self) -> (u32, u32) {
        let old = self.entry.size;
        self.entry.size = Self::measure(&self.key, &self.entry);
        (old, self.entry.size)
    }
}

/// What a lookup ([`Db::find_live`], [`Db::change_live`]) found.
#[derive(Debug)]
pub(crate) enum Found<T> {
    /// The key is live: what the lookup made of it (the entry, or a change's result).
    Live(T),
    /// The key's deadline had passed: it was removed; the caller owes the expiry side effects.
    Expired(Bytes),
    /// No such key.
    Missing,
}

/// What [`Db::insert`] replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inserted {
    /// Nothing: the key is new.
    New,
    /// A live entry.
    Replaced,
    /// An entry whose deadline had passed: the key is new, and the caller owes the expired
    /// key's side effects (as if a lookup had reclaimed it first).
    Expired,
}

/// What [`Db::remove_live`] removed.
#[derive(Debug)]
pub(crate) enum Removed {
    /// A live entry, handed to the caller to drop (or to have dropped elsewhere).
    Live(Entry),
    /// An expired key (the caller owes the expiry side effects).
    Expired(Bytes),
    /// Nothing: no such key.
    Missing,
}

/// One numbered database.
#[derive(Debug, Default, Clone)]
pub(crate) struct Db {
    /// The keys. Clients choose keys, so the hash must resist flooding: it is Redis's
    /// SipHash-1-2 under a random key, a fresh one per database.
    entries: Dict<Slot>,
    hasher: SipKey,
    /// The volatile keys by deadline, for the active expiry cycle.
    deadlines: Deadlines,
    /// The sum of the keys' accounted sizes (see [`Db::resize`]).
    used: usize,
    /// How accesses are recorded (LRU time or LFU counter, per `maxmemory-policy`).
    access: Access,
    /// State of the cheap generator behind LFU's probabilistic increments.
    lfu_rng: u64,
    /// Lookups leave access times alone while set: the running command's client asked for
    /// `CLIENT NO-TOUCH ON` (Redis 7.2; set around one command by `cmd::call`).
    pub(crate) no_touch: bool,
}

/// The deadline index: `(deadline, key hash)` entries with lazy deletion, in a sorted run and a
/// min-heap.
///
/// A lock service renews every held lock every few seconds, so moving a key's deadline must be
/// cheap. Every volatile key has an entry at or before its deadline. A deadline that moves
/// later (a renewal) writes nothing here: the key's old entry stays, and when it comes due the
/// expiry cycle finds the key's deadline later and files it again under that one, once per
/// lease instead of once per renewal. A deadline that moves earlier gets an entry of its own,
/// and a removed key leaves its entry behind instead of searching for it; such stale entries
/// are dropped when they come first. Entries hold no key (no reference count to touch, no key
/// bytes to compare), and stale ones are dropped by a rebuild once they outnumber the live
/// ones several times over ([`STALE_RATIO`]), so memory stays proportional to the volatile
/// keys.
///
/// Most deadlines arrive in order (the same TTL set again and again: `SET … PX 1000` in a
/// loop, every lock taken with the same lease), so a new deadline no earlier than the last one
/// goes to the back of `run`, which stays sorted; only an earlier one goes to the heap. The
/// expiry cycle takes whichever front is earlier: a wave of keys set in order leaves the run
/// in order, one sequential read each, where popping a heap of a million entries costs a
/// dozen cache misses per key.
#[derive(Debug, Clone, Default)]
struct Deadlines {
    /// Entries in non-decreasing deadline order.
    run: VecDeque<(u64, u64)>,
    /// Entries that arrived out of order.
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    /// Keys with a deadline (the index holds an entry for each, plus stale ones).
    volatile: usize,
}

/// The index is rebuilt once it holds more than `STALE_RATIO` entries per volatile key plus
/// `STALE_SLACK`: a rebuild reads every key of the table, so it must come rarely (a lock
/// service renews each lock again and again), while memory stays bounded by a few 16-byte
/// entries per volatile key.
const STALE_RATIO: usize = 4;
/// See [`STALE_RATIO`].
const STALE_SLACK: usize = 1024;

impl Deadlines {
    /// Records that the key hashed `hash` moves from deadline `old` to `new` (stored forms:
    /// [`NO_DEADLINE`] for none).
    fn update(&mut self, hash: u64, old: u64, new: u64) {
        if old == new {
            return;
        }
        if old == NO_DEADLINE {
            self.volatile += 1;
        } else if new == NO_DEADLINE {
            self.volatile = self.volatile.saturating_sub(1);
        }
        // A key whose deadline moves later keeps the entry it has, which is filed again when
        // it comes due ([`Db::take_expired`]).
        if new != NO_DEADLINE && (old == NO_DEADLINE || new < old) {
            self.file(new, hash);
        }
    }

    /// Adds an entry for the key hashed `hash` at deadline `at`.
    fn file(&mut self, at: u64, hash: u64) {
        if self.run.back().is_none_or(|&(last, _)| last <= at) {
            self.run.push_back((at, hash));
        } else {
            self.heap.push(Reverse((at, hash)));
        }
    }

    /// The earliest entry.
    fn first(&self) -> Option<(u64, u64)> {
        match (self.run.front(), self.heap.peek()) {
            (Some(&r), Some(&Reverse(h))) => Some(r.min(h)),
            (Some(&r), None) => Some(r),
            (None, Some(&Reverse(h))) => Some(h),
            (None, None) => None,
        }
    }

    /// Drops the earliest entry.
    fn pop_first(&mut self) {
        match (self.run.front(), self.heap.peek()) {
            (Some(&r), Some(&Reverse(h))) if h < r => {
                self.heap.pop();
            }
            (Some(_), _) => {
                self.run.pop_front();
            }
            (None, _) => {
                self.heap.pop();
            }
        }
    }

    /// Entries held, stale ones included.
    fn entries(&self) -> usize {
        self.run.len() + self.heap.len()
    }

    /// Whether the stale entries are worth a rebuild (see [`STALE_RATIO`]).
    fn needs_rebuild(&self) -> bool {
        self.entries() > self.volatile.saturating_mul(STALE_RATIO) + STALE_SLACK
    }
}

/// The hash of `key` under `hasher` (the table's only hash function).
#[inline]
fn hash_key(hasher: &SipKey, key: &[u8]) -> u64 {
    hasher.hash(key)
}

/// Keys below which a [`Lookahead`] does nothing: the table and its nodes stay in the caches.
const PREFETCH_MIN_KEYS: usize = 1 << 15;

impl Db {
    /// Number of keys, including ones that expired but were not reclaimed yet (as `DBSIZE`).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Number of keys with a deadline.
    pub(crate) fn volatile_len(&self) -> usize {
        self.deadlines.volatile
    }

    /// Whether `key` has passed its deadline at `now`.
    fn is_expired(entry: &Entry, now: u64) -> bool {
        entry.deadline <= now
    }

    fn find(&self, key: &[u8]) -> Option<&Slot> {
        let hash = hash_key(&self.hasher, key);
        self.entries.find(hash, |s| s.key[..] == *key)
    }

    /// The live entry for `key`, or `None` (an expired key is not returned; the caller is
    /// responsible for reclaiming it with [`Db::find_live`] first when it can write).
    pub(crate) fn get(&self, key: &[u8], now: u64) -> Option<&Entry> {
        self.find(key)
            .map(|s| &s.entry)
            .filter(|e| !Self::is_expired(e, now))
    }

    /// The entry for `key` whether or not its deadline passed (no access-time update).
    pub(crate) fn raw(&self, key: &[u8]) -> Option<&Entry> {
        self.find(key).map(|s| &s.entry)
    }

    /// Whether the keyspace is large enough for a [`Lookahead`] to do anything
    /// ([`PREFETCH_MIN_KEYS`]).
    pub(crate) fn worth_prefetching(&self) -> bool {
        self.entries.len() >= PREFETCH_MIN_KEYS
    }

    /// Finds `key` with one hash: a live entry (its access recorded at `now` if `touch`), or
    /// an expired one removed on the spot, or nothing.
    pub(crate) fn find_live(&mut self, key: &[u8], now: u64, touch: bool) -> Found<&mut Entry> {
        let hash = hash_key(&self.hasher, key);
        let Some(occupied) = self.entries.find_entry(hash, |s| s.key[..] == *key) else {
            return Found::Missing;
        };
        if Self::is_expired(&occupied.get().entry, now) {
            let Slot { key, entry } = occupied.remove();
            Self::forget(&mut self.used, &mut self.deadlines, hash, &entry);
            return Found::Expired(key.into_bytes());
        }
        let entry = &mut occupied.into_mut().entry;
        if touch && !self.no_touch {
            entry.accessed = self.access.touched(entry.accessed, now, &mut self.lfu_rng);
        }
        Found::Live(entry)
    }

    /// Runs `change` on the live value at `key` (touched) and, if it says it changed it (its
    /// second result), measures the value again in place, or removes the key if the change
    /// left an empty aggregate (Redis deletes a list, set, hash or sorted set that a write
    /// empties). One hash and one lookup for the whole write; an expired key is removed
    /// instead, unchanged. The deadline is out of `change`'s reach.
    pub(crate) fn change_live<R>(
        &mut self,
        key: &[u8],
        now: u64,
        change: impl FnOnce(&mut Value) -> (R, bool),
    ) -> Found<(R, bool)> {
        let hash = hash_key(&self.hasher, key);
        let Some(mut occupied) = self.entries.find_entry(hash, |s| s.key[..] == *key) else {
            return Found::Missing;
        };
        if Self::is_expired(&occupied.get().entry, now) {
            let Slot { key, entry } = occupied.remove();
            Self::forget(&mut self.used, &mut self.deadlines, hash, &entry);
            return Found::Expired(key.into_bytes());
        }
        let slot = occupied.get_mut();
        if !self.no_touch {
            slot.entry.accessed = self
                .access
                .touched(slot.entry.accessed, now, &mut self.lfu_rng);
        }
        let (result, changed) = change(&mut slot.entry.value);
        if !changed {
            return Found::Live((result, false));
        }
        if slot.entry.value.is_empty_aggregate() {
            let Slot { entry, .. } = occupied.remove();
            Self::forget(&mut self.used, &mut self.deadlines, hash, &entry);
            return Found::Live((result, true));
        }
        let (old, new) = slot.remeasure();
        self.used = self.used - old as usize + new as usize;
        Found::Live((result, false))
    }

    /// Forgets `entry`, just taken out of the table under `hash`: its share of `used` and its
    /// place in `deadlines` (the two fields, not `self`: a caller may still hold a borrow of
    /// the table).
    fn forget(used: &mut usize, deadlines: &mut Deadlines, hash: u64, entry: &Entry) {
        *used -= entry.size as usize;
        deadlines.update(hash, entry.deadline, NO_DEADLINE);
    }

    /// The live entry for `key` (touched), or a fresh one holding `make()` with no deadline if
    /// the key is absent or expired; with whether a live entry existed and the expired key (the
    /// caller owes its expiry side effects). One hash either way.
    pub(crate) fn find_or_insert(
        &mut self,
        key: &Bytes,
        now: u64,
        make: impl FnOnce() -> Value,
    ) -> (&mut Entry, bool, Option<Bytes>) {
        let (slot, existed, expired) = self.slot_or_insert(key, now, make);
        (&mut slot.entry, existed, expired)
    }

    /// [`Db::find_or_insert`], then `change` on the entry's value, which is measured again
    /// right after if `change` says it changed it (its second result): a write that changes a
    /// value in place this way owes no [`Db::resize`] (one hash and one lookup for the whole
    /// write). The deadline is out of `change`'s reach, so the deadline index stays right.
    pub(crate) fn change_or_insert<R>(
        &mut self,
        key: &Bytes,
        now: u64,
        make: impl FnOnce() -> Value,
        change: impl FnOnce(&mut Value) -> (R, bool),
    ) -> (R, bool, Option<Bytes>) {
        let (slot, existed, expired) = self.slot_or_insert(key, now, make);
        let (result, changed) = change(&mut slot.entry.value);
        if changed {
            let (old, new) = slot.remeasure();
            self.used = self.used - old as usize + new as usize;
        }
        (result, existed, expired)
    }

    /// The slot behind [`Db::find_or_insert`] (key and entry, so a caller can measure both).
    fn slot_or_insert(
        &mut self,
        key: &Bytes,
        now: u64,
        make: impl FnOnce() -> Value,
    ) -> (&mut Slot, bool, Option<Bytes>) {
        let hash = hash_key(&self.hasher, key);
        match self.entries.entry(hash, |s| s.key[..] == key[..]) {
            TableEntry::Occupied(occupied) => {
                let slot = occupied.into_mut();
                if !Self::is_expired(&slot.entry, now) {
                    if !self.no_touch {
                        slot.entry.accessed =
                            self.access
                                .touched(slot.entry.accessed, now, &mut self.lfu_rng);
                    }
                    return (slot, true, None);
                }
                // Reuse the slot for the new value; the old key leaves the deadline index.
                self.deadlines
                    .update(hash, slot.entry.deadline, NO_DEADLINE);
                let (old, new) = slot.replace(Entry::new(make(), None, self.access.fresh(now)));
                self.used = self.used - old as usize + new as usize;
                let expired = slot.key.to_bytes();
                (slot, false, Some(expired))
            }
            TableEntry::Vacant(vacant) => {
                let entry = Entry::new(make(), None, self.access.fresh(now));
                let slot = vacant.insert(Slot::new(Key::new(key), entry));
                self.used += slot.size() as usize;
                (slot, false, None)
            }
        }
    }

    /// Stores `value` under `key` with `expire_at`, replacing any previous entry, with one
    /// hash; says what was there at `now`. A live key replaced keeps its access record,
    /// touched (Redis's `setKey`: the write's lookup touches the key, and `dbOverwrite` keeps
    /// the old LFU counter); a new or expired one starts afresh.
    pub(crate) fn insert(
        &mut self,
        key: &[u8],
        value: Value,
        expire_at: Option<u64>,
        now: u64,
    ) -> Inserted {
        // The access record is `put`'s to give (0 is never read).
        self.put(key, Entry::new(value, expire_at, 0), now, false)
    }

    /// Stores `entry`, a key moved here whole (RENAME, MOVE), under `key` with its own access
    /// record, as Redis moves the object itself; says what was there at `now`.
    pub(crate) fn insert_moved(&mut self, key: &[u8], entry: Entry, now: u64) -> Inserted {
        self.put(key, entry, now, true)
    }

    /// The store behind [`Db::insert`] and [`Db::insert_moved`]: `entry` under `key`, with its
    /// own access record if `moved`, else a fresh one or the replaced live entry's, touched.
    fn put(&mut self, key: &[u8], mut entry: Entry, now: u64, moved: bool) -> Inserted {
        let hash = hash_key(&self.hasher, key);
        let deadline = entry.deadline;
        let created = match self.entries.entry(hash, |s| s.key[..] == key[..]) {
            TableEntry::Occupied(mut occupied) => {
                let slot = occupied.get_mut();
                let expired = Self::is_expired(&slot.entry, now);
                self.deadlines.update(hash, slot.entry.deadline, deadline);
                if !moved {
                    entry.accessed = if expired {
                        self.access.fresh(now)
                    } else if self.no_touch {
                        slot.entry.accessed
                    } else {
                        self.access
                            .touched(slot.entry.accessed, now, &mut self.lfu_rng)
                    };
                }
                let (old, new) = slot.replace(entry);
                self.used = self.used - old as usize + new as usize;
                if expired {
                    Inserted::Expired
                } else {
                    Inserted::Replaced
                }
            }
            TableEntry::Vacant(vacant) => {
                if !moved {
                    entry.accessed = self.access.fresh(now);
                }
                self.deadlines.update(hash, NO_DEADLINE, deadline);
                let slot = vacant.insert(Slot::new(Key::new(key), entry));
                self.used += slot.size() as usize;
                Inserted::New
            }
        };
        self.drop_stale_deadlines();
        created
    }

    /// Removes `key`; returns its entry.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let hash = hash_key(&self.hasher, key);
        let Slot { entry, .. } = self.entries.remove(hash, |s| s.key[..] == *key)?;
        Self::forget(&mut self.used, &mut self.deadlines, hash, &entry);
        Some(entry)
    }

    /// Removes `key` with one hash, telling a live entry from one whose deadline passed at
    /// `now`.
    pub(crate) fn remove_live(&mut self, key: &[u8], now: u64) -> Removed {
        let hash = hash_key(&self.hasher, key);
        let Some(Slot { key, entry }) = self.entries.remove(hash, |s| s.key[..] == *key) else {
            return Removed::Missing;
        };
        Self::forget(&mut self.used, &mut self.deadlines, hash, &entry);
        if Self::is_expired(&entry, now) {
            Removed::Expired(key.into_bytes())
        } else {
            Removed::Live(entry)
        }
    }

    /// Sets or clears the deadline of an existing key; returns false if the key is absent.
    pub(crate) fn set_expire(&mut self, key: &[u8], expire_at: Option<u64>) -> bool {
        let hash = hash_key(&self.hasher, key);
        let Some(slot) = self.entries.find_mut(hash, |s| s.key[..] == *key) else {
            return false;
        };
        let expire_at = to_deadline(expire_at);
        self.deadlines.update(hash, slot.entry.deadline, expire_at);
        slot.entry.deadline = expire_at;
        let (old, new) = slot.remeasure();
        self.used = self.used - old as usize + new as usize;
        self.drop_stale_deadlines();
        true
    }

    /// Accounts `key`'s memory again after its value was changed in place (every write
    /// reports the keys it modified; [`crate::node::State::finish_effects`] calls this).
    pub(crate) fn resize(&mut self, key: &[u8]) {
        let hash = hash_key(&self.hasher, key);
        if let Some(slot) = self.entries.find_mut(hash, |s| s.key[..] == *key) {
            let (old, new) = slot.remeasure();
            self.used = self.used - old as usize + new as usize;
        }
    }

    /// Estimated bytes of all keys and values (as last accounted).
    pub(crate) fn used_bytes(&self) -> usize {
        self.used
    }

    /// Every key measured afresh, summed: what [`Db::used_bytes`] must equal.
    #[cfg(test)]
    pub(crate) fn measured_afresh(&self) -> usize {
        self.entries
            .iter()
            .map(|slot| Slot::measure(&slot.key, &slot.entry) as usize)
            .sum()
    }

    /// How accesses are recorded.
    pub(crate) fn access(&self) -> Access {
        self.access
    }

    /// Records accesses as `access` says from now on (the `maxmemory-policy` changed).
    pub(crate) fn set_access(&mut self, access: Access) {
        self.access = access;
    }

    /// Examines up to `limit` entries of the deadline index due at `now`, earliest first, and
    /// moves the keys whose deadline passed into `expired` (the caller owes their expiry side
    /// effects); returns how many entries it examined, fewer than `limit` once none is due.
    ///
    /// An entry examined expires its key, or files it again under the later deadline it moved
    /// to, or is dropped (its key left or lost its deadline).
    pub(crate) fn take_expired(&mut self, now: u64, limit: usize, expired: &mut Vec<Key>) -> usize {
        let mut examined = 0;
        while examined < limit {
            let Some((at, hash)) = self.deadlines.first() else {
                break;
            };
            if at > now {
                break;
            }
            self.deadlines.pop_first();
            examined += 1;
            if self.expire_with_deadline(hash, at, expired) {
                continue;
            }
            match self.later_deadline(hash, at) {
                Some(deadline) if deadline <= now => {
                    self.expire_with_deadline(hash, deadline, expired);
                }
                Some(deadline) => self.deadlines.file(deadline, hash),
                None => {}
            }
        }
        // A wave of expired keys leaves the index's buffers large and empty: give them back.
        if self.deadlines.run.is_empty() && self.deadlines.run.capacity() > STALE_SLACK {
            self.deadlines.run = VecDeque::new();
        }
        if self.deadlines.heap.is_empty() && self.deadlines.heap.capacity() > STALE_SLACK {
            self.deadlines.heap = BinaryHeap::new();
        }
        examined
    }

    /// Removes the key hashed `hash` whose deadline is `deadline` into `expired`; returns
    /// whether there was one.
    fn expire_with_deadline(&mut self, hash: u64, deadline: u64, expired: &mut Vec<Key>) -> bool {
        // Only the key and its size come out; the rest is dropped in place.
        let Some((key, size)) = self.entries.remove_with(
            hash,
            |s| s.entry.deadline == deadline,
            |s| (std::mem::replace(&mut s.key, Key::EMPTY), s.size()),
        ) else {
            return false;
        };
        self.used -= size as usize;
        self.deadlines.update(hash, deadline, NO_DEADLINE);
        expired.push(key);
        true
    }

    /// The deadline a key filed at `at` moved to, when no key hashed `hash` has `at` itself:
    /// the deadline of a volatile key of that hash later than `at`, or `None` if the entry
    /// was stale (its key left or lost its deadline).
    ///
    /// Two keys of one 64-bit hash (a keyed SipHash: one pair in about 10^7 keyspaces of a
    /// million keys) may take each other's entry here. A key left without an entry still
    /// expires when it is next read, and is filed again by the next rebuild.
    fn later_deadline(&self, hash: u64, at: u64) -> Option<u64> {
        self.entries
            .find(hash, |s| s.entry.is_volatile() && s.entry.deadline > at)
            .map(|s| s.entry.deadline)
    }

    /// Rebuilds the deadline heap from the table once stale entries pile up ([`STALE_RATIO`]).
    #[inline]
    fn drop_stale_deadlines(&mut self) {
        if self.deadlines.needs_rebuild() {
            self.rebuild_deadlines();
        }
    }

    /// The rebuild [`Db::drop_stale_deadlines`] decides on, kept out of the write path.
    #[cold]
    #[inline(never)]
    fn rebuild_deadlines(&mut self) {
        let mut live = Vec::with_capacity(self.deadlines.volatile);
        self.entries.for_each_hashed(|hash, s| {
            if s.entry.is_volatile() {
                live.push(Reverse((s.entry.deadline, hash)));
            }
        });
        self.deadlines.volatile = live.len();
        self.deadlines.run.clear();
        self.deadlines.heap = BinaryHeap::from(live);
    }

    /// Every key with its entry, live or not yet reclaimed.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&Key, &Entry)> + '_ {
        self.entries.iter().map(|s| (&s.key, &s.entry))
    }

    /// The volatile key with the earliest deadline (settling the index entries on the way:
    /// stale ones dropped, those of keys whose deadline moved later filed again under it).
    pub(crate) fn soonest_deadline(&mut self) -> Option<(Bytes, u64)> {
        // Bounded: each round drops an entry that is not exact, and files only exact ones.
        while let Some((at, hash)) = self.deadlines.first() {
            if let Some(slot) = self.entries.find(hash, |s| s.entry.deadline == at) {
                return Some((slot.key.to_bytes(), at));
            }
            self.deadlines.pop_first();
            if let Some(deadline) = self.later_deadline(hash, at) {
                self.deadlines.file(deadline, hash);
            }
        }
        None
    }

    /// One SCAN step over the keys (Redis's `dictScan`, see [`Dict::scan`]): calls `f` with
    /// every key of the buckets `cursor` designates, live or not yet reclaimed, and returns
    /// the next cursor (0 at the end).
    pub(crate) fn scan(&self, cursor: u64, mut f: impl FnMut(&Key, &Entry)) -> u64 {
        self.entries.scan(cursor, |s| f(&s.key, &s.entry))
    }

    /// Moves up to `buckets` buckets of a table being resized into its new table (Redis's
    /// `incrementallyRehash`, from the node's periodic task); returns whether more remain.
    pub(crate) fn rehash(&mut self, buckets: usize) -> bool {
        self.entries.rehash(buckets)
    }

    /// All keys, live or not yet reclaimed (callers filter with `get`).
    pub(crate) fn keys(&self) -> impl Iterator<Item = &Key> + '_ {
        self.entries.iter().map(|s| &s.key)
    }

    /// Removes every key, keeping no allocation (the deadline index's buffers included).
    pub(crate) fn clear(&mut self) {
        drop(self.take_all());
    }

    /// Empties the database as [`Db::clear`] does, handing over its keys to be dropped
    /// elsewhere (`FLUSHALL ASYNC`).
    pub(crate) fn take_all(&mut self) -> impl Send + 'static {
        self.used = 0;
        (
            std::mem::take(&mut self.entries),
            std::mem::take(&mut self.deadlines),
        )
    }

    /// A key drawn at random, live or not, and whether its deadline passed at `now`.
    pub(crate) fn random_key_drawn(
        &self,
        now: u64,
        rng: &mut impl rand::Rng,
    ) -> Option<(Bytes, bool)> {
        let slot = self.entries.random(rng)?;
        Some((slot.key.to_bytes(), Self::is_expired(&slot.entry, now)))
    }

    /// A random live key (a replica's `RANDOMKEY`, which reclaims nothing): random draws as
    /// Redis's `dbRandomKey` (skipping keys past their deadline), then, if every draw found an
    /// expired key, a pass over all.
    pub(crate) fn random_key(&self, now: u64, rng: &mut impl rand::Rng) -> Option<Bytes> {
        use rand::seq::IteratorRandom;
        for _ in 0..100 {
            let slot = self.entries.random(rng)?;
            if !Self::is_expired(&slot.entry, now) {
                return Some(slot.key.to_bytes());
            }
        }
        self.entries
            .iter()
            .filter(|s| !Self::is_expired(&s.entry, now))
            .map(|s| &s.key)
            .choose(rng)
            .map(Key::to_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(v: &str) -> Bytes {
        Bytes::copy_from_slice(v.as_bytes())
    }

    fn s(v: &str) -> Value {
        Value::String(k(v).into())
    }

    /// The keys one [`Db::take_expired`] call reclaims.
    fn taken(db: &mut Db, now: u64, limit: usize) -> Vec<Key> {
        let mut keys = Vec::new();
        db.take_expired(now, limit, &mut keys);
        keys
    }

    #[test]
    fn node_fits_its_size_class() {
        // 16 bytes of hash and link, then the slot: mimalloc's 96-byte class, no slack.
        assert_eq!(std::mem::size_of::<Slot>() + 16, 96);
    }

    #[test]
    fn a_deadline_at_the_sentinel_stays_a_deadline() {
        let mut db = Db::default();
        db.insert(&k("a"), s("1"), Some(u64::MAX), 0);
        let e = db.raw(b"a").expect("stored");
        assert_eq!(e.expire_at(), Some(u64::MAX - 1));
        assert_eq!(db.volatile_len(), 1);
        assert!(db.set_expire(b"a", None));
        assert!(db.raw(b"a").is_some_and(|e| e.expire_at().is_none()));
        assert_eq!(db.volatile_len(), 0);
        assert!(matches!(
            db.find_live(b"a", u64::MAX - 1, false),
            Found::Live(_)
        ));
    }

    #[test]
    fn insert_says_whether_it_replaced_a_live_or_an_expired_entry() {
        let mut db = Db::default();
        assert_eq!(db.insert(&k("a"), s("1"), Some(10), 0), Inserted::New);
        assert_eq!(db.insert(&k("a"), s("2"), Some(10), 9), Inserted::Replaced);
        assert_eq!(db.insert(&k("a"), s("3"), None, 10), Inserted::Expired);
        assert_eq!(db.volatile_len(), 0);
        assert_eq!(
            db.insert(&k("a"), s("4"), None, u64::MAX - 1),
            Inserted::Replaced
        );
        assert_eq!(db.len(), 1);
    }

    #[test]
    fn a_value_changed_in_place_is_measured_with_it() {
        let long = "x".repeat(1000);
        let mut measured = Db::default();
        measured.insert(b"a", s(&long), None, 0);
        measured.insert(b"b", s(&long), None, 0);
        let mut db = Db::default();
        db.insert(b"a", s("1"), None, 0);
        let (was, existed, expired) = db.change_or_insert(
            &k("a"),
            0,
            || s("unused"),
            |v| (std::mem::replace(v, s(&long)), true),
        );
        assert!(existed && expired.is_none());
        assert!(matches!(was, Value::String(v) if v.as_bytes() == b"1"));
        // A new key: made, then changed, then measured once.
        let ((), existed, _) = db.change_or_insert(
            &k("b"),
            0,
            || s(""),
            |v| {
                *v = s(&long);
                ((), true)
            },
        );
        assert!(!existed);
        assert_eq!(db.used_bytes(), measured.used_bytes());
        assert_eq!(db.used_bytes(), db.measured_afresh());
        db.remove(b"a");
        db.remove(b"b");
        assert_eq!(db.used_bytes(), 0);
    }

    #[test]
    fn accounted_memory_returns_to_zero_after_replacing_and_removing() {
        let mut db = Db::default();
        db.insert(&k("a"), s("1"), Some(10), 0);
        db.insert(&k("a"), s(&"x".repeat(100)), None, 0);
        let (_, existed, expired) = db.find_or_insert(&k("a"), 5, || s("new"));
        assert!(existed && expired.is_none());
        db.insert(&k("b"), s("2"), Some(10), 0);
        let (_, existed, expired) = db.find_or_insert(&k("b"), 20, || s("new"));
        assert!(!existed && expired.is_some());
        assert!(db.set_expire(b"b", Some(30)));
        db.remove(b"a");
        db.remove(b"b");
        assert_eq!(db.used_bytes(), 0);
    }

    /// Starts a lookahead over `keys` and walks it to its end.
    fn walk_ahead(db: &Db, keys: &[&[u8]]) {
        let mut ahead = Lookahead::default();
        ahead.start(0, db, keys.iter().map(|key| Some(*key)));
        for _ in 0..keys.len() + 2 {
            ahead.advance(0, db);
        }
    }

    #[test]
    fn looking_ahead_at_keys_changes_nothing_but_the_caches() {
        let mut db = Db::default();
        let mut rehashing_seen = false;
        for i in 0..PREFETCH_MIN_KEYS + 100 {
            db.insert(format!("key:{i}").as_bytes(), s("v"), None, 0);
            // Ask while the table grows too: lookups then read both tables.
            if i >= PREFETCH_MIN_KEYS - 1 && db.entries.is_rehashing() {
                rehashing_seen = true;
                walk_ahead(&db, &[b"key:1", b"key:40000", b"missing", b""]);
            }
        }
        assert!(rehashing_seen, "the table grew past the prefetch threshold");
        // Values with an allocation of their own: a long string and a small hash (a lock).
        db.insert(b"long", s(&"x".repeat(100)), None, 0);
        let mut lock = HashValue::new();
        lock.insert(&k("owner"), &k("1"), hash_value::ListpackLimits::DEFAULT);
        db.insert(b"lock", Value::Hash(lock), None, 0);
        walk_ahead(&db, &[b"long", b"lock"]);
        let used = db.used_bytes();
        let keys: Vec<Vec<u8>> = (0..LOOKAHEAD_MAX + 4)
            .map(|i| format!("key:{}", i * 1000).into_bytes())
            .collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        walk_ahead(&db, &refs);
        walk_ahead(&db, &[]);
        assert_eq!((db.len(), db.used_bytes()), (PREFETCH_MIN_KEYS + 102, used));
        for key in &keys {
            assert!(matches!(db.find_live(key, 0, false), Found::Live(_)));
        }
    }

    #[test]
    fn find_live_reclaims_an_expired_key_and_its_deadline() {
        let mut db = Db::default();
        db.insert(&k("a"), s("1"), Some(100), 0);
        db.insert(&k("b"), s("2"), None, 0);
        assert!(matches!(db.find_live(b"a", 99, true), Found::Live(e) if e.accessed == 99));
        assert!(matches!(db.find_live(b"a", 100, true), Found::Expired(key) if key == "a"));
        assert_eq!((db.len(), db.volatile_len()), (1, 0));
        assert!(matches!(db.find_live(b"a", 100, true), Found::Missing));
        assert!(matches!(db.find_live(b"b", 5, false), Found::Live(e) if e.accessed == 0));
    }

    #[test]
    fn find_or_insert_keeps_a_live_key_and_replaces_an_expired_one() {
        let mut db = Db::default();
        db.insert(&k("h"), s("old"), Some(100), 0);
        let (e, existed, expired) = db.find_or_insert(&k("h"), 50, || s("new"));
        assert!(existed && expired.is_none() && e.expire_at() == Some(100) && e.accessed == 50);
        let (e, existed, expired) = db.find_or_insert(&k("h"), 100, || s("new"));
        assert!(!existed && e.expire_at().is_none());
        assert!(matches!(&e.value, Value::String(v) if &v[..] == b"new"));
        assert!(expired.is_some_and(|key| key == "h"));
        assert_eq!(db.volatile_len(), 0);
        let (_, existed, expired) = db.find_or_insert(&k("n"), 100, || s("x"));
        assert!(!existed && expired.is_none());
        assert_eq!(db.len(), 2);
    }

    #[test]
    fn deadline_index_follows_insert_set_expire_and_remove() {
        let mut db = Db::default();
        db.insert(&k("a"), s("1"), Some(10), 0);
        db.insert(&k("b"), s("1"), Some(5), 0);
        db.insert(&k("a"), s("2"), Some(20), 0);
        assert_eq!(db.volatile_len(), 2);
        assert!(db.set_expire(b"b", Some(30)));
        assert!(db.set_expire(b"b", Some(30)));
        assert!(!db.set_expire(b"zz", Some(1)));
        assert_eq!(db.volatile_len(), 2);
        // a's old deadline (10) and b's (5) are stale: only a (20) is due at 25.
        assert!(taken(&mut db, 25, 10) == [k("a")]);
        assert_eq!((db.len(), db.volatile_len()), (1, 1));
        db.insert(&k("c"), s("1"), Some(40), 0);
        db.insert(&k("d"), s("1"), Some(35), 0);
        assert!(db.set_expire(b"c", None));
        assert!(matches!(db.remove_live(b"b", 30), Removed::Expired(key) if key == "b"));
        assert_eq!(db.volatile_len(), 1);
        assert!(taken(&mut db, 100, 10) == [k("d")]);
        assert_eq!((db.len(), db.volatile_len()), (1, 0));
        assert!(
            matches!(db.find_live(b"c", 100, false), Found::Live(e) if e.expire_at().is_none())
        );
    }

    #[test]
    fn take_expired_goes_earliest_first_within_its_limit() {
        let mut db = Db::default();
        for (i, at) in [50u64, 10, 40, 20, 30].into_iter().enumerate() {
            db.insert(&k(&format!("k{i}")), s("v"), Some(at), 0);
        }
        assert!(taken(&mut db, 35, 2) == [k("k1"), k("k3")]);
        assert!(taken(&mut db, 35, 10) == [k("k4")]);
        assert!(taken(&mut db, 35, 10).is_empty());
        assert_eq!((db.len(), db.volatile_len()), (2, 2));
    }

    #[test]
    fn a_renewed_deadline_keeps_one_entry_filed_again_when_it_comes_due() {
        let mut db = Db::default();
        db.insert(&k("lock"), s("v"), Some(1), 0);
        db.insert(&k("other"), s("v"), Some(50), 0);
        // A lock renewed again and again (each lease later than the last) writes nothing.
        for at in 2..3000 {
            assert!(db.set_expire(b"lock", Some(at)));
        }
        assert_eq!((db.deadlines.entries(), db.volatile_len()), (2, 2));
        // Its first entry comes due: the key is filed under its deadline now, not expired.
        let mut keys = Vec::new();
        assert_eq!(db.take_expired(10, 5, &mut keys), 1);
        assert!(keys.is_empty());
        assert_eq!(db.deadlines.entries(), 2);
        // Eviction by soonest deadline sees the renewed lease, not the old one.
        assert!(db.soonest_deadline() == Some((k("other"), 50)));
        assert!(taken(&mut db, 2998, 10) == [k("other")]);
        assert!(taken(&mut db, 2999, 10) == [k("lock")]);
        assert_eq!(
            (db.len(), db.volatile_len(), db.deadlines.entries()),
            (0, 0, 0)
        );
    }

    #[test]
    fn a_renewed_deadline_already_passed_expires_at_its_old_entry() {
        let mut db = Db::default();
        db.insert(&k("a"), s("v"), Some(10), 0);
        assert!(db.set_expire(b"a", Some(20)));
        assert!(taken(&mut db, 25, 10) == [k("a")]);
        assert_eq!(
            (db.len(), db.volatile_len(), db.deadlines.entries()),
            (0, 0, 0)
        );
    }

    #[test]
    fn soonest_deadline_settles_entries_of_moved_and_removed_keys() {
        let mut db = Db::default();
        db.insert(&k("a"), s("v"), Some(10), 0);
        db.insert(&k("b"), s("v"), Some(20), 0);
        db.insert(&k("c"), s("v"), Some(30), 0);
        assert!(db.set_expire(b"a", Some(40)));
        db.remove(b"b");
        assert!(db.soonest_deadline() == Some((k("c"), 30)));
        // Persisted, then given an earlier deadline again: both entries lead to the key once.
        assert!(db.set_expire(b"c", None));
        assert!(db.set_expire(b"c", Some(35)));
        assert!(db.soonest_deadline() == Some((k("c"), 35)));
        assert!(taken(&mut db, 100, 10) == [k("c"), k("a")]);
        assert!(db.soonest_deadline().is_none());
    }

    #[test]
    fn stale_deadlines_are_dropped_once_they_outnumber_live_ones() {
        let mut db = Db::default();
        let last = 3 * STALE_SLACK as u64;
        db.insert(&k("lock"), s("v"), Some(last), 0);
        // A deadline moved earlier each time leaves one stale entry per move until the rebuild.
        for at in (2..last).rev() {
            assert!(db.set_expire(b"lock", Some(at)));
        }
        assert!(db.deadlines.entries() <= STALE_RATIO + STALE_SLACK + 1);
        assert_eq!(db.volatile_len(), 1);
        assert!(taken(&mut db, last, 10) == [k("lock")]);
        assert_eq!((db.len(), db.volatile_len()), (0, 0));
    }
}
