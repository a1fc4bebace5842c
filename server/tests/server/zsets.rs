//! Sorted set commands compared with real Redis: ZADD flags and errors, scores as doubles,
//! ranks, every range form, removals by range, pops, ZSCAN, set operations, WRONGTYPE, and
//! RESP3 replies.

use locksmith_testkit as support;

#[tokio::test]
async fn zadd_flags_and_errors_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
        &["ZADD", "z", "1", "a"],
        &["ZADD", "z", "CH", "5", "a", "6", "d"],
        &["ZADD", "z", "NX", "10", "a", "7", "e"],
        &["ZADD", "z", "XX", "10", "a", "7", "f"],
        &["ZADD", "z", "XX", "CH", "11", "a", "7", "g"],
        &["ZADD", "z", "GT", "CH", "1", "a", "20", "b"],
        &["ZADD", "z", "LT", "CH", "100", "a", "0", "b"],
        &["ZADD", "z", "GT", "8", "newgt"],
        &["ZADD", "z", "INCR", "5", "a"],
        &["ZADD", "z", "INCR", "NX", "5", "a"],
        &["ZADD", "z", "INCR", "XX", "5", "nope"],
        &["ZADD", "z", "INCR", "GT", "-1", "a"],
        &["ZADD", "z", "INCR", "5", "a", "6", "b"],
        &["ZADD", "z", "NX", "XX", "1", "a"],
        &["ZADD", "z", "GT", "LT", "1", "a"],
        &["ZADD", "z", "GT", "NX", "1", "a"],
        &["ZADD", "z", "1"],
        &["ZADD", "z", "1", "a", "2"],
        &["ZADD", "z", "x", "a"],
        &["ZADD", "z", "nan", "a"],
        &["ZADD", "z", "FOO", "1", "a"],
        &["ZADD", "z", "inf", "i", "-inf", "ni"],
        &["ZADD", "z", "INCR", "-inf", "i"],
        &["ZADD", "new", "XX", "1", "a"],
        &["ZADD", "new", "XX", "INCR", "1", "a"],
        &["EXISTS", "new"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["ZCARD", "z"],
        &["ZCARD", "missing"],
    ])
    .await;
}

#[tokio::test]
async fn scores_incr_rem_and_ranks_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &[
            "ZADD", "z", "0.1", "a", "1.5", "b", "-2", "c", "1e20", "d", "0", "e",
        ],
        &["ZSCORE", "z", "a"],
        &["ZSCORE", "z", "d"],
        &["ZSCORE", "z", "nope"],
        &["ZSCORE", "missing", "a"],
        &["ZMSCORE", "z", "a", "nope", "b"],
        &["ZMSCORE", "missing", "a", "b"],
        &["ZINCRBY", "z", "0.2", "a"],
        &["ZINCRBY", "z", "1", "new"],
        &["ZINCRBY", "z", "x", "a"],
        &["ZINCRBY", "fresh", "3", "m"],
        &["ZADD", "inf", "inf", "m"],
        &["ZINCRBY", "inf", "-inf", "m"],
        &["ZRANK", "z", "c"],
        &["ZRANK", "z", "d"],
        &["ZREVRANK", "z", "d"],
        &["ZRANK", "z", "nope"],
        &["ZRANK", "missing", "a"],
        &["ZREM", "z", "a", "nope", "b"],
        &["ZREM", "missing", "a"],
        &["ZREM", "fresh", "m"],
        &["EXISTS", "fresh"],
        &["ZCOUNT", "z", "-inf", "+inf"],
        &["ZCOUNT", "z", "(0", "1e20"],
        &["ZCOUNT", "z", "(0", "(1e20"],
        &["ZCOUNT", "z", "x", "1"],
        &["ZCOUNT", "missing", "0", "1"],
    ])
    .await;
}

