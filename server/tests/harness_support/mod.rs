//! Helpers shared by the harness tests: connections without the redis crate's response
//! timeout (WAIT and paused nodes legitimately take long), raw lock operations, and where
//! timelines are written.
#![allow(dead_code, unreachable_pub, missing_docs)]

use locksmith_server::harness::{History, Timeline};
use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
use std::path::PathBuf;
use std::time::Duration;

/// A multiplexed connection to `url` with no response timeout.
pub async fn conn(url: &str) -> MultiplexedConnection {
    try_conn(url).await.unwrap()
}

/// Like [`conn`], returning the error.
pub async fn try_conn(url: &str) -> redis::RedisResult<MultiplexedConnection> {
    let config = AsyncConnectionConfig::new()
        .set_response_timeout(None)
        .set_connection_timeout(Some(Duration::from_secs(5)));
    redis::Client::open(url)?
        .get_multiplexed_async_connection_with_config(&config)
        .await
}

/// Runs a command given as strings.
pub async fn run<T: redis::FromRedisValue>(
    con: &mut MultiplexedConnection,
    args: &[&str],
) -> redis::RedisResult<T> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query_async(con).await
}

/// `SET key owner NX PX lease_ms`: whether the lock was taken.
pub async fn try_lock(
    con: &mut MultiplexedConnection,
    key: &str,
    owner: &str,
    lease_ms: u64,
) -> redis::RedisResult<bool> {
    let r: Option<String> = redis::cmd("SET")
        .arg(key)
        .arg(owner)
        .arg("NX")
        .arg("PX")
        .arg(lease_ms)
        .query_async(con)
        .await?;
    Ok(r.is_some())
}

/// Compare-and-delete with GET + DEL (no EVAL yet): whether `owner` still held it.
pub async fn unlock(
    con: &mut MultiplexedConnection,
    key: &str,
    owner: &str,
) -> redis::RedisResult<bool> {
    let v: Option<String> = redis::cmd("GET").arg(key).query_async(con).await?;
    if v.as_deref() != Some(owner) {
        return Ok(false);
    }
    let n: i64 = redis::cmd("DEL").arg(key).query_async(con).await?;
    Ok(n == 1)
}

/// Where a scenario's timeline goes: `<target>/tmp/locksmith-timelines/<name>.html`.
pub fn timeline_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("locksmith-timelines")
        .join(format!("{name}.html"))
}

/// Writes the timeline of `history` for scenario `name`; returns its path.
pub fn write_timeline(name: &str, title: &str, history: &History) -> PathBuf {
    let path = timeline_path(name);
    Timeline::new(title, history).write_html(&path).unwrap();
    eprintln!("timeline: {}", path.display());
    path
}
