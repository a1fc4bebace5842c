//! Valkey 8.1's commands and options after Redis 7.0, under `--compat valkey-8.1`, each
//! compared with valkey-server 8.1.8 (replies and error texts), and refused under the default
//! target as redis-server 7.0.15 refuses them.

use locksmith_server::Compat;
use locksmith_testkit::Pair;

/// Runs every line on ours under the Valkey target and on valkey-server, then on ours under
/// the Redis target and on redis-server, asserting equal replies each time.
pub(super) async fn under_both(setup: &[&[&str]], lines: &[&[&str]]) {
    for compat in Compat::ALL {
        let mut pair = Pair::start_for(compat).await;
        pair.all_same(setup).await;
        pair.all_same(lines).await;
    }
}

#[tokio::test]
async fn script_show_returns_a_cached_scripts_body() {
    under_both(
        &[&["SCRIPT", "LOAD", "return 'shown'"]],
        &[
            &["SCRIPT", "SHOW", "5a0d3c2e1d7b0d6ef1c6e0aa0d6b9ba3c0d8f7b1"],
            &["SCRIPT", "SHOW", "2a8c0d9c6a8e1a3b0ad41c3c6ee34a3b1e83c0e5"],
            &["SCRIPT", "SHOW"],
            &["SCRIPT", "SHOW", "a", "b"],
        ],
    )
    .await;
    let mut pair = Pair::start_for(Compat::Valkey81).await;
    let sha = pair.same(&["SCRIPT", "LOAD", "return 'shown'"]).await;
    let sha = sha
        .trim_start_matches("bulk-string('\"")
        .trim_end_matches("\"')");
    let body = pair.same(&["SCRIPT", "SHOW", sha]).await;
    assert!(body.contains("return 'shown'"), "{body}");
    pair.same(&["SCRIPT", "SHOW", &sha.to_ascii_uppercase()])
        .await;
    pair.same(&["SCRIPT", "FLUSH"]).await;
    pair.same(&["SCRIPT", "SHOW", sha]).await;
}

#[tokio::test]
async fn hscan_novalues_and_zscan_noscores() {
    under_both(
        &[
            &["HSET", "h", "f1", "v1", "f2", "v2"],
            &["ZADD", "z", "1", "a", "2", "b"],
            &["SADD", "s", "x"],
            &["SET", "k", "v"],
        ],
        &[
            &["HSCAN", "h", "0", "NOVALUES"],
            &["HSCAN", "h", "0", "novalues", "MATCH", "f1"],
            &["HSCAN", "h", "0", "COUNT", "10", "NOVALUES", "NOVALUES"],
            &["HSCAN", "nokey", "0", "NOVALUES"],
            &["HSCAN", "h", "0", "NOSCORES"],
            &["ZSCAN", "z", "0", "NOSCORES"],
            &["ZSCAN", "z", "0", "NOSCORES", "MATCH", "b"],
            &["ZSCAN", "z", "0", "NOVALUES"],
            &["SSCAN", "s", "0", "NOVALUES"],
            &["SSCAN", "s", "0", "NOSCORES"],
            &["SCAN", "0", "NOVALUES"],
            &["SCAN", "0", "NOSCORES"],
            &["HSCAN", "h", "0"],
            &["ZSCAN", "z", "0"],
        ],
    )
    .await;
}

