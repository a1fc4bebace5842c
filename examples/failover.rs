//! Seed 004's flaw, live: a plain `SET NX PX` lock taken on a master whose replica lags is
//! granted a second time after the master fails (scenario 1); acquiring with `WAIT 1` until a
//! replica has the lock keeps it through the failover (scenario 2). Writes both timelines and
//! prints where.
//!
//! ```sh
//! cargo run --example failover
//! ```

use locksmith::server::harness::{Checker, History, Timeline, Topology};
use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
use std::path::PathBuf;
use std::time::Duration;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const LEASE_MS: u64 = 30_000;

async fn connect(url: &str) -> Result<MultiplexedConnection> {
    let config = AsyncConnectionConfig::new().set_response_timeout(None);
    Ok(redis::Client::open(url)?
        .get_multiplexed_async_connection_with_config(&config)
        .await?)
}

/// `SET lock owner NX PX lease`, optionally followed by `WAIT 1 1500` (rolled back with a
/// compare-and-delete when no replica acknowledged it).
async fn acquire(
    history: &History,
    con: &mut MultiplexedConnection,
    owner: &str,
    synced: bool,
) -> Result<bool> {
    let op = history.begin(owner, "lock");
    let mut pipe = redis::pipe();
    pipe.cmd("SET")
        .arg("lock")
        .arg(owner)
        .arg("NX")
        .arg("PX")
        .arg(LEASE_MS);
    let (set, acked): (Option<String>, i64) = if synced {
        pipe.cmd("WAIT").arg(1).arg(1500).query_async(con).await?
    } else {
        let (set,): (Option<String>,) = pipe.query_async(con).await?;
        (set, 1)
    };
    let ok = set.is_some() && acked > 0;
    if set.is_some() && !ok {
        let v: Option<String> = redis::cmd("GET").arg("lock").query_async(con).await?;
        if v.as_deref() == Some(owner) {
            let _: i64 = redis::cmd("DEL").arg("lock").query_async(con).await?;
        }
    }
    if ok {
        op.acquired(None);
    } else {
        op.failed();
    }
    Ok(ok)
}

async fn scenario(synced: bool) -> Result<(PathBuf, usize)> {
    let topology = Topology::builder()
        .replicas(1)
        .replication_delay(Duration::from_millis(500))
        .seed(4)
        .build()
        .await?;
    let history = topology.history();
    let mut a = connect(&topology.front_url()).await?;
    acquire(&history, &mut a, "client-a", synced).await?;
    topology.fail_master().await?;
    let mut b = connect(&topology.front_url()).await?;
    let b_got = acquire(&history, &mut b, "client-b", synced).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    if b_got {
        history.begin("client-b", "lock").released();
    }
    history.begin("client-a", "lock").released();
    let name = if synced {
        "failover-wait-synced"
    } else {
        "failover-plain"
    };
    let title = if synced {
        "SET NX PX + WAIT 1: the lock survives the failover"
    } else {
        "Plain SET NX PX: the master fails before replicating, the lock is granted twice"
    };
    let dir =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    let path = dir.join("locksmith-timelines").join(format!("{name}.html"));
    Timeline::new(title, &history).write_html(&path)?;
    let violations = Checker::check(&history);
    for v in &violations {
        eprintln!("  violation: {v}");
    }
    topology.shutdown().await;
    Ok((path, violations.len()))
}

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() -> Result<()> {
    let (plain, n) = scenario(false).await?;
    println!(
        "scenario 1 (plain lock): {n} violation(s); timeline: {}",
        plain.display()
    );
    let (synced, m) = scenario(true).await?;
    println!(
        "scenario 2 (WAIT-synced lock): {m} violation(s); timeline: {}",
        synced.display()
    );
    Ok(())
}
