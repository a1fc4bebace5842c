//! Redis's security history, its protocol, types and ACL half: one test per CVE whose input
//! reaches what the server implements, with Redis's own regression input from its suite (or,
//! for a fix after 7.0.15's suite, the input its advisory describes), at sizes that keep the
//! test to a few seconds (the limits that make Redis's gigabyte inputs small are lowered, as
//! `proto-max-bulk-len`). Replies are compared with redis-server when it is on the PATH and
//! checked against Redis's answer in any case: its error or result, never a crash, a hang or
//! unbounded memory.

use locksmith_server::Server;
use locksmith_testkit as support;
use std::net::SocketAddr;
use std::time::Duration;
use support::{Pair, RealRedis};

/// Sends `input` on a fresh connection to ours and to the real server, if any; asserts the
/// same bytes back and returns ours.
async fn raw_same(ours: SocketAddr, real: Option<SocketAddr>, input: &[u8]) -> Vec<u8> {
    let got = support::raw(ours, input).await;
    if let Some(real) = real {
        let want = support::raw(real, input).await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "reply to {:?} (left: ours, right: redis)",
            String::from_utf8_lossy(&input[..input.len().min(80)])
        );
    }
    got
}

/// A command as RESP, its arguments as bytes.
fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// CVE-2021-32627: a stream element past the bulk limit (Redis's `violations.tcl`: XADD
/// with one 5 GB field after raising `proto-max-bulk-len`; here the limit at its 1 MB floor
/// and a 2 MB field) ends in the protocol error with no stream made; big fields added one
/// XADD at a time with `stream-node-max-bytes 0` ("several XADD big fields") all land.
#[tokio::test]
async fn cve_2021_32627_a_stream_field_past_the_bulk_limit_is_refused() {
    let mut pair = Pair::start().await;
    pair.same(&["CONFIG", "SET", "proto-max-bulk-len", "1048576"])
        .await;
    let mut input = b"*5\r\n$4\r\nXADD\r\n$2\r\nS1\r\n$1\r\n*\r\n$1\r\nA\r\n$2000000\r\n".to_vec();
    input.extend_from_slice(&[b'x'; 4096]);
    let real = pair.real.as_ref().map(RealRedis::addr);
    let reply = raw_same(pair.ours.addr(), real, &input).await;
    assert_eq!(reply, b"-ERR Protocol error: invalid bulk length\r\n");
    assert_eq!(pair.same(&["XLEN", "S1"]).await, "int(0)");
    pair.same(&["CONFIG", "SET", "stream-node-max-bytes", "0"])
        .await;
    let big = "x".repeat(100_000);
    for _ in 0..10 {
        let ours = support::run(
            &mut pair.ours_con,
            &["XADD", "stream", "*", "1", &big, "2", &big],
        )
        .await;
        assert!(ours.starts_with("bulk-string"), "{ours}");
        if let Some(real) = &mut pair.real_con {
            support::run(real, &["XADD", "stream", "*", "1", &big, "2", &big]).await;
        }
    }
    assert_eq!(pair.same(&["XLEN", "stream"]).await, "int(10)");
}

/// CVE-2021-32628: big hash fields (Redis's "hash with many big fields": `hash-max-ziplist-
/// value` 1 GB and ten 500 MB values; here 200 KB values) keep Redis's encoding, and a value
/// past the bulk limit is refused by the protocol ("hash with one huge field").
#[tokio::test]
async fn cve_2021_32628_big_hash_fields_keep_redis_s_encoding() {
    let mut pair = Pair::start().await;
    pair.same(&["CONFIG", "SET", "hash-max-ziplist-value", "1000000000"])
        .await;
    let big = "x".repeat(200_000);
    for j in 0..10 {
        pair.same(&["HSET", "h", &j.to_string(), &big]).await;
    }
    assert_eq!(
        pair.same(&["OBJECT", "ENCODING", "h"]).await,
        "bulk-string('\"listpack\"')"
    );
    assert_eq!(pair.same(&["HSTRLEN", "h", "9"]).await, "int(200000)");
    pair.same(&["CONFIG", "SET", "proto-max-bulk-len", "1048576"])
        .await;
    let input = b"*4\r\n$4\r\nHSET\r\n$2\r\nH1\r\n$1\r\nA\r\n$5000000000\r\n";
    let real = pair.real.as_ref().map(RealRedis::addr);
    let reply = raw_same(pair.ours.addr(), real, input).await;
    assert_eq!(reply, b"-ERR Protocol error: invalid bulk length\r\n");
    assert_eq!(pair.same(&["EXISTS", "H1"]).await, "int(0)");
}

