//! Where Valkey 8.1 reworded Redis 7.0's errors or changed a rule after it (Redis 7.2's
//! behaviour it continues): under `--compat valkey-8.1` each answer compared with
//! valkey-server 8.1.8, and under the default target with redis-server 7.0.15.

use super::valkey_commands::under_both;
use locksmith_server::Compat;
use locksmith_testkit as support;
use std::time::Duration;
use support::{patient_conn, Pair};

/// LPOS's rank range, a blocking timeout past the millisecond range, XREAD's unbalanced
/// streams, READONLY outside cluster mode and CLIENT CAPA.
#[tokio::test]
async fn command_errors_follow_the_target() {
    under_both(
        &[
            &["RPUSH", "l", "a", "c", "c"],
            &["XADD", "s", "1-1", "f", "v"],
        ],
        &[
            &["LPOS", "l", "c", "RANK", "-9223372036854775808"],
            &["LPOS", "l", "c", "RANK", "-9223372036854775807"],
            &["LPOS", "l", "c", "RANK", "0"],
            &["BLPOP", "nokey", "1e20"],
            &["BLPOP", "nokey", "inf"],
            &["BLPOP", "nokey", "-inf"],
            &["BLPOP", "nokey", "-1"],
            &["BZPOPMIN", "nokey", "1e30"],
            &["BLMOVE", "nokey", "d", "LEFT", "LEFT", "1e20"],
            &["XGROUP", "CREATE", "s", "g", "$"],
            &["XREAD", "COUNT", "1", "STREAMS", "s"],
            &["XREAD", "STREAMS", "s", "t", "0"],
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s"],
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "COUNT",
                "1",
                "STREAMS",
                "s",
                "t",
                ">",
            ],
            &["READONLY"],
            &["READWRITE"],
            &["CLIENT", "CAPA", "redirect"],
            &["CLIENT", "CAPA", "redirect", "other"],
            &["CLIENT", "CAPA"],
            &["CLIENT", "LIST", "USER", "nouser"],
            &["CLIENT", "LIST", "ID", "0"],
            &["CLIENT", "LIST", "ID", "x"],
            &["CLIENT", "LIST", "ID", "99999", "-1"],
            &["CLIENT", "LIST", "ID", "99999", "TYPE", "normal"],
            &["CLIENT", "LIST", "MAXAGE", "0"],
            &["CLIENT", "LIST", "MAXAGE", "x"],
            &["CLIENT", "LIST", "SKIPME", "maybe"],
            &["CLIENT", "LIST", "TYPE", "primary"],
            &["CLIENT", "LIST", "LADDR", "1.1.1.1:1"],
            &["CLIENT", "LIST", "ADDR"],
            &["CLIENT", "LIST", "bogus", "1"],
            &["CLIENT", "KILL", "ID", "99999", "88888"],
            &["CLIENT", "KILL", "ID", "99999", "bogus"],
            &["CLIENT", "KILL", "ID", "x"],
            &["CLIENT", "KILL", "TYPE", "primary"],
            &["CLIENT", "KILL", "USER", "nouser"],
            &["CLIENT", "KILL", "MAXAGE", "0"],
        ],
    )
    .await;
}

/// Valkey rounds a blocking timeout up to whole milliseconds: `0.0001` s blocks 1 ms and
/// times out, where Redis 7.0 truncates it to 0 and blocks forever (not run there).
#[tokio::test]
async fn a_sub_millisecond_timeout_times_out_under_valkey() {
    let mut pair = Pair::start_for(Compat::Valkey81).await;
    pair.all_same(&[
        &["BLPOP", "nokey", "0.0001"],
        &["BZPOPMAX", "nokey", "0.0009"],
        &["BRPOPLPUSH", "nokey", "d", "0.0001"],
    ])
    .await;
}

