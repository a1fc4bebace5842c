//! Streams compared with real Redis 7.0: every command's argument checks and error texts,
//! consumer groups (pending entries, claims, entries-read and lag), trimming by whole nodes
//! with `~` (the same entries go as in Redis), XINFO, RESP3 replies, and XREAD/XREADGROUP
//! blocking: served by XADD in FIFO order, timing out, never blocking in MULTI or scripts.

use locksmith_server::Compat;
use locksmith_testkit as support;

use std::time::Duration;
use support::{Pair, Twin};

/// Commands with explicit IDs (no clock in the replies), errors included.
const ERRORS_AND_BASICS: &[&[&str]] = &[
    &["xadd", "s", "1-1", "a", "1"],
    &["xadd", "s", "1-1", "a", "1"],
    &["xadd", "s", "1", "a", "1"],
    &["xadd", "s", "1-*", "b", "2"],
    &["xadd", "s", "2-5", "c", "3", "d", "4"],
    &["xadd", "s", "0-0", "a", "1"],
    &["xadd", "s2", "0-0", "a", "1"],
    &["exists", "s2"],
    &["xadd", "s"],
    &["xadd", "s", "3-0", "a"],
    &["xadd", "s", "maxlen"],
    &["xadd", "s", "maxlen", "2", "3-0", "a", "1"],
    &["xlen", "s"],
    &["xrange", "s", "-", "+"],
    &["xadd", "s", "maxlen", "-1", "4-0", "a", "1"],
    &["xadd", "s", "maxlen", "1", "minid", "2", "4-0", "a", "1"],
    &["xadd", "s", "limit", "10", "4-0", "a", "1"],
    &[
        "xadd", "s", "maxlen", "=", "2", "limit", "10", "4-0", "a", "1",
    ],
    &["xadd", "s", "nomkstream", "4-0", "x", "y"],
    &["xadd", "nos", "nomkstream", "4-0", "x", "y"],
    &["exists", "nos"],
    &["xadd", "s", "bogus", "a", "1"],
    &["xadd", "s", "5-x", "a", "1"],
    &["xrange", "s", "-", "+", "count", "1"],
    &["xrange", "s", "-", "+", "count", "0"],
    &["xrange", "s", "-", "+", "count", "-1"],
    &["xrange", "s", "(1-1", "+"],
    &["xrange", "s", "-", "(4-0"],
    &[
        "xrange",
        "s",
        "(18446744073709551615-18446744073709551615",
        "+",
    ],
    &["xrange", "s", "-", "(0-0"],
    &["xrange", "s", "2", "2"],
    &["xrevrange", "s", "+", "-", "count", "2"],
    &["xrevrange", "s", "+", "-"],
    &["xrange", "s", "-", "+", "bogus"],
    &["xrange", "s", "-", "+", "count"],
    &["xrange", "nokey", "-", "+"],
    &["set", "str", "v"],
    &["xrange", "str", "-", "+"],
    &["xlen", "str"],
    &["xadd", "str", "1", "a", "1"],
    &["xdel", "s", "1-1", "9-9"],
    &["xdel", "s", "bad"],
    &["xlen", "s"],
    &["xinfo", "stream", "s"],
    &["xinfo", "stream", "nokey"],
    &["xinfo", "stream", "s", "bogus"],
    &["xinfo", "stream", "s", "full"],
    &["xinfo", "stream", "s", "full", "count", "1"],
    &["xtrim", "s", "maxlen", "1"],
    &["xtrim", "s"],
    &["xtrim", "s", "minid", "0"],
    &["xtrim", "s", "limit", "5", "maxlen", "1"],
    &["xtrim", "s", "maxlen", "~", "0", "limit", "1"],
    &["xtrim", "nokey", "maxlen", "1"],
    &["xrange", "s", "-", "+"],
    &["xgroup", "create", "s", "g", "0"],
    &["xgroup", "create", "s", "g", "0"],
    &["xgroup", "create", "nokey", "g", "0"],
    &["xgroup", "create", "nokey", "g", "0", "mkstream"],
    &[
        "xgroup",
        "create",
        "nokey2",
        "g",
        "$",
        "mkstream",
        "entriesread",
        "5",
    ],
    &["xgroup", "create", "s", "g2", "$", "bogus"],
    &["xgroup", "create", "s", "g3", "$", "entriesread", "-2"],
    &["xinfo", "groups", "s"],
    &["xinfo", "groups", "nokey2"],
    &["xgroup", "setid", "s", "g", "0", "entriesread", "0"],
    &["xgroup", "setid", "s", "nog", "0"],
    &["xgroup", "setid", "s", "g", "bad"],
    &["xgroup", "createconsumer", "s", "g", "alice"],
    &["xgroup", "createconsumer", "s", "g", "alice"],
    &["xgroup", "createconsumer", "s", "nog", "alice"],
    &["xgroup", "delconsumer", "s", "g", "bob"],
    &["xgroup", "destroy", "s", "nog"],
    &["xgroup", "destroy", "nokey", "g"],
    &["xgroup", "help"],
    &["xgroup", "bogus"],
    &["xgroup"],
    &["xinfo", "help"],
    &["xsetid", "s", "1-0"],
    &["xsetid", "s", "10-0", "entriesadded", "1"],
    &["xsetid", "s", "10-0", "maxdeletedid", "11-0"],
    &["xsetid", "nokey", "1-0"],
    &["xsetid", "s", "10-0", "bogus"],
    &[
        "xsetid",
        "s",
        "10-0",
        "entriesadded",
        "100",
        "maxdeletedid",
        "9-0",
    ],
    &["xinfo", "stream", "s"],
    &["xadd", "s", "9999-0", "f", "v"],
    &["xack", "s", "g", "1-0"],
    &["xack", "s", "nog", "1-0"],
    &["xack", "s", "g", "bad"],
    &["xpending", "s", "g"],
    &["xpending", "s", "nog"],
    &["xpending", "s", "g", "-", "+", "10"],
    &["xpending", "s", "g", "-", "+", "10", "alice"],
    &["xpending", "s", "g", "idle", "10", "-", "+", "10"],
    &["xpending", "s", "g", "idle", "10", "-", "+"],
    &["xpending", "s", "g", "-", "+", "x"],
    &["xpending", "s"],
    &["xclaim", "s", "nog", "c", "0", "1-0"],
    &["xclaim", "s", "g", "c", "x", "1-0"],
    &["xautoclaim", "s", "g", "c", "0", "0"],
    &["xautoclaim", "s", "g", "c", "0", "0", "count", "0"],
    &["xautoclaim", "s", "g", "c", "0", "0", "justid", "bogus"],
    &["xautoclaim", "s", "nog", "c", "0", "0"],
    &["xread", "streams", "s"],
    &["xread", "streams", "s", "0"],
    &["xread", "count", "1", "streams", "s", "0"],
    &["xread", "count", "x", "streams", "s", "0"],
    &["xread", "group", "g", "c", "streams", "s", "0"],
    &["xread", "noack", "streams", "s", "0"],
    &["xread", "streams", "s", ">"],
    &["xread", "streams", "nokey", "0"],
    &["xread", "block", "x", "streams", "s", "0"],
    &["xread", "block", "-1", "streams", "s", "0"],
    &["xreadgroup", "group", "g", "c", "streams", "s", "$"],
    &["xreadgroup", "group", "nog", "c", "streams", "s", ">"],
    &["xreadgroup", "group", "g", "c", "streams", "nokey", ">"],
    &["xreadgroup", "streams", "s", ">"],
];

