//! The workload of a run: which lock kind, how many clients, how long they hold and wait,
//! and the client loop that records every operation into the topology's history.

use crate::schedule::ScheduleError;
use locksmith_harness::{History, NodeId, Topology};
use locksmith_lock::{
    Client, ClientOptions, DistributedLock, LockError, MultiLock, RedLock, ReplicaSync,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The resource every client of a run contends for.
pub const RESOURCE: &str = "explored";

/// A lock kind of the library, as the explorer drives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LockKind {
    /// `Lock` (watchdog) without replica acknowledgement (`ReplicaSync::Off`).
    Lock,
    /// `Lock` (watchdog) waiting for every replica (`WAIT`) after each write.
    LockSynced,
    /// `FairLock` (watchdog): waiters are served in arrival order.
    FairLock,
    /// `ReadWriteLock`: clients take the read lock (shared) or the write lock (exclusive).
    ReadWriteLock,
    /// `SpinLock` (watchdog): retries with backoff instead of pub/sub.
    SpinLock,
    /// `FencedLock` (watchdog): each hold gets a token, the resource rejects stale ones.
    FencedLock,
    /// `SimpleLock`: `SET NX PX` with a fixed lease, no watchdog.
    SimpleLock,
    /// `MultiLock` over three independent masters: all must be held (fixed lease).
    MultiLock,
    /// `RedLock` over five independent masters: a majority must be held (fixed lease).
    RedLock,
}

impl LockKind {
    /// Every kind, in the matrix's row order.
    pub const ALL: [LockKind; 9] = [
        LockKind::Lock,
        LockKind::LockSynced,
        LockKind::FairLock,
        LockKind::ReadWriteLock,
        LockKind::SpinLock,
        LockKind::FencedLock,
        LockKind::SimpleLock,
        LockKind::MultiLock,
        LockKind::RedLock,
    ];

    /// Its name (the matrix's row header, the command line's word).
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Lock => "lock",
            LockKind::LockSynced => "lock-synced",
            LockKind::FairLock => "fair-lock",
            LockKind::ReadWriteLock => "read-write-lock",
            LockKind::SpinLock => "spin-lock",
            LockKind::FencedLock => "fenced-lock",
            LockKind::SimpleLock => "simple-lock",
            LockKind::MultiLock => "multi-lock",
            LockKind::RedLock => "redlock",
        }
    }

    /// How many independent masters its topology has (one master with replicas otherwise).
    pub fn masters(self) -> usize {
        match self {
            LockKind::MultiLock => 3,
            LockKind::RedLock => 5,
            _ => 1,
        }
    }

    /// How many replicas its master has.
    pub fn replicas(self) -> usize {
        if self.masters() == 1 {
            2
        } else {
            0
        }
    }

    /// Nodes of its topology.
    pub fn nodes(self) -> usize {
        self.masters() + self.replicas()
    }

    /// Whether a hold lasts a fixed lease (the holder stops using it when the lease or the
    /// validity ends) rather than being renewed by a watchdog.
    pub fn leased(self) -> bool {
        matches!(
            self,
            LockKind::SimpleLock | LockKind::MultiLock | LockKind::RedLock
        )
    }
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LockKind {
    type Err = ScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LockKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| ScheduleError(format!("unknown lock kind '{s}'")))
    }
}

/// What the clients of a run do (a plain data record with defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// The lock kind.
    pub kind: LockKind,
    /// How many clients contend.
    pub clients: usize,
    /// How long a run lasts, in ms of virtual time.
    pub run_ms: u64,
    /// The watchdog timeout (renewed every third of it), or the fixed lease of leased kinds.
    pub lease_ms: u64,
    /// How long an acquire waits at most.
    pub wait_ms: u64,
    /// Longest hold (a hold is drawn between a tenth of it and it); leased kinds hold at
    /// most until their lease's validity ends.
    pub hold_ms: u64,
    /// Longest pause between two rounds of a client.
    pub think_ms: u64,
    /// Whether clients also send unlocks for a lock they do not hold (one round in eight).
    pub foreign_unlocks: bool,
}

impl Workload {
    /// Three clients for 10 s of virtual time, 3 s leases, waits of 2 s, holds up to 2 s.
    pub fn new(kind: LockKind) -> Self {
        Workload {
            kind,
            clients: 3,
            run_ms: 10_000,
            lease_ms: 3000,
            wait_ms: 2000,
            hold_ms: 2000,
            think_ms: 200,
            foreign_unlocks: true,
        }
    }
}

/// How long a client of a run waits for a reply (ms).
pub(crate) const RESPONSE_TIMEOUT_MS: u64 = 1000;

/// The protected resource: accepts a write only with a token at least as new as the newest
/// it has accepted (how a storage service checks fencing tokens).
#[derive(Debug, Default)]
pub(crate) struct Resource {
    newest: Mutex<u64>,
}