/// The scripting API's error texts (`server.` and no "redis lib" under Valkey), the `os`
/// library with `os.clock` alone, and stream reads with BLOCK inside a script.
#[tokio::test]
async fn script_errors_and_sandbox_follow_the_target() {
    under_both(
        &[
            &["XADD", "s", "1-1", "a", "1"],
            &["XGROUP", "CREATE", "s", "g", "$"],
        ],
        &[
            &["EVAL", "redis.log(1)", "0"],
            &["EVAL", "redis.log(99, 'x')", "0"],
            &["EVAL", "redis.setresp()", "0"],
            &["EVAL", "redis.set_repl()", "0"],
            &["EVAL", "return redis.call()", "0"],
            &["EVAL", "return redis.pcall()", "0"],
            &["EVAL", "return redis.call('get', {})", "0"],
            &["EVAL", "return redis.acl_check_cmd('no-such-command')", "0"],
            &["EVAL", "return redis.acl_check_cmd()", "0"],
            &["EVAL", "return type(os)", "0"],
            &["EVAL", "return type(os.clock())", "0"],
            &["EVAL", "return os.execute", "0"],
            &["EVAL", "return os.execute('true')", "0"],
            &[
                "EVAL",
                "return redis.pcall('xread','BLOCK',0,'STREAMS','s','$')",
                "1",
                "s",
            ],
            &[
                "EVAL",
                "return redis.pcall('xread','BLOCK',0,'STREAMS','s','0-0')",
                "1",
                "s",
            ],
            &[
                "EVAL",
                "return redis.pcall('xreadgroup','GROUP','g','c','BLOCK',0,'STREAMS','s','>')",
                "1",
                "s",
            ],
        ],
    )
    .await;
}

/// `TIME` inside a script: the script's start under Valkey (the same value however long the
/// script runs), the time of the call under Redis 7.0; each as its reference answers.
#[tokio::test]
async fn time_inside_a_script_follows_the_target() {
    // Calls TIME until it changes, at most 100 000 times (a few µs pass between two calls).
    let script = "local a = redis.call('TIME') local b = a \
                  for i = 1, 100000 do b = redis.call('TIME') \
                  if b[1] ~= a[1] or b[2] ~= a[2] then break end end \
                  return {a[1] == b[1] and a[2] == b[2]}";
    for (compat, cached) in [(Compat::Redis70, false), (Compat::Valkey81, true)] {
        let ours = locksmith_server::Server::builder()
            .compat(compat)
            .start()
            .await
            .unwrap();
        let mut urls = vec![ours.url()];
        let reference = support::RealRedis::start_reference(support::Reference::of(compat), &[]);
        if let Some(reference) = &reference {
            urls.push(reference.url());
        }
        for url in urls {
            let mut con = patient_conn(&url).await;
            let equal = support::run(&mut con, &["EVAL", script, "0"]).await;
            let expected = if cached {
                "array([int(1)])"
            } else {
                "array([nil])"
            };
            assert_eq!(equal, expected, "{compat} at {url}");
        }
    }
}

