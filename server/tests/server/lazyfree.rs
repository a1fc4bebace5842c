//! Lazy free compared with real Redis: which deletes hand their value to the background
//! thread (`lazyfreed_objects` once `lazyfree_pending_objects` drained), as Redis 7.0 decides
//! by a value's free effort: UNLINK and DEL under `lazyfree-lazy-user-del` of large sets,
//! hashes, sorted sets, lists and streams, `FLUSHALL`/`FLUSHDB` `ASYNC` and under
//! `lazyfree-lazy-user-flush`, and small values freed at once.

use locksmith_testkit as support;
use std::time::{Duration, Instant};
use support::{info_field, run};

type Con = redis::aio::MultiplexedConnection;

/// `lazyfreed_objects` once nothing waits to be freed (at most 10 s).
async fn freed(con: &mut Con) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    while info_field(con, "memory", "lazyfree_pending_objects").await != "0" {
        assert!(Instant::now() < deadline, "lazy free did not drain in 10 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    info_field(con, "memory", "lazyfreed_objects").await
}

/// Runs `args` with one argument per element of `items` appended.
async fn run_with(con: &mut Con, args: &[&str], items: &[String]) -> String {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(items.iter().map(String::as_str));
    run(con, &all).await
}

#[tokio::test]
async fn large_values_are_freed_in_the_background_as_redis_decides() {
    let (ours, real) = support::both().await;
    let members: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
    let scored: Vec<String> = (0..200)
        .flat_map(|i| [i.to_string(), format!("m{i}")])
        .collect();
    let pairs: Vec<String> = (0..200)
        .flat_map(|i| [format!("f{i}"), "v".into()])
        .collect();
    let long_elements: Vec<String> = (0..600).map(|i| format!("{i:01000}")).collect();
    let mut seen = Vec::new();
    for url in std::iter::once(ours.url()).chain(real.as_ref().map(|r| r.url())) {
        let mut con = support::conn(&url).await;
        let mut got = Vec::new();
        run(&mut con, &["CONFIG", "RESETSTAT"]).await;
        got.push(freed(&mut con).await);
        // (the key made, the delete): each freed in the background or not.
        run_with(&mut con, &["SADD", "set"], &members).await;
        run(&mut con, &["UNLINK", "set"]).await;
        got.push(freed(&mut con).await);
        run(&mut con, &["SADD", "small", "a", "b"]).await;
        run(&mut con, &["SADD", "ints", "1", "2", "3"]).await;
        run(&mut con, &["SET", "str", "v"]).await;
        run(&mut con, &["UNLINK", "small", "ints", "str"]).await;
        got.push(freed(&mut con).await);
        run_with(&mut con, &["ZADD", "zset"], &scored).await;
        run(&mut con, &["DEL", "zset"]).await;
        got.push(freed(&mut con).await);
        run(
            &mut con,
            &["CONFIG", "SET", "lazyfree-lazy-user-del", "yes"],
        )
        .await;
        run_with(&mut con, &["ZADD", "zset"], &scored).await;
        run_with(&mut con, &["HSET", "hash"], &pairs).await;
        run(&mut con, &["DEL", "zset", "hash"]).await;
        got.push(freed(&mut con).await);
        run(&mut con, &["CONFIG", "SET", "lazyfree-lazy-user-del", "no"]).await;
        // A list: by its quicklist nodes (600 elements of 1000 bytes: 75 nodes of 8 KB).
        run_with(&mut con, &["RPUSH", "short"], &members).await;
        run_with(&mut con, &["RPUSH", "long"], &long_elements).await;
        run(&mut con, &["UNLINK", "short", "long"]).await;
        got.push(freed(&mut con).await);
        // A stream: by its nodes and its groups' pending entries.
        run(&mut con, &["CONFIG", "SET", "stream-node-max-entries", "5"]).await;
        for i in 0..1000 {
            run(&mut con, &["XADD", "stream", "*", "f", &i.to_string()]).await;
        }
        run(&mut con, &["UNLINK", "stream"]).await;
        got.push(freed(&mut con).await);
        run(&mut con, &["XADD", "s", "*", "a", "b"]).await;
        run(&mut con, &["XGROUP", "CREATE", "s", "g", "$"]).await;
        run(&mut con, &["UNLINK", "s"]).await;
        got.push(freed(&mut con).await);
        run(
            &mut con,
            &["CONFIG", "SET", "stream-node-max-entries", "100"],
        )
        .await;
        // Flushes: every key counts, whatever its size.
        run_with(&mut con, &["MSET"], &pairs).await;
        run(&mut con, &["FLUSHALL", "ASYNC"]).await;
        got.push(freed(&mut con).await);
        run_with(&mut con, &["MSET"], &pairs[..20]).await;
        run(&mut con, &["FLUSHDB", "SYNC"]).await;
        got.push(freed(&mut con).await);
        run(
            &mut con,
            &["CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"],
        )
        .await;
        run_with(&mut con, &["MSET"], &pairs[..20]).await;
        run(&mut con, &["FLUSHDB"]).await;
        got.push(freed(&mut con).await);
        run(
            &mut con,
            &["CONFIG", "SET", "lazyfree-lazy-user-flush", "no"],
        )
        .await;
        got.push(run(&mut con, &["DBSIZE"]).await);
        run(&mut con, &["CONFIG", "RESETSTAT"]).await;
        got.push(info_field(&mut con, "memory", "lazyfreed_objects").await);
        seen.push(got);
    }
    assert_eq!(
        seen[0],
        ["0", "1", "1", "1", "2", "3", "4", "4", "204", "204", "214", "int(0)", "0"]
    );
    if let Some(real) = seen.get(1) {
        assert_eq!(&seen[0], real);
    }
}
