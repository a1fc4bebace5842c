//! `LockError`: what went wrong, with predicates so callers can decide without matching variants.

use std::time::Duration;

/// Why a held lock was lost (see [`LostSignal`](crate::LostSignal)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// A renewal found the lock gone or held by someone else.
    NotHeld,
    /// Renewals kept failing until the lease had passed.
    RenewalFailed,
    /// The lease given at acquisition elapsed before the lock was released.
    LeaseExpired,
    /// The hold ended while a guard's critical section still ran on it: the lock was
    /// force-unlocked, or released through the lock handle instead of the guard.
    Ended,
}

/// The error type of every lock operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The server answered with an error or the connection failed.
    #[error("redis error: {0}")]
    Redis(#[from] redis::RedisError),
    /// `unlock` by an owner that does not hold the lock (Redisson's IllegalMonitorStateException).
    #[error(
        "attempt to unlock lock, not locked by current thread by node id: {client_id} thread-id: {owner_id}"
    )]
    NotOwner {
        /// The lock name.
        name: String,
        /// The client uuid (Redisson's node id).
        client_id: String,
        /// The owner id (Redisson's thread id).
        owner_id: u64,
    },
    /// Waiting ran out of time where "not acquired" is no answer: a wait without a bound
    /// (`lock()`, `acquire()`) whose pub/sub subscription was not confirmed within the pub/sub
    /// timeout, the larger of the connection and response timeouts (Redisson: "Unable to
    /// acquire subscription lock"); `name` is the channel. A bounded wait that runs out answers
    /// "not acquired" (`Ok(false)`, `Ok(None)`) instead, and a command's response timeout is a
    /// [`LockError::Redis`] I/O error; [`is_timeout`](Self::is_timeout) is true for both errors.
    #[error("timed out after {waited:?} waiting for lock {name}")]
    Timeout {
        /// The lock name.
        name: String,
        /// How long we waited.
        waited: Duration,
    },
    /// The lock was held and has been lost.
    #[error("lock {name} lost: {reason:?}")]
    Lost {
        /// The lock name.
        name: String,
        /// Why it was lost.
        reason: LostReason,
    },
    /// The replicas did not acknowledge the write (`WAIT` returned 0), as Redisson's
    /// "None of slaves were synced".
    #[error("None of slaves were synced for lock {name}")]
    ReplicasNotSynced {
        /// The lock name.
        name: String,
    },
    /// A script returned something the library does not expect.
    #[error("unexpected reply from {context}: {detail}")]
    UnexpectedReply {
        /// Which call.
        context: &'static str,
        /// What came back.
        detail: String,
    },
    /// The operation is not valid for this lock (for example re-entering a non-reentrant lock).
    #[error("invalid operation on lock {name}: {detail}")]
    Invalid {
        /// The lock name.
        name: String,
        /// What was wrong.
        detail: String,
    },
    /// No sentinel knows the master name (or none could be reached).
    #[error("no sentinel knows master {master}")]
    MasterNotFound {
        /// The Sentinel master name.
        master: String,
    },
    /// A task the library ran the call in panicked (a panicking
    /// [`wall_clock`](crate::ClientOptions::wall_clock), a bug): the call's outcome on the
    /// server is unknown, as after a response timeout.
    #[error("the {task} task of lock {name} panicked: {message}")]
    Panicked {
        /// The lock name.
        name: String,
        /// Which call's task.
        task: &'static str,
        /// The panic's message, when it was a string.
        message: String,
    },
    /// The client was shut down.
    #[error("client shut down")]
    Shutdown,
}

impl LockError {
    /// True when a held lock was lost.
    pub fn is_lost(&self) -> bool {
        matches!(self, LockError::Lost { .. })
    }

    /// True when waiting ran out of time (ours or a Redis response timeout).
    pub fn is_timeout(&self) -> bool {
        match self {
            LockError::Timeout { .. } => true,
            LockError::Redis(e) => e.is_timeout(),
            _ => false,
        }
    }

    /// True when the caller does not hold the lock it tried to release.
    pub fn is_not_owner(&self) -> bool {
        matches!(self, LockError::NotOwner { .. })
    }

    /// True when the error came from Redis or the connection to it.
    pub fn is_redis(&self) -> bool {
        matches!(self, LockError::Redis(_))
    }

    /// True when the connection dropped or could not be established.
    pub fn is_connection_error(&self) -> bool {
        match self {
            LockError::Redis(e) => {
                e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal()
            }
            _ => false,
        }
    }

    /// True when replicas did not acknowledge a lock write.
    pub fn is_replicas_not_synced(&self) -> bool {
        matches!(self, LockError::ReplicasNotSynced { .. })
    }

    /// The error of a task the library spawned for a call on `name` that ended without an
    /// answer: [`LockError::Panicked`] when it panicked, else [`LockError::Shutdown`] (its
    /// runtime dropped it).
    pub(crate) fn from_join(
        name: &str,
        task: &'static str,
        e: Option<tokio::task::JoinError>,
    ) -> Self {
        match e {
            Some(e) if e.is_panic() => {
                let payload = e.into_panic();
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_owned());
                LockError::Panicked {
                    name: name.to_owned(),
                    task,
                    message,
                }
            }
            _ => LockError::Shutdown,
        }
    }

    pub(crate) fn unexpected(context: &'static str, detail: impl std::fmt::Debug) -> Self {
        LockError::UnexpectedReply {
            context,
            detail: format!("{detail:?}"),
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = LockError> = std::result::Result<T, E>;
