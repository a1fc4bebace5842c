//! String commands compared side by side with real Redis (when `redis-server` is on the PATH),
//! plus the redis crate's sync and typed async APIs against our server.

use locksmith_testkit as support;

use redis::AsyncCommands;

#[tokio::test]
async fn get_set_and_options_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["SET", "k", "v"],
        &["GET", "k"],
        &["GET", "missing"],
        &["SET", "k", "v2", "NX"],
        &["SET", "k", "v3", "XX", "GET"],
        &["SET", "new", "v", "XX"],
        &["SET", "new", "v", "XX", "GET"],
        &["SET", "new", "v", "NX", "GET"],
        &["SET", "new", "v2", "NX", "GET"],
        &["SET", "k", "v", "nx", "nx"],
        &["SET", "k", "v", "EX", "0"],
        &["SET", "k", "v", "EX", "-5"],
        &["SET", "k", "v", "PX", "0"],
        &["SET", "k", "v", "EXAT", "0"],
        &["SET", "k", "v", "EX", "abc"],
        &["SET", "k", "v", "EX", "abc", "NX", "XX"],
        &["SET", "k", "v", "EX", "9223372036854775807"],
        &["SET", "k", "v", "PX", "9223372036854775807"],
        &["SET", "k", "v", "EX"],
        &["SET", "k", "v", "NX", "XX"],
        &["SET", "k", "v", "KEEPTTL", "EX", "1"],
        &["SET", "k", "v", "EX", "1", "KEEPTTL"],
        &["SET", "k", "v", "EX", "1", "PX", "100"],
        &["SET", "k", "v", "PERSIST"],
        &["SET", "k", "v", "FOO"],
        &["SET", "k"],
        &["GET"],
        &["GET", "a", "b"],
        &["SET", "k", "v", "EX", "100", "EX", "200"],
        &["SET", "k", "v2", "KEEPTTL"],
        &["GET", "k"],
        &["SET", "k", "v3"],
        &["TTL", "k"],
        &["SET", "k", "v", "EXAT", "1"],
        &["GET", "k"],
        &["HSET", "h", "f", "v"],
        &["GET", "h"],
        &["SET", "h", "v", "GET"],
        &["SET", "h", "v", "NX", "GET"],
        &["SET", "h", "str"],
        &["GET", "h"],
    ])
    .await;
    pair.close(&["TTL", "k"], 1).await;
    pair.all_same(&[&["SET", "t", "v", "EX", "100"]]).await;
    pair.close(&["TTL", "t"], 1).await;
    pair.all_same(&[&["SET", "t", "v", "KEEPTTL", "GET"]]).await;
    pair.close(&["TTL", "t"], 1).await;
    pair.all_same(&[&["SET", "t", "v", "PX", "5000"]]).await;
    pair.close(&["PTTL", "t"], 50).await;
}

#[tokio::test]
async fn setnx_setex_getset_getdel_getex_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["SETNX", "k", "1"],
        &["SETNX", "k", "2"],
        &["GET", "k"],
        &["SETNX", "k"],
        &["SETEX", "e", "100", "v"],
        &["GET", "e"],
        &["SETEX", "e", "0", "v"],
        &["SETEX", "e", "-1", "v"],
        &["SETEX", "e", "x", "v"],
        &["SETEX", "e", "9223372036854775807", "v"],
        &["PSETEX", "e", "0", "v"],
        &["PSETEX", "e", "-10", "v"],
        &["PSETEX", "e", "9223372036854775807", "v"],
        &["PSETEX", "p", "100000", "v"],
        &["SETEX", "e", "100"],
        &["GETSET", "k", "new"],
        &["GETSET", "fresh", "v"],
        &["GET", "fresh"],
        &["GETSET", "k"],
        &["GETDEL", "k"],
        &["GETDEL", "k"],
        &["EXISTS", "k"],
        &["GETDEL", "k", "x"],
        &["HSET", "notstr", "a", "b"],
        &["GETSET", "notstr", "v"],
        &["GETDEL", "notstr"],
        &["SET", "x", "val", "EX", "100"],
        &["GETEX", "x"],
        &["GETEX", "x", "PERSIST"],
        &["TTL", "x"],
        &["GETEX", "x", "PERSIST"],
        &["GETEX", "x", "EX", "50"],
        &["GETEX", "x", "PX", "0"],
        &["GETEX", "x", "EX", "-1"],
        &["GETEX", "x", "EX", "abc"],
        &["GETEX", "x", "EX"],
        &["GETEX", "x", "PERSIST", "EX", "10"],
        &["GETEX", "x", "EX", "10", "PERSIST"],
        &["GETEX", "x", "KEEPTTL"],
        &["GETEX", "x", "NX"],
        &["GETEX", "x", "FOO"],
        &["GETEX", "missing", "EX", "10"],
        &["GETEX", "missing", "EX", "abc"],
        &["GETEX", "missing", "FOO"],
        &["GETEX", "x", "EXAT", "1"],
        &["EXISTS", "x"],
        &["SET", "x", "v"],
        &["GETEX", "x", "PXAT", "1"],
        &["EXISTS", "x"],
        &["GETEX"],
    ])
    .await;
    pair.close(&["TTL", "e"], 1).await;
    pair.close(&["PTTL", "p"], 50).await;
    pair.all_same(&[&["SET", "y", "v"], &["GETEX", "y", "EX", "100"]])
        .await;
    pair.close(&["TTL", "y"], 1).await;
    pair.all_same(&[&["GETEX", "y", "PXAT", "99999999999999"]])
        .await;
    pair.close(&["PEXPIRETIME", "y"], 0).await;
}

