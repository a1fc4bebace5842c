//! The workload of a run: which lock kind, how many clients, how long they hold and wait,
//! and the client loop that records every operation into the topology's history.

use crate::schedule::ScheduleError;
use locksmith_harness::{History, NodeId, Pending, Topology};
use locksmith_lock::{
    Client, ClientOptions, DistributedLock, LockError, MultiLock, RedLock, ReplicaSync, MAX_LEASE,
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

/// Permits of the semaphore kinds' semaphore (three clients contend for two).
pub const PERMITS: i64 = 2;

/// The count-down latch's count: two counts a client.
pub(crate) const COUNTS_PER_CLIENT: u64 = 2;

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
    /// `Semaphore` of [`PERMITS`] permits: clients take and give back one permit each.
    Semaphore,
    /// `PermitExpirableSemaphore` of [`PERMITS`] permits, each taken with the run's lease.
    PermitSemaphore,
    /// `CountDownLatch` of two counts a client: clients count down and wait for zero.
    CountDownLatch,
    /// `Lock` waiting for both replicas with a sync timeout longer than the response
    /// timeout: under a replication stall its `WAIT` errors or answers short.
    LockWaitFails,
    /// `Semaphore` waiting for both replicas, as [`LockKind::LockWaitFails`].
    SemaphoreWaitFails,
    /// `Lock` taken with extreme leases: 1 ms, `MAX_LEASE`, the watchdog, and leases past
    /// `MAX_LEASE` (which must be refused before anything is written).
    LockLeases,
    /// `Lock` and `SimpleLock` handles dropped and cloned: a hold taken through a temporary
    /// handle (renewed past its lease), a `SimpleLock` clone that tries to unlock its
    /// original's hold, a guard dropped inside another thread's runtime.
    LockHandles,
}

