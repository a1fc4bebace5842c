//! Connection and server commands (HELLO, AUTH, CLIENT, CONFIG, INFO, COMMAND, FLUSH*, DEBUG…)
//! compared with real Redis where the behaviour is observable.

use locksmith_testkit as support;

use locksmith_server::Server;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::{raw, Pair, RealRedis};

/// RESP-encodes one command.
fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

fn script(cmds: &[&[&str]]) -> Vec<u8> {
    cmds.iter().flat_map(|c| resp(c)).collect()
}

/// Sends `bytes` to ours and (when present) to real Redis and asserts identical replies.
async fn same_raw(ours: SocketAddr, real: Option<SocketAddr>, bytes: &[u8]) -> Vec<u8> {
    let mine = raw(ours, bytes).await;
    if let Some(real) = real {
        let theirs = raw(real, bytes).await;
        assert_eq!(
            String::from_utf8_lossy(&mine),
            String::from_utf8_lossy(&theirs),
            "raw reply to {:?} differs (left: ours, right: redis)",
            String::from_utf8_lossy(bytes)
        );
    }
    mine
}

/// Replaces the digits after `:` in the HELLO reply's `id` entry (client ids differ).
fn mask_id(reply: &[u8]) -> String {
    let marker = "$2\r\nid\r\n:";
    let mut text = String::from_utf8_lossy(reply).into_owned();
    let mut from = 0;
    while let Some(at) = text[from..].find(marker) {
        let start = from + at + marker.len();
        let end = start + text[start..].find('\r').unwrap();
        text = format!("{}N{}", &text[..start], &text[end..]);
        from = start;
    }
    text
}

#[tokio::test]
async fn hello_switches_protocol_and_replies_like_redis() {
    let pair = Pair::start().await;
    let real = pair.real.as_ref().map(|r| r.addr());
    let bytes = script(&[
        &["HELLO", "3"],
        &["HELLO"],
        &["HELLO", "2"],
        &["HELLO", "3", "SETNAME", "app"],
    ]);
    let ours = mask_id(&raw(pair.ours.addr(), &bytes).await);
    assert!(ours.starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15"));
    if let Some(real) = real {
        assert_eq!(ours, mask_id(&raw(real, &bytes).await));
    }
    for cmd in [
        &["HELLO", "4"][..],
        &["HELLO", "1"],
        &["HELLO", "x"],
        &["HELLO", "2", "foo"],
        &["HELLO", "3", "SETNAME", "a b"],
        &["HELLO", "3", "AUTH", "nobody", "x"],
        &["AUTH", "x"],
        &["AUTH", "a", "b"],
        &["AUTH", "default", "anything"],
        &["AUTH", "a", "b", "c"],
    ] {
        same_raw(pair.ours.addr(), real, &resp(cmd)).await;
    }
}

#[tokio::test]
async fn requirepass_gates_commands_until_auth() {
    let ours = Server::builder()
        .requirepass("s3cret")
        .start()
        .await
        .unwrap();
    let real = RealRedis::start_with(&["--requirepass", "s3cret"]);
    let real_addr = real.as_ref().map(|r| r.addr());
    let bytes = script(&[
        &["GET", "a"],
        &["PING"],
        &["AUTH", "wrong"],
        &["AUTH", "default", "wrong"],
        &["HELLO", "3"],
        &["AUTH", "s3cret"],
        &["SET", "a", "1"],
        &["GET", "a"],
        &["RESET"],
        &["GET", "a"],
        &["AUTH", "default", "s3cret"],
        &["GET", "a"],
    ]);
    let reply = same_raw(ours.addr(), real_addr, &bytes).await;
    assert!(String::from_utf8_lossy(&reply).starts_with("-NOAUTH Authentication required.\r\n"));
    // Before AUTH, Redis refuses big requests outright and closes.
    same_raw(ours.addr(), real_addr, b"*11\r\n").await;
    same_raw(ours.addr(), real_addr, b"*1\r\n$20000\r\n").await;
    // After AUTH the limits are lifted.
    let mut big = resp(&["AUTH", "s3cret"]);
    big.extend(resp(&["ECHO", &"x".repeat(20_000)]));
    big.extend(resp(&[
        "DEL", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k",
    ]));
    same_raw(ours.addr(), real_addr, &big).await;
}

#[tokio::test]
async fn config_set_requirepass_applies_to_new_connections() {
    let mut pair = Pair::start().await;
    pair.same(&["CONFIG", "SET", "requirepass", "pw"]).await;
    let real = pair.real.as_ref().map(|r| r.addr());
    let bytes = script(&[
        &["PING"],
        &["AUTH", "pw"],
        &["PING"],
        &["CONFIG", "SET", "requirepass", ""],
    ]);
    same_raw(pair.ours.addr(), real, &bytes).await;
    same_raw(pair.ours.addr(), real, &resp(&["PING"])).await;
}

#[tokio::test]
async fn client_subcommands_and_errors_match_redis() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["CLIENT", "SETNAME", "a b"],
        &["CLIENT", "GETNAME"],
        &["CLIENT", "SETNAME", "worker-1"],
        &["CLIENT", "GETNAME"],
        &["CLIENT", "SETNAME", ""],
        &["CLIENT", "GETNAME"],
        &["CLIENT"],
        &["CLIENT", "NOPE"],
        &["CLIENT", "KILL"],
        &["CLIENT", "KILL", "1.2.3.4:5"],
        &["CLIENT", "KILL", "ID", "99999"],
        &["CLIENT", "KILL", "ID", "abc"],
        &["CLIENT", "KILL", "foo", "bar"],
        &["CLIENT", "KILL", "TYPE", "wrong"],
        &["CLIENT", "KILL", "SKIPME", "maybe"],
        &["CLIENT", "KILL", "USER", "nobody"],
        &["CLIENT", "PAUSE"],
        &["CLIENT", "PAUSE", "abc"],
        &["CLIENT", "PAUSE", "-1"],
        &["CLIENT", "PAUSE", "10", "foo"],
        &["CLIENT", "UNPAUSE"],
        &["CLIENT", "REPLY", "foo"],
        &["CLIENT", "NO-EVICT", "maybe"],
        &["CLIENT", "NO-EVICT", "on"],
        &["CLIENT", "NO-EVICT", "off"],
        &["CLIENT", "LIST", "TYPE", "foo"],
        &["CLIENT", "LIST", "ID", "abc"],
        &["CLIENT", "LIST", "foo"],
        &["CLIENT", "GETREDIR"],
        &["SELECT", "16"],
        &["SELECT", "-1"],
        &["SELECT", "15"],
        &["ECHO"],
    ])
    .await;
}