#[tokio::test]
async fn mget_mset_msetnx_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["MSET", "a", "1", "b", "2"],
        &["MGET", "a", "b", "c"],
        &["MSET", "a"],
        &["MSET", "a", "1", "b"],
        &["MSET"],
        &["HSET", "h", "f", "v"],
        &["MGET", "a", "h", "b"],
        &["MSETNX", "a", "9", "z", "9"],
        &["MGET", "a", "z"],
        &["MSETNX", "y", "1", "z", "2"],
        &["MGET", "y", "z"],
        &["MSETNX", "y"],
        &["MSETNX", "q", "1", "q", "2"],
        &["GET", "q"],
        &["SET", "t", "v", "EX", "100"],
        &["MSET", "t", "w"],
        &["TTL", "t"],
        &["MGET"],
    ])
    .await;
}

#[tokio::test]
async fn counters_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["INCR", "n"],
        &["INCR", "n"],
        &["DECR", "n"],
        &["INCRBY", "n", "10"],
        &["DECRBY", "n", "3"],
        &["INCRBY", "n", "-20"],
        &["GET", "n"],
        &["INCRBY", "n", "abc"],
        &["INCRBY", "n", "1.5"],
        &["DECRBY", "n", "-9223372036854775808"],
        &["DECRBY", "n", "9223372036854775808"],
        &["SET", "big", "9223372036854775807"],
        &["INCR", "big"],
        &["INCRBY", "big", "0"],
        &["SET", "small", "-9223372036854775808"],
        &["DECR", "small"],
        &["INCRBY", "small", "9223372036854775807"],
        &["SET", "s", "abc"],
        &["INCR", "s"],
        &["SET", "s", " 1"],
        &["INCR", "s"],
        &["SET", "s", "01"],
        &["INCR", "s"],
        &["SET", "s", "1 "],
        &["INCR", "s"],
        &["SET", "s", ""],
        &["INCR", "s"],
        &["HSET", "h", "f", "1"],
        &["INCR", "h"],
        &["INCRBY", "h", "x"],
        &["DECRBY", "h", "1"],
        &["INCR"],
        &["INCR", "a", "b"],
        &["SET", "t", "5", "EX", "100"],
        &["INCR", "t"],
        &["OBJECT", "ENCODING", "t"],
    ])
    .await;
    pair.close(&["TTL", "t"], 1).await;
}