impl LockKind {
    /// Every kind, in the matrix's row order.
    pub const ALL: [LockKind; 16] = [
        LockKind::Lock,
        LockKind::LockSynced,
        LockKind::FairLock,
        LockKind::ReadWriteLock,
        LockKind::SpinLock,
        LockKind::FencedLock,
        LockKind::SimpleLock,
        LockKind::MultiLock,
        LockKind::RedLock,
        LockKind::Semaphore,
        LockKind::PermitSemaphore,
        LockKind::CountDownLatch,
        LockKind::LockWaitFails,
        LockKind::SemaphoreWaitFails,
        LockKind::LockLeases,
        LockKind::LockHandles,
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
            LockKind::Semaphore => "semaphore",
            LockKind::PermitSemaphore => "permit-semaphore",
            LockKind::CountDownLatch => "count-down-latch",
            LockKind::LockWaitFails => "lock-wait-fails",
            LockKind::SemaphoreWaitFails => "semaphore-wait-fails",
            LockKind::LockLeases => "lock-leases",
            LockKind::LockHandles => "lock-handles",
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
            LockKind::SimpleLock
                | LockKind::MultiLock
                | LockKind::RedLock
                | LockKind::PermitSemaphore
        )
    }

    /// How many clients may hold it at once: [`PERMITS`] for a semaphore, 1 for a lock (a
    /// read lock's holders count as one), 0 for the latch (nobody holds it).
    pub fn capacity(self) -> usize {
        match self {
            LockKind::Semaphore | LockKind::PermitSemaphore | LockKind::SemaphoreWaitFails => {
                PERMITS as usize
            }
            LockKind::CountDownLatch => 0,
            _ => 1,
        }
    }

    /// The keys it keeps without a TTL by design: a semaphore's permits (and the permit
    /// semaphore's sorted set of permits), a latch's count, a fenced lock's token counter, a
    /// fair lock's queue and its timeouts (Redisson's scripts set no TTL on them).
    pub fn persistent_keys(self) -> &'static [&'static str] {
        match self {
            LockKind::Semaphore | LockKind::SemaphoreWaitFails | LockKind::CountDownLatch => {
                &[RESOURCE]
            }
            LockKind::PermitSemaphore => &[RESOURCE, "{explored}:timeout"],
            LockKind::FencedLock => &["redisson_lock_token:{explored}"],
            LockKind::FairLock => &[
                "redisson_lock_queue:{explored}",
                "redisson_lock_timeout:{explored}",
            ],
            _ => &[],
        }
    }

    /// Whether it waits for replicas (`WAIT`) after each write.
    pub fn synced(self) -> bool {
        matches!(
            self,
            LockKind::LockSynced | LockKind::LockWaitFails | LockKind::SemaphoreWaitFails
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
pub(crate) async fn open(
    topology: &Topology,
    contender: &Contender,
    origin: Instant,
) -> Option<Vec<Client>> {
    let w = &contender.workload;
    let mut base = ClientOptions::default()
        .wall_clock(wall_clock(origin))
        .watchdog_timeout(Duration::from_millis(w.lease_ms))
        .response_timeout(Duration::from_millis(RESPONSE_TIMEOUT_MS))
        .connection_timeout(Duration::from_millis(1000))
        .replica_sync(if w.kind.synced() {
            ReplicaSync::Replicas(w.kind.replicas())
        } else {
            ReplicaSync::Off
        });
    if matches!(
        w.kind,
        LockKind::LockWaitFails | LockKind::SemaphoreWaitFails
    ) {
        // A `WAIT` that outlasts the response timeout: under a stall it errors, not only
        // answers short.
        base = base.replica_sync_timeout(Duration::from_millis(RESPONSE_TIMEOUT_MS * 3 / 2));
    }
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

/// A finding unless a fault on the clients' links to the master explains it (the call that
/// left it may have failed because its reply was lost).
#[derive(Debug, Clone)]
pub(crate) struct Suspect {
    /// When the call that left it began (ms).
    pub(crate) from_ms: u64,
    /// When it was seen (ms).
    pub(crate) to_ms: u64,
    /// What was seen.
    pub(crate) what: String,
}

/// What a client leaves for the checks at the end of its run.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Semaphore permits it still holds.
    pub(crate) held: i64,
    /// Its calls that returned an error, `(start, end)` in ms: whether such a call took or
    /// gave back its permit is not known.
    pub(crate) errors: Vec<(u64, u64)>,
    /// Holds and writes it saw left behind by its failed calls.
    pub(crate) suspects: Vec<Suspect>,
    /// Its latch calls (the count-down latch kind).
    pub(crate) latch: Vec<crate::latch::LatchOp>,
}

/// A handle of the kind for one owner; what one round acquires and releases.
enum Handle {
    Single(Box<dyn DistributedLock>),
    Fenced(locksmith_lock::FencedLock),
    Simple(locksmith_lock::SimpleLock),
    Multi(MultiLock),
    Red(RedLock),
    Semaphore(locksmith_lock::Semaphore),
    Permits(locksmith_lock::PermitExpirableSemaphore),
}

fn handle(kind: LockKind, clients: &[Client], read: bool) -> Option<Handle> {
    let first = clients.first()?;
    Some(match kind {
        LockKind::Lock | LockKind::LockSynced | LockKind::LockWaitFails => {
            Handle::Single(first.lock(RESOURCE).boxed())
        }
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
        LockKind::Semaphore | LockKind::SemaphoreWaitFails => {
            Handle::Semaphore(first.semaphore(RESOURCE))
        }
        LockKind::PermitSemaphore => Handle::Permits(first.permit_expirable_semaphore(RESOURCE)),
        // Driven by their own loops.
        LockKind::CountDownLatch | LockKind::LockLeases | LockKind::LockHandles => return None,
    })
}

/// What an acquire gave: the token, how long the hold may last at most (leased kinds), the
/// permit's id (permit semaphore).
struct Granted {
    token: Option<u64>,
    valid_for: Option<Duration>,
    permit: Option<String>,
}

impl Granted {
    fn plain(valid_for: Option<Duration>) -> Granted {
        Granted {
            token: None,
            valid_for,
            permit: None,
        }
    }
}

impl Handle {
    async fn acquire(&self, wait: Duration, lease: Duration) -> Result<Option<Granted>, LockError> {
        Ok(match self {
            Handle::Single(l) => l
                .try_lock_for(wait, None)
                .await?
                .then(|| Granted::plain(None)),
            Handle::Fenced(l) => l
                .try_lock_and_get_token_for(wait, None)
                .await?
                .map(|token| Granted {
                    token: u64::try_from(token).ok(),
                    valid_for: None,
                    permit: None,
                }),
            Handle::Simple(l) => l
                .try_lock_for(wait, lease)
                .await?
                .then(|| Granted::plain(Some(lease))),
            Handle::Multi(l) => {
                let outcome = l.try_lock_for(Some(wait), Some(lease)).await?;
                outcome.acquired.then(|| Granted::plain(outcome.validity))
            }
            Handle::Red(l) => {
                let outcome = l.try_lock_for(Some(wait), Some(lease)).await?;
                outcome.acquired.then(|| Granted::plain(outcome.validity))
            }
            Handle::Semaphore(s) => s.try_acquire_for(wait).await?.then(|| Granted::plain(None)),
            Handle::Permits(s) => {
                // The permit's lease runs from when the script ran, some time after the call
                // began: the holder counts it from the call's start.
                let start = Instant::now();
                s.try_acquire_for(wait, Some(lease))
                    .await?
                    .map(|id| Granted {
                        token: None,
                        valid_for: Some(lease.saturating_sub(start.elapsed())),
                        permit: Some(id),
                    })
            }
        })
    }

    /// Releases the hold `granted` (`None`: one the caller does not have); `Ok(false)` when
    /// the server said the caller did not hold it.
    async fn release(&self, granted: Option<&Granted>) -> Result<bool, LockError> {
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
            Handle::Semaphore(s) => s.release().await.map(|()| true),
            Handle::Permits(s) => {
                let id = granted.and_then(|g| g.permit.as_deref()).unwrap_or("none");
                s.try_release(id).await
            }
        }
    }

    fn lost_signal(&self) -> Option<locksmith_lock::LostSignal> {
        match self {
            Handle::Single(l) => l.lost_signal(),
            Handle::Fenced(l) => l.lost_signal(),
            _ => None,
        }
    }

    /// The hash field its hold writes (the kinds whose key is one hash of owners).
    fn owner_field(&self) -> Option<String> {
        match self {
            Handle::Single(l) => Some(l.owner_field().to_owned()),
            Handle::Fenced(l) => Some(l.owner_field().to_owned()),
            _ => None,
        }
    }
}

/// A round's shared state: the run's history and resource, the client's name, its tally.
pub(crate) struct Round<'a> {
    pub(crate) topology: &'a Topology,
    pub(crate) history: History,
    pub(crate) name: &'a str,
    pub(crate) tally: Tally,
    resource: &'a Resource,
}