/// CVE-2021-32675: an unauthenticated client cannot make the server allocate for a big
/// request (Redis's `auth.tcl`: `*100` and `$100000000` before AUTH are protocol errors).
#[tokio::test]
async fn cve_2021_32675_unauthenticated_requests_are_limited() {
    let ours = Server::builder()
        .requirepass("foobar")
        .start()
        .await
        .unwrap();
    let real = RealRedis::start_with(&["--requirepass", "foobar"]);
    let real_addr = real.as_ref().map(RealRedis::addr);
    for (input, error) in [
        (&b"*100\r\n"[..], "unauthenticated multibulk length"),
        (b"*1\r\n$100000000\r\n", "unauthenticated bulk length"),
        (b"*11\r\n", "unauthenticated multibulk length"),
        (b"*1\r\n$16385\r\n", "unauthenticated bulk length"),
    ] {
        let reply = raw_same(ours.addr(), real_addr, input).await;
        assert_eq!(
            String::from_utf8_lossy(&reply),
            format!("-ERR Protocol error: {error}\r\n")
        );
    }
    // At the limits, the request is read on (NOAUTH once complete).
    let at_limit = resp(&[b"ECHO", &[b'x'; 16384]]);
    let reply = raw_same(ours.addr(), real_addr, &at_limit).await;
    assert!(reply.starts_with(b"-NOAUTH"), "{reply:?}");
}

/// CVE-2021-32687: `set-max-intset-entries` past 2^31 (the intset's size overflowed) is taken
/// as Redis takes it, and an intset under it stays one. Redis's fix (its d37ffe0f4) came
/// without a test; the inputs are ours.
#[tokio::test]
async fn cve_2021_32687_a_huge_set_max_intset_entries_is_safe() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["CONFIG", "SET", "set-max-intset-entries", "2147483648"],
        &["CONFIG", "GET", "set-max-intset-entries"],
        &[
            "CONFIG",
            "SET",
            "set-max-intset-entries",
            "9223372036854775807",
        ],
        &[
            "CONFIG",
            "SET",
            "set-max-intset-entries",
            "9223372036854775808",
        ],
        &["CONFIG", "SET", "set-max-intset-entries", "-1"],
        &["CONFIG", "GET", "set-max-intset-entries"],
    ])
    .await;
    let members: Vec<String> = (0..500).map(|i| (i * 7).to_string()).collect();
    let mut sadd = vec!["SADD", "s"];
    sadd.extend(members.iter().map(String::as_str));
    assert_eq!(pair.same(&sadd).await, "int(500)");
    pair.all_same(&[
        &["OBJECT", "ENCODING", "s"],
        &["SCARD", "s"],
        &["SISMEMBER", "s", "3493"],
        &["SADD", "s", "-9223372036854775808", "9223372036854775807"],
        &["OBJECT", "ENCODING", "s"],
    ])
    .await;
}

/// CVE-2021-41099: strings grown past `proto-max-bulk-len` by SETRANGE and APPEND (an sds
/// overflow with a raised limit) are refused with Redis's error. Redis's fix (its ec378e6c3)
/// came without a test; the inputs are ours.
#[tokio::test]
async fn cve_2021_41099_strings_cannot_grow_past_the_bulk_limit() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["SETRANGE", "k", "2000000000", "x"],
        &["CONFIG", "SET", "proto-max-bulk-len", "1048576"],
        &["SETRANGE", "k2", "2000000", "x"],
        &["SETRANGE", "k2", "1048575", "x"],
        &["STRLEN", "k2"],
        &["APPEND", "k2", "y"],
        &["SETBIT", "b", "8388608", "1"],
        &["SETBIT", "b", "8388607", "1"],
    ])
    .await;
    assert_eq!(
        pair.same(&["SETRANGE", "k3", "2000000", "x"]).await,
        "ERROR ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    );
}