#[tokio::test]
async fn incrbyfloat_matches_redis_long_double_formatting() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["SET", "f", "10.5"],
        &["INCRBYFLOAT", "f", "0.1"],
        &["INCRBYFLOAT", "f", "-5.0e3"],
        &["INCRBYFLOAT", "g", "3.0e3"],
        &["INCRBYFLOAT", "g", "2.0e2"],
        &["INCRBYFLOAT", "h", "0.1"],
        &["INCRBYFLOAT", "h", "0.2"],
        &["INCRBYFLOAT", "h", "-0.3"],
        &["INCRBYFLOAT", "i", "1e300"],
        &["INCRBYFLOAT", "i", "1e300"],
        &["INCRBYFLOAT", "j", "1.23456789012345678901234"],
        &["INCRBYFLOAT", "k", "-0.000000000000000001"],
        &["INCRBYFLOAT", "l", "0x10"],
        &["INCRBYFLOAT", "l", "5"],
        &["INCRBYFLOAT", "l", ".5"],
        &["INCRBYFLOAT", "l", "5."],
        &["INCRBYFLOAT", "l", "+1"],
        &["INCRBYFLOAT", "l", "1e-5"],
        &["INCRBYFLOAT", "m", "1"],
        &["INCRBYFLOAT", "m", "inf"],
        &["INCRBYFLOAT", "m", "-inf"],
        &["INCRBYFLOAT", "m", "nan"],
        &["INCRBYFLOAT", "m", "abc"],
        &["INCRBYFLOAT", "m", " 1"],
        &["INCRBYFLOAT", "m", "1 "],
        &["INCRBYFLOAT", "m", ""],
        &["INCRBYFLOAT", "m", "1e"],
        &["INCRBYFLOAT", "m", "1e99999"],
        &["SET", "s", "abc"],
        &["INCRBYFLOAT", "s", "1"],
        &["SET", "n", "7"],
        &["INCRBYFLOAT", "n", "1.5"],
        &["INCRBYFLOAT", "n", "-8.5"],
        &["SET", "e", "1e3"],
        &["INCRBYFLOAT", "e", "1"],
        &["HSET", "list", "a", "b"],
        &["INCRBYFLOAT", "list", "1"],
        &["INCRBYFLOAT", "list", "abc"],
        &["SET", "big", "1e4000"],
        &["INCRBYFLOAT", "big", "1e4000"],
        &["INCRBYFLOAT", "x"],
    ])
    .await;
}

#[tokio::test]
async fn append_strlen_ranges_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["APPEND", "s", "Hello"],
        &["APPEND", "s", " World"],
        &["GET", "s"],
        &["STRLEN", "s"],
        &["STRLEN", "missing"],
        &["GETRANGE", "s", "0", "4"],
        &["GETRANGE", "s", "-5", "-1"],
        &["GETRANGE", "s", "-1", "-5"],
        &["GETRANGE", "s", "0", "-1"],
        &["GETRANGE", "s", "5", "3"],
        &["GETRANGE", "s", "-100", "100"],
        &["GETRANGE", "s", "100", "200"],
        &[
            "GETRANGE",
            "s",
            "-9223372036854775808",
            "9223372036854775807",
        ],
        &["GETRANGE", "s", "0", "x"],
        &["GETRANGE", "missing", "0", "-1"],
        &["SUBSTR", "s", "1", "3"],
        &["SET", "n", "12345"],
        &["GETRANGE", "n", "1", "2"],
        &["APPEND", "n", "6"],
        &["GET", "n"],
        &["SETRANGE", "s", "6", "Redis"],
        &["GET", "s"],
        &["SETRANGE", "s", "20", "!"],
        &["GET", "s"],
        &["SETRANGE", "s", "0", ""],
        &["SETRANGE", "new", "3", "abc"],
        &["GET", "new"],
        &["SETRANGE", "none", "5", ""],
        &["EXISTS", "none"],
        &["SETRANGE", "s", "-1", "x"],
        &["SETRANGE", "s", "x", "x"],
        &["SETRANGE", "s", "536870911", "xx"],
        &["SETRANGE", "s", "9223372036854775807", "xx"],
        &["SETRANGE", "none", "536870912", "x"],
        &["SETRANGE", "none", "536870912", ""],
        &["HSET", "h", "f", "v"],
        &["APPEND", "h", "x"],
        &["STRLEN", "h"],
        &["GETRANGE", "h", "0", "1"],
        &["SETRANGE", "h", "0", "x"],
        &["SETRANGE", "h", "0", ""],
        &["SET", "t", "abc", "EX", "100"],
        &["APPEND", "t", "def"],
        &["SETRANGE", "t", "0", "X"],
        &["GET", "t"],
        &["APPEND", "t"],
    ])
    .await;
    pair.close(&["TTL", "t"], 1).await;
}