impl Round<'_> {
    fn now(&self) -> u64 {
        self.history.now_ms()
    }

    /// After a call that failed with an error at `from_ms`: whether the owner's hold is on
    /// the master all the same (a failed call must leave nothing behind); `None` when the
    /// master does not answer.
    async fn check_left_behind(
        &mut self,
        key: &str,
        field: &str,
        from_ms: u64,
        call: &str,
    ) -> Option<bool> {
        let asked = crate::run::ask(self.topology, &["HEXISTS", key, field]).await;
        let left = match asked {
            Some(locksmith_resp::Frame::Integer(n)) => n == 1,
            _ => return None,
        };
        if left {
            let to_ms = self.now();
            self.tally.suspects.push(Suspect {
                from_ms,
                to_ms,
                what: format!(
                    "{key}: {call} by {} at {from_ms} ms left its hold behind",
                    self.name
                ),
            });
        }
        Some(left)
    }

    /// After an acquire that returned an error at `from_ms`: records it failed and checks that
    /// it left no hold of `field` on the resource behind.
    async fn acquire_errored(&mut self, op: Pending, field: &str, from_ms: u64) {
        op.failed();
        self.check_left_behind(
            RESOURCE,
            field,
            from_ms,
            "an acquire that returned an error",
        )
        .await;
    }
}