/// What a busy script makes other clients read and what the killed script answers: `BUSY`
/// naming the server and the KILL command, `Script killed by user with SCRIPT KILL...` (Redis
/// 7.0, for functions too) or `... SCRIPT KILL.` / `... FUNCTION KILL.` (Valkey).
async fn busy_and_killed_texts(url: &str) -> Vec<String> {
    let mut other = patient_conn(url).await;
    support::run(&mut other, &["CONFIG", "SET", "busy-reply-threshold", "50"]).await;
    support::run(
        &mut other,
        &[
            "FUNCTION",
            "LOAD",
            "REPLACE",
            "#!lua name=spin\nredis.register_function('spin', function() local a = 1 while true do a = a + 1 end end)",
        ],
    )
    .await;
    let mut texts = Vec::new();
    for (call, kill) in [
        (
            &["EVAL", "local a = 1 while true do a = a + 1 end", "0"][..],
            "SCRIPT",
        ),
        (&["FCALL", "spin", "0"][..], "FUNCTION"),
    ] {
        let mut looping = patient_conn(url).await;
        let call: Vec<String> = call.iter().map(|s| s.to_string()).collect();
        let spinner = tokio::spawn(async move {
            let args: Vec<&str> = call.iter().map(String::as_str).collect();
            let r: redis::RedisResult<()> = support::cmd(&args).query_async(&mut looping).await;
            r.map_err(|e| support::error_text(&e))
        });
        let mut busy = String::new();
        for _ in 0..250 {
            busy = support::run(&mut other, &["PING"]).await;
            if busy.starts_with("ERROR BUSY") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        texts.push(busy);
        texts.push(support::run(&mut other, &[kill, "KILL"]).await);
        let killed = tokio::time::timeout(Duration::from_secs(10), spinner)
            .await
            .expect("the killed script ends")
            .expect("the task ends");
        texts.push(killed.err().unwrap_or_default());
    }
    texts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_and_killed_scripts_answer_as_the_target() {
    for compat in Compat::ALL {
        let ours = locksmith_server::Server::builder()
            .compat(compat)
            .start()
            .await
            .unwrap();
        let ours_texts = busy_and_killed_texts(&ours.url()).await;
        let title = if compat == Compat::Redis70 {
            "Redis"
        } else {
            "Valkey"
        };
        assert_eq!(
            ours_texts[0],
            format!(
                "ERROR BUSY {title} is busy running a script. You can only call SCRIPT KILL or \
                 SHUTDOWN NOSAVE."
            )
        );
        let Some(reference) =
            support::RealRedis::start_reference(support::Reference::of(compat), &[])
        else {
            continue;
        };
        assert_eq!(
            ours_texts,
            busy_and_killed_texts(&reference.url()).await,
            "{compat}"
        );
    }
}

/// `extended-redis-compatibility yes` (Valkey 8): `HELLO` says `redis` 7.2.4, `INFO server`
/// has `redis_mode` for `server_mode`, and `BUSY` names Redis; `no` goes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_redis_compatibility_names_the_server_redis() {
    let ours = locksmith_server::Server::builder()
        .compat(Compat::Valkey81)
        .start()
        .await
        .unwrap();
    let mut urls = vec![ours.url()];
    let reference = support::RealRedis::start_valkey(&[]);
    if let Some(reference) = &reference {
        urls.push(reference.url());
    }
    let mut seen = Vec::new();
    for url in &urls {
        let mut con = patient_conn(url).await;
        let mut facts = Vec::new();
        for setting in ["yes", "no"] {
            support::run(
                &mut con,
                &["CONFIG", "SET", "extended-redis-compatibility", setting],
            )
            .await;
            let hello: Vec<redis::Value> = support::cmd(&["HELLO", "2"])
                .query_async(&mut con)
                .await
                .unwrap();
            let text = |v: &redis::Value| match v {
                redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                other => format!("{other:?}"),
            };
            facts.push(format!("{} {}", text(&hello[1]), text(&hello[3])));
            let info = support::info(&mut con, "server").await;
            let mode: Vec<&str> = info
                .iter()
                .filter(|(k, _)| k.ends_with("_mode"))
                .map(|(k, _)| k.as_str())
                .collect();
            facts.push(mode.join(","));
        }
        support::run(
            &mut con,
            &["CONFIG", "SET", "extended-redis-compatibility", "yes"],
        )
        .await;
        let texts = busy_and_killed_texts(url).await;
        facts.push(texts[0].clone());
        seen.push(facts);
    }
    assert_eq!(
        seen[0][..4],
        [
            "redis 7.2.4".to_string(),
            "redis_mode".to_string(),
            "valkey 8.1.8".to_string(),
            "server_mode".to_string(),
        ]
    );
    assert!(
        seen[0][4].starts_with("ERROR BUSY Redis is busy"),
        "{:?}",
        seen[0]
    );
    if seen.len() == 2 {
        assert_eq!(seen[0], seen[1], "left: ours, right: valkey-server");
    }
}

/// Waits (at most 20 s) until the replica's link to its master is up.
async fn link_up(con: &mut redis::aio::MultiplexedConnection) {
    for _ in 0..1000 {
        let info = support::info(con, "replication").await;
        if info
            .iter()
            .any(|(k, v)| k == "master_link_status" && v == "up")
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the replica did not connect to its master");
}

/// Valkey's integration/replica-redirect.tcl as one session on a replica: a client that
/// declared `CLIENT CAPA redirect` is sent to the master for reads and writes (`-REDIRECT
/// host:port`), unless it asked for `READONLY`; a transaction queued before the node became a
/// replica is redirected at EXEC, one that queued a redirected write aborts; other clients get
/// `READONLY` as before. The master's port is written `PORT`.
async fn redirect_session(master_port: u16, replica_url: &str) -> Vec<String> {
    let mut replies = Vec::new();
    let mut admin = patient_conn(replica_url).await;
    let mut early = support::Wire::connect(
        replica_url
            .trim_start_matches("redis://")
            .trim_end_matches('/')
            .parse()
            .expect("an address"),
    )
    .await;
    let port = master_port.to_string();
    let mut note = |frames: Vec<Vec<u8>>| {
        for f in frames {
            replies.push(String::from_utf8_lossy(&f).replace(&port, "PORT"));
        }
    };
    note(
        early
            .call(
                &[
                    &["CLIENT", "CAPA", "redirect"],
                    &["MULTI"],
                    &["SET", "foo", "bar"],
                ],
                3,
            )
            .await,
    );
    support::run(&mut admin, &["REPLICAOF", "127.0.0.1", &port]).await;
    link_up(&mut admin).await;
    note(early.call(&[&["EXEC"]], 1).await);
    note(
        early
            .call(
                &[
                    &["MULTI"],
                    &["SET", "foo", "bar"],
                    &["EXEC"],
                    &["GET", "foo"],
                    &["PING"],
                    &["RESET"],
                    &["GET", "foo"],
                    &["READONLY"],
                    &["GET", "foo"],
                    &["SET", "foo", "bar"],
                    &["READWRITE"],
                    &["GET", "foo"],
                ],
                12,
            )
            .await,
    );
    let mut plain = support::Wire::connect(
        replica_url
            .trim_start_matches("redis://")
            .trim_end_matches('/')
            .parse()
            .expect("an address"),
    )
    .await;
    note(
        plain
            .call(&[&["GET", "foo"], &["SET", "foo", "bar"]], 2)
            .await,
    );
    replies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_redirects_clients_that_declared_the_capability() {
    let master = locksmith_server::Server::builder()
        .compat(Compat::Valkey81)
        .start()
        .await
        .unwrap();
    let replica = locksmith_server::Server::builder()
        .compat(Compat::Valkey81)
        .start()
        .await
        .unwrap();
    let ours = redirect_session(master.addr().port(), &replica.url()).await;
    assert_eq!(ours[0], "+OK\r\n");
    assert_eq!(ours[3], "-REDIRECT 127.0.0.1:PORT\r\n", "{ours:?}");
    let (Some(master), Some(replica)) = (
        support::RealRedis::start_valkey(&[]),
        support::RealRedis::start_valkey(&[]),
    ) else {
        return;
    };
    let theirs = redirect_session(master.addr().port(), &replica.url()).await;
    assert_eq!(ours, theirs, "left: ours, right: valkey-server");
}

/// The `INFO stats` fields ours does not keep, under both targets: replication and eviction
/// rates and times, clients evicted for memory, a replica's expiring-key index, active
/// defragmentation, unexpected error replies, payload sanitizations and reply-buffer resizes
/// (COMPATIBILITY.md); under Valkey's also Redis 7.2's event-loop counters.
const STATS_NOT_KEPT: &[&str] = &[
    "instantaneous_input_repl_kbps",
    "instantaneous_output_repl_kbps",
    "evicted_clients",
    "total_eviction_exceeded_time",
    "current_eviction_exceeded_time",
    "slave_expires_tracked_keys",
    "active_defrag_hits",
    "active_defrag_misses",
    "active_defrag_key_hits",
    "active_defrag_key_misses",
    "total_active_defrag_time",
    "current_active_defrag_time",
    "unexpected_error_replies",
    "dump_payload_sanitizations",
    "reply_buffer_shrinks",
    "reply_buffer_expands",
    "eventloop_cycles",
    "eventloop_duration_sum",
    "eventloop_duration_cmd_sum",
    "instantaneous_eventloop_cycles_per_sec",
    "instantaneous_eventloop_duration_usec",
];

/// Sends `bytes` on a new connection and tells whether the server closed it (within 5 s).
async fn closed_after(addr: std::net::SocketAddr, bytes: &[u8]) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else {
        return false;
    };
    // The server may close before it read everything: a failed write is expected.
    let _ = stream.write_all(bytes).await;
    let mut chunk = vec![0u8; 64 * 1024];
    let read_to_end = async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), read_to_end)
        .await
        .is_ok()
}