/// Consumer groups: delivery, history, acknowledgement, claims, entries-read and lag.
const GROUPS: &[&[&str]] = &[
    &["xadd", "x", "100", "a", "1"],
    &["xadd", "x", "101", "b", "1"],
    &["xadd", "x", "102", "c", "1"],
    &["xadd", "x", "103", "e", "1"],
    &["xadd", "x", "104", "f", "1"],
    &["xadd", "x", "105", "g", "1"],
    &["xgroup", "create", "x", "g1", "0"],
    &["xgroup", "create", "x", "g2", "0"],
    &[
        "xreadgroup",
        "group",
        "g1",
        "Alice",
        "count",
        "1",
        "streams",
        "x",
        ">",
    ],
    &[
        "xreadgroup",
        "group",
        "g1",
        "Bob",
        "count",
        "1",
        "streams",
        "x",
        ">",
    ],
    &[
        "xreadgroup",
        "group",
        "g1",
        "Bob",
        "noack",
        "count",
        "1",
        "streams",
        "x",
        ">",
    ],
    &[
        "xreadgroup",
        "group",
        "g2",
        "Charlie",
        "count",
        "4",
        "streams",
        "x",
        ">",
    ],
    &["xgroup", "setid", "x", "g1", "101-0"],
    &[
        "xreadgroup",
        "group",
        "g1",
        "Dave",
        "count",
        "3",
        "streams",
        "x",
        ">",
    ],
    &["xdel", "x", "103"],
    &["xinfo", "groups", "x"],
    &["xpending", "x", "g1"],
    &["xreadgroup", "group", "g1", "Alice", "streams", "x", "0"],
    &["xreadgroup", "group", "g1", "Dave", "streams", "x", "0"],
    &[
        "xreadgroup",
        "group",
        "g1",
        "Dave",
        "count",
        "1",
        "streams",
        "x",
        "0",
    ],
    &["xreadgroup", "group", "g1", "Nobody", "streams", "x", "0"],
    &["xack", "x", "g1", "102-0", "103-0", "999-0"],
    &["xinfo", "groups", "x"],
    &["xclaim", "x", "g1", "Zed", "0", "100-0", "justid"],
    &[
        "xclaim",
        "x",
        "g1",
        "Zed",
        "0",
        "104-0",
        "retrycount",
        "7",
        "justid",
    ],
    &["xclaim", "x", "g1", "Zed", "0", "105-0", "force", "justid"],
    &["xclaim", "x", "g1", "Zed", "0", "103-0", "force"],
    &["xclaim", "x", "g1", "Zed", "0", "101-0", "bogus"],
    &[
        "xclaim", "x", "g1", "Zed", "0", "100-0", "lastid", "200-0", "justid",
    ],
    &["xinfo", "groups", "x"],
    &[
        "xautoclaim",
        "x",
        "g2",
        "Yan",
        "0",
        "0",
        "count",
        "2",
        "justid",
    ],
    &[
        "xautoclaim",
        "x",
        "g2",
        "Yan",
        "0",
        "0",
        "count",
        "10",
        "justid",
    ],
    &["xautoclaim", "x", "g2", "Yan", "0", "(0-0", "justid"],
    &["xgroup", "delconsumer", "x", "g2", "Yan"],
    &["xgroup", "delconsumer", "x", "g2", "Charlie"],
    &["xinfo", "groups", "x"],
    &["xgroup", "destroy", "x", "g2"],
    &["xinfo", "groups", "x"],
    &["xadd", "y", "1", "a", "1"],
    &["xadd", "y", "2", "b", "2"],
    &["xgroup", "create", "y", "g", "0"],
    &["xdel", "y", "1"],
    &["xinfo", "groups", "y"],
    &["xreadgroup", "group", "g", "c", "streams", "y", ">"],
    &["xinfo", "groups", "y"],
    &["xadd", "y", "3", "c", "3"],
    &["xinfo", "groups", "y"],
    &["xinfo", "stream", "y"],
    &["xgroup", "create", "e", "g", "$", "mkstream"],
    &["xinfo", "stream", "e"],
    &["xinfo", "stream", "e", "full"],
    &["xadd", "z", "maxlen", "~", "5", "1", "a", "1"],
    &["xtrim", "z", "maxlen", "~", "0"],
    &["xdel", "z", "1"],
    &["xinfo", "stream", "z"],
    &["xadd", "z", "2", "b", "2"],
    &["xinfo", "stream", "z"],
];