impl Resource {
    fn write(&self, token: u64) -> bool {
        let Ok(mut newest) = self.newest.lock() else {
            return false;
        };
        if token >= *newest {
            *newest = token;
            true
        } else {
            false
        }
    }
}

/// One client of a run.
pub(crate) struct Contender {
    pub(crate) name: String,
    pub(crate) seed: u64,
    pub(crate) workload: Workload,
}

/// The virtual wall clock every client of a run reads (Unix ms).
fn wall_clock(origin: Instant) -> impl Fn() -> u64 + Send + Sync + 'static {
    move || 1_700_000_000_000 + origin.elapsed().as_millis() as u64
}

/// Opens the client's connections: one client to the front address, or one per master.
async fn open(topology: &Topology, contender: &Contender, origin: Instant) -> Option<Vec<Client>> {
    let w = &contender.workload;
    let base = ClientOptions::default()
        .wall_clock(wall_clock(origin))
        .watchdog_timeout(Duration::from_millis(w.lease_ms))
        .response_timeout(Duration::from_millis(RESPONSE_TIMEOUT_MS))
        .connection_timeout(Duration::from_millis(1000))
        .replica_sync(match w.kind {
            LockKind::LockSynced => ReplicaSync::Replicas(w.kind.replicas()),
            _ => ReplicaSync::Off,
        });
    let targets: Vec<Option<NodeId>> = if w.kind.masters() > 1 {
        (0..w.kind.masters())
            .map(|i| Some(NodeId::from_index(i)))
            .collect()
    } else {
        vec![None]
    };
    let mut clients = Vec::with_capacity(targets.len());
    for (i, target) in targets.into_iter().enumerate() {
        let options = base
            .clone()
            .seed(contender.seed.wrapping_add(i as u64 * 7919));
        clients.push(
            Client::open_over(topology.connector(target), options)
                .await
                .ok()?,
        );
    }
    Some(clients)
}

/// A handle of the kind for one owner; what one round acquires and releases.
enum Handle {
    Single(Box<dyn DistributedLock>),
    Fenced(locksmith_lock::FencedLock),
    Simple(locksmith_lock::SimpleLock),
    Multi(MultiLock),
    Red(RedLock),
}

fn handle(kind: LockKind, clients: &[Client], read: bool) -> Option<Handle> {
    let first = clients.first()?;
    Some(match kind {
        LockKind::Lock | LockKind::LockSynced => Handle::Single(first.lock(RESOURCE).boxed()),
        LockKind::FairLock => Handle::Single(first.fair_lock(RESOURCE).boxed()),
        LockKind::SpinLock => Handle::Single(first.spin_lock(RESOURCE).boxed()),
        LockKind::ReadWriteLock => {
            let rw = first.read_write_lock(RESOURCE);
            if read {
                Handle::Single(rw.read_lock().boxed())
            } else {
                Handle::Single(rw.write_lock().boxed())
            }
        }
        LockKind::FencedLock => Handle::Fenced(first.fenced_lock(RESOURCE)),
        LockKind::SimpleLock => Handle::Simple(first.simple_lock(RESOURCE)),
        LockKind::MultiLock => Handle::Multi(MultiLock::new(
            clients.iter().map(|c| c.lock(RESOURCE)).collect(),
        )),
        LockKind::RedLock => Handle::Red(RedLock::new(
            clients.iter().map(|c| c.lock(RESOURCE)).collect(),
        )),
    })
}

/// What an acquire gave: the token, and how long the hold may last at most (leased kinds).
struct Granted {
    token: Option<u64>,
    valid_for: Option<Duration>,
}

impl Handle {
    async fn acquire(&self, wait: Duration, lease: Duration) -> Result<Option<Granted>, LockError> {
        let granted = |token, valid_for| Some(Granted { token, valid_for });
        Ok(match self {
            Handle::Single(l) => l.try_lock_for(wait, None).await?.then_some(Granted {
                token: None,
                valid_for: None,
            }),
            Handle::Fenced(l) => match l.try_lock_and_get_token_for(wait, None).await? {
                Some(token) => granted(u64::try_from(token).ok(), None),
                None => None,
            },
            Handle::Simple(l) => l.try_lock_for(wait, lease).await?.then_some(Granted {
                token: None,
                valid_for: Some(lease),
            }),
            Handle::Multi(l) => {
                let outcome = l.try_lock_for(Some(wait), Some(lease)).await?;
                outcome.acquired.then_some(Granted {
                    token: None,
                    valid_for: outcome.validity,
                })
            }
            Handle::Red(l) => {
                let outcome = l.try_lock_for(Some(wait), Some(lease)).await?;
                outcome.acquired.then_some(Granted {
                    token: None,
                    valid_for: outcome.validity,
                })
            }
        })
    }