#[tokio::test]
async fn set_ifeq_sets_only_over_an_equal_string() {
    under_both(
        &[&["SET", "n", "5"], &["RPUSH", "l", "a"]],
        &[
            &["SET", "n", "6", "IFEQ", "4"],
            &["GET", "n"],
            &["SET", "n", "6", "IFEQ", "5"],
            &["GET", "n"],
            &["SET", "n", "7", "ifeq", "6", "GET"],
            &["SET", "n", "8", "IFEQ", "1", "GET"],
            &["SET", "n", "9", "IFEQ", "7", "EX", "100"],
            &["TTL", "n"],
            &["SET", "n", "10", "IFEQ", "9", "KEEPTTL"],
            &["TTL", "n"],
            &["SET", "missing", "v", "IFEQ", "x"],
            &["EXISTS", "missing"],
            &["SET", "l", "v", "IFEQ", "a"],
            &["SET", "l", "v", "IFEQ", "a", "GET"],
            &["SET", "n", "v", "NX", "IFEQ", "10"],
            &["SET", "n", "v", "IFEQ", "10", "XX"],
            &["SET", "n", "v", "IFEQ", "10", "IFEQ", "10"],
            &["SET", "n", "v", "IFEQ"],
            &["SET", "n", "v", "IFEQ", "10", "EX", "0"],
            &["GET", "n"],
        ],
    )
    .await;
}

#[tokio::test]
async fn client_kill_maxage() {
    under_both(
        &[],
        &[
            &["CLIENT", "KILL", "MAXAGE", "1000000"],
            &["CLIENT", "KILL", "MAXAGE", "0"],
            &["CLIENT", "KILL", "MAXAGE", "-1"],
            &["CLIENT", "KILL", "MAXAGE", "abc"],
            &["CLIENT", "KILL", "MAXAGE", "99999999999999999999"],
            &["CLIENT", "KILL", "MAXAGE", "1000000", "SKIPME", "no"],
        ],
    )
    .await;
}

#[tokio::test]
async fn waitaof_answers_as_without_an_append_only_file() {
    under_both(
        &[&["SET", "k", "v"]],
        &[
            &["WAITAOF", "0", "0", "0"],
            &["WAITAOF", "1", "0", "0"],
            &["WAITAOF", "2", "0", "0"],
            &["WAITAOF", "-1", "0", "0"],
            &["WAITAOF", "a", "0", "0"],
            &["WAITAOF", "0", "-1", "0"],
            &["WAITAOF", "0", "a", "0"],
            &["WAITAOF", "0", "9223372036854775808", "0"],
            &["WAITAOF", "0", "0", "-1"],
            &["WAITAOF", "1", "0", "a"],
            &["WAITAOF", "0", "0"],
            // No replica acknowledges an fsync: the timeout ends it.
            &["WAITAOF", "0", "1", "50"],
            &["EVAL", "return redis.call('WAITAOF', 0, 1, 0)", "0"],
        ],
    )
    .await;
    // Inside MULTI it is queued and answers at once, as WAIT does on both targets.
    let mut pair = Pair::start_for(Compat::Valkey81).await;
    pair.all_same(&[
        &["MULTI"],
        &["WAITAOF", "0", "1", "0"],
        &["WAITAOF", "1", "0", "0"],
        &["WAIT", "1", "0"],
        &["EXEC"],
    ])
    .await;
    let mut pair = Pair::start_for(Compat::Redis70).await;
    pair.all_same(&[
        &["MULTI"],
        &["WAIT", "1", "0"],
        &["SET", "k", "v"],
        &["EXEC"],
    ])
    .await;
}

/// Valkey's argument checks of BITCOUNT and BITPOS (before the key is looked up; BITCOUNT's
/// `end` optional) and SCAN's refusal of an unknown type, against Redis 7.0's under the
/// default target.
#[tokio::test]
async fn bit_range_and_scan_type_checks_follow_the_target() {
    under_both(
        &[&["SET", "s", "foobar"], &["RPUSH", "l", "a"]],
        &[
            &["BITCOUNT", "s", "0"],
            &["BITCOUNT", "s", "-2"],
            &["BITCOUNT", "s", "1", "2"],
            &["BITCOUNT", "s", "1", "2", "BIT"],
            &["BITCOUNT", "s", "0", "1", "x"],
            &["BITCOUNT", "s", "0", "b", "x"],
            &["BITCOUNT", "s", "a", "b"],
            &["BITCOUNT", "nokey", "0", "1", "x"],
            &["BITCOUNT", "nokey", "a"],
            &["BITCOUNT", "l", "0", "1", "x"],
            &["BITCOUNT", "s", "0", "1", "bit", "x"],
            &["BITPOS", "s", "1", "0", "1", "x"],
            &["BITPOS", "nokey", "1", "0", "1", "x"],
            &["BITPOS", "nokey", "0", "a"],
            &["BITPOS", "nokey", "1", "0", "a"],
            &["BITPOS", "l", "1", "0", "a"],
            &["BITPOS", "nokey", "1", "0", "1", "bit", "x"],
            &["BITPOS", "s", "1", "2"],
            &["BITPOS", "nokey", "0", "1", "hello", "hello2"],
            &["BITPOS", "nokey", "0", "0", "1", "hello"],
            &["BITPOS", "s", "0", "1", "hello", "hello2"],
            &["SCAN", "0", "TYPE", "foo"],
            &["SCAN", "0", "TYPE", "String"],
            &["SCAN", "0", "TYPE", "list"],
        ],
    )
    .await;
}

