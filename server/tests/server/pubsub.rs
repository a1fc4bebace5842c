//! Pub/sub compared with real Redis byte for byte: subscribe/unsubscribe confirmations,
//! delivered messages and their order, RESP2 subscribed mode, PUBSUB introspection, patterns,
//! shard channels, keyspace notifications, and slow subscribers being disconnected.

use locksmith_testkit as support;

use support::{Pair, Twin, Wire};

fn text(frames: &[Vec<u8>]) -> String {
    frames
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

#[tokio::test]
async fn subscribe_publish_unsubscribe_sequences_match_redis_in_resp2() {
    let pair = Pair::start().await;
    let mut sub = Twin::connect(&pair).await;
    let mut publisher = Twin::connect(&pair).await;

    let confirms = sub.same(&[&["SUBSCRIBE", "a", "b", "a"]], 3).await;
    assert_eq!(
        text(&confirms),
        "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n\
         *3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n\
         *3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:2\r\n"
    );
    sub.same(&[&["PSUBSCRIBE", "n*", "[ab]"]], 2).await;

    // One subscriber on `a` plus the `[ab]` pattern: two receivers.
    let count = publisher.same(&[&["PUBLISH", "a", "hello"]], 1).await;
    assert_eq!(text(&count), ":2\r\n");
    sub.expect(2).await;
    publisher.same(&[&["PUBLISH", "news", "n1"]], 1).await;
    publisher.same(&[&["PUBLISH", "nobody", "x"]], 1).await;
    let got = sub.expect(2).await;
    assert!(text(&got).contains("pmessage"));

    // Delivery order is publish order.
    let batch: Vec<Vec<String>> = (0..20)
        .map(|i| vec!["PUBLISH".to_string(), "b".to_string(), format!("m{i}")])
        .collect();
    let cmds: Vec<Vec<&str>> = batch
        .iter()
        .map(|c| c.iter().map(String::as_str).collect())
        .collect();
    let refs: Vec<&[&str]> = cmds.iter().map(Vec::as_slice).collect();
    publisher.same(&refs, 20).await;
    let delivered = sub.expect(40).await;
    let order: Vec<String> = delivered
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .filter(|f| f.starts_with("*3"))
        .collect();
    assert_eq!(order.len(), 20);
    for (i, frame) in order.iter().enumerate() {
        assert!(frame.ends_with(&format!("m{i}\r\n")), "{frame}");
    }

    // Subscribed mode: PING answers an array, other commands are refused.
    sub.same(&[&["PING"], &["PING", "hi"], &["PING", "a", "b"]], 3)
        .await;
    sub.same(
        &[
            &["GET", "x"],
            &["PUBSUB", "NUMPAT"],
            &["PUBLISH", "a", "b"],
            &["NOSUCH"],
            &["SUBSCRIBE"],
            &["PUBSUB", "NOPE"],
        ],
        6,
    )
    .await;

    sub.same(&[&["UNSUBSCRIBE", "a", "zz"]], 2).await;
    sub.same(&[&["UNSUBSCRIBE"]], 1).await;
    sub.same(&[&["PUNSUBSCRIBE", "[ab]"]], 1).await;
    sub.same(&[&["PING"]], 1).await;
    sub.same(&[&["PUNSUBSCRIBE"]], 1).await;
    let empty = sub
        .same(&[&["UNSUBSCRIBE"], &["PUNSUBSCRIBE"], &["SUNSUBSCRIBE"]], 3)
        .await;
    assert_eq!(
        text(&empty[..1]),
        "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"
    );
    // Out of subscribed mode: ordinary replies again.
    sub.same(&[&["PING"], &["GET", "x"]], 2).await;
}

#[tokio::test]
async fn shard_channels_count_apart_and_keep_subscribed_mode() {
    let pair = Pair::start().await;
    let mut sub = Twin::connect(&pair).await;
    let mut publisher = Twin::connect(&pair).await;
    sub.same(&[&["SSUBSCRIBE", "x", "y"]], 2).await;
    sub.same(&[&["SUBSCRIBE", "c"]], 1).await;
    sub.same(&[&["PSUBSCRIBE", "p"]], 1).await;
    publisher
        .same(
            &[
                &["SPUBLISH", "x", "hi"],
                &["PUBLISH", "x", "not-shard"],
                &["SPUBLISH", "c", "nobody"],
            ],
            3,
        )
        .await;
    sub.expect(1).await;
    sub.same(&[&["UNSUBSCRIBE"], &["PUNSUBSCRIBE"]], 2).await;
    sub.same(&[&["PING"]], 1).await;
    sub.same(&[&["SUNSUBSCRIBE", "x", "x"]], 2).await;
    sub.same(&[&["SUNSUBSCRIBE"]], 1).await;
    sub.same(&[&["PING"]], 1).await;
}

#[tokio::test]
async fn pubsub_introspection_matches_redis() {
    let pair = Pair::start().await;
    let mut s1 = Twin::connect(&pair).await;
    let mut s2 = Twin::connect(&pair).await;
    let mut q = Twin::connect(&pair).await;
    s1.same(&[&["SUBSCRIBE", "news.tech"]], 1).await;
    s2.same(&[&["SUBSCRIBE", "news.tech", "sport"]], 2).await;
    s1.same(&[&["PSUBSCRIBE", "news.*", "x*"]], 2).await;
    s2.same(&[&["PSUBSCRIBE", "news.*"]], 1).await;
    s2.same(&[&["SSUBSCRIBE", "shard1"]], 1).await;
    q.same(
        &[
            &["PUBSUB", "CHANNELS", "news*"],
            &["PUBSUB", "CHANNELS", "sp?rt"],
            &["PUBSUB", "CHANNELS", "nothing*"],
            &["PUBSUB", "NUMSUB", "news.tech", "sport", "none"],
            &["PUBSUB", "NUMSUB"],
            &["PUBSUB", "NUMPAT"],
            &["PUBSUB", "SHARDCHANNELS"],
            &["PUBSUB", "SHARDCHANNELS", "x*"],
            &["PUBSUB", "SHARDNUMSUB", "shard1", "sport"],
            &["PUBSUB", "channels", "a", "b"],
            &["PUBSUB", "NUMPAT", "x"],
            &["PUBSUB"],
            &["PUBSUB", "foo"],
            &["PUBSUB", "HELP"],
            &["PUBLISH", "news.tech", "m"],
            &["PUBLISH", "xylophone", "m"],
        ],
        16,
    )
    .await;
    s1.expect(3).await;
    s2.expect(2).await;
    // Channels with no subscriber left disappear.
    s1.same(&[&["UNSUBSCRIBE", "news.tech"]], 1).await;
    s2.same(&[&["UNSUBSCRIBE", "news.tech"]], 1).await;
    q.same(
        &[
            &["PUBSUB", "CHANNELS"],
            &["PUBSUB", "NUMSUB", "news.tech"],
            &["PUBSUB", "NUMPAT"],
        ],
        3,
    )
    .await;
}

#[tokio::test]
async fn a_disconnected_subscriber_is_forgotten() {
    let server = support::start().await;
    let mut sub = Wire::connect(server.addr()).await;
    sub.call(&[&["SUBSCRIBE", "ch"]], 1).await;
    let mut q = Wire::connect(server.addr()).await;
    assert_eq!(
        q.call(&[&["PUBSUB", "NUMSUB", "ch"]], 1).await,
        vec![b"*2\r\n$2\r\nch\r\n:1\r\n".to_vec()]
    );
    drop(sub);
    // The server forgets the subscription when the connection task ends; bounded polling.
    let mut left = Vec::new();
    for _ in 0..500 {
        left = q.call(&[&["PUBLISH", "ch", "m"]], 1).await;
        if left == vec![b":0\r\n".to_vec()] {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(left, vec![b":0\r\n".to_vec()]);
}

/// Our server started with `notify-keyspace-events` = `flags` and a real one configured alike.
async fn notifying_twins(
    flags: &str,
) -> (locksmith_server::ServerHandle, Option<support::RealRedis>) {
    let ours = locksmith_server::Server::builder()
        .notify_keyspace_events(flags)
        .start()
        .await
        .unwrap();
    let real = support::RealRedis::start_with(&["--notify-keyspace-events", flags]);
    (ours, real)
}

async fn twin(ours: &locksmith_server::ServerHandle, real: &Option<support::RealRedis>) -> Twin {
    Twin {
        ours: Wire::connect(ours.addr()).await,
        real: match real {
            Some(r) => Some(Wire::connect(r.addr()).await),
            None => None,
        },
    }
}

#[tokio::test]
async fn keyspace_notifications_for_set_del_and_expire_match_redis() {
    let (ours, real) = notifying_twins("KEA").await;
    let mut sub = twin(&ours, &real).await;
    let mut events = twin(&ours, &real).await;
    let mut writer = twin(&ours, &real).await;
    sub.same(&[&["PSUBSCRIBE", "__key*__:*"]], 1).await;
    events
        .same(&[&["SUBSCRIBE", "__keyevent@0__:del"]], 1)
        .await;
    writer
        .same(
            &[
                &["SET", "k", "v"],
                &["SET", "k", "v", "EX", "100"],
                &["DEL", "k", "missing"],
                &["SET", "other", "1", "PX", "100000"],
                &["SELECT", "3"],
                &["DEL", "nothing"],
                &["SET", "in3", "v"],
                &["DEL", "in3"],
            ],
            8,
        )
        .await;
    // set: 2 frames; set+expire: 4; del: 2; set+expire: 4; db 3 set: 2; db 3 del: 2.
    let got = sub.expect(16).await;
    assert!(text(&got).contains("__keyspace@3__:in3"));
    events.expect(1).await;
}

#[tokio::test]
async fn only_enabled_classes_and_channels_are_notified() {
    let (ours, real) = notifying_twins("Eg").await;
    let mut sub = twin(&ours, &real).await;
    let mut writer = twin(&ours, &real).await;
    sub.same(&[&["PSUBSCRIBE", "__key*__:*"]], 1).await;
    writer
        .same(&[&["SET", "k", "v", "EX", "100"], &["DEL", "k"]], 2)
        .await;
    // `$` is off (no `set`), `K` is off: `expire` and `del` on the keyevent channels only.
    let got = sub.expect(2).await;
    assert!(text(&got).contains("__keyevent@0__:expire"));
    assert!(text(&got).contains("__keyevent@0__:del"));
    sub.same(&[&["PING"]], 1).await;
}

#[tokio::test]
async fn notifications_and_messages_from_a_transaction_arrive_in_order_after_it() {
    let (ours, real) = notifying_twins("KEA").await;
    let mut sub = twin(&ours, &real).await;
    let mut writer = twin(&ours, &real).await;
    sub.same(&[&["PSUBSCRIBE", "*"]], 1).await;
    writer
        .same(
            &[
                &["MULTI"],
                &["SET", "a", "1"],
                &["PUBLISH", "ch", "between"],
                &["DEL", "a"],
                &["PUBLISH", "ch", "last"],
                &["EXEC"],
            ],
            6,
        )
        .await;
    let got = sub.expect(6).await;
    let order: Vec<&str> = [
        "__keyspace@0__:a",
        "__keyevent@0__:set",
        "between",
        "__keyspace@0__:a",
        "__keyevent@0__:del",
        "last",
    ]
    .to_vec();
    for (frame, want) in got.iter().zip(order) {
        assert!(String::from_utf8_lossy(frame).contains(want), "{want}");
    }
}

#[tokio::test(start_paused = true)]
async fn expired_keys_raise_expired_events_on_the_node_clock() {
    let server = locksmith_server::Server::builder()
        .notify_keyspace_events("Ex")
        .start()
        .await
        .unwrap();
    let mut sub = Wire::connect(server.addr()).await;
    sub.call(&[&["SUBSCRIBE", "__keyevent@0__:expired"]], 1)
        .await;
    let mut writer = Wire::connect(server.addr()).await;
    writer
        .call(
            &[
                &["SET", "first", "v", "PX", "100"],
                &["SET", "second", "v", "PX", "200"],
            ],
            2,
        )
        .await;
    tokio::time::advance(std::time::Duration::from_millis(150)).await;
    // Lazy expiry (a read of an expired key) or the active cycle: either raises the event.
    writer.call(&[&["GET", "first"]], 1).await;
    tokio::time::advance(std::time::Duration::from_millis(100)).await;
    writer.call(&[&["GET", "second"]], 1).await;
    let got = sub.frames(2).await;
    assert_eq!(
        text(&got),
        "*3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:expired\r\n$5\r\nfirst\r\n\
         *3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:expired\r\n$6\r\nsecond\r\n"
    );
}

#[tokio::test]
async fn a_subscriber_that_stops_reading_is_disconnected_and_memory_stays_bounded() {
    const MESSAGE: usize = 1 << 20;
    const COUNT: usize = 96;
    let pair = Pair::start().await;
    let mut targets = vec![(pair.ours.addr(), pair.ours.url())];
    if let Some(real) = &pair.real {
        targets.push((real.addr(), real.url()));
    }
    for (addr, url) in targets {
        let mut sub = Wire::connect(addr).await;
        sub.call(&[&["SUBSCRIBE", "slow"]], 1).await;
        // From here on the subscriber reads nothing.
        let mut publisher = support::conn(&url).await;
        let payload = vec![b'x'; MESSAGE];
        for _ in 0..COUNT {
            let _: i64 = redis::cmd("PUBLISH")
                .arg("slow")
                .arg(&payload)
                .query_async(&mut publisher)
                .await
                .unwrap();
        }
        // Past the 32mb hard limit the server closes the connection: the subscriber sees
        // EOF after what was already on the wire, far less than everything published.
        let received = sub
            .drain_to_eof(std::time::Duration::from_secs(30))
            .await
            .expect("the slow subscriber was not disconnected");
        assert!(
            received < COUNT * MESSAGE * 2 / 3,
            "{addr}: received {received} bytes of {}",
            COUNT * MESSAGE
        );
        let numsub = support::run(&mut publisher, &["PUBSUB", "NUMSUB", "slow"]).await;
        assert!(numsub.ends_with("int(0)])"), "{addr}: {numsub}");
    }
}

#[tokio::test]
async fn redis_crate_async_pubsub_receives_channel_and_pattern_messages_in_order() {
    use futures::StreamExt;
    use redis::AsyncCommands;
    let server = support::start().await;
    let client = support::client(&server.url());
    let mut ps = client.get_async_pubsub().await.unwrap();
    ps.subscribe("orders").await.unwrap();
    ps.psubscribe("ord*").await.unwrap();
    let mut con = support::conn(&server.url()).await;
    for i in 0..50 {
        let receivers: i64 = con.publish("orders", i).await.unwrap();
        assert_eq!(receivers, 2);
    }
    let mut messages = ps.on_message();
    for i in 0..50 {
        let direct = messages.next().await.unwrap();
        assert_eq!(direct.get_channel_name(), "orders");
        assert!(!direct.from_pattern());
        assert_eq!(direct.get_payload::<i64>().unwrap(), i);
        let by_pattern = messages.next().await.unwrap();
        assert_eq!(by_pattern.get_pattern::<String>().unwrap(), "ord*");
        assert_eq!(by_pattern.get_payload::<i64>().unwrap(), i);
    }
}

/// Whether our server speaks RESP3 yet (`HELLO` belongs to the connection commands).
async fn ours_has_hello(url: &str) -> bool {
    let mut con = support::conn(url).await;
    let reply = support::run(&mut con, &["HELLO", "3"]).await;
    if reply.starts_with("ERROR ERR unknown command") {
        eprintln!("HELLO not available on our server yet: skipping the RESP3 comparison");
        return false;
    }
    true
}

#[tokio::test]
async fn resp3_pushes_interleave_with_replies_as_in_redis() {
    let pair = Pair::start().await;
    if !ours_has_hello(&pair.ours.url()).await {
        return;
    }
    let mut sub = Twin::connect(&pair).await;
    let mut publisher = Twin::connect(&pair).await;
    sub.send(&[&["HELLO", "3"]]).await;
    // The HELLO map differs (server name, id): read it apart.
    sub.ours.frame().await;
    if let Some(real) = &mut sub.real {
        real.frame().await;
    }
    let frames = sub
        .same(
            &[
                &["SUBSCRIBE", "ch", "ch2"],
                &["PUBLISH", "ch", "self"],
                &["GET", "k"],
                &["PING"],
                &["PSUBSCRIBE", "c*"],
            ],
            7,
        )
        .await;
    assert!(frames[0].starts_with(b">3\r\n$9\r\nsubscribe"));
    publisher.same(&[&["PUBLISH", "ch", "hello"]], 1).await;
    sub.expect(2).await;
    sub.same(&[&["UNSUBSCRIBE", "ch", "ch2"], &["PUNSUBSCRIBE"]], 3)
        .await;
    sub.same(
        &[
            &["UNSUBSCRIBE"],
            &["SSUBSCRIBE", "s"],
            &["SPUBLISH", "s", "m"],
        ],
        4,
    )
    .await;
}

#[tokio::test]
async fn redis_crate_resp3_connection_gets_messages_as_pushes_between_commands() {
    use redis::AsyncCommands;
    let server = support::start().await;
    if !ours_has_hello(&server.url()).await {
        return;
    }
    let client = support::client(&format!("{}?protocol=resp3", server.url()));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let config = redis::AsyncConnectionConfig::new().set_push_sender(tx);
    let mut con = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap();
    con.subscribe("waiters").await.unwrap();
    let mut publisher = support::conn(&server.url()).await;
    for i in 0..10 {
        let _: () = con.set("k", i).await.unwrap();
        let receivers: i64 = publisher.publish("waiters", i).await.unwrap();
        assert_eq!(receivers, 1);
        let got: i64 = con.get("k").await.unwrap();
        assert_eq!(got, i);
    }
    let first = rx.recv().await.unwrap();
    assert_eq!(first.kind, redis::PushKind::Subscribe);
    for i in 0..10 {
        let push = rx.recv().await.unwrap();
        assert_eq!(push.kind, redis::PushKind::Message);
        assert_eq!(
            push.data,
            vec![
                redis::Value::BulkString(b"waiters".to_vec()),
                redis::Value::BulkString(i.to_string().into_bytes()),
            ]
        );
    }
}

#[tokio::test]
async fn new_key_events_match_redis() {
    let (ours, real) = support::both().await;
    let mut targets = vec![(ours.url(), false)];
    if let Some(r) = &real {
        targets.push((r.url(), true));
    }
    for (url, real) in targets {
        let mut con = support::conn(&url).await;
        let _: () = support::cmd(&["CONFIG", "SET", "notify-keyspace-events", "En"])
            .query_async(&mut con)
            .await
            .unwrap();
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut sub = client.get_async_pubsub().await.unwrap();
        sub.psubscribe("__keyevent@0__:new").await.unwrap();
        for cmd in [
            &["SET", "foo", "bar"][..],
            &["SET", "foo", "baz"],
            &["LPUSH", "list", "a"],
            &["LPUSH", "list", "b"],
            &["SADD", "set", "a"],
            &["ZADD", "zset", "1", "a"],
            &["HSET", "hash", "f", "v"],
            &["RENAME", "foo", "renamed"],
            &["INCR", "counter"],
        ] {
            let _: redis::Value = support::cmd(cmd).query_async(&mut con).await.unwrap();
        }
        let _: () = support::cmd(&["CONFIG", "SET", "notify-keyspace-events", ""])
            .query_async(&mut con)
            .await
            .unwrap();
        let mut stream = sub.on_message();
        let mut keys = Vec::new();
        use futures::StreamExt;
        while keys.len() < 7 {
            let msg = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next())
                .await
                .expect("a new-key event is missing")
                .unwrap();
            keys.push(msg.get_payload::<String>().unwrap());
        }
        assert_eq!(
            keys,
            ["foo", "list", "set", "zset", "hash", "renamed", "counter"],
            "real redis: {real}"
        );
    }
}