#[tokio::test]
async fn ranges_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &[
            "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "5", "f",
        ],
        &["ZRANGE", "z", "0", "-1"],
        &["ZRANGE", "z", "1", "2", "WITHSCORES"],
        &["ZRANGE", "z", "-2", "100", "REV"],
        &["ZRANGE", "z", "5", "1"],
        &["ZRANGE", "z", "x", "1"],
        &["ZRANGE", "z", "(1", "4", "BYSCORE"],
        &["ZRANGE", "z", "4", "(1", "BYSCORE", "REV", "WITHSCORES"],
        &["ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"],
        &["ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "2"],
        &["ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "2", "-1"],
        &["ZRANGE", "z", "[b", "(e", "BYLEX"],
        &["ZRANGE", "z", "+", "-", "BYLEX", "REV", "LIMIT", "0", "3"],
        &["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"],
        &["ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"],
        &["ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"],
        &["ZRANGE", "z", "0", "1", "LIMIT", "0"],
        &["ZRANGE", "z", "a", "b", "BYSCORE"],
        &["ZRANGE", "z", "a", "b", "BYLEX"],
        &["ZRANGE", "missing", "0", "-1"],
        &["ZREVRANGE", "z", "0", "2", "WITHSCORES"],
        &["ZREVRANGE", "z", "0", "2", "BYSCORE"],
        &["ZRANGEBYSCORE", "z", "2", "4"],
        &[
            "ZRANGEBYSCORE",
            "z",
            "(2",
            "+inf",
            "WITHSCORES",
            "LIMIT",
            "1",
            "10",
        ],
        &["ZRANGEBYSCORE", "z", "2", "4", "REV"],
        &["ZREVRANGEBYSCORE", "z", "4", "2"],
        &[
            "ZREVRANGEBYSCORE",
            "z",
            "+inf",
            "(2",
            "LIMIT",
            "0",
            "2",
            "WITHSCORES",
        ],
        &["ZRANGEBYLEX", "z", "-", "[c"],
        &["ZRANGEBYLEX", "z", "(a", "+", "LIMIT", "1", "2"],
        &["ZREVRANGEBYLEX", "z", "[c", "-"],
        &["ZRANGEBYLEX", "z", "a", "+"],
        &["ZLEXCOUNT", "z", "-", "+"],
        &["ZLEXCOUNT", "z", "[b", "(d"],
        &["ZRANGESTORE", "dst", "z", "0", "2"],
        &["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        &[
            "ZRANGESTORE",
            "dst",
            "z",
            "(3",
            "+inf",
            "BYSCORE",
            "LIMIT",
            "0",
            "2",
        ],
        &["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        &["ZRANGESTORE", "dst", "z", "10", "20"],
        &["EXISTS", "dst"],
        &["ZRANGESTORE", "dst", "z", "0", "1", "WITHSCORES"],
    ])
    .await;
}

#[tokio::test]
async fn removals_by_range_and_pops_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &[
            "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "6", "f",
        ],
        &["ZREMRANGEBYSCORE", "z", "(1", "2"],
        &["ZREMRANGEBYSCORE", "z", "x", "2"],
        &["ZREMRANGEBYRANK", "z", "-1", "-1"],
        &["ZREMRANGEBYRANK", "z", "x", "1"],
        &["ZREMRANGEBYLEX", "z", "[d", "[d"],
        &["ZREMRANGEBYLEX", "z", "d", "e"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["ZPOPMIN", "z"],
        &["ZPOPMAX", "z", "1"],
        &["ZPOPMIN", "z", "0"],
        &["ZPOPMIN", "z", "-1"],
        &["ZPOPMIN", "z", "x"],
        &["ZPOPMIN", "z", "1", "2"],
        &["ZPOPMIN", "missing"],
        &["ZPOPMIN", "missing", "2"],
        &["ZPOPMAX", "z", "10"],
        &["EXISTS", "z"],
        &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
        &["ZMPOP", "2", "missing", "z", "MIN"],
        &["ZMPOP", "1", "z", "MAX", "COUNT", "10"],
        &["ZMPOP", "1", "z", "MAX"],
        &["ZMPOP", "0", "z", "MAX"],
        &["ZMPOP", "1", "z", "UP"],
        &["ZMPOP", "2", "z", "MIN"],
        &["ZMPOP", "1", "z", "MIN", "COUNT", "0"],
        &["ZMPOP", "1", "z", "MIN", "COUNT", "1", "COUNT", "1"],
        &["ZADD", "z", "1", "a"],
        &["BZPOPMIN", "missing", "z", "0"],
        &["ZADD", "z", "1", "a", "2", "b"],
        &["BZPOPMAX", "z", "0.5"],
        &["BZMPOP", "0", "1", "z", "MIN", "COUNT", "5"],
        &["BZPOPMIN", "z", "x"],
        &["BZPOPMIN", "z", "-1"],
        &["BZMPOP", "x", "1", "z", "MIN"],
    ])
    .await;
}

