//! DEBUG compared with real Redis: PROTOCOL byte for byte in RESP2 and RESP3, OBJECT's
//! fields, POPULATE, RELOAD (the data, TTLs and function libraries back after the round trip
//! through the RDB file), QUICKLIST-PACKED-THRESHOLD and PAUSE-CRON, with their errors.

use locksmith_server::{EnableCommand, Server, ServerHandle};
use locksmith_testkit as support;
use std::time::{Duration, Instant};
use support::{addrs, both_with_debug as servers, conn, run, urls, RealRedis, Wire};

/// A fresh directory for a server's RDB file, removed when dropped.
struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    fn new(name: &str) -> ScratchDir {
        let dir = std::env::temp_dir().join(format!(
            "locksmith-debug-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        ScratchDir(dir)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn debug_protocol_sends_each_type_as_redis_does_in_resp2_and_resp3() {
    let (ours, real) = servers().await;
    let types = [
        "string",
        "integer",
        "double",
        "bignum",
        "null",
        "array",
        "set",
        "map",
        "attrib",
        "push",
        "verbatim",
        "true",
        "false",
        "nosuchtype",
    ];
    let mut seen = Vec::new();
    for addr in addrs(&ours, &real) {
        let mut wire = Wire::connect(addr).await;
        let mut frames = Vec::new();
        for protocol in ["3", "2"] {
            // HELLO's reply names the connection: read, not compared.
            wire.call(&[&["HELLO", protocol]], 1).await;
            for t in types {
                wire.send(&[&["DEBUG", "PROTOCOL", t]]).await;
                // A push comes before its reply, in RESP3.
                let n = if t == "push" && protocol == "3" { 2 } else { 1 };
                frames.push((protocol, t, wire.frames(n).await));
            }
        }
        seen.push(frames);
    }
    let ours = &seen[0];
    let text = |f: &[Vec<u8>]| String::from_utf8_lossy(&f.concat()).into_owned();
    // What Redis sends, written out for the types whose encoding differs between protocols.
    let find = |protocol: &str, t: &str| {
        ours.iter()
            .find(|(p, name, _)| *p == protocol && *name == t)
            .map(|(_, _, f)| text(f))
            .unwrap()
    };
    assert_eq!(find("3", "double"), ",3.141\r\n");
    assert_eq!(find("2", "double"), "$5\r\n3.141\r\n");
    assert_eq!(find("3", "true"), "#t\r\n");
    assert_eq!(find("2", "false"), ":0\r\n");
    assert_eq!(
        find("3", "map"),
        "%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n"
    );
    assert_eq!(
        find("3", "attrib"),
        "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n\
         $39\r\nSome real reply following the attribute\r\n"
    );
    assert_eq!(
        find("2", "attrib"),
        "$39\r\nSome real reply following the attribute\r\n"
    );
    assert_eq!(
        find("3", "push"),
        ">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n\
         $40\r\nSome real reply following the push reply\r\n"
    );
    assert_eq!(
        find("2", "push"),
        "-ERR RESP2 is not supported by this command\r\n"
    );
    if let Some(real) = seen.get(1) {
        for (ours, real) in ours.iter().zip(real) {
            assert_eq!(
                (ours.0, ours.1, text(&ours.2)),
                (real.0, real.1, text(&real.2))
            );
        }
    }
}

/// `DEBUG OBJECT`'s reply without what differs by nature: the address, the access clock, and
/// the idle seconds read from it (a second boundary crossed on one server and not the other on
/// a loaded machine). `serializedlength` is compared: values are written in Redis's encodings.
fn object_fields(reply: &str) -> String {
    reply
        .split(' ')
        .filter(|f| {
            !f.starts_with("at:") && !f.starts_with("lru:") && !f.starts_with("lru_seconds_idle:")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn debug_object_describes_each_value_as_redis_does() {
    let (ours, real) = servers().await;
    let long = "x".repeat(100);
    let script: &[&[&str]] = &[
        &["SET", "int", "20000"],
        &["SET", "small", "7"],
        &["SET", "emb", "hello"],
        &["SET", "raw", &long],
        &["RPUSH", "list", "a", "b", "c", "1", "22", "333", &long],
        &["HSET", "hash", "f", "v", "n", "12"],
        &["HSET", "table", "f", &long],
        &["SADD", "ints", "1", "2", "3"],
        &["SADD", "strs", "a", "b"],
        &["ZADD", "zset", "1", "a", "2.5", "b"],
    ];
    let keys = [
        "int", "small", "emb", "raw", "list", "hash", "table", "ints", "strs", "zset",
    ];
    let mut replies = Vec::new();
    for url in urls(&ours, &real) {
        let mut con = conn(&url).await;
        let mut got = Vec::new();
        for args in script {
            run(&mut con, args).await;
        }
        for key in keys {
            got.push(object_fields(
                &run(&mut con, &["DEBUG", "OBJECT", key]).await,
            ));
        }
        got.push(run(&mut con, &["DEBUG", "OBJECT", "nokey"]).await);
        // An INCR changes the integer in place: the same object before and after.
        let at = |reply: String| {
            reply
                .split(' ')
                .find(|f| f.starts_with("at:0x"))
                .map(str::to_string)
        };
        run(&mut con, &["INCR", "int"]).await;
        let before = at(run(&mut con, &["DEBUG", "OBJECT", "int"]).await);
        run(&mut con, &["INCR", "int"]).await;
        assert!(before.is_some());
        assert_eq!(before, at(run(&mut con, &["DEBUG", "OBJECT", "int"]).await));
        // An element at or above the packed threshold gets a quicklist node of its own.
        // (Redis shapes a list as it is written; this server shows the shape of the list
        // written in order under the threshold set now.)
        for (threshold, key) in [("10", "plain"), ("0", "packed")] {
            got.push(
                run(
                    &mut con,
                    &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", threshold],
                )
                .await,
            );
            got.push(run(&mut con, &["RPUSH", key, "a", "0123456789abc", "b", "c"]).await);
            got.push(object_fields(
                &run(&mut con, &["DEBUG", "OBJECT", key]).await,
            ));
        }
        // Nodes of at most 5 elements; then 8 KB nodes of 1000 elements of 20 bytes.
        let counted: Vec<String> = (0..12).map(|i| i.to_string()).collect();
        let many: Vec<String> = (0..1000).map(|i| format!("element-{i:012}")).collect();
        for (fill, key, elements) in [("5", "counted", &counted), ("-2", "many", &many)] {
            run(&mut con, &["CONFIG", "SET", "list-max-listpack-size", fill]).await;
            let mut args = vec!["RPUSH", key];
            args.extend(elements.iter().map(String::as_str));
            run(&mut con, &args).await;
            got.push(object_fields(
                &run(&mut con, &["DEBUG", "OBJECT", key]).await,
            ));
        }
        for size in ["5gb", "abc", "-1", "4294967296"] {
            got.push(run(&mut con, &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", size]).await);
        }
        replies.push(got);
    }
    assert!(replies[0][4].contains("ql_nodes:1 ql_avg_node:7.00 ql_listpack_max:-2"));
    assert!(replies[0][13].contains("ql_nodes:3"), "{}", replies[0][13]);
    assert!(replies[0][16].contains("ql_nodes:1"), "{}", replies[0][16]);
    if let Some(real) = replies.get(1) {
        assert_eq!(&replies[0], real);
    }
}

#[tokio::test]
async fn debug_populate_creates_the_missing_keys_as_redis_does() {
    let (ours, real) = servers().await;
    let long_prefix = "p".repeat(200);
    let mut replies = Vec::new();
    for url in urls(&ours, &real) {
        let mut con = conn(&url).await;
        let mut got = Vec::new();
        for args in [
            &["SET", "key:1", "mine"][..],
            &["DEBUG", "POPULATE", "3"],
            &["MGET", "key:0", "key:1", "key:2", "key:3"],
            &["DEBUG", "POPULATE", "2", "cut", "3"],
            &["DEBUG", "POPULATE", "2", "pad", "10"],
            &["MGET", "cut:0", "cut:1", "pad:1"],
            &["DEBUG", "POPULATE", "2", &long_prefix],
            &["DEBUG", "POPULATE", "0"],
            &["DBSIZE"],
            &["DEBUG", "POPULATE", "x"],
            &["DEBUG", "POPULATE", "-1"],
            &["DEBUG", "POPULATE", "1", "k", "-3"],
            &["DEBUG", "POPULATE", "1", "k", "1", "extra"],
        ] {
            got.push(run(&mut con, args).await);
        }
        // Names are cut at 127 bytes, as Redis's buffer cuts them.
        let name = format!("{long_prefix}:1");
        got.push(run(&mut con, &["EXISTS", &name[..127]]).await);
        replies.push(got);
    }
    assert_eq!(replies[0][8], "int(8)");
    assert_eq!(replies[0][13], "int(1)");
    if let Some(real) = replies.get(1) {
        assert_eq!(&replies[0], real);
    }
    // A count whose keys cannot fit in the machine is refused with the error Redis gives when
    // it cannot size its table (Redis 7.0.15 aborts on this one: its table's size overflows).
    let mut con = conn(&ours.url()).await;
    assert_eq!(
        run(&mut con, &["DEBUG", "POPULATE", "99999999999999999"]).await,
        "ERROR ERR OOM in dictTryExpand"
    );
    assert_eq!(run(&mut con, &["DBSIZE"]).await, "int(8)");
}

/// Reads every key's value and TTL, and the function libraries, as text to compare.
async fn snapshot(con: &mut redis::aio::MultiplexedConnection) -> Vec<String> {
    let mut out = Vec::new();
    for db in ["0", "1"] {
        run(con, &["SELECT", db]).await;
        let mut keys: Vec<String> = match support::cmd(&["KEYS", "*"]).query_async(con).await {
            Ok(keys) => keys,
            Err(e) => panic!("KEYS: {e}"),
        };
        keys.sort();
        for key in keys {
            let kind = run(con, &["TYPE", &key]).await;
            let value = match kind.as_str() {
                "simple-string(\"string\")" => run(con, &["GET", &key]).await,
                "simple-string(\"list\")" => run(con, &["LRANGE", &key, "0", "-1"]).await,
                "simple-string(\"hash\")" => run(con, &["HGETALL", &key]).await,
                "simple-string(\"set\")" => run(con, &["SORT", &key, "ALPHA"]).await,
                "simple-string(\"zset\")" => {
                    run(con, &["ZRANGE", &key, "0", "-1", "WITHSCORES"]).await
                }
                _ => run(con, &["XRANGE", &key, "-", "+"]).await,
            };
            // A TTL of seconds may tick between two snapshots: whether there is one, and
            // that it is still most of the 1000 s set.
            let ttl = match run(con, &["TTL", &key]).await.as_str() {
                "int(-1)" => "none".to_string(),
                other => {
                    let secs: i64 = other
                        .trim_start_matches("int(")
                        .trim_end_matches(')')
                        .parse()
                        .unwrap();
                    format!("{}", secs > 900)
                }
            };
            out.push(format!("{db} {key} {kind} {value} ttl {ttl}"));
        }
    }
    run(con, &["SELECT", "0"]).await;
    out.push(run(con, &["FUNCTION", "LIST"]).await);
    out
}

/// Both servers with `DEBUG` enabled and their RDB file in a directory of their own.
async fn servers_in(
    ours_dir: &ScratchDir,
    real_dir: &ScratchDir,
) -> (ServerHandle, Option<RealRedis>) {
    let ours = Server::builder()
        .enable_debug_command(EnableCommand::Yes)
        .config_set("dir", ours_dir.path())
        .start()
        .await
        .unwrap();
    let real = RealRedis::start_with(&["--enable-debug-command", "yes", "--dir", real_dir.path()]);
    (ours, real)
}

#[tokio::test]
async fn debug_reload_brings_the_data_back_through_the_rdb_file() {
    let (ours_dir, real_dir) = (ScratchDir::new("ours"), ScratchDir::new("real"));
    let (ours, real) = servers_in(&ours_dir, &real_dir).await;
    let library = "#!lua name=lib\nredis.register_function('f', function() return 1 end)";
    let mut results = Vec::new();
    for url in urls(&ours, &real) {
        let mut con = conn(&url).await;
        for args in [
            &["SET", "s", "v", "EX", "1000"][..],
            &["SET", "n", "12345"],
            &["RPUSH", "l", "a", "b", "1"],
            &["HSET", "h", "f", "v", "g", "2"],
            &["SADD", "st", "x", "y"],
            &["SADD", "si", "1", "2"],
            &["ZADD", "z", "1.5", "m", "-2", "n"],
            &["XADD", "x", "1-1", "f", "v"],
            &["SELECT", "1"],
            &["SET", "other", "db1"],
            &["SELECT", "0"],
            &["FUNCTION", "LOAD", library],
        ] {
            run(&mut con, args).await;
        }
        let before = snapshot(&mut con).await;
        let mut got = vec![run(&mut con, &["DEBUG", "RELOAD"]).await];
        assert_eq!(snapshot(&mut con).await, before, "{url}");
        // NOSAVE loads the file as it is: what changed since is undone.
        for args in [
            &["SET", "s", "changed"][..],
            &["SET", "new", "1"],
            &["DEBUG", "RELOAD", "NOSAVE"],
        ] {
            got.push(run(&mut con, args).await);
        }
        assert_eq!(snapshot(&mut con).await, before, "{url}");
        // MERGE with NOFLUSH: keys of the file replace those present, others stay.
        for args in [
            &["SET", "s", "changed"][..],
            &["SET", "new", "1"],
            &["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"],
            &["GET", "s"],
            &["GET", "new"],
            &["DEBUG", "RELOAD", "BOGUS"],
            &["FCALL", "f", "0"],
        ] {
            got.push(run(&mut con, args).await);
        }
        results.push(got);
    }
    assert_eq!(results[0][0], "ok");
    if let Some(real) = results.get(1) {
        assert_eq!(&results[0], real);
    }
    // Where Redis stops the server (a key of the file already present, without MERGE), the
    // load is refused before anything changes; so is a file that cannot be read.
    let dir = ScratchDir::new("refused");
    let ours = Server::builder()
        .enable_debug_command(EnableCommand::Yes)
        .config_set("dir", dir.path())
        .start()
        .await
        .unwrap();
    let mut con = conn(&ours.url()).await;
    let refused = "ERROR ERR Error trying to load the RDB dump, check server logs.";
    assert_eq!(run(&mut con, &["DEBUG", "RELOAD", "NOSAVE"]).await, refused);
    run(&mut con, &["SET", "k", "v"]).await;
    assert_eq!(run(&mut con, &["DEBUG", "RELOAD"]).await, "ok");
    run(&mut con, &["SET", "k2", "v2"]).await;
    assert_eq!(
        run(&mut con, &["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH"]).await,
        refused
    );
    assert_eq!(run(&mut con, &["DBSIZE"]).await, "int(2)");
    std::fs::write(dir.0.join("dump.rdb"), b"REDIS0010garbage").unwrap();
    assert_eq!(run(&mut con, &["DEBUG", "RELOAD", "NOSAVE"]).await, refused);
    assert_eq!(run(&mut con, &["DBSIZE"]).await, "int(2)");
}

#[tokio::test]
async fn debug_pause_cron_holds_active_expiry_back() {
    let (ours, real) = servers().await;
    for url in urls(&ours, &real) {
        let mut con = conn(&url).await;
        assert_eq!(run(&mut con, &["DEBUG", "PAUSE-CRON", "1"]).await, "ok");
        run(&mut con, &["SET", "k", "v", "PX", "20"]).await;
        // DBSIZE does not expire keys: only the cron could have removed it.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(run(&mut con, &["DBSIZE"]).await, "int(1)", "{url}");
        run(&mut con, &["DEBUG", "PAUSE-CRON", "0"]).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while run(&mut con, &["DBSIZE"]).await != "int(0)" {
            assert!(
                Instant::now() < deadline,
                "{url}: not expired after the cron resumed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Scripts may not call a `noscript` command such as DEBUG, unless `DEBUG
/// SET-DISABLE-DENY-SCRIPTS 1` lifts the rule; its RESP3 types then reach Lua and come back
/// converted as Redis converts them, in both protocols (a map's and a set's members in the
/// order Redis's Lua tables give them back).
#[tokio::test]
async fn debug_set_disable_deny_scripts_lets_scripts_call_debug() {
    let (ours, real) = servers().await;
    let mut seen = Vec::new();
    for addr in addrs(&ours, &real) {
        let mut wire = Wire::connect(addr).await;
        let call = |t: &str, resp: &str| {
            format!("redis.setresp({resp}); return redis.call('debug', 'protocol', '{t}')")
        };
        let mut frames = Vec::new();
        let denied = call("true", "2");
        frames.extend(wire.call(&[&["EVAL", &denied, "0"]], 1).await);
        frames.extend(
            wire.call(&[&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"]], 1)
                .await,
        );
        for protocol in ["2", "3"] {
            wire.call(&[&["HELLO", protocol]], 1).await;
            for resp in ["2", "3"] {
                for t in [
                    "bignum", "double", "verbatim", "attrib", "true", "false", "null", "map",
                    "set", "array",
                ] {
                    let script = call(t, resp);
                    frames.extend(wire.call(&[&["EVAL", &script, "0"]], 1).await);
                }
            }
        }
        frames.extend(
            wire.call(&[&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"]], 1)
                .await,
        );
        frames.extend(wire.call(&[&["EVAL", &denied, "0"]], 1).await);
        seen.push(String::from_utf8_lossy(&frames.concat()).into_owned());
    }
    assert!(seen[0].starts_with("-ERR This Redis command is not allowed from script"));
    if let Some(real) = seen.get(1) {
        assert_eq!(&seen[0], real);
    }
}
