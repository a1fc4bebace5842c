//! The keyspace: databases of keys with values and absolute expiry deadlines (node-clock ms).
//!
//! Every read goes through [`Db::lookup`] / [`Db::lookup_mut`], which expire lazily against the
//! `now` they are given; the active expiry cycle ([`Db::expired_keys`]) walks deadlines in order.

mod value;
mod zset;

pub(crate) use value::{HashValue, Value};
pub(crate) use zset::ZSet;

use bytes::Bytes;
use std::collections::{BTreeSet, HashMap};

/// One stored key.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The value.
    pub(crate) value: Value,
    /// Absolute deadline in node-clock milliseconds, if the key is volatile.
    pub(crate) expire_at: Option<u64>,
    /// Last access time (node-clock ms) for `OBJECT IDLETIME`.
    pub(crate) accessed: u64,
}

/// One numbered database.
#[derive(Debug, Default, Clone)]
pub(crate) struct Db {
    entries: HashMap<Bytes, Entry>,
    /// (deadline, key) for every volatile key, for the active expiry cycle.
    deadlines: BTreeSet<(u64, Bytes)>,
}

impl Db {
    /// Number of keys, including ones that expired but were not reclaimed yet (as `DBSIZE`).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Number of keys with a deadline.
    pub(crate) fn volatile_len(&self) -> usize {
        self.deadlines.len()
    }

    /// Whether `key` has passed its deadline at `now`.
    fn is_expired(entry: &Entry, now: u64) -> bool {
        entry.expire_at.is_some_and(|at| at <= now)
    }

    /// The live entry for `key`, or `None` (an expired key is not returned; the caller is
    /// responsible for reclaiming it with [`Db::expire_if_needed`] first when it can write).
    pub(crate) fn get(&self, key: &[u8], now: u64) -> Option<&Entry> {
        self.entries.get(key).filter(|e| !Self::is_expired(e, now))
    }

    /// The entry for `key` whether or not its deadline passed (no access-time update).
    pub(crate) fn raw(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// Removes `key` if it expired at `now`; returns whether it did.
    pub(crate) fn expire_if_needed(&mut self, key: &[u8], now: u64) -> bool {
        match self.entries.get(key) {
            Some(e) if Self::is_expired(e, now) => {
                self.remove(key);
                true
            }
            _ => false,
        }
    }

    /// The live entry for `key`, mutable, touching its access time. An expired key is removed.
    pub(crate) fn lookup_mut(&mut self, key: &[u8], now: u64) -> Option<&mut Entry> {
        self.expire_if_needed(key, now);
        let entry = self.entries.get_mut(key)?;
        entry.accessed = now;
        Some(entry)
    }

    /// Stores `value` under `key` with `expire_at`, replacing any previous entry.
    pub(crate) fn insert(&mut self, key: Bytes, value: Value, expire_at: Option<u64>, now: u64) {
        if let Some(old) = self.entries.get(&key).and_then(|e| e.expire_at) {
            self.deadlines.remove(&(old, key.clone()));
        }
        if let Some(at) = expire_at {
            self.deadlines.insert((at, key.clone()));
        }
        self.entries.insert(
            key,
            Entry {
                value,
                expire_at,
                accessed: now,
            },
        );
    }

    /// Removes `key`; returns its entry.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let (key, entry) = self.entries.remove_entry(key)?;
        if let Some(at) = entry.expire_at {
            self.deadlines.remove(&(at, key));
        }
        Some(entry)
    }

    /// Sets or clears the deadline of an existing key; returns false if the key is absent.
    pub(crate) fn set_expire(&mut self, key: &[u8], expire_at: Option<u64>) -> bool {
        let Some(key) = self.entries.get_key_value(key).map(|(k, _)| k.clone()) else {
            return false;
        };
        let Some(entry) = self.entries.get_mut(&key) else {
            return false;
        };
        if let Some(old) = entry.expire_at {
            self.deadlines.remove(&(old, key.clone()));
        }
        if let Some(at) = expire_at {
            self.deadlines.insert((at, key.clone()));
        }
        entry.expire_at = expire_at;
        true
    }

    /// Up to `limit` keys whose deadline is at or before `now`, earliest first.
    pub(crate) fn expired_keys(&self, now: u64, limit: usize) -> Vec<Bytes> {
        self.deadlines
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .map(|(_, k)| k.clone())
            .collect()
    }

    /// All keys, live or not yet reclaimed (callers filter with `get`).
    pub(crate) fn keys(&self) -> impl Iterator<Item = &Bytes> + '_ {
        self.entries.keys()
    }

    /// Removes every key.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.deadlines.clear();
    }

    /// A random live key (for `RANDOMKEY`).
    pub(crate) fn random_key(&self, now: u64, rng: &mut impl rand::Rng) -> Option<Bytes> {
        use rand::seq::IteratorRandom;
        self.entries
            .iter()
            .filter(|(_, e)| !Self::is_expired(e, now))
            .map(|(k, _)| k)
            .choose(rng)
            .cloned()
    }
}
