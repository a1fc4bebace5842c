//! Generic key commands compared side by side with real Redis, plus SCAN's cursor guarantee
//! under churn and OBJECT IDLETIME under paused time.

use locksmith_testkit as support;

use redis::AsyncCommands;
use std::collections::BTreeSet;
use std::time::Duration;

/// Runs `args` on both servers and compares the replies as sorted string lists (for KEYS and
/// other unordered replies).
async fn same_sorted(pair: &mut support::Pair, args: &[&str]) -> Vec<String> {
    let mut ours: Vec<String> = support::cmd(args)
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    ours.sort();
    if let Some(real_con) = &mut pair.real_con {
        let mut real: Vec<String> = support::cmd(args).query_async(real_con).await.unwrap();
        real.sort();
        assert_eq!(ours, real, "{args:?} (left: ours, right: redis)");
    }
    ours
}

/// Every key a full SCAN iteration with `extra` options returns, on one connection.
async fn scan_all(con: &mut redis::aio::MultiplexedConnection, extra: &[&str]) -> BTreeSet<String> {
    let mut cursor = "0".to_string();
    let mut seen = BTreeSet::new();
    loop {
        let mut c = redis::cmd("SCAN");
        c.arg(&cursor);
        for e in extra {
            c.arg(*e);
        }
        let (next, keys): (String, Vec<String>) = c.query_async(con).await.unwrap();
        seen.extend(keys);
        if next == "0" {
            return seen;
        }
        cursor = next;
    }
}

#[tokio::test]
async fn del_exists_type_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["MSET", "a", "1", "b", "2", "c", "3"],
        &["HSET", "h", "f", "v"],
        &["EXISTS", "a", "a", "b", "missing"],
        &["EXISTS"],
        &["TYPE", "a"],
        &["TYPE", "h"],
        &["TYPE", "missing"],
        &["TYPE"],
        &["TYPE", "a", "b"],
        &["DEL", "a", "a", "missing"],
        &["UNLINK", "b", "h", "zz"],
        &["DEL"],
        &["UNLINK"],
        &["EXISTS", "a", "b", "c", "h"],
        &["TOUCH", "c", "c", "missing"],
        &["TOUCH"],
        &["RANDOMKEY"],
        &["DEL", "c"],
        &["RANDOMKEY"],
        &["RANDOMKEY", "x"],
    ])
    .await;
}

#[tokio::test]
async fn rename_matches_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["RENAME", "missing", "x"],
        &["RENAME", "missing", "missing"],
        &["RENAMENX", "missing", "x"],
        &["RENAMENX", "missing", "missing"],
        &["SET", "a", "1", "EX", "100"],
        &["RENAME", "a", "a"],
        &["RENAMENX", "a", "a"],
        &["RENAME", "a", "b"],
        &["EXISTS", "a"],
        &["GET", "b"],
        &["HSET", "h", "f", "v"],
        &["RENAMENX", "b", "h"],
        &["RENAME", "h", "b"],
        &["TYPE", "b"],
        &["TTL", "b"],
        &["SET", "c", "x"],
        &["RENAMENX", "c", "d"],
        &["GET", "d"],
        &["RENAME", "a"],
        &["RENAMENX", "a", "b", "c"],
    ])
    .await;
    pair.all_same(&[&["SET", "t", "v", "PX", "50000"], &["RENAME", "t", "u"]])
        .await;
    pair.close(&["PTTL", "u"], 50).await;
}

#[tokio::test]
async fn keys_and_scan_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &[
            "MSET", "foo", "1", "foobar", "2", "bar", "3", "f[o]o", "4", "", "empty",
        ],
        &["HSET", "hash", "f", "v"],
        &["KEYS"],
        &["SCAN"],
        &["SCAN", "abc"],
        &["SCAN", "1.5"],
        &["SCAN", "18446744073709551616"],
        &["SCAN", "0", "COUNT", "0"],
        &["SCAN", "0", "COUNT", "-1"],
        &["SCAN", "0", "COUNT", "x"],
        &["SCAN", "0", "COUNT"],
        &["SCAN", "0", "MATCH"],
        &["SCAN", "0", "TYPE"],
        &["SCAN", "0", "FOO", "bar"],
    ])
    .await;
    for pattern in [
        "*",
        "",
        "foo*",
        "f?o",
        "*bar",
        "f\\[o\\]o",
        "[fb]*",
        "[^f]*",
        "nomatch*",
    ] {
        same_sorted(&mut pair, &["KEYS", pattern]).await;
    }
    let all = same_sorted(&mut pair, &["KEYS", "*"]).await;
    assert_eq!(all.len(), 6);
    assert!(all.contains(&String::new()));
    // A full iteration returns the same key set on both (order and batching may differ).
    let cases: &[&[&str]] = &[
        &[],
        &["COUNT", "1"],
        &["MATCH", "foo*"],
        &["TYPE", "hash"],
        &["TYPE", "STRING"],
        &["TYPE", "nosuchtype"],
        &["MATCH", "*", "COUNT", "2", "TYPE", "string"],
    ];
    for extra in cases {
        let ours = scan_all(&mut pair.ours_con, extra).await;
        if let Some(real_con) = &mut pair.real_con {
            let real = scan_all(real_con, extra).await;
            assert_eq!(ours, real, "SCAN {extra:?}");
        }
    }
}

#[tokio::test]
async fn scan_returns_every_stable_key_despite_churn() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    for i in 0..1000 {
        let _: () = con.set(format!("stable:{i}"), i).await.unwrap();
    }
    let mut cursor: u64 = 0;
    let mut seen = BTreeSet::new();
    let mut round = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(25)
            .query_async(&mut con)
            .await
            .unwrap();
        seen.extend(keys);
        // Add and remove other keys between calls.
        round += 1;
        for j in 0..10 {
            let _: () = con.set(format!("churn:{round}:{j}"), 1).await.unwrap();
        }
        if round > 1 {
            let _: i64 = con.del(format!("churn:{}:3", round - 1)).await.unwrap();
        }
        if next == 0 {
            break;
        }
        cursor = next;
        assert!(round < 10_000, "SCAN did not terminate");
    }
    for i in 0..1000 {
        assert!(seen.contains(&format!("stable:{i}")), "stable:{i} missed");
    }
    let err = redis::cmd("SCAN")
        .arg("nope")
        .query_async::<redis::Value>(&mut con)
        .await
        .unwrap_err();
    assert_eq!(support::error_text(&err), "ERR invalid cursor");
    server.shutdown().await;
}