/// Runs one client until `deadline`: rounds of acquire, hold (with fenced writes), release,
/// think; every operation recorded in `history`. Returns what it leaves for the end checks.
pub(crate) async fn contend(
    topology: Topology,
    contender: Contender,
    origin: Instant,
    deadline: Instant,
    resource: Arc<Resource>,
) -> Tally {
    let w = contender.workload;
    let mut rng = StdRng::seed_from_u64(contender.seed ^ 0x00c1_1e47);
    let clients = loop {
        if let Some(clients) = open(&topology, &contender, origin).await {
            break clients;
        }
        if Instant::now() >= deadline {
            return Tally::default();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut round = Round {
        topology: &topology,
        history: topology.history(),
        name: contender.name.as_str(),
        tally: Tally::default(),
        resource: &resource,
    };
    if w.kind == LockKind::CountDownLatch {
        round.tally.latch =
            crate::latch::latch_rounds(&mut round, &clients[0], &mut rng, w, deadline).await;
    }
    while Instant::now() < deadline && w.kind != LockKind::CountDownLatch {
        let go_on = match w.kind {
            LockKind::LockLeases => extreme_lease_round(&mut round, &clients[0], &mut rng, w).await,
            LockKind::LockHandles => handles_round(&mut round, &clients[0], &mut rng, w).await,
            _ => lock_round(&mut round, &clients, &mut rng, w).await,
        };
        if !go_on {
            break;
        }
        think(&mut rng, w).await;
    }
    for client in clients {
        client.shutdown().await;
    }
    round.tally
}

/// One round of the kinds the [`Handle`] drives; false when the kind has no handle.
async fn lock_round(
    round: &mut Round<'_>,
    clients: &[Client],
    rng: &mut StdRng,
    w: Workload,
) -> bool {
    let lease = Duration::from_millis(w.lease_ms);
    let history = round.history.clone();
    let name = round.name;
    let read = w.kind == LockKind::ReadWriteLock && rng.random_bool(0.5);
    let Some(lock) = handle(w.kind, clients, read) else {
        return false;
    };
    let counting = w.kind.capacity() > 1;
    if w.foreign_unlocks && w.kind.masters() == 1 && !counting && rng.random_ratio(1, 8) {
        // An unlock by an owner that holds nothing: the server must refuse it.
        let op = history.begin(name, RESOURCE);
        let accepted = matches!(lock.release(None).await, Ok(true));
        op.foreign_release(accepted);
    }
    let op = history.begin(name, RESOURCE);
    let from_ms = round.now();
    let granted = match lock.acquire(Duration::from_millis(w.wait_ms), lease).await {
        Ok(Some(granted)) => granted,
        Ok(None) => {
            op.failed();
            return true;
        }
        Err(_) => {
            round.tally.errors.push((from_ms, round.now()));
            match lock.owner_field() {
                Some(field) => round.acquire_errored(op, &field, from_ms).await,
                None => op.failed(),
            }
            return true;
        }
    };
    if read || counting {
        op.acquired_shared(granted.token);
    } else {
        op.acquired(granted.token);
    }
    if matches!(lock, Handle::Semaphore(_)) {
        round.tally.held += 1;
    }
    let hold = Duration::from_millis(rng.random_range(w.hold_ms / 10..=w.hold_ms.max(1)));
    let lost = hold_for(round, lock.lost_signal(), &granted, hold).await;
    if lost {
        return true;
    }
    let op = history.begin(name, RESOURCE);
    let from_ms = round.now();
    let released = lock.release(Some(&granted)).await;
    if matches!(lock, Handle::Semaphore(_)) {
        round.tally.held -= 1;
    }
    match released {
        Ok(false) => op.lost(),
        Ok(true) => op.released(),
        Err(_) => {
            // Whether it ran is not known: the hold ends as a loss (the checks count it
            // as held until someone acquires again).
            op.lost();
            round.tally.errors.push((from_ms, round.now()));
        }
    }
    true
}

/// One round of [`LockKind::LockLeases`]: a lease of 1 ms, `MAX_LEASE` or the watchdog's is
/// taken and released; a lease past `MAX_LEASE` must be refused before anything is written.
async fn extreme_lease_round(
    round: &mut Round<'_>,
    client: &Client,
    rng: &mut StdRng,
    w: Workload,
) -> bool {
    let lock = client.lock(RESOURCE);
    let wait = Duration::from_millis(w.wait_ms);
    let history = round.history.clone();
    let name = round.name;
    let (lease, valid_for) = match rng.random_range(0..5) {
        0 => (
            Some(Duration::from_millis(1)),
            Some(Duration::from_millis(1)),
        ),
        1 => (Some(MAX_LEASE), None),
        2 => (None, None),
        3 => (Some(MAX_LEASE + Duration::from_millis(1)), None),
        _ => (Some(Duration::MAX), None),
    };
    let from_ms = round.now();
    if lease.is_some_and(|l| l > MAX_LEASE) {
        // Refused before anything is written, whether the lock is free or not.
        let what = match lock.try_lock_for(wait, lease).await {
            Err(LockError::Invalid { .. }) => None,
            Err(_) => return true,
            Ok(true) => {
                // Taken all the same: give it back so the run goes on.
                let _ = lock.unlock().await;
                Some("was accepted")
            }
            Ok(false) => Some("was not refused at once"),
        };
        if let Some(what) = what {
            round.tally.suspects.push(Suspect {
                from_ms,
                to_ms: round.now(),
                what: format!("{RESOURCE}: a lease of {lease:?} (past MAX_LEASE) by {name} {what}"),
            });
        }
        round
            .check_left_behind(RESOURCE, lock.owner_field(), from_ms, "a refused acquire")
            .await;
        return true;
    }
    let op = history.begin(name, RESOURCE);
    match lock.try_lock_for(wait, lease).await {
        Ok(true) => op.acquired(None),
        Ok(false) => {
            op.failed();
            return true;
        }
        Err(_) => {
            round.acquire_errored(op, lock.owner_field(), from_ms).await;
            return true;
        }
    }
    let granted = Granted::plain(valid_for);
    let hold = Duration::from_millis(rng.random_range(w.hold_ms / 10..=w.hold_ms.max(1)));
    if hold_for(round, lock.lost_signal(), &granted, hold).await {
        return true;
    }
    release(&history, name, &lock).await;
    true
}

/// Releases `lock`, recorded from before the unlock is sent: refused (not the owner) is a
/// loss noticed.
async fn release(history: &History, name: &str, lock: &locksmith_lock::Lock) {
    let op = history.begin(name, RESOURCE);
    match lock.unlock().await {
        Ok(()) => op.released(),
        // Not the owner (a loss noticed), or not known whether it ran.
        Err(_) => op.lost(),
    }
}

/// The resource the `SimpleLock` rounds of [`LockKind::LockHandles`] contend for (a string
/// key, where the other rounds' `Lock` keeps a hash).
pub(crate) const SIMPLE_RESOURCE: &str = "explored-simple";

/// One round of [`LockKind::LockHandles`], one of three:
/// - a hold taken through a temporary handle and held past its lease: the watchdog must go on
///   renewing it after the handle is dropped, released through a new handle of the same owner;
/// - a `SimpleLock` hold whose clone tries to unlock it: a clone is another owner, refused;
/// - a guard moved to another thread and dropped inside that thread's own runtime, which then
///   ends: the release must still run.
async fn handles_round(
    round: &mut Round<'_>,
    client: &Client,
    rng: &mut StdRng,
    w: Workload,
) -> bool {
    let wait = Duration::from_millis(w.wait_ms);
    let lease = Duration::from_millis(w.lease_ms);
    let history = round.history.clone();
    let name = round.name;
    match rng.random_range(0..3) {
        0 => {
            let owner = client.new_owner();
            let field = client.lock_for(RESOURCE, owner).owner_field().to_owned();
            let op = history.begin(name, RESOURCE);
            let from_ms = round.now();
            // The handle is a temporary, dropped at the end of the statement.
            match client
                .lock_for(RESOURCE, owner)
                .try_lock_for(wait, None)
                .await
            {
                Ok(true) => op.acquired(None),
                Ok(false) => {
                    op.failed();
                    return true;
                }
                Err(_) => {
                    round.acquire_errored(op, &field, from_ms).await;
                    return true;
                }
            }
            // Held past the lease: only renewals keep it.
            let hold = Duration::from_millis(rng.random_range(w.lease_ms..=w.lease_ms * 3 / 2));
            let lock = client.lock_for(RESOURCE, owner);
            if hold_for(round, lock.lost_signal(), &Granted::plain(None), hold).await {
                return true;
            }
            release(&history, name, &lock).await;
        }
        1 => {
            let simple = client.simple_lock(SIMPLE_RESOURCE);
            let op = history.begin(name, SIMPLE_RESOURCE);
            match simple.try_lock_for(wait, lease).await {
                Ok(true) => op.acquired(None),
                Ok(false) | Err(_) => {
                    op.failed();
                    return true;
                }
            }
            // The clone is another owner: its unlock must be refused.
            let clone = simple.clone();
            let probe = history.begin(format!("{name}-clone"), SIMPLE_RESOURCE);
            probe.foreign_release(matches!(clone.unlock().await, Ok(true)));
            let hold = Duration::from_millis(rng.random_range(w.hold_ms / 10..=w.hold_ms.max(1)));
            let granted = Granted::plain(Some(lease));
            if hold_for_on(round, SIMPLE_RESOURCE, None, &granted, hold).await {
                return true;
            }
            let op = history.begin(name, SIMPLE_RESOURCE);
            match simple.unlock().await {
                Ok(true) => op.released(),
                Ok(false) | Err(_) => op.lost(),
            }
        }
        _ => {
            let lock = client.lock(RESOURCE);
            let op = history.begin(name, RESOURCE);
            let from_ms = round.now();
            let guard = match lock.try_acquire_for(wait, None).await {
                Ok(Some(guard)) => {
                    op.acquired(None);
                    guard
                }
                Ok(None) => {
                    op.failed();
                    return true;
                }
                Err(_) => {
                    round.acquire_errored(op, lock.owner_field(), from_ms).await;
                    return true;
                }
            };
            let hold = Duration::from_millis(rng.random_range(w.hold_ms / 10..=w.hold_ms.max(1)));
            if hold_for(round, guard.lost_signal(), &Granted::plain(None), hold).await {
                return true;
            }
            let op = history.begin(name, RESOURCE);
            let from_ms = round.now();
            drop_in_another_runtime(guard);
            // The release runs on the client's runtime: give it a think time, then the
            // owner's field must be gone. A hold the release is not known to have ended
            // (the master did not answer, or the field is still there) ends as a loss.
            tokio::time::sleep(Duration::from_millis(w.think_ms)).await;
            let left = round
                .check_left_behind(
                    RESOURCE,
                    lock.owner_field(),
                    from_ms,
                    "a guard dropped in another runtime",
                )
                .await;
            if left == Some(false) {
                op.released();
            } else {
                op.lost();
            }
        }
    }
    true
}

/// Drops `value` inside a current-thread runtime of its own on another thread, and waits for
/// that thread (whose runtime has ended by then).
fn drop_in_another_runtime<T: Send + 'static>(value: T) {
    let thread = std::thread::spawn(move || {
        match tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
        {
            Ok(runtime) => runtime.block_on(async move { drop(value) }),
            Err(_) => drop(value),
        }
    });
    let _ = thread.join();
}

/// Holds `RESOURCE` for `hold` (see [`hold_for_on`]).
async fn hold_for(
    round: &Round<'_>,
    signal: Option<locksmith_lock::LostSignal>,
    granted: &Granted,
    hold: Duration,
) -> bool {
    hold_for_on(round, RESOURCE, signal, granted, hold).await
}

/// Holds `resource` for `hold` (at most the lease's validity), writing to the protected
/// resource with the token at the start and the end; true when the hold ended with a loss
/// (a lost signal, or the validity ran out first), recorded.
async fn hold_for_on(
    round: &Round<'_>,
    resource: &str,
    signal: Option<locksmith_lock::LostSignal>,
    granted: &Granted,
    hold: Duration,
) -> bool {
    let (history, name) = (&round.history, round.name);
    if let Some(token) = granted.token {
        history
            .begin(name, resource)
            .wrote(Some(token), round.resource.write(token));
    }
    let (hold, expires) = match granted.valid_for {
        Some(valid) if valid <= hold => (valid, true),
        _ => (hold, false),
    };
    let lost = match signal {
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
        history.begin(name, resource).lost();
        return true;
    }
    if let Some(token) = granted.token {
        history
            .begin(name, resource)
            .wrote(Some(token), round.resource.write(token));
    }
    false
}

pub(crate) async fn think(rng: &mut StdRng, w: Workload) {
    let ms = rng.random_range(1..=w.think_ms.max(1));
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
