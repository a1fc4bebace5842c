//! MEMORY compared with real Redis: every subcommand, its errors and help text, `MEMORY
//! STATS`'s fields, and `MEMORY USAGE` within a few percent of Redis's numbers for every type
//! and several sizes.

use locksmith_testkit as support;
use redis::Value;
use support::{cmd, Pair};

type Con = redis::aio::MultiplexedConnection;

/// Runs `args`, which must succeed.
async fn ok(con: &mut Con, args: &[&str]) -> Value {
    match cmd(args).query_async(con).await {
        Ok(v) => v,
        Err(e) => panic!("{args:?} failed: {e}"),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::Int(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        other => panic!("not an integer: {other:?}"),
    }
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) | Value::Set(items) => items,
        other => panic!("not an array: {other:?}"),
    }
}

/// `key value key value...` (a RESP2 map) as pairs.
fn pairs(v: &Value) -> Vec<(String, &Value)> {
    match v {
        Value::Map(entries) => entries.iter().map(|(k, v)| (text(k), v)).collect(),
        _ => items(v)
            .chunks(2)
            .map(|kv| (text(&kv[0]), &kv[1]))
            .collect(),
    }
}

/// Keys of every type and several sizes, written the same way on both servers.
async fn fill(con: &mut Con) -> Vec<String> {
    let _ = ok(con, &["FLUSHALL"]).await;
    let mut keys = Vec::new();
    for (key, value) in [
        ("str-int", "12345".to_string()),
        ("str-short", "hello".to_string()),
        ("str-embstr", "a".repeat(44)),
        ("str-raw", "a".repeat(45)),
        ("str-1k", "a".repeat(1000)),
        ("str-100k", "a".repeat(100_000)),
    ] {
        let _ = ok(con, &["SET", key, &value]).await;
        keys.push(key.to_string());
    }
    let scripts = [
        ("list", "redis.call('rpush', KEYS[1], 'element-' .. i)"),
        ("intlist", "redis.call('rpush', KEYS[1], i)"),
        (
            "hash",
            "redis.call('hset', KEYS[1], 'field-' .. i, 'value-' .. i)",
        ),
        ("inthash", "redis.call('hset', KEYS[1], 'f' .. i, i)"),
        ("set", "redis.call('sadd', KEYS[1], 'member-' .. i)"),
        ("intset", "redis.call('sadd', KEYS[1], i)"),
        ("zset", "redis.call('zadd', KEYS[1], i, 'member-' .. i)"),
        ("fzset", "redis.call('zadd', KEYS[1], i + 0.5, 'm' .. i)"),
        (
            "stream",
            "redis.call('xadd', KEYS[1], '*', 'field', 'value-' .. i)",
        ),
    ];
    for n in [1, 10, 100, 129, 1000, 5000] {
        for (kind, body) in scripts {
            let key = format!("{kind}:{n}");
            let script = format!("for i = 1, {n} do {body} end");
            let _ = ok(con, &["EVAL", &script, "1", &key]).await;
            keys.push(key);
        }
    }
    let _ = ok(con, &["XGROUP", "CREATE", "stream:1000", "g1", "0"]).await;
    let _ = ok(
        con,
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "alice",
            "COUNT",
            "300",
            "STREAMS",
            "stream:1000",
            ">",
        ],
    )
    .await;
    keys
}

#[tokio::test]
async fn memory_usage_is_close_to_redis() {
    let mut pair = Pair::start().await;
    let keys = fill(&mut pair.ours_con).await;
    // Strings are exact; small aggregates too.
    for key in [
        "str-int",
        "str-short",
        "str-embstr",
        "str-raw",
        "str-1k",
        "list:10",
        "hash:10",
    ] {
        let usage = int(&ok(&mut pair.ours_con, &["MEMORY", "USAGE", key]).await);
        assert!(usage > 0, "{key}");
    }
    let Some(real) = pair.real_con.as_mut() else {
        return;
    };
    let _ = fill(real).await;
    let mut worst = 0.0f64;
    for key in &keys {
        for samples in ["5", "0"] {
            let args = ["MEMORY", "USAGE", key.as_str(), "SAMPLES", samples];
            let ours = int(&ok(&mut pair.ours_con, &args).await);
            let theirs = int(&ok(real, &args).await);
            let off = (ours - theirs) as f64 / theirs as f64;
            if key.starts_with("str-") || key.ends_with(":1") || key.ends_with(":10") {
                assert_eq!(ours, theirs, "{key} SAMPLES {samples}");
            }
            // Redis's own sampled figures move by ~10 % around its full count.
            assert!(
                off.abs() <= 0.15,
                "{key} SAMPLES {samples}: ours {ours}, redis {theirs}"
            );
            worst = worst.max(off.abs());
        }
    }
    assert!(worst < 0.15, "worst {worst}");
}

