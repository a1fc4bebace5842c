//! [`FairLock`] (Redisson's `RFairLock`): waiters served in request order.

use crate::client::Client;
use crate::hold::{Core, Kind};
use crate::owner::Owner;

/// Redisson's `RFairLock`: FIFO by request order, queue `redisson_lock_queue:{name}`,
/// waiter timeouts in `redisson_lock_timeout:{name}`, one wake channel per waiter.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct FairLock {
    pub(crate) core: Core,
}
super::common_lock_api!(FairLock);

impl Client {
    /// A [`FairLock`] on `name` for a fresh owner.
    pub fn fair_lock(&self, name: &str) -> FairLock {
        self.fair_lock_for(name, self.new_owner())
    }

    /// A [`FairLock`] on `name` for `owner`.
    pub fn fair_lock_for(&self, name: &str, owner: Owner) -> FairLock {
        FairLock {
            core: Core::new(self, name, owner, Kind::Fair),
        }
    }
}