#[tokio::test]
async fn stream_commands_and_errors_match_redis() {
    let mut pair = Pair::start().await;
    pair.all_same(ERRORS_AND_BASICS).await;
    pair.same(&["FLUSHALL"]).await;
    pair.all_same(GROUPS).await;
}

#[tokio::test]
async fn stream_replies_match_redis_in_resp3() {
    let mut pair = support::Resp3Pair::start().await;
    pair.all_same(GROUPS).await;
    pair.all_same(&[
        &["XREAD", "STREAMS", "x", "y", "0", "0"],
        &["XINFO", "STREAM", "x"],
    ])
    .await;
}

// `~` trimming removes the nodes Redis would (100 entries or about 4 KB each), and the radix
// tree figures of XINFO follow.
#[tokio::test]
async fn approximate_trimming_removes_the_same_entries_as_redis() {
    let mut pair = Pair::start().await;
    let mut script: Vec<Vec<String>> = Vec::new();
    for i in 1..=1000 {
        script.push(vec![
            "XADD".into(),
            "t".into(),
            i.to_string(),
            "item".into(),
            "2".into(),
        ]);
    }
    for i in 1..=120 {
        script.push(vec![
            "XADD".into(),
            "w".into(),
            i.to_string(),
            "k".repeat(40),
            "v".repeat(40),
        ]);
    }
    for cmd in [
        "XTRIM t MAXLEN ~ 550",
        "XLEN t",
        "XTRIM t MAXLEN ~ 100 LIMIT 250",
        "XLEN t",
        "XTRIM t MINID ~ 800",
        "XTRIM t MINID 850",
        "XINFO STREAM t",
        "XTRIM w MAXLEN ~ 1",
        "XLEN w",
        "XINFO STREAM w",
    ] {
        script.push(cmd.split(' ').map(String::from).collect());
    }
    for args in &script {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        pair.same(&args).await;
    }
}

