//! Every configuration parameter the server honours changes behaviour when set: one test per
//! parameter, named `config_<parameter>` (dashes as underscores), by `CONFIG SET` on a running
//! server, or as a start-up setting for the parameters Redis makes immutable or protected.
//! `every_honoured_parameter_has_its_test` keeps the list complete.

use locksmith_server::control::LinkControl;
use locksmith_server::{EnableCommand, Server, ServerHandle};
use locksmith_testkit as support;
use redis::aio::MultiplexedConnection as Con;
use std::sync::Arc;
use std::time::Duration;
use support::{cmd, conn, error_text, info_field, Wire};

/// Runs `args`, which must succeed, and returns its reply.
async fn ok<T: redis::FromRedisValue>(con: &mut Con, args: &[&str]) -> T {
    match cmd(args).query_async(con).await {
        Ok(v) => v,
        Err(e) => panic!("{args:?} failed: {e}"),
    }
}

/// Runs `args`, which must fail, and returns the error line.
async fn err(con: &mut Con, args: &[&str]) -> String {
    match cmd(args).query_async::<redis::Value>(con).await {
        Ok(v) => panic!("{args:?} succeeded with {v:?}"),
        Err(e) => error_text(&e),
    }
}

async fn config_set(con: &mut Con, name: &str, value: &str) {
    let () = ok(con, &["CONFIG", "SET", name, value]).await;
}

async fn server_with(settings: &[(&str, &str)]) -> ServerHandle {
    let mut builder = Server::builder();
    for (name, value) in settings {
        builder = builder.config_set(*name, *value);
    }
    builder.start().await.unwrap()
}

async fn start() -> (ServerHandle, Con) {
    let server = support::start().await;
    let con = conn(&server.url()).await;
    (server, con)
}

#[test]
fn every_honoured_parameter_has_its_test() {
    let source = include_str!("config_live.rs");
    let missing: Vec<&str> = locksmith_server::honoured_parameters()
        .filter(|name| {
            let test = format!("fn config_{}(", name.replace('-', "_"));
            !source.contains(&test)
        })
        .collect();
    assert!(missing.is_empty(), "no behaviour test for {missing:?}");
    assert!(locksmith_server::honoured_parameters().count() >= 25);
}

#[tokio::test]
async fn config_requirepass() {
    let (server, mut con) = start().await;
    config_set(&mut con, "requirepass", "s3cret").await;
    let mut fresh = conn(&server.url()).await;
    assert!(err(&mut fresh, &["GET", "k"]).await.starts_with("NOAUTH"));
    let () = ok(&mut fresh, &["AUTH", "s3cret"]).await;
    let () = ok(&mut fresh, &["CONFIG", "SET", "requirepass", ""]).await;
    let mut open = conn(&server.url()).await;
    let pong: String = ok(&mut open, &["PING"]).await;
    assert_eq!(pong, "PONG");
}

#[tokio::test]
async fn config_busy_reply_threshold() {
    let (server, mut con) = start().await;
    config_set(&mut con, "busy-reply-threshold", "20").await;
    let url = server.url();
    // A script that runs until killed (or 30 s, a hang guard).
    let script = tokio::spawn(async move {
        let mut con = support::patient_conn(&url).await;
        let body = "local t = redis.call('TIME') local s = tonumber(t[1]) \
                    while tonumber(redis.call('TIME')[1]) < s + 30 do end";
        cmd(&["EVAL", body, "0"])
            .query_async::<redis::Value>(&mut con)
            .await
    });
    let mut busy = None;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        match cmd(&["PING"]).query_async::<String>(&mut con).await {
            Err(e) if error_text(&e).starts_with("BUSY") => {
                busy = Some(error_text(&e));
                break;
            }
            _ => continue,
        }
    }
    let () = ok(&mut con, &["SCRIPT", "KILL"]).await;
    let killed = script.await.unwrap().unwrap_err();
    assert!(error_text(&killed).contains("Script killed by user"));
    assert!(busy.is_some(), "a script past 20 ms never made PING busy");
}

#[tokio::test]
async fn config_maxclients() {
    let (server, mut con) = start().await;
    config_set(&mut con, "maxclients", "1").await;
    let refused = support::raw(server.addr(), b"PING\r\n").await;
    assert_eq!(refused, b"-ERR max number of clients reached\r\n");
    config_set(&mut con, "maxclients", "10").await;
    assert_eq!(support::raw(server.addr(), b"PING\r\n").await, b"+PONG\r\n");
}

#[tokio::test]
async fn config_proto_max_bulk_len() {
    let (_server, mut con) = start().await;
    config_set(&mut con, "proto-max-bulk-len", "1mb").await;
    assert_eq!(
        err(&mut con, &["SETRANGE", "k", "2000000", "x"]).await,
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    );
    config_set(&mut con, "proto-max-bulk-len", "4mb").await;
    let len: i64 = ok(&mut con, &["SETRANGE", "k", "2000000", "x"]).await;
    assert_eq!(len, 2_000_001);
}

#[tokio::test]
async fn config_client_query_buffer_limit() {
    let (server, mut con) = start().await;
    // Half of an argument of 3 MB: the unprocessed input grows past the limit.
    let mut request = b"*2\r\n$4\r\nECHO\r\n$3000000\r\n".to_vec();
    request.extend(std::iter::repeat_n(b'x', 1_500_000));
    config_set(&mut con, "client-query-buffer-limit", "1mb").await;
    let mut wire = Wire::connect(server.addr()).await;
    wire.send_raw(&request).await;
    assert!(wire.drain_to_eof(Duration::from_secs(10)).await.is_some());
    config_set(&mut con, "client-query-buffer-limit", "16mb").await;
    let mut wire = Wire::connect(server.addr()).await;
    wire.send_raw(&request).await;
    assert!(wire
        .drain_to_eof(Duration::from_millis(300))
        .await
        .is_none());
}