/// CVE-2022-35951: XAUTOCLAIM with a COUNT whose reply size overflowed (Redis's
/// `stream-cgroups.tcl`: COUNT 8070450532247928833) is refused.
#[tokio::test]
async fn cve_2022_35951_xautoclaim_count_out_of_range_is_refused() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["XADD", "x", "1-0", "f", "v"],
        &["XGROUP", "CREATE", "x", "grp", "0"],
        &["XREADGROUP", "GROUP", "grp", "Alice", "STREAMS", "x", ">"],
        &["XAUTOCLAIM", "x", "grp", "Bob", "0", "0-0", "COUNT", "0"],
        &[
            "XAUTOCLAIM",
            "x",
            "grp",
            "Bob",
            "0",
            "0-0",
            "COUNT",
            "9223372036854775807",
        ],
        &[
            "XAUTOCLAIM",
            "x",
            "grp",
            "Bob",
            "0",
            "0-0",
            "COUNT",
            "922337203685477580",
        ],
    ])
    .await;
    assert_eq!(
        pair.same(&[
            "XAUTOCLAIM",
            "x",
            "grp",
            "Bob",
            "0",
            "3-0",
            "COUNT",
            "8070450532247928833"
        ])
        .await,
        "ERROR ERR COUNT must be > 0"
    );
}

/// CVE-2022-36021: a pattern of many `*` took exponential time (Redis's `keyspace.tcl`,
/// "Regression for pattern matching long nested loops"), in KEYS, SCAN MATCH and
/// PSUBSCRIBE-style matching alike.
#[tokio::test]
async fn cve_2022_36021_patterns_with_many_stars_finish() {
    let mut pair = Pair::start().await;
    let nested = "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
    let long = format!("a{}b", "*a".repeat(50_000));
    pair.same(&["SET", &"a".repeat(40), "1"]).await;
    assert_eq!(pair.same(&["KEYS", nested]).await, "array([])");
    let stars = format!("{}b", "*".repeat(100_000));
    for pattern in [nested, &long, &stars, &"[".repeat(100_000)] {
        pair.same(&["KEYS", pattern]).await;
        pair.same(&["SCAN", "0", "MATCH", pattern, "COUNT", "100"])
            .await;
    }
}

/// CVE-2023-25155: SRANDMEMBER, ZRANDMEMBER and HRANDFIELD with a count of LONG_MIN
/// (negating it overflowed; Redis's `hash.tcl` and its set and zset twins) are refused.
#[tokio::test]
async fn cve_2023_25155_random_members_with_long_min_are_refused() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["SADD", "s", "a", "b"],
        &["ZADD", "z", "1", "a"],
        &["HSET", "h", "a", "1"],
    ])
    .await;
    let min = "-9223372036854775808";
    for args in [
        &["SRANDMEMBER", "s", min][..],
        &["ZRANDMEMBER", "z", min],
        &["ZRANDMEMBER", "z", min, "WITHSCORES"],
        &["HRANDFIELD", "h", min],
        &["HRANDFIELD", "h", min, "WITHVALUES"],
    ] {
        assert_eq!(
            pair.same(args).await,
            "ERROR ERR value is out of range, value must between -9223372036854775807 and \
             9223372036854775807"
        );
    }
}

/// CVE-2023-28856: HINCRBYFLOAT making a field or value longer than
/// `hash-max-listpack-value` left an invalid listpack (Redis's `hash.tcl`, "HINCRBYFLOAT over
/// hash-max-listpack-value encoded with a listpack"): the hash converts as in Redis and reads
/// back.
#[tokio::test]
async fn cve_2023_28856_hincrbyfloat_past_the_listpack_value_limit_converts() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["CONFIG", "SET", "hash-max-listpack-value", "8"],
        &["HSET", "smallhash", "tmp", "0"],
        &["HSET", "bighash", "tmp", "0"],
        &["HINCRBYFLOAT", "smallhash", "tmp", "0.000005"],
        &["HINCRBYFLOAT", "bighash", "tmp", "0.0000005"],
        &["OBJECT", "ENCODING", "smallhash"],
        &["OBJECT", "ENCODING", "bighash"],
        &["HGETALL", "bighash"],
        &["DEL", "smallhash", "bighash"],
        &["HINCRBYFLOAT", "smallhash", "abcdefgh", "1"],
        &["HINCRBYFLOAT", "bighash", "abcdefghi", "1"],
        &["OBJECT", "ENCODING", "smallhash"],
        &["OBJECT", "ENCODING", "bighash"],
        &["HGETALL", "bighash"],
    ])
    .await;
    assert_eq!(
        pair.same(&["OBJECT", "ENCODING", "bighash"]).await,
        "bulk-string('\"hashtable\"')"
    );
}