// XREAD BLOCK with `$` is served by the next XADD; XREADGROUP BLOCK `>` too, FIFO; a timeout
// answers nil; inside MULTI they answer at once, inside a script BLOCK is refused.
#[tokio::test]
async fn blocked_readers_are_served_and_time_out_as_in_redis() {
    let pair = Pair::start().await;
    let mut twin = Twin::connect(&pair).await;
    let mut writer = Twin::connect(&pair).await;
    let mut second = Twin::connect(&pair).await;
    writer
        .same(&[&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]], 1)
        .await;
    twin.send(&[&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]])
        .await;
    second
        .send(&[&[
            "XREADGROUP",
            "GROUP",
            "g",
            "c2",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ]])
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    writer.same(&[&["XADD", "s", "1-1", "f", "v"]], 1).await;
    twin.expect(1).await;
    second.expect(1).await;
    // (The summary form: the detailed one reports idle milliseconds, a clock reading.)
    writer.same(&[&["XPENDING", "s", "g"]], 1).await;
    // A timeout.
    twin.same(&[&["XREAD", "BLOCK", "50", "STREAMS", "s", "$"]], 1)
        .await;
    // MULTI never blocks; scripts refuse BLOCK.
    twin.same(
        &[
            &["MULTI"],
            &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "BLOCK",
                "0",
                "STREAMS",
                "s",
                ">",
            ],
            &["EXEC"],
        ],
        4,
    )
    .await;
    twin.same(
        &[&[
            "EVAL",
            "return redis.pcall('xread','BLOCK',0,'STREAMS','s','$')",
            "1",
            "s",
        ]],
        1,
    )
    .await;
    twin.same(
        &[&[
            "EVAL",
            "return redis.pcall('xread','STREAMS','s','$')",
            "1",
            "s",
        ]],
        1,
    )
    .await;
}

