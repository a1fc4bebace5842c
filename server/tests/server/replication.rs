//! Replication over the network, as Redis speaks it: our node as the replica of our own
//! master and of a real redis-server, a real redis-server as the replica of ours, partial
//! resynchronisation after a lost link, `WAIT` answered through `REPLCONF GETACK`, and the
//! replies of `SYNC`/`PSYNC`/`REPLCONF` compared with Redis's.

use locksmith_server::Server;
use locksmith_testkit as support;
use std::time::{Duration, Instant};
use support::{info_field, run, RealRedis};

type Con = redis::aio::MultiplexedConnection;

// Masters are reached by `support::patient_conn`: a `WAIT` may take up to a second (a real
// master starts a diskless replica's stream on its first acknowledgement) on a loaded host,
// longer than the client's default response timeout.

/// Waits (at most 20 s: a real master may wait `repl-diskless-sync-delay` first) until the
/// replica on `con` reports its link up and the master's offset `at_least`.
async fn synced(con: &mut Con, at_least: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = support::info(con, "replication").await;
        let up = info
            .iter()
            .any(|(k, v)| k == "master_link_status" && v == "up");
        let offset: u64 = info
            .iter()
            .find(|(k, _)| k == "slave_repl_offset")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        if up && offset >= at_least {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the replica did not sync: {info:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The master's `master_repl_offset`.
async fn offset(con: &mut Con) -> u64 {
    info_field(con, "replication", "master_repl_offset")
        .await
        .parse()
        .unwrap()
}

/// A dataset of every type, with TTLs, in two databases, and a function library.
const DATASET: &[&[&str]] = &[
    &["SET", "string", "v"],
    &["SET", "volatile", "v", "EX", "1000"],
    &["SET", "int", "12345"],
    &["RPUSH", "list", "a", "b", "c", "1", "2"],
    &["SADD", "intset", "1", "2", "3"],
    &["SADD", "set", "x", "y", "z"],
    &["HSET", "hash", "f1", "v1", "f2", "v2"],
    &["ZADD", "zset", "1", "a", "2.5", "b", "-3", "c"],
    &["XADD", "stream", "1-1", "f", "v"],
    &["XADD", "stream", "2-1", "g", "w"],
    &["XGROUP", "CREATE", "stream", "group", "0"],
    &[
        "XREADGROUP",
        "GROUP",
        "group",
        "alice",
        "COUNT",
        "1",
        "STREAMS",
        "stream",
        ">",
    ],
    &["PFADD", "hll", "a", "b", "c"],
    &["SELECT", "2"],
    &["SET", "in-db-2", "yes"],
    &["SELECT", "0"],
    &[
        "FUNCTION",
        "LOAD",
        "#!lua name=replicated\n\
         redis.register_function{function_name='twice', \
           callback=function(keys, args) return args[1] * 2 end, flags={'no-writes'}}\n\
         redis.register_function('writer', function(keys, args) return 1 end)",
    ],
];

/// Reads that show the dataset (every type, TTLs rounded to the minute, both databases), as
/// a replica serves them.
const READS: &[&[&str]] = &[
    &["DBSIZE"],
    &["GET", "string"],
    &["GET", "int"],
    &["LRANGE", "list", "0", "-1"],
    &["SORT_RO", "intset"],
    &["SORT_RO", "set", "ALPHA"],
    &["HGETALL", "hash"],
    &["ZRANGE", "zset", "0", "-1", "WITHSCORES"],
    &["XRANGE", "stream", "-", "+"],
    &["XPENDING", "stream", "group"],
    &["PFCOUNT", "hll"],
    &["FCALL_RO", "twice", "0", "21"],
    &["SELECT", "2"],
    &["GET", "in-db-2"],
    &["SELECT", "0"],
];

/// What a replica refuses, or serves, where a master would write.
const ON_A_REPLICA: &[&[&str]] = &[
    &["SET", "k", "v"],
    &["SORT", "intset"],
    &["FCALL", "writer", "0"],
    &["FCALL", "twice", "0", "2"],
    &["EVAL", "return 1", "0"],
    &["EVAL", "#!lua\nreturn 1", "0"],
    &["EVAL", "#!lua flags=no-writes\nreturn 1", "0"],
    &["WAIT", "0", "0"],
];

/// What [`READS`] give on `con`, and the TTL of `volatile` in whole minutes.
async fn contents(con: &mut Con) -> Vec<String> {
    let mut out = Vec::new();
    for args in READS {
        out.push(run(con, args).await);
    }
    let ttl: i64 = support::cmd(&["TTL", "volatile"])
        .query_async(con)
        .await
        .unwrap();
    out.push(format!("ttl minutes {}", (ttl + 30) / 60));
    out
}

async fn fill(con: &mut Con) {
    for args in DATASET {
        let reply = run(con, args).await;
        assert!(!reply.starts_with("ERROR"), "{args:?}: {reply}");
    }
}

/// Writes made once the link is up, of which the replica must see the effects.
async fn write_more(con: &mut Con) {
    for args in [
        &["INCR", "int"][..],
        &["LPUSH", "list", "new"],
        &["EXPIRE", "string", "500"],
        &["MULTI"],
        &["HSET", "hash", "f3", "v3"],
        &["SADD", "set", "w"],
        &["EXEC"],
        &[
            "EVAL",
            "redis.call('SET', KEYS[1], 'from-script') return 1",
            "1",
            "scripted",
        ],
        &["DEL", "hll"],
        &[
            "XREADGROUP",
            "GROUP",
            "group",
            "bob",
            "STREAMS",
            "stream",
            ">",
        ],
        &[
            "XREADGROUP",
            "GROUP",
            "group",
            "carol",
            "NOACK",
            "STREAMS",
            "stream",
            ">",
        ],
    ] {
        let reply = run(con, args).await;
        assert!(!reply.starts_with("ERROR"), "{args:?}: {reply}");
    }
}

#[tokio::test]
async fn our_replica_follows_our_master_and_continues_after_a_lost_link() {
    let master = support::start().await;
    let replica = support::start().await;
    let mut m = support::patient_conn(&master.url()).await;
    let mut r = support::conn(&replica.url()).await;
    fill(&mut m).await;
    let port = master.addr().port().to_string();
    assert_eq!(run(&mut r, &["REPLICAOF", "127.0.0.1", &port]).await, "ok");
    assert_eq!(
        run(&mut r, &["REPLICAOF", "127.0.0.1", &port]).await,
        "simple-string(\"OK Already connected to specified master\")"
    );
    synced(&mut r, 0).await;
    assert_eq!(contents(&mut r).await, contents(&mut m).await);
    // Writes flow, and WAIT hears the replica's acknowledgement.
    write_more(&mut m).await;
    assert_eq!(run(&mut m, &["WAIT", "1", "5000"]).await, "int(1)");
    let at = offset(&mut m).await;
    synced(&mut r, at).await;
    assert_eq!(contents(&mut r).await, contents(&mut m).await);
    assert_eq!(
        run(&mut r, &["GET", "scripted"]).await,
        "bulk-string('\"from-script\"')"
    );
    assert_eq!(
        run(&mut r, &["SET", "k", "v"]).await,
        "ERROR READONLY You can't write against a read only replica."
    );
    assert!(run(&mut r, &["ROLE"]).await.contains("\"connected\""));
    assert!(run(&mut m, &["ROLE"]).await.contains("master"));
    assert_eq!(
        info_field(&mut m, "replication", "connected_slaves").await,
        "1"
    );
    // The link is cut; what the master writes meanwhile arrives by a partial resync.
    assert_eq!(
        run(&mut m, &["CLIENT", "KILL", "TYPE", "replica"]).await,
        "int(1)"
    );
    run(&mut m, &["SET", "during", "the-cut"]).await;
    let at = offset(&mut m).await;
    synced(&mut r, at).await;
    assert_eq!(
        run(&mut r, &["GET", "during"]).await,
        "bulk-string('\"the-cut\"')"
    );
    assert_eq!(info_field(&mut m, "stats", "sync_partial_ok").await, "1");
    assert_eq!(info_field(&mut m, "stats", "sync_full").await, "1");
    // Promoted: the data stays, writes are accepted.
    assert_eq!(run(&mut r, &["REPLICAOF", "NO", "ONE"]).await, "ok");
    assert_eq!(run(&mut r, &["SET", "k", "v"]).await, "ok");
    assert_eq!(
        run(&mut r, &["GET", "during"]).await,
        "bulk-string('\"the-cut\"')"
    );
    assert!(run(&mut r, &["ROLE"]).await.contains("master"));
}

#[tokio::test]
async fn a_replica_authenticates_with_masterauth() {
    let master = Server::builder()
        .requirepass("secret")
        .start()
        .await
        .unwrap();
    let replica = Server::builder()
        .config_set("masterauth", "secret")
        .start()
        .await
        .unwrap();
    let mut m = support::conn(&format!(
        "redis://:secret@127.0.0.1:{}/",
        master.addr().port()
    ))
    .await;
    run(&mut m, &["SET", "k", "v"]).await;
    let mut r = support::conn(&replica.url()).await;
    let port = master.addr().port().to_string();
    run(&mut r, &["REPLICAOF", "127.0.0.1", &port]).await;
    synced(&mut r, 0).await;
    assert_eq!(run(&mut r, &["GET", "k"]).await, "bulk-string('\"v\"')");
}

#[tokio::test]
async fn a_real_redis_replicates_from_our_master_and_our_replica_answers_as_it_does() {
    let master = support::start().await;
    let mut m = support::patient_conn(&master.url()).await;
    fill(&mut m).await;
    let port = master.addr().port().to_string();
    let Some(real) = RealRedis::start_with(&["--replicaof", "127.0.0.1", &port]) else {
        return;
    };
    let mut r = support::conn(&real.url()).await;
    synced(&mut r, 0).await;
    assert_eq!(contents(&mut r).await, contents(&mut m).await);
    // Our replica of the same master refuses and serves what Redis's does.
    let ours = support::start().await;
    let mut o = support::conn(&ours.url()).await;
    run(&mut o, &["REPLICAOF", "127.0.0.1", &port]).await;
    synced(&mut o, 0).await;
    for args in ON_A_REPLICA {
        assert_eq!(run(&mut o, args).await, run(&mut r, args).await, "{args:?}");
    }
    write_more(&mut m).await;
    // Both replicas answer our GETACK at once (Redis would acknowledge within a second
    // anyway).
    assert_eq!(run(&mut m, &["WAIT", "2", "5000"]).await, "int(2)");
    let at = offset(&mut m).await;
    synced(&mut r, at).await;
    assert_eq!(contents(&mut r).await, contents(&mut m).await);
    // A group read reaches replicas as XCLAIM (and XGROUP SETID for NOACK), which leaves a
    // replica's entries-read behind the master's, in Redis as here: both replicas agree.
    synced(&mut o, at).await;
    let groups = ["XINFO", "GROUPS", "stream"];
    assert_eq!(run(&mut o, &groups).await, run(&mut r, &groups).await);
    let slave = info_field(&mut m, "replication", "slave0").await;
    assert!(
        slave.contains(&format!("port={},state=online", real.port)),
        "{slave}"
    );
}

#[tokio::test]
async fn our_replica_follows_a_real_redis_master_diskless_and_from_disk() {
    for diskless in ["yes", "no"] {
        let Some(real) = RealRedis::start_with(&[
            "--repl-diskless-sync",
            diskless,
            "--repl-diskless-sync-delay",
            "0",
        ]) else {
            return;
        };
        let mut m = support::patient_conn(&real.url()).await;
        fill(&mut m).await;
        // Redis's own encodings: a long list (quicklist), a hash past its listpack limit.
        let items: Vec<String> = (0..300).map(|i| format!("item-{i}")).collect();
        let mut rpush = vec!["RPUSH", "long"];
        rpush.extend(items.iter().map(String::as_str));
        run(&mut m, &rpush).await;
        let mut hset = vec!["HSET", "wide"];
        hset.extend(items.iter().flat_map(|i| [i.as_str(), i.as_str()]));
        run(&mut m, &hset).await;
        let replica = support::start().await;
        let mut r = support::conn(&replica.url()).await;
        let port = real.port.to_string();
        run(&mut r, &["REPLICAOF", "127.0.0.1", &port]).await;
        synced(&mut r, 0).await;
        assert_eq!(
            contents(&mut r).await,
            contents(&mut m).await,
            "diskless {diskless}"
        );
        for args in [&["LRANGE", "long", "0", "-1"][..], &["HLEN", "wide"]] {
            assert_eq!(run(&mut r, args).await, run(&mut m, args).await);
        }
        write_more(&mut m).await;
        assert_eq!(run(&mut m, &["WAIT", "1", "5000"]).await, "int(1)");
        let at = offset(&mut m).await;
        synced(&mut r, at).await;
        assert_eq!(
            contents(&mut r).await,
            contents(&mut m).await,
            "diskless {diskless}"
        );
    }
}

#[tokio::test]
async fn sync_psync_and_replconf_answer_bad_input_as_redis_does() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["REPLCONF"],
        &["REPLCONF", "listening-port"],
        &["REPLCONF", "listening-port", "nope"],
        &["REPLCONF", "listening-port", "6380", "capa", "eof"],
        &["REPLCONF", "no-such-option", "1"],
        &["REPLCONF", "rdb-only", "2"],
        &["PSYNC", "?"],
        &["PSYNC", "?", "not-a-number"],
        &["SYNC", "extra"],
        &["MULTI"],
        &["SYNC"],
        &["PSYNC", "?", "-1"],
        &["DISCARD"],
    ])
    .await;
}