/// The `key=` names of a CLIENT LIST line, in order.
fn field_names(line: &str) -> Vec<String> {
    line.split(' ')
        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k.to_string()))
        .collect()
}

#[tokio::test]
async fn client_list_and_info_have_redis_fields_in_order() {
    let pair = Pair::start().await;
    let bytes = script(&[
        &["CLIENT", "SETNAME", "me"],
        &["SELECT", "3"],
        &["CLIENT", "INFO"],
    ]);
    let ours = String::from_utf8_lossy(&raw(pair.ours.addr(), &bytes).await).into_owned();
    let line = ours
        .lines()
        .find(|l| l.starts_with("id="))
        .unwrap()
        .to_string();
    for expected in [
        "name=me",
        "db=3",
        "flags=N",
        "cmd=client|info",
        "user=default",
        "resp=2",
    ] {
        assert!(line.contains(expected), "{expected} missing in {line}");
    }
    if let Some(real) = &pair.real {
        let theirs = String::from_utf8_lossy(&raw(real.addr(), &bytes).await).into_owned();
        let real_line = theirs.lines().find(|l| l.starts_with("id=")).unwrap();
        assert_eq!(field_names(&line), field_names(real_line));
    }
    let list = String::from_utf8_lossy(&raw(pair.ours.addr(), &resp(&["CLIENT", "LIST"])).await)
        .into_owned();
    assert!(list.contains("cmd=client|list"), "{list}");
    assert!(
        list.lines().filter(|l| l.contains("id=")).count() >= 2,
        "{list}"
    );
}