// Random stream operations (explicit IDs, every trimming form with small nodes, groups, reads,
// acknowledgements, claims) on both servers, replies compared one by one; a fixed seed and a
// bounded count. The state-changing replies and XINFO/XPENDING summaries hold no clock.
#[tokio::test]
async fn random_stream_operations_match_redis() {
    use rand::{Rng, SeedableRng};
    let mut pair = Pair::start().await;
    if pair.real_con.is_none() {
        return;
    }
    pair.same(&["CONFIG", "SET", "stream-node-max-entries", "5"])
        .await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(14);
    let mut ms = 0u64;
    for t in 0..1500u32 {
        let id = |rng: &mut rand::rngs::StdRng, ms: u64| {
            format!("{}-{}", rng.random_range(0..ms + 3), rng.random_range(0..3))
        };
        let k = ["s1", "s2"][rng.random_range(0..2)];
        let g = ["g1", "g2"][rng.random_range(0..2)];
        let c = ["a", "b", "c"][rng.random_range(0..3)];
        let mut cmd: Vec<String> = Vec::new();
        let mut push = |parts: &[&str]| cmd.extend(parts.iter().map(|p| p.to_string()));
        match rng.random_range(0..16) {
            0..=4 => {
                ms += [0, 1, 1, 2][rng.random_range(0..4)];
                push(&["XADD", k]);
                match rng.random_range(0..5) {
                    0 => push(&["MAXLEN", "~", &rng.random_range(0..15).to_string()]),
                    1 => push(&["MINID", &id(&mut rng, ms)]),
                    2 => push(&["MAXLEN", &rng.random_range(0..20).to_string()]),
                    3 => push(&[
                        "MINID",
                        "~",
                        &id(&mut rng, ms),
                        "LIMIT",
                        &rng.random_range(0..8).to_string(),
                    ]),
                    _ => {}
                }
                push(&[
                    &format!("{ms}-{}", rng.random_range(0..3)),
                    "f",
                    &t.to_string(),
                ]);
            }
            5 => push(&["XDEL", k, &id(&mut rng, ms), &id(&mut rng, ms)]),
            6 => push(&[
                "XTRIM",
                k,
                "MINID",
                ["~", "="][rng.random_range(0..2)],
                &id(&mut rng, ms),
            ]),
            7 => push(&["XGROUP", "CREATE", k, g, &id(&mut rng, ms), "MKSTREAM"]),
            8 => push(&["XREADGROUP", "GROUP", g, c, "COUNT", "2", "STREAMS", k, ">"]),
            9 => push(&["XACK", k, g, &id(&mut rng, ms), &id(&mut rng, ms)]),
            10 => push(&["XCLAIM", k, g, c, "0", &id(&mut rng, ms), "JUSTID", "FORCE"]),
            11 => push(&[
                "XAUTOCLAIM",
                k,
                g,
                c,
                "0",
                &id(&mut rng, ms),
                "COUNT",
                "3",
                "JUSTID",
            ]),
            12 => push(&["XPENDING", k, g]),
            13 => push(&["XINFO", "GROUPS", k]),
            14 => push(&["XINFO", "STREAM", k]),
            _ => push(&[
                "XTRIM",
                k,
                "MAXLEN",
                "~",
                &rng.random_range(0..15).to_string(),
            ]),
        }
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        pair.same(&args).await;
    }
    pair.same(&["CONFIG", "SET", "stream-node-max-entries", "100"])
        .await;
}

