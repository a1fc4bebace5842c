//! MULTI/EXEC/DISCARD/WATCH/UNWATCH compared with real Redis: queued replies, EXECABORT after
//! a refused command, per-command errors inside EXEC, optimistic locking with WATCH.

use locksmith_testkit as support;

use std::time::Duration;
use support::{Pair, Twin};

/// A second connection to each server of `pair`.
async fn other(
    pair: &Pair,
) -> (
    redis::aio::MultiplexedConnection,
    Option<redis::aio::MultiplexedConnection>,
) {
    let ours = support::conn(&pair.ours.url()).await;
    let real = match &pair.real {
        Some(r) => Some(support::conn(&r.url()).await),
        None => None,
    };
    (ours, real)
}

/// Runs `args` on both second connections and asserts equal replies.
async fn same_on(
    cons: &mut (
        redis::aio::MultiplexedConnection,
        Option<redis::aio::MultiplexedConnection>,
    ),
    args: &[&str],
) {
    let ours = support::run(&mut cons.0, args).await;
    if let Some(real) = &mut cons.1 {
        assert_eq!(ours, support::run(real, args).await, "{args:?}");
    }
}

#[tokio::test]
async fn queued_commands_run_in_order_with_errors_reported_per_command() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["EXEC"],
        &["DISCARD"],
        &["MULTI"],
        &["MULTI"],
        &["SET", "k", "v"],
        &["WATCH", "k"],
        &["SET", "k", "v2", "EX", "0"],
        &["SET", "k", "v3", "XX", "GET"],
        &["SELECT", "99"],
        &["GET", "k"],
        &["SET", "n", "1", "EX", "abc"],
        &["EXEC"],
        &["GET", "k"],
        &["EXEC"],
    ])
    .await;
}

#[tokio::test]
async fn a_refused_command_aborts_the_transaction() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["MULTI"],
        &["SET", "k"],
        &["SET", "k", "v"],
        &["NOSUCH", "a"],
        &["EXEC"],
        &["GET", "k"],
        &["MULTI"],
        &["SET", "k", "v"],
        &["DISCARD"],
        &["GET", "k"],
        &["MULTI"],
        &["EXEC"],
    ])
    .await;
}

#[tokio::test]
async fn watch_fails_the_transaction_after_another_clients_write() {
    let mut pair = Pair::start().await;
    let mut others = other(&pair).await;
    pair.all_same(&[&["SET", "lock", "a"], &["WATCH", "lock", "other"]])
        .await;
    same_on(&mut others, &["SET", "lock", "b"]).await;
    pair.all_same(&[
        &["MULTI"],
        &["SET", "lock", "mine"],
        &["EXEC"],
        &["GET", "lock"],
        // The failed EXEC forgot the watches: the next transaction runs.
        &["MULTI"],
        &["SET", "lock", "mine"],
        &["EXEC"],
    ])
    .await;
    // Deleting a watched key counts as a write, even a missing key's creation does.
    pair.all_same(&[&["WATCH", "lock", "fresh"]]).await;
    same_on(&mut others, &["SET", "fresh", "1"]).await;
    pair.all_same(&[&["MULTI"], &["GET", "lock"], &["EXEC"]])
        .await;
}

#[tokio::test]
async fn untouched_watch_succeeds_and_unwatch_forgets() {
    let mut pair = Pair::start().await;
    let mut others = other(&pair).await;
    pair.all_same(&[
        &["SET", "k", "1"],
        &["WATCH", "k"],
        &["WATCH", "k"],
        &["MULTI"],
        &["SET", "k", "2", "GET"],
        &["EXEC"],
    ])
    .await;
    pair.all_same(&[&["WATCH", "k"]]).await;
    same_on(&mut others, &["SET", "k", "9"]).await;
    pair.all_same(&[
        &["UNWATCH"],
        &["MULTI"],
        &["SET", "k", "3", "GET"],
        &["EXEC"],
    ])
    .await;
    // DISCARD forgets watches too.
    pair.all_same(&[&["WATCH", "k"], &["MULTI"], &["DISCARD"]])
        .await;
    same_on(&mut others, &["SET", "k", "1"]).await;
    pair.all_same(&[&["MULTI"], &["SET", "k", "4", "GET"], &["EXEC"]])
        .await;
    // A write on another key or another database leaves the transaction valid.
    pair.all_same(&[&["WATCH", "k"]]).await;
    same_on(&mut others, &["SET", "unrelated", "1"]).await;
    same_on(&mut others, &["SELECT", "1"]).await;
    same_on(&mut others, &["SET", "k", "1"]).await;
    pair.all_same(&[&["MULTI"], &["GET", "k"], &["EXEC"]]).await;
}

