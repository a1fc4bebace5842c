//! `maxmemory`: the memory the keyspace may use, and what happens past it
//! (`maxmemory-policy`), as Redis's `performEvictions` does before each command.
//!
//! Memory is the estimate [`State::used_memory`] keeps up to date after every write (see
//! [`crate::db::memory`]). Past the limit, the LRU, LFU and random policies evict the best
//! candidates of an eviction pool, refilled by one pass over the keyspace that keeps the
//! best 1/[`POOL_FRACTION`] of the keys, at least [`POOL_MIN`] (Redis samples
//! `maxmemory-samples` keys into a pool of 16; a pass over all keys picks better victims, and
//! a pool proportional to the keyspace keeps the cost per eviction constant);
//! `volatile-ttl` takes the key whose deadline comes first, from the expiry index. Each
//! eviction has Redis's side effects: the `evicted` keyspace event, a `DEL` for replicas,
//! WATCH invalidation, `evicted_keys` in `INFO stats`. `noeviction`, or nothing left to
//! evict, is `OOM` for the commands Redis refuses then (see [`Outcome`]).

use crate::db::Access;
use crate::node::{Effects, State};
use bytes::Bytes;
use rand::Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Redis's reply to a command refused for memory.
pub(crate) const OOM_ERROR: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Memory Redis 7.0 reports for an empty server (`used_memory` right after start), which a
/// `maxmemory` set from real Redis's numbers must leave room for.
pub(crate) const BASELINE_MEMORY: u64 = 880_000;

/// One pass over the keyspace keeps the best 1/`POOL_FRACTION` of the keys as candidates...
const POOL_FRACTION: usize = 16;
/// ... but at least this many.
const POOL_MIN: usize = 128;

/// Most keys one command's eviction round removes; past it the command runs anyway and the
/// next one goes on (Redis bounds a round by time, `maxmemory-eviction-tenacity`).
const MAX_EVICTIONS_PER_ROUND: usize = 100_000;

/// `maxmemory-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Policy {
    /// Refuse writes that may grow memory (the default).
    #[default]
    NoEviction,
    /// Least recently used of all keys.
    AllKeysLru,
    /// Least frequently used of all keys.
    AllKeysLfu,
    /// Any key.
    AllKeysRandom,
    /// Least recently used of the keys with a TTL.
    VolatileLru,
    /// Least frequently used of the keys with a TTL.
    VolatileLfu,
    /// Any key with a TTL.
    VolatileRandom,
    /// The key with a TTL that expires first.
    VolatileTtl,
}

impl Policy {
    /// The policy named `name` (as `CONFIG SET` validated it); `noeviction` otherwise.
    pub(crate) fn parse(name: &str) -> Policy {
        match name {
            "allkeys-lru" => Policy::AllKeysLru,
            "allkeys-lfu" => Policy::AllKeysLfu,
            "allkeys-random" => Policy::AllKeysRandom,
            "volatile-lru" => Policy::VolatileLru,
            "volatile-lfu" => Policy::VolatileLfu,
            "volatile-random" => Policy::VolatileRandom,
            "volatile-ttl" => Policy::VolatileTtl,
            _ => Policy::NoEviction,
        }
    }

    /// Whether only keys with a TTL may go.
    fn volatile_only(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    /// Whether accesses are counted (LFU) rather than timed (LRU).
    pub(crate) fn is_lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }
}

/// The eviction policy and the candidate pool (`maxmemory` itself is read live from
/// [`crate::node::lockfree::Live`], as every connection checks it before taking the state lock).
#[derive(Debug, Default)]
pub(crate) struct Eviction {
    /// `maxmemory-policy`.
    pub(crate) policy: Policy,
    /// Candidates from the last pass, best last: (db, key).
    pool: Vec<(usize, Bytes)>,
}

/// What an eviction round achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Under the limit (or no limit, or a replica, which follows its master instead).
    Fits,
    /// Still over the limit, nothing (more) may be evicted: commands that may grow memory are
    /// refused with `OOM`.
    OutOfMemory,
}

impl State {
    /// Estimated memory in use: a fixed baseline plus every key and value.
    pub(crate) fn used_memory(&self) -> u64 {
        BASELINE_MEMORY + self.dbs.iter().map(|d| d.used_bytes() as u64).sum::<u64>()
    }