/// Drives the counters Valkey added to `INFO stats` and returns the session's replies and
/// those counters: clients closed for their query and output buffer limits, ACL refusals by
/// reason, and the scripts `EVAL` added that were evicted (past 500, least recently run
/// first; `SCRIPT LOAD`'s kept), with the field names of `INFO stats`.
async fn stats_session(addr: std::net::SocketAddr) -> (Vec<String>, Vec<String>) {
    let url = format!("redis://{addr}/");
    let mut con = patient_conn(&url).await;
    let mut replies = Vec::new();
    let mut run = |r: String| replies.push(r);
    let setup: &[&[&str]] = &[
        &["CONFIG", "SET", "client-query-buffer-limit", "1048576"],
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 4096 0 0",
        ],
        &["SET", "big", &"x".repeat(100_000)],
        &[
            "ACL", "SETUSER", "u", "on", ">p", "+get", "+eval", "+publish", "~a*", "&c*",
        ],
        &["ACL", "DRYRUN", "u", "GET", "b"],
        &["ACL", "DRYRUN", "u", "SET", "a", "1"],
        &["ACL", "DRYRUN", "u", "PUBLISH", "d", "1"],
        &["ACL", "DRYRUN", "u", "GET", "a"],
    ];
    for args in setup {
        run(support::run(&mut con, args).await);
    }
    // A query past the limit, and a reply past the output limit: both clients closed.
    let mut query = b"*2\r\n$4\r\nECHO\r\n$3000000\r\n".to_vec();
    query.resize(query.len() + 1_100_000, b'x');
    run(format!(
        "query past the limit: closed={}",
        closed_after(addr, &query).await
    ));
    let mut reader = support::Wire::connect(addr).await;
    reader.send(&[&["GET", "big"]]).await;
    run(format!(
        "reply past the limit: closed={}",
        reader.drain_to_eof(Duration::from_secs(5)).await.is_some()
    ));
    // The limits back to their defaults, for the rest of the session's replies.
    for args in [
        &["CONFIG", "SET", "client-query-buffer-limit", "1073741824"][..],
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 0 0 0",
        ],
    ] {
        run(support::run(&mut con, args).await);
    }
    // ACL refusals: a wrong password, a command and a key the user may not use.
    let mut user = support::Wire::connect(addr).await;
    for frame in user
        .call(
            &[
                &["AUTH", "u", "wrong"],
                &["AUTH", "u", "p"],
                &["SET", "a", "1"],
                &["GET", "b"],
                &["GET", "a"],
                &["PUBLISH", "d", "x"],
                &["EVAL", "return redis.call('set', 'a', '1')", "0"],
                &["EVAL", "return redis.call('get', 'b')", "0"],
            ],
            8,
        )
        .await
    {
        run(String::from_utf8_lossy(&frame).into_owned());
    }
    // Scripts: one loaded, then 501 added by EVAL (the second run again before the last).
    let loaded = support::run(&mut con, &["SCRIPT", "LOAD", "return 'loaded'"]).await;
    run(loaded.clone());
    for n in 0..=500 {
        run(support::run(&mut con, &["EVAL", &format!("return {n}"), "0"]).await);
        if n == 499 {
            run(support::run(&mut con, &["EVAL", "return 1", "0"]).await);
        }
    }
    for body in ["return 0", "return 1", "return 2", "return 'loaded'"] {
        let sha = redis::Script::new(body).get_hash().to_string();
        run(support::run(&mut con, &["SCRIPT", "EXISTS", &sha]).await);
    }
    let counters = [
        "evicted_scripts",
        "client_query_buffer_limit_disconnections",
        "client_output_buffer_limit_disconnections",
        "acl_access_denied_auth",
        "acl_access_denied_cmd",
        "acl_access_denied_key",
        "acl_access_denied_channel",
    ];
    let stats = support::info(&mut con, "stats").await;
    for (k, v) in &stats {
        if counters.contains(&k.as_str()) {
            run(format!("{k}:{v}"));
        }
    }
    let names = stats.into_iter().map(|(k, _)| k).collect();
    (replies, names)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_stats_has_each_targets_fields_and_counts() {
    for compat in Compat::ALL {
        let ours = locksmith_server::Server::builder()
            .compat(compat)
            .start()
            .await
            .unwrap();
        let (replies, names) = stats_session(ours.addr()).await;
        if compat == Compat::Valkey81 {
            for counter in [
                "evicted_scripts:3",
                "client_query_buffer_limit_disconnections:1",
                "client_output_buffer_limit_disconnections:1",
                "acl_access_denied_auth:1",
                "acl_access_denied_cmd:2",
                "acl_access_denied_key:2",
                "acl_access_denied_channel:1",
            ] {
                assert!(
                    replies.iter().any(|r| r == counter),
                    "{counter} in {replies:?}"
                );
            }
        }
        let Some(reference) =
            support::RealRedis::start_reference(support::Reference::of(compat), &[])
        else {
            continue;
        };
        let (their_replies, their_names) = stats_session(reference.addr()).await;
        assert_eq!(replies, their_replies, "{compat}: left ours");
        let kept: Vec<String> = their_names
            .into_iter()
            .filter(|n| !STATS_NOT_KEPT.contains(&n.as_str()))
            .collect();
        assert_eq!(names, kept, "{compat}: left ours");
    }
}