/// `COMMANDLOG GET|LEN|RESET|HELP` with their types, counts and errors, as valkey-server
/// 8.1.8 answers them (the command is unknown under the default target: see
/// `compat::command_table_under_redis_is_redis_servers`).
#[tokio::test]
async fn commandlog_answers_and_refuses_as_valkey_server_does() {
    let mut pair = Pair::start_for(Compat::Valkey81).await;
    pair.all_same(&[
        &["COMMANDLOG", "HELP"],
        &["commandlog", "help"],
        &["COMMANDLOG"],
        &["COMMANDLOG", "foo"],
        &["COMMANDLOG", "HELP", "x"],
        &["COMMANDLOG", "GET"],
        &["COMMANDLOG", "GET", "1"],
        &["COMMANDLOG", "GET", "1", "slow", "x"],
        &["COMMANDLOG", "GET", "1", "foo"],
        &["COMMANDLOG", "GET", "x", "slow"],
        &["COMMANDLOG", "GET", "x", "foo"],
        &["COMMANDLOG", "GET", "-2", "slow"],
        &["COMMANDLOG", "GET", "99999999999999999999", "slow"],
        &["COMMANDLOG", "GET", "0", "slow"],
        &["COMMANDLOG", "GET", "-1", "LARGE-REPLY"],
        &["COMMANDLOG", "LEN"],
        &["COMMANDLOG", "LEN", "foo"],
        &["COMMANDLOG", "LEN", "slow", "x"],
        &["COMMANDLOG", "LEN", "Large-Request"],
        &["COMMANDLOG", "RESET", "foo"],
        &["COMMANDLOG", "RESET", "large-reply"],
        &["COMMANDLOG", "RESET"],
        &["COMMAND", "DOCS", "commandlog"],
        &["COMMAND", "INFO", "commandlog"],
    ])
    .await;
}

/// A log's threshold and max length as each target applies them, with every command logged
/// (threshold 0) so that nothing depends on timing: lowering the max length trims a log that
/// is on; Valkey's log with max length 0 takes no entry and keeps those it has, where Redis
/// 7.0's slow log empties at the next command. The slow log under both targets against each
/// reference; the large-request log under Valkey's.
#[tokio::test]
async fn commandlog_max_lengths_apply_as_each_target_does() {
    under_both(
        &[],
        &[
            &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
            &["SLOWLOG", "RESET"],
            &["PING"],
            &["PING"],
            &[
                "CONFIG",
                "SET",
                "slowlog-log-slower-than",
                "10000000",
                "slowlog-max-len",
                "1",
            ],
            &["SLOWLOG", "LEN"],
            &["CONFIG", "SET", "slowlog-max-len", "0"],
            &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
            &["PING"],
            &["SLOWLOG", "LEN"],
            &["CONFIG", "SET", "slowlog-max-len", "128"],
            &["SLOWLOG", "LEN"],
        ],
    )
    .await;
    let mut pair = Pair::start_for(Compat::Valkey81).await;
    pair.all_same(&[
        &["CONFIG", "SET", "commandlog-request-larger-than", "0"],
        &["COMMANDLOG", "RESET", "large-request"],
        &["PING"],
        &["PING"],
        &[
            "CONFIG",
            "SET",
            "commandlog-request-larger-than",
            "10000",
            "commandlog-large-request-max-len",
            "1",
        ],
        &["COMMANDLOG", "LEN", "large-request"],
        &["CONFIG", "SET", "commandlog-large-request-max-len", "0"],
        &["CONFIG", "SET", "commandlog-request-larger-than", "0"],
        &["PING"],
        &["COMMANDLOG", "LEN", "large-request"],
        &["CONFIG", "SET", "commandlog-large-request-max-len", "3"],
        &["COMMANDLOG", "LEN", "large-request"],
        &["CONFIG", "SET", "commandlog-request-larger-than", "-1"],
        &["PING"],
        &["COMMANDLOG", "LEN", "large-request"],
        &["CONFIG", "GET", "commandlog-request-larger-than"],
        &["CONFIG", "GET", "commandlog-large-request-max-len"],
    ])
    .await;
}