/// `XREAD ... STREAMS key +` reads the stream's last entry under the Valkey target (the entry
/// at the last ID, so nothing once it is deleted; XREADGROUP rejects `+`), and is an invalid
/// ID under Redis 7.0's: each compared with its target's reference.
#[tokio::test]
async fn xread_plus_reads_the_last_entry_under_the_valkey_target() {
    use locksmith_server::Compat;
    for compat in Compat::ALL {
        let mut pair = Pair::start_for(compat).await;
        pair.all_same(&[
            &["xadd", "s", "1-0", "a", "1"],
            &["xadd", "s", "2-0", "b", "2"],
            &["xadd", "s", "3-0", "c", "3"],
        ])
        .await;
        let last = pair.same(&["xread", "streams", "s", "+"]).await;
        match compat {
            Compat::Redis70 => assert!(
                last.starts_with("ERROR ERR Invalid stream ID specified"),
                "{last}"
            ),
            Compat::Valkey81 => assert!(
                last.contains("3-0") && !last.contains("2-0") && !last.contains("ERROR"),
                "{last}"
            ),
        }
        pair.all_same(&[
            &["xread", "count", "3", "streams", "s", "+"],
            &["xread", "streams", "s", "nosuch", "+", "+"],
            &["xread", "streams", "s", "s", "0-0", "+"],
            &["xadd", "s", "3-18446744073709551615", "d", "4"],
            &["xread", "streams", "s", "+"],
            &["xdel", "s", "3-18446744073709551615"],
            &["xread", "streams", "s", "+"],
            &["xgroup", "create", "s", "g", "0"],
            &["xreadgroup", "group", "g", "c", "streams", "s", "+"],
            &["xreadgroup", "group", "nosuch", "c", "streams", "s", "+"],
            &["xgroup", "create", "m", "g", "$", "mkstream"],
            &["xread", "streams", "m", "+"],
            &["xread", "block", "10", "streams", "s", "+"],
        ])
        .await;
    }
}

/// `XSETID` below the stream's max deleted entry ID (without `MAXDELETEDID`) is refused under
/// the Valkey target and accepted under Redis 7.0's, each as its reference answers.
#[tokio::test]
async fn xsetid_below_the_max_deleted_id_is_refused_only_under_the_valkey_target() {
    use locksmith_server::Compat;
    for compat in Compat::ALL {
        let mut pair = Pair::start_for(compat).await;
        pair.all_same(&[
            &["xadd", "x", "1-1", "a", "1"],
            &["xadd", "x", "1-2", "b", "2"],
            &["xadd", "x", "1-3", "c", "3"],
            &["xdel", "x", "1-2", "1-3"],
        ])
        .await;
        let reply = pair.same(&["xsetid", "x", "1-2"]).await;
        assert_eq!(
            reply.contains("smaller than current max_deleted_entry_id"),
            compat == Compat::Valkey81,
            "{compat}: {reply}"
        );
        pair.all_same(&[
            &["xsetid", "x", "1-4", "maxdeletedid", "1-2"],
            &["xinfo", "stream", "x"],
        ])
        .await;
    }
}

/// A consumer's fields in XINFO CONSUMERS and XINFO STREAM FULL, as names and values: the
/// field names in order, each `(name, integer or -2 when not an integer)`.
async fn consumer_fields(
    con: &mut redis::aio::MultiplexedConnection,
    args: &[&str],
) -> Vec<Vec<(String, i64)>> {
    fn pairs(items: &[redis::Value]) -> Vec<(String, i64)> {
        items
            .chunks(2)
            .filter_map(|kv| match kv {
                [redis::Value::BulkString(k), v] => Some((
                    String::from_utf8_lossy(k).into_owned(),
                    match v {
                        redis::Value::Int(i) => *i,
                        _ => -2,
                    },
                )),
                _ => None,
            })
            .collect()
    }
    fn each(consumers: &[redis::Value]) -> Vec<Vec<(String, i64)>> {
        consumers
            .iter()
            .filter_map(|c| match c {
                redis::Value::Array(kv) => Some(pairs(kv)),
                _ => None,
            })
            .collect()
    }
    let reply: redis::Value = support::cmd(args).query_async(con).await.unwrap();
    let redis::Value::Array(items) = reply else {
        panic!("{args:?} answered {reply:?}");
    };
    if args[1].eq_ignore_ascii_case("CONSUMERS") {
        return each(&items);
    }
    // XINFO STREAM key FULL: groups → the first group's consumers.
    let stream = pairs(&items);
    let at = stream.iter().position(|(k, _)| k == "groups").unwrap() * 2 + 1;
    let redis::Value::Array(groups) = &items[at] else {
        panic!("groups: {:?}", items[at]);
    };
    let redis::Value::Array(group) = &groups[0] else {
        panic!("group: {:?}", groups[0]);
    };
    let at = pairs(group)
        .iter()
        .position(|(k, _)| k == "consumers")
        .unwrap()
        * 2
        + 1;
    let redis::Value::Array(consumers) = &group[at] else {
        panic!("consumers: {:?}", group[at]);
    };
    each(consumers)
}

