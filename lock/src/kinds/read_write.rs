//! [`ReadWriteLock`] (Redisson's `RReadWriteLock`) and its halves, [`ReadLock`] and
//! [`WriteLock`].

use crate::client::Client;
use crate::hold::{Core, Kind};
use crate::owner::Owner;

/// Redisson's `RReadWriteLock`: many readers or one writer on hash `name` (field `mode`);
/// the writer may also take read locks (downgrade). Its halves share its owner; a clone of the
/// `ReadWriteLock` is a new owner.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct ReadWriteLock {
    read: ReadLock,
    write: WriteLock,
}

impl Clone for ReadWriteLock {
    /// Both halves for a new owner.
    fn clone(&self) -> Self {
        self.with_owner(self.read.core.client.new_owner())
    }
}

impl ReadWriteLock {
    /// The read half (this lock's owner).
    pub fn read_lock(&self) -> ReadLock {
        self.read.share()
    }
    /// The write half (this lock's owner).
    pub fn write_lock(&self) -> WriteLock {
        self.write.share()
    }
    /// Both halves acting for `owner`.
    pub fn with_owner(&self, owner: Owner) -> Self {
        ReadWriteLock {
            read: self.read.with_owner(owner),
            write: self.write.with_owner(owner),
        }
    }
}

/// The read half of a [`ReadWriteLock`]; each hold also has a timeout key
/// `{name}:<owner>:rwlock_timeout:<n>`.
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct ReadLock {
    pub(crate) core: Core,
}
super::common_lock_api!(ReadLock);

impl ReadLock {
    /// This very handle again (same owner, same watchdog holds).
    fn share(&self) -> Self {
        ReadLock {
            core: self.core.clone(),
        }
    }
}

/// The write half of a [`ReadWriteLock`]; its field carries the `:write` suffix and its release
/// wakes all waiters (message `1`).
#[derive(Debug)]
#[must_use = "a lock handle does nothing until it is locked"]
pub struct WriteLock {
    pub(crate) core: Core,
}
super::common_lock_api!(WriteLock);

impl WriteLock {
    /// This very handle again (same owner, same watchdog holds).
    fn share(&self) -> Self {
        WriteLock {
            core: self.core.clone(),
        }
    }
}

impl Client {
    /// A [`ReadWriteLock`] on `name` for a fresh owner.
    pub fn read_write_lock(&self, name: &str) -> ReadWriteLock {
        self.read_write_lock_for(name, self.new_owner())
    }

    /// A [`ReadWriteLock`] on `name` for `owner`.
    pub fn read_write_lock_for(&self, name: &str, owner: Owner) -> ReadWriteLock {
        ReadWriteLock {
            read: ReadLock {
                core: Core::new(self, name, owner, Kind::Read),
            },
            write: WriteLock {
                core: Core::new(self, name, owner, Kind::Write),
            },
        }
    }
}