#[tokio::test]
async fn memory_subcommands_and_errors_match_redis() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["FLUSHALL"],
        &["SET", "k", "v"],
        &["MEMORY"],
        &["MEMORY", "FOO"],
        &["MEMORY", "HELP"],
        &["MEMORY", "help", "x"],
        &["MEMORY", "USAGE"],
        &["MEMORY", "USAGE", "nosuch"],
        &["MEMORY", "USAGE", "k"],
        &["MEMORY", "USAGE", "k", "SAMPLES"],
        &["MEMORY", "USAGE", "k", "SAMPLES", "x"],
        &["MEMORY", "USAGE", "k", "SAMPLES", "-1"],
        &["MEMORY", "USAGE", "k", "FOO", "1"],
        &["MEMORY", "USAGE", "k", "samples", "5", "SAMPLES", "0"],
        &["MEMORY", "USAGE", "nosuch", "SAMPLES", "x"],
        &["MEMORY", "PURGE"],
        &["MEMORY", "PURGE", "x"],
        &["MEMORY", "STATS", "x"],
        &["MEMORY", "DOCTOR", "x"],
        &["MEMORY", "MALLOC-STATS", "x"],
        // A nearly empty instance: Sam is told so.
        &["MEMORY", "DOCTOR"],
    ])
    .await;
    let stats = ok(&mut pair.ours_con, &["MEMORY", "STATS"]).await;
    let fields: Vec<(String, &Value)> = pairs(&stats);
    let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    let expected = [
        "peak.allocated",
        "total.allocated",
        "startup.allocated",
        "replication.backlog",
        "clients.slaves",
        "clients.normal",
        "cluster.links",
        "aof.buffer",
        "lua.caches",
        "functions.caches",
        "db.0",
        "overhead.total",
        "keys.count",
        "keys.bytes-per-key",
        "dataset.bytes",
        "dataset.percentage",
        "peak.percentage",
        "allocator.allocated",
        "allocator.active",
        "allocator.resident",
        "allocator-fragmentation.ratio",
        "allocator-fragmentation.bytes",
        "allocator-rss.ratio",
        "allocator-rss.bytes",
        "rss-overhead.ratio",
        "rss-overhead.bytes",
        "fragmentation",
        "fragmentation.bytes",
    ];
    assert_eq!(names, expected);
    let db: Vec<(String, String)> = pairs(fields[10].1)
        .into_iter()
        .map(|(k, v)| (k, text(v)))
        .collect();
    // One key: its dict entry and object header, and the table's four buckets.
    assert_eq!(
        db,
        [
            ("overhead.hashtable.main".to_string(), "72".to_string()),
            ("overhead.hashtable.expires".into(), "0".into()),
            ("overhead.hashtable.slot-to-keys".into(), "0".into()),
        ]
    );
    assert_eq!(text(fields[12].1), "1");
    let malloc = text(&ok(&mut pair.ours_con, &["MEMORY", "MALLOC-STATS"]).await);
    assert!(!malloc.is_empty());
    if let Some(real) = pair.real_con.as_mut() {
        let stats = ok(real, &["MEMORY", "STATS"]).await;
        let real_names: Vec<String> = pairs(&stats).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, real_names);
        let real_db: Vec<(String, String)> = pairs(pairs(&stats)[10].1)
            .into_iter()
            .map(|(k, v)| (k, text(v)))
            .collect();
        assert_eq!(db, real_db);
    }
}
