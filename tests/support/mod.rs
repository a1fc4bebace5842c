//! Helpers shared by the umbrella scenarios: recording lock operations of the real library into
//! the harness [`History`] and turning a [`LostSignal`] into a recorded loss (timelines:
//! `locksmith_testkit::write_timeline!`).
#![allow(dead_code, unreachable_pub, missing_docs)]

use locksmith::harness::{History, Topology};
use locksmith::lock::{Client, LockError, LostReason, LostSignal, Owner, RedLock};
use std::future::Future;
use tokio::task::JoinHandle;

/// Runs an acquire (`Ok(true)` = acquired) and records it as `who` on `resource`.
pub async fn acquire<F>(
    history: &History,
    who: &str,
    resource: &str,
    f: F,
) -> Result<bool, LockError>
where
    F: Future<Output = Result<bool, LockError>>,
{
    let op = history.begin(who, resource);
    let r = f.await;
    match &r {
        Ok(true) => op.acquired(None),
        _ => op.failed(),
    }
    r
}

/// Runs a fenced acquire (`Ok(Some(token))` = acquired) and records it with its token.
pub async fn acquire_fenced<F>(
    history: &History,
    who: &str,
    resource: &str,
    f: F,
) -> Result<Option<i64>, LockError>
where
    F: Future<Output = Result<Option<i64>, LockError>>,
{
    let op = history.begin(who, resource);
    let r = f.await;
    match &r {
        Ok(Some(t)) => op.acquired(Some(*t as u64)),
        _ => op.failed(),
    }
    r
}

/// Runs a release and records it (the hold ends when the release starts, whatever its result).
pub async fn release<F, T>(history: &History, who: &str, resource: &str, f: F) -> T
where
    F: Future<Output = T>,
{
    let op = history.begin(who, resource);
    let r = f.await;
    op.released();
    r
}

/// Records `who`'s loss of `resource` the moment `signal` fires (the holder stops its work
/// then); the task returns the reason, or `None` when the hold ended without a loss.
pub fn record_loss(
    history: &History,
    who: &str,
    resource: &str,
    mut signal: LostSignal,
) -> JoinHandle<Option<LostReason>> {
    let history = history.clone();
    let (who, resource) = (who.to_owned(), resource.to_owned());
    tokio::spawn(async move {
        let reason = signal.lost().await;
        if reason.is_some() {
            history.begin(who, resource).lost();
        }
        reason
    })
}

/// Logs to stderr when `RUST_LOG` is set (for debugging a scenario).
pub fn init_tracing() {
    if std::env::var_os("RUST_LOG").is_some() {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        // `RUST_LOG`'s `target=level` directives (`Targets`: no regex engine to compile).
        let targets = std::env::var("RUST_LOG")
            .ok()
            .and_then(|s| s.parse::<tracing_subscriber::filter::Targets>().ok())
            .unwrap_or_default();
        let _ = tracing_subscriber::registry()
            .with(tracing_subscriber::fmt::layer().with_test_writer())
            .with(targets)
            .try_init();
    }
}

/// A RedLock on `resource` over every node of `t` (one client per master, as RedLock needs
/// independent connections), for one new owner; the clients are returned to keep them open.
pub async fn redlock(t: &Topology, resource: &str) -> (Vec<Client>, RedLock) {
    let mut clients = Vec::new();
    for n in t.nodes() {
        clients.push(Client::open(&t.url(n)).await.unwrap());
    }
    let owner = Owner::new();
    let red = RedLock::new(
        clients
            .iter()
            .map(|c| c.lock_for(resource, owner))
            .collect(),
    );
    (clients, red)
}
