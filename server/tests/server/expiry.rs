//! Expiry commands compared with real Redis, and lazy/active expiry on the in-process server
//! under paused tokio time.

use locksmith_testkit as support;

use redis::AsyncCommands;
use std::time::Duration;

#[tokio::test]
async fn expire_family_matches_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["SET", "k", "v"],
        &["TTL", "k"],
        &["PTTL", "k"],
        &["TTL", "missing"],
        &["PTTL", "missing"],
        &["EXPIRETIME", "k"],
        &["PEXPIRETIME", "k"],
        &["EXPIRETIME", "missing"],
        &["EXPIRE", "missing", "100"],
        &["EXPIRE", "k", "100"],
        &["EXPIRE", "k", "abc"],
        &["EXPIRE", "k", "1.5"],
        &["EXPIRE", "k", "99999999999999999"],
        &["EXPIRE", "k", "-99999999999999999"],
        &["PEXPIRE", "k", "9223372036854775807"],
        &["EXPIREAT", "k", "9223372036854775807"],
        &["PEXPIREAT", "k", "9223372036854775807"],
        &["EXPIRE", "k", "100", "NX", "XX"],
        &["EXPIRE", "k", "100", "NX", "GT"],
        &["EXPIRE", "k", "100", "NX", "LT"],
        &["EXPIRE", "k", "100", "GT", "LT"],
        &["EXPIRE", "k", "100", "FOO"],
        &["EXPIRE", "k", "abc", "FOO"],
        &["EXPIRE", "k", "abc", "NX", "XX"],
        &["EXPIRE", "k"],
        &["TTL"],
        &["PERSIST"],
        &["EXPIRE", "k", "100", "NX"],
        &["EXPIRE", "k", "200", "GT"],
        &["EXPIRE", "k", "50", "GT"],
        &["EXPIRE", "k", "300", "LT"],
        &["EXPIRE", "k", "150", "LT"],
        &["EXPIRE", "k", "120", "XX"],
        &["PERSIST", "k"],
        &["PERSIST", "k"],
        &["PERSIST", "missing"],
        &["EXPIRE", "k", "100", "XX"],
        &["EXPIRE", "k", "100", "GT"],
        &["EXPIRE", "k", "100", "LT"],
        &["TTL", "k"],
        &["PERSIST", "k"],
        &["EXPIRE", "k", "100", "gt", "xx"],
        &["EXPIRE", "k", "100", "lt", "lt"],
        &["PERSIST", "k"],
        &["EXPIRE", "k", "0"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["EXPIRE", "k", "-1"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["PEXPIRE", "k", "0"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["EXPIREAT", "k", "1"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["PEXPIREAT", "k", "100"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["PEXPIREAT", "k", "-5", "LT"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["EXPIREAT", "k", "4000000000"],
        &["EXPIRETIME", "k"],
        &["PEXPIRETIME", "k"],
        &["PEXPIREAT", "k", "4000000000123"],
        &["PEXPIRETIME", "k"],
        &["EXPIRETIME", "k"],
        &["PEXPIREAT", "k", "4000000000499"],
        &["EXPIRETIME", "k"],
        &["PEXPIREAT", "k", "4000000000500"],
        &["EXPIRETIME", "k"],
        &["HSET", "h", "f", "v"],
        &["EXPIRE", "h", "100"],
        &["SET", "h", "plain"],
        &["TTL", "h"],
    ])
    .await;
    pair.all_same(&[
        &["EXPIRE", "k2", "1"],
        &["SET", "k2", "v"],
        &["PEXPIRE", "k2", "1500"],
    ])
    .await;
    pair.close(&["TTL", "k2"], 1).await;
    pair.close(&["PTTL", "k2"], 50).await;
    pair.all_same(&[&["SET", "k3", "v", "PX", "1499"]]).await;
    // (1499 + 500) / 1000 rounds to 1 on both; the elapsed time may push it lower.
    pair.close(&["TTL", "k3"], 1).await;
}

#[tokio::test(start_paused = true)]
async fn lazy_and_active_expiry_under_paused_time() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("PX")
        .arg(100)
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("other")
        .arg("v")
        .arg("PX")
        .arg(100)
        .query_async(&mut con)
        .await
        .unwrap();
    let pttl: i64 = con.pttl("k").await.unwrap();
    assert!((95..=100).contains(&pttl), "{pttl}");
    tokio::time::advance(Duration::from_millis(101)).await;
    let v: Option<String> = con.get("k").await.unwrap();
    assert_eq!(v, None);
    let pttl: i64 = con.pttl("k").await.unwrap();
    assert_eq!(pttl, -2);
    // The active cycle reclaims the key nobody read.
    tokio::time::advance(Duration::from_millis(200)).await;
    tokio::task::yield_now().await;
    let keys: Vec<String> = con.keys("*").await.unwrap();
    assert!(keys.is_empty(), "{keys:?}");
    let n: i64 = con.exists("other").await.unwrap();
    assert_eq!(n, 0);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn ttl_counts_down_and_persist_keeps_the_key() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    let _: () = con.set_ex("k", "v", 10).await.unwrap();
    assert_eq!(con.ttl::<_, i64>("k").await.unwrap(), 10);
    tokio::time::advance(Duration::from_millis(3000)).await;
    assert_eq!(con.ttl::<_, i64>("k").await.unwrap(), 7);
    let pttl: i64 = con.pttl("k").await.unwrap();
    assert!((6990..=7000).contains(&pttl), "{pttl}");
    tokio::time::advance(Duration::from_millis(7001)).await;
    assert_eq!(con.ttl::<_, i64>("k").await.unwrap(), -2);

    let _: () = redis::cmd("SET")
        .arg("p")
        .arg("v")
        .arg("PX")
        .arg(100)
        .query_async(&mut con)
        .await
        .unwrap();
    let persisted: i64 = con.persist("p").await.unwrap();
    assert_eq!(persisted, 1);
    assert_eq!(con.ttl::<_, i64>("p").await.unwrap(), -1);
    tokio::time::advance(Duration::from_millis(500)).await;
    let v: Option<String> = con.get("p").await.unwrap();
    assert_eq!(v.as_deref(), Some("v"));

    // PEXPIRE and PEXPIREAT on the node clock.
    let ok: i64 = con.pexpire("p", 250).await.unwrap();
    assert_eq!(ok, 1);
    let at: i64 = redis::cmd("PEXPIRETIME")
        .arg("p")
        .query_async(&mut con)
        .await
        .unwrap();
    let now = server.clock().now_ms() as i64;
    assert_eq!(at - now, 250);
    tokio::time::advance(Duration::from_millis(249)).await;
    assert_eq!(con.exists::<_, i64>("p").await.unwrap(), 1);
    tokio::time::advance(Duration::from_millis(2)).await;
    assert_eq!(con.exists::<_, i64>("p").await.unwrap(), 0);

    // GETEX sets and clears TTLs.
    let _: () = con.set("g", "v").await.unwrap();
    let _: String = redis::cmd("GETEX")
        .arg("g")
        .arg("PX")
        .arg(50)
        .query_async(&mut con)
        .await
        .unwrap();
    let _: String = redis::cmd("GETEX")
        .arg("g")
        .arg("PERSIST")
        .query_async(&mut con)
        .await
        .unwrap();
    tokio::time::advance(Duration::from_millis(100)).await;
    assert_eq!(con.exists::<_, i64>("g").await.unwrap(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn sync_api_expiry() {
    let server = support::start().await;
    let url = server.url();
    tokio::task::spawn_blocking(move || {
        let client = redis::Client::open(url).unwrap();
        let mut con = client.get_connection().unwrap();
        let _: () = redis::Commands::set(&mut con, "k", "v").unwrap();
        let set: bool = redis::Commands::expire(&mut con, "k", 100).unwrap();
        assert!(set);
        let ttl: i64 = redis::Commands::ttl(&mut con, "k").unwrap();
        assert_eq!(ttl, 100);
        let pttl: i64 = redis::Commands::pttl(&mut con, "k").unwrap();
        assert!((99_000..=100_000).contains(&pttl));
        let removed: bool = redis::Commands::persist(&mut con, "k").unwrap();
        assert!(removed);
        let ttl: i64 = redis::Commands::ttl(&mut con, "k").unwrap();
        assert_eq!(ttl, -1);
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// A wave of 50 000 keys expiring together is reclaimed by the active cycle (not 1000 a
/// cycle, as before), and `INFO` counts every key in `expired_keys`.
#[tokio::test(start_paused = true)]
async fn active_expiry_reclaims_a_wave_and_counts_it() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    set_with_px(&mut con, "wave", 0..50_000, 100).await;
    let _: () = con.set("stays", "v").await.unwrap();
    assert_eq!(advance_until_size(&mut con, 1).await, 1);
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .query_async(&mut con)
        .await
        .unwrap();
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::to_string)
    };
    assert_eq!(field("expired_keys").as_deref(), Some("50000"));
    assert!(field("expired_time_cap_reached_count").is_some(), "{info}");
    assert!(field("expire_cycle_cpu_milliseconds").is_some(), "{info}");
    let v: Option<String> = con.get("stays").await.unwrap();
    assert_eq!(v.as_deref(), Some("v"));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn renewed_leases_outlive_their_first_deadline_and_then_expire_unread() {
    // A lock service renews each lease before it runs out: the renewal writes nothing to the
    // deadline index, so the active cycle meets each key's first deadline, must keep the key,
    // and must still reclaim it at the renewed one without anyone reading it.
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    set_with_px(&mut con, "lease", 0..1000, 100).await;
    tokio::time::advance(Duration::from_millis(50)).await;
    // Each lease renewed three times, the last to 300 ms from now; half persisted at the end.
    for _ in 0..3 {
        let mut pipe = redis::pipe();
        for i in 0..1000 {
            pipe.cmd("PEXPIRE")
                .arg(format!("lease:{i}"))
                .arg(300)
                .ignore();
        }
        let _: () = pipe.query_async(&mut con).await.unwrap();
    }
    let mut pipe = redis::pipe();
    for i in (0..1000).step_by(2) {
        pipe.cmd("PERSIST").arg(format!("lease:{i}")).ignore();
    }
    let _: () = pipe.query_async(&mut con).await.unwrap();
    // Past every first deadline (100 ms), before the renewed ones (350 ms): nothing expired.
    for _ in 0..4 {
        tokio::time::advance(Duration::from_millis(50)).await;
        tokio::task::yield_now().await;
    }
    assert_eq!(dbsize(&mut con).await, 1000);
    // Past the renewed deadlines: the renewed half goes unread, the persisted half stays.
    assert_eq!(advance_until_size(&mut con, 500).await, 500);
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(info.contains("expired_keys:500\r\n"), "{info}");
    let kept: i64 = con.exists("lease:0").await.unwrap();
    assert_eq!(kept, 1);
    server.shutdown().await;
}

/// Sets `prefix:i` to `v` with a deadline `px` ms away for each `i` of `range`, in one
/// pipeline.
async fn set_with_px(
    con: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
    range: std::ops::Range<u32>,
    px: u64,
) {
    let mut pipe = redis::pipe();
    for i in range {
        pipe.cmd("SET")
            .arg(format!("{prefix}:{i}"))
            .arg("v")
            .arg("PX")
            .arg(px)
            .ignore();
    }
    let _: () = pipe.query_async(con).await.unwrap();
}

/// `DBSIZE`.
async fn dbsize(con: &mut redis::aio::MultiplexedConnection) -> i64 {
    redis::cmd("DBSIZE").query_async(con).await.unwrap()
}

/// Advances paused time 100 ms at a time, letting the active cycle run, until `DBSIZE` is
/// `want`; bounded at 20 steps. The last size seen.
async fn advance_until_size(con: &mut redis::aio::MultiplexedConnection, want: i64) -> i64 {
    let mut size = -1;
    for _ in 0..20 {
        tokio::time::advance(Duration::from_millis(100)).await;
        tokio::task::yield_now().await;
        size = dbsize(con).await;
        if size == want {
            break;
        }
    }
    size
}
