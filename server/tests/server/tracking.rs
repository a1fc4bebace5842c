//! Client-side caching (`CLIENT TRACKING`) compared with real Redis byte for byte: RESP3
//! invalidation pushes and their place after the reader's own reply, RESP2 redirection to the
//! `__redis__:invalidate` channel, a broken redirect, BCAST prefixes, NOLOOP, OPTIN/OPTOUT
//! with `CLIENT CACHING`, flushes, scripts, blocked clients, expiry, the table limit, the
//! error texts and `CLIENT TRACKINGINFO`/`GETREDIR`, and the INFO fields.

use locksmith_testkit as support;

use std::time::Duration;
use support::{Pair, Twin, Wire};

fn text(frames: &[Vec<u8>]) -> String {
    frames
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

/// A client id from a `:<id>` reply.
fn id_of(frame: &[u8]) -> String {
    String::from_utf8_lossy(frame)
        .trim_start_matches(':')
        .trim_end()
        .to_string()
}

/// The ids of one connection on each server (`CLIENT ID`).
async fn ids(twin: &mut Twin) -> (String, Option<String>) {
    twin.send(&[&["CLIENT", "ID"]]).await;
    let ours = id_of(&twin.ours.frame().await);
    let real = match &mut twin.real {
        Some(real) => Some(id_of(&real.frame().await)),
        None => None,
    };
    (ours, real)
}

/// `HELLO <resp>` on both (the replies name each server's client id, so they differ).
async fn hello(twin: &mut Twin, resp: &str) {
    twin.send(&[&["HELLO", resp]]).await;
    twin.ours.frame().await;
    if let Some(real) = &mut twin.real {
        real.frame().await;
    }
}

/// Sends `cmd` with the client id `ids` (ours, real) appended to each server's copy, and
/// asserts the next `n` frames are identical.
async fn with_id(twin: &mut Twin, cmd: &[&str], ids: &(String, Option<String>), n: usize) {
    let mut ours: Vec<&str> = cmd.to_vec();
    ours.push(&ids.0);
    twin.ours.send(&[&ours]).await;
    if let (Some(real), Some(id)) = (&mut twin.real, &ids.1) {
        let mut theirs: Vec<&str> = cmd.to_vec();
        theirs.push(id);
        real.send(&[&theirs]).await;
    }
    twin.expect(n).await;
}

#[tokio::test]
async fn resp3_invalidations_follow_the_readers_own_reply() {
    let pair = Pair::start().await;
    let mut reader = Twin::connect(&pair).await;
    let mut writer = Twin::connect(&pair).await;
    hello(&mut reader, "3").await;
    reader.same(&[&["CLIENT", "TRACKING", "ON"]], 1).await;
    writer.same(&[&["SET", "k", "1"]], 1).await;
    reader.same(&[&["GET", "k"]], 1).await;
    // Another client's write: a push, and the key is forgotten (one push only).
    writer.same(&[&["SET", "k", "2"]], 1).await;
    writer.same(&[&["SET", "k", "3"]], 1).await;
    let push = reader.expect(1).await;
    assert_eq!(text(&push), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n");
    // The reader's own write: the reply first, then the push.
    reader.same(&[&["GET", "k"]], 1).await;
    let own = reader.same(&[&["SET", "k", "4"]], 2).await;
    assert_eq!(text(&own[..1]), "+OK\r\n");
    reader.same(&[&["HSET", "h", "f", "1"]], 1).await;
    reader.same(&[&["HGET", "h", "f"]], 1).await;
    reader.same(&[&["HDEL", "h", "f"]], 2).await;
    // A transaction: the invalidation follows EXEC's reply.
    reader.same(&[&["MGET", "a", "b"]], 1).await;
    let exec = reader
        .same(
            &[
                &["MULTI"],
                &["INCR", "a"],
                &["GET", "b"],
                &["SET", "b", "x"],
                &["EXEC"],
            ],
            7,
        )
        .await;
    assert!(text(&exec[4..5]).starts_with("*3\r\n"), "{}", text(&exec));
    assert!(text(&exec[5..]).contains("$1\r\na\r\n"), "{}", text(&exec));
    // A flush: one null to everyone tracking, after the flusher's reply.
    reader.same(&[&["GET", "k"]], 1).await;
    let flush = reader.same(&[&["FLUSHDB"]], 2).await;
    assert_eq!(text(&flush), "+OK\r\n>2\r\n$10\r\ninvalidate\r\n_\r\n");
    // Pipelined reads and writes keep the same interleaving.
    reader
        .same(
            &[
                &["GET", "p"],
                &["SET", "p", "1"],
                &["GET", "p"],
                &["DEL", "p"],
            ],
            6,
        )
        .await;
    // NOLOOP: nothing for the client's own writes, still for others'.
    reader
        .same(&[&["CLIENT", "TRACKING", "ON", "NOLOOP"]], 1)
        .await;
    reader.same(&[&["GET", "n"]], 1).await;
    reader.same(&[&["SET", "n", "1"]], 1).await;
    reader.same(&[&["GET", "n"]], 1).await;
    writer.same(&[&["SET", "n", "2"]], 1).await;
    reader.expect(1).await;
    reader.same(&[&["CLIENT", "TRACKING", "OFF"]], 1).await;
    reader.same(&[&["PING"]], 1).await;
}

#[tokio::test]
async fn tracking_errors_and_trackinginfo_match_redis() {
    let pair = Pair::start().await;
    let mut c = Twin::connect(&pair).await;
    for resp in ["2", "3"] {
        hello(&mut c, resp).await;
        for cmd in [
            &["CLIENT", "TRACKINGINFO"][..],
            &["CLIENT", "GETREDIR"],
            &["CLIENT", "CACHING", "YES"],
            &["CLIENT", "TRACKING"],
            &["CLIENT", "TRACKING", "MAYBE"],
            &["CLIENT", "TRACKING", "ON", "REDIRECT"],
            &["CLIENT", "TRACKING", "ON", "REDIRECT", "abc"],
            &["CLIENT", "TRACKING", "ON", "REDIRECT", "987654"],
            &["CLIENT", "TRACKING", "ON", "REDIRECT", "-1"],
            &["CLIENT", "TRACKING", "ON", "PREFIX", "a"],
            &["CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"],
            &["CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"],
            &["CLIENT", "TRACKING", "ON", "NOSUCHOPTION"],
            &[
                "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "foo", "PREFIX", "fo",
            ],
            &[
                "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "fo", "PREFIX", "foo",
            ],
            &[
                "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "a",
            ],
            &[
                "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "foo", "PREFIX", "bar",
            ],
            &["CLIENT", "TRACKINGINFO"],
            &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ba"],
            &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "food"],
            &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "baz"],
            &["CLIENT", "TRACKING", "ON"],
            &["CLIENT", "TRACKINGINFO"],
            &["CLIENT", "GETREDIR"],
            &["CLIENT", "TRACKING", "OFF"],
            &["CLIENT", "TRACKING", "ON", "BCAST"],
            &["CLIENT", "TRACKINGINFO"],
            &["CLIENT", "TRACKING", "OFF"],
            &["CLIENT", "TRACKING", "ON", "OPTIN", "NOLOOP"],
            &["CLIENT", "TRACKING", "ON", "OPTOUT"],
            &["CLIENT", "CACHING", "NO"],
            &["CLIENT", "CACHING", "MAYBE"],
            &["CLIENT", "CACHING", "YES"],
            &["CLIENT", "TRACKINGINFO"],
            &["CLIENT", "GETNAME"],
            // A CLIENT subcommand does not spend CACHING; any other command does.
            &["CLIENT", "TRACKINGINFO"],
            &["PING"],
            &["CLIENT", "TRACKINGINFO"],
            &["CLIENT", "TRACKING", "OFF"],
            &["CLIENT", "TRACKING", "ON", "OPTOUT"],
            &["CLIENT", "CACHING", "NO"],
            &["CLIENT", "TRACKINGINFO"],
            &["CLIENT", "TRACKING", "OFF", "NOLOOP"],
            &["CLIENT", "TRACKINGINFO"],
        ] {
            c.same(&[cmd], 1).await;
        }
    }
}