#[tokio::test]
async fn set_operations_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["ZADD", "z1", "1", "a", "2", "b", "3", "c"],
        &["ZADD", "z2", "10", "b", "20", "c", "30", "d"],
        &["SADD", "s", "c", "d", "e"],
        &["ZUNIONSTORE", "u", "2", "z1", "z2"],
        &["ZRANGE", "u", "0", "-1", "WITHSCORES"],
        &[
            "ZUNIONSTORE",
            "u",
            "3",
            "z1",
            "z2",
            "s",
            "WEIGHTS",
            "2",
            "0.5",
            "1",
        ],
        &["ZRANGE", "u", "0", "-1", "WITHSCORES"],
        &["ZUNIONSTORE", "u", "2", "z1", "z2", "AGGREGATE", "MAX"],
        &["ZRANGE", "u", "0", "-1", "WITHSCORES"],
        &["ZINTERSTORE", "i", "2", "z1", "z2", "AGGREGATE", "MIN"],
        &["ZRANGE", "i", "0", "-1", "WITHSCORES"],
        &[
            "ZINTERSTORE",
            "i",
            "3",
            "z1",
            "z2",
            "s",
            "WEIGHTS",
            "1",
            "1",
            "100",
        ],
        &["ZRANGE", "i", "0", "-1", "WITHSCORES"],
        &["ZINTERSTORE", "i", "2", "z1", "missing"],
        &["EXISTS", "i"],
        &["ZDIFFSTORE", "d", "2", "z1", "z2"],
        &["ZRANGE", "d", "0", "-1", "WITHSCORES"],
        &["ZUNION", "2", "z1", "z2", "WITHSCORES"],
        &["ZINTER", "2", "z1", "z2"],
        &["ZDIFF", "2", "z2", "s", "WITHSCORES"],
        &["ZUNIONSTORE", "u", "0", "z1"],
        &["ZUNION", "0", "z1"],
        &["ZUNIONSTORE", "u", "x", "z1"],
        &["ZUNIONSTORE", "u", "3", "z1", "z2"],
        &["ZUNIONSTORE", "u", "2", "z1", "z2", "WEIGHTS", "1"],
        &["ZUNIONSTORE", "u", "2", "z1", "z2", "WEIGHTS", "1", "x"],
        &["ZUNIONSTORE", "u", "2", "z1", "z2", "AGGREGATE", "AVG"],
        &["ZUNIONSTORE", "u", "2", "z1", "z2", "WITHSCORES"],
        &["ZDIFF", "2", "z1", "z2", "WEIGHTS", "1", "1"],
        &["SET", "str", "v"],
        &["ZUNIONSTORE", "u", "2", "z1", "str"],
        &["ZINTER", "2", "str", "z1"],
    ])
    .await;
}

#[tokio::test]
async fn zscan_of_a_small_sorted_set_matches_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["ZADD", "z", "1", "a", "2", "b", "3", "c", "0.1", "d"],
        &["ZSCAN", "z", "0"],
        &["ZSCAN", "z", "0", "MATCH", "b*"],
        &["ZSCAN", "missing", "0"],
        &["ZSCAN", "z", "x"],
    ])
    .await;
}

#[tokio::test]
async fn zset_commands_on_other_types_answer_wrongtype() {
    let mut pair = support::Pair::start().await;
    pair.same(&["SET", "s", "v"]).await;
    for args in [
        &["ZADD", "s", "1", "a"][..],
        &["ZINCRBY", "s", "1", "a"],
        &["ZREM", "s", "a"],
        &["ZSCORE", "s", "a"],
        &["ZMSCORE", "s", "a"],
        &["ZCARD", "s"],
        &["ZCOUNT", "s", "0", "1"],
        &["ZRANK", "s", "a"],
        &["ZRANGE", "s", "0", "1"],
        &["ZRANGEBYSCORE", "s", "0", "1"],
        &["ZRANGESTORE", "d", "s", "0", "1"],
        &["ZREMRANGEBYRANK", "s", "0", "1"],
        &["ZPOPMIN", "s"],
        &["ZMPOP", "1", "s", "MIN"],
        &["BZPOPMIN", "s", "1"],
        &["ZSCAN", "s", "0"],
        &["LPUSH", "z", "x"],
        &["ZADD", "z", "1", "a"],
    ] {
        pair.same(args).await;
    }
}