#[tokio::test]
async fn sync_redis_crate_api_works() {
    let server = support::start().await;
    let url = server.url();
    let out = tokio::task::spawn_blocking(move || {
        let client = redis::Client::open(url).unwrap();
        let mut con = client.get_connection().unwrap();
        let _: () = redis::cmd("SET").arg("a").arg("1").query(&mut con).unwrap();
        let n: i64 = redis::cmd("INCRBY")
            .arg("a")
            .arg(41)
            .query(&mut con)
            .unwrap();
        let v: String = redis::cmd("GET").arg("a").query(&mut con).unwrap();
        let f: f64 = redis::cmd("INCRBYFLOAT")
            .arg("a")
            .arg(0.5)
            .query(&mut con)
            .unwrap();
        let m: Vec<Option<String>> = redis::cmd("MGET")
            .arg("a")
            .arg("nope")
            .query(&mut con)
            .unwrap();
        (n, v, f, m)
    })
    .await
    .unwrap();
    assert_eq!(
        out,
        (
            42,
            "42".to_string(),
            42.5,
            vec![Some("42.5".to_string()), None]
        )
    );
    server.shutdown().await;
}

#[tokio::test]
async fn typed_async_api_works() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    let _: () = con.set("k", "v").await.unwrap();
    let v: String = con.get("k").await.unwrap();
    assert_eq!(v, "v");
    let n: i64 = con.incr("n", 5).await.unwrap();
    assert_eq!(n, 5);
    let n: i64 = con.decr("n", 2).await.unwrap();
    assert_eq!(n, 3);
    let _: () = con.set_ex("e", "v", 100).await.unwrap();
    let ttl: i64 = con.ttl("e").await.unwrap();
    assert!((99..=100).contains(&ttl));
    let len: i64 = con.append("k", "w").await.unwrap();
    assert_eq!(len, 2);
    let old: Option<String> = con.getset("k", "z").await.unwrap();
    assert_eq!(old.as_deref(), Some("vw"));
    let gone: Option<String> = con.get_del("k").await.unwrap();
    assert_eq!(gone.as_deref(), Some("z"));
    let missing: Option<String> = con.get("k").await.unwrap();
    assert_eq!(missing, None);
    let err = con.incr::<_, _, i64>("e", 1).await.unwrap_err();
    assert_eq!(
        support::error_text(&err),
        "ERR value is not an integer or out of range"
    );
    server.shutdown().await;
}

// APPEND and SETRANGE check the live proto-max-bulk-len: CONFIG SET lowers the limit for them
// as it does for the protocol.
#[tokio::test]
async fn append_and_setrange_follow_config_set_proto_max_bulk_len() {
    let mut pair = support::Pair::start().await;
    pair.same(&["CONFIG", "SET", "proto-max-bulk-len", "1048576"])
        .await;
    pair.same(&["SETRANGE", "k", "1048575", "x"]).await;
    let refused = pair.same(&["SETRANGE", "k", "1048576", "x"]).await;
    assert_eq!(
        refused,
        "ERROR ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    );
    let appended = pair.same(&["APPEND", "k", "y"]).await;
    assert!(
        appended.starts_with("ERROR ERR string exceeds"),
        "{appended}"
    );
    pair.same(&["STRLEN", "k"]).await;
}

#[tokio::test]
async fn setbit_getbit_and_zintercard_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["SETBIT", "bits", "1", "1"],
        &["GET", "bits"],
        &["SETBIT", "bits", "1", "1"],
        &["SETBIT", "bits", "100", "1"],
        &["STRLEN", "bits"],
        &["GETBIT", "bits", "100"],
        &["GETBIT", "bits", "101"],
        &["GETBIT", "bits", "100000"],
        &["GETBIT", "missing", "0"],
        &["SETBIT", "bits", "100", "0"],
        &["GETBIT", "bits", "100"],
        &["SET", "str", "`"],
        &["SETBIT", "str", "1", "0"],
        &["SETBIT", "str", "2", "1"],
        &["GET", "str"],
        &["SET", "int", "1"],
        &["SETBIT", "int", "6", "1"],
        &["GET", "int"],
        &["SETBIT", "bits", "4294967296", "1"],
        &["SETBIT", "bits", "-1", "1"],
        &["SETBIT", "bits", "x", "1"],
        &["SETBIT", "bits", "0", "2"],
        &["SETBIT", "bits", "0", "-1"],
        &["SETBIT", "bits", "0", "x"],
        &["GETBIT", "bits", "4294967296"],
        &["LPUSH", "list", "a"],
        &["SETBIT", "list", "0", "1"],
        &["GETBIT", "list", "0"],
        &["ZADD", "za", "1", "a", "2", "b", "3", "c"],
        &["ZADD", "zb", "1", "b", "2", "c", "3", "d"],
        &["SADD", "sc", "c", "d"],
        &["ZINTERCARD", "2", "za", "zb"],
        &["ZINTERCARD", "3", "za", "zb", "sc"],
        &["ZINTERCARD", "2", "za", "zb", "LIMIT", "1"],
        &["ZINTERCARD", "2", "za", "zb", "LIMIT", "0"],
        &["ZINTERCARD", "1", "missing"],
        &["ZINTERCARD", "0", "za"],
        &["ZINTERCARD", "2", "za"],
        &["ZINTERCARD", "1", "za", "za"],
        &["ZINTERCARD", "1", "za", "LIMIT"],
        &["ZINTERCARD", "1", "za", "LIMIT", "-1"],
        &["ZINTERCARD", "1", "za", "LIMIT", "a"],
        &["ZINTERCARD", "1", "za", "WEIGHTS", "1"],
        &["ZINTERCARD", "1", "list"],
    ])
    .await;
}