#[tokio::test]
async fn resp2_redirect_uses_the_invalidate_channel_and_reports_a_broken_redirect() {
    let pair = Pair::start().await;
    let mut redir = Twin::connect(&pair).await;
    let mut reader = Twin::connect(&pair).await;
    let mut writer = Twin::connect(&pair).await;
    let redir_ids = ids(&mut redir).await;
    redir
        .same(&[&["SUBSCRIBE", "__redis__:invalidate"]], 1)
        .await;
    with_id(
        &mut reader,
        &["CLIENT", "TRACKING", "ON", "REDIRECT"],
        &redir_ids,
        1,
    )
    .await;
    writer.same(&[&["MSET", "a", "1", "b", "2"]], 1).await;
    reader.same(&[&["MGET", "a", "b", "c"]], 1).await;
    writer.same(&[&["INCR", "b"]], 1).await;
    let message = redir.expect(1).await;
    assert_eq!(
        text(&message),
        "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nb\r\n"
    );
    // The reader's own write goes to the redirect too.
    reader.same(&[&["DEL", "a"]], 1).await;
    redir.expect(1).await;
    // A flush: a null message.
    reader.same(&[&["GET", "c"]], 1).await;
    writer.same(&[&["FLUSHALL"]], 1).await;
    let null = redir.expect(1).await;
    assert_eq!(
        text(&null),
        "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n"
    );
    // The redirect goes away: a RESP3 reader is told at the next invalidation.
    redir.same(&[&["QUIT"]], 1).await;
    hello(&mut reader, "3").await;
    reader.same(&[&["GET", "c"]], 1).await;
    writer.same(&[&["SET", "c", "1"]], 1).await;
    let broken = reader.ours.frame().await;
    assert!(String::from_utf8_lossy(&broken).starts_with(">2\r\n$21\r\ntracking-redir-broken\r\n"));
    if let Some(real) = &mut reader.real {
        let theirs = real.frame().await;
        assert!(String::from_utf8_lossy(&theirs).starts_with(">2\r\n$21\r\ntracking-redir-broken"));
    }
    reader.send(&[&["CLIENT", "TRACKINGINFO"]]).await;
    let info = text(&[reader.ours.frame().await]);
    assert!(info.contains("$15\r\nbroken_redirect\r\n"), "{info}");
    if let Some(real) = &mut reader.real {
        let theirs = text(&[real.frame().await]);
        let id = |id: &str| format!(":{id}\r\n");
        assert_eq!(
            info.replace(&id(&redir_ids.0), ":ID\r\n"),
            theirs.replace(&id(redir_ids.1.as_deref().unwrap_or("ID")), ":ID\r\n")
        );
    }
}

