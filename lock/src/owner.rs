//! `Owner`: the identity reentrancy follows (Redisson's thread id), since async tasks move
//! between threads.

use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// An owner identity. Locks taken by handles with the same owner re-enter each other; the Redis
/// field is `"<client-id>:<owner-id>"`. Ids are unique within the process, like Java thread ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner(u64);

impl Owner {
    /// A fresh owner.
    pub fn new() -> Owner {
        Owner(NEXT_OWNER.fetch_add(1, Ordering::Relaxed))
    }

    /// An owner with an explicit id (to act as a given Redisson thread id).
    pub fn from_id(id: u64) -> Owner {
        Owner(id)
    }

    /// The numeric id (the part after the colon in the Redis field).
    pub fn id(&self) -> u64 {
        self.0
    }
}

impl Default for Owner {
    fn default() -> Self {
        Owner::new()
    }
}