#[tokio::test]
async fn lcs_matches_redis() {
    let mut pair = support::Pair::start().await;
    let a = "ohmytext-GTCTGGACAGTCTTAGCCATCGCGAAGCGGTCTAGTTCTA";
    let b = "mynewtext-TTAGCCGTACCGTAAATCGCGACCCGTTACTATCGTACA";
    pair.all_same(&[
        &["SET", "a{t}", a],
        &["SET", "b{t}", b],
        &["LCS", "a{t}", "b{t}"],
        &["LCS", "a{t}", "b{t}", "LEN"],
        &["LCS", "a{t}", "b{t}", "IDX"],
        &["LCS", "a{t}", "b{t}", "IDX", "WITHMATCHLEN"],
        &[
            "LCS",
            "a{t}",
            "b{t}",
            "IDX",
            "WITHMATCHLEN",
            "MINMATCHLEN",
            "5",
        ],
        &["LCS", "a{t}", "b{t}", "IDX", "MINMATCHLEN", "-3"],
        &["LCS", "a{t}", "missing{t}"],
        &["LCS", "missing{t}", "missing2{t}", "IDX"],
        &["LCS", "a{t}", "b{t}", "LEN", "IDX"],
        &["LCS", "a{t}", "b{t}", "MINMATCHLEN"],
        &["LCS", "a{t}", "b{t}", "MINMATCHLEN", "x"],
        &["LCS", "a{t}", "b{t}", "BOGUS"],
        &["LPUSH", "l{t}", "x"],
        &["LCS", "a{t}", "l{t}"],
    ])
    .await;
    // RESP3: the IDX reply is a map.
    let mut resp3 = support::Resp3Pair::start().await;
    resp3
        .all_same(&[
            &["SET", "a{t}", a],
            &["SET", "b{t}", b],
            &["LCS", "a{t}", "b{t}", "IDX", "WITHMATCHLEN"],
        ])
        .await;
}

/// BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO: ranges in bytes and bits, every
/// overflow mode, `#` offsets and the error texts, row by row against Redis.
#[tokio::test]
async fn bitmap_commands_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["set", "s", "foobar"],
        &["set", "e", ""],
        &["bitcount", "s"],
        &["bitcount", "s", "0", "0"],
        &["bitcount", "s", "1", "1"],
        &["bitcount", "s", "1", "-1"],
        &["bitcount", "s", "-3", "-1"],
        &["bitcount", "s", "-1", "-3"],
        &["bitcount", "s", "5", "30", "bit"],
        &["bitcount", "s", "0", "-1", "bit"],
        &["bitcount", "s", "-9", "-1", "bit"],
        &["bitcount", "s", "0", "100"],
        &["bitcount", "s", "0", "1", "bogus"],
        &["bitcount", "s", "0"],
        &["bitcount", "s", "x", "1"],
        &["bitcount", "nokey"],
        &["bitcount", "e"],
        &["bitcount", "s", "0", "1", "byte"],
        &["bitpos", "s", "1"],
        &["bitpos", "s", "0"],
        &["bitpos", "s", "2"],
        &["bitpos", "s", "x"],
        &["bitpos", "nokey", "1"],
        &["bitpos", "nokey", "0"],
        &["bitpos", "e", "0"],
        &["bitpos", "e", "1"],
        &["bitpos", "s", "1", "2"],
        &["bitpos", "s", "0", "2", "-1"],
        &["bitpos", "s", "1", "7", "15", "bit"],
        &["bitpos", "s", "0", "7", "15", "bit"],
        &["bitpos", "s", "0", "3", "3", "bit"],
        &["bitpos", "s", "1", "-3"],
        &["bitpos", "s", "1", "0", "-1", "bogus"],
        &["bitpos", "s", "1", "0", "-1", "bit", "extra"],
        &["set", "ff", "\\xff\\xff\\xff"],
        &["bitpos", "ff", "0"],
        &["bitpos", "ff", "0", "0"],
        &["bitpos", "ff", "0", "0", "-1"],
        &["bitpos", "ff", "0", "0", "-1", "bit"],
        &["bitpos", "ff", "1", "5", "12", "bit"],
        &["bitpos", "ff", "0", "5", "12", "bit"],
        &["set", "zz", "\\x00\\x00"],
        &["bitpos", "zz", "1"],
        &["bitpos", "zz", "1", "0", "-1", "bit"],
        &["bitpos", "zz", "0", "9", "bit"],
        &["bitop", "and", "d", "s", "ff"],
        &["get", "d"],
        &["bitop", "or", "d", "s", "zz", "nokey"],
        &["get", "d"],
        &["bitop", "xor", "d", "s", "s"],
        &["get", "d"],
        &["bitop", "not", "d", "s"],
        &["get", "d"],
        &["bitop", "not", "d", "s", "ff"],
        &["bitop", "bogus", "d", "s"],
        &["bitop", "and", "d", "nokey", "nokey2"],
        &["exists", "d"],
        &["lpush", "l", "a"],
        &["bitop", "and", "d", "s", "l"],
        &["bitcount", "l"],
        &["bitpos", "l", "1"],
        &["bitfield", "bf", "set", "u8", "0", "255", "get", "u8", "0"],
        &[
            "bitfield", "bf", "incrby", "u8", "0", "10", "get", "u8", "0",
        ],
        &[
            "bitfield", "bf", "overflow", "sat", "incrby", "u8", "0", "300",
        ],
        &[
            "bitfield", "bf", "overflow", "fail", "incrby", "u8", "0", "1",
        ],
        &[
            "bitfield", "bf", "overflow", "wrap", "incrby", "i8", "0", "1",
        ],
        &[
            "bitfield", "bf", "set", "i8", "#1", "-100", "get", "i8", "#1", "incrby", "i8", "#1",
            "-100",
        ],
        &[
            "bitfield", "bf", "overflow", "sat", "incrby", "i8", "#1", "-100",
        ],
        &[
            "bitfield", "bf", "set", "i64", "0", "-1", "get", "i64", "0", "incrby", "i64", "0", "1",
        ],
        &[
            "bitfield",
            "bf",
            "overflow",
            "sat",
            "incrby",
            "i64",
            "0",
            "9223372036854775807",
            "incrby",
            "i64",
            "0",
            "9223372036854775807",
        ],
        &[
            "bitfield", "bf", "get", "u63", "0", "get", "i1", "3", "get", "u1", "3", "get", "i5",
            "100",
        ],
        &["bitfield", "bf", "get", "u64", "0"],
        &["bitfield", "bf", "get", "i65", "0"],
        &["bitfield", "bf", "get", "x8", "0"],
        &["bitfield", "bf", "get", "u8", "-1"],
        &["bitfield", "bf", "get", "u8", "#-1"],
        &["bitfield", "bf", "get", "u8", "x"],
        &["bitfield", "bf", "set", "u8", "0", "x"],
        &["bitfield", "bf", "overflow", "bogus", "get", "u8", "0"],
        &["bitfield", "bf", "bogus"],
        &["bitfield", "bf", "get", "u8"],
        &["bitfield", "nokey", "get", "u8", "0"],
        &["bitfield", "l", "get", "u8", "0"],
        &["bitfield", "l", "set", "u8", "0", "1"],
        &["bitfield_ro", "bf", "get", "u8", "0", "get", "i4", "4"],
        &["bitfield_ro", "bf", "set", "u8", "0", "1"],
        &["bitfield_ro", "nokey", "get", "u8", "0"],
        &["bitfield", "bf"],
        &["bitfield_ro", "bf"],
        &["get", "bf"],
        &["strlen", "bf"],
        &[
            "bitfield", "newbf", "overflow", "fail", "incrby", "u2", "10", "5",
        ],
        &["exists", "newbf"],
        &["get", "newbf"],
        &[
            "bitfield", "bf", "set", "u4", "4", "300", "overflow", "sat", "set", "u4", "4", "300",
            "get", "u4", "4",
        ],
        &[
            "bitfield", "bf", "overflow", "wrap", "set", "i4", "0", "100", "overflow", "sat",
            "set", "i4", "0", "100", "set", "i4", "0", "-100", "get", "i4", "0",
        ],
        &["bitfield", "bf", "set", "u8", "4294967288", "1"],
    ])
    .await;
}

