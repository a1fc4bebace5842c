//! [`Lock`] (Redisson's `RLock`): the reentrant lock with a watchdog.

use crate::client::Client;
use crate::hold::{Core, Kind};
use crate::owner::Owner;

/// Redisson's `RLock`: a reentrant lock with a watchdog.
///
/// Layout: hash `name`, field `"<client-id>:<owner-id>"` = hold count; unlock channel
/// `redisson_lock__channel:{name}`.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct Lock {
    pub(crate) core: Core,
}
super::common_lock_api!(Lock);

impl Client {
    /// A [`Lock`] on `name` for a fresh owner.
    pub fn lock(&self, name: &str) -> Lock {
        self.lock_for(name, self.new_owner())
    }

    /// A [`Lock`] on `name` for `owner`.
    pub fn lock_for(&self, name: &str, owner: Owner) -> Lock {
        Lock {
            core: Core::new(self, name, owner, Kind::Plain),
        }
    }
}