#[tokio::test]
async fn config_timeout() {
    let (server, mut con) = start().await;
    config_set(&mut con, "timeout", "1").await;
    let mut idle = Wire::connect(server.addr()).await;
    assert!(idle.drain_to_eof(Duration::from_secs(10)).await.is_some());
}

#[tokio::test]
async fn config_maxmemory() {
    let (_server, mut con) = start().await;
    config_set(&mut con, "maxmemory", "1").await;
    assert!(err(&mut con, &["SET", "k", "v"]).await.starts_with("OOM"));
    config_set(&mut con, "maxmemory", "0").await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
}

#[tokio::test]
async fn config_maxmemory_policy() {
    let (_server, mut con) = start().await;
    let used: u64 = info_field(&mut con, "memory", "used_memory")
        .await
        .parse()
        .unwrap();
    config_set(&mut con, "maxmemory", &(used + 100_000).to_string()).await;
    config_set(&mut con, "maxmemory-policy", "allkeys-random").await;
    let value = "v".repeat(1000);
    for i in 0..300 {
        let () = ok(&mut con, &["SET", &format!("k{i}"), &value]).await;
    }
    let keys: u64 = ok(&mut con, &["DBSIZE"]).await;
    assert!(keys < 300, "allkeys-random evicted nothing");
    config_set(&mut con, "maxmemory-policy", "noeviction").await;
    let mut refused = false;
    for i in 300..600 {
        if cmd(&["SET", &format!("k{i}"), &value])
            .query_async::<()>(&mut con)
            .await
            .is_err()
        {
            refused = true;
            break;
        }
    }
    assert!(refused, "noeviction never refused a write");
}

#[tokio::test]
async fn config_lfu_log_factor() {
    let (_server, mut con) = start().await;
    config_set(&mut con, "maxmemory-policy", "allkeys-lfu").await;
    config_set(&mut con, "lfu-log-factor", "0").await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
    for _ in 0..20 {
        let _: String = ok(&mut con, &["GET", "k"]).await;
    }
    // With a log factor of 0 every access counts: 5 (a new key) + 20.
    let freq: i64 = ok(&mut con, &["OBJECT", "FREQ", "k"]).await;
    assert_eq!(freq, 25);
    config_set(&mut con, "lfu-log-factor", "100").await;
    let () = ok(&mut con, &["SET", "j", "v"]).await;
    for _ in 0..20 {
        let _: String = ok(&mut con, &["GET", "j"]).await;
    }
    let freq: i64 = ok(&mut con, &["OBJECT", "FREQ", "j"]).await;
    assert!(freq < 25, "a log factor of 100 still counted every access");
}

#[tokio::test]
async fn config_lfu_decay_time() {
    let (server, mut con) = start().await;
    config_set(&mut con, "maxmemory-policy", "allkeys-lfu").await;
    config_set(&mut con, "lfu-log-factor", "0").await;
    config_set(&mut con, "lfu-decay-time", "0").await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
    for _ in 0..20 {
        let _: String = ok(&mut con, &["GET", "k"]).await;
    }
    server.clock().shift(10 * 60_000);
    let freq: i64 = ok(&mut con, &["OBJECT", "FREQ", "k"]).await;
    assert_eq!(freq, 25, "a decay time of 0 never decays");
    // One per minute: ten minutes later the counter is ten lower.
    config_set(&mut con, "lfu-decay-time", "1").await;
    server.clock().shift(10 * 60_000);
    let freq: i64 = ok(&mut con, &["OBJECT", "FREQ", "k"]).await;
    assert!(
        freq < 25,
        "a decay time of 1 did not decay after 10 minutes"
    );
}

#[tokio::test]
async fn config_min_replicas_to_write() {
    let (_server, mut con) = start().await;
    config_set(&mut con, "min-replicas-to-write", "1").await;
    assert_eq!(
        err(&mut con, &["SET", "k", "v"]).await,
        "NOREPLICAS Not enough good replicas to write."
    );
    config_set(&mut con, "min-replicas-to-write", "0").await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
}

#[tokio::test]
async fn config_min_replicas_max_lag() {
    let (master, mut con) = start().await;
    let replica = support::start().await;
    // A replica whose link delivers 3 s late: good while the max lag is at least 3 s.
    let link = LinkControl::new(Duration::from_secs(3), Duration::ZERO, false);
    let _link = master
        .control()
        .attach_replica(
            master.addr(),
            &replica.control(),
            replica.addr(),
            Arc::new(link),
            1,
        )
        .await;
    config_set(&mut con, "min-replicas-to-write", "1").await;
    config_set(&mut con, "min-replicas-max-lag", "10").await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
    config_set(&mut con, "min-replicas-max-lag", "1").await;
    assert_eq!(
        err(&mut con, &["SET", "k", "v"]).await,
        "NOREPLICAS Not enough good replicas to write."
    );
    // 0 turns the check off, as in Redis.
    config_set(&mut con, "min-replicas-max-lag", "0").await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
}

#[tokio::test]
async fn config_notify_keyspace_events() {
    let (server, mut con) = start().await;
    let mut sub = Wire::connect(server.addr()).await;
    sub.call(&[&["SUBSCRIBE", "__keyspace@0__:k", "marker"]], 2)
        .await;
    // Off (the default): the SET raises nothing, the marker arrives first.
    let () = ok(&mut con, &["SET", "k", "1"]).await;
    let _: i64 = ok(&mut con, &["PUBLISH", "marker", "1"]).await;
    let first = String::from_utf8_lossy(&sub.frame().await).into_owned();
    assert!(first.contains("marker"), "{first}");
    config_set(&mut con, "notify-keyspace-events", "KA").await;
    let () = ok(&mut con, &["SET", "k", "2"]).await;
    let event = String::from_utf8_lossy(&sub.frame().await).into_owned();
    assert!(
        event.contains("__keyspace@0__:k") && event.contains("set"),
        "{event}"
    );
}