#[tokio::test]
async fn bcast_prefixes_send_one_message_per_prefix_and_honour_noloop() {
    let pair = Pair::start().await;
    let mut redir = Twin::connect(&pair).await;
    let mut reader = Twin::connect(&pair).await;
    let mut writer = Twin::connect(&pair).await;
    let redir_ids = ids(&mut redir).await;
    redir
        .same(&[&["SUBSCRIBE", "__redis__:invalidate"]], 1)
        .await;
    with_id(
        &mut reader,
        &[
            "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a:", "PREFIX", "b:", "REDIRECT",
        ],
        &redir_ids,
        1,
    )
    .await;
    writer
        .same(
            &[
                &["MULTI"],
                &["INCR", "a:1"],
                &["INCR", "a:2"],
                &["INCR", "b:1"],
                &["INCR", "c:1"],
                &["EXEC"],
            ],
            6,
        )
        .await;
    let messages = redir.expect(2).await;
    assert!(text(&messages).contains("a:1") && !text(&messages).contains("c:1"));
    writer
        .same(&[&["MSET", "a:x", "1", "zz", "2", "a:y", "3"]], 1)
        .await;
    redir.expect(1).await;
    // Adding a prefix keeps the others.
    with_id(
        &mut reader,
        &[
            "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "c:", "REDIRECT",
        ],
        &redir_ids,
        1,
    )
    .await;
    writer.same(&[&["SET", "c:9", "1"]], 1).await;
    redir.expect(1).await;
    // NOLOOP in a RESP3 connection: nothing for its own writes, others' keys still come.
    let mut own = Twin::connect(&pair).await;
    hello(&mut own, "3").await;
    own.same(&[&["CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"]], 1)
        .await;
    own.same(&[&["SET", "mine", "1"]], 1).await;
    writer.same(&[&["SET", "theirs", "1"]], 1).await;
    own.expect(1).await;
    // Without NOLOOP the client's own write comes back after its reply.
    own.same(&[&["CLIENT", "TRACKING", "OFF"]], 1).await;
    own.same(&[&["CLIENT", "TRACKING", "ON", "BCAST"]], 1).await;
    own.same(&[&["SET", "mine", "2"]], 2).await;
    // The broadcast messages stay out of the RESP2 reader's own connection.
    reader.same(&[&["PING"]], 1).await;
    redir.same(&[&["PING"]], 1).await;
}