#[tokio::test]
async fn a_watched_key_that_expires_fails_the_transaction() {
    let mut pair = Pair::start().await;
    pair.all_same(&[&["SET", "dead", "v", "PX", "1"]]).await;
    // Let the TTL run out (real time: real Redis cannot be paused).
    tokio::time::sleep(Duration::from_millis(30)).await;
    pair.all_same(&[
        // Already expired when watched: its deletion is not a change.
        &["WATCH", "dead"],
        &["MULTI"],
        &["PING"],
        &["EXEC"],
    ])
    .await;
    pair.all_same(&[&["SET", "w", "v", "PX", "30"], &["WATCH", "w"], &["MULTI"]])
        .await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    pair.all_same(&[&["PING"], &["EXEC"]]).await;
}

#[tokio::test(start_paused = true)]
async fn a_watched_key_expiring_on_the_node_clock_fails_exec() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    support::run(&mut con, &["SET", "k", "v", "PX", "100"]).await;
    support::run(&mut con, &["WATCH", "k"]).await;
    support::run(&mut con, &["MULTI"]).await;
    support::run(&mut con, &["GET", "k"]).await;
    tokio::time::advance(Duration::from_millis(150)).await;
    let reply: redis::Value = support::cmd(&["EXEC"]).query_async(&mut con).await.unwrap();
    assert_eq!(reply, redis::Value::Nil);
}

#[tokio::test]
async fn multi_queueing_replies_match_redis_byte_for_byte() {
    let pair = Pair::start().await;
    let mut t = Twin::connect(&pair).await;
    t.same(
        &[
            &["MULTI"],
            &["SET", "a", "1"],
            &["WATCH", "a"],
            &["MULTI"],
            &["SET", "a", "x", "EX", "abc"],
            &["GET", "a"],
            &["EXEC"],
        ],
        7,
    )
    .await;
    t.same(
        &[
            &["MULTI"],
            &["SUBSCRIBE", "ch"],
            &["SSUBSCRIBE", "sh"],
            &["EXEC"],
            &["UNSUBSCRIBE"],
        ],
        5,
    )
    .await;
    // QUIT inside MULTI is not queued: it closes the connection.
    t.same(&[&["MULTI"], &["QUIT"]], 2).await;
}

#[tokio::test]
async fn runtime_errors_do_not_stop_the_other_queued_commands() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["SET", "s", "text"],
        &["HSET", "h", "f", "1"],
        &["MULTI"],
        &["INCR", "s"],
        &["HSET", "s", "f", "v"],
        &["HINCRBY", "h", "f", "2"],
        &["GET", "h"],
        &["EXPIRE", "s", "100"],
        &["INCRBY", "counter", "5"],
        &["EXEC"],
        &["HGET", "h", "f"],
        &["GET", "counter"],
        &["TTL", "s"],
    ])
    .await;
}

#[tokio::test]
async fn swapdb_and_rename_invalidate_watchers_of_the_keys_they_move() {
    let mut pair = Pair::start().await;
    let mut others = other(&pair).await;
    pair.all_same(&[&["SET", "k", "1"], &["WATCH", "k"]]).await;
    same_on(&mut others, &["SWAPDB", "0", "1"]).await;
    pair.all_same(&[&["MULTI"], &["PING"], &["EXEC"]]).await;
    pair.all_same(&[&["SET", "src", "1"], &["WATCH", "dst"]])
        .await;
    same_on(&mut others, &["RENAME", "src", "dst"]).await;
    pair.all_same(&[&["MULTI"], &["PING"], &["EXEC"]]).await;
}