#[tokio::test]
async fn config_client_output_buffer_limit() {
    let (server, mut con) = start().await;
    // Pub/sub class: a subscriber that does not read is dropped past 1 MB.
    config_set(&mut con, "client-output-buffer-limit", "pubsub 1mb 0 0").await;
    let mut sub = Wire::connect(server.addr()).await;
    sub.call(&[&["SUBSCRIBE", "ch"]], 1).await;
    let message = "m".repeat(256 * 1024);
    let mut dropped = false;
    for _ in 0..400 {
        let receivers: i64 = ok(&mut con, &["PUBLISH", "ch", &message]).await;
        if receivers == 0 {
            dropped = true;
            break;
        }
    }
    assert!(dropped, "the subscriber was never dropped");
    // Normal class: a client that pipelines big replies without reading is dropped.
    config_set(&mut con, "client-output-buffer-limit", "normal 1mb 0 0").await;
    let () = ok(&mut con, &["SET", "big", &message]).await;
    let mut greedy = Wire::connect(server.addr()).await;
    let gets: Vec<&[&str]> = vec![&["GET", "big"]; 200];
    greedy.send(&gets).await;
    let read = greedy.drain_to_eof(Duration::from_secs(10)).await;
    let read = read.expect("the client was never dropped");
    assert!(
        read < 200 * message.len(),
        "every reply arrived: {read} bytes"
    );
}

#[tokio::test]
async fn config_hz() {
    let (_server, mut con) = start().await;
    config_set(&mut con, "hz", "100").await;
    assert_eq!(info_field(&mut con, "server", "hz").await, "100");
    config_set(&mut con, "hz", "1").await;
    assert_eq!(info_field(&mut con, "server", "hz").await, "1");
}

/// The active expiry cycle under `active-expire-effort` `effort` and `hz 500` (a slow cycle
/// every 2 ms), on tokio's paused clock: a wave of 40 000 keys falls due at once; returns
/// `expired_keys` and `expired_time_cap_reached_count` once they are all reclaimed.
async fn expire_wave(effort: &str) -> (String, u64) {
    let (server, mut con) = start().await;
    config_set(&mut con, "hz", "500").await;
    config_set(&mut con, "active-expire-effort", effort).await;
    let shown: Vec<String> = ok(&mut con, &["CONFIG", "GET", "active-expire-effort"]).await;
    assert_eq!(shown, ["active-expire-effort", effort]);
    // One deadline for every key, an hour of virtual time ahead.
    let (secs, _): (u64, u64) = ok(&mut con, &["TIME"]).await;
    let at = (secs + 3600) * 1000;
    let script = "for i = 1, 40000 do redis.call('SET', 'k' .. i, 'v', 'PXAT', ARGV[1]) end";
    let () = ok(&mut con, &["EVAL", script, "0", &at.to_string()]).await;
    tokio::time::advance(Duration::from_secs(3600)).await;
    let mut size = -1;
    // Bounded: 1000 periods of virtual time.
    for _ in 0..1000 {
        size = ok(&mut con, &["DBSIZE"]).await;
        if size == 0 {
            break;
        }
        tokio::time::advance(Duration::from_millis(2)).await;
    }
    assert_eq!(size, 0);
    let expired = info_field(&mut con, "stats", "expired_keys").await;
    let capped = info_field(&mut con, "stats", "expired_time_cap_reached_count").await;
    server.shutdown().await;
    (expired, capped.parse().unwrap())
}

/// The effort sets a cycle's budget (Redis: 25 % of the period + 2 % a step above 1). The
/// paused clock does not move while a cycle runs, so the budget counts in keys (64 a µs):
/// 500 µs, 32 000 keys, at effort 1, where the wave's first cycle stops short and fast cycles
/// finish; 860 µs, 55 040 keys, at effort 10, where one cycle takes the whole wave.
#[tokio::test(start_paused = true)]
async fn config_active_expire_effort() {
    let (expired, capped) = expire_wave("1").await;
    assert_eq!(expired, "40000");
    assert!(capped >= 1, "{capped}");
    let (expired, capped) = expire_wave("10").await;
    assert_eq!(expired, "40000");
    assert_eq!(capped, 0);
    // Redis's range, 1 to 10.
    let (_server, mut con) = start().await;
    for bad in ["0", "11"] {
        let e = err(&mut con, &["CONFIG", "SET", "active-expire-effort", bad]).await;
        assert!(
            e.contains("argument must be between 1 and 10 inclusive"),
            "{e}"
        );
    }
}

async fn encoding(con: &mut Con, key: &str) -> String {
    ok(con, &["OBJECT", "ENCODING", key]).await
}

