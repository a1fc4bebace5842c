//! Smoke test of the core: a pipelined SET/GET round trip with the redis crate, compared with
//! real Redis.

use locksmith_testkit as support;

#[tokio::test]
async fn set_get_and_errors_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["SET", "k", "v"],
        &["GET", "k"],
        &["SET", "k", "v2", "NX"],
        &["SET", "k", "v3", "XX", "GET"],
        &["SET", "k", "v", "EX", "0"],
        &["SET", "k", "v", "EX", "abc"],
        &["SET", "k", "v", "NX", "XX"],
        &["GET"],
        &["NOPE", "a", "b"],
        &["EXISTS", "k", "k", "missing"],
        &["TYPE", "k"],
        &["DEL", "k", "missing"],
        &["SELECT", "16"],
        &["SELECT", "x"],
        &["PING"],
        &["PING", "hello"],
        &["ECHO", "hi"],
    ])
    .await;
}