    /// The apply step of `maxmemory-policy`, `lfu-log-factor` and `lfu-decay-time`: takes the
    /// policy from the node's configuration, and how keys record their accesses (an LRU clock,
    /// or an LFU counter with the configured log factor and decay).
    pub(crate) fn apply_eviction_config(&mut self) {
        let policy = Policy::parse(self.config.maxmemory_policy());
        let access = if policy.is_lfu() {
            Access::Lfu {
                log_factor: self.config.lfu_log_factor(),
                decay_minutes: self.config.lfu_decay_time(),
            }
        } else {
            Access::Lru
        };
        self.set_eviction_policy(policy, access);
    }

    /// Sets `maxmemory-policy`; switching between LRU and LFU changes how accesses are
    /// recorded from now on.
    pub(crate) fn set_eviction_policy(&mut self, policy: Policy, access: Access) {
        self.eviction.policy = policy;
        self.eviction.pool.clear();
        for db in &mut self.dbs {
            db.set_access(access);
        }
    }

    /// Redis's `performEvictions`: while memory is over `limit` (`maxmemory`; 0: none),
    /// evicts keys as the policy says. A replica does not evict (`replica-ignore-maxmemory`):
    /// its master's deletions reach it.
    pub(crate) fn perform_evictions(
        &mut self,
        limit: u64,
        now: u64,
        effects: &mut Effects,
    ) -> Outcome {
        if limit == 0 || self.repl.is_replica() || self.used_memory() <= limit {
            return Outcome::Fits;
        }
        if self.eviction.policy == Policy::NoEviction {
            return Outcome::OutOfMemory;
        }
        for _ in 0..MAX_EVICTIONS_PER_ROUND {
            let Some((db, key)) = self.next_victim(now) else {
                return Outcome::OutOfMemory;
            };
            self.evict(db, &key, effects);
            if self.used_memory() <= limit {
                return Outcome::Fits;
            }
        }
        Outcome::Fits
    }

    /// Removes `key` from `db` with the side effects of an eviction.
    fn evict(&mut self, db: usize, key: &Bytes, effects: &mut Effects) {
        if self.dbs.get_mut(db).and_then(|d| d.remove(key)).is_none() {
            return;
        }
        self.stats.evicted_keys += 1;
        self.dirty += 1;
        effects.keyspace_event(db, crate::notify::EVICTED, "evicted", key);
        effects.modified.push((db, key.clone()));
        if effects.propagating(&self.repl) {
            let del = crate::node::deletion_command(self.config.lazyfree_lazy_eviction());
            effects.propagate.push((db, vec![del, key.clone()]));
        }
    }

    /// The next key to evict, or `None` when no key qualifies.
    fn next_victim(&mut self, now: u64) -> Option<(usize, Bytes)> {
        let policy = self.eviction.policy;
        if policy == Policy::VolatileTtl {
            return self
                .dbs
                .iter_mut()
                .enumerate()
                .filter_map(|(i, d)| d.soonest_deadline().map(|(key, at)| (at, i, key)))
                .min_by_key(|(at, i, _)| (*at, *i))
                .map(|(_, i, key)| (i, key));
        }
        for refilled in [false, true] {
            while let Some((db, key)) = self.eviction.pool.pop() {
                let still_there = self
                    .dbs
                    .get(db)
                    .and_then(|d| d.raw(&key))
                    .is_some_and(|e| !policy.volatile_only() || e.expire_at().is_some());
                if still_there {
                    return Some((db, key));
                }
            }
            if refilled {
                break;
            }
            self.refill_pool(now);
        }
        None
    }

