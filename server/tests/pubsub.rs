//! Pub/sub compared with real Redis byte for byte: subscribe/unsubscribe confirmations,
//! delivered messages and their order, RESP2 subscribed mode, PUBSUB introspection, patterns,
//! shard channels, keyspace notifications, and slow subscribers being disconnected.

mod support;

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