/// HSETs `n` fields `f0..` with short values into `key`.
async fn hash_of(con: &mut Con, key: &str, n: usize) {
    let mut args = vec!["HSET".to_string(), key.to_string()];
    for i in 0..n {
        args.push(format!("f{i}"));
        args.push(i.to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let _: i64 = ok(con, &args).await;
}

#[tokio::test]
async fn config_hash_max_listpack_entries() {
    let (_server, mut con) = start().await;
    config_set(&mut con, "hash-max-listpack-entries", "4").await;
    hash_of(&mut con, "h", 4).await;
    assert_eq!(encoding(&mut con, "h").await, "listpack");
    let _: i64 = ok(&mut con, &["HSET", "h", "f4", "4"]).await;
    assert_eq!(encoding(&mut con, "h").await, "hashtable");
    // The old name is an alias; 600 fields stay a listpack under 1000.
    config_set(&mut con, "hash-max-ziplist-entries", "1000").await;
    let shown: Vec<String> = ok(&mut con, &["CONFIG", "GET", "hash-max-listpack-entries"]).await;
    assert_eq!(shown, ["hash-max-listpack-entries", "1000"]);
    hash_of(&mut con, "big", 600).await;
    assert_eq!(encoding(&mut con, "big").await, "listpack");
    let fields: Vec<String> = ok(&mut con, &["HKEYS", "big"]).await;
    let in_order: Vec<String> = (0..600).map(|i| format!("f{i}")).collect();
    assert_eq!(fields, in_order);
    // RESTORE converts as the limit is when it runs (Redis's rdbLoadObject).
    let dump: Vec<u8> = ok(&mut con, &["DUMP", "big"]).await;
    config_set(&mut con, "hash-max-listpack-entries", "2").await;
    let () = cmd(&["RESTORE", "copy", "0"])
        .arg(dump)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(encoding(&mut con, "copy").await, "hashtable");
    let n: i64 = ok(&mut con, &["HLEN", "copy"]).await;
    assert_eq!(n, 600);
}

#[tokio::test]
async fn config_hash_max_listpack_value() {
    let (_server, mut con) = start().await;
    let long = "x".repeat(100);
    // Redis's default, 64 bytes.
    let _: i64 = ok(&mut con, &["HSET", "h", "a", "1", "b", &long]).await;
    assert_eq!(encoding(&mut con, "h").await, "hashtable");
    // Under a larger bound the same hash stays a listpack, in insertion order (Redis's suite,
    // "Hash ziplist of various encodings").
    config_set(&mut con, "hash-max-listpack-value", "1000").await;
    let _: i64 = ok(&mut con, &["HSET", "h2", "z", "1", "b", &long, "a", "2"]).await;
    assert_eq!(encoding(&mut con, "h2").await, "listpack");
    let fields: Vec<String> = ok(&mut con, &["HKEYS", "h2"]).await;
    assert_eq!(fields, ["z", "b", "a"]);
    // A value HINCRBY makes longer than the bound converts the hash, as hashTypeSet does.
    config_set(&mut con, "hash-max-ziplist-value", "10").await;
    let _: i64 = ok(&mut con, &["HSET", "n", "c", "999999999"]).await;
    assert_eq!(encoding(&mut con, "n").await, "listpack");
    let _: i64 = ok(&mut con, &["HINCRBY", "n", "c", "100"]).await;
    assert_eq!(encoding(&mut con, "n").await, "listpack");
    let v: i64 = ok(&mut con, &["HINCRBY", "n", "c", "10000000000"]).await;
    assert_eq!(v, 11_000_000_099);
    assert_eq!(encoding(&mut con, "n").await, "hashtable");
    let v: String = ok(&mut con, &["HGET", "n", "c"]).await;
    assert_eq!(v, "11000000099");
}

/// Whether the HyperLogLog at `key` is in the sparse encoding (Redis's header byte 4).
async fn hll_is_sparse(con: &mut Con, key: &str) -> bool {
    let header: Vec<u8> = ok(con, &["GETRANGE", key, "4", "4"]).await;
    header == [1]
}

#[tokio::test]
async fn config_hll_sparse_max_bytes() {
    let (_server, mut con) = start().await;
    let _: i64 = ok(&mut con, &["PFADD", "sparse", "a", "b", "c"]).await;
    assert!(hll_is_sparse(&mut con, "sparse").await);
    config_set(&mut con, "hll-sparse-max-bytes", "0").await;
    let _: i64 = ok(&mut con, &["PFADD", "dense", "a", "b", "c"]).await;
    assert!(!hll_is_sparse(&mut con, "dense").await);
}

/// `radix-tree-keys` of `XINFO STREAM key`: the stream's nodes.
async fn stream_nodes(con: &mut Con, key: &str) -> i64 {
    let info: Vec<redis::Value> = ok(con, &["XINFO", "STREAM", key]).await;
    let at = info
        .iter()
        .position(|v| matches!(v, redis::Value::BulkString(b) if b == b"radix-tree-keys"))
        .expect("XINFO STREAM has radix-tree-keys");
    match info.get(at + 1) {
        Some(redis::Value::Int(n)) => *n,
        other => panic!("radix-tree-keys is {other:?}"),
    }
}

async fn fill_stream(con: &mut Con, key: &str) {
    for _ in 0..10 {
        let _: String = ok(con, &["XADD", key, "*", "field", "value"]).await;
    }
}

#[tokio::test]
async fn config_stream_node_max_entries() {
    let (_server, mut con) = start().await;
    fill_stream(&mut con, "one-node").await;
    assert_eq!(stream_nodes(&mut con, "one-node").await, 1);
    config_set(&mut con, "stream-node-max-entries", "2").await;
    fill_stream(&mut con, "five-nodes").await;
    assert_eq!(stream_nodes(&mut con, "five-nodes").await, 5);
}

#[tokio::test]
async fn config_stream_node_max_bytes() {
    let (_server, mut con) = start().await;
    config_set(&mut con, "stream-node-max-bytes", "1").await;
    fill_stream(&mut con, "s").await;
    assert!(stream_nodes(&mut con, "s").await > 1);
}

/// A fresh directory under the system's temporary one, removed by the caller.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("locksmith-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn config_dir() {
    let dir = temp_dir("config-dir");
    let server = server_with(&[("dir", &dir.display().to_string())]).await;
    let mut con = conn(&server.url()).await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
    let () = ok(&mut con, &["SAVE"]).await;
    assert!(dir.join("dump.rdb").is_file());
    // Protected, as in Redis: not changed at run time.
    assert!(err(&mut con, &["CONFIG", "SET", "dir", "/"])
        .await
        .contains("can't set protected config"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn config_dbfilename() {
    let dir = temp_dir("config-dbfilename");
    let server = server_with(&[
        ("dir", &dir.display().to_string()),
        ("dbfilename", "fixture.rdb"),
    ])
    .await;
    let mut con = conn(&server.url()).await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
    let () = ok(&mut con, &["SAVE"]).await;
    assert!(dir.join("fixture.rdb").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn config_databases() {
    let server = server_with(&[("databases", "2")]).await;
    let mut con = conn(&server.url()).await;
    let () = ok(&mut con, &["SELECT", "1"]).await;
    assert_eq!(
        err(&mut con, &["SELECT", "2"]).await,
        "ERR DB index is out of range"
    );
}

#[tokio::test]
async fn config_cluster_enabled() {
    let (_server, mut con) = start().await;
    assert!(err(&mut con, &["CLUSTER", "INFO"])
        .await
        .contains("cluster support disabled"));
    let server = server_with(&[("cluster-enabled", "yes")]).await;
    let mut con = conn(&server.url()).await;
    let info: String = ok(&mut con, &["CLUSTER", "INFO"]).await;
    assert!(info.contains("cluster_state:ok"), "{info}");
}

#[tokio::test]
async fn config_enable_debug_command() {
    let (_server, mut con) = start().await;
    assert!(err(&mut con, &["DEBUG", "SLEEP", "0"])
        .await
        .starts_with("ERR DEBUG command not allowed"));
    let server = Server::builder()
        .enable_debug_command(EnableCommand::Local)
        .start()
        .await
        .unwrap();
    let mut con = conn(&server.url()).await;
    let () = ok(&mut con, &["DEBUG", "SLEEP", "0"]).await;
}

/// MODULE LOAD, LOADEX and UNLOAD are refused unless `enable-module-command` allows the
/// client; allowed, they fail as Redis's do for a library that cannot load (no module API
/// here), while MODULE LIST needs no permission.
#[tokio::test]
async fn config_enable_module_command() {
    let (_server, mut con) = start().await;
    for args in [
        &["MODULE", "LOAD", "/no/such.so"][..],
        &["MODULE", "LOADEX", "/no/such.so", "ARGS", "a"],
        &["MODULE", "UNLOAD", "m"],
    ] {
        assert!(err(&mut con, args)
            .await
            .starts_with("ERR MODULE command not allowed. If the enable-module-command option"));
    }
    let listed: Vec<String> = ok(&mut con, &["MODULE", "LIST"]).await;
    assert!(listed.is_empty());
    let server = server_with(&[("enable-module-command", "local")]).await;
    let mut con = conn(&server.url()).await;
    assert_eq!(
        err(&mut con, &["MODULE", "LOAD", "/no/such.so"]).await,
        "ERR Error loading the extension. Please check the server logs."
    );
    assert_eq!(
        err(&mut con, &["MODULE", "UNLOAD", "m"]).await,
        "ERR Error unloading module: no such module with that name"
    );
    let shown: Vec<String> = ok(&mut con, &["CONFIG", "GET", "enable-module-command"]).await;
    assert_eq!(shown, ["enable-module-command", "local"]);
}

#[tokio::test]
async fn config_tcp_backlog() {
    let server = server_with(&[("tcp-backlog", "8")]).await;
    let mut con = conn(&server.url()).await;
    let shown: Vec<String> = ok(&mut con, &["CONFIG", "GET", "tcp-backlog"]).await;
    assert_eq!(shown, ["tcp-backlog", "8"]);
    // The listener was made with it and accepts.
    let pong: String = ok(&mut con, &["PING"]).await;
    assert_eq!(pong, "PONG");
    assert!(Server::builder()
        .config_set("tcp-backlog", "-1")
        .start()
        .await
        .is_err());
}

#[tokio::test]
async fn config_port() {
    let (server, mut con) = start().await;
    let port = server.addr().port().to_string();
    let shown: Vec<String> = ok(&mut con, &["CONFIG", "GET", "port"]).await;
    assert_eq!(shown, ["port", port.as_str()]);
    // Setting the port it has is accepted; moving the listener is not.
    config_set(&mut con, "port", &port).await;
    let other = if port == "1" { "2" } else { "1" };
    assert!(err(&mut con, &["CONFIG", "SET", "port", other])
        .await
        .contains("Unable to listen on this port"));
}

#[tokio::test]
async fn config_bind() {
    let server = Server::builder()
        .bind([127, 0, 0, 1].into())
        .start()
        .await
        .unwrap();
    assert!(server.addr().ip().is_loopback());
    let mut con = conn(&server.url()).await;
    let shown: Vec<String> = ok(&mut con, &["CONFIG", "GET", "bind"]).await;
    assert_eq!(shown, ["bind", "127.0.0.1"]);
    assert!(err(&mut con, &["CONFIG", "SET", "bind", "127.0.0.2"])
        .await
        .contains("Failed to bind to specified addresses."));
}

/// The argument vectors in `SLOWLOG GET count`, newest first.
async fn slowlog_commands(con: &mut Con, count: &str) -> Vec<Vec<String>> {
    let entries: Vec<redis::Value> = ok(con, &["SLOWLOG", "GET", count]).await;
    entries
        .iter()
        .map(|e| match e {
            redis::Value::Array(fields) => match fields.get(3) {
                Some(argv) => redis::from_redis_value(argv.clone()).unwrap(),
                None => panic!("short entry {e:?}"),
            },
            other => panic!("not an entry: {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn config_slowlog_log_slower_than() {
    let (_server, mut con) = start().await;
    // Negative: off.
    config_set(&mut con, "slowlog-log-slower-than", "-1").await;
    let () = ok(&mut con, &["SLOWLOG", "RESET"]).await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
    let len: i64 = ok(&mut con, &["SLOWLOG", "LEN"]).await;
    assert_eq!(len, 0);
    // 0: every command, the CONFIG SET that turned it on included (as Redis applies it).
    config_set(&mut con, "slowlog-log-slower-than", "0").await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
    assert_eq!(
        slowlog_commands(&mut con, "2").await,
        [
            vec!["SET", "k", "v"],
            vec!["CONFIG", "SET", "slowlog-log-slower-than", "0"]
        ]
    );
    // CONFIG RESETSTAT leaves the slow log alone, as in Redis.
    let () = ok(&mut con, &["CONFIG", "RESETSTAT"]).await;
    let len: i64 = ok(&mut con, &["SLOWLOG", "LEN"]).await;
    assert_eq!(len, 4);
    // An hour: nothing this test runs.
    config_set(&mut con, "slowlog-log-slower-than", "3600000000").await;
    let () = ok(&mut con, &["SLOWLOG", "RESET"]).await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
    let len: i64 = ok(&mut con, &["SLOWLOG", "LEN"]).await;
    assert_eq!(len, 0);
    assert!(err(
        &mut con,
        &["CONFIG", "SET", "slowlog-log-slower-than", "-2"]
    )
    .await
    .contains("argument must be between -1 and 9223372036854775807 inclusive"));
}

#[tokio::test]
async fn config_slowlog_max_len() {
    let (_server, mut con) = start().await;
    config_set(&mut con, "slowlog-log-slower-than", "0").await;
    config_set(&mut con, "slowlog-max-len", "3").await;
    for i in 0..10 {
        let () = ok(&mut con, &["SET", "k", &i.to_string()]).await;
    }
    let len: i64 = ok(&mut con, &["SLOWLOG", "LEN"]).await;
    assert_eq!(len, 3);
    assert_eq!(
        slowlog_commands(&mut con, "-1").await,
        [
            vec!["SLOWLOG", "LEN"],
            vec!["SET", "k", "9"],
            vec!["SET", "k", "8"]
        ]
    );
    // 0 keeps nothing.
    config_set(&mut con, "slowlog-max-len", "0").await;
    let len: i64 = ok(&mut con, &["SLOWLOG", "LEN"]).await;
    assert_eq!(len, 0);
}

#[tokio::test]
async fn config_latency_monitor_threshold() {
    let server = Server::builder()
        .enable_debug_command(EnableCommand::Yes)
        .start()
        .await
        .unwrap();
    let mut con = conn(&server.url()).await;
    // 0: off, even for a 20 ms command.
    let () = ok(&mut con, &["DEBUG", "SLEEP", "0.02"]).await;
    let latest: Vec<redis::Value> = ok(&mut con, &["LATENCY", "LATEST"]).await;
    assert!(latest.is_empty());
    // 1 ms: the sleep is a `command` event of at least 20 ms.
    config_set(&mut con, "latency-monitor-threshold", "1").await;
    let () = ok(&mut con, &["DEBUG", "SLEEP", "0.02"]).await;
    let latest: Vec<(String, i64, i64, i64)> = ok(&mut con, &["LATENCY", "LATEST"]).await;
    assert_eq!(latest.len(), 1);
    assert_eq!(latest[0].0, "command");
    assert!(latest[0].2 >= 20, "{latest:?}");
    assert!(err(
        &mut con,
        &["CONFIG", "SET", "latency-monitor-threshold", "-1"]
    )
    .await
    .contains("argument must be between 0 and 9223372036854775807 inclusive"));
}

#[tokio::test]
async fn config_tracking_table_max_keys() {
    let (server, mut con) = start().await;
    // A RESP3 reader tracking three keys; the limit evicts two of them, each with an
    // invalidation pushed to the reader.
    let mut reader = Wire::connect(server.addr()).await;
    reader
        .call(
            &[
                &["HELLO", "3"],
                &["CLIENT", "TRACKING", "ON"],
                &["MGET", "a", "b", "c"],
            ],
            3,
        )
        .await;
    assert_eq!(
        info_field(&mut con, "stats", "tracking_total_keys").await,
        "3"
    );
    config_set(&mut con, "tracking-table-max-keys", "1").await;
    let pushes = reader.frames(2).await;
    for push in &pushes {
        assert!(push.starts_with(b">2\r\n$10\r\ninvalidate\r\n"), "{push:?}");
    }
    assert_eq!(
        info_field(&mut con, "stats", "tracking_total_keys").await,
        "1"
    );
    // 0: no limit.
    config_set(&mut con, "tracking-table-max-keys", "0").await;
    reader.call(&[&["MGET", "d", "e", "f"]], 1).await;
    assert_eq!(
        info_field(&mut con, "stats", "tracking_total_keys").await,
        "4"
    );
}

/// `lazyfreed_objects` once nothing waits to be freed (at most 10 s).
async fn lazyfreed(con: &mut Con) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while info_field(con, "memory", "lazyfree_pending_objects").await != "0" {
        assert!(
            std::time::Instant::now() < deadline,
            "lazy free did not drain"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    info_field(con, "memory", "lazyfreed_objects").await
}

#[tokio::test]
async fn config_lazyfree_lazy_user_del() {
    let (_server, mut con) = start().await;
    let members: Vec<String> = (0..100).map(|i| i.to_string() + "m").collect();
    for lazy in ["no", "yes"] {
        config_set(&mut con, "lazyfree-lazy-user-del", lazy).await;
        let mut sadd = cmd(&["SADD", "set"]);
        sadd.arg(&members);
        let _: i64 = sadd.query_async(&mut con).await.unwrap();
        let _: i64 = ok(&mut con, &["DEL", "set"]).await;
    }
    // Only the DEL under `yes` freed its 100 members off the command path.
    assert_eq!(lazyfreed(&mut con).await, "1");
}

#[tokio::test]
async fn config_lazyfree_lazy_user_flush() {
    let (_server, mut con) = start().await;
    for lazy in ["no", "yes"] {
        config_set(&mut con, "lazyfree-lazy-user-flush", lazy).await;
        let () = ok(&mut con, &["MSET", "a", "1", "b", "2", "c", "3"]).await;
        let () = ok(&mut con, &["FLUSHALL"]).await;
    }
    // The keys of the second FLUSHALL only.
    assert_eq!(lazyfreed(&mut con).await, "3");
}

#[tokio::test]
async fn config_repl_backlog_size() {
    let (master, mut con) = start().await;
    let (_replica, mut replica_con) = start().await;
    let port = master.addr().port().to_string();
    let () = ok(&mut replica_con, &["REPLICAOF", "127.0.0.1", &port]).await;
    // The backlog exists once a replica attached.
    for _ in 0..500 {
        if info_field(&mut con, "replication", "repl_backlog_active").await == "1" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    config_set(&mut con, "repl-backlog-size", "16384").await;
    let value = "x".repeat(1000);
    for i in 0..40 {
        let () = ok(&mut con, &["SET", &format!("k{i}"), &value]).await;
    }
    assert_eq!(
        info_field(&mut con, "replication", "repl_backlog_size").await,
        "16384"
    );
    assert_eq!(
        info_field(&mut con, "replication", "repl_backlog_histlen").await,
        "16384"
    );
    let first: u64 = info_field(&mut con, "replication", "repl_backlog_first_byte_offset")
        .await
        .parse()
        .unwrap();
    let end: u64 = info_field(&mut con, "replication", "master_repl_offset")
        .await
        .parse()
        .unwrap();
    assert_eq!(end + 1 - first, 16384);
}

#[tokio::test]
async fn config_replica_read_only() {
    let (master, _master_con) = start().await;
    let (_replica, mut con) = start().await;
    let port = master.addr().port().to_string();
    let () = ok(&mut con, &["REPLICAOF", "127.0.0.1", &port]).await;
    assert_eq!(
        err(&mut con, &["SET", "k", "v"]).await,
        "READONLY You can't write against a read only replica."
    );
    config_set(&mut con, "replica-read-only", "no").await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
    config_set(&mut con, "replica-read-only", "yes").await;
    assert!(err(&mut con, &["DEL", "k"]).await.starts_with("READONLY"));
}

#[tokio::test]
async fn config_replica_serve_stale_data() {
    // A replica of a master that is not there: its link stays down.
    let nobody = support::free_port().to_string();
    let (_ours, ours_con) = start().await;
    let real = support::RealRedis::start();
    let mut cons = vec![ours_con];
    if let Some(real) = &real {
        cons.push(conn(&real.url()).await);
    }
    let mut replies = Vec::new();
    for con in &mut cons {
        let () = ok(con, &["REPLICAOF", "127.0.0.1", &nobody]).await;
        let got: redis::Value = ok(con, &["GET", "k"]).await;
        assert_eq!(got, redis::Value::Nil);
        config_set(con, "replica-serve-stale-data", "no").await;
        let mut seen = Vec::new();
        for args in [&["GET", "k"][..], &["PING"], &["SET", "k", "v"]] {
            seen.push(err(con, args).await);
        }
        let role: String = ok(con, &["INFO", "replication"]).await;
        assert!(role.contains("master_link_status:down"));
        replies.push(seen);
    }
    assert_eq!(
        replies[0][0],
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
    );
    if let [ours, theirs] = &replies[..] {
        assert_eq!(ours, theirs);
    }
}

/// What `script` sends to replicas under each value of `param` (`no`, then `yes`), each run
/// on a fresh server: the deletions it makes go as DEL, then as UNLINK (Redis's
/// `propagateDeletion`).
async fn deletions_under(param: &str, script: &[&[&str]]) -> Vec<Vec<String>> {
    let mut seen = Vec::new();
    for lazy in ["no", "yes"] {
        let (server, mut con) = start().await;
        config_set(&mut con, param, lazy).await;
        let mut stream = super::replication::Stream::attach(server.addr()).await;
        for args in script {
            let _: redis::Value = cmd(args).query_async(&mut con).await.unwrap();
        }
        seen.push(stream.commands(Duration::from_millis(300)).await);
    }
    seen
}

#[tokio::test]
async fn config_lazyfree_lazy_expire() {
    let seen = deletions_under(
        "lazyfree-lazy-expire",
        &[&["SET", "k", "v"], &["EXPIRE", "k", "-1"]],
    )
    .await;
    assert_eq!(
        seen,
        [
            ["select 0", "set k v", "del k"],
            ["select 0", "set k v", "unlink k"]
        ]
    );
}

#[tokio::test]
async fn config_lazyfree_lazy_server_del() {
    let seen = deletions_under(
        "lazyfree-lazy-server-del",
        &[&["SADD", "s", "a"], &["SPOP", "s", "5"]],
    )
    .await;
    assert_eq!(
        seen,
        [
            ["select 0", "sadd s a", "del s"],
            ["select 0", "sadd s a", "unlink s"]
        ]
    );
}

#[tokio::test]
async fn config_lazyfree_lazy_eviction() {
    let seen = deletions_under(
        "lazyfree-lazy-eviction",
        &[
            &["SET", "k", "v"],
            &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
            &["CONFIG", "SET", "maxmemory", "1"],
            &["GET", "k"],
            &["CONFIG", "SET", "maxmemory", "0"],
        ],
    )
    .await;
    assert_eq!(
        seen,
        [
            ["select 0", "set k v", "del k"],
            ["select 0", "set k v", "unlink k"]
        ]
    );
}

/// A Valkey 8.1 node and a connection to it.
async fn start_valkey() -> (ServerHandle, Con) {
    let server = Server::builder()
        .compat(locksmith_server::Compat::Valkey81)
        .start()
        .await
        .unwrap();
    let con = conn(&server.url()).await;
    (server, con)
}

#[tokio::test]
async fn config_set_max_intset_entries() {
    let (_server, mut con) = start().await;
    config_set(&mut con, "set-max-intset-entries", "3").await;
    let _: i64 = ok(&mut con, &["SADD", "s", "1", "2", "3"]).await;
    assert_eq!(encoding(&mut con, "s").await, "intset");
    let _: i64 = ok(&mut con, &["SADD", "s", "4"]).await;
    assert_eq!(encoding(&mut con, "s").await, "hashtable");
    // A table stays one once smaller again (Redis never converts back).
    let _: i64 = ok(&mut con, &["SREM", "s", "4", "3"]).await;
    assert_eq!(encoding(&mut con, "s").await, "hashtable");
    // RESTORE converts as the limit is when it runs.
    config_set(&mut con, "set-max-intset-entries", "512").await;
    let _: i64 = ok(&mut con, &["SADD", "t", "1", "2", "3", "4"]).await;
    let dump: Vec<u8> = ok(&mut con, &["DUMP", "t"]).await;
    config_set(&mut con, "set-max-intset-entries", "2").await;
    let () = cmd(&["RESTORE", "copy", "0"])
        .arg(dump)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(encoding(&mut con, "copy").await, "hashtable");
}

#[tokio::test]
async fn config_set_max_listpack_entries() {
    let (_server, mut con) = start_valkey().await;
    config_set(&mut con, "set-max-listpack-entries", "2").await;
    let _: i64 = ok(&mut con, &["SADD", "s", "a", "b"]).await;
    assert_eq!(encoding(&mut con, "s").await, "listpack");
    let _: i64 = ok(&mut con, &["SADD", "s", "c"]).await;
    assert_eq!(encoding(&mut con, "s").await, "hashtable");
    // 0: no set is a listpack, as under Redis 7.0.
    config_set(&mut con, "set-max-listpack-entries", "0").await;
    let _: i64 = ok(&mut con, &["SADD", "t", "a"]).await;
    assert_eq!(encoding(&mut con, "t").await, "hashtable");
}

#[tokio::test]
async fn config_set_max_listpack_value() {
    let (_server, mut con) = start_valkey().await;
    config_set(&mut con, "set-max-listpack-value", "3").await;
    let _: i64 = ok(&mut con, &["SADD", "s", "abc"]).await;
    assert_eq!(encoding(&mut con, "s").await, "listpack");
    let _: i64 = ok(&mut con, &["SADD", "s", "abcd"]).await;
    assert_eq!(encoding(&mut con, "s").await, "hashtable");
}

/// The argument vectors and values of `COMMANDLOG GET -1 <t>`, newest first.
async fn commandlog(con: &mut Con, t: &str) -> Vec<(Vec<String>, i64)> {
    type Raw = (i64, i64, i64, Vec<String>, String, String);
    let entries: Vec<Raw> = ok(con, &["COMMANDLOG", "GET", "-1", t]).await;
    entries.into_iter().map(|e| (e.3, e.2)).collect()
}

#[tokio::test]
async fn config_commandlog_request_larger_than() {
    let (_server, mut con) = start_valkey().await;
    let value = "v".repeat(100);
    // 1 MiB by default: nothing this test sends.
    let () = ok(&mut con, &["SET", "k", &value]).await;
    assert!(commandlog(&mut con, "large-request").await.is_empty());
    // 40 bytes: the SET (its request's 128 bytes) and not a PING (14 bytes).
    config_set(&mut con, "commandlog-request-larger-than", "40").await;
    let () = ok(&mut con, &["SET", "k", &value]).await;
    let _: String = ok(&mut con, &["PING"]).await;
    let logged = commandlog(&mut con, "large-request").await;
    assert_eq!(logged.len(), 2, "{logged:?}");
    assert_eq!(
        logged[0],
        (vec!["SET".into(), "k".into(), value.clone()], 128)
    );
    // Negative: off.
    config_set(&mut con, "commandlog-request-larger-than", "-1").await;
    let () = ok(&mut con, &["COMMANDLOG", "RESET", "large-request"]).await;
    let () = ok(&mut con, &["SET", "k", &value]).await;
    assert!(commandlog(&mut con, "large-request").await.is_empty());
    assert!(err(
        &mut con,
        &["CONFIG", "SET", "commandlog-request-larger-than", "-2"]
    )
    .await
    .contains("argument must be between -1 and 9223372036854775807 inclusive"));
}

#[tokio::test]
async fn config_commandlog_large_request_max_len() {
    let (_server, mut con) = start_valkey().await;
    config_set(&mut con, "commandlog-request-larger-than", "0").await;
    config_set(&mut con, "commandlog-large-request-max-len", "3").await;
    for i in 0..10 {
        let () = ok(&mut con, &["SET", "k", &i.to_string()]).await;
    }
    let len: i64 = ok(&mut con, &["COMMANDLOG", "LEN", "large-request"]).await;
    assert_eq!(len, 3);
    // 0: the log takes nothing more and keeps what it has (Valkey's rule).
    config_set(&mut con, "commandlog-large-request-max-len", "0").await;
    let () = ok(&mut con, &["SET", "k", "v"]).await;
    let len: i64 = ok(&mut con, &["COMMANDLOG", "LEN", "large-request"]).await;
    assert_eq!(len, 3);
}

#[tokio::test]
async fn config_commandlog_reply_larger_than() {
    let (_server, mut con) = start_valkey().await;
    let value = "v".repeat(200);
    let () = ok(&mut con, &["SET", "k", &value]).await;
    // 1 MiB by default: nothing this test reads.
    let _: String = ok(&mut con, &["GET", "k"]).await;
    assert!(commandlog(&mut con, "large-reply").await.is_empty());
    // 100 bytes: the GET (`$200`, the value, CRLF: 208 bytes) and not an OK.
    config_set(&mut con, "commandlog-reply-larger-than", "100").await;
    let _: String = ok(&mut con, &["GET", "k"]).await;
    let () = ok(&mut con, &["SET", "k", &value]).await;
    let logged = commandlog(&mut con, "large-reply").await;
    assert_eq!(logged, [(vec!["GET".to_string(), "k".to_string()], 208)]);
    config_set(&mut con, "commandlog-reply-larger-than", "-1").await;
    let () = ok(&mut con, &["COMMANDLOG", "RESET", "large-reply"]).await;
    let _: String = ok(&mut con, &["GET", "k"]).await;
    assert!(commandlog(&mut con, "large-reply").await.is_empty());
}

#[tokio::test]
async fn config_commandlog_large_reply_max_len() {
    let (_server, mut con) = start_valkey().await;
    config_set(&mut con, "commandlog-reply-larger-than", "0").await;
    config_set(&mut con, "commandlog-large-reply-max-len", "2").await;
    for i in 0..5 {
        let _: String = ok(&mut con, &["ECHO", &i.to_string()]).await;
    }
    assert_eq!(
        commandlog(&mut con, "large-reply").await,
        [
            (vec!["ECHO".to_string(), "4".to_string()], 7),
            (vec!["ECHO".to_string(), "3".to_string()], 7)
        ]
    );
    assert!(err(
        &mut con,
        &["CONFIG", "SET", "commandlog-large-reply-max-len", "-1"]
    )
    .await
    .contains("argument must be between 0 and 9223372036854775807 inclusive"));
}
