//! Blocking commands: clients wait without holding up the server, are served by later
//! writes first-come first-served, time out with the null array (on virtual time), and a
//! blocking sequence matches real Redis.

use locksmith_testkit as support;

use bytes::BytesMut;
use locksmith_resp::{Frame, FrameDecoder, Limits};
use locksmith_server::ServerHandle;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// A bare RESP2 client: sends commands, reads whole reply frames.
struct Raw {
    stream: TcpStream,
    buf: BytesMut,
    decoder: FrameDecoder,
}

impl Raw {
    async fn connect(addr: SocketAddr) -> Raw {
        Raw {
            stream: TcpStream::connect(addr).await.unwrap(),
            buf: BytesMut::new(),
            decoder: FrameDecoder::new(Limits::default()),
        }
    }

    async fn send(&mut self, args: &[&str]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        self.stream.write_all(&out).await.unwrap();
    }

    async fn reply(&mut self) -> Frame {
        loop {
            if let Some(frame) = self.decoder.decode(&mut self.buf).unwrap() {
                return frame;
            }
            let n = self.stream.read_buf(&mut self.buf).await.unwrap();
            assert!(n > 0, "server closed the connection");
        }
    }

    async fn call(&mut self, args: &[&str]) -> Frame {
        self.send(args).await;
        self.reply().await
    }
}

fn bulk(s: &str) -> Frame {
    Frame::Bulk(bytes::Bytes::copy_from_slice(s.as_bytes()))
}