    /// Releases; `Ok(false)` when the server said the caller did not hold it.
    async fn release(&self) -> Result<bool, LockError> {
        let owned = |r: Result<(), LockError>| match r {
            Ok(()) => Ok(true),
            Err(e) if e.is_not_owner() => Ok(false),
            Err(e) => Err(e),
        };
        match self {
            Handle::Single(l) => owned(l.unlock().await),
            Handle::Fenced(l) => owned(l.unlock().await),
            Handle::Simple(l) => l.unlock().await,
            Handle::Multi(l) => owned(l.unlock().await),
            // Released where this owner held it; refused only when it held it nowhere.
            Handle::Red(l) => {
                let results = l.unlock().await;
                if results.iter().any(Result::is_ok) {
                    Ok(true)
                } else if results
                    .iter()
                    .all(|r| r.as_ref().is_err_and(LockError::is_not_owner))
                {
                    Ok(false)
                } else {
                    results
                        .into_iter()
                        .find_map(Result::err)
                        .map_or(Ok(false), Err)
                }
            }
        }
    }

    fn lost_signal(&self) -> Option<locksmith_lock::LostSignal> {
        match self {
            Handle::Single(l) => l.lost_signal(),
            Handle::Fenced(l) => l.lost_signal(),
            Handle::Simple(_) | Handle::Multi(_) | Handle::Red(_) => None,
        }
    }
}

/// Runs one client until `deadline`: rounds of acquire, hold (with fenced writes), release,
/// think; every operation recorded in `history`.
pub(crate) async fn contend(
    topology: Topology,
    contender: Contender,
    origin: Instant,
    deadline: Instant,
    resource: Arc<Resource>,
) {
    let history = topology.history();
    let w = contender.workload;
    let mut rng = StdRng::seed_from_u64(contender.seed ^ 0x00c1_1e47);
    let clients = loop {
        if let Some(clients) = open(&topology, &contender, origin).await {
            break clients;
        }
        if Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let name = contender.name.as_str();
    let lease = Duration::from_millis(w.lease_ms);
    while Instant::now() < deadline {
        let read = w.kind == LockKind::ReadWriteLock && rng.random_bool(0.5);
        let Some(lock) = handle(w.kind, &clients, read) else {
            return;
        };
        if w.foreign_unlocks && w.kind.masters() == 1 && rng.random_ratio(1, 8) {
            // An unlock by an owner that holds nothing: the server must refuse it.
            let op = history.begin(name, RESOURCE);
            let accepted = matches!(lock.release().await, Ok(true));
            op.foreign_release(accepted);
        }
        let op = history.begin(name, RESOURCE);
        let granted = match lock.acquire(Duration::from_millis(w.wait_ms), lease).await {
            Ok(Some(granted)) => granted,
            Ok(None) | Err(_) => {
                op.failed();
                think(&mut rng, w).await;
                continue;
            }
        };
        if read {
            op.acquired_shared(granted.token);
        } else {
            op.acquired(granted.token);
        }
        let hold = Duration::from_millis(rng.random_range(w.hold_ms / 10..=w.hold_ms.max(1)));
        let lost = hold_for(&history, name, &lock, &granted, hold, &resource).await;
        if lost {
            think(&mut rng, w).await;
            continue;
        }
        let op = history.begin(name, RESOURCE);
        match lock.release().await {
            Ok(false) => op.lost(),
            Ok(true) | Err(_) => op.released(),
        }
        think(&mut rng, w).await;
    }
    for client in clients {
        client.shutdown().await;
    }
}

/// Holds for `hold` (at most the lease's validity), writing to the resource with the token
/// at the start and the end; true when the hold ended with a loss (a lost signal, or the
/// validity ran out first).
async fn hold_for(
    history: &History,
    name: &str,
    lock: &Handle,
    granted: &Granted,
    hold: Duration,
    resource: &Resource,
) -> bool {
    if let Some(token) = granted.token {
        history
            .begin(name, RESOURCE)
            .wrote(Some(token), resource.write(token));
    }
    let (hold, expires) = match granted.valid_for {
        Some(valid) if valid <= hold => (valid, true),
        _ => (hold, false),
    };
    let lost = match lock.lost_signal() {
        Some(mut signal) => tokio::select! {
            biased;
            reason = signal.lost() => reason.is_some(),
            () = tokio::time::sleep(hold) => false,
        },
        None => {
            tokio::time::sleep(hold).await;
            false
        }
    };
    if lost || expires {
        // The holder knows it no longer holds the lock (its lease or validity ended).
        history.begin(name, RESOURCE).lost();
        return true;
    }
    if let Some(token) = granted.token {
        history
            .begin(name, RESOURCE)
            .wrote(Some(token), resource.write(token));
    }
    false
}

async fn think(rng: &mut StdRng, w: Workload) {
    let ms = rng.random_range(1..=w.think_ms.max(1));
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
