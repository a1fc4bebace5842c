//! [`NonReentrantLock`] (Redisson's `RedissonNonReentrantLock`): one owner cannot enter twice.

use crate::client::Client;
use crate::hold::{Core, Kind};
use crate::owner::Owner;

/// Redisson's `RedissonNonReentrantLock`: a lock one owner cannot enter twice. Its acquire
/// script answers an error reply when the owner holds the lock already, which every acquiring
/// call returns as [`LockError::Invalid`](crate::LockError::Invalid) (Redisson's
/// IllegalMonitorStateException), instead of waiting for itself; other owners wait as usual.
///
/// Redisson's [`Lock`](crate::Lock) layout (hash `name`, field `"<client-id>:<owner-id>"` = 1, unlock
/// channel `redisson_lock__channel:{name}`, the same release, renewal and force-unlock
/// scripts), and Redisson's acquire script byte for byte, so a Java `RedissonNonReentrantLock`
/// on the same name agrees with this one.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct NonReentrantLock {
    pub(crate) core: Core,
}
super::common_lock_api!(NonReentrantLock);

impl Client {
    /// A [`NonReentrantLock`] on `name` for a fresh owner.
    pub fn non_reentrant_lock(&self, name: &str) -> NonReentrantLock {
        self.non_reentrant_lock_for(name, self.new_owner())
    }

    /// A [`NonReentrantLock`] on `name` for `owner`.
    pub fn non_reentrant_lock_for(&self, name: &str, owner: Owner) -> NonReentrantLock {
        NonReentrantLock {
            core: Core::new(self, name, owner, Kind::NonReentrant),
        }
    }
}
