//! How a key's accesses are recorded in [`super::Entry::accessed`]: the time of the last
//! access (LRU, the default), or, under an LFU `maxmemory-policy`, Redis's logarithmic access
//! counter with its decay (`lfu-log-factor`, `lfu-decay-time`).
//!
//! As Redis reuses one 24-bit field of the object header for both, so do we, in 32 bits: an
//! LFU record is tagged in its top bit and holds the minute of its last decay (23 bits) and an
//! 8-bit counter; an LRU record holds the node-clock milliseconds of the access modulo 2^31, so
//! idle times read correctly up to 24.8 days (Redis's clock of seconds wraps after 194 days).
//! A record of the other kind, left from before the policy changed, reads as a fresh one
//! (Redis's "LRU and LFU data will take some time to adjust").

/// Marks an LFU record.
const LFU_TAG: u32 = 1 << 31;
/// The bits of an LRU record's time and of an LFU record's minute.
const LRU_MASK: u32 = LFU_TAG - 1;
const MINUTE_MASK: u32 = LRU_MASK >> 8;
/// The counter a new key starts with, so it is not evicted before it had a chance to be used.
pub(crate) const LFU_INIT_VAL: u8 = 5;

/// How accesses are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Access {
    /// The last access time in node-clock ms.
    #[default]
    Lru,
    /// A logarithmic frequency counter.
    Lfu {
        /// `lfu-log-factor`: how many hits it takes to saturate the counter.
        log_factor: u32,
        /// `lfu-decay-time`: the counter loses one per this many idle minutes (0: never).
        decay_minutes: u64,
    },
}

impl Access {
    /// The record of a key created at `now`.
    pub(crate) fn fresh(self, now: u64) -> u32 {
        match self {
            Access::Lru => lru(now),
            Access::Lfu { .. } => pack(now, LFU_INIT_VAL),
        }
    }

    /// The record after an access at `now` to a key whose record was `record`.
    pub(crate) fn touched(self, record: u32, now: u64, rng: &mut u64) -> u32 {
        match self {
            Access::Lru => lru(now),
            Access::Lfu { log_factor, .. } => {
                let counter = log_increment(self.frequency(record, now), log_factor, rng);
                pack(now, counter)
            }
        }
    }

    /// The access counter of `record` at `now`, after decay (`OBJECT FREQ`); 0 under LRU.
    pub(crate) fn frequency(self, record: u32, now: u64) -> u8 {
        let Access::Lfu { decay_minutes, .. } = self else {
            return 0;
        };
        if record & LFU_TAG == 0 {
            return LFU_INIT_VAL;
        }
        let counter = (record & 0xff) as u8;
        let minute = (record & !LFU_TAG) >> 8;
        let elapsed = u64::from(minute_of(now).wrapping_sub(minute) & MINUTE_MASK);
        let periods = elapsed.checked_div(decay_minutes).unwrap_or(0);
        counter.saturating_sub(u8::try_from(periods).unwrap_or(u8::MAX))
    }

    /// The record of a key `RESTORE` creates at `now`: `FREQ` sets the counter under LFU,
    /// `IDLETIME` (seconds) backdates the access under LRU; otherwise as a new key.
    pub(crate) fn restored(self, now: u64, idle_secs: Option<u64>, freq: Option<u8>) -> u32 {
        match (self, idle_secs, freq) {
            (Access::Lfu { .. }, _, Some(freq)) => pack(now, freq),
            (Access::Lru, Some(idle), _) => {
                // Up to the longest idle time a record tells (older reads as that old).
                let idle_ms = idle.saturating_mul(1000).min(u64::from(LRU_MASK));
                lru(now.wrapping_sub(idle_ms))
            }
            _ => self.fresh(now),
        }
    }

    /// Milliseconds since the last access of `record` at `now` (`OBJECT IDLETIME`, LRU
    /// eviction); 0 for an LFU record.
    pub(crate) fn idle_ms(record: u32, now: u64) -> u64 {
        if record & LFU_TAG != 0 {
            0
        } else {
            u64::from(lru(now).wrapping_sub(record) & LRU_MASK)
        }
    }
}

/// Redis's `LRU_CLOCK_MAX`: its LRU clock counts seconds in 24 bits.
const REDIS_LRU_CLOCK_MAX: u64 = (1 << 24) - 1;