#[tokio::test]
async fn copy_move_swapdb_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["SET", "s", "v", "EX", "100"],
        &["HSET", "h", "a", "1", "b", "2"],
        &["COPY", "s", "s"],
        &["COPY", "s", "s", "DB", "0"],
        &["COPY", "missing", "x"],
        &["COPY", "s", "s2"],
        &["GET", "s2"],
        &["COPY", "s", "s2"],
        &["COPY", "h", "s2"],
        &["COPY", "h", "s2", "REPLACE"],
        &["TYPE", "s2"],
        &["HSET", "s2", "c", "3"],
        &["HGETALL", "h"],
        &["HGETALL", "s2"],
        &["COPY", "s", "x", "DB", "99"],
        &["COPY", "s", "x", "DB", "-1"],
        &["COPY", "s", "x", "DB", "abc"],
        &["COPY", "s", "x", "DB"],
        &["COPY", "s", "x", "FOO"],
        &["COPY", "s", "s", "DB", "1"],
        &["COPY", "s", "x", "DB", "1", "REPLACE"],
        &["COPY", "s"],
        &["SELECT", "1"],
        &["GET", "s"],
        &["GET", "x"],
        &["SELECT", "0"],
        &["MOVE", "s", "0"],
        &["MOVE", "s", "99"],
        &["MOVE", "s", "-1"],
        &["MOVE", "s", "x"],
        &["MOVE", "missing", "1"],
        &["MOVE", "missing", "99"],
        &["MOVE", "s", "1"],
        &["DEL", "x"],
        &["MOVE", "s2", "1"],
        &["MOVE", "s2", "2"],
        &["EXISTS", "s2"],
        &["MOVE", "s"],
        &["SWAPDB", "0", "x"],
        &["SWAPDB", "x", "0"],
        &["SWAPDB", "0", "99"],
        &["SWAPDB", "-1", "0"],
        &["SWAPDB", "0", "0"],
        &["SWAPDB", "0"],
        &["SET", "zero", "0"],
        &["SWAPDB", "0", "2"],
        &["GET", "zero"],
        &["HGETALL", "s2"],
        &["SELECT", "2"],
        &["GET", "zero"],
        &["SWAPDB", "2", "0"],
        &["GET", "zero"],
        &["SELECT", "0"],
        &["GET", "zero"],
    ])
    .await;
    pair.all_same(&[&["SELECT", "1"]]).await;
    pair.close(&["TTL", "s"], 1).await;
    pair.close(&["TTL", "x"], 1).await;
}