#[tokio::test]
async fn zset_replies_in_resp3_match_redis() {
    let mut pair = support::Resp3Pair::start().await;
    pair.all_same(&[
        &["ZADD", "z", "0.1", "a", "2", "b", "3", "c"],
        &["ZSCORE", "z", "a"],
        &["ZMSCORE", "z", "a", "nope"],
        &["ZINCRBY", "z", "1", "b"],
        &["ZADD", "z", "INCR", "1", "c"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES"],
        &["ZUNION", "1", "z", "WITHSCORES"],
        &["ZSCAN", "z", "0"],
        &["ZPOPMIN", "z"],
        &["ZPOPMIN", "z", "1"],
        &["ZMPOP", "1", "z", "MAX"],
        &["ZADD", "z", "1", "a"],
        &["BZPOPMIN", "z", "0"],
        &["BZPOPMIN", "z", "0.01"],
    ])
    .await;
}

/// Doubles as each target writes them, byte for byte against its reference (redis-server
/// 7.0.15's `%.17g`, valkey-server 8.1.8's shortest form: `0.1` for `0.10000000000000001`,
/// `100000000000000000` for `1e+17`): sorted set replies in RESP2 and RESP3, a listpack's
/// scores (ZSCAN, DUMP; MEMORY USAGE under Redis), a script's numbers as arguments and double replies it
/// reads or returns; GEO and INCRBYFLOAT's forms, which both targets share.
#[tokio::test]
async fn doubles_are_written_as_each_target_writes_them() {
    let zadd: &[&str] = &[
        "ZADD",
        "z",
        "0.1",
        "a",
        "1.5e300",
        "b",
        "3.0",
        "c",
        "-0.0",
        "d",
        "1e17",
        "e",
        "123456789012345678",
        "f",
        "1e23",
        "g",
        "1e-7",
        "h",
        "33333.333333333333",
        "i",
        "4611686018427389000",
        "j",
        "5e-324",
        "k",
        "-123456789.123456789",
        "l",
    ];
    let fractions: Vec<String> = (0..130)
        .flat_map(|i| [format!("{}", f64::from(i) / 10.0 + 0.1), format!("m{i}")])
        .collect();
    let mut big: Vec<&str> = vec!["ZADD", "big"];
    big.extend(fractions.iter().map(String::as_str));
    let setup: &[&[&str]] = &[
        zadd,
        &big,
        &["ZADD", "one", "0.7", "x"],
        &[
            "GEOADD",
            "geo",
            "13.361389",
            "38.115556",
            "Palermo",
            "15.087269",
            "37.502669",
            "Catania",
        ],
        &["SET", "f", "0.1"],
        &["HSET", "h", "f", "0.1"],
    ];
    // Both protocols.
    let both: &[&[&str]] = &[
        &["ZSCORE", "z", "a"],
        &["ZSCORE", "z", "b"],
        &["ZSCORE", "z", "e"],
        &["ZSCORE", "z", "g"],
        &["ZSCORE", "big", "m7"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &[
            "ZRANGEBYSCORE",
            "z",
            "(0",
            "+inf",
            "WITHSCORES",
            "LIMIT",
            "0",
            "4",
        ],
        &["ZREVRANGE", "big", "0", "2", "WITHSCORES"],
        &["ZMSCORE", "z", "a", "c", "d", "f", "nope"],
        &["ZINCRBY", "z", "0.1", "c"],
        &["ZADD", "z", "INCR", "0.7", "h"],
        &["ZRANDMEMBER", "one", "1", "WITHSCORES"],
        &[
            "ZUNION",
            "2",
            "z",
            "one",
            "WEIGHTS",
            "1",
            "0.5",
            "WITHSCORES",
        ],
        &["ZPOPMIN", "z"],
        &["ZSCAN", "z", "0"],
        &["ZSCAN", "big", "0", "MATCH", "m7", "COUNT", "1000"],
        &["GEODIST", "geo", "Palermo", "Catania"],
        &["GEOPOS", "geo", "Palermo"],
        &[
            "GEOSEARCH",
            "geo",
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "200",
            "km",
            "ASC",
            "WITHCOORD",
            "WITHDIST",
        ],
        &["INCRBYFLOAT", "f", "0.2"],
        &["HINCRBYFLOAT", "h", "f", "0.2"],
        &[
            "EVAL",
            "return redis.call('ZSCORE', KEYS[1], 'a')",
            "1",
            "z",
        ],
        &[
            "EVAL",
            "redis.call('SET', KEYS[1], 0.1, 'GET') return redis.call('GET', KEYS[1])",
            "1",
            "x",
        ],
        &[
            "EVAL",
            "redis.call('SET', KEYS[1], 1e17) return redis.call('GET', KEYS[1])",
            "1",
            "x",
        ],
        &[
            "EVAL",
            "redis.call('SET', KEYS[1], -0.0) return redis.call('GET', KEYS[1])",
            "1",
            "x",
        ],
        &[
            "EVAL",
            "redis.call('SET', KEYS[1], 1/3) return redis.call('GET', KEYS[1])",
            "1",
            "x",
        ],
        &["EVAL", "return {double = 0.1}", "0"],
        &[
            "EVAL",
            "redis.setresp(3) return redis.call('ZSCORE', KEYS[1], 'b')",
            "1",
            "z",
        ],
        &[
            "EVAL",
            "redis.setresp(3) return tostring(redis.call('ZSCORE', KEYS[1], 'b')['double'])",
            "1",
            "z",
        ],
        &["DUMP", "z"],
        &["DUMP", "one"],
    ];
    for compat in locksmith_server::Compat::ALL {
        let pair = support::Pair::start_for(compat).await;
        let mut twin = support::Twin::connect(&pair).await;
        for args in setup {
            twin.same(&[args], 1).await;
        }
        for args in both {
            twin.same(&[args], 1).await;
        }
        if compat == locksmith_server::Compat::Redis70 {
            // valkey-server 8.1.8 as shipped allocates with libc's malloc, whose sizes are not
            // jemalloc's that the estimate follows: compared with Redis only.
            twin.same(&[&["MEMORY", "USAGE", "z"]], 1).await;
        }
        // HELLO's reply names the server: read, not compared.
        twin.send(&[&["HELLO", "3"]]).await;
        twin.ours.frame().await;
        if let Some(real) = &mut twin.real {
            real.frame().await;
        }
        for args in both {
            twin.same(&[args], 1).await;
        }
        if compat == locksmith_server::Compat::Valkey81 {
            // The shortest form reached the wire (also without the reference to compare with).
            let score = twin.ours.call(&[&["ZSCORE", "z", "a"]], 1).await;
            assert_eq!(score, [b",0.1\r\n".to_vec()]);
        }
    }
}

/// `ZRANK`/`ZREVRANK ... WITHSCORE` (Redis 7.2) under `--compat valkey-8.1`, against
/// valkey-server 8.1.8 in RESP2 and RESP3 (the score in its shortest form); redis-7.0 refuses
/// the option by its arity, as redis-server 7.0.15 does.
#[tokio::test]
async fn zrank_withscore_answers_as_each_target_does() {
    let lines: &[&[&str]] = &[
        &["ZADD", "z", "0.1", "x", "20", "y", "1e17", "z"],
        &["SET", "s", "v"],
        &["ZRANK", "z", "x", "WITHSCORE"],
        &["ZREVRANK", "z", "x", "withscore"],
        &["ZRANK", "z", "z", "WITHSCORE"],
        &["ZRANK", "z", "nope", "WITHSCORE"],
        &["ZRANK", "nokey", "x", "WITHSCORE"],
        &["ZRANK", "nokey", "x"],
        &["ZRANK", "z", "x", "WITHSCORES"],
        &["ZRANK", "nokey", "x", "bad"],
        &["ZRANK", "z", "x", "WITHSCORE", "extra"],
        &["ZREVRANK", "z", "x", "a", "b", "c"],
        &["ZRANK", "s", "x", "WITHSCORE"],
        &["ZRANK", "s", "x"],
    ];
    for compat in locksmith_server::Compat::ALL {
        let pair = support::Pair::start_for(compat).await;
        let mut twin = support::Twin::connect(&pair).await;
        for args in lines {
            twin.same(&[args], 1).await;
        }
        twin.send(&[&["HELLO", "3"]]).await;
        twin.ours.frame().await;
        if let Some(real) = &mut twin.real {
            real.frame().await;
        }
        for args in &lines[2..] {
            twin.same(&[args], 1).await;
        }
    }
}