#[tokio::test]
async fn client_reply_off_and_skip_drop_replies_like_redis() {
    let pair = Pair::start().await;
    let bytes = script(&[
        &["CLIENT", "REPLY", "SKIP"],
        &["PING"],
        &["PING", "a"],
        &["CLIENT", "REPLY", "OFF"],
        &["PING", "b"],
        &["SET", "k", "v"],
        &["CLIENT", "REPLY", "ON"],
        &["GET", "k"],
    ]);
    let reply = same_raw(
        pair.ours.addr(),
        pair.real.as_ref().map(|r| r.addr()),
        &bytes,
    )
    .await;
    assert_eq!(reply, b"$1\r\na\r\n+OK\r\n$1\r\nv\r\n");
}

/// `CLIENT REPLY ON` right after `SKIP` undoes the skip: its own OK is sent, as in Redis.
#[tokio::test]
async fn client_reply_on_after_skip_answers_like_redis() {
    let pair = Pair::start().await;
    let bytes = script(&[
        &["CLIENT", "REPLY", "SKIP"],
        &["CLIENT", "REPLY", "ON"],
        &["PING"],
    ]);
    let reply = same_raw(
        pair.ours.addr(),
        pair.real.as_ref().map(|r| r.addr()),
        &bytes,
    )
    .await;
    assert_eq!(reply, b"+OK\r\n+PONG\r\n");
}

#[tokio::test]
async fn pubsub_confirmations_are_sent_under_client_reply_off_like_redis() {
    let pair = Pair::start().await;
    let bytes = script(&[
        &["CLIENT", "REPLY", "OFF"],
        &["SUBSCRIBE", "channel"],
        &["PSUBSCRIBE", "ch*"],
        &["UNSUBSCRIBE", "channel"],
        &["PUNSUBSCRIBE", "ch*"],
        &["PING"],
    ]);
    let reply = same_raw(
        pair.ours.addr(),
        pair.real.as_ref().map(|r| r.addr()),
        &bytes,
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "*3\r\n$9\r\nsubscribe\r\n$7\r\nchannel\r\n:1\r\n\
         *3\r\n$10\r\npsubscribe\r\n$3\r\nch*\r\n:2\r\n\
         *3\r\n$11\r\nunsubscribe\r\n$7\r\nchannel\r\n:1\r\n\
         *3\r\n$12\r\npunsubscribe\r\n$3\r\nch*\r\n:0\r\n"
    );
}

#[tokio::test]
async fn client_kill_closes_the_other_connection() {
    let server = support::start().await;
    let mut victim = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    victim.write_all(&resp(&["CLIENT", "ID"])).await.unwrap();
    let mut buf = [0u8; 64];
    let n = victim.read(&mut buf).await.unwrap();
    let id = String::from_utf8_lossy(&buf[1..n]).trim().to_string();
    let reply = raw(server.addr(), &resp(&["CLIENT", "KILL", "ID", &id])).await;
    assert_eq!(reply, b":1\r\n");
    let read = tokio::time::timeout(Duration::from_secs(5), victim.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "victim still open: {read:?}"
    );
    // The old form kills by address and answers OK; SKIPME applies only to the new form.
    let reply = raw(
        server.addr(),
        &resp(&["CLIENT", "KILL", "ADDR", "1.1.1.1:1"]),
    )
    .await;
    assert_eq!(reply, b":0\r\n");
}

#[tokio::test]
async fn client_pause_write_holds_writes_until_unpause() {
    let server = support::start().await;
    let mut admin = support::conn(&server.url()).await;
    let mut other = support::conn(&server.url()).await;
    let _: () = support::cmd(&["CLIENT", "PAUSE", "60000", "WRITE"])
        .query_async(&mut admin)
        .await
        .unwrap();
    // Reads go through.
    let got: Option<String> = support::cmd(&["GET", "k"])
        .query_async(&mut other)
        .await
        .unwrap();
    assert_eq!(got, None);
    let mut writer = support::conn(&server.url()).await;
    let write = tokio::spawn(async move {
        let r: String = support::cmd(&["SET", "k", "v"])
            .query_async(&mut writer)
            .await
            .unwrap();
        r
    });
    // The write must not complete while paused.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!write.is_finished(), "SET ran during CLIENT PAUSE WRITE");
    let _: () = support::cmd(&["CLIENT", "UNPAUSE"])
        .query_async(&mut admin)
        .await
        .unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(5), write)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply, "OK");
}