/// An entry of a command log without what may differ between two servers running the same
/// requests: its id, value (`None` for the slow log's durations), arguments, which client
/// (numbered by first appearance, oldest first) and the client's name.
type Entry = (i64, Option<i64>, Vec<String>, usize, String);

/// `COMMANDLOG GET -1 <t>` (or another command answering entries), oldest first, normalized.
async fn log_entries(con: &mut redis::aio::MultiplexedConnection, args: &[&str]) -> Vec<Entry> {
    type Raw = (i64, i64, i64, Vec<Vec<u8>>, String, String);
    let raw: Vec<Raw> = locksmith_testkit::cmd(args).query_async(con).await.unwrap();
    let mut clients: Vec<String> = Vec::new();
    raw.into_iter()
        .rev()
        .map(|(id, time, value, argv, addr, name)| {
            assert!(time > 1_700_000_000, "{time}");
            let client = match clients.iter().position(|c| *c == addr) {
                Some(i) => i,
                None => {
                    clients.push(addr);
                    clients.len() - 1
                }
            };
            let argv = argv
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let value = (args.get(3) != Some(&"slow") && args[0] != "SLOWLOG").then_some(value);
            (id, value, argv, client, name)
        })
        .collect()
}

/// Runs `lines` on `con` and returns nothing: setup whose replies do not matter here.
async fn run_all(con: &mut redis::aio::MultiplexedConnection, lines: &[&[&str]]) {
    for args in lines {
        locksmith_testkit::run(con, args).await;
    }
}

