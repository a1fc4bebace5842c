//! `Entropy`: every random draw of one client (its id, unlock-latch request ids, backoff
//! jitter, RedLock retry delays) and its owner ids, from the OS and the thread RNG as usual, or,
//! with [`ClientOptions::seed`](crate::ClientOptions::seed), from one RNG owned by the client so
//! that a simulation replays the same draws in the same order.

use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

use crate::owner::Owner;

/// Where the owner ids of a seeded client start: far above the process-wide counter behind
/// [`Owner::new`] (which would need 2^32 owners to get there), so an owner made with
/// `Owner::new()` and one made by a seeded client never share an id on that client.
const SEEDED_OWNER_BASE: u64 = 1 << 32;

pub(crate) struct Entropy {
    /// The client id, the first draw.
    id: String,
    /// `None`: draws come from the thread RNG, owners from the process-wide counter.
    seeded: Option<Seeded>,
}

struct Seeded {
    // std Mutex, never held across an await: each draw takes it for a few nanoseconds.
    rng: Mutex<StdRng>,
    next_owner: AtomicU64,
}

impl Entropy {
    /// A random source, seeded or not, whose first draw is the client id.
    pub(crate) fn new(seed: Option<u64>) -> Entropy {
        let mut entropy = Entropy {
            id: String::new(),
            seeded: seed.map(|s| Seeded {
                rng: Mutex::new(StdRng::seed_from_u64(s)),
                next_owner: AtomicU64::new(SEEDED_OWNER_BASE),
            }),
        };
        let mut bytes = [0u8; 16];
        entropy.with_rng(|r| r.fill_bytes(&mut bytes));
        entropy.id = uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .to_string();
        entropy
    }

    /// The client id: a UUID v4 of 16 drawn bytes.
    pub(crate) fn client_id(&self) -> &str {
        &self.id
    }

    fn with_rng<T>(&self, f: impl FnOnce(&mut dyn RngCore) -> T) -> T {
        match &self.seeded {
            Some(s) => f(&mut *s.rng.lock().unwrap_or_else(|p| p.into_inner())),
            None => f(&mut rand::rng()),
        }
    }

    /// A request id of 32 hex chars (Redisson's `generateId`), for the unlock latch, the
    /// simple lock's value and permit ids.
    pub(crate) fn request_id(&self) -> String {
        let mut bytes = [0u8; 16];
        self.with_rng(|r| r.fill_bytes(&mut bytes));
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A number drawn uniformly from `range` (its start when the range is empty).
    pub(crate) fn range(&self, range: RangeInclusive<u64>) -> u64 {
        if range.is_empty() {
            return *range.start();
        }
        self.with_rng(|r| r.random_range(range))
    }

    /// A fresh owner: from the process-wide counter, or from this client's own sequence when
    /// seeded (ids then depend on the client's history alone, not on what else the process did).
    pub(crate) fn owner(&self) -> Owner {
        match &self.seeded {
            Some(s) => Owner::from_id(s.next_owner.fetch_add(1, Ordering::Relaxed)),
            None => Owner::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_decides_every_draw() {
        let a = Entropy::new(Some(7));
        let b = Entropy::new(Some(7));
        let draw = |e: &Entropy| {
            let id = e.client_id().to_owned();
            (id, e.request_id(), e.range(5..=50), e.owner())
        };
        assert_eq!(draw(&a), draw(&b));
        assert_ne!(a.client_id(), Entropy::new(Some(8)).client_id());
        assert_ne!(
            Entropy::new(None).client_id(),
            Entropy::new(None).client_id()
        );
    }

    #[test]
    fn ids_keep_their_formats() {
        let e = Entropy::new(Some(1));
        let id = e.request_id();
        assert_eq!(id.len(), 32);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        let uuid = uuid::Uuid::parse_str(e.client_id()).unwrap();
        assert_eq!(uuid.get_version_num(), 4);
        assert_eq!(e.range(3..=3), 3);
        #[allow(clippy::reversed_empty_ranges)]
        let empty = e.range(9..=1);
        assert_eq!(empty, 9);
    }

    #[test]
    fn seeded_owners_count_from_their_own_base() {
        let e = Entropy::new(Some(1));
        assert_eq!(e.owner().id(), SEEDED_OWNER_BASE);
        assert_eq!(e.owner().id(), SEEDED_OWNER_BASE + 1);
        assert!(Entropy::new(None).owner().id() < SEEDED_OWNER_BASE);
    }
}