/// CVE-2023-45145: the Unix socket took connections with the umask's mode until
/// `unixsocketperm` was applied; here both servers' socket files have mode 700 as soon as
/// they answer (the race itself: `unix_socket.rs`).
#[tokio::test]
async fn cve_2023_45145_the_unix_socket_has_its_mode_when_it_is_there() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!(
        "locksmith-cve-45145-{}-{}",
        std::process::id(),
        support::free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let ours_path = dir.join("ours.sock");
    let ours = Server::builder()
        .config_set("unixsocket", ours_path.display().to_string())
        .config_set("unixsocketperm", "700")
        .start()
        .await
        .unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&ours_path), 0o700);
    let real_path = dir.join("real.sock");
    let arg = real_path.display().to_string();
    if let Some(_real) = RealRedis::start_with(&["--unixsocket", &arg, "--unixsocketperm", "700"]) {
        assert_eq!(mode(&real_path), 0o700);
    }
    ours.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// CVE-2024-31227: ACL selectors Redis 7.0.15 (with the fix) refuses and accepts: a `%` rule
/// needs R or W, each at most once; its `~` and pattern may be left out. Redis's tests with
/// the fix and its follow-up (CVE-2024-51741; acl-v2.tcl, "Validate read and write
/// permissions format - empty permission / empty selector / empty pattern / no pattern"):
/// `%~` and `%` refused, `%RW~` and `%RW` giving access to no key; then rules of ours.
#[tokio::test]
async fn cve_2024_31227_acl_key_permissions_are_validated_as_redis_does() {
    let mut pair = Pair::start().await;
    let real = pair.real.as_ref().map(RealRedis::addr);
    for rule in ["%~", "%"] {
        assert_eq!(
            pair.same(&["ACL", "SETUSER", "key-permission-RW", rule])
                .await,
            format!("ERROR ERR Error in ACL SETUSER modifier '{rule}': Syntax error")
        );
    }
    for rule in ["%RW~", "%RW"] {
        pair.same(&[
            "ACL",
            "SETUSER",
            "key-permission-RW",
            "on",
            "nopass",
            rule,
            "+@all",
        ])
        .await;
        let mut input = resp(&[b"AUTH", b"key-permission-RW", b"password"]);
        input.extend_from_slice(&resp(&[b"SET", b"x", b"5"]));
        let reply = raw_same(pair.ours.addr(), real, &input).await;
        assert_eq!(
            String::from_utf8_lossy(&reply),
            "+OK\r\n-NOPERM this user has no permissions to access one of the keys used as arguments\r\n",
            "{rule}"
        );
    }
    let syntax =
        |rule: &str| format!("ERROR ERR Error in ACL SETUSER modifier '{rule}': Syntax error");
    for (rule, refused) in [
        ("%~x", true),
        ("(%~x)", true),
        ("%~", true),
        ("%", true),
        ("(%)", true),
        ("%X~x", true),
        ("%RR~x", true),
        ("%R~x", false),
        ("%RW~x", false),
        ("(%R~x)", false),
        ("%R", false),
        ("%RW", false),
        ("(%R)", false),
        ("(%RW)", false),
        ("%W", false),
        ("%r~x", false),
        ("%Rw~x", false),
        ("%R~", false),
    ] {
        pair.same(&["ACL", "DELUSER", "u"]).await;
        let reply = pair.same(&["ACL", "SETUSER", "u", rule]).await;
        if refused {
            assert_eq!(reply, syntax(rule), "{rule}");
        } else {
            assert_eq!(reply, "ok", "{rule}");
            pair.same(&["ACL", "GETUSER", "u"]).await;
        }
    }
    pair.all_same(&[
        &[
            "ACL", "SETUSER", "v", "reset", "on", "nopass", "%R", "+get", "+set",
        ],
        &["ACL", "DRYRUN", "v", "get", "x"],
        &["ACL", "DRYRUN", "v", "get", ""],
        &["ACL", "DRYRUN", "v", "set", "", "1"],
    ])
    .await;
}