#[tokio::test]
async fn a_replica_passes_the_stream_on_to_replicas_of_its_own() {
    let master = support::start().await;
    let middle = support::start().await;
    let last = support::start().await;
    let mut m = support::patient_conn(&master.url()).await;
    let mut mid = support::conn(&middle.url()).await;
    let mut end = support::conn(&last.url()).await;
    fill(&mut m).await;
    // A replica whose link is down serves no replica.
    assert_eq!(run(&mut mid, &["REPLICAOF", "127.0.0.1", "1"]).await, "ok");
    assert_eq!(
        run(&mut mid, &["SYNC"]).await,
        "ERROR NOMASTERLINK Can't SYNC while not connected with my master"
    );
    let port = master.addr().port().to_string();
    run(&mut mid, &["REPLICAOF", "127.0.0.1", &port]).await;
    synced(&mut mid, 0).await;
    let mid_port = middle.addr().port().to_string();
    run(&mut end, &["REPLICAOF", "127.0.0.1", &mid_port]).await;
    synced(&mut end, 0).await;
    // A real Redis at the end of the chain as well, when there is one.
    let real = RealRedis::start_with(&["--replicaof", "127.0.0.1", &mid_port]);
    let mut real_con = match &real {
        Some(r) => Some(support::conn(&r.url()).await),
        None => None,
    };
    write_more(&mut m).await;
    let at = offset(&mut m).await;
    synced(&mut mid, at).await;
    synced(&mut end, at).await;
    let expected = contents(&mut m).await;
    assert_eq!(contents(&mut end).await, expected);
    // The chain shares the master's replication id and offsets.
    let id = info_field(&mut m, "replication", "master_replid").await;
    assert_eq!(
        info_field(&mut end, "replication", "master_replid").await,
        id
    );
    if let Some(r) = &mut real_con {
        synced(r, at).await;
        assert_eq!(contents(r).await, expected);
    }
}