impl Access {
    /// The 24 bits Redis keeps of `record` in its object header (`DEBUG OBJECT`'s `lru`):
    /// under LRU its LRU clock (seconds, modulo 2^24) at the last access; under LFU the
    /// minute of the last decrement (modulo 2^16) above the counter. A record of the other
    /// kind reads as a fresh one.
    pub(crate) fn redis_field(self, record: u32, now: u64) -> u32 {
        match self {
            Access::Lru => redis_lru_clock(now.saturating_sub(Self::idle_ms(record, now))),
            Access::Lfu { .. } => {
                let (minute, counter) = if record & LFU_TAG == 0 {
                    (minute_of(now), u32::from(LFU_INIT_VAL))
                } else {
                    ((record & !LFU_TAG) >> 8, record & 0xff)
                };
                ((minute & 0xffff) << 8) | counter
            }
        }
    }

    /// Seconds Redis's `estimateObjectIdleTime` gives for an object header of `field` at
    /// `now` (`DEBUG OBJECT`'s `lru_seconds_idle`; under LFU Redis reads the LFU bits as an
    /// LRU clock too).
    pub(crate) fn redis_idle_secs(field: u32, now: u64) -> u64 {
        let clock = u64::from(redis_lru_clock(now));
        let field = u64::from(field);
        if clock >= field {
            clock - field
        } else {
            clock + (REDIS_LRU_CLOCK_MAX - field)
        }
    }
}

/// Redis's LRU clock at `at` (node-clock ms): seconds, modulo 2^24.
fn redis_lru_clock(at: u64) -> u32 {
    ((at / 1000) & REDIS_LRU_CLOCK_MAX) as u32
}

/// The LRU record of an access at `now`.
fn lru(now: u64) -> u32 {
    (now & u64::from(LRU_MASK)) as u32
}

/// The minute of `now`, in an LFU record's bits.
fn minute_of(now: u64) -> u32 {
    ((now / 60_000) & u64::from(MINUTE_MASK)) as u32
}

/// The LFU record of `counter` at `now`.
fn pack(now: u64, counter: u8) -> u32 {
    LFU_TAG | (minute_of(now) << 8) | u32::from(counter)
}

/// Redis's `LFULogIncr`: the counter grows with probability `1 / ((counter - init) * factor +
/// 1)`, so it takes about a million hits to saturate it at the default factor 10.
fn log_increment(counter: u8, log_factor: u32, rng: &mut u64) -> u8 {
    if counter == u8::MAX {
        return counter;
    }
    let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
    let p = 1.0 / (base * f64::from(log_factor) + 1.0);
    if next_unit(rng) < p {
        counter + 1
    } else {
        counter
    }
}

/// A uniform number in [0, 1) from a xorshift64* generator (statistics only, never security).
fn next_unit(state: &mut u64) -> f64 {
    if *state == 0 {
        *state = 0x9E37_79B9_7F4A_7C15;
    }
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const LFU: Access = Access::Lfu {
        log_factor: 10,
        decay_minutes: 1,
    };

    #[test]
    fn a_new_key_starts_at_the_initial_counter() {
        assert_eq!(LFU.frequency(LFU.fresh(0), 0), LFU_INIT_VAL);
        assert_eq!(LFU.frequency(Access::Lru.fresh(5), 5), LFU_INIT_VAL);
    }

    #[test]
    fn hits_raise_the_counter_logarithmically_and_time_decays_it() {
        let mut rng = 1;
        let mut record = LFU.fresh(0);
        for _ in 0..100 {
            record = LFU.touched(record, 0, &mut rng);
        }
        let hot = LFU.frequency(record, 0);
        assert!(hot > LFU_INIT_VAL + 2 && hot < 40, "{hot}");
        // One period per minute.
        assert_eq!(LFU.frequency(record, 3 * 60_000), hot - 3);
        assert_eq!(LFU.frequency(record, 10_000 * 60_000), 0);
    }

    #[test]
    fn factor_zero_counts_every_hit_up_to_255() {
        let lfu = Access::Lfu {
            log_factor: 0,
            decay_minutes: 0,
        };
        let mut rng = 7;
        let mut record = lfu.fresh(0);
        for _ in 0..300 {
            record = lfu.touched(record, 0, &mut rng);
        }
        assert_eq!(lfu.frequency(record, 0), 255);
        // Not decayed (decay time 0), however long after.
        assert_eq!(lfu.frequency(record, 10_000 * 60_000), 255);
    }

    #[test]
    fn lru_idle_times_are_milliseconds_and_survive_the_records_wrap() {
        let start = u64::from(LRU_MASK) - 500;
        let record = Access::Lru.fresh(start);
        assert_eq!(Access::idle_ms(record, start), 0);
        assert_eq!(Access::idle_ms(record, start + 1_500), 1_500);
        let restored = Access::Lru.restored(10_000_000, Some(3_600), None);
        assert_eq!(Access::idle_ms(restored, 10_000_000), 3_600_000);
        assert_eq!(Access::idle_ms(LFU.fresh(5), 5), 0);
    }
}