    /// One pass over every database keeping the best candidates of the policy (see
    /// [`POOL_FRACTION`]):
    /// the longest idle (LRU), the least used (LFU), or a uniform sample (random).
    fn refill_pool(&mut self, now: u64) {
        let policy = self.eviction.policy;
        // A min-heap of the best scores so far: the root is the first to give way.
        let keys: usize = self.dbs.iter().map(|d| d.len()).sum();
        let pool_size = (keys / POOL_FRACTION).max(POOL_MIN);
        let mut best: BinaryHeap<Reverse<(u64, usize, Bytes)>> = BinaryHeap::new();
        for (index, db) in self.dbs.iter().enumerate() {
            let access = db.access();
            for (key, entry) in db.entries() {
                if policy.volatile_only() && entry.expire_at().is_none() {
                    continue;
                }
                let score = match policy {
                    Policy::AllKeysLru | Policy::VolatileLru => {
                        Access::idle_ms(entry.accessed, now)
                    }
                    Policy::AllKeysLfu | Policy::VolatileLfu => {
                        255 - u64::from(access.frequency(entry.accessed, now))
                    }
                    _ => self.rng.random::<u64>(),
                };
                if best.len() == pool_size {
                    if best.peek().is_some_and(|Reverse((s, ..))| *s >= score) {
                        continue;
                    }
                    best.pop();
                }
                best.push(Reverse((score, index, key.to_bytes())));
            }
        }
        // Ascending by score: the best candidate is popped first.
        let mut ranked: Vec<_> = best.into_iter().map(|Reverse(c)| c).collect();
        ranked.sort_by_key(|(score, ..)| *score);
        self.eviction.pool = ranked.into_iter().map(|(_, db, key)| (db, key)).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Value;

    fn state_with(keys: usize, policy: Policy) -> State {
        let mut state = State::for_tests();
        for i in 0..keys {
            let key = Bytes::from(format!("key:{i}"));
            let value = Value::String(Bytes::from(vec![b'x'; 100]).into());
            let expire = (i % 2 == 0).then_some(1_000_000 + i as u64);
            state.dbs[0].insert(&key, value, expire, i as u64);
        }
        let access = if policy.is_lfu() {
            Access::Lfu {
                log_factor: 10,
                decay_minutes: 1,
            }
        } else {
            Access::Lru
        };
        state.set_eviction_policy(policy, access);
        state
    }

    #[test]
    fn noeviction_reports_out_of_memory_and_keeps_every_key() {
        let mut state = state_with(100, Policy::NoEviction);
        let limit = BASELINE_MEMORY + 100;
        let mut effects = Effects::default();
        assert_eq!(
            state.perform_evictions(limit, 1_000, &mut effects),
            Outcome::OutOfMemory
        );
        assert_eq!(state.dbs[0].len(), 100);
    }

    #[test]
    fn allkeys_lru_evicts_the_oldest_keys_until_memory_fits() {
        let mut state = state_with(1_000, Policy::AllKeysLru);
        let per_key = (state.used_memory() - BASELINE_MEMORY) / 1_000;
        let limit = BASELINE_MEMORY + per_key * 600;
        let mut effects = Effects::default();
        assert_eq!(
            state.perform_evictions(limit, 5_000, &mut effects),
            Outcome::Fits
        );
        assert!(state.used_memory() <= limit);
        let left = state.dbs[0].len();
        assert!((590..=600).contains(&left), "{left}");
        // The most recently written keys (accessed at their index) stay.
        assert!(state.dbs[0].raw(b"key:999").is_some());
        assert!(state.dbs[0].raw(b"key:0").is_none());
        assert_eq!(state.stats.evicted_keys as usize, 1_000 - left);
        assert!(effects.events.iter().all(|e| e.2 == "evicted"));
        assert_eq!(effects.propagate.len(), 1_000 - left);
    }

    #[test]
    fn volatile_policies_evict_only_keys_with_a_ttl_then_run_out() {
        for policy in [
            Policy::VolatileLru,
            Policy::VolatileLfu,
            Policy::VolatileRandom,
            Policy::VolatileTtl,
        ] {
            let mut state = state_with(200, policy);
            let limit = BASELINE_MEMORY + 1;
            let mut effects = Effects::default();
            assert_eq!(
                state.perform_evictions(limit, 5_000, &mut effects),
                Outcome::OutOfMemory,
                "{policy:?}"
            );
            assert_eq!(state.dbs[0].len(), 100, "{policy:?}");
            assert_eq!(state.dbs[0].volatile_len(), 0, "{policy:?}");
        }
    }

    #[test]
    fn volatile_ttl_evicts_the_soonest_deadline_first() {
        let mut state = state_with(10, Policy::VolatileTtl);
        let used = state.used_memory();
        let limit = used - 1;
        let mut effects = Effects::default();
        assert_eq!(
            state.perform_evictions(limit, 5_000, &mut effects),
            Outcome::Fits
        );
        assert!(state.dbs[0].raw(b"key:0").is_none());
        assert!(state.dbs[0].raw(b"key:2").is_some());
    }

    #[test]
    fn allkeys_random_and_lfu_can_empty_the_keyspace() {
        for policy in [Policy::AllKeysRandom, Policy::AllKeysLfu] {
            let mut state = state_with(300, policy);
            let limit = BASELINE_MEMORY + 1;
            let mut effects = Effects::default();
            assert_eq!(
                state.perform_evictions(limit, 5_000, &mut effects),
                Outcome::Fits,
                "{policy:?}"
            );
            assert_eq!(state.dbs[0].len(), 0);
            assert_eq!(state.used_memory(), BASELINE_MEMORY);
        }
    }
}