/// CVE-2024-31228: very long patterns (unbounded recursion in the matcher) in KEYS, SCAN,
/// PSUBSCRIBE, FUNCTION LIST, COMMAND LIST and ACL key patterns finish with Redis's
/// answer. Redis's test with the fix (keyspace.tcl, "Regression for pattern matching very
/// long nested loops": a key of 50 000 `a` and KEYS of 50 000 `*?`), then patterns of ours in
/// each command that matches.
#[tokio::test]
async fn cve_2024_31228_long_patterns_finish() {
    let mut pair = Pair::start().await;
    let long_key = "a".repeat(50_000);
    let stars = "*?".repeat(50_000);
    pair.all_same(&[
        &["FLUSHDB"],
        &["SET", &long_key, "1"],
        &["KEYS", &stars],
        &["FLUSHDB"],
    ])
    .await;
    assert_eq!(pair.same(&["KEYS", &stars]).await, "array([])");
    let pattern = format!("{}b", "*[a".repeat(10_000));
    pair.same(&["SET", &"a".repeat(100), "1"]).await;
    pair.all_same(&[
        &["KEYS", &pattern],
        &["SCAN", "0", "MATCH", &pattern],
        &["FUNCTION", "LIST", "LIBRARYNAME", &pattern],
        &[
            "ACL",
            "SETUSER",
            "p",
            "on",
            "nopass",
            "+get",
            &format!("~{pattern}"),
        ],
        &["ACL", "DRYRUN", "p", "get", &"a".repeat(100)],
    ])
    .await;
    // The same commands (the order is each server's own table's).
    let list = ["COMMAND", "LIST", "FILTERBY", "PATTERN", &pattern];
    let sorted = |mut names: Vec<String>| {
        names.sort();
        names
    };
    let ours: Vec<String> = support::cmd(&list)
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    if let Some(real) = &mut pair.real_con {
        let theirs: Vec<String> = support::cmd(&list).query_async(real).await.unwrap();
        assert_eq!(sorted(ours), sorted(theirs));
    }
    let sub = resp(&[b"PSUBSCRIBE", pattern.as_bytes()]);
    let mut input = sub;
    input.extend_from_slice(&resp(&[b"PING"]));
    let real = pair.real.as_ref().map(RealRedis::addr);
    let reply = raw_same(pair.ours.addr(), real, &input).await;
    assert!(
        reply.starts_with(b"*3\r\n$10\r\npsubscribe\r\n"),
        "{reply:?}"
    );
    assert_eq!(pair.same(&["PING"]).await, "simple-string(\"PONG\")");
}

/// CVE-2025-21605: an unauthenticated client that sends commands and never reads made the
/// server hold every NOAUTH reply (output buffers without limit before AUTH). Now, as in
/// Redis, such a client is disconnected. Redis's test with the fix (auth.tcl, "For
/// unauthenticated clients output buffer is limited": `SET x 5` a million times without
/// reading): far fewer errors come back than commands went, and the server goes on serving.
#[tokio::test]
async fn cve_2025_21605_an_unauthenticated_client_cannot_grow_its_output() {
    let ours = Server::builder()
        .requirepass("foobar")
        .start()
        .await
        .unwrap();
    let real = RealRedis::start_with(&["--requirepass", "foobar"]);
    let input = resp(&[b"SET", b"x", b"5"]).repeat(1_000_000);
    let mut addrs = vec![ours.addr()];
    addrs.extend(real.as_ref().map(RealRedis::addr));
    for addr in addrs {
        let input = input.clone();
        let got = tokio::task::spawn_blocking(move || unread_replies(addr, &input))
            .await
            .unwrap();
        let errors = got.windows(7).filter(|w| w == b"-NOAUTH").count();
        assert!(errors < 1_000_000, "{addr}: {errors} NOAUTH replies held");
        let port = addr.port();
        let served = tokio::task::spawn_blocking(move || {
            support::answers_ping(port, Duration::from_secs(5))
        })
        .await
        .unwrap();
        assert!(served, "{addr} serves on");
    }
}