#[tokio::test]
async fn object_matches_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["SET", "int", "12345"],
        &["SET", "neg", "-5"],
        &["SET", "emb", "hello"],
        &[
            "SET",
            "raw",
            "this string is longer than forty-four bytes in total",
        ],
        &["SET", "notint", "012"],
        &["SET", "bigint", "123456789012345678901"],
        &["SET", "small", "42"],
        &["HSET", "hash", "a", "1"],
        &["OBJECT", "ENCODING", "int"],
        &["OBJECT", "ENCODING", "neg"],
        &["OBJECT", "ENCODING", "emb"],
        &["OBJECT", "ENCODING", "raw"],
        &["OBJECT", "ENCODING", "notint"],
        &["OBJECT", "ENCODING", "bigint"],
        &["OBJECT", "ENCODING", "hash"],
        &["OBJECT", "ENCODING", "missing"],
        &["OBJECT", "REFCOUNT", "small"],
        &["OBJECT", "REFCOUNT", "int"],
        &["OBJECT", "REFCOUNT", "emb"],
        &["OBJECT", "REFCOUNT", "hash"],
        &["OBJECT", "REFCOUNT", "missing"],
        &["INCR", "small"],
        &["OBJECT", "REFCOUNT", "small"],
        &["OBJECT", "FREQ", "emb"],
        &["OBJECT", "FREQ", "missing"],
        &["OBJECT", "IDLETIME", "missing"],
        &["OBJECT", "IDLETIME", "emb"],
        &["OBJECT", "HELP"],
        &["OBJECT", "help", "x"],
        &["OBJECT"],
        &["OBJECT", "FOO"],
        &["OBJECT", "FOO", "bar"],
        &["OBJECT", "ENCODING"],
        &["OBJECT", "ENCODING", "a", "b"],
        &["OBJECT", "encoding", "emb"],
    ])
    .await;
    let mut args: Vec<String> = vec!["HSET".into(), "bighash".into()];
    for i in 0..513 {
        args.push(format!("f{i}"));
        args.push("v".into());
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    pair.same(&refs).await;
    pair.all_same(&[
        &["OBJECT", "ENCODING", "bighash"],
        &["HSET", "longval", "f", &"x".repeat(65)],
        &["OBJECT", "ENCODING", "longval"],
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn object_idletime_follows_the_node_clock() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    let _: () = con.set("k", "v").await.unwrap();
    tokio::time::advance(Duration::from_millis(3500)).await;
    let idle: i64 = redis::cmd("OBJECT")
        .arg("IDLETIME")
        .arg("k")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(idle, 3);
    // TYPE and OBJECT do not touch; GET does.
    let _: String = redis::cmd("TYPE")
        .arg("k")
        .query_async(&mut con)
        .await
        .unwrap();
    let idle: i64 = redis::cmd("OBJECT")
        .arg("IDLETIME")
        .arg("k")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(idle, 3);
    let _: String = con.get("k").await.unwrap();
    let idle: i64 = redis::cmd("OBJECT")
        .arg("IDLETIME")
        .arg("k")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(idle, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn sync_and_typed_key_apis() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    let _: () = con.set("a", "1").await.unwrap();
    let _: () = con.rename("a", "b").await.unwrap();
    let moved: bool = con.rename_nx("b", "c").await.unwrap();
    assert!(moved);
    let exists: bool = con.exists("c").await.unwrap();
    assert!(exists);
    let keys: Vec<String> = con.keys("*").await.unwrap();
    assert_eq!(keys, ["c"]);
    let url = server.url();
    tokio::task::spawn_blocking(move || {
        let client = redis::Client::open(url).unwrap();
        let mut con = client.get_connection().unwrap();
        let k: Option<String> = redis::cmd("RANDOMKEY").query(&mut con).unwrap();
        assert_eq!(k.as_deref(), Some("c"));
        let scanned: Vec<String> = redis::Commands::scan(&mut con)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(scanned, ["c"]);
        let n: i64 = redis::Commands::del(&mut con, "c").unwrap();
        assert_eq!(n, 1);
        let k: Option<String> = redis::cmd("RANDOMKEY").query(&mut con).unwrap();
        assert_eq!(k, None);
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// The contents of `key` in a comparable form (type, then sorted where order is not kept).
async fn contents(con: &mut redis::aio::MultiplexedConnection, key: &str) -> String {
    let kind = support::run(con, &["TYPE", key]).await;
    let mut items: Vec<Vec<u8>> = match kind.as_str() {
        "string" | "simple-string(\"string\")" => {
            vec![support::cmd(&["GET", key]).query_async(con).await.unwrap()]
        }
        k if k.contains("list") => support::cmd(&["LRANGE", key, "0", "-1"])
            .query_async(con)
            .await
            .unwrap(),
        k if k.contains("zset") => support::cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"])
            .query_async(con)
            .await
            .unwrap(),
        k if k.contains("set") => {
            let mut m: Vec<Vec<u8>> = support::cmd(&["SMEMBERS", key])
                .query_async(con)
                .await
                .unwrap();
            m.sort();
            m
        }
        k if k.contains("stream") => {
            let full = support::run(con, &["XINFO", "STREAM", key, "FULL"]).await;
            vec![full.into_bytes()]
        }
        k if k.contains("hash") => {
            let mut m: Vec<Vec<u8>> = support::cmd(&["HGETALL", key])
                .query_async(con)
                .await
                .unwrap();
            m.sort();
            m
        }
        other => panic!("unexpected type {other}"),
    };
    items.insert(0, kind.into_bytes());
    format!("{items:?}")
}

/// RESTORE `payload` at `key` with extra arguments; the reply as text.
async fn restore_raw(
    con: &mut redis::aio::MultiplexedConnection,
    key: &str,
    ttl: &str,
    payload: &[u8],
    extra: &[&str],
) -> String {
    let mut cmd = redis::cmd("RESTORE");
    cmd.arg(key).arg(ttl).arg(payload);
    for e in extra {
        cmd.arg(*e);
    }
    let r: redis::RedisResult<redis::Value> = cmd.query_async(con).await;
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("ERROR {}", support::error_text(&e)),
    }
}

// DUMP of every type in every encoding Redis 7.0 writes (listpacks, intsets, quicklists,
// integer and LZF strings) restores here with the same contents, and our DUMP restores on
// Redis; RESTORE's options and errors answer as Redis's do.
#[tokio::test]
async fn dump_and_restore_match_redis_across_servers() {
    let mut pair = support::Pair::start().await;
    let long = "x".repeat(100);
    let big_hash: Vec<String> = (0..3)
        .flat_map(|i| [format!("f{i}"), "v".repeat(80)])
        .collect();
    let big_list: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    let big_zset: Vec<String> = (0..200)
        .flat_map(|i| [format!("{}.5", i), format!("m{i}")])
        .collect();
    let mut setup: Vec<Vec<&str>> = vec![
        vec!["SET", "s", "hello"],
        vec!["SET", "i", "-12345"],
        vec!["SET", "big", &long],
        vec!["RPUSH", "l", "a", "b", "1", "-5", "70000", &long],
        vec!["SADD", "si", "1", "2", "-3", "100000"],
        vec!["SADD", "ss", "a", "b"],
        vec!["HSET", "h", "f", "v", "n", "7"],
        vec!["ZADD", "z", "1.5", "a", "-2", "b", "inf", "c"],
        vec!["XADD", "x", "1-1", "f", "v", "g", "w"],
        vec!["XADD", "x", "2-0", "f", "1", "g", "-2"],
        vec!["XADD", "x", "3-0", "other", "field"],
        vec!["XDEL", "x", "2-0"],
        vec!["XGROUP", "CREATE", "x", "grp", "0"],
        vec!["XGROUP", "CREATECONSUMER", "x", "grp", "idle"],
    ];
    let mut hset = vec!["HSET", "hbig"];
    hset.extend(big_hash.iter().map(String::as_str));
    let mut rpush = vec!["RPUSH", "lbig"];
    rpush.extend(big_list.iter().map(String::as_str));
    let mut zadd = vec!["ZADD", "zbig"];
    zadd.extend(big_zset.iter().map(String::as_str));
    setup.extend([hset, rpush, zadd]);
    for args in &setup {
        pair.same(args).await;
    }
    let keys = [
        "s", "i", "big", "l", "si", "ss", "h", "z", "hbig", "lbig", "zbig", "x",
    ];
    for key in keys {
        // Our own payload round-trips here.
        let ours: Vec<u8> = support::cmd(&["DUMP", key])
            .query_async(&mut pair.ours_con)
            .await
            .unwrap();
        let copy = format!("{key}_copy");
        assert_eq!(
            restore_raw(&mut pair.ours_con, &copy, "0", &ours, &[]).await,
            "ok"
        );
        assert_eq!(
            contents(&mut pair.ours_con, key).await,
            contents(&mut pair.ours_con, &copy).await
        );
        let Some(real_con) = &mut pair.real_con else {
            continue;
        };
        // Redis's payload restores here, ours on Redis.
        let theirs: Vec<u8> = support::cmd(&["DUMP", key])
            .query_async(real_con)
            .await
            .unwrap();
        let from_redis = format!("{key}_from_redis");
        assert_eq!(
            restore_raw(&mut pair.ours_con, &from_redis, "0", &theirs, &[]).await,
            "ok",
            "{key}"
        );
        assert_eq!(
            contents(&mut pair.ours_con, &from_redis).await,
            contents(real_con, key).await,
            "{key}"
        );
        let from_ours = format!("{key}_from_ours");
        assert_eq!(
            restore_raw(real_con, &from_ours, "0", &ours, &[]).await,
            "ok",
            "{key}"
        );
        assert_eq!(
            contents(real_con, &from_ours).await,
            contents(&mut pair.ours_con, key).await,
            "{key}"
        );
    }
    // Options and errors, in Redis's order of checks.
    let payload: Vec<u8> = support::cmd(&["DUMP", "s"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    let mut corrupt = payload.clone();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 1;
    let cases: &[(&str, &str, &[u8], &[&str])] = &[
        ("s", "0", &payload, &[]),
        ("n", "-1", &payload, &[]),
        ("n", "x", &payload, &[]),
        ("n", "0", b"bad", &[]),
        ("n", "0", &corrupt, &[]),
        ("n", "0", &payload, &["bogus"]),
        ("n", "0", &payload, &["IDLETIME", "-1"]),
        ("n", "0", &payload, &["FREQ", "256"]),
        ("n", "0", &payload, &["IDLETIME", "1", "FREQ", "2"]),
        ("n", "0", &payload, &["IDLETIME"]),
        ("n", "1", &payload, &["ABSTTL"]),
        ("s", "0", &payload, &["REPLACE", "IDLETIME", "5"]),
        ("t", "100000", &payload, &[]),
        ("u", "0", &payload[1..], &[]),
    ];
    for (key, ttl, p, extra) in cases {
        let ours = restore_raw(&mut pair.ours_con, key, ttl, p, extra).await;
        if let Some(real_con) = &mut pair.real_con {
            let theirs = restore_raw(real_con, key, ttl, p, extra).await;
            assert_eq!(ours, theirs, "RESTORE {key} {ttl} {extra:?}");
        }
    }
    pair.all_same(&[
        &["EXISTS", "n"],
        &["DUMP", "nosuchkey"],
        &["GET", "t"],
        &["OBJECT", "IDLETIME", "s"],
    ])
    .await;
    let pttl = pair.close(&["PTTL", "t"], 1000).await;
    assert!(pttl > 98_000, "{pttl}");
}

/// A fresh directory under the system's temporary directory for one test's RDB files.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("locksmith-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// SAVE writes an RDB file (every type, expiries, several databases, function libraries) that
// our server loads at start from --dir/--dbfilename and redis-server loads too; a file that
// redis-server saved loads here; BGSAVE and LASTSAVE report as Redis's do.
#[tokio::test]
async fn save_writes_an_rdb_file_that_loads_here_and_in_redis() {
    let dir = scratch_dir("rdb");
    let dir_s = dir.display().to_string();
    let ours = locksmith_server::Server::builder()
        .config_set("dir", dir_s.clone())
        .config_set("dbfilename", "ours.rdb")
        .start()
        .await
        .unwrap();
    let mut con = support::conn(&ours.url()).await;
    let long = "x".repeat(200);
    let lib = "#!lua name=lib\nredis.register_function('f', function() return 'hi' end)";
    let setup: &[&[&str]] = &[
        &["SET", "s", "hello"],
        &["SET", "n", "12345"],
        &["SET", "big", &long],
        &["SET", "volatile", "v", "PX", "100000"],
        &["RPUSH", "l", "a", "b", "1", "-5"],
        &["SADD", "st", "1", "2", "x"],
        &["HSET", "h", "f", "v"],
        &["ZADD", "z", "1.5", "a", "2", "b"],
        &["XADD", "x", "1-1", "f", "v"],
        &["XGROUP", "CREATE", "x", "g", "0"],
        &["SELECT", "3"],
        &["SET", "db3", "yes"],
        &["SELECT", "0"],
        &["FUNCTION", "LOAD", lib],
    ];
    for args in setup {
        let _ = support::run(&mut con, args).await;
    }
    assert_eq!(support::run(&mut con, &["SAVE"]).await, "ok");
    let info: String = support::cmd(&["INFO", "persistence"])
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(
        info.contains("rdb_changes_since_last_save:0") && info.contains("rdb_saves:1"),
        "{info}"
    );
    assert_eq!(
        support::run(&mut con, &["BGSAVE"]).await,
        "simple-string(\"Background saving started\")"
    );
    // Bounded wait for the background write to finish.
    for _ in 0..500 {
        let info: String = support::cmd(&["INFO", "persistence"])
            .query_async(&mut con)
            .await
            .unwrap();
        if info.contains("rdb_bgsave_in_progress:0") && info.contains("rdb_saves:2") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let checks: &[&[&str]] = &[
        &["DBSIZE"],
        &["GET", "big"],
        &["LRANGE", "l", "0", "-1"],
        &["SMEMBERS", "st"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["XINFO", "GROUPS", "x"],
        &["FCALL", "f", "0"],
    ];
    async fn answers(
        con: &mut redis::aio::MultiplexedConnection,
        checks: &[&[&str]],
    ) -> Vec<String> {
        let mut out = Vec::new();
        for args in checks {
            let mut reply = support::run(con, args).await;
            if args[0] == "SMEMBERS" {
                let mut m: Vec<String> = support::cmd(args).query_async(con).await.unwrap();
                m.sort();
                reply = format!("{m:?}");
            }
            out.push(reply);
        }
        let ttl: i64 = support::cmd(&["PTTL", "volatile"])
            .query_async(con)
            .await
            .unwrap();
        out.push(format!("volatile {}", ttl > 90_000));
        out
    }
    let expected = answers(&mut con, checks).await;
    // Our server loads its own file at start.
    let again = locksmith_server::Server::builder()
        .config_set("dir", dir_s.clone())
        .config_set("dbfilename", "ours.rdb")
        .start()
        .await
        .unwrap();
    let mut again_con = support::conn(&again.url()).await;
    assert_eq!(answers(&mut again_con, checks).await, expected);
    let db3 = support::run(
        &mut again_con,
        &[
            "EVAL",
            "redis.call('select', 3) return redis.call('get', 'db3')",
            "0",
        ],
    )
    .await;
    assert_eq!(db3, "bulk-string('\"yes\"')");
    // redis-server loads it, and what redis-server saves loads here.
    let Some(real) = support::RealRedis::start_with(&["--dir", &dir_s, "--dbfilename", "ours.rdb"])
    else {
        return;
    };
    let mut real_con = support::conn(&real.url()).await;
    assert_eq!(answers(&mut real_con, checks).await, expected);
    // (dbfilename is a protected setting in Redis 7: it saves over the same file.)
    let _ = support::run(&mut real_con, &["SET", "from_redis", "1"]).await;
    assert_eq!(support::run(&mut real_con, &["SAVE"]).await, "ok");
    let theirs = locksmith_server::Server::builder()
        .config_set("dir", dir_s.clone())
        .config_set("dbfilename", "ours.rdb")
        .start()
        .await
        .unwrap();
    let mut theirs_con = support::conn(&theirs.url()).await;
    let from: String = support::cmd(&["GET", "from_redis"])
        .query_async(&mut theirs_con)
        .await
        .unwrap();
    assert_eq!(from, "1");
    let mut loaded = answers(&mut theirs_con, checks).await;
    loaded[0] = expected[0].clone(); // one more key
    assert_eq!(loaded, expected);
    let _ = std::fs::remove_dir_all(&dir);
}

// Under --compat valkey-8.1, SAVE writes valkey-server 8.1's RDB 11 (`REDIS0011`, the
// `valkey-ver` field, a listpack set, a stream with its consumers' active times), which
// valkey-server loads; what valkey-server saves loads here; the default target refuses it, as
// redis-server 7.0.15 refuses version 11.
#[tokio::test]
async fn under_valkey_save_writes_rdb_11_that_valkey_loads_and_back() {
    use locksmith_server::Compat;
    let dir = scratch_dir("rdb-valkey");
    let dir_s = dir.display().to_string();
    let ours = locksmith_server::Server::builder()
        .compat(Compat::Valkey81)
        .config_set("dir", dir_s.clone())
        .config_set("dbfilename", "ours.rdb")
        .start()
        .await
        .unwrap();
    let mut con = support::conn(&ours.url()).await;
    let setup: &[&[&str]] = &[
        &["SADD", "st", "b", "a", "1"],
        &["SADD", "ints", "3", "2"],
        &["RPUSH", "l", "a", "b", "1"],
        &["XADD", "x", "1-1", "f", "v"],
        &["XGROUP", "CREATE", "x", "g", "0"],
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"],
    ];
    for args in setup {
        let _ = support::run(&mut con, args).await;
    }
    assert_eq!(support::run(&mut con, &["SAVE"]).await, "ok");
    let file = std::fs::read(dir.join("ours.rdb")).unwrap();
    assert!(
        file.starts_with(b"REDIS0011\xfa\x0avalkey-ver\x058.1.8"),
        "{:?}",
        &file[..30]
    );
    let checks: &[&[&str]] = &[
        &["DBSIZE"],
        &["SMEMBERS", "st"],
        &["OBJECT", "ENCODING", "st"],
        &["SMEMBERS", "ints"],
        &["OBJECT", "ENCODING", "l"],
        &["LRANGE", "l", "0", "-1"],
        &["XPENDING", "x", "g"],
    ];
    async fn answers(
        con: &mut redis::aio::MultiplexedConnection,
        checks: &[&[&str]],
    ) -> Vec<String> {
        let mut out = Vec::new();
        for args in checks {
            out.push(support::run(con, args).await);
        }
        out
    }
    let expected = answers(&mut con, checks).await;
    assert_eq!(expected[2], "bulk-string('\"listpack\"')");
    // The default target refuses the file, as redis-server 7.0.15 does.
    let refused = locksmith_server::Server::builder()
        .config_set("dir", dir_s.clone())
        .config_set("dbfilename", "ours.rdb")
        .start()
        .await;
    let Err(err) = refused else {
        panic!("redis-7.0 must refuse RDB 11");
    };
    assert!(err.to_string().contains("RDB format version 11"), "{err}");
    let Some(real) = support::RealRedis::start_reference(
        support::Reference::Valkey,
        &["--dir", &dir_s, "--dbfilename", "ours.rdb"],
    ) else {
        return;
    };
    let mut real_con = support::conn(&real.url()).await;
    assert_eq!(answers(&mut real_con, checks).await, expected);
    let _ = support::run(&mut real_con, &["SADD", "from_valkey", "x", "y"]).await;
    assert_eq!(support::run(&mut real_con, &["SAVE"]).await, "ok");
    let theirs = locksmith_server::Server::builder()
        .compat(Compat::Valkey81)
        .config_set("dir", dir_s.clone())
        .config_set("dbfilename", "ours.rdb")
        .start()
        .await
        .unwrap();
    let mut theirs_con = support::conn(&theirs.url()).await;
    let mut loaded = answers(&mut theirs_con, checks).await;
    loaded[0] = expected[0].clone(); // one more key
    assert_eq!(loaded, expected);
    assert_eq!(
        support::run(&mut theirs_con, &["SMEMBERS", "from_valkey"]).await,
        support::run(&mut real_con, &["SMEMBERS", "from_valkey"]).await
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// RESTORE of a payload of RDB version 11 (valkey-server 8.1.8's `DUMP` of `SADD s a b c`):
/// refused under the default target with redis-server 7.0.15's error, restored under
/// `--compat valkey-8.1` as valkey-server restores it.
#[tokio::test]
async fn restore_of_rdb_11_is_refused_by_redis_7_0_and_read_by_valkey() {
    use locksmith_server::Compat;
    let payload: &[u8] =
        b"\x14\x10\x10\x00\x00\x00\x03\x00\x81a\x02\x81b\x02\x81c\x02\xff\x0b\x00m5Tg\xcb\x08\x997";
    for compat in [Compat::Redis70, Compat::Valkey81] {
        let mut pair = support::Pair::start_for(compat).await;
        let mut replies = Vec::new();
        for con in [&mut pair.ours_con]
            .into_iter()
            .chain(pair.real_con.as_mut())
        {
            let reply: redis::RedisResult<redis::Value> = redis::cmd("RESTORE")
                .arg("s")
                .arg(0)
                .arg(payload)
                .query_async(con)
                .await;
            let reply = match reply {
                Ok(v) => format!("{v:?}"),
                Err(e) => format!("ERROR {}", support::error_text(&e)),
            };
            replies.push((reply, support::run(con, &["SMEMBERS", "s"]).await));
        }
        let expected = match compat {
            Compat::Redis70 => "ERROR ERR DUMP payload version or checksum are wrong",
            _ => "ok",
        };
        assert_eq!(replies[0].0, expected, "{compat}");
        if let [ours, theirs] = &replies[..] {
            assert_eq!(ours, theirs, "{compat}: ours, then the reference");
        }
    }
}

// A file that is not an RDB file stops the server from starting, with the reason.
#[tokio::test]
async fn a_corrupt_rdb_file_is_refused_at_start() {
    let dir = scratch_dir("bad-rdb");
    std::fs::write(dir.join("bad.rdb"), b"REDIS0010\xfe\x00\x00\x05hel").unwrap();
    let started = locksmith_server::Server::builder()
        .config_set("dir", dir.display().to_string())
        .config_set("dbfilename", "bad.rdb")
        .start()
        .await;
    let Err(err) = started else {
        panic!("a corrupt file must stop the start");
    };
    assert!(err.to_string().contains("bad.rdb"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Redis's SCAN guarantee through resizes: keys present for the whole iteration are returned
/// while the keyspace grows from 500 to 20 500 keys (the table doubles six times) and shrinks
/// back (it halves as many times), rehashing between calls.
#[tokio::test]
async fn scan_returns_every_stable_key_while_the_keyspace_grows_and_shrinks() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    let mut pipe = redis::pipe();
    for i in 0..500 {
        pipe.set(format!("stable:{i}"), i).ignore();
    }
    let _: () = pipe.query_async(&mut con).await.unwrap();
    let mut cursor: u64 = 0;
    let mut seen = BTreeSet::new();
    let (mut added, mut removed) = (0, 0);
    // Bounded: a full iteration over at most 21 000 keys at COUNT 10, plus the rounds the
    // resizes add.
    for round in 0..100_000 {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(10)
            .query_async(&mut con)
            .await
            .unwrap();
        seen.extend(keys);
        // Grow by 400 keys a call for 50 calls, then remove them 400 a call.
        let mut pipe = redis::pipe();
        if round < 50 {
            for _ in 0..400 {
                pipe.set(format!("churn:{added}"), 1).ignore();
                added += 1;
            }
        } else {
            for _ in 0..400 {
                if removed < added {
                    pipe.del(format!("churn:{removed}")).ignore();
                    removed += 1;
                }
            }
        }
        if round < 100 {
            let _: () = pipe.query_async(&mut con).await.unwrap();
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
    for i in 0..500 {
        assert!(seen.contains(&format!("stable:{i}")), "stable:{i} missed");
    }
    assert!(added == 20_000 && removed == added, "{added} {removed}");
    server.shutdown().await;
}

/// The same guarantee for HSCAN, SSCAN and ZSCAN on collections past their listpack and
/// intset limits, growing from 1000 to 21 000 elements and shrinking back between calls.
#[tokio::test]
async fn aggregate_scans_return_every_stable_element_through_resizes() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    for (cmd, key) in [("HSCAN", "h"), ("SSCAN", "s"), ("ZSCAN", "z")] {
        let add = |pipe: &mut redis::Pipeline, name: String| {
            match cmd {
                "HSCAN" => pipe.cmd("HSET").arg(key).arg(name).arg("v").ignore(),
                "SSCAN" => pipe.cmd("SADD").arg(key).arg(name).ignore(),
                _ => pipe.cmd("ZADD").arg(key).arg(1).arg(name).ignore(),
            };
        };
        let remove = |pipe: &mut redis::Pipeline, name: String| {
            let c = match cmd {
                "HSCAN" => "HDEL",
                "SSCAN" => "SREM",
                _ => "ZREM",
            };
            pipe.cmd(c).arg(key).arg(name).ignore();
        };
        let mut pipe = redis::pipe();
        for i in 0..1000 {
            add(&mut pipe, format!("stable:{i}"));
        }
        let _: () = pipe.query_async(&mut con).await.unwrap();
        let mut cursor: u64 = 0;
        let mut seen = BTreeSet::new();
        let (mut added, mut removed) = (0, 0);
        // Bounded, as in the SCAN test above.
        for round in 0..100_000 {
            let (next, items): (u64, Vec<String>) = redis::cmd(cmd)
                .arg(key)
                .arg(cursor)
                .arg("COUNT")
                .arg(10)
                .query_async(&mut con)
                .await
                .unwrap();
            // HSCAN and ZSCAN reply with name, value pairs.
            let step = if cmd == "SSCAN" { 1 } else { 2 };
            seen.extend(items.into_iter().step_by(step));
            let mut pipe = redis::pipe();
            for _ in 0..400 {
                if round < 50 {
                    add(&mut pipe, format!("churn:{added}"));
                    added += 1;
                } else if removed < added {
                    remove(&mut pipe, format!("churn:{removed}"));
                    removed += 1;
                }
            }
            if round < 100 {
                let _: () = pipe.query_async(&mut con).await.unwrap();
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        for i in 0..1000 {
            assert!(
                seen.contains(&format!("stable:{i}")),
                "{cmd}: stable:{i} missed"
            );
        }
        assert!(
            added == 20_000 && removed == added,
            "{cmd}: {added} {removed}"
        );
    }
    server.shutdown().await;
}

/// MIGRATE's answers that do not depend on the target (nothing to move, an unreachable target,
/// argument errors) are Redis's.
#[tokio::test]
async fn migrate_errors_match_redis() {
    let mut pair = support::Pair::start().await;
    // A port nothing listens on.
    let closed = support::free_port().to_string();
    pair.all_same(&[
        &["migrate", "127.0.0.1", &closed, "nokey", "0", "100"],
        &["set", "k", "v"],
        &["migrate", "127.0.0.1", &closed, "k", "0", "100"],
        &[
            "migrate",
            "127.0.0.1",
            &closed,
            "k",
            "0",
            "100",
            "keys",
            "k",
        ],
        &[
            "migrate",
            "127.0.0.1",
            &closed,
            "",
            "0",
            "100",
            "keys",
            "nokey",
        ],
        &["migrate", "127.0.0.1", &closed, "k", "0", "100", "bogus"],
        &["migrate", "127.0.0.1", &closed, "k", "0", "100", "auth"],
        &[
            "migrate",
            "127.0.0.1",
            &closed,
            "k",
            "0",
            "100",
            "auth2",
            "u",
        ],
        &["migrate", "127.0.0.1", &closed, "k", "x", "100"],
        &["migrate", "127.0.0.1", &closed, "k", "0", "x"],
        &["migrate", "127.0.0.1", &closed, "k", "0"],
        &["exists", "k"],
    ])
    .await;
}

/// MIGRATE to a real redis-server: values and TTLs arrive, moved keys are gone here (kept
/// with COPY), REPLACE overwrites, the target's errors are reported as Redis reports them, the
/// KEYS form moves several; and a real redis-server migrates keys to us (RESTORE here).
#[tokio::test]
async fn migrate_moves_keys_to_and_from_a_real_server() {
    let ours = support::start().await;
    let Some(real) = support::RealRedis::start() else {
        return;
    };
    let mut con = support::conn(&ours.url()).await;
    let mut target = support::conn(&real.url()).await;
    let port = real.addr().port().to_string();
    let run = |args: &[&str]| support::cmd(args);
    let _: () = run(&["RPUSH", "l", "a", "b"])
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = run(&["SET", "t", "v", "PX", "100000"])
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = run(&["SET", "s", "1"]).query_async(&mut con).await.unwrap();
    let ok: String = run(&["MIGRATE", "127.0.0.1", &port, "l", "0", "5000"])
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let list: Vec<String> = run(&["LRANGE", "l", "0", "-1"])
        .query_async(&mut target)
        .await
        .unwrap();
    assert_eq!(list, ["a", "b"]);
    let ok: String = run(&[
        "MIGRATE",
        "127.0.0.1",
        &port,
        "",
        "0",
        "5000",
        "KEYS",
        "t",
        "s",
        "gone",
    ])
    .query_async(&mut con)
    .await
    .unwrap();
    assert_eq!(ok, "OK");
    let ttl: i64 = run(&["PTTL", "t"]).query_async(&mut target).await.unwrap();
    assert!((90_000..=100_000).contains(&ttl), "{ttl}");
    let here: i64 = run(&["EXISTS", "l", "t", "s"])
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(here, 0);
    // The target has `s` already: its BUSYKEY comes back, and `s` stays here.
    let _: () = run(&["SET", "s", "2"]).query_async(&mut con).await.unwrap();
    let err = run(&["MIGRATE", "127.0.0.1", &port, "s", "0", "5000"])
        .query_async::<String>(&mut con)
        .await
        .unwrap_err();
    assert_eq!(
        support::error_text(&err),
        "ERR Target instance replied with error: BUSYKEY Target key name already exists."
    );
    let ok: String = run(&[
        "MIGRATE",
        "127.0.0.1",
        &port,
        "s",
        "0",
        "5000",
        "COPY",
        "REPLACE",
    ])
    .query_async(&mut con)
    .await
    .unwrap();
    assert_eq!(ok, "OK");
    let (here, there): (String, String) = (
        run(&["GET", "s"]).query_async(&mut con).await.unwrap(),
        run(&["GET", "s"]).query_async(&mut target).await.unwrap(),
    );
    assert_eq!((here.as_str(), there.as_str()), ("2", "2"));
    let info: String = run(&["INFO", "stats"]).query_async(&mut con).await.unwrap();
    assert!(info.contains("migrate_cached_sockets:1"), "{info}");
    // And back: redis-server sends RESTORE to us.
    let _: () = run(&["SET", "back", "x"])
        .query_async(&mut target)
        .await
        .unwrap();
    let our_port = ours.addr().port().to_string();
    let ok: String = run(&["MIGRATE", "127.0.0.1", &our_port, "back", "0", "5000"])
        .query_async(&mut target)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let back: String = run(&["GET", "back"]).query_async(&mut con).await.unwrap();
    assert_eq!(back, "x");
}

/// Between two of our servers in one process (on a runtime with more than one thread, since
/// MIGRATE blocks its node's thread as Redis blocks its server), across databases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_between_two_in_process_servers() {
    let (a, b) = (support::start().await, support::start().await);
    let (mut con_a, mut con_b) = (support::conn(&a.url()).await, support::conn(&b.url()).await);
    let run = |args: &[&str]| support::cmd(args);
    let _: () = run(&["HSET", "h", "f", "v"])
        .query_async(&mut con_a)
        .await
        .unwrap();
    let port = b.addr().port().to_string();
    let ok: String = run(&["MIGRATE", "127.0.0.1", &port, "h", "3", "5000"])
        .query_async(&mut con_a)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let _: () = run(&["SELECT", "3"]).query_async(&mut con_b).await.unwrap();
    let v: String = run(&["HGET", "h", "f"])
        .query_async(&mut con_b)
        .await
        .unwrap();
    assert_eq!(v, "v");
    let gone: i64 = run(&["EXISTS", "h"]).query_async(&mut con_a).await.unwrap();
    assert_eq!(gone, 0);
}

/// Asserts `DUMP key` gives the same bytes on both servers, naming the first that differs.
async fn same_dump(pair: &mut support::Pair, key: &str) {
    let ours: Vec<u8> = support::cmd(&["DUMP", key])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    let Some(real_con) = &mut pair.real_con else {
        return;
    };
    let theirs: Vec<u8> = support::cmd(&["DUMP", key])
        .query_async(real_con)
        .await
        .unwrap();
    if ours != theirs {
        let at = ours.iter().zip(&theirs).take_while(|(a, b)| a == b).count();
        let around = |v: &[u8]| v[at.saturating_sub(8)..(at + 24).min(v.len())].to_vec();
        panic!(
            "DUMP {key}: {} bytes against Redis's {}, first difference at {at}: ours {:?}, redis {:?}",
            ours.len(),
            theirs.len(),
            around(&ours),
            around(&theirs)
        );
    }
}

/// `DUMP` and `FUNCTION DUMP` answer Redis 7.0.15's bytes for every type and encoding Redis
/// writes deterministically: strings (integer, raw, LZF-compressed or not), lists cut into
/// quicklist nodes (by size and by count, integers of every listpack width, plain-sized
/// elements), intsets of each width, listpack hashes and sorted sets (integral, fractional
/// and infinite scores), skiplist sorted sets, streams; with `rdbcompression` on and off.
/// A set or hash in a hashtable is written in its dict's order, which Redis seeds at random
/// per process: its type byte and length are compared, its contents by the test above; so
/// is a stream with deleted entries (see COMPATIBILITY.md).
#[tokio::test]
async fn dump_bytes_equal_redis_for_every_type_and_encoding() {
    dump_bytes_equal_the_reference(locksmith_server::Compat::Redis70).await;
}

/// The same under `--compat valkey-8.1` against valkey-server 8.1.8: every payload says RDB
/// version 11; a small set of strings is a listpack (type 20, in insertion order, compared
/// byte for byte, intsets turned listpacks by a string included), a large one a hashtable; a
/// small list is a `listpack` to OBJECT ENCODING and written as a quicklist of one node; a
/// stream with a group is type 21 (its consumers' active times), compared by type and length
/// as its times differ.
#[tokio::test]
async fn dump_bytes_equal_valkey_for_every_type_and_encoding() {
    dump_bytes_equal_the_reference(locksmith_server::Compat::Valkey81).await;
}

/// DUMP of every type and encoding under `compat`, compared with its reference server.
async fn dump_bytes_equal_the_reference(compat: locksmith_server::Compat) {
    let valkey = compat == locksmith_server::Compat::Valkey81;
    let mut pair = support::Pair::start_for(compat).await;
    if pair.real.is_none() {
        eprintln!("{compat}'s reference server not found: DUMP bytes not compared with it");
    }
    // Text of `n` bytes: repetitive (compresses) or scrambled (does not).
    let text = |n: usize, scrambled: bool| -> String {
        (0..n)
            .map(|i| {
                let x = if scrambled {
                    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58
                } else {
                    (i % 7) as u64
                };
                char::from(b'a' + (x % 26) as u8)
            })
            .collect()
    };
    let mut setup: Vec<Vec<String>> = Vec::new();
    let mut add = |args: &[&str]| setup.push(args.iter().map(|s| s.to_string()).collect());
    add(&["SET", "s_short", "hello"]);
    add(&["SET", "s_int", "-12345"]);
    add(&["SET", "s_int64", "12345678901234"]);
    add(&["SET", "s_21", &text(21, true)]);
    add(&["SET", "s_rep", &text(3000, false)]);
    add(&["SET", "s_noise", &text(5000, true)]);
    add(&["SET", "s_x", &"x".repeat(100)]);
    let widths = [
        "0",
        "127",
        "128",
        "-1",
        "-4096",
        "4095",
        "4096",
        "-32768",
        "32767",
        "32768",
        "-8388608",
        "8388607",
        "8388608",
        "-2147483648",
        "2147483647",
        "2147483648",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "-0",
        "007",
        "+1",
        "1.5",
        "",
    ];
    let mut rpush = vec!["RPUSH", "l_widths"];
    rpush.extend(widths);
    add(&rpush);
    let many: Vec<String> = (0..20_000)
        .map(|i| match i % 4 {
            0 => i.to_string(),
            1 => format!("element-{i}"),
            2 => text(i % 90, true),
            _ => (-(i as i64) * 1_000_003).to_string(),
        })
        .collect();
    let mut rpush = vec!["RPUSH", "l_many"];
    rpush.extend(many.iter().map(String::as_str));
    add(&rpush);
    let wide: Vec<String> = (0..12).map(|i| text(3000 + i * 500, i % 2 == 0)).collect();
    let mut rpush = vec!["RPUSH", "l_wide"];
    rpush.extend(wide.iter().map(String::as_str));
    add(&rpush);
    add(&["SADD", "set16", "1", "-3", "100", "32767", "-32768"]);
    add(&["SADD", "set32", "1", "70000", "-2147483648"]);
    add(&[
        "SADD",
        "set64",
        "5",
        "-9223372036854775808",
        "9223372036854775807",
    ]);
    let ints: Vec<String> = (0..512)
        .map(|i| (i * 7919 - 1_000_000).to_string())
        .collect();
    let mut sadd = vec!["SADD", "set512"];
    sadd.extend(ints.iter().map(String::as_str));
    add(&sadd);
    add(&["SADD", "set_table", "a", "b", "1"]);
    // Valkey's listpack sets: strings, an intset that took a string, removals shifting.
    add(&[
        "SADD",
        "set_lp",
        "c",
        "a",
        "b",
        "-70000",
        "9223372036854775807",
    ]);
    add(&["SREM", "set_lp", "a"]);
    add(&["SADD", "set_lp", "a", &text(64, true)]);
    add(&["SADD", "set_int_lp", "300", "-2", "70000"]);
    add(&["SADD", "set_int_lp", "x"]);
    let strings: Vec<String> = (0..129).map(|i| format!("member:{i}")).collect();
    let mut sadd = vec!["SADD", "set_lp128"];
    sadd.extend(strings[..128].iter().map(String::as_str));
    add(&sadd);
    let mut sadd = vec!["SADD", "set_ht129"];
    sadd.extend(strings.iter().map(String::as_str));
    add(&sadd);
    add(&["SADD", "set_ht_long", "a", &text(65, false)]);
    add(&[
        "HSET",
        "h_small",
        "f",
        "v",
        "n",
        "7",
        "neg",
        "-70000",
        "big",
        "9223372036854775807",
    ]);
    let fields: Vec<String> = (0..128)
        .flat_map(|i| [format!("field:{i}"), text(i % 64, i % 3 == 0)])
        .collect();
    let mut hset = vec!["HSET", "h_128"];
    hset.extend(fields.iter().map(String::as_str));
    add(&hset);
    add(&["HSET", "h_table", "f", &"v".repeat(65)]);
    add(&[
        "ZADD",
        "z_small",
        "1",
        "a",
        "2.5",
        "b",
        "-0",
        "c",
        "inf",
        "d",
        "-inf",
        "e",
        "1e20",
        "f",
        "-3",
        "5",
        "4611686018427387904",
        "g",
        "0.1",
        "h",
    ]);
    // Scores a listpack holds as text: `%.17g`'s under Redis 7.0, the shortest form under
    // Valkey 8 (`0.1`), integers within 2^62 as integers, -0 as 0.
    add(&[
        "ZADD",
        "z_fractions",
        "0.1",
        "a",
        "1.5e300",
        "b",
        "3.0",
        "c",
        "-0.0",
        "d",
        "1e-7",
        "e",
        "1e23",
        "f",
        "4611686018427389000",
        "g",
        "-33333.333333333333",
        "h",
        "5e-324",
        "i",
    ]);
    let members: Vec<String> = (0..128)
        .flat_map(|i| [format!("{}", (i as f64) * 1.25 - 40.0), format!("m{i}")])
        .collect();
    let mut zadd = vec!["ZADD", "z_128"];
    zadd.extend(members.iter().map(String::as_str));
    add(&zadd);
    let members: Vec<String> = (0..300)
        .flat_map(|i| [format!("{}", i % 17), format!("member-{i}")])
        .collect();
    let mut zadd = vec!["ZADD", "z_skiplist"];
    zadd.extend(members.iter().map(String::as_str));
    add(&zadd);
    add(&["ZADD", "z_long_member", "1", &"m".repeat(65)]);
    for i in 1..=250 {
        let id = format!("{i}-1");
        let v = text(i % 40, true);
        for key in ["x", "x_plain"] {
            if i % 5 == 0 {
                add(&["XADD", key, &id, "other", &v]);
            } else {
                add(&["XADD", key, &id, "f", &v, "g", &i.to_string()]);
            }
        }
    }
    add(&["XDEL", "x", "7-1", "250-1"]);
    for i in 1..=3 {
        add(&["XADD", "x_group", &format!("{i}-0"), "f", &i.to_string()]);
    }
    add(&["XGROUP", "CREATE", "x_group", "g", "0"]);
    add(&["XGROUP", "CREATECONSUMER", "x_group", "g", "idle"]);
    add(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "bob",
        "COUNT",
        "2",
        "STREAMS",
        "x_group",
        ">",
    ]);
    add(&["XGROUP", "CREATE", "x", "grp", "0"]);
    add(&[
        "XREADGROUP",
        "GROUP",
        "grp",
        "alice",
        "COUNT",
        "3",
        "STREAMS",
        "x",
        ">",
    ]);
    add(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=dumped\nredis.register_function('first', function(keys, args) return 1 end)\nredis.register_function('second', function(keys, args) return 2 end)",
    ]);
    for args in &setup {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        pair.same(&args).await;
    }
    let mut exact = vec![
        "s_short",
        "s_int",
        "s_int64",
        "s_21",
        "s_rep",
        "s_noise",
        "s_x",
        "l_widths",
        "l_many",
        "l_wide",
        "set16",
        "set32",
        "set64",
        "set512",
        "h_small",
        "h_128",
        "z_small",
        "z_fractions",
        "z_128",
        "z_skiplist",
        "z_long_member",
        "x_plain",
    ];
    // A set of strings is a hashtable in Redis 7.0 (its order random), a listpack in Valkey.
    let mut loose = vec![
        ("set_ht129", true),
        ("set_ht_long", true),
        ("h_table", true),
        ("x", false),
        ("x_group", true),
    ];
    let small_string_sets = ["set_table", "set_lp", "set_int_lp", "set_lp128"];
    if valkey {
        exact.extend(small_string_sets);
    } else {
        loose.extend(small_string_sets.map(|key| (key, true)));
    }
    for compression in ["yes", "no"] {
        pair.same(&["CONFIG", "SET", "rdbcompression", compression])
            .await;
        for &key in &exact {
            pair.same(&["OBJECT", "ENCODING", key]).await;
            same_dump(&mut pair, key).await;
        }
        pair.same(&["FUNCTION", "DUMP"]).await;
        // Tables are written in their dict's order (seeded at random per process); a stream
        // with deleted entries and a group: Redis keeps each deleted entry in its node's
        // listpack, flagged, until the node empties (ours keeps the node's counts and last
        // ID), and the group's delivery and consumers' times differ: the encoding, type and
        // length are compared here, the contents by the test above.
        for &(key, same_length) in &loose {
            pair.same(&["OBJECT", "ENCODING", key]).await;
            let ours: Vec<u8> = support::cmd(&["DUMP", key])
                .query_async(&mut pair.ours_con)
                .await
                .unwrap();
            if let Some(real_con) = &mut pair.real_con {
                let theirs: Vec<u8> = support::cmd(&["DUMP", key])
                    .query_async(real_con)
                    .await
                    .unwrap();
                assert_eq!(ours[0], theirs[0], "{key}'s type");
                if same_length {
                    assert_eq!(ours.len(), theirs.len(), "{key}'s length");
                }
            }
        }
    }
    // The stream with a group each way: the reference's payload (type 21 under Valkey, its
    // consumers' seen and active times) restores here and dumps back byte for byte, and ours
    // restores there with the same pending entries.
    if let Some(real_con) = &mut pair.real_con {
        let theirs: Vec<u8> = support::cmd(&["DUMP", "x_group"])
            .query_async(real_con)
            .await
            .unwrap();
        let ours: Vec<u8> = support::cmd(&["DUMP", "x_group"])
            .query_async(&mut pair.ours_con)
            .await
            .unwrap();
        for (con, payload) in [(&mut pair.ours_con, &theirs), (real_con, &ours)] {
            let _: () = redis::cmd("RESTORE")
                .arg("x_back")
                .arg(0)
                .arg(payload.clone())
                .query_async(con)
                .await
                .unwrap();
        }
        let back: Vec<u8> = support::cmd(&["DUMP", "x_back"])
            .query_async(&mut pair.ours_con)
            .await
            .unwrap();
        assert_eq!(back, theirs, "the reference's x_group dumped back");
        pair.same(&["XPENDING", "x_back", "g"]).await;
        if let (true, Some(real_con)) = (valkey, pair.real_con.as_mut()) {
            // Our active times, as Valkey reads them: bob's from his read, none for the
            // consumer that never read (XINFO CONSUMERS' `inactive`, -1).
            let info = support::run(real_con, &["XINFO", "CONSUMERS", "x_back", "g"]).await;
            let inactive: Vec<&str> = info
                .split("\"inactive\"'), ")
                .skip(1)
                .filter_map(|rest| rest.split(')').next())
                .collect();
            assert_eq!(inactive.len(), 2, "{info}");
            assert!(
                inactive[0].starts_with("int(") && !inactive[0].contains('-'),
                "{info}"
            );
            assert_eq!(inactive[1], "int(-1", "{info}");
        }
    }
    // A list cut by count (a positive list-max-listpack-size).
    pair.same(&["CONFIG", "SET", "list-max-listpack-size", "5"])
        .await;
    let mut rpush = vec!["RPUSH", "l_counted"];
    rpush.extend(widths);
    pair.same(&rpush).await;
    same_dump(&mut pair, "l_counted").await;
}

/// SCAN reclaims the expired keys that pass its filters as Redis checks them before expiring:
/// the pattern first (a key it does not match stays), then the type, whose lookup expires a
/// key of any type under Redis 7.0 and only one of the type asked for under Valkey 8.1.
/// Compared with each target's reference.
#[tokio::test]
async fn scan_reclaims_the_expired_keys_its_filters_pass_as_each_target() {
    use locksmith_server::{Compat, EnableCommand, Server};
    for (compat, left_after_type_scan) in [(Compat::Redis70, 1), (Compat::Valkey81, 2)] {
        let ours = Server::builder()
            .compat(compat)
            .enable_debug_command(EnableCommand::Yes)
            .start()
            .await
            .unwrap();
        let real = support::RealRedis::start_reference(
            support::Reference::of(compat),
            &["--enable-debug-command", "yes"],
        );
        let mut sizes = Vec::new();
        for url in support::urls(&ours, &real) {
            let mut con = support::conn(&url).await;
            for args in [
                &["DEBUG", "SET-ACTIVE-EXPIRE", "0"][..],
                &["SET", "a", "1", "PX", "1"],
                &["SET", "b", "1", "PX", "1"],
                &["HSET", "h", "f", "v"],
                &["PEXPIRE", "h", "1"],
                &["SET", "s", "1"],
            ] {
                support::run(&mut con, args).await;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            let mut seen = Vec::new();
            for args in [
                &["SCAN", "0", "MATCH", "a", "COUNT", "100"][..],
                &["DBSIZE"],
                &["SCAN", "0", "TYPE", "string", "COUNT", "100"],
                &["DBSIZE"],
            ] {
                seen.push(support::run(&mut con, args).await);
            }
            sizes.push(seen);
        }
        assert_eq!(
            sizes[0][1], "int(3)",
            "{compat}: the pattern's miss b stays"
        );
        assert_eq!(
            sizes[0][3],
            format!("int({left_after_type_scan})"),
            "{compat}: {:?}",
            sizes[0]
        );
        if let [ours, theirs] = &sizes[..] {
            assert_eq!(ours, theirs, "{compat}: ours, then the reference");
        }
    }
}