/// The `INFO memory` fields ours does not keep, under both targets: the allocator's own
/// counters and ratios, and the per-kind breakdown of client and replication buffers
/// (COMPATIBILITY.md).
const MEMORY_NOT_KEPT: &[&str] = &[
    "allocator_allocated",
    "allocator_active",
    "allocator_resident",
    "allocator_muzzy",
    "allocator_frag_ratio",
    "allocator_frag_bytes",
    "allocator_rss_ratio",
    "allocator_rss_bytes",
    "rss_overhead_ratio",
    "rss_overhead_bytes",
    "mem_replication_backlog",
    "mem_total_replication_buffers",
    "mem_clients_slaves",
    "mem_clients_normal",
    "mem_cluster_links",
    "mem_aof_buffer",
    "active_defrag_running",
];

/// `INFO memory` and `INFO replication` have the target's fields in its order (Valkey's
/// `mem_overhead_db_hashtable_rehashing` and `replicas_waiting_psync`).
#[tokio::test]
async fn info_memory_and_replication_have_each_targets_fields() {
    for compat in Compat::ALL {
        let pair = Pair::start_for(compat).await;
        let Some(reference) = &pair.real else {
            continue;
        };
        let mut names = Vec::new();
        for url in [pair.ours.url(), reference.url()] {
            let mut con = patient_conn(&url).await;
            let mut of = Vec::new();
            for section in ["memory", "replication"] {
                of.push(
                    support::info(&mut con, section)
                        .await
                        .into_iter()
                        .map(|(k, _)| k)
                        .filter(|k| !MEMORY_NOT_KEPT.contains(&k.as_str()))
                        .collect::<Vec<_>>(),
                );
            }
            names.push(of);
        }
        assert_eq!(names[0], names[1], "{compat}: left ours");
    }
}