/// Writes `input` without reading, waits a little, then reads what the server kept for the
/// client until it closes or stays quiet (bounded).
fn unread_replies(addr: SocketAddr, input: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    // The server may close before it took everything (its refusal).
    let _ = stream.write_all(input);
    std::thread::sleep(Duration::from_millis(500));
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    for _ in 0..1000 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    out
}

/// CVE-2025-32023: a sparse HyperLogLog whose opcodes cover more than its 16384 registers
/// overflowed the register index; it is a corrupt HLL to every command that reads it, as in
/// Redis. Redis's tests with the fix (hyperloglog.tcl, "Corrupted sparse HyperLogLogs
/// doesn't cause overflow and out-of-bounds with XZERO opcode" and "... with ZERO opcode":
/// runs whose total passes 2^32 registers, then a VAL), then 20 000 VAL opcodes of ours.
#[tokio::test]
async fn cve_2025_32023_a_sparse_hll_past_its_registers_is_invalid() {
    let mut pair = Pair::start().await;
    let real = pair.real.as_ref().map(RealRedis::addr);
    let ours = pair.ours.addr();
    // Redis's header: sparse, cached cardinality 0 and valid.
    let header = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
    let xzero = [
        0b0100_0000 | (16_383u16 >> 8) as u8,
        (16_383u16 & 0xff) as u8,
    ];
    for (chunk, repeat) in [
        (&xzero[..], 131_072 + 1000),
        (&[0x3fu8][..], 33_554_432 + 1000),
    ] {
        let mut hll = header.to_vec();
        for _ in 0..repeat {
            hll.extend_from_slice(chunk);
        }
        hll.push(0b1111_1111);
        for addr in std::iter::once(ours).chain(real) {
            let mut wire = support::Wire::connect(addr).await;
            wire.send_bytes(&[
                &[b"SET", b"hll", &hll],
                &[b"PFCOUNT", b"hll", b"hll"],
                &[b"PFDEBUG", b"GETREG", b"hll"],
                &[b"PING"],
            ])
            .await;
            let replies = wire.frames(4).await.concat();
            assert_eq!(
                String::from_utf8_lossy(&replies),
                "+OK\r\n-INVALIDOBJ Corrupted HLL object detected\r\n\
                 -INVALIDOBJ Corrupted HLL object detected\r\n+PONG\r\n",
                "{addr}"
            );
        }
    }
    // The header with its cached cardinality marked stale, then the opcodes: each VAL
    // (`1vvvvvxx`) sets up to 4 registers, so 20 000 of them run far past the last.
    for opcode in [0xffu8, 0x80, 0xfc] {
        let mut hll = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80".to_vec();
        hll.extend(std::iter::repeat_n(opcode, 20_000));
        let mut input = resp(&[b"SET", b"h", &hll]);
        input.extend_from_slice(&resp(&[b"PFCOUNT", b"h"]));
        input.extend_from_slice(&resp(&[b"PFCOUNT", b"h", b"h"]));
        input.extend_from_slice(&resp(&[b"PFMERGE", b"d", b"h"]));
        input.extend_from_slice(&resp(&[b"PFDEBUG", b"GETREG", b"h"]));
        input.extend_from_slice(&resp(&[b"PFADD", b"h", b"x"]));
        input.extend_from_slice(&resp(&[b"PFCOUNT", b"h"]));
        input.extend_from_slice(&resp(&[b"EXISTS", b"d"]));
        let reply = raw_same(ours, real, &input).await;
        let text = String::from_utf8_lossy(&reply);
        assert!(
            text.starts_with("+OK\r\n-INVALIDOBJ Corrupted HLL object detected\r\n"),
            "{opcode:x}: {text}"
        );
        assert!(text.ends_with(":0\r\n"), "{opcode:x}: {text}");
    }
    assert_eq!(pair.same(&["PING"]).await, "simple-string(\"PONG\")");
}