#[tokio::test]
async fn smove_of_a_member_the_destination_holds_does_not_touch_its_watchers() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[&["SADD", "src", "a", "b"], &["SADD", "dst", "a"]])
        .await;
    let (ours, real) = (pair.ours.url(), pair.real.as_ref().map(|r| r.url()));
    for url in std::iter::once(ours).chain(real) {
        let mut watcher = support::conn(&url).await;
        let mut other = support::conn(&url).await;
        let mut pipe = redis::pipe();
        pipe.cmd("WATCH").arg("dst");
        let _: () = pipe.query_async(&mut watcher).await.unwrap();
        let _: () = support::cmd(&["MULTI"])
            .query_async(&mut watcher)
            .await
            .unwrap();
        let _: redis::Value = support::cmd(&["SADD", "dst", "c"])
            .query_async(&mut watcher)
            .await
            .unwrap();
        let moved: i64 = support::cmd(&["SMOVE", "src", "dst", "a"])
            .query_async(&mut other)
            .await
            .unwrap();
        assert_eq!(moved, 1);
        let done: redis::Value = support::cmd(&["EXEC"])
            .query_async(&mut watcher)
            .await
            .unwrap();
        assert_eq!(
            done,
            redis::Value::Array(vec![redis::Value::Int(1)]),
            "{url}"
        );
        // Put the sets back for the next server.
        let _: redis::Value = support::cmd(&["SREM", "dst", "c"])
            .query_async(&mut other)
            .await
            .unwrap();
        let _: redis::Value = support::cmd(&["SADD", "src", "a"])
            .query_async(&mut other)
            .await
            .unwrap();
    }
}

/// SWAPDB tells WATCH of a logical change only (Redis 7.0's `touchAllWatchedKeysInDb`): an
/// expired key, still stored (active expiry off), counts as missing. Each case on a fresh
/// pair of databases, on both servers; a client blocked on a key of the other database is
/// served by the swap.
#[tokio::test]
async fn swapdb_touches_watchers_only_where_a_watched_key_logically_changed() {
    let (ours, real) = support::both_with_debug().await;
    // (what db 0 holds, what db 1 holds, before the watcher in db 1 WATCHes x): "live",
    // "stale" (expired, not yet deleted) or "none".
    let cases = [
        ("stale", "none"),
        ("stale", "stale"),
        ("none", "stale"),
        ("none", "live"),
        ("live", "none"),
        ("live", "stale"),
        ("stale", "live"),
        ("live", "live"),
    ];
    let mut results = Vec::new();
    for url in support::urls(&ours, &real) {
        let mut con = support::conn(&url).await;
        let mut got = Vec::new();
        for (in_0, in_1) in cases {
            support::run(&mut con, &["FLUSHALL"]).await;
            support::run(&mut con, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]).await;
            for (db, what) in [("0", in_0), ("1", in_1)] {
                support::run(&mut con, &["SELECT", db]).await;
                match what {
                    "live" => support::run(&mut con, &["SET", "x", "v"]).await,
                    "stale" => support::run(&mut con, &["SET", "x", "v", "PX", "1"]).await,
                    _ => String::new(),
                };
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            support::run(&mut con, &["SELECT", "1"]).await;
            support::run(&mut con, &["WATCH", "x"]).await;
            support::run(&mut con, &["SWAPDB", "0", "1"]).await;
            support::run(&mut con, &["MULTI"]).await;
            support::run(&mut con, &["PING"]).await;
            got.push(format!(
                "{in_0}/{in_1}: {}",
                support::run(&mut con, &["EXEC"]).await
            ));
            support::run(&mut con, &["SELECT", "0"]).await;
        }
        support::run(&mut con, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]).await;
        // A client blocked on a list of db 1 that db 0 holds is served by the swap.
        support::run(&mut con, &["FLUSHALL"]).await;
        support::run(&mut con, &["RPUSH", "l", "a"]).await;
        let mut blocked = support::conn(&url).await;
        support::run(&mut blocked, &["SELECT", "1"]).await;
        let pop =
            tokio::spawn(async move { support::run(&mut blocked, &["BLPOP", "l", "5"]).await });
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while support::info_field(&mut con, "clients", "blocked_clients").await != "1" {
            assert!(
                std::time::Instant::now() < deadline,
                "{url}: BLPOP did not block"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        support::run(&mut con, &["SWAPDB", "0", "1"]).await;
        got.push(pop.await.unwrap());
        results.push(got);
    }
    assert_eq!(
        results[0][0],
        "stale/none: array([simple-string(\"PONG\")])"
    );
    assert_eq!(results[0][4], "live/none: nil");
    if let Some(real) = results.get(1) {
        assert_eq!(&results[0], real);
    }
}
