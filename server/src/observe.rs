//! Write observation: an embedder's [`WriteObserver`] hears every atomic unit of writes a node
//! makes as a master or applies as a replica, as the node propagates them (the stream its
//! replicas and its journal get: a script's effects, `SET … PXAT`, `PEXPIREAT`, and a `DEL`
//! for a key that expired or was evicted), with the client whose command made them. The
//! harness recognises lock grants and releases from it (`locksmith-harness --observe`).
//!
//! Off by default and free when off: the only cost is a check of an `Option` where a command
//! starts and where its effects are applied. On, the observer is called under the node's
//! state lock, in execution order, so it must return quickly.

use crate::client::ClientHandle;
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;

/// Hears a node's writes (installed with
/// [`NodeControl::set_observer`](crate::control::NodeControl::set_observer)).
pub trait WriteObserver: Send + Sync + std::fmt::Debug {
    /// One atomic unit of writes (a command, a script, a transaction, or a replicated batch),
    /// just applied. Called under the node's state lock: record and return.
    fn observe(&self, writes: &ObservedWrites<'_>);
}

/// The client whose command made observed writes on a master (a plain data record).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObservedClient {
    /// Its id (`CLIENT ID`).
    pub id: u64,
    /// Its name (`CLIENT SETNAME`), empty when it has none.
    pub name: String,
    /// Its address as `CLIENT LIST` shows it.
    pub addr: String,
    /// Its socket address.
    pub peer: SocketAddr,
}

/// What a [`WriteObserver`] is given.
#[derive(Debug)]
#[non_exhaustive]
pub struct ObservedWrites<'a> {
    /// The writes in order, `(db, argv)`, as replicas get them (no `MULTI`/`EXEC` around
    /// them: the unit is atomic).
    pub writes: &'a [(usize, Vec<Bytes>)],
    /// The client whose command made them (see [`ObservedWrites::client`]); built only when
    /// asked for: formatting its address for every write doubled the cost of observing one.
    handle: Option<Arc<ClientHandle>>,
    /// Whether the node applied them as a replica.
    pub replica: bool,
}

impl ObservedWrites<'_> {
    /// Whether a client's command made them: false on a replica (the master's stream) and for
    /// the node's own expiry and eviction.
    pub fn from_client(&self) -> bool {
        self.handle.is_some()
    }

    /// The client whose command made them; `None` on a replica and for the node's own expiry
    /// and eviction.
    pub fn client(&self) -> Option<ObservedClient> {
        self.handle.as_ref().map(|handle| ObservedClient {
            id: handle.id,
            name: handle
                .info
                .lock()
                .ok()
                .and_then(|info| info.name.clone())
                .map(|n| String::from_utf8_lossy(&n).into_owned())
                .unwrap_or_default(),
            addr: handle.addr_text(),
            peer: handle.addr,
        })
    }
}

/// Calls `observer` with the unit of writes in `propagate` (if any) made by `client`.
pub(crate) fn notify(
    observer: &dyn WriteObserver,
    propagate: &[(usize, Vec<Bytes>)],
    client: Option<Arc<ClientHandle>>,
    replica: bool,
) {
    let transaction = |i: usize, word: &[u8]| {
        propagate
            .get(i)
            .and_then(|(_, argv)| argv.first())
            .is_some_and(|name| name.eq_ignore_ascii_case(word) && propagate.len() >= 2)
    };
    let writes = if transaction(0, b"multi") && transaction(propagate.len() - 1, b"exec") {
        propagate.get(1..propagate.len() - 1).unwrap_or_default()
    } else {
        propagate
    };
    if writes.is_empty() {
        return;
    }
    observer.observe(&ObservedWrites {
        writes,
        handle: client.filter(|_| !replica),
        replica,
    });
}