/// Redis's `unit/pause` "read-only scripts in multi-exec are not blocked by pause RO": an EXEC
/// of queued `no-writes` scripts runs under `CLIENT PAUSE WRITE` (the queue is judged by the
/// flags each script declares), while a script without flags, which may write, is held back
/// even from being queued (Redis checks the pause before it queues).
#[tokio::test]
async fn client_pause_write_runs_an_exec_of_read_only_scripts() {
    let mut pair = Pair::start().await;
    let read_only = "#!lua flags=no-writes\nreturn 12";
    let read_only_2 = "#!lua flags=no-writes\nreturn 13";
    let pause = ["CLIENT", "PAUSE", "100000", "WRITE"];
    let _ = support::run(&mut pair.ours_con, &pause).await;
    if let Some(con) = pair.real_con.as_mut() {
        let _ = support::run(con, &pause).await;
    }
    let reads = script(&[
        &["MULTI"],
        &["EVAL", read_only, "0"],
        &["EVAL", read_only_2, "0"],
        &["EXEC"],
    ]);
    let reply = same_raw(
        pair.ours.addr(),
        pair.real.as_ref().map(|r| r.addr()),
        &reads,
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:12\r\n:13\r\n"
    );
    // A script that declares no flags may write: it waits for the pause to end.
    let writes = script(&[
        &["MULTI"],
        &["EVAL", read_only, "0"],
        &["EVAL", "#!lua\nreturn 14", "0"],
        &["EXEC"],
    ]);
    let reply = same_raw(
        pair.ours.addr(),
        pair.real.as_ref().map(|r| r.addr()),
        &writes,
    )
    .await;
    assert_eq!(String::from_utf8_lossy(&reply), "+OK\r\n+QUEUED\r\n");
    let _ = support::run(&mut pair.ours_con, &["CLIENT", "UNPAUSE"]).await;
    if let Some(con) = pair.real_con.as_mut() {
        let _ = support::run(con, &["CLIENT", "UNPAUSE"]).await;
    }
}