/// A raw `SYNC` connection: the RDB payload skipped, then the stream's commands.
pub(super) struct Stream {
    socket: tokio::net::TcpStream,
    buf: Vec<u8>,
}

impl Stream {
    pub(super) async fn attach(addr: std::net::SocketAddr) -> Stream {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
        socket.write_all(b"SYNC\r\n").await.unwrap();
        let mut buf = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            // Bare newlines keep a waiting replica's link alive.
            while buf.first() == Some(&b'\n') {
                buf.remove(0);
            }
            if let Some(nl) = buf.windows(2).position(|w| w == b"\r\n") {
                let len: usize = std::str::from_utf8(&buf[1..nl]).unwrap().parse().unwrap();
                if buf.len() >= nl + 2 + len {
                    buf.drain(..nl + 2 + len);
                    return Stream { socket, buf };
                }
            }
            assert!(Instant::now() < deadline, "no RDB payload after SYNC");
            let mut chunk = [0u8; 4096];
            let n = tokio::time::timeout(Duration::from_secs(20), socket.read(&mut chunk))
                .await
                .unwrap()
                .unwrap();
            assert!(n > 0, "the master closed the link");
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// The commands the stream carries until `quiet` passes without data, lowercased,
    /// absolute times replaced by `*`.
    pub(super) async fn commands(&mut self, quiet: Duration) -> Vec<String> {
        use tokio::io::AsyncReadExt;
        loop {
            let mut chunk = [0u8; 4096];
            match tokio::time::timeout(quiet, self.socket.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => self.buf.extend_from_slice(&chunk[..n]),
                _ => break,
            }
        }
        let mut out = Vec::new();
        while let Some(len) = support::frame_len(&self.buf) {
            let frame: Vec<u8> = self.buf.drain(..len).collect();
            let text = String::from_utf8_lossy(&frame).to_string();
            // Absolute times (13 digits of ms) vary between runs.
            let args: Vec<&str> = text
                .split("\r\n")
                .skip(2)
                .step_by(2)
                .map(|a| {
                    if a.len() >= 10 && a.bytes().all(|b| b.is_ascii_digit()) {
                        "*"
                    } else {
                        a
                    }
                })
                .collect();
            let command = args.join(" ").to_lowercase();
            out.push(command);
        }
        out
    }
}

#[tokio::test]
async fn lazy_expiry_reaches_the_stream_as_redis_sends_it() {
    let (ours, real) = support::both_with_debug().await;
    let mut streams = Vec::new();
    for addr in support::addrs(&ours, &real) {
        let url = format!("redis://{addr}/");
        let mut con = support::conn(&url).await;
        run(&mut con, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]).await;
        run(&mut con, &["SET", "foo1", "bar", "PX", "1"]).await;
        run(&mut con, &["SET", "foo2", "bar", "PX", "1"]).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        let mut stream = Stream::attach(addr).await;
        let mut seen = Vec::new();
        // SCAN reclaims what it passes, outside any MULTI.
        run(&mut con, &["SCAN", "0"]).await;
        // (The two DELs come in the order of each server's table.)
        let mut scanned = stream.commands(Duration::from_millis(300)).await;
        scanned.sort();
        seen.push(scanned);
        // RANDOMKEY reclaims the expired keys it draws.
        run(&mut con, &["SET", "foo3", "bar", "PX", "1"]).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        run(&mut con, &["RANDOMKEY"]).await;
        seen.push(stream.commands(Duration::from_millis(300)).await);
        // A blocked client woken for a key expired by then stays blocked; the key's DEL
        // follows the transaction that made it.
        let blocked = support::patient_conn(&url).await;
        let waiter = tokio::spawn(async move {
            let mut blocked = blocked;
            run(&mut blocked, &["BRPOP", "k", "1"]).await
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while info_field(&mut con, "clients", "blocked_clients").await != "1" {
            assert!(Instant::now() < deadline, "BRPOP did not block");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("RPUSH")
            .arg("k")
            .arg("hello")
            .cmd("PEXPIRE")
            .arg("k")
            .arg(100)
            .cmd("DEBUG")
            .arg("SLEEP")
            .arg(0.2);
        let _: redis::Value = pipe.query_async(&mut con).await.unwrap();
        assert_eq!(waiter.await.unwrap(), "nil");
        seen.push(stream.commands(Duration::from_millis(300)).await);
        streams.push(seen);
    }
    let expected: [&[&str]; 3] = [
        &["del foo1", "del foo2", "select 0"],
        &["set foo3 bar pxat *", "del foo3"],
        &["multi", "rpush k hello", "pexpireat k *", "exec", "del k"],
    ];
    assert_eq!(
        streams[0],
        expected.map(|c| c.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    );
    if let [ours, theirs] = &streams[..] {
        assert_eq!(ours, theirs);
    }
}

#[tokio::test]
async fn consumer_group_reads_reach_the_stream_as_redis_sends_them() {
    let (ours, real) = support::both().await;
    let mut streams = Vec::new();
    for addr in support::addrs(&ours, &real) {
        let url = format!("redis://{addr}/");
        let mut con = support::conn(&url).await;
        let mut stream = Stream::attach(addr).await;
        for id in ["1-1", "2-1", "3-1", "4-1"] {
            run(&mut con, &["XADD", "s", id, "f", "v"]).await;
        }
        run(&mut con, &["XGROUP", "CREATE", "s", "g", "0"]).await;
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("XREADGROUP")
            .arg(&["GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"])
            .cmd("XREADGROUP")
            .arg(&["GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">"]);
        let _: redis::Value = pipe.query_async(&mut con).await.unwrap();
        // NOACK with a new consumer; then a history read, which replicas do not get.
        run(
            &mut con,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "bob",
                "NOACK",
                "STREAMS",
                "s",
                ">",
            ],
        )
        .await;
        run(
            &mut con,
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"],
        )
        .await;
        run(&mut con, &["SET", "end", "1"]).await;
        let mut seen = stream.commands(Duration::from_millis(300)).await;
        // XCLAIM and XAUTOCLAIM reach replicas as an XCLAIM per entry claimed or dropped
        // (its entry deleted), LASTID alone as XGROUP SETID.
        run(&mut con, &["XCLAIM", "s", "g", "carol", "0", "1-1"]).await;
        run(&mut con, &["XDEL", "s", "2-1"]).await;
        run(&mut con, &["XAUTOCLAIM", "s", "g", "dave", "0", "0-0"]).await;
        run(
            &mut con,
            &["XCLAIM", "s", "g", "erin", "0", "9-9", "LASTID", "5-0"],
        )
        .await;
        run(&mut con, &["XCLAIM", "s", "g", "erin", "0", "3", "JUSTID"]).await;
        seen.extend(stream.commands(Duration::from_millis(300)).await);
        streams.push(seen);
    }
    let expected = [
        "select 0",
        "xadd s 1-1 f v",
        "xadd s 2-1 f v",
        "xadd s 3-1 f v",
        "xadd s 4-1 f v",
        "xgroup create s g 0",
        "multi",
        "xclaim s g alice 0 1-1 time * retrycount 1 force justid lastid 1-1",
        "xclaim s g alice 0 2-1 time * retrycount 1 force justid lastid 2-1",
        "xclaim s g alice 0 3-1 time * retrycount 1 force justid lastid 3-1",
        "exec",
        // One command's several propagations go as a transaction.
        "multi",
        "xgroup createconsumer s g bob",
        "xgroup setid s g 4-1 entriesread 4",
        "exec",
        "set end 1",
    ];
    assert_eq!(streams[0][..expected.len()], expected);
    if let [ours, theirs] = &streams[..] {
        assert_eq!(ours, theirs);
    }
}

/// A master of the test's own on a loopback port: it answers a replica's handshake and
/// `PSYNC` with `+FULLRESYNC`, then the test sends what it likes as the payload.
struct FakeMaster {
    listener: tokio::net::TcpListener,
}

impl FakeMaster {
    async fn bind() -> FakeMaster {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        FakeMaster { listener }
    }

    fn port(&self) -> String {
        self.listener.local_addr().unwrap().port().to_string()
    }

    /// Accepts the replica and answers its handshake (at most 20 s); the socket is then at
    /// the payload.
    async fn fullresync(&self) -> tokio::net::TcpStream {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut sock, _) = tokio::time::timeout(Duration::from_secs(20), self.listener.accept())
            .await
            .expect("the replica connects")
            .unwrap();
        let mut buf = Vec::new();
        for _ in 0..100 {
            while let Some(n) = support::frame_len(&buf) {
                let command = String::from_utf8_lossy(&buf[..n]).to_ascii_uppercase();
                buf.drain(..n);
                if command.contains("\r\n$5\r\nPSYNC\r\n") {
                    let reply = format!("+FULLRESYNC {} 0\r\n", "f".repeat(40));
                    sock.write_all(reply.as_bytes()).await.unwrap();
                    return sock;
                }
                let reply: &[u8] = if command.contains("\r\n$4\r\nPING\r\n") {
                    b"+PONG\r\n"
                } else {
                    b"+OK\r\n"
                };
                sock.write_all(reply).await.unwrap();
            }
            let mut chunk = [0u8; 1024];
            let n = tokio::time::timeout(Duration::from_secs(20), sock.read(&mut chunk))
                .await
                .expect("the handshake goes on")
                .unwrap();
            assert!(n > 0, "the replica closed during the handshake");
            buf.extend_from_slice(&chunk[..n]);
        }
        panic!("no PSYNC in the handshake");
    }
}

/// An RDB file with one string `key` of `len` bytes (`x`), no checksum.
fn rdb_with_string(key: &str, len: u32) -> Vec<u8> {
    let mut rdb = b"REDIS0009\xfe\x00\x00".to_vec();
    rdb.push(key.len() as u8);
    rdb.extend_from_slice(key.as_bytes());
    rdb.push(0x80);
    rdb.extend_from_slice(&len.to_be_bytes());
    rdb.resize(rdb.len() + len as usize, b'x');
    rdb.push(0xff);
    rdb.extend_from_slice(&[0; 8]);
    rdb
}

/// The `temp-*.rdb` files in `dir`, with their sizes.
fn spool_files(dir: &std::path::Path) -> Vec<(String, u64)> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().to_string_lossy().into_owned();
            let rdb = name.starts_with("temp-") && name.ends_with(".rdb");
            rdb.then(|| (name, e.metadata().map_or(0, |m| m.len())))
        })
        .collect()
}

/// Waits (at most 20 s) until `INFO replication`'s `field` on `con` reaches `at_least`.
async fn info_reaches(con: &mut Con, field: &str, at_least: i64) -> Vec<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = support::info(con, "replication").await;
        let value = info
            .iter()
            .find(|(k, _)| k == field)
            .and_then(|(_, v)| v.parse::<i64>().ok());
        if value.is_some_and(|v| v >= at_least) {
            return info;
        }
        assert!(
            Instant::now() < deadline,
            "{field} stays below {at_least}: {info:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A replica with a scratch `dir` for its spool files.
async fn replica_in_scratch(name: &str) -> (locksmith_server::ServerHandle, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "locksmith-spool-{name}-{}-{}",
        std::process::id(),
        support::free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let replica = Server::builder()
        .config_set("dir", dir.display().to_string())
        .start()
        .await
        .unwrap();
    (replica, dir)
}

/// A full synchronisation's payload goes to a spool file in `dir` as it arrives, not into
/// memory (a master streaming gigabytes made the replica's RSS reach 3 GB and stalled its
/// clients): halfway through a 24 MB `$EOF:` payload the file holds what arrived, INFO shows
/// the transfer as Redis does, other clients are served; at the mark the RDB loads and the
/// file goes.
#[tokio::test]
async fn a_replica_spools_a_full_sync_payload_to_disk_and_loads_it_from_there() {
    use tokio::io::AsyncWriteExt;
    let (replica, dir) = replica_in_scratch("eof").await;
    let master = FakeMaster::bind().await;
    let mut r = support::conn(&replica.url()).await;
    run(&mut r, &["REPLICAOF", "127.0.0.1", &master.port()]).await;
    let mut sock = master.fullresync().await;
    let len = 24 << 20;
    let rdb = rdb_with_string("big", len);
    let mark = "a".repeat(40);
    sock.write_all(format!("$EOF:{mark}\r\n").as_bytes())
        .await
        .unwrap();
    let half = rdb.len() / 2;
    sock.write_all(&rdb[..half]).await.unwrap();
    let info = info_reaches(&mut r, "master_sync_read_bytes", (half - 40) as i64).await;
    assert_eq!(support::info_value(&info, "master_sync_in_progress"), "1");
    assert_eq!(support::info_value(&info, "master_sync_total_bytes"), "-1");
    let spooled = spool_files(&dir);
    assert_eq!(spooled.len(), 1, "{spooled:?}");
    assert!(spooled[0].1 > 0, "{spooled:?}");
    // Other clients are served meanwhile.
    let mut other = support::conn(&replica.url()).await;
    assert_eq!(run(&mut other, &["PING"]).await, "simple-string(\"PONG\")");
    sock.write_all(&rdb[half..]).await.unwrap();
    sock.write_all(mark.as_bytes()).await.unwrap();
    info_reaches(&mut r, "slave_repl_offset", 0).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while info_field(&mut r, "replication", "master_link_status").await != "up" {
        assert!(Instant::now() < deadline, "the payload did not load");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(run(&mut r, &["STRLEN", "big"]).await, format!("int({len})"));
    assert_eq!(spool_files(&dir), []);
    assert_eq!(run(&mut r, &["REPLICAOF", "NO", "ONE"]).await, "ok");
    drop(sock);
    replica.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A master that declares a 3 GB payload (`$3000000000`) and sends a part of it: the part
/// is on disk, INFO shows what is left, the replica serves its clients, and `REPLICAOF NO
/// ONE` ends the transfer and removes the file. A payload that is not an RDB file ends the
/// link at once, before its end.
#[tokio::test]
async fn a_replica_bounds_a_huge_or_bad_payload_and_drops_it_on_replicaof_no_one() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (replica, dir) = replica_in_scratch("huge").await;
    let master = FakeMaster::bind().await;
    let mut r = support::conn(&replica.url()).await;
    run(&mut r, &["REPLICAOF", "127.0.0.1", &master.port()]).await;
    let mut sock = master.fullresync().await;
    sock.write_all(b"$3000000000\r\nREDIS0009").await.unwrap();
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..16 {
        sock.write_all(&chunk).await.unwrap();
    }
    let sent = 9 + 16 * chunk.len() as i64;
    let info = info_reaches(&mut r, "master_sync_read_bytes", sent).await;
    assert_eq!(
        support::info_value(&info, "master_sync_total_bytes"),
        "3000000000"
    );
    assert_eq!(
        support::info_value(&info, "master_sync_left_bytes"),
        (3_000_000_000 - sent).to_string()
    );
    let spooled = spool_files(&dir);
    assert_eq!(spooled.len(), 1, "{spooled:?}");
    let mut other = support::conn(&replica.url()).await;
    assert_eq!(run(&mut other, &["PING"]).await, "simple-string(\"PONG\")");
    assert_eq!(run(&mut r, &["REPLICAOF", "NO", "ONE"]).await, "ok");
    // The link closes and the file goes.
    let mut rest = [0u8; 64];
    let closed = tokio::time::timeout(Duration::from_secs(20), sock.read(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !spool_files(&dir).is_empty() {
        assert!(Instant::now() < deadline, "{:?}", spool_files(&dir));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(run(&mut r, &["ROLE"]).await.contains("master"));

    // Not an RDB file: the replica drops the link without waiting for the end.
    run(&mut r, &["REPLICAOF", "127.0.0.1", &master.port()]).await;
    let mut sock = master.fullresync().await;
    sock.write_all(format!("$EOF:{}\r\nHELLO", "b".repeat(40)).as_bytes())
        .await
        .unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(20), sock.read(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
    assert_eq!(run(&mut r, &["REPLICAOF", "NO", "ONE"]).await, "ok");
    assert_eq!(run(&mut r, &["PING"]).await, "simple-string(\"PONG\")");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !spool_files(&dir).is_empty() {
        assert!(Instant::now() < deadline, "{:?}", spool_files(&dir));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    replica.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits (at most 20 s) until `dir` holds no spool file.
async fn spool_gone(dir: &std::path::Path, after: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !spool_files(dir).is_empty() {
        assert!(Instant::now() < deadline, "{after}: {:?}", spool_files(dir));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The spool file goes on every path out of a full synchronisation, as Redis unlinks its
/// transfer file: the master gone halfway through the payload, a payload that arrives whole
/// but does not load, one that is not an RDB file, `REPLICAOF NO ONE` as the payload's
/// header arrives (40 rounds, the command a little later each time: the file was opened on
/// tokio's blocking pool, and a task dropped meanwhile left it behind, empty, as replication
/// tests left `temp-*.rdb` files in `server/`), and the node's shutdown halfway through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_leaves_no_spool_file_on_any_path_out_of_a_sync() {
    use tokio::io::AsyncWriteExt;
    let (replica, dir) = replica_in_scratch("paths").await;
    let master = FakeMaster::bind().await;
    let mut r = support::conn(&replica.url()).await;
    let rdb = rdb_with_string("k", 1 << 20);
    let header = format!("${}\r\n", rdb.len());

    run(&mut r, &["REPLICAOF", "127.0.0.1", &master.port()]).await;
    let mut sock = master.fullresync().await;
    sock.write_all(header.as_bytes()).await.unwrap();
    sock.write_all(&rdb[..rdb.len() / 2]).await.unwrap();
    info_reaches(&mut r, "master_sync_read_bytes", 1).await;
    drop(sock);
    spool_gone(&dir, "the master gone").await;

    // The replica tries again: a whole payload whose first key has an unknown type.
    let mut sock = master.fullresync().await;
    let corrupt = b"REDIS0009\xfe\x00\x42\x01k\x01v\xff";
    sock.write_all(format!("${}\r\n", corrupt.len()).as_bytes())
        .await
        .unwrap();
    sock.write_all(corrupt).await.unwrap();
    spool_gone(&dir, "a payload that does not load").await;

    let mut sock = master.fullresync().await;
    sock.write_all(format!("$EOF:{}\r\nHELLO", "b".repeat(40)).as_bytes())
        .await
        .unwrap();
    spool_gone(&dir, "not an RDB file").await;
    drop(sock);

    let mut wire = support::Wire::connect(replica.addr()).await;
    for round in 0..40 {
        if round > 0 {
            run(&mut r, &["REPLICAOF", "127.0.0.1", &master.port()]).await;
        }
        let mut sock = master.fullresync().await;
        // The header (not held back by Nagle behind the unacknowledged +FULLRESYNC), then
        // REPLICAOF NO ONE a little later each round (0 to 1 ms, the server's threads
        // running meanwhile), so that in some round the replica's task ends as it opens its
        // file.
        sock.set_nodelay(true).unwrap();
        sock.write_all(header.as_bytes()).await.unwrap();
        std::thread::sleep(Duration::from_micros(25 * round));
        wire.send(&[&["REPLICAOF", "NO", "ONE"]]).await;
        assert_eq!(wire.frame().await, b"+OK\r\n");
        spool_gone(&dir, &format!("REPLICAOF NO ONE, round {round}")).await;
    }

    run(&mut r, &["REPLICAOF", "127.0.0.1", &master.port()]).await;
    let mut sock = master.fullresync().await;
    sock.write_all(header.as_bytes()).await.unwrap();
    sock.write_all(&rdb[..rdb.len() / 2]).await.unwrap();
    info_reaches(&mut r, "master_sync_read_bytes", 1).await;
    assert_eq!(spool_files(&dir).len(), 1);
    drop(r);
    replica.shutdown().await;
    spool_gone(&dir, "the node's shutdown").await;
    drop(sock);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `WAIT` takes `numreplicas` as Redis's blocked client keeps it, a C `int`: a count whose low
/// 32 bits are negative or zero (9223372036854775807, 2147483648, 4294967296) answers at once
/// with the replicas that acknowledged, where it blocked for ever, and 4294967297 waits for
/// one replica; compared with redis-server without replicas.
#[tokio::test]
async fn wait_takes_numreplicas_as_redis_s_int() {
    let mut pair = support::Pair::start().await;
    for n in ["9223372036854775807", "2147483648", "4294967296", "-1", "0"] {
        let reply = tokio::time::timeout(Duration::from_secs(10), pair.same(&["WAIT", n, "0"]))
            .await
            .unwrap_or_else(|_| panic!("WAIT {n} 0 blocked"));
        assert_eq!(reply, "int(0)", "WAIT {n} 0");
    }
    let master = support::start().await;
    let replica = support::start().await;
    let mut m = support::patient_conn(&master.url()).await;
    let mut r = support::conn(&replica.url()).await;
    let port = master.addr().port().to_string();
    run(&mut r, &["REPLICAOF", "127.0.0.1", &port]).await;
    synced(&mut r, 0).await;
    run(&mut m, &["SET", "k", "v"]).await;
    for n in ["4294967297", "1", "9223372036854775807"] {
        let reply = tokio::time::timeout(Duration::from_secs(10), run(&mut m, &["WAIT", n, "0"]))
            .await
            .unwrap_or_else(|_| panic!("WAIT {n} 0 blocked"));
        // (The last counts the replicas that acknowledged so far, at once: the GETACK the
        // others sent may not be acknowledged yet.)
        let acked = if n.len() > 10 {
            ["int(0)", "int(1)"].contains(&reply.as_str())
        } else {
            reply == "int(1)"
        };
        assert!(acked, "WAIT {n} 0: {reply}");
    }
}

/// The replication stream of a scenario of expiries, on our server started with `compat`
/// and on that target's reference (`lazyfree-lazy-expire yes` on both): each step's
/// commands.
async fn lazy_expiry_streams(compat: locksmith_server::Compat) -> Vec<Vec<Vec<String>>> {
    let ours = Server::builder()
        .compat(compat)
        .enable_debug_command(locksmith_server::EnableCommand::Yes)
        .start()
        .await
        .unwrap();
    let real = RealRedis::start_reference(
        support::Reference::of(compat),
        &["--enable-debug-command", "yes"],
    );
    let mut streams = Vec::new();
    for addr in support::addrs(&ours, &real) {
        let url = format!("redis://{addr}/");
        let mut con = support::conn(&url).await;
        run(&mut con, &["CONFIG", "SET", "lazyfree-lazy-expire", "yes"]).await;
        run(&mut con, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]).await;
        run(&mut con, &["SET", "foo1", "bar", "PX", "1"]).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        let mut stream = Stream::attach(addr).await;
        let mut seen = Vec::new();
        // A read reclaims the expired key.
        run(&mut con, &["GET", "foo1"]).await;
        seen.push(stream.commands(Duration::from_millis(300)).await);
        // A TTL in the past deletes the key.
        run(&mut con, &["SET", "k2", "v"]).await;
        run(&mut con, &["EXPIRE", "k2", "-1"]).await;
        seen.push(stream.commands(Duration::from_millis(300)).await);
        // A blocked client woken for a key expired by then stays blocked (it times out).
        let blocked = support::patient_conn(&url).await;
        let waiter = tokio::spawn(async move {
            let mut blocked = blocked;
            run(&mut blocked, &["BRPOP", "k", "1"]).await
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while info_field(&mut con, "clients", "blocked_clients").await != "1" {
            assert!(Instant::now() < deadline, "BRPOP did not block");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("RPUSH")
            .arg("k")
            .arg("hello")
            .cmd("PEXPIRE")
            .arg("k")
            .arg(100)
            .cmd("DEBUG")
            .arg("SLEEP")
            .arg(0.2);
        let _: redis::Value = pipe.query_async(&mut con).await.unwrap();
        assert_eq!(waiter.await.unwrap(), "nil");
        run(&mut con, &["SET", "other", "1"]).await;
        run(&mut con, &["EXISTS", "k"]).await;
        seen.push(stream.commands(Duration::from_millis(300)).await);
        // SWAPDB brings a key already expired under a blocked client's index.
        let mut db1 = support::conn(&format!("redis://{addr}/1")).await;
        run(&mut db1, &["RPUSH", "k", "hello"]).await;
        run(&mut db1, &["PEXPIRE", "k", "50"]).await;
        let blocked = support::patient_conn(&url).await;
        let waiter = tokio::spawn(async move {
            let mut blocked = blocked;
            run(&mut blocked, &["BRPOP", "k", "1"]).await
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while info_field(&mut con, "clients", "blocked_clients").await != "1" {
            assert!(Instant::now() < deadline, "BRPOP did not block");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(60)).await;
        run(&mut db1, &["SWAPDB", "1", "0"]).await;
        assert_eq!(waiter.await.unwrap(), "nil");
        run(&mut con, &["SET", "other", "2"]).await;
        run(&mut con, &["EXISTS", "k"]).await;
        seen.push(stream.commands(Duration::from_millis(300)).await);
        streams.push(seen);
    }
    streams
}

/// Under `lazyfree-lazy-expire yes` expiries reach replicas as `UNLINK` (Redis's
/// `propagateDeletion`) on either target. Serving a blocked client reclaims a key found
/// expired at once under Redis 7.0; Valkey 8.1 looks it up without side effects, so it goes
/// when a later command touches it (after SWAPDB brought it), or when the served command,
/// re-run, finds it expired (after a transaction, whose start time judged it live).
#[tokio::test]
async fn lazy_expiry_reaches_the_stream_as_unlink_under_lazyfree_lazy_expire() {
    use locksmith_server::Compat;
    let owned = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for (compat, swapped) in [
        (
            Compat::Redis70,
            &[
                "select 1",
                "rpush k hello",
                "pexpireat k *",
                "swapdb 1 0",
                "select 0",
                "unlink k",
                "set other 2",
            ],
        ),
        (
            Compat::Valkey81,
            &[
                "select 1",
                "rpush k hello",
                "pexpireat k *",
                "swapdb 1 0",
                "select 0",
                "set other 2",
                "unlink k",
            ],
        ),
    ] {
        let streams = lazy_expiry_streams(compat).await;
        assert_eq!(
            streams[0],
            vec![
                owned(&["select 0", "unlink foo1"]),
                owned(&["set k2 v", "unlink k2"]),
                // Both judge the key at the transaction's start (Redis 7.2 re-runs the BRPOP,
                // which reclaims it then).
                owned(&[
                    "multi",
                    "rpush k hello",
                    "pexpireat k *",
                    "exec",
                    "unlink k",
                    "set other 1",
                ]),
                owned(swapped)
            ],
            "{compat}"
        );
        if let [ours, theirs] = &streams[..] {
            assert_eq!(ours, theirs, "{compat}: ours, then the reference");
        }
    }
}