#[tokio::test]
async fn optin_and_optout_track_by_client_caching() {
    let pair = Pair::start().await;
    let mut reader = Twin::connect(&pair).await;
    let mut writer = Twin::connect(&pair).await;
    hello(&mut reader, "3").await;
    reader
        .same(&[&["CLIENT", "TRACKING", "ON", "OPTIN"]], 1)
        .await;
    reader.same(&[&["GET", "untracked"]], 1).await;
    reader.same(&[&["CLIENT", "CACHING", "YES"]], 1).await;
    // Spent by the whole transaction, not by its first command.
    reader
        .same(&[&["MULTI"], &["GET", "t1"], &["GET", "t2"], &["EXEC"]], 4)
        .await;
    reader.same(&[&["GET", "untracked2"]], 1).await;
    writer
        .same(
            &[&[
                "MSET",
                "untracked",
                "1",
                "t1",
                "1",
                "t2",
                "1",
                "untracked2",
                "1",
            ]],
            1,
        )
        .await;
    let pushes = reader.expect(2).await;
    assert!(text(&pushes).contains("t1") && text(&pushes).contains("t2"));
    reader.same(&[&["CLIENT", "TRACKING", "OFF"]], 1).await;
    reader
        .same(&[&["CLIENT", "TRACKING", "ON", "OPTOUT"]], 1)
        .await;
    reader.same(&[&["CLIENT", "CACHING", "NO"]], 1).await;
    reader.same(&[&["GET", "skipped"]], 1).await;
    reader.same(&[&["GET", "kept"]], 1).await;
    writer
        .same(&[&["MSET", "skipped", "1", "kept", "1"]], 1)
        .await;
    let push = reader.expect(1).await;
    assert!(text(&push).contains("kept"));
    reader.same(&[&["PING"]], 1).await;
}

