//! [`SpinLock`] (Redisson's spin lock): waiters poll with a back-off instead of subscribing.

use crate::client::Client;
use crate::hold::{Core, Kind};
use crate::options::Backoff;
use crate::owner::Owner;

/// Redisson's spin lock: same layout as [`Lock`](crate::Lock), but waiters poll with exponential backoff
/// instead of subscribing, and release publishes nothing.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct SpinLock {
    pub(crate) core: Core,
}
super::common_lock_api!(SpinLock);

impl SpinLock {
    /// Sets the backoff between attempts.
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.core.backoff = backoff;
        self
    }
}

impl Client {
    /// A [`SpinLock`] on `name` for a fresh owner.
    pub fn spin_lock(&self, name: &str) -> SpinLock {
        self.spin_lock_for(name, self.new_owner())
    }

    /// A [`SpinLock`] on `name` for `owner`.
    pub fn spin_lock_for(&self, name: &str, owner: Owner) -> SpinLock {
        SpinLock {
            core: Core::new(self, name, owner, Kind::Spin),
        }
    }
}