/// XINFO CONSUMERS and XINFO STREAM FULL show a consumer's active time under Valkey's target
/// (`inactive`, `active-time`: -1 for a consumer that never got an entry, else the time since /
/// of the last read that gave it one) and not under Redis 7.0's, field for field as each
/// reference answers.
#[tokio::test]
async fn xinfo_shows_consumers_active_time_as_each_target_does() {
    for compat in [Compat::Redis70, Compat::Valkey81] {
        let mut pair = Pair::start_for(compat).await;
        pair.all_same(&[
            &["XADD", "s", "1-1", "f", "v"],
            &["XGROUP", "CREATE", "s", "g", "0"],
            &["XGROUP", "CREATECONSUMER", "s", "g", "idle"],
        ])
        .await;
        pair.same(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "reader",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">",
        ])
        .await;
        for args in [
            &["XINFO", "CONSUMERS", "s", "g"][..],
            &["XINFO", "STREAM", "s", "FULL"][..],
        ] {
            let ours = consumer_fields(&mut pair.ours_con, args).await;
            let names = |cs: &[Vec<(String, i64)>]| -> Vec<Vec<String>> {
                cs.iter()
                    .map(|c| c.iter().map(|(k, _)| k.clone()).collect())
                    .collect()
            };
            let active = |c: &[(String, i64)]| {
                c.iter()
                    .find(|(k, _)| k == "inactive" || k == "active-time")
                    .map(|(_, v)| *v)
            };
            assert_eq!(ours.len(), 2, "{compat}: {args:?}: {ours:?}");
            // `idle` never got an entry, `reader` did.
            let (idle, reader) = (&ours[0], &ours[1]);
            if compat == Compat::Valkey81 {
                assert_eq!(active(idle), Some(-1), "{args:?}: {idle:?}");
                let t = active(reader).unwrap_or(-1);
                assert!(t >= 0, "{args:?}: {reader:?}");
            } else {
                assert_eq!(active(reader), None, "{args:?}: {reader:?}");
            }
            if let Some(real_con) = &mut pair.real_con {
                let real = consumer_fields(real_con, args).await;
                assert_eq!(names(&ours), names(&real), "{compat}: {args:?}");
                assert_eq!(
                    real.iter()
                        .map(|c| active(c).map(|v| v.min(0)))
                        .collect::<Vec<_>>(),
                    ours.iter()
                        .map(|c| active(c).map(|v| v.min(0)))
                        .collect::<Vec<_>>(),
                    "{compat}: {args:?}"
                );
            }
        }
    }
}

/// An XREADGROUP that serves nothing creates its consumer under Valkey's target (Redis 7.2)
/// and not under Redis 7.0's, blocking or not, as each reference does.
#[tokio::test]
async fn an_unserved_xreadgroup_creates_its_consumer_as_each_target_does() {
    for compat in [Compat::Redis70, Compat::Valkey81] {
        let mut pair = Pair::start_for(compat).await;
        pair.same(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
            .await;
        pair.same(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">",
        ])
        .await;
        pair.same(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "BLOCK",
            "10",
            "STREAMS",
            "s",
            ">",
        ])
        .await;
        let consumers = consumer_fields(&mut pair.ours_con, &["XINFO", "CONSUMERS", "s", "g"])
            .await
            .len();
        let expected = if compat == Compat::Valkey81 { 2 } else { 0 };
        assert_eq!(consumers, expected, "{compat}");
        pair.same(&["XINFO", "GROUPS", "s"]).await;
    }
}