#[tokio::test]
async fn client_pause_all_ends_at_its_timeout() {
    let server = support::start().await;
    let started = Instant::now();
    let bytes = script(&[&["CLIENT", "PAUSE", "300", "ALL"], &["PING"]]);
    let reply = raw(server.addr(), &bytes).await;
    // Raw exchange waits up to 300 ms idle; the PONG only comes after the pause.
    let reply = if reply.ends_with(b"+PONG\r\n") {
        reply
    } else {
        let mut reply = reply;
        reply.extend(raw(server.addr(), &resp(&["PING"])).await);
        reply
    };
    assert!(
        reply.ends_with(b"+PONG\r\n"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    assert!(started.elapsed() >= Duration::from_millis(250));
}

#[tokio::test]
async fn reset_returns_the_connection_to_its_initial_state() {
    let pair = Pair::start().await;
    let bytes = script(&[
        &["SELECT", "2"],
        &["CLIENT", "SETNAME", "x"],
        &["CLIENT", "REPLY", "OFF"],
        &["RESET"],
        &["CLIENT", "GETNAME"],
        &["SET", "k", "in-db-0"],
        &["SELECT", "0"],
        &["GET", "k"],
    ]);
    let reply = same_raw(
        pair.ours.addr(),
        pair.real.as_ref().map(|r| r.addr()),
        &bytes,
    )
    .await;
    assert!(reply.starts_with(b"+OK\r\n+OK\r\n+RESET\r\n$-1\r\n"));
}

/// CONFIG GET on both, compared as maps (Redis's order is its dict's).
async fn same_map(pair: &mut Pair, args: &[&str]) {
    let ours: BTreeMap<String, String> = support::cmd(args)
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    if let Some(real_con) = pair.real_con.as_mut() {
        let real: BTreeMap<String, String> =
            support::cmd(args).query_async(real_con).await.unwrap();
        assert_eq!(ours, real, "{args:?}");
    }
}

async fn config_map(
    con: &mut redis::aio::MultiplexedConnection,
    pattern: &str,
) -> BTreeMap<String, String> {
    support::cmd(&["CONFIG", "GET", pattern])
        .query_async(con)
        .await
        .unwrap()
}

#[tokio::test]
async fn config_get_knows_every_parameter_redis_knows() {
    let mut pair = Pair::start().await;
    let ours = config_map(&mut pair.ours_con, "*").await;
    let Some(real_con) = pair.real_con.as_mut() else {
        assert!(ours.len() >= 190);
        return;
    };
    let real = config_map(real_con, "*").await;
    let ours_names: Vec<_> = ours.keys().collect();
    let real_names: Vec<_> = real.keys().collect();
    assert_eq!(ours_names, real_names);
    // Values match except where the process itself differs.
    let differ_by_nature = [
        "dir",
        "port",
        "enable-debug-command",
        "pidfile",
        "activedefrag",
    ];
    for (name, value) in &real {
        if differ_by_nature.contains(&name.as_str()) {
            continue;
        }
        assert_eq!(ours.get(name), Some(value), "CONFIG GET {name}");
    }
    for pattern in [
        &["CONFIG", "GET", "HZ"][..],
        &["CONFIG", "GET", "lua-time-limit", "busy-reply-threshold"],
        &["CONFIG", "GET", "nosuch"],
        &["CONFIG", "GET", "maxmemory", "maxmemory"],
        &["CONFIG", "GET", "*max-*-entries*"],
    ] {
        same_map(&mut pair, pattern).await;
    }
    pair.same(&["CONFIG", "GET"]).await;
}

#[tokio::test]
async fn config_set_validates_like_redis_and_is_atomic() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["CONFIG", "SET", "hz", "20", "maxmemory", "x"],
        &["CONFIG", "GET", "hz"],
        &["CONFIG", "SET", "hz", "11", "hz", "12"],
        &["CONFIG", "SET", "nosuch", "1"],
        &["CONFIG", "SET", "hz"],
        &["CONFIG", "SET", "hz", "1", "maxmemory"],
        &["CONFIG", "SET", "databases", "4"],
        &["CONFIG", "SET", "dir", "/tmp"],
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            "1gb",
            "maxmemory-policy",
            "ALLKEYS-LRU",
        ],
        &["CONFIG", "SET", "maxmemory-policy", "nope"],
        &["CONFIG", "SET", "timeout", "-1"],
        &["CONFIG", "SET", "appendonly", "maybe"],
        &["CONFIG", "SET", "hz", "1000"],
        &["CONFIG", "GET", "hz"],
        &["CONFIG", "SET", "notify-keyspace-events", "KEA"],
        &["CONFIG", "GET", "notify-keyspace-events"],
        &["CONFIG", "SET", "notify-keyspace-events", "Q"],
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 1mb 2mb 3",
        ],
        &["CONFIG", "SET", "client-output-buffer-limit", "foo 1 2 3"],
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub x 2 3",
        ],
        &["CONFIG", "SET", "save", "10 1 20"],
        &["CONFIG", "SET", "save", "10 1"],
        &[
            "CONFIG",
            "SET",
            "lua-time-limit",
            "100",
            "busy-reply-threshold",
            "200",
        ],
        &["CONFIG", "GET", "lua-time-limit"],
        &["CONFIG", "SET", "proto-max-bulk-len", "100"],
        &["CONFIG", "SET", "maxmemory-clients", "10%"],
        &["CONFIG", "SET", "slave-read-only", "no"],
        &["CONFIG", "REWRITE"],
        &["CONFIG", "RESETSTAT"],
        &["CONFIG", "NOPE"],
    ])
    .await;
    for pattern in [
        "maxmemory*",
        "client-output-buffer-limit",
        "save",
        "replica-read-only",
        "lua-time-limit",
    ] {
        same_map(&mut pair, &["CONFIG", "GET", pattern]).await;
    }
}

#[tokio::test]
async fn config_set_maxclients_refuses_extra_connections() {
    let pair = Pair::start().await;
    let real = pair.real.as_ref().map(|r| r.addr());
    // The Pair's own connection is the only one left open; a limit of 1 refuses the next.
    for addr in std::iter::once(pair.ours.addr()).chain(real) {
        assert_eq!(
            raw(addr, &resp(&["CONFIG", "SET", "maxclients", "1"])).await,
            b"+OK\r\n"
        );
        let refused = raw(addr, &resp(&["PING"])).await;
        assert_eq!(refused, b"-ERR max number of clients reached\r\n", "{addr}");
    }
}

