//! Helpers of the harness scenarios: connections without the redis crate's response timeout
//! (WAIT and paused nodes legitimately take long) and raw lock operations.

use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
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

/// Compare-and-delete with GET + DEL (two commands, not atomic: the scenarios show what that
/// costs): whether `owner` still held it.
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