/// Waits (bounded: 10 s of polling) until `n` clients are blocked on keys.
async fn until_blocked(server: &ServerHandle, n: usize) {
    for _ in 0..10_000 {
        if server.blocked_clients().await == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!(
        "expected {n} blocked clients, found {}",
        server.blocked_clients().await
    );
}

#[tokio::test]
async fn blpop_is_served_by_a_later_lpush_from_another_client() {
    let server = support::start().await;
    let mut waiter = Raw::connect(server.addr()).await;
    let mut pusher = Raw::connect(server.addr()).await;
    waiter.send(&["BLPOP", "missing", "k", "0"]).await;
    until_blocked(&server, 1).await;
    // The server keeps serving others while a client is blocked.
    assert_eq!(pusher.call(&["PING"]).await, Frame::simple("PONG"));
    assert_eq!(pusher.call(&["LPUSH", "k", "v"]).await, Frame::Integer(1));
    assert_eq!(
        waiter.reply().await,
        Frame::Array(vec![bulk("k"), bulk("v")])
    );
    assert_eq!(server.blocked_clients().await, 0);
    assert_eq!(pusher.call(&["EXISTS", "k"]).await, Frame::Integer(0));
    // The served client carries on normally.
    assert_eq!(waiter.call(&["PING"]).await, Frame::simple("PONG"));
}

#[tokio::test(start_paused = true)]
async fn blpop_times_out_with_the_null_array() {
    let server = support::start().await;
    let mut client = Raw::connect(server.addr()).await;
    let start = Instant::now();
    assert_eq!(client.call(&["BLPOP", "k", "5"]).await, Frame::NullArray);
    assert!(start.elapsed() >= Duration::from_secs(5));
    assert_eq!(server.blocked_clients().await, 0);
    assert_eq!(client.call(&["PING"]).await, Frame::simple("PONG"));
}

#[tokio::test(start_paused = true)]
async fn fractional_timeouts_are_seconds_with_a_fraction() {
    let server = support::start().await;
    let mut client = Raw::connect(server.addr()).await;
    let start = Instant::now();
    assert_eq!(client.call(&["BRPOP", "k", "0.5"]).await, Frame::NullArray);
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    assert_eq!(
        client.call(&["BZPOPMIN", "z", "0.25"]).await,
        Frame::NullArray
    );
    assert_eq!(
        client
            .call(&["BLMOVE", "a", "b", "LEFT", "LEFT", "0.1"])
            .await,
        Frame::NullArray
    );
}

#[tokio::test]
async fn blocked_pipeline_replies_come_in_order() {
    let server = support::start().await;
    let mut waiter = Raw::connect(server.addr()).await;
    let mut pusher = Raw::connect(server.addr()).await;
    // PING before the blocking pop is answered at once; ECHO after it waits for the pop.
    let mut batch = Vec::new();
    for args in [&["PING"][..], &["BLPOP", "k", "0"], &["ECHO", "after"]] {
        batch.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in args {
            batch.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
    }
    waiter.stream.write_all(&batch).await.unwrap();
    assert_eq!(waiter.reply().await, Frame::simple("PONG"));
    until_blocked(&server, 1).await;
    pusher.call(&["RPUSH", "k", "x"]).await;
    assert_eq!(
        waiter.reply().await,
        Frame::Array(vec![bulk("k"), bulk("x")])
    );
    assert_eq!(waiter.reply().await, bulk("after"));
}

#[tokio::test]
async fn blmove_waits_then_moves_the_pushed_element() {
    let server = support::start().await;
    let mut waiter = Raw::connect(server.addr()).await;
    let mut pusher = Raw::connect(server.addr()).await;
    waiter
        .send(&["BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"])
        .await;
    until_blocked(&server, 1).await;
    pusher.call(&["RPUSH", "src", "a", "b"]).await;
    assert_eq!(waiter.reply().await, bulk("b"));
    assert_eq!(
        pusher.call(&["LRANGE", "dst", "0", "-1"]).await,
        Frame::Array(vec![bulk("b")])
    );
    assert_eq!(
        pusher.call(&["LRANGE", "src", "0", "-1"]).await,
        Frame::Array(vec![bulk("a")])
    );
}

#[tokio::test]
async fn bzpopmin_is_served_the_lowest_score_added_later() {
    let server = support::start().await;
    let mut waiter = Raw::connect(server.addr()).await;
    let mut writer = Raw::connect(server.addr()).await;
    waiter.send(&["BZPOPMIN", "z", "0"]).await;
    until_blocked(&server, 1).await;
    // A list under the awaited key does not serve a sorted-set waiter.
    writer.call(&["RPUSH", "z", "x"]).await;
    writer.call(&["DEL", "z"]).await;
    assert_eq!(server.blocked_clients().await, 1);
    writer.call(&["ZADD", "z", "2", "b", "1", "a"]).await;
    assert_eq!(
        waiter.reply().await,
        Frame::Array(vec![bulk("z"), bulk("a"), bulk("1")])
    );
    assert_eq!(
        writer.call(&["ZRANGE", "z", "0", "-1"]).await,
        Frame::Array(vec![bulk("b")])
    );
}

#[tokio::test]
async fn a_disconnected_waiter_is_forgotten_and_does_not_swallow_data() {
    let server = support::start().await;
    let gone = Raw::connect(server.addr()).await;
    let mut gone = gone;
    gone.send(&["BLPOP", "k", "0"]).await;
    until_blocked(&server, 1).await;
    let mut second = Raw::connect(server.addr()).await;
    second.send(&["BLPOP", "k", "0"]).await;
    until_blocked(&server, 2).await;
    drop(gone);
    until_blocked(&server, 1).await;
    let mut pusher = Raw::connect(server.addr()).await;
    pusher.call(&["RPUSH", "k", "v"]).await;
    assert_eq!(
        second.reply().await,
        Frame::Array(vec![bulk("k"), bulk("v")])
    );
}

#[tokio::test]
async fn a_thousand_blocked_clients_are_each_served_once_in_blocking_order() {
    const CLIENTS: usize = 1000;
    let server = support::start().await;
    let mut waiters = Vec::with_capacity(CLIENTS);
    for i in 0..CLIENTS {
        let mut client = Raw::connect(server.addr()).await;
        client.send(&["BLPOP", "queue", "0"]).await;
        until_blocked(&server, i + 1).await;
        waiters.push(client);
    }
    let mut pusher = Raw::connect(server.addr()).await;
    let elements: Vec<String> = (0..CLIENTS).map(|i| format!("e{i}")).collect();
    let mut push = vec!["RPUSH", "queue"];
    push.extend(elements.iter().map(String::as_str));
    assert_eq!(pusher.call(&push).await, Frame::Integer(CLIENTS as i64));
    for (i, client) in waiters.iter_mut().enumerate() {
        assert_eq!(
            client.reply().await,
            Frame::Array(vec![bulk("queue"), bulk(&format!("e{i}"))]),
            "client {i} must get the {i}th element"
        );
    }
    assert_eq!(server.blocked_clients().await, 0);
    assert_eq!(pusher.call(&["EXISTS", "queue"]).await, Frame::Integer(0));
    // Exactly once: nobody got a second reply.
    for client in &mut waiters {
        assert_eq!(client.call(&["PING"]).await, Frame::simple("PONG"));
    }
}

#[tokio::test]
async fn a_blocking_sequence_matches_redis() {
    let (ours, real) = support::both().await;
    let mut addrs = vec![ours.addr()];
    if let Some(r) = &real {
        addrs.push(r.addr());
    }
    let mut transcripts = Vec::new();
    for addr in addrs {
        let mut a = Raw::connect(addr).await;
        let mut b = Raw::connect(addr).await;
        let mut c = Raw::connect(addr).await;
        let mut log = Vec::new();
        a.send(&["BLPOP", "l1", "l2", "0"]).await;
        b.send(&["BRPOP", "l2", "0"]).await;
        c.send(&["BZPOPMAX", "z", "0"]).await;
        let mut admin = Raw::connect(addr).await;
        // Wait until the three are blocked: ours through the handle, Redis through INFO.
        if addr == ours.addr() {
            until_blocked(&ours, 3).await;
        } else {
            for _ in 0..10_000 {
                let info = admin.call(&["INFO", "clients"]).await;
                if let Frame::Bulk(text) = info {
                    if String::from_utf8_lossy(&text).contains("blocked_clients:3") {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        log.push(admin.call(&["RPUSH", "l2", "x", "y", "z"]).await);
        log.push(a.reply().await);
        log.push(b.reply().await);
        log.push(admin.call(&["LRANGE", "l2", "0", "-1"]).await);
        log.push(admin.call(&["ZADD", "z", "1", "m", "2", "n"]).await);
        log.push(c.reply().await);
        log.push(a.call(&["BLPOP", "l2", "0"]).await);
        log.push(a.call(&["BLPOP", "l2", "0.01"]).await);
        log.push(a.call(&["BLPOP", "l2", "-1"]).await);
        log.push(a.call(&["BLPOP", "l2", "abc"]).await);
        log.push(a.call(&["SET", "s", "v"]).await);
        log.push(a.call(&["BLPOP", "s", "0"]).await);
        log.push(a.call(&["BLMOVE", "l2", "d", "UP", "LEFT", "0"]).await);
        log.push(a.call(&["BLMPOP", "0.01", "1", "l2", "LEFT"]).await);
        transcripts.push(log);
    }
    if let [ours, real] = &transcripts[..] {
        assert_eq!(ours, real, "left: ours, right: redis");
    }
}

#[tokio::test]
async fn blocking_commands_inside_multi_answer_at_once_like_redis() {
    let (ours, real) = support::both().await;
    let mut addrs = vec![ours.addr()];
    if let Some(r) = &real {
        addrs.push(r.addr());
    }
    let mut transcripts = Vec::new();
    for addr in addrs {
        let mut c = Raw::connect(addr).await;
        let mut log = vec![c.call(&["MULTI"]).await];
        for args in [
            &["BLPOP", "k", "0"][..],
            &["BLMOVE", "k", "k2", "LEFT", "LEFT", "0"],
            &["BRPOPLPUSH", "k", "k2", "0"],
            &["BZPOPMIN", "z", "0"],
            &["BLMPOP", "0", "1", "k", "LEFT"],
            &["BZMPOP", "0", "1", "z", "MIN"],
            &["RPUSH", "k", "a"],
            &["BLPOP", "k", "0"],
        ] {
            log.push(c.call(args).await);
        }
        log.push(c.call(&["EXEC"]).await);
        transcripts.push(log);
    }
    assert_eq!(
        transcripts[0].last(),
        Some(&Frame::Array(vec![
            Frame::NullArray,
            Frame::Null,
            Frame::Null,
            Frame::NullArray,
            Frame::NullArray,
            Frame::NullArray,
            Frame::Integer(1),
            Frame::Array(vec![bulk("k"), bulk("a")]),
        ]))
    );
    if let [ours, real] = &transcripts[..] {
        assert_eq!(ours, real, "left: ours, right: redis");
    }
}

#[tokio::test]
async fn a_push_inside_exec_wakes_a_blocked_client_after_the_transaction() {
    let server = support::start().await;
    let mut waiter = Raw::connect(server.addr()).await;
    let mut writer = Raw::connect(server.addr()).await;
    waiter.send(&["BLPOP", "k", "0"]).await;
    until_blocked(&server, 1).await;
    writer.call(&["MULTI"]).await;
    writer.call(&["RPUSH", "k", "a", "b"]).await;
    writer.call(&["LPOP", "k"]).await;
    assert_eq!(
        writer.call(&["EXEC"]).await,
        Frame::Array(vec![Frame::Integer(2), bulk("a")])
    );
    // The waiter sees the state after EXEC: "a" was popped inside the transaction.
    assert_eq!(
        waiter.reply().await,
        Frame::Array(vec![bulk("k"), bulk("b")])
    );
}

/// Every frame a subscriber receives up to (and including) the message on `marker`.
async fn frames_until_marker(sub: &mut support::Wire) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..1000 {
        let frame = String::from_utf8_lossy(&sub.frame().await).into_owned();
        let done = frame.contains("marker");
        out.push(frame);
        if done {
            return out;
        }
    }
    panic!("no marker message among 1000 frames");
}

#[tokio::test]
async fn keyspace_events_of_list_set_and_zset_commands_match_redis() {
    let ours = locksmith_server::Server::builder()
        .notify_keyspace_events("EA")
        .start()
        .await
        .unwrap();
    let real = support::RealRedis::start_with(&["--notify-keyspace-events", "EA"]);
    let mut addrs = vec![ours.addr()];
    if let Some(r) = &real {
        addrs.push(r.addr());
    }
    let mut transcripts = Vec::new();
    for addr in addrs {
        let mut sub = support::Wire::connect(addr).await;
        sub.call(&[&["SUBSCRIBE", "marker"]], 1).await;
        sub.call(&[&["PSUBSCRIBE", "__keyevent@0__:*"]], 1).await;
        let mut writer = Raw::connect(addr).await;
        for args in [
            &["LPUSH", "l", "a", "b"][..],
            &["RPUSH", "l", "c"],
            &["LPOP", "l"],
            &["RPOP", "l", "5"],
            &["LPUSHX", "l", "x"],
            &["RPUSH", "src", "1"],
            &["LMOVE", "src", "dst", "LEFT", "RIGHT"],
            &["LSET", "dst", "0", "z"],
            &["LINSERT", "dst", "BEFORE", "z", "y"],
            &["LREM", "dst", "1", "y"],
            &["LTRIM", "dst", "0", "0"],
            &["BLPOP", "dst", "0"],
            &["SADD", "s", "a"],
            &["SADD", "s", "b"],
            &["SREM", "s", "a"],
            &["SPOP", "s"],
            &["SADD", "s2", "1", "2"],
            &["SMOVE", "s2", "s3", "1"],
            &["SINTERSTORE", "s4", "s2", "s3"],
            &["SUNIONSTORE", "s4", "s2", "s3"],
            &["SINTERSTORE", "s4", "s2", "s3"],
            &["ZADD", "z", "1", "a"],
            &["ZADD", "z", "INCR", "1", "a"],
            &["ZINCRBY", "z", "1", "a"],
            &["ZREM", "z", "a"],
            &["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"],
            &["ZREMRANGEBYSCORE", "z", "1", "1"],
            &["ZREMRANGEBYRANK", "z", "0", "0"],
            &["ZREMRANGEBYLEX", "z", "[c", "[c"],
            &["ZADD", "z", "5", "e"],
            &["ZPOPMIN", "z"],
            &["ZRANGESTORE", "z2", "z", "0", "-1"],
            &["ZUNIONSTORE", "z3", "2", "z", "z2"],
            &["ZINTERSTORE", "z3", "1", "missing"],
            &["BZPOPMAX", "z", "0"],
            &["PUBLISH", "marker", "done"],
        ] {
            writer.call(args).await;
        }
        transcripts.push(frames_until_marker(&mut sub).await);
    }
    let all = transcripts[0].concat();
    for event in [
        "lpush",
        "ltrim",
        "spop",
        "sunionstore",
        "zincr",
        "zrangestore",
        "del",
    ] {
        assert!(all.contains(event), "no {event} event in {all}");
    }
    if let [ours, real] = &transcripts[..] {
        assert_eq!(ours, real, "left: ours, right: redis");
    }
}

/// `INFO clients` `blocked_clients` and the `b` flag of `CLIENT LIST` while a client waits,
/// on our server and on real Redis (what Redis's test suite polls before it pushes).
#[tokio::test]
async fn a_waiting_client_is_counted_and_flagged_as_blocked_like_redis() {
    let (ours, real) = support::both().await;
    let mut addrs = vec![ours.addr()];
    addrs.extend(real.as_ref().map(|r| r.addr()));
    for addr in addrs {
        let url = format!("redis://{addr}/");
        let mut admin = support::conn(&url).await;
        let mut waiter = Raw::connect(addr).await;
        waiter.send(&["BLPOP", "blocked-list", "0"]).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let info: String = support::cmd(&["INFO", "clients"])
                .query_async(&mut admin)
                .await
                .unwrap();
            if info.contains("blocked_clients:1\r\n") {
                break;
            }
            assert!(Instant::now() < deadline, "{addr}: never counted: {info}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let list: String = support::cmd(&["CLIENT", "LIST"])
            .query_async(&mut admin)
            .await
            .unwrap();
        let line = list.lines().find(|l| l.contains("cmd=blpop")).unwrap();
        assert!(line.contains(" flags=b "), "{addr}: {line}");
        let _: i64 = support::cmd(&["RPUSH", "blocked-list", "x"])
            .query_async(&mut admin)
            .await
            .unwrap();
        assert!(matches!(waiter.reply().await, Frame::Array(_)));
        let info: String = support::cmd(&["INFO", "clients"])
            .query_async(&mut admin)
            .await
            .unwrap();
        assert!(info.contains("blocked_clients:0\r\n"), "{addr}: {info}");
        let list: String = support::cmd(&["CLIENT", "LIST"])
            .query_async(&mut admin)
            .await
            .unwrap();
        let line = list.lines().find(|l| l.contains("cmd=blpop")).unwrap();
        assert!(line.contains(" flags=N "), "{addr}: {line}");
    }
}

/// `CLIENT UNBLOCK` ends a wait as its timeout would, or with the `UNBLOCKED` error, on our
/// server and on real Redis.
#[tokio::test]
async fn client_unblock_matches_redis() {
    let (ours, real) = support::both().await;
    let mut addrs = vec![ours.addr()];
    addrs.extend(real.as_ref().map(|r| r.addr()));
    for addr in addrs {
        let mut admin = support::conn(&format!("redis://{addr}/")).await;
        let mut waiter = Raw::connect(addr).await;
        waiter.send(&["CLIENT", "ID"]).await;
        let Frame::Integer(id) = waiter.reply().await else {
            panic!("no id")
        };
        let id = id.to_string();
        let mut replies = Vec::new();
        for reason in [None, Some("TIMEOUT"), Some("ERROR")] {
            waiter.send(&["BLPOP", "unblock-list", "0"]).await;
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let mut args = vec!["CLIENT", "UNBLOCK", id.as_str()];
                args.extend(reason);
                let n: i64 = support::cmd(&args).query_async(&mut admin).await.unwrap();
                if n == 1 {
                    break;
                }
                assert!(Instant::now() < deadline, "{addr}: never blocked");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            replies.push(format!("{:?}", waiter.reply().await));
        }
        assert_eq!(replies[0], replies[1], "{addr}");
        for args in [
            &["CLIENT", "UNBLOCK", "asd"][..],
            &["CLIENT", "UNBLOCK", &id],
            &["CLIENT", "UNBLOCK", &id, "bogus"],
            &["CLIENT", "UNBLOCK", "asd", "bogus"],
            &["CLIENT", "unBLOCK", &id, "error", "extra"],
        ] {
            replies.push(support::run(&mut admin, args).await);
        }
        assert_eq!(
            replies[3..],
            [
                "ERROR ERR value is not an integer or out of range".to_string(),
                "int(0)".into(),
                "ERROR ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR".into(),
                "ERROR ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR".into(),
                "ERROR ERR unknown subcommand or wrong number of arguments for 'unBLOCK'. Try CLIENT HELP.".into(),
            ],
            "{addr}"
        );
    }
}
