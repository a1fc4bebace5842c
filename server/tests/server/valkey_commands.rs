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

#[tokio::test]
async fn waitaof_answers_as_without_an_append_only_file() {
    under_both(
        &[&["SET", "k", "v"]],
        &[
            &["WAITAOF", "0", "0", "0"],
            &["WAITAOF", "1", "0", "0"],
            &["WAITAOF", "2", "0", "0"],
            &["WAITAOF", "-1", "0", "0"],
            &["WAITAOF", "a", "0", "0"],
            &["WAITAOF", "0", "-1", "0"],
            &["WAITAOF", "0", "a", "0"],
            &["WAITAOF", "0", "9223372036854775808", "0"],
            &["WAITAOF", "0", "0", "-1"],
            &["WAITAOF", "1", "0", "a"],
            &["WAITAOF", "0", "0"],
            // No replica acknowledges an fsync: the timeout ends it.
            &["WAITAOF", "0", "1", "50"],
            &["EVAL", "return redis.call('WAITAOF', 0, 1, 0)", "0"],
        ],
    )
    .await;
    // Inside MULTI it is queued and answers at once, as WAIT does on both targets.
    let mut pair = Pair::start_for(Compat::Valkey81).await;
    pair.all_same(&[
        &["MULTI"],
        &["WAITAOF", "0", "1", "0"],
        &["WAITAOF", "1", "0", "0"],
        &["WAIT", "1", "0"],
        &["EXEC"],
    ])
    .await;
    let mut pair = Pair::start_for(Compat::Redis70).await;
    pair.all_same(&[
        &["MULTI"],
        &["WAIT", "1", "0"],
        &["SET", "k", "v"],
        &["EXEC"],
    ])
    .await;
}

/// Valkey's argument checks of BITCOUNT and BITPOS (before the key is looked up; BITCOUNT's
/// `end` optional) and SCAN's refusal of an unknown type, against Redis 7.0's under the
/// default target.
#[tokio::test]
async fn bit_range_and_scan_type_checks_follow_the_target() {
    under_both(
        &[&["SET", "s", "foobar"], &["RPUSH", "l", "a"]],
        &[
            &["BITCOUNT", "s", "0"],
            &["BITCOUNT", "s", "-2"],
            &["BITCOUNT", "s", "1", "2"],
            &["BITCOUNT", "s", "1", "2", "BIT"],
            &["BITCOUNT", "s", "0", "1", "x"],
            &["BITCOUNT", "s", "0", "b", "x"],
            &["BITCOUNT", "s", "a", "b"],
            &["BITCOUNT", "nokey", "0", "1", "x"],
            &["BITCOUNT", "nokey", "a"],
            &["BITCOUNT", "l", "0", "1", "x"],
            &["BITCOUNT", "s", "0", "1", "bit", "x"],
            &["BITPOS", "s", "1", "0", "1", "x"],
            &["BITPOS", "nokey", "1", "0", "1", "x"],
            &["BITPOS", "nokey", "0", "a"],
            &["BITPOS", "nokey", "1", "0", "a"],
            &["BITPOS", "l", "1", "0", "a"],
            &["BITPOS", "nokey", "1", "0", "1", "bit", "x"],
            &["BITPOS", "s", "1", "2"],
            &["BITPOS", "nokey", "0", "1", "hello", "hello2"],
            &["BITPOS", "nokey", "0", "0", "1", "hello"],
            &["BITPOS", "s", "0", "1", "hello", "hello2"],
            &["SCAN", "0", "TYPE", "foo"],
            &["SCAN", "0", "TYPE", "String"],
            &["SCAN", "0", "TYPE", "list"],
        ],
    )
    .await;
}