#[tokio::test]
async fn scripts_track_declared_keys_when_they_read_and_blocked_clients_get_pushes_after_reply() {
    let pair = Pair::start().await;
    let mut reader = Twin::connect(&pair).await;
    let mut writer = Twin::connect(&pair).await;
    hello(&mut reader, "3").await;
    reader.same(&[&["CLIENT", "TRACKING", "ON"]], 1).await;
    // No read inside: nothing tracked.
    reader
        .same(
            &[&["EVAL", "redis.call('set', 'k3', 'x')", "2", "k1", "k2"]],
            1,
        )
        .await;
    writer.same(&[&["MSET", "k1", "1", "k2", "1"]], 1).await;
    // A read inside: the declared keys are tracked (not the key read).
    reader
        .same(&[&["EVAL", "redis.call('get', 'k3')", "2", "k1", "k2"]], 1)
        .await;
    writer
        .same(&[&["MSET", "k3", "2", "k2", "2", "k1", "2"]], 1)
        .await;
    reader.expect(2).await;
    reader
        .same(&[&["EVAL_RO", "redis.call('ping')", "1", "k1"]], 1)
        .await;
    writer.same(&[&["SET", "k1", "3"]], 1).await;
    reader.same(&[&["PING"]], 1).await;
    // A script's own write of a key it tracks: the push follows the script's reply.
    reader.same(&[&["GET", "own"]], 1).await;
    reader
        .same(
            &[&["EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "own"]],
            2,
        )
        .await;
    // A blocked BLMOVE served by another client's push: its reply, then the push for the
    // destination list it was tracking.
    reader.same(&[&["RPUSH", "dst", "a"]], 1).await;
    reader.same(&[&["LRANGE", "dst", "0", "-1"]], 1).await;
    reader
        .send(&[&["BLMOVE", "src", "dst", "LEFT", "LEFT", "0"]])
        .await;
    let mut waited = 0;
    loop {
        let mut probe = Wire::connect(pair.ours.addr()).await;
        let info = text(&probe.call(&[&["INFO", "clients"]], 1).await);
        if info.contains("blocked_clients:1") || waited >= 200 {
            break;
        }
        waited += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if let Some(real) = &pair.real {
        for _ in 0..200 {
            let mut probe = Wire::connect(real.addr()).await;
            let info = text(&probe.call(&[&["INFO", "clients"]], 1).await);
            if info.contains("blocked_clients:1") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    writer.same(&[&["RPUSH", "src", "foo"]], 1).await;
    let served = reader.expect(2).await;
    assert_eq!(
        text(&served),
        "$3\r\nfoo\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\ndst\r\n"
    );
}

#[tokio::test]
async fn expiry_and_the_table_limit_send_invalidations_and_info_counts_them() {
    let pair = Pair::start().await;
    let mut reader = Twin::connect(&pair).await;
    let mut stats = Twin::connect(&pair).await;
    hello(&mut reader, "3").await;
    reader.same(&[&["CLIENT", "TRACKING", "ON"]], 1).await;
    // Active expiry: the push arrives without the reader doing anything (ours only: whether
    // the read comes before the deadline depends on the machine's speed).
    let mut alone = Wire::connect(pair.ours.addr()).await;
    alone
        .call(&[&["HELLO", "3"], &["CLIENT", "TRACKING", "ON"]], 2)
        .await;
    alone.call(&[&["SET", "short", "1", "PX", "200"]], 1).await;
    let read = alone.call(&[&["GET", "short"]], 1).await;
    if text(&read) == "$1\r\n1\r\n" {
        let push = alone.frame().await;
        assert_eq!(
            text(&[push]),
            ">2\r\n$10\r\ninvalidate\r\n*1\r\n$5\r\nshort\r\n"
        );
    }
    alone.call(&[&["CLIENT", "TRACKING", "OFF"]], 1).await;
    // The INFO fields.
    reader.same(&[&["MGET", "x1", "x2", "x3"]], 1).await;
    let mut bcast = Twin::connect(&pair).await;
    bcast
        .same(&[&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p:"]], 1)
        .await;
    stats.send(&[&["INFO", "stats"]]).await;
    let info = text(&[stats.ours.frame().await]);
    for field in [
        "tracking_total_keys:3\r\n",
        "tracking_total_items:3\r\n",
        "tracking_total_prefixes:1\r\n",
    ] {
        assert!(info.contains(field), "{field} in {info}");
    }
    if let Some(real) = &mut stats.real {
        let theirs = text(&[real.frame().await]);
        assert!(theirs.contains("tracking_total_keys:3\r\n"), "{theirs}");
    }
    stats.send(&[&["INFO", "clients"]]).await;
    let clients = text(&[stats.ours.frame().await]);
    assert!(clients.contains("tracking_clients:2\r\n"), "{clients}");
    if let Some(real) = &mut stats.real {
        real.frame().await;
    }
    // Over the limit: keys leave the table, each with an invalidation.
    stats
        .same(&[&["CONFIG", "SET", "tracking-table-max-keys", "1"]], 1)
        .await;
    // Random keys: each server picks its own two.
    let evicted = reader.ours.frames(2).await;
    assert_eq!(text(&evicted).matches("invalidate").count(), 2);
    if let Some(real) = &mut reader.real {
        let theirs = real.frames(2).await;
        assert_eq!(text(&theirs).matches("invalidate").count(), 2);
    }
    stats
        .same(&[&["CONFIG", "SET", "tracking-table-max-keys", "0"]], 1)
        .await;
    stats.send(&[&["INFO", "stats"]]).await;
    let info = text(&[stats.ours.frame().await]);
    assert!(info.contains("tracking_total_keys:1\r\n"), "{info}");
    if let Some(real) = &mut stats.real {
        real.frame().await;
    }
    // A client that leaves stops counting; RESET ends tracking.
    bcast.same(&[&["RESET"]], 1).await;
    reader.same(&[&["CLIENT", "TRACKING", "OFF"]], 1).await;
    stats.send(&[&["INFO", "clients"]]).await;
    let clients = text(&[stats.ours.frame().await]);
    assert!(clients.contains("tracking_clients:0\r\n"), "{clients}");
}

#[tokio::test]
async fn a_replica_invalidates_keys_its_master_writes() {
    use locksmith_server::control::LinkControl;
    use std::sync::Arc;
    let master = support::start().await;
    let replica = support::start().await;
    let _link = master
        .control()
        .attach_replica(
            master.addr(),
            &replica.control(),
            replica.addr(),
            Arc::new(LinkControl::new(Duration::ZERO, Duration::ZERO, false)),
            1,
        )
        .await;
    let mut writer = Wire::connect(master.addr()).await;
    writer.call(&[&["SET", "rk", "1"]], 1).await;
    // The write reaches the replica through its link: wait for it without tracking.
    let mut probe = Wire::connect(replica.addr()).await;
    for _ in 0..500 {
        if text(&probe.call(&[&["GET", "rk"]], 1).await) == "$1\r\n1\r\n" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut reader = Wire::connect(replica.addr()).await;
    let read = reader
        .call(
            &[
                &["HELLO", "3"],
                &["CLIENT", "TRACKING", "ON"],
                &["GET", "rk"],
            ],
            3,
        )
        .await;
    assert_eq!(text(&read[2..]), "$1\r\n1\r\n");
    writer.call(&[&["SET", "rk", "2"]], 1).await;
    let push = reader.frame().await;
    assert_eq!(
        text(&[push]),
        ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nrk\r\n"
    );
    writer.call(&[&["FLUSHALL"]], 1).await;
    assert_eq!(
        text(&[reader.frame().await]),
        ">2\r\n$10\r\ninvalidate\r\n_\r\n"
    );
}

/// Redis holds the tracking table to `tracking-table-max-keys` before every command it
/// processes, also one it only queues inside MULTI (Redis's regression test for #11715): the
/// invalidation comes before the `+QUEUED`. The periodic task, which would trim the table on
/// its own, is paused.
#[tokio::test]
async fn the_table_limit_applies_before_a_command_is_queued() {
    let (ours, real) = support::both_with_debug().await;
    let mut seen = Vec::new();
    for addr in support::addrs(&ours, &real) {
        let mut r = Wire::connect(addr).await;
        let mut rd = Wire::connect(addr).await;
        r.call(&[&["CONFIG", "SET", "tracking-table-max-keys", "2"]], 1)
            .await;
        r.call(&[&["DEBUG", "PAUSE-CRON", "1"]], 1).await;
        rd.call(&[&["HELLO", "3"]], 1).await;
        let mut got = rd.call(&[&["CLIENT", "TRACKING", "on"]], 1).await;
        got.extend(rd.call(&[&["MGET", "1{tag}", "2{tag}"]], 1).await);
        got.extend(rd.call(&[&["MULTI"]], 1).await);
        r.call(&[&["CONFIG", "SET", "tracking-table-max-keys", "1"]], 1)
            .await;
        // The invalidation, the PING's QUEUED, EXEC's reply.
        got.extend(rd.call(&[&["PING"], &["EXEC"]], 3).await);
        r.call(&[&["DEBUG", "PAUSE-CRON", "0"]], 1).await;
        // Which of the two keys goes is a random pick: the key's name is left out.
        let text = text(&got)
            .replace("1{tag}", "<key>")
            .replace("2{tag}", "<key>");
        seen.push(text);
    }
    assert!(
        seen[0].contains(">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\n<key>\r\n+QUEUED"),
        "{}",
        seen[0]
    );
    if let Some(real) = seen.get(1) {
        assert_eq!(&seen[0], real);
    }
}

/// Under `--compat valkey-8.1` a script tracks the keys of the read commands it runs, not the
/// keys it declared (Redis 7.2's rule), compared with valkey-server 8.1.8: a write of the
/// declared keys sends nothing, a write of the key read inside sends the invalidation.
#[tokio::test]
async fn under_valkey_a_script_tracks_the_keys_its_read_commands_read() {
    let pair = Pair::start_for(locksmith_server::Compat::Valkey81).await;
    let mut reader = Twin::connect(&pair).await;
    let mut writer = Twin::connect(&pair).await;
    hello(&mut reader, "3").await;
    reader.same(&[&["CLIENT", "TRACKING", "ON"]], 1).await;
    reader
        .same(&[&["EVAL", "redis.call('get', 'k3')", "2", "k1", "k2"]], 1)
        .await;
    writer.same(&[&["MSET", "k2", "2", "k1", "2"]], 1).await;
    writer.same(&[&["SET", "k3", "2"]], 1).await;
    let frames = reader.same(&[&["PING"]], 2).await;
    assert_eq!(
        text(&frames),
        ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk3\r\n+PONG\r\n"
    );
}