/// Every container's HELP under each target is its reference's own text, to the byte.
#[tokio::test]
async fn help_replies_are_each_references() {
    const CONTAINERS: &[&str] = &[
        "ACL", "CLIENT", "COMMAND", "CONFIG", "FUNCTION", "LATENCY", "MEMORY", "MODULE", "OBJECT",
        "PUBSUB", "SCRIPT", "SLOWLOG", "XGROUP", "XINFO",
    ];
    for compat in Compat::ALL {
        let mut pair = Pair::start_for(compat).await;
        for &container in CONTAINERS {
            pair.same(&[container, "HELP"]).await;
        }
    }
}

/// The fields of a `CLIENT INFO`/`LIST` line: its names in order, and the value of `name`.
fn client_fields(line: &str) -> Vec<(String, String)> {
    line.split_whitespace()
        .filter_map(|f| f.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `tot-net-in`, `tot-net-out` and `tot-cmds` of client `id` in `CLIENT LIST`.
async fn totals(con: &mut redis::aio::MultiplexedConnection, id: &str) -> [u64; 3] {
    let list: String = support::cmd(&["CLIENT", "LIST", "ID", id])
        .query_async(con)
        .await
        .unwrap();
    let fields = client_fields(&list);
    let get = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(u64::MAX)
    };
    [get("tot-net-in"), get("tot-net-out"), get("tot-cmds")]
}

/// Valkey's `CLIENT LIST` fields (unit/introspection's "client input output and command
/// process statistics"): the names in order, `capa=r` after `CLIENT CAPA redirect`, `watch`,
/// the library always, and the byte and command totals, which count a command's request when
/// read, its reply when written and the command once it ran (a blocked BLPOP once served).
async fn client_totals_session(addr: std::net::SocketAddr) -> Vec<String> {
    let url = format!("redis://{addr}/");
    let mut con = patient_conn(&url).await;
    let mut seen = Vec::new();
    let mut client = support::Wire::connect(addr).await;
    let frames = client
        .call(
            &[
                &["CLIENT", "CAPA", "redirect"],
                &["WATCH", "a", "b"],
                &["CLIENT", "ID"],
            ],
            3,
        )
        .await;
    let id = String::from_utf8_lossy(&frames[2])
        .trim_start_matches(':')
        .trim()
        .to_string();
    let list: String = support::cmd(&["CLIENT", "LIST", "ID", &id])
        .query_async(&mut con)
        .await
        .unwrap();
    let fields = client_fields(&list);
    seen.push(
        fields
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>()
            .join(" "),
    );
    for name in ["capa", "watch", "lib-name", "lib-ver"] {
        let value = fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone());
        seen.push(format!("{name}={value:?}"));
    }
    let before = totals(&mut con, &id).await;
    client.call(&[&["PING"]], 1).await;
    let after_ping = totals(&mut con, &id).await;
    client.send(&[&["BLPOP", "mylist", "0"]]).await;
    let mut blocked = after_ping;
    for _ in 0..250 {
        blocked = totals(&mut con, &id).await;
        if blocked[0] != after_ping[0] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    support::run(&mut con, &["LPUSH", "mylist", "a"]).await;
    client.frame().await;
    let served = totals(&mut con, &id).await;
    for (what, from, to) in [
        ("PING", before, after_ping),
        ("BLPOP blocked", after_ping, blocked),
        ("BLPOP served", blocked, served),
    ] {
        seen.push(format!(
            "{what}: in +{} out +{} cmds +{}",
            to[0].wrapping_sub(from[0]),
            to[1].wrapping_sub(from[1]),
            to[2].wrapping_sub(from[2])
        ));
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_list_has_valkeys_fields_and_totals() {
    let ours = locksmith_server::Server::builder()
        .compat(Compat::Valkey81)
        .start()
        .await
        .unwrap();
    let seen = client_totals_session(ours.addr()).await;
    assert!(
        seen.contains(&"PING: in +14 out +7 cmds +1".to_string()),
        "{seen:?}"
    );
    let Some(reference) = support::RealRedis::start_valkey(&[]) else {
        return;
    };
    assert_eq!(
        seen,
        client_totals_session(reference.addr()).await,
        "left: ours, right: valkey-server"
    );
}

/// `CLUSTER MYSHARDID` (Valkey): outside cluster mode the cluster error, as valkey-server
/// answers (Redis 7.0: an unknown subcommand, as redis-server answers); in a one-node cluster
/// 40 hex characters of its own, and a new one with the new node id of `CLUSTER RESET HARD`.
#[tokio::test]
async fn cluster_myshardid_names_the_nodes_shard() {
    under_both(&[], &[&["CLUSTER", "MYSHARDID"]]).await;
    let node = locksmith_server::Server::builder()
        .compat(Compat::Valkey81)
        .cluster(true)
        .start()
        .await
        .unwrap();
    let mut con = patient_conn(&node.url()).await;
    let ask = |args: &'static [&'static str]| support::cmd(args);
    let shard: String = ask(&["CLUSTER", "MYSHARDID"])
        .query_async(&mut con)
        .await
        .unwrap();
    let id: String = ask(&["CLUSTER", "MYID"])
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(shard.len(), 40);
    assert!(shard.bytes().all(|b| b.is_ascii_hexdigit()), "{shard}");
    assert_ne!(shard, id);
    support::run(&mut con, &["CLUSTER", "RESET", "HARD"]).await;
    let after: String = ask(&["CLUSTER", "MYSHARDID"])
        .query_async(&mut con)
        .await
        .unwrap();
    assert_ne!(after, shard);
}

/// The arguments of the newest `count` slow log entries.
async fn slowlog_argvs(con: &mut redis::aio::MultiplexedConnection, count: &str) -> Vec<String> {
    let entries: Vec<redis::Value> = support::cmd(&["SLOWLOG", "GET", count])
        .query_async(con)
        .await
        .unwrap();
    entries
        .iter()
        .map(|e| match e {
            redis::Value::Array(fields) => match fields.get(3) {
                Some(redis::Value::Array(args)) => args
                    .iter()
                    .map(|a| match a {
                        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                        other => format!("{other:?}"),
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                other => format!("{other:?}"),
            },
            other => format!("{other:?}"),
        })
        .collect()
}

/// What the slow log redacts under each target: Valkey also hides the users `ACL GETUSER`
/// and `ACL DELUSER` name and the TLS key passwords' values (unit/slowlog's "Certain commands
/// are omitted that contain sensitive information"); Redis 7.0.15 shows them.
#[tokio::test]
async fn the_slow_log_redacts_as_each_target_does() {
    for compat in Compat::ALL {
        let pair = Pair::start_for(compat).await;
        let mut urls = vec![pair.ours.url()];
        urls.extend(pair.real.as_ref().map(|r| r.url()));
        let mut seen = Vec::new();
        for url in urls {
            let mut con = patient_conn(&url).await;
            for args in [
                &["CONFIG", "SET", "slowlog-log-slower-than", "0"][..],
                &["SLOWLOG", "RESET"],
                &["CONFIG", "SET", "tls-key-file-pass", ""],
                &["CONFIG", "SET", "tls-client-key-file-pass", ""],
                &["CONFIG", "SET", "requirepass", ""],
                &["ACL", "SETUSER", "u1", "on"],
                &["ACL", "GETUSER", "u1"],
                &["ACL", "DELUSER", "u1", "nouser"],
                &["ACL", "GETUSER", "u1", "extra"],
                &["CONFIG", "SET", "slowlog-log-slower-than", "-1"],
            ] {
                support::run(&mut con, args).await;
            }
            seen.push(slowlog_argvs(&mut con, "-1").await);
        }
        if compat == Compat::Valkey81 {
            assert!(
                seen[0].contains(&"ACL DELUSER (redacted) (redacted)".to_string()),
                "{:?}",
                seen[0]
            );
        }
        if seen.len() == 2 {
            assert_eq!(seen[0], seen[1], "{compat}: left ours");
        }
    }
}

/// `CLIENT NO-TOUCH ON` (Redis 7.2, Valkey 8): the client's reads and writes leave a key's
/// access time alone (OBJECT IDLETIME keeps counting), TOUCH still touches; as valkey-server.
#[tokio::test]
async fn no_touch_clients_leave_access_times_alone() {
    let ours = locksmith_server::Server::builder()
        .compat(Compat::Valkey81)
        .start()
        .await
        .unwrap();
    let mut urls = vec![ours.url()];
    let reference = support::RealRedis::start_valkey(&[]);
    urls.extend(reference.as_ref().map(|r| r.url()));
    for url in urls {
        let mut con = patient_conn(&url).await;
        support::run(&mut con, &["SET", "foo", "bar"]).await;
        support::run(&mut con, &["RPUSH", "list", "a"]).await;
        tokio::time::sleep(Duration::from_millis(1100)).await;
        support::run(&mut con, &["CLIENT", "NO-TOUCH", "ON"]).await;
        support::run(&mut con, &["GET", "foo"]).await;
        support::run(&mut con, &["RPUSH", "list", "b"]).await;
        let idle = |reply: String| {
            reply
                .trim_start_matches("int(")
                .trim_end_matches(')')
                .parse::<i64>()
                .unwrap_or(-1)
        };
        let read = idle(support::run(&mut con, &["OBJECT", "IDLETIME", "foo"]).await);
        let written = idle(support::run(&mut con, &["OBJECT", "IDLETIME", "list"]).await);
        assert!(
            read >= 1 && written >= 1,
            "{url}: idle {read} and {written} after no-touch"
        );
        support::run(&mut con, &["TOUCH", "foo"]).await;
        let touched = idle(support::run(&mut con, &["OBJECT", "IDLETIME", "foo"]).await);
        assert_eq!(touched, 0, "{url}: TOUCH touches");
        support::run(&mut con, &["CLIENT", "NO-TOUCH", "OFF"]).await;
        support::run(&mut con, &["GET", "list"]).await;
        support::run(&mut con, &["LLEN", "list"]).await;
        let now_read = idle(support::run(&mut con, &["OBJECT", "IDLETIME", "list"]).await);
        assert_eq!(now_read, 0, "{url}: a read touches again");
    }
}
