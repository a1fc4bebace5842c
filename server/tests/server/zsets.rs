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
