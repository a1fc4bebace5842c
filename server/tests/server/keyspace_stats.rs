//! `INFO`'s `keyspace_hits` and `keyspace_misses`, and the `keymiss` keyspace event, command
//! by command, compared with real Redis: a read command's lookups count a hit or a miss (and a
//! miss raises `keymiss`), a write command's do not (Redis's `LOOKUP_WRITE`), except where
//! Redis's write commands read a source key (`SET .. GET`, `GETDEL`, `COPY`, the `*STORE`
//! commands, `XACK`) and its few quirks (`OBJECT` raises no `keymiss`, `SPOP` with a count of
//! the whole set counts a hit). Also the other `INFO stats` counters monitoring reads:
//! subscriptions, reads and writes processed, the sampled byte rates, and the fields' order.

use locksmith_server::Server;
use locksmith_testkit as support;
use std::time::Duration;
use support::{info, info_value, run, RealRedis, Wire};

type Con = redis::aio::MultiplexedConnection;

/// Commands over every type; `SLEEP` waits for the keys set with `PX 1` to expire.
const SCRIPT: &[&[&str]] = &[
    &["GET", "s"],
    &["SET", "s", "v"],
    &["GET", "s"],
    &["SET", "s", "v2"],
    &["SET", "s", "v3", "NX"],
    &["SET", "s", "v4", "XX"],
    &["SET", "n1", "v", "XX"],
    &["SET", "s", "v5", "GET"],
    &["SET", "n2", "v", "GET"],
    &["SET", "s", "v", "KEEPTTL"],
    &["SETNX", "s", "x"],
    &["SETNX", "n3", "x"],
    &["SETEX", "s", "100", "v"],
    &["GETSET", "s", "v"],
    &["GETSET", "n4", "v"],
    &["GETDEL", "n4"],
    &["GETDEL", "nx"],
    &["GETEX", "s", "PX", "100000"],
    &["GETEX", "nx"],
    &["APPEND", "s", "x"],
    &["APPEND", "n5", "x"],
    &["STRLEN", "s"],
    &["STRLEN", "nx"],
    &["SET", "i", "1"],
    &["INCR", "i"],
    &["INCR", "n6"],
    &["INCRBY", "i", "5"],
    &["DECR", "i"],
    &["DECRBY", "i", "2"],
    &["INCRBYFLOAT", "i", "1.5"],
    &["INCRBYFLOAT", "n7", "1.5"],
    &["MGET", "s", "nx", "i"],
    &["MSET", "a", "1", "b", "2"],
    &["MSETNX", "c", "1", "a", "2"],
    &["SETRANGE", "s", "2", "zz"],
    &["SETRANGE", "n8", "2", "zz"],
    &["GETRANGE", "s", "0", "2"],
    &["GETRANGE", "nx", "0", "2"],
    &["SUBSTR", "s", "0", "2"],
    &["LCS", "s", "a"],
    &["SETBIT", "bm", "7", "1"],
    &["SETBIT", "n9", "7", "1"],
    &["GETBIT", "bm", "7"],
    &["GETBIT", "nx", "7"],
    &["BITCOUNT", "bm"],
    &["BITCOUNT", "nx"],
    &["BITPOS", "bm", "1"],
    &["BITOP", "OR", "dest", "bm", "nx"],
    &["BITFIELD", "bm", "GET", "u8", "0"],
    &["BITFIELD", "bf", "SET", "u8", "0", "1"],
    &["BITFIELD_RO", "bm", "GET", "u8", "0"],
    &["BITFIELD_RO", "nx", "GET", "u8", "0"],
    &["PFADD", "hll", "a", "b"],
    &["PFADD", "hll2", "c"],
    &["PFCOUNT", "hll"],
    &["PFCOUNT", "hll", "hll2"],
    &["PFMERGE", "hll3", "hll", "hll2"],
    &["EXISTS", "s", "nx"],
    &["TYPE", "s"],
    &["TYPE", "nx"],
    &["TTL", "s"],
    &["TTL", "nx"],
    &["PTTL", "s"],
    &["EXPIRE", "s", "100"],
    &["EXPIRE", "nx", "100"],
    &["PEXPIRE", "s", "100000"],
    &["PERSIST", "s"],
    &["PERSIST", "nx"],
    &["EXPIRETIME", "s"],
    &["EXPIRETIME", "nx"],
    &["TOUCH", "s", "nx"],
    &["RENAME", "a", "a2"],
    &["RENAME", "nx", "x"],
    &["RENAMENX", "b", "b2"],
    &["COPY", "s", "s3"],
    &["COPY", "nx", "s4"],
    &["MOVE", "s3", "1"],
    &["DUMP", "s"],
    &["DUMP", "nx"],
    &["OBJECT", "ENCODING", "s"],
    &["OBJECT", "ENCODING", "nx"],
    &["OBJECT", "FREQ", "s"],
    &["DEL", "s3", "nx"],
    &["UNLINK", "a2", "nx"],
    &["HSET", "h", "f", "v"],
    &["HSET", "h", "f", "v2"],
    &["HSETNX", "h", "f", "v"],
    &["HSETNX", "h", "g", "v"],
    &["HGET", "h", "f"],
    &["HGET", "nx", "f"],
    &["HMGET", "h", "f", "x"],
    &["HGETALL", "h"],
    &["HGETALL", "nx"],
    &["HDEL", "h", "g"],
    &["HDEL", "nx", "g"],
    &["HLEN", "h"],
    &["HSTRLEN", "h", "f"],
    &["HEXISTS", "h", "f"],
    &["HEXISTS", "nx", "f"],
    &["HINCRBY", "h", "n", "1"],
    &["HINCRBY", "nh", "n", "1"],
    &["HINCRBYFLOAT", "h", "fl", "1.5"],
    &["HKEYS", "h"],
    &["HVALS", "h"],
    &["HRANDFIELD", "h"],
    &["HSCAN", "h", "0"],
    &["HSCAN", "nx", "0"],
    &["LPUSH", "l", "a", "b", "c"],
    &["RPUSH", "l", "d"],
    &["LPUSHX", "l", "x"],
    &["LPUSHX", "nx", "x"],
    &["RPUSHX", "nx", "x"],
    &["LPOP", "l"],
    &["LPOP", "nx"],
    &["RPOP", "l"],
    &["LLEN", "l"],
    &["LLEN", "nx"],
    &["LINDEX", "l", "0"],
    &["LRANGE", "l", "0", "-1"],
    &["LRANGE", "nx", "0", "-1"],
    &["LSET", "l", "0", "q"],
    &["LINSERT", "l", "BEFORE", "q", "r"],
    &["LINSERT", "nx", "BEFORE", "q", "r"],
    &["LREM", "l", "1", "r"],
    &["LTRIM", "l", "0", "5"],
    &["LPOS", "l", "q"],
    &["LMOVE", "l", "l2", "LEFT", "RIGHT"],
    &["LMOVE", "nx", "l2", "LEFT", "RIGHT"],
    &["RPOPLPUSH", "l2", "l"],
    &["LMPOP", "2", "nx", "l", "LEFT"],
    &["SADD", "st", "a", "b", "c"],
    &["SADD", "st", "a"],
    &["SREM", "st", "c"],
    &["SREM", "nx", "c"],
    &["SCARD", "st"],
    &["SISMEMBER", "st", "a"],
    &["SISMEMBER", "nx", "a"],
    &["SMISMEMBER", "st", "a", "z"],
    &["SMEMBERS", "st"],
    &["SMEMBERS", "nx"],
    &["SPOP", "st2"],
    &["SADD", "st2", "x", "y"],
    &["SPOP", "st2"],
    &["SRANDMEMBER", "st"],
    &["SMOVE", "st", "st3", "a"],
    &["SMOVE", "nx", "st3", "a"],
    &["SINTER", "st", "st3"],
    &["SINTERCARD", "2", "st", "st3"],
    &["SUNION", "st", "nx"],
    &["SDIFF", "st", "st3"],
    &["SINTERSTORE", "d1", "st", "st3"],
    &["SUNIONSTORE", "d2", "st", "nx"],
    &["SDIFFSTORE", "d3", "st", "st3"],
    &["SSCAN", "st", "0"],
    &["ZADD", "z", "1", "a", "2", "b"],
    &["ZADD", "z", "3", "a"],
    &["ZADD", "z", "NX", "5", "c"],
    &["ZINCRBY", "z", "1", "a"],
    &["ZINCRBY", "nz", "1", "a"],
    &["ZSCORE", "z", "a"],
    &["ZSCORE", "nx", "a"],
    &["ZMSCORE", "z", "a", "q"],
    &["ZRANK", "z", "a"],
    &["ZREVRANK", "z", "a"],
    &["ZRANGE", "z", "0", "-1"],
    &["ZRANGE", "nx", "0", "-1"],
    &["ZRANGEBYSCORE", "z", "0", "10"],
    &["ZCARD", "z"],
    &["ZCOUNT", "z", "0", "10"],
    &["ZLEXCOUNT", "z", "-", "+"],
    &["ZREM", "z", "c"],
    &["ZPOPMIN", "z"],
    &["ZPOPMIN", "nx"],
    &["ZRANDMEMBER", "z"],
    &["ZRANGESTORE", "z2", "z", "0", "-1"],
    &["ZUNIONSTORE", "z3", "2", "z", "nx"],
    &["ZINTER", "2", "z", "z2"],
    &["ZDIFF", "2", "z", "z2"],
    &["ZMPOP", "2", "nx", "z", "MIN"],
    &["ZSCAN", "z", "0"],
    &["XADD", "x", "*", "f", "v"],
    &["XADD", "x", "*", "f", "v"],
    &["XLEN", "x"],
    &["XLEN", "nx"],
    &["XRANGE", "x", "-", "+"],
    &["XRANGE", "nx", "-", "+"],
    &["XREVRANGE", "x", "+", "-"],
    &["XREAD", "COUNT", "1", "STREAMS", "x", "0"],
    &["XGROUP", "CREATE", "x", "g", "0"],
    &[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "COUNT",
        "1",
        "STREAMS",
        "x",
        ">",
    ],
    &["XPENDING", "x", "g"],
    &["XINFO", "STREAM", "x"],
    &["XTRIM", "x", "MAXLEN", "5"],
    &["XDEL", "x", "1-1"],
    &[
        "GEOADD", "geo", "13.36", "38.11", "p1", "15.08", "37.50", "p2",
    ],
    &["GEOPOS", "geo", "p1"],
    &["GEODIST", "geo", "p1", "p2"],
    &[
        "GEOSEARCH",
        "geo",
        "FROMLONLAT",
        "15",
        "37",
        "BYRADIUS",
        "200",
        "km",
    ],
    &[
        "GEOSEARCHSTORE",
        "geo2",
        "geo",
        "FROMLONLAT",
        "15",
        "37",
        "BYRADIUS",
        "200",
        "km",
    ],
    &["GEOHASH", "geo", "p1"],
    &["SORT", "l", "ALPHA"],
    &["SORT", "nx"],
    &["SORT_RO", "l", "ALPHA"],
    &["SORT", "l", "ALPHA", "STORE", "sorted"],
    &["EVAL", "return redis.call('GET', KEYS[1])", "1", "i"],
    &["EVAL", "return redis.call('GET', KEYS[1])", "1", "nx"],
    &["EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "i"],
    &["EVAL", "return redis.call('INCR', KEYS[1])", "1", "i"],
    &[
        "EVAL",
        "return redis.call('HSET', KEYS[1], 'f', 'v')",
        "1",
        "h",
    ],
    &["HSET", "h", "a", "1", "b", "2", "c", "3"],
    &["HRANDFIELD", "h", "2", "WITHVALUES"],
    &["HRANDFIELD", "nx", "2"],
    &["SADD", "s1", "a", "b", "c"],
    &["SADD", "s2", "b", "c", "d"],
    &["SRANDMEMBER", "s1", "2"],
    &["SRANDMEMBER", "nx", "2"],
    &["SINTERCARD", "2", "s1", "s2"],
    &["SINTERCARD", "2", "s1", "nx"],
    &["ZADD", "z1", "1", "a", "2", "b", "3", "c"],
    &["ZADD", "z2", "1", "b", "5", "d"],
    &["ZINTERCARD", "2", "z1", "z2"],
    &["ZUNION", "2", "z1", "nx"],
    &["ZINTERSTORE", "zi", "2", "z1", "z2"],
    &["ZDIFFSTORE", "zd", "2", "z1", "z2"],
    &["ZREVRANGEBYLEX", "z1", "+", "-"],
    &["ZRANGEBYLEX", "nx", "-", "+"],
    &["ZREVRANGE", "z1", "0", "-1"],
    &["ZPOPMAX", "z1"],
    &["ZREMRANGEBYRANK", "nx", "0", "1"],
    &["RPUSH", "l1", "a", "b", "c"],
    &["LINDEX", "l1", "1"],
    &["LINDEX", "nx", "1"],
    &["BLPOP", "l1", "0"],
    &["BRPOP", "nx", "l1", "0"],
    &["BLMOVE", "l1", "l2", "LEFT", "LEFT", "0"],
    &["BRPOPLPUSH", "l2", "l1", "0"],
    &["BZPOPMIN", "z2", "0"],
    &["BLMPOP", "0", "2", "nx", "l1", "LEFT"],
    &["BZMPOP", "0", "2", "nx", "z1", "MIN"],
    &["XADD", "xs", "*", "a", "1"],
    &["XADD", "xs", "*", "b", "2"],
    &["XGROUP", "CREATE", "xs", "g", "0"],
    &["XGROUP", "CREATECONSUMER", "xs", "g", "c2"],
    &[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "COUNT",
        "10",
        "STREAMS",
        "xs",
        ">",
    ],
    &[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "COUNT",
        "10",
        "STREAMS",
        "xs",
        "0",
    ],
    &["XREAD", "STREAMS", "xs", "nx", "0", "0"],
    &["XACK", "xs", "g", "0-1"],
    &["XCLAIM", "xs", "g", "c3", "0", "0-1"],
    &["XAUTOCLAIM", "xs", "g", "c3", "0", "0"],
    &["XINFO", "GROUPS", "xs"],
    &["XINFO", "CONSUMERS", "xs", "g"],
    &["XINFO", "STREAM", "nx"],
    &["XSETID", "xs", "9999999999999-0"],
    &["XGROUP", "DESTROY", "xs", "g"],
    &["XREVRANGE", "nx", "+", "-"],
    &[
        "GEOADD", "g1", "13.36", "38.11", "p1", "15.08", "37.50", "p2",
    ],
    &["GEORADIUS", "g1", "15", "37", "200", "km"],
    &["GEORADIUS", "g1", "15", "37", "200", "km", "STORE", "g2"],
    &["GEORADIUSBYMEMBER", "g1", "p1", "300", "km"],
    &["GEORADIUS_RO", "g1", "15", "37", "200", "km"],
    &[
        "GEOSEARCH",
        "nx",
        "FROMLONLAT",
        "15",
        "37",
        "BYRADIUS",
        "200",
        "km",
    ],
    &["GEODIST", "nx", "a", "b"],
    &["GEOPOS", "nx", "a"],
    &["RPUSH", "sl", "3", "1", "2"],
    &["SET", "w_1", "10"],
    &["SET", "w_2", "5"],
    &["SET", "w_3", "1"],
    &["HSET", "o_1", "f", "x"],
    &["SORT", "sl", "BY", "w_*", "GET", "#", "GET", "o_*->f"],
    &["SORT_RO", "sl", "BY", "w_*"],
    &["SORT", "sl", "BY", "nosort"],
    &["OBJECT", "IDLETIME", "sl"],
    &["OBJECT", "REFCOUNT", "sl"],
    &["OBJECT", "REFCOUNT", "nx"],
    &["MEMORY", "USAGE", "sl"],
    &["MEMORY", "USAGE", "nx"],
    &["SET", "e1", "v", "PX", "1"],
    &["SLEEP"],
    &["GET", "e1"],
    &["SET", "e2", "v", "PX", "1"],
    &["SLEEP"],
    &["SET", "e2", "v"],
    &["SET", "e3", "v", "PX", "1"],
    &["SLEEP"],
    &["INCR", "e3"],
    &["SET", "e4", "v", "PX", "1"],
    &["SLEEP"],
    &["EXISTS", "e4"],
    &["DEL", "sl", "nx"],
    &["UNLINK", "l1", "nx"],
    &["EXPIRE", "nx", "10"],
    &["RENAME", "w_1", "w_9"],
    &["RENAMENX", "w_2", "w_9"],
    &["EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "nx"],
    &["EVAL", "return redis.call('EXISTS', KEYS[1])", "1", "nx"],
    &[
        "EVAL",
        "return redis.call('LPUSH', KEYS[1], 'a')",
        "1",
        "nl",
    ],
    &["EVAL", "return redis.call('SMEMBERS', KEYS[1])", "1", "nx"],
    &["GETRANGE", "w_9", "0", "-1"],
    &["SETRANGE", "w_9", "0", "x"],
    &["LCS", "w_9", "nx"],
    &["MSETNX", "m1", "1", "m2", "2"],
    &["MSET", "m1", "2", "m3", "3"],
    &["HMSET", "hm", "a", "1"],
    &["HMGET", "nx", "a"],
    &["HVALS", "nx"],
    &["HINCRBYFLOAT", "nx2", "f", "1"],
    &["SMOVE", "s1", "s3", "a"],
    &["SREM", "s1", "b"],
    &["SPOP", "s1", "5"],
    &["SDIFF", "nx", "s2"],
    &["SISMEMBER", "s2", "b"],
    &["LPOS", "nx", "a"],
    &["LSET", "nx", "0", "a"],
    &["LTRIM", "nx", "0", "1"],
    &["LREM", "nx", "0", "a"],
    &["LINSERT", "l2", "AFTER", "a", "b"],
    &["PERSIST", "s2"],
    &["PEXPIREAT", "s2", "99999999999999"],
    &["EXPIREAT", "nx", "99999999999"],
    &["PEXPIRETIME", "s2"],
    &["TTL", "s2"],
    &["PTTL", "nx"],
    &["GETEX", "s2"],
    &["SETEX", "se", "100", "v"],
    &["PSETEX", "pse", "100000", "v"],
    &["GETDEL", "se"],
    &["INCRBY", "nx3", "1"],
    &["DECRBY", "nx4", "1"],
    &["APPEND", "nx5", "a"],
    &["STRLEN", "nx5"],
    &["BITPOS", "nx", "1"],
    &["BITCOUNT", "nx5", "0", "-1"],
    &["SETBIT", "nx6", "1", "1"],
    &["BITFIELD_RO", "nx6", "GET", "u4", "0"],
    &["BITFIELD", "nx7", "INCRBY", "u4", "0", "1"],
    &["BITFIELD", "nx6", "GET", "u4", "0", "SET", "u4", "0", "1"],
    &["PFADD", "pf1", "a"],
    &["PFCOUNT", "pf1", "nx"],
    &["TYPE", "pf1"],
    &["TOUCH", "pf1"],
];

/// INFO's keyspace hits and misses.
async fn hits_and_misses(con: &mut Con) -> (u64, u64) {
    let stats = info(con, "stats").await;
    let number = |name: &str| -> u64 { info_value(&stats, name).parse().unwrap() };
    (number("keyspace_hits"), number("keyspace_misses"))
}

/// The keys of the `keymiss` events a subscriber receives before the message `marker` on
/// channel `mark`.
async fn keymiss_until(sub: &mut Wire, marker: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for _ in 0..1000 {
        let frame = String::from_utf8_lossy(&sub.frame().await).into_owned();
        let parts: Vec<&str> = frame.split("\r\n").collect();
        // *4 $8 pmessage $pattern pattern $channel channel $data data
        match (parts.get(6), parts.get(8)) {
            (Some(&"mark"), Some(data)) if *data == marker => return keys,
            (Some(channel), Some(key)) if channel.ends_with(":keymiss") => {
                keys.push(key.to_string());
            }
            _ => panic!("unexpected frame {frame:?}"),
        }
    }
    panic!("no marker {marker} among 1000 frames");
}

/// What each command of [`SCRIPT`] added to the hits and misses, and the keys it raised
/// `keymiss` for.
async fn transcript(addr: std::net::SocketAddr, url: &str) -> Vec<String> {
    let mut con = support::patient_conn(url).await;
    run(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "Em"]).await;
    let mut sub = Wire::connect(addr).await;
    sub.call(&[&["PSUBSCRIBE", "__keyevent@0__:keymiss", "mark"]], 2)
        .await;
    let mut before = hits_and_misses(&mut con).await;
    let mut out = Vec::with_capacity(SCRIPT.len());
    for (i, args) in SCRIPT.iter().enumerate() {
        if args == &["SLEEP"] {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        // None of them blocks: every list and sorted set popped by a blocking command has
        // elements.
        tokio::time::timeout(Duration::from_secs(10), run(&mut con, args))
            .await
            .unwrap_or_else(|_| panic!("{args:?} did not answer"));
        let after = hits_and_misses(&mut con).await;
        let marker = i.to_string();
        run(&mut con, &["PUBLISH", "mark", &marker]).await;
        let keymiss = keymiss_until(&mut sub, &marker).await;
        out.push(format!(
            "{args:?}: +{} hits +{} misses, keymiss {keymiss:?}",
            after.0 - before.0,
            after.1 - before.1
        ));
        before = after;
    }
    out
}

#[tokio::test]
async fn keyspace_hits_misses_and_keymiss_count_per_command_as_redis() {
    let ours = Server::builder().start().await.unwrap();
    let got = transcript(ours.addr(), &ours.url()).await;
    // Our own server alone: reads count, writes do not.
    for (line, expected) in [
        (r#"["GET", "s"]: "#, "+0 hits +1 misses, keymiss [\"s\"]"),
        (r#"["SET", "s", "v"]: "#, "+0 hits +0 misses, keymiss []"),
        (r#"["INCR", "i"]: "#, "+0 hits +0 misses, keymiss []"),
        (
            r#"["HSET", "h", "f", "v2"]: "#,
            "+0 hits +0 misses, keymiss []",
        ),
        (
            r#"["SET", "n2", "v", "GET"]: "#,
            "+0 hits +1 misses, keymiss [\"n2\"]",
        ),
        (
            r#"["OBJECT", "ENCODING", "nx"]: "#,
            "+0 hits +1 misses, keymiss []",
        ),
        (
            r#"["MGET", "s", "nx", "i"]: "#,
            "+2 hits +1 misses, keymiss [\"nx\"]",
        ),
    ] {
        let found = got.iter().find(|l| l.starts_with(line));
        assert_eq!(
            found.map(|l| &l[line.len()..]),
            Some(expected),
            "{line} in {got:#?}"
        );
    }
    let Some(real) = RealRedis::start() else {
        return;
    };
    let want = transcript(real.addr(), &real.url()).await;
    for (ours, redis) in got.iter().zip(&want) {
        assert_eq!(ours, redis, "left: ours, right: redis");
    }
    assert_eq!(got.len(), want.len());
}

#[tokio::test]
async fn info_stats_counts_subscriptions_io_and_byte_rates_as_redis() {
    let ours = Server::builder().start().await.unwrap();
    let real = RealRedis::start();
    let mut names_by_server = Vec::new();
    for (addr, url) in
        std::iter::once((ours.addr(), ours.url())).chain(real.as_ref().map(|r| (r.addr(), r.url())))
    {
        let mut con = support::patient_conn(&url).await;
        let mut sub = Wire::connect(addr).await;
        sub.call(&[&["SUBSCRIBE", "a", "b"]], 2).await;
        sub.call(&[&["PSUBSCRIBE", "p*"]], 1).await;
        sub.call(&[&["SSUBSCRIBE", "s"]], 1).await;
        let before = info(&mut con, "stats").await;
        assert_eq!(info_value(&before, "pubsub_channels"), "2", "{url}");
        assert_eq!(info_value(&before, "pubsub_patterns"), "1", "{url}");
        assert_eq!(info_value(&before, "pubsubshard_channels"), "1", "{url}");
        assert_eq!(info_value(&before, "total_forks"), "0", "{url}");
        // Traffic until the sampled input rate shows it (Redis samples every 100 ms), at
        // most 200 rounds.
        let mut kbps = 0.0;
        for _ in 0..200 {
            let mut pipe = redis::pipe();
            for i in 0..100 {
                pipe.cmd("SET").arg(format!("k{i}")).arg("x".repeat(100));
            }
            let _: () = pipe.query_async(&mut con).await.unwrap();
            kbps = info_value(&info(&mut con, "stats").await, "instantaneous_input_kbps")
                .parse()
                .unwrap();
            if kbps > 0.0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(kbps > 0.0, "{url}: instantaneous_input_kbps stayed 0");
        let after = info(&mut con, "stats").await;
        for counter in ["total_reads_processed", "total_writes_processed"] {
            let (b, a): (u64, u64) = (
                info_value(&before, counter).parse().unwrap(),
                info_value(&after, counter).parse().unwrap(),
            );
            assert!(a > b, "{url}: {counter} {b} -> {a}");
        }
        sub.call(&[&["UNSUBSCRIBE", "a"]], 1).await;
        assert_eq!(
            info_value(&info(&mut con, "stats").await, "pubsub_channels"),
            "1",
            "{url}"
        );
        names_by_server.push(after.into_iter().map(|(k, _)| k).collect::<Vec<_>>());
    }
    // Every field we report, Redis reports, in the same order.
    if let [ours, redis] = &names_by_server[..] {
        let mut at = 0;
        for name in ours {
            match redis[at..].iter().position(|r| r == name) {
                Some(i) => at += i + 1,
                None => panic!(
                    "{name} is not in Redis's INFO stats after {:?}",
                    redis.get(at)
                ),
            }
        }
    }
}