// The same commands on random binary strings, ranges and fields (a fixed seed, bounded).
#[tokio::test]
async fn bitmap_commands_on_random_data_match_redis() {
    use rand::{Rng, SeedableRng};
    let mut pair = support::Pair::start().await;
    let Some(real_con) = pair.real_con.as_mut() else {
        return;
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for _ in 0..150 {
        let len = rng.random_range(0..6);
        let value: Vec<u8> = (0..len).map(|_| rng.random::<u8>()).collect();
        let (a, b) = (rng.random_range(-12..12i64), rng.random_range(-50..50i64));
        let signed = rng.random_bool(0.5);
        let bits = if signed {
            rng.random_range(1..=64)
        } else {
            rng.random_range(1..=63)
        };
        let ty = format!("{}{bits}", if signed { "i" } else { "u" });
        let mode = ["wrap", "sat", "fail"][rng.random_range(0..3)];
        let incr = if rng.random_bool(0.5) {
            rng.random::<i64>()
        } else {
            rng.random_range(-300..300)
        };
        let off = rng.random_range(0..40u32).to_string();
        let commands: Vec<Vec<Vec<u8>>> = vec![
            vec![b"SET".to_vec(), b"k".to_vec(), value.clone()],
            vec![
                b"BITCOUNT".to_vec(),
                b"k".to_vec(),
                a.to_string().into(),
                b.to_string().into(),
                b"BIT".to_vec(),
            ],
            vec![
                b"BITPOS".to_vec(),
                b"k".to_vec(),
                b"0".to_vec(),
                a.to_string().into(),
                b.to_string().into(),
            ],
            vec![
                b"BITPOS".to_vec(),
                b"k".to_vec(),
                b"1".to_vec(),
                b.to_string().into(),
                a.to_string().into(),
                b"BIT".to_vec(),
            ],
            vec![
                b"BITOP".to_vec(),
                b"XOR".to_vec(),
                b"d".to_vec(),
                b"k".to_vec(),
                b"d".to_vec(),
            ],
            vec![b"GET".to_vec(), b"d".to_vec()],
            vec![
                b"BITFIELD".to_vec(),
                b"k".to_vec(),
                b"OVERFLOW".to_vec(),
                mode.into(),
                b"INCRBY".to_vec(),
                ty.clone().into(),
                off.clone().into(),
                incr.to_string().into(),
            ],
            vec![b"GET".to_vec(), b"k".to_vec()],
        ];
        for args in commands {
            let mut cmd = redis::cmd(std::str::from_utf8(&args[0]).unwrap());
            for arg in &args[1..] {
                cmd.arg(&arg[..]);
            }
            let ours: redis::RedisResult<redis::Value> = cmd.query_async(&mut pair.ours_con).await;
            let theirs: redis::RedisResult<redis::Value> = cmd.query_async(real_con).await;
            assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{args:?}");
        }
    }
}

/// PFADD, PFCOUNT and PFMERGE: the HLL strings themselves (GET) are Redis's byte for byte, in
/// the sparse and the dense form, with the cached cardinality; errors for other values.
#[tokio::test]
async fn hyperloglog_matches_redis_byte_for_byte() {
    use rand::{Rng, SeedableRng};
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["pfadd", "h", "a", "b", "c"],
        &["pfadd", "h", "a"],
        &["pfadd", "h"],
        &["pfadd", "new"],
        &["get", "new"],
        &["get", "h"],
        &["pfcount", "h"],
        &["get", "h"],
        &["pfcount", "h", "nokey"],
        &["pfcount", "nokey"],
        &["pfadd", "h2", "c", "d", "e", "f", "g"],
        &["pfcount", "h", "h2"],
        &["pfmerge", "m", "h", "h2"],
        &["pfcount", "m"],
        &["get", "m"],
        &["pfmerge", "m2"],
        &["get", "m2"],
        &["pfmerge", "m3", "nokey"],
        &["set", "s", "notanhll"],
        &["pfadd", "s", "a"],
        &["pfcount", "s"],
        &["pfmerge", "m", "s"],
        &["pfcount", "h", "s"],
        &["lpush", "l", "a"],
        &["pfadd", "l", "a"],
        &["pfcount", "l"],
        &["pfmerge", "l", "h"],
        &["set", "fake", "HYLLxxxxxxxxxxxxx"],
        &["pfcount", "fake"],
        &["pfadd", "fake", "a"],
    ])
    .await;
    let Some(real_con) = pair.real_con.as_mut() else {
        return;
    };
    // Random binary elements of every length (MurmurHash64A's tail), across the sparse to
    // dense promotion at several hll-sparse-max-bytes.
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    for round in 0..40 {
        let key = format!("k{}", round % 5);
        let mut commands: Vec<redis::Cmd> = Vec::new();
        if round % 10 == 0 {
            let max = ["100", "500", "3000"][rng.random_range(0..3)];
            commands.push(support::cmd(&[
                "CONFIG",
                "SET",
                "hll-sparse-max-bytes",
                max,
            ]));
        }
        let mut add = redis::cmd("PFADD");
        add.arg(&key);
        for _ in 0..rng.random_range(1..200) {
            let len = rng.random_range(0..20);
            let e: Vec<u8> = (0..len).map(|_| rng.random::<u8>()).collect();
            add.arg(e);
        }
        commands.push(add);
        commands.push(support::cmd(&["PFCOUNT", &key]));
        commands.push(support::cmd(&["GET", &key]));
        commands.push(support::cmd(&["PFMERGE", "dst", "k0", &key]));
        commands.push(support::cmd(&["GET", "dst"]));
        commands.push(support::cmd(&["PFCOUNT", "k0", "k1", "k2", "k3", "k4"]));
        for cmd in commands {
            let ours: redis::RedisResult<redis::Value> = cmd.query_async(&mut pair.ours_con).await;
            let theirs: redis::RedisResult<redis::Value> = cmd.query_async(real_con).await;
            assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "round {round}");
        }
    }
    let _: redis::RedisResult<()> =
        support::cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "3000"])
            .query_async(real_con)
            .await;
}