/// With the three logs off, waits (bounded) until `n` clients are blocked, then turns them
/// back on: the polling is logged on neither server.
async fn wait_blocked(con: &mut redis::aio::MultiplexedConnection, n: usize) {
    let thresholds = [
        "commandlog-execution-slower-than",
        "commandlog-request-larger-than",
        "commandlog-reply-larger-than",
    ];
    for t in thresholds {
        run_all(con, &[&["CONFIG", "SET", t, "-1"]]).await;
    }
    let mut blocked = 0;
    for _ in 0..500 {
        let field = locksmith_testkit::info_field(con, "clients", "blocked_clients").await;
        blocked = field.parse().unwrap();
        if blocked == n {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(blocked, n, "clients never blocked");
    for t in thresholds {
        run_all(con, &[&["CONFIG", "SET", t, "0"]]).await;
    }
}

/// The same clients sending the same bytes to the server at `addr`, each step waiting for its
/// replies; returns the slow, large-request and large-reply logs then (every command logged:
/// thresholds 0), after checking that `SLOWLOG GET` shows the slow one.
async fn sizes_scenario(
    addr: std::net::SocketAddr,
    admin: &mut redis::aio::MultiplexedConnection,
) -> [Vec<Entry>; 3] {
    use locksmith_testkit::Wire;
    run_all(
        admin,
        &[
            &["CONFIG", "SET", "commandlog-execution-slower-than", "0"],
            &["CONFIG", "SET", "commandlog-request-larger-than", "0"],
            &["CONFIG", "SET", "commandlog-reply-larger-than", "0"],
            &["COMMANDLOG", "RESET", "slow"],
            &["COMMANDLOG", "RESET", "large-request"],
            &["COMMANDLOG", "RESET", "large-reply"],
        ],
    )
    .await;
    let mut a = Wire::connect(addr).await;
    // Pipelined multibulk and inline requests (an inline one counts one space between
    // arguments and CRLF, however it is spaced or quoted).
    a.send_raw(
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nGET k\r\nPING\r\nSET  a   b\nECHO \"x y\" \r\n",
    )
    .await;
    a.frames(5).await;
    // A name; an argument past 128 bytes and more than 32 arguments (cut as the slow log
    // cuts them); an error reply.
    a.call(&[&["CLIENT", "SETNAME", "bob"]], 1).await;
    let long = "x".repeat(200);
    a.call(&[&["ECHO", &long]], 1).await;
    let members: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let mut rpush = vec!["RPUSH", "big"];
    rpush.extend(members.iter().map(String::as_str));
    a.call(&[&rpush], 1).await;
    a.call(&[&["INCR", "a"]], 1).await;
    // A transaction's commands: EXEC's request, the transaction's reply so far.
    a.call(
        &[&["MULTI"], &["SET", "k", "vvv"], &["GET", "k"], &["EXEC"]],
        4,
    )
    .await;
    // A script's commands: the script's request, no reply.
    let script = "redis.call('SET','k','vvvv'); return redis.call('GET','k')";
    a.call(&[&["EVAL", script, "0"]], 1).await;
    // Replies turned off are not counted.
    a.call(
        &[
            &["CLIENT", "REPLY", "OFF"],
            &["ECHO", "hidden"],
            &["CLIENT", "REPLY", "ON"],
        ],
        1,
    )
    .await;
    // RESP3 replies (HELLO's own reply shows the client's id, which differs between servers).
    let mut b = Wire::connect(addr).await;
    b.call(&[&["HELLO", "3"]], 1).await;
    b.call(&[&["HSET", "h", "f", "v"], &["HGETALL", "h"]], 2)
        .await;
    b.call(&[&["ZADD", "z", "1.5", "m"], &["ZSCORE", "z", "m"]], 2)
        .await;
    // A subscriber: its confirmations; a message that reached it between two commands counts
    // into the next one's reply.
    let mut s = Wire::connect(addr).await;
    s.call(&[&["SUBSCRIBE", "ch1", "ch2"]], 2).await;
    a.call(&[&["PUBLISH", "ch1", "hello"]], 1).await;
    s.frames(1).await;
    s.call(&[&["PING"]], 1).await;
    // A blocked command, logged once served (its own request, the reply it got); one that
    // times out, logged then.
    let mut c = Wire::connect(addr).await;
    c.send(&[&["BLPOP", "l", "0"]]).await;
    wait_blocked(admin, 1).await;
    a.call(&[&["RPUSH", "l", "x"]], 1).await;
    c.frames(1).await;
    c.call(&[&["BLPOP", "l", "0.01"]], 1).await;
    let slow = log_entries(admin, &["COMMANDLOG", "GET", "-1", "slow"]).await;
    // WAIT, at once and after its timeout (run outside the command path here: the slow
    // log, read above, does not take it).
    a.call(&[&["WAIT", "0", "0"], &["WAIT", "1", "10"]], 2)
        .await;
    let request = log_entries(admin, &["COMMANDLOG", "GET", "-1", "large-request"]).await;
    let reply = log_entries(admin, &["COMMANDLOG", "GET", "-1", "large-reply"]).await;
    // SLOWLOG shows the slow log (with what ran since).
    let slowlog = log_entries(admin, &["SLOWLOG", "GET", "-1"]).await;
    assert_eq!(slowlog[..slow.len()], slow[..]);
    // HELLO's reply shows the client's id, and the slow log's the durations, whose digits
    // differ between servers.
    let reply = reply
        .into_iter()
        .filter(|e| e.2[0] != "HELLO" && e.2[..] != ["COMMANDLOG", "GET", "-1", "slow"])
        .collect();
    [slow, request, reply]
}

/// The value `log` has for the first entry whose arguments are `argv`.
fn value_of(log: &[Entry], argv: &[&str]) -> Option<i64> {
    log.iter().find(|e| e.2 == argv).and_then(|e| e.1)
}

/// The three logs after the same requests on ours and on valkey-server: the same entries (ids,
/// arguments, clients, names; sizes; the slow log's durations aside), and on ours the sizes
/// valkey-server 8.1.8 gives (bytes of the request as sent, or for an inline one its
/// arguments, one space each and CRLF; bytes of the reply written, a transaction's so far,
/// none for a script's commands or a reply turned off, a message received between commands
/// counted into the next).
#[tokio::test]
async fn commandlog_measures_requests_and_replies_as_valkey_server_does() {
    let mut pair = Pair::start_for(Compat::Valkey81).await;
    let ours = sizes_scenario(pair.ours.addr(), &mut pair.ours_con).await;
    let [_, request, reply] = &ours;
    let eval = [
        "EVAL",
        "redis.call('SET','k','vvvv'); return redis.call('GET','k')",
        "0",
    ];
    let expected_requests: &[(&[&str], i64)] = &[
        (&["SET", "k", "v"], 27),
        (&["GET", "k"], 7),
        (&["PING"], 6),
        (&["SET", "a", "b"], 9),
        (&["ECHO", "x y"], 10),
        (&["SET", "k", "vvv"], 14),
        (&["BLPOP", "l", "0"], 29),
        (&["BLPOP", "l", "0.01"], 32),
        (&["WAIT", "1", "10"], 29),
    ];
    for (argv, size) in expected_requests {
        assert_eq!(value_of(request, argv), Some(*size), "request {argv:?}");
    }
    assert_eq!(value_of(request, &eval), Some(86));
    assert_eq!(value_of(request, &["SET", "k", "vvvv"]), Some(86));
    let expected_replies: &[(&[&str], i64)] = &[
        (&["SET", "k", "v"], 5),
        (&["GET", "k"], 7),
        (&["INCR", "a"], 46),
        (&["SET", "k", "vvv"], 9),
        (&["SET", "k", "vvvv"], 0),
        (&["ECHO", "hidden"], 0),
        (&["HGETALL", "h"], 18),
        (&["ZSCORE", "z", "m"], 6),
        (&["SUBSCRIBE", "ch1", "ch2"], 64),
        (&["PING"], 7),
        (&["BLPOP", "l", "0"], 18),
        (&["BLPOP", "l", "0.01"], 5),
        (&["WAIT", "0", "0"], 4),
        (&["WAIT", "1", "10"], 4),
    ];
    for (argv, size) in expected_replies {
        assert_eq!(value_of(reply, argv), Some(*size), "reply {argv:?}");
    }
    // The subscriber's PING: the message before it (37 bytes) and its own reply (20).
    let pings: Vec<_> = reply.iter().filter(|e| e.2 == ["PING"]).collect();
    assert_eq!(pings.last().and_then(|e| e.1), Some(57), "{pings:?}");
    let named = request
        .iter()
        .find(|e| e.2[0] == "ECHO" && e.2[1].len() > 100);
    assert_eq!(named.map(|e| e.4.as_str()), Some("bob"));
    if let (Some(real), Some(real_con)) = (&pair.real, &mut pair.real_con) {
        let theirs = sizes_scenario(real.addr(), real_con).await;
        for (i, name) in ["slow", "large-request", "large-reply"].iter().enumerate() {
            assert_eq!(
                ours[i], theirs[i],
                "{name} log (left: ours, right: valkey-server)"
            );
        }
    }
}
