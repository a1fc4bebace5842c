//! Valkey 8.1's commands and options after Redis 7.0, under `--compat valkey-8.1`, each
//! compared with valkey-server 8.1.8 (replies and error texts), and refused under the default
//! target as redis-server 7.0.15 refuses them.

use locksmith_server::Compat;
use locksmith_testkit::Pair;

/// Runs every line on ours under the Valkey target and on valkey-server, then on ours under
/// the Redis target and on redis-server, asserting equal replies each time.
async fn under_both(setup: &[&[&str]], lines: &[&[&str]]) {
    for compat in Compat::ALL {
        let mut pair = Pair::start_for(compat).await;
        pair.all_same(setup).await;
        pair.all_same(lines).await;
    }
}

#[tokio::test]
async fn script_show_returns_a_cached_scripts_body() {
    under_both(
        &[&["SCRIPT", "LOAD", "return 'shown'"]],
        &[
            &["SCRIPT", "SHOW", "5a0d3c2e1d7b0d6ef1c6e0aa0d6b9ba3c0d8f7b1"],
            &["SCRIPT", "SHOW", "2a8c0d9c6a8e1a3b0ad41c3c6ee34a3b1e83c0e5"],
            &["SCRIPT", "SHOW"],
            &["SCRIPT", "SHOW", "a", "b"],
        ],
    )
    .await;
    let mut pair = Pair::start_for(Compat::Valkey81).await;
    let sha = pair.same(&["SCRIPT", "LOAD", "return 'shown'"]).await;
    let sha = sha
        .trim_start_matches("bulk-string('\"")
        .trim_end_matches("\"')");
    let body = pair.same(&["SCRIPT", "SHOW", sha]).await;
    assert!(body.contains("return 'shown'"), "{body}");
    pair.same(&["SCRIPT", "SHOW", &sha.to_ascii_uppercase()])
        .await;
    pair.same(&["SCRIPT", "FLUSH"]).await;
    pair.same(&["SCRIPT", "SHOW", sha]).await;
}

#[tokio::test]
async fn hscan_novalues_and_zscan_noscores() {
    under_both(
        &[
            &["HSET", "h", "f1", "v1", "f2", "v2"],
            &["ZADD", "z", "1", "a", "2", "b"],
            &["SADD", "s", "x"],
            &["SET", "k", "v"],
        ],
        &[
            &["HSCAN", "h", "0", "NOVALUES"],
            &["HSCAN", "h", "0", "novalues", "MATCH", "f1"],
            &["HSCAN", "h", "0", "COUNT", "10", "NOVALUES", "NOVALUES"],
            &["HSCAN", "nokey", "0", "NOVALUES"],
            &["HSCAN", "h", "0", "NOSCORES"],
            &["ZSCAN", "z", "0", "NOSCORES"],
            &["ZSCAN", "z", "0", "NOSCORES", "MATCH", "b"],
            &["ZSCAN", "z", "0", "NOVALUES"],
            &["SSCAN", "s", "0", "NOVALUES"],
            &["SSCAN", "s", "0", "NOSCORES"],
            &["SCAN", "0", "NOVALUES"],
            &["SCAN", "0", "NOSCORES"],
            &["HSCAN", "h", "0"],
            &["ZSCAN", "z", "0"],
        ],
    )
    .await;
}

#[tokio::test]
async fn set_ifeq_sets_only_over_an_equal_string() {
    under_both(
        &[&["SET", "n", "5"], &["RPUSH", "l", "a"]],
        &[
            &["SET", "n", "6", "IFEQ", "4"],
            &["GET", "n"],
            &["SET", "n", "6", "IFEQ", "5"],
            &["GET", "n"],
            &["SET", "n", "7", "ifeq", "6", "GET"],
            &["SET", "n", "8", "IFEQ", "1", "GET"],
            &["SET", "n", "9", "IFEQ", "7", "EX", "100"],
            &["TTL", "n"],
            &["SET", "n", "10", "IFEQ", "9", "KEEPTTL"],
            &["TTL", "n"],
            &["SET", "missing", "v", "IFEQ", "x"],
            &["EXISTS", "missing"],
            &["SET", "l", "v", "IFEQ", "a"],
            &["SET", "l", "v", "IFEQ", "a", "GET"],
            &["SET", "n", "v", "NX", "IFEQ", "10"],
            &["SET", "n", "v", "IFEQ", "10", "XX"],
            &["SET", "n", "v", "IFEQ", "10", "IFEQ", "10"],
            &["SET", "n", "v", "IFEQ"],
            &["SET", "n", "v", "IFEQ", "10", "EX", "0"],
            &["GET", "n"],
        ],
    )
    .await;
}

#[tokio::test]
async fn client_kill_maxage() {
    under_both(
        &[],
        &[
            &["CLIENT", "KILL", "MAXAGE", "1000000"],
            &["CLIENT", "KILL", "MAXAGE", "0"],
            &["CLIENT", "KILL", "MAXAGE", "-1"],
            &["CLIENT", "KILL", "MAXAGE", "abc"],
            &["CLIENT", "KILL", "MAXAGE", "99999999999999999999"],
            &["CLIENT", "KILL", "MAXAGE", "1000000", "SKIPME", "no"],
        ],
    )
    .await;
}