#[tokio::test]
async fn keyspace_commands_match_redis() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["SET", "a", "1"],
        &["SET", "b", "2"],
        &["DBSIZE"],
        &["DBSIZE", "x"],
        &["SELECT", "1"],
        &["SET", "c", "3"],
        &["FLUSHDB", "sync"],
        &["DBSIZE"],
        &["SELECT", "0"],
        &["DBSIZE"],
        &["FLUSHALL", "foo"],
        &["FLUSHALL", "async", "x"],
        &["FLUSHALL", "ASYNC"],
        &["DBSIZE"],
        &["TIME", "x"],
        &["LASTSAVE", "x"],
    ])
    .await;
    let ours: Vec<String> = support::cmd(&["TIME"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let secs: u64 = ours[0].parse().unwrap();
    assert!(secs.abs_diff(now) <= 2);
    assert!(ours[1].parse::<u64>().unwrap() < 1_000_000);
    pair.close(&["LASTSAVE"], 5).await;
}

#[tokio::test]
async fn info_has_redis_sections_and_fields() {
    let mut pair = Pair::start().await;
    pair.same(&["SET", "k", "v"]).await;
    pair.same(&["SET", "t", "v", "EX", "100"]).await;
    let info: String = support::cmd(&["INFO"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    let headers: Vec<&str> = info.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(
        headers,
        [
            "# Server",
            "# Clients",
            "# Memory",
            "# Persistence",
            "# Stats",
            "# Replication",
            "# CPU",
            "# Modules",
            "# Errorstats",
            "# Cluster",
            "# Keyspace"
        ]
    );
    assert!(info.contains("\r\n\r\n# Clients\r\n"));
    for field in [
        "redis_version:7.0.15",
        "redis_mode:standalone",
        "arch_bits:64",
        "process_id:",
        "tcp_port:",
        "uptime_in_seconds:",
        "run_id:",
        "connected_clients:",
        "blocked_clients:",
        "used_memory:",
        "used_memory_human:",
        "maxmemory:0",
        "maxmemory_policy:noeviction",
        "role:master",
        "connected_slaves:0",
        "master_replid:",
        "master_repl_offset:",
        "loading:0",
        "rdb_changes_since_last_save:",
        "total_commands_processed:",
        "total_connections_received:",
        "instantaneous_ops_per_sec:",
        "keyspace_hits:",
        "keyspace_misses:",
        "expired_keys:",
        "os:",
        "cluster_enabled:0",
    ] {
        assert!(info.contains(field), "INFO lacks {field}");
    }
    let keyspace: String = support::cmd(&["INFO", "keyspace"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    assert!(
        keyspace.starts_with("# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl="),
        "{keyspace}"
    );
    pair.all_same(&[&["INFO", "nosuchsection"], &["INFO", "cluster"]])
        .await;
    let both: String = support::cmd(&["INFO", "server", "clients"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    assert!(both.starts_with("# Server\r\n") && both.contains("\r\n\r\n# Clients\r\n"));
    let nope: redis::RedisResult<redis::Value> = support::cmd(&["NOPE"])
        .query_async(&mut pair.ours_con)
        .await;
    assert!(nope.is_err());
    let errors: String = support::cmd(&["INFO", "errorstats"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    assert!(errors.contains("errorstat_ERR:count="), "{errors}");
}

#[tokio::test]
async fn command_info_matches_redis_for_our_commands() {
    let mut pair = Pair::start().await;
    let names: Vec<String> = support::cmd(&["COMMAND", "LIST"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    assert!(names.contains(&"config|get".to_string()));
    let count: i64 = support::cmd(&["COMMAND", "COUNT"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    assert!(count as usize <= names.len() && count > 20);
    let Some(real_con) = pair.real_con.as_mut() else {
        return;
    };
    // The 7.2 subcommands do not exist in 7.0.
    let skip = ["client|setinfo", "client|no-touch"];
    let mut diffs = Vec::new();
    for name in names.iter().filter(|n| !skip.contains(&n.as_str())) {
        let ours: redis::Value = support::cmd(&["COMMAND", "INFO", name])
            .query_async(&mut pair.ours_con)
            .await
            .unwrap();
        let real: redis::Value = support::cmd(&["COMMAND", "INFO", name])
            .query_async(real_con)
            .await
            .unwrap();
        let first6 = |v: &redis::Value| match v {
            redis::Value::Array(outer) => match &outer[0] {
                redis::Value::Array(entry) => format!("{:?}", &entry[..6]),
                other => format!("{other:?}"),
            },
            other => format!("{other:?}"),
        };
        if first6(&ours) != first6(&real) {
            diffs.push(format!(
                "{name}:\n  ours {}\n  real {}",
                first6(&ours),
                first6(&real)
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "COMMAND INFO differs:\n{}",
        diffs.join("\n")
    );
    pair.all_same(&[
        &["COMMAND", "INFO", "nosuch"],
        &["COMMAND", "GETKEYS", "set", "a", "b"],
        &["COMMAND", "GETKEYS", "del", "a", "b", "c"],
        &["COMMAND", "GETKEYS", "get"],
        &["COMMAND", "GETKEYS", "nosuch", "a"],
        &["COMMAND", "GETKEYS", "ping", "a"],
        &["COMMAND", "GETKEYS", "set", "a"],
        &["COMMAND", "LIST", "foo"],
        &["COMMAND", "COUNT", "x"],
        &["COMMAND", "DOCS", "nosuch"],
    ])
    .await;
    // Redis lists in its dict's order: compare sorted.
    let args = ["COMMAND", "LIST", "FILTERBY", "PATTERN", "config*"];
    let mut ours: Vec<String> = support::cmd(&args)
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    if let Some(real_con) = pair.real_con.as_mut() {
        let mut real: Vec<String> = support::cmd(&args).query_async(real_con).await.unwrap();
        ours.sort();
        real.sort();
        assert_eq!(ours, real);
    }
}

#[tokio::test]
async fn debug_sleep_holds_every_client() {
    let server = locksmith_server::Server::builder()
        .enable_debug_command(locksmith_server::EnableCommand::Yes)
        .start()
        .await
        .unwrap();
    let mut sleeper = support::conn(&server.url()).await;
    let sleep = tokio::spawn(async move {
        let r: String = support::cmd(&["DEBUG", "SLEEP", "0.3"])
            .query_async(&mut sleeper)
            .await
            .unwrap();
        r
    });
    // Let DEBUG SLEEP take the lock first.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    assert_eq!(raw(server.addr(), &resp(&["PING"])).await, b"+PONG\r\n");
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(sleep.await.unwrap(), "OK");
}

#[tokio::test(start_paused = true)]
async fn debug_set_active_expire_zero_stops_the_active_cycle() {
    let server = locksmith_server::Server::builder()
        .enable_debug_command(locksmith_server::EnableCommand::Yes)
        .start()
        .await
        .unwrap();
    let mut con = support::conn(&server.url()).await;
    let run = |args: &'static [&'static str]| support::cmd(args);
    let _: () = run(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"])
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = run(&["SET", "k", "v", "PX", "100"])
        .query_async(&mut con)
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(2)).await;
    let size: i64 = run(&["DBSIZE"]).query_async(&mut con).await.unwrap();
    assert_eq!(
        size, 1,
        "the expired key is still there without the active cycle"
    );
    let _: () = run(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"])
        .query_async(&mut con)
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    let size: i64 = run(&["DBSIZE"]).query_async(&mut con).await.unwrap();
    assert_eq!(size, 0);
}

#[tokio::test(start_paused = true)]
async fn config_timeout_closes_idle_clients() {
    let server = support::start().await;
    let mut admin = support::conn(&server.url()).await;
    let _: () = support::cmd(&["CONFIG", "SET", "timeout", "1"])
        .query_async(&mut admin)
        .await
        .unwrap();
    let mut idle = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(30), idle.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "idle client not closed: {read:?}"
    );
}

#[tokio::test]
async fn shutdown_stops_the_node_without_a_reply() {
    let server = support::start().await;
    assert_eq!(
        raw(server.addr(), &resp(&["SHUTDOWN", "ABORT"])).await,
        b"-ERR No shutdown in progress.\r\n"
    );
    assert_eq!(
        raw(server.addr(), &resp(&["SHUTDOWN", "NOSAVE"])).await,
        b""
    );
    tokio::time::timeout(Duration::from_secs(5), server.stopped())
        .await
        .unwrap();
    server.shutdown().await;
}

/// `INFO commandstats` without the timings: `name:calls=..,rejected_calls=..,failed_calls=..`
/// per command, sorted.
async fn call_counts(con: &mut redis::aio::MultiplexedConnection) -> Vec<String> {
    let text: String = support::cmd(&["INFO", "commandstats"])
        .query_async(con)
        .await
        .unwrap();
    let mut out: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter(|l| !l.starts_with("info:") && !l.starts_with("config|resetstat:"))
        .map(|l| {
            l.split([':', ','])
                .filter(|f| !f.starts_with("usec"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    out.sort();
    out
}

// Calls, failed calls (an error reply) and rejected calls (refused before running: arity,
// a refused command inside MULTI) per command, and CONFIG RESETSTAT, as Redis counts them.
#[tokio::test]
async fn commandstats_count_calls_failures_and_rejections_as_redis() {
    let mut pair = Pair::start().await;
    let script: &[&[&str]] = &[
        &["CONFIG", "RESETSTAT"],
        &["SET", "a", "1"],
        &["GET", "a"],
        &["GET"],
        &["LPUSH", "a", "x"],
        &["INCR", "a"],
        &["CONFIG", "GET", "maxmemory"],
        &["CONFIG", "GET"],
        &["EVAL", "return redis.call('incr', 'a')", "0"],
        &["EVAL", "return redis.pcall('lpush', 'a', 'x')", "0"],
        &["MULTI"],
        &["SET", "b"],
        &["SET", "b", "2"],
        &["EXEC"],
        &["MULTI"],
        &["SET", "c", "3"],
        &["EXEC"],
    ];
    for args in script {
        let _ = support::run(&mut pair.ours_con, args).await;
    }
    let ours = call_counts(&mut pair.ours_con).await;
    assert!(
        ours.iter()
            .any(|l| l == "get,calls=1,rejected_calls=1,failed_calls=0"),
        "{ours:?}"
    );
    if let Some(real_con) = pair.real_con.as_mut() {
        for args in script {
            let _ = support::run(real_con, args).await;
        }
        assert_eq!(ours, call_counts(real_con).await);
    }
    let latency: String = support::cmd(&["INFO", "latencystats"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    assert!(
        latency.contains("latency_percentiles_usec_get:p50="),
        "{latency}"
    );
    let _ = support::run(&mut pair.ours_con, &["CONFIG", "RESETSTAT"]).await;
    assert!(call_counts(&mut pair.ours_con).await.is_empty());
}

/// `INFO errorstats` lines and `total_error_replies`, sorted.
async fn error_counts(con: &mut redis::aio::MultiplexedConnection) -> Vec<String> {
    let text: String = support::cmd(&["INFO", "everything"])
        .query_async(con)
        .await
        .unwrap();
    let mut out: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("errorstat_") || l.starts_with("total_error_replies:"))
        .map(String::from)
        .collect();
    out.sort();
    out
}

// An error of a command a script runs is counted once, when it happens: in errorstats and the
// command's failed or rejected calls; the script's reply passing it on is not counted again
// (Redis's ignore_error_stats_update), while an error the script raises itself is.
#[tokio::test]
async fn errors_inside_scripts_are_counted_once_as_redis() {
    let mut pair = Pair::start().await;
    let script: &[&[&str]] = &[
        &["CONFIG", "RESETSTAT"],
        &["EVAL", "return redis.call('select', 99)", "0"],
        &["EVAL", "local t = redis.pcall('select', 99) return 1", "0"],
        &["EVAL", "return redis.pcall('select', 99)", "0"],
        &["EVAL", "return redis.call('nosuch')", "0"],
        &["EVAL", "return redis.pcall('set', 'k')", "0"],
        &[
            "EVAL",
            "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')",
            "0",
        ],
        &["EVAL", "error('raised by the script')", "0"],
        &["EVAL", "return redis.error_reply('MY custom')", "0"],
    ];
    for args in script {
        let _ = support::run(&mut pair.ours_con, args).await;
    }
    let ours = (
        call_counts(&mut pair.ours_con).await,
        error_counts(&mut pair.ours_con).await,
    );
    assert!(
        ours.1.iter().any(|l| l.starts_with("errorstat_ERR:count=")),
        "{ours:?}"
    );
    if let Some(real_con) = pair.real_con.as_mut() {
        for args in script {
            let _ = support::run(real_con, args).await;
        }
        let theirs = (call_counts(real_con).await, error_counts(real_con).await);
        assert_eq!(ours, theirs);
    }
}