/// PFDEBUG (registers, sparse opcodes, encoding, conversion to dense, errors) and PFSELFTEST
/// answer as Redis's; GETREG and TODENSE leave the key dense, as Redis does.
#[tokio::test]
async fn pfdebug_and_pfselftest_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["pfadd", "h", "a", "b", "c", "d", "e", "f", "g"],
        &["pfdebug", "decode", "h"],
        &["pfdebug", "encoding", "h"],
        &["pfdebug", "getreg", "h"],
        &["pfdebug", "encoding", "h"],
        &["get", "h"],
        &["pfdebug", "decode", "h"],
        &["pfdebug", "todense", "h"],
        &["pfadd", "h2", "x"],
        &["pfdebug", "todense", "h2"],
        &["pfdebug", "encoding", "h2"],
        &["pfcount", "h2"],
        &["pfdebug", "todense", "nokey"],
        &["pfdebug", "nosuch", "h"],
        &["set", "s", "notanhll"],
        &["pfdebug", "getreg", "s"],
        &["pfdebug", "getreg"],
        &["pfdebug", "getreg", "h", "extra"],
        &["pfselftest"],
        &["pfselftest", "extra"],
    ])
    .await;
}

/// SETBIT writing the value a bit already has is no write (a WATCH survives it), as in Redis;
/// one that creates, grows or flips is.
#[tokio::test]
async fn setbit_that_changes_nothing_is_not_a_write() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["setbit", "b", "3", "0"],
        &["watch", "b"],
        &["setbit", "b", "3", "0"],
        &["multi"],
        &["ping"],
        &["exec"],
        &["watch", "b"],
        &["setbit", "b", "3", "1"],
        &["multi"],
        &["ping"],
        &["exec"],
        &["watch", "b"],
        &["setbit", "b", "100", "0"],
        &["multi"],
        &["ping"],
        &["exec"],
        &[
            "command", "getkeys", "sort", "abc", "store", "x", "store", "y", "store", "def",
        ],
        &[
            "command", "getkeys", "sort", "abc", "store", "def", "limit", "0", "1",
        ],
    ])
    .await;
}
