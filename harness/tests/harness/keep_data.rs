//! Restarts that keep data (`Topology::restart_with(node, Restart::KeepData { .. })`,
//! `LOCKSMITH.RESTART node KEEP-DATA [LOSE-LAST-MS ms]`): what a node comes back with when its
//! last writes had not reached the disk, on independent masters, a master with replicas and a
//! replica, with TTLs as absolute deadlines.

use locksmith_testkit::harness as harness_support;

use harness_support::{conn, run};
use locksmith_harness::{HarnessError, NodeId, NodeRole, Restart, Topology};
use redis::aio::MultiplexedConnection;
use std::time::Duration;

async fn masters(n: usize) -> Topology {
    Topology::builder()
        .masters(n)
        .seed(14)
        .build()
        .await
        .unwrap()
}

async fn get(c: &mut MultiplexedConnection, key: &str) -> Option<String> {
    run(c, &["GET", key]).await.unwrap()
}

async fn set(c: &mut MultiplexedConnection, key: &str) {
    let _: () = run(c, &["SET", key, "v"]).await.unwrap();
}

fn labels(t: &Topology) -> Vec<String> {
    t.history()
        .faults()
        .into_iter()
        .map(|f| f.label())
        .collect()
}

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

#[tokio::test(start_paused = true)]
async fn a_keep_data_restart_losing_nothing_keeps_every_key() {
    let t = masters(3).await;
    let n1 = NodeId::from_index(1);
    let mut c = conn(&t.url(n1)).await;
    set(&mut c, "s").await;
    let _: () = run(&mut c, &["HSET", "h", "f", "1"]).await.unwrap();
    let _: () = run(&mut c, &["HINCRBY", "h", "f", "2"]).await.unwrap();
    let _: () = run(&mut c, &["RPUSH", "l", "a", "b", "c"]).await.unwrap();
    let _: () = run(&mut c, &["LPOP", "l"]).await.unwrap();
    let _: () = run(&mut c, &["ZADD", "z", "1", "m"]).await.unwrap();
    let _: () = run(&mut c, &["SADD", "set", "x"]).await.unwrap();
    let _: () = run(&mut c, &["SET", "gone", "v"]).await.unwrap();
    let _: () = run(&mut c, &["DEL", "gone"]).await.unwrap();
    // A script's writes and a transaction are journaled as their effects.
    let _: () = run(
        &mut c,
        &["EVAL", "redis.call('set', KEYS[1], 'lua')", "1", "script"],
    )
    .await
    .unwrap();
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("SET")
        .arg("tx")
        .arg("1")
        .cmd("INCR")
        .arg("tx");
    let _: () = pipe.query_async(&mut c).await.unwrap();
    let _: () = run(&mut c, &["SELECT", "3"]).await.unwrap();
    set(&mut c, "in-db3").await;

    t.restart_with(n1, Restart::keep_data(Duration::ZERO))
        .await
        .unwrap();
    let mut c = conn(&t.url(n1)).await;
    assert_eq!(get(&mut c, "s").await.as_deref(), Some("v"));
    let f: String = run(&mut c, &["HGET", "h", "f"]).await.unwrap();
    assert_eq!(f, "3");
    let l: Vec<String> = run(&mut c, &["LRANGE", "l", "0", "-1"]).await.unwrap();
    assert_eq!(l, ["b", "c"]);
    let z: Option<f64> = run(&mut c, &["ZSCORE", "z", "m"]).await.unwrap();
    assert_eq!(z, Some(1.0));
    let n: i64 = run(&mut c, &["SCARD", "set"]).await.unwrap();
    assert_eq!(n, 1);
    assert_eq!(get(&mut c, "gone").await, None);
    assert_eq!(get(&mut c, "script").await.as_deref(), Some("lua"));
    assert_eq!(get(&mut c, "tx").await.as_deref(), Some("2"));
    let n: i64 = run(&mut c, &["DBSIZE"]).await.unwrap();
    assert_eq!(n, 7);
    let _: () = run(&mut c, &["SELECT", "3"]).await.unwrap();
    assert_eq!(get(&mut c, "in-db3").await.as_deref(), Some("v"));
    assert_eq!(
        labels(&t),
        ["restart n1 (kept data, lost last 0 ms)"],
        "a live node is killed and restarted in one fault"
    );
}

#[tokio::test(start_paused = true)]
async fn a_keep_data_restart_loses_the_writes_of_the_last_lose_last() {
    let t = masters(3).await;
    let n2 = NodeId::from_index(2);
    let mut c = conn(&t.url(n2)).await;
    set(&mut c, "early").await;
    let _: () = run(&mut c, &["SET", "overwritten", "old"]).await.unwrap();
    set(&mut c, "deleted").await;
    sleep_ms(1800).await;
    // 200 ms before the crash: not on disk yet.
    set(&mut c, "late").await;
    let _: () = run(&mut c, &["SET", "overwritten", "new"]).await.unwrap();
    let _: () = run(&mut c, &["DEL", "deleted"]).await.unwrap();
    sleep_ms(200).await;

    t.restart_with(n2, Restart::keep_data(Duration::from_millis(1000)))
        .await
        .unwrap();
    let mut c = conn(&t.url(n2)).await;
    assert_eq!(get(&mut c, "early").await.as_deref(), Some("v"));
    assert_eq!(get(&mut c, "late").await, None);
    assert_eq!(get(&mut c, "overwritten").await.as_deref(), Some("old"));
    assert_eq!(get(&mut c, "deleted").await.as_deref(), Some("v"));
    assert_eq!(labels(&t), ["restart n2 (kept data, lost last 1000 ms)"]);
    // The other masters were not touched.
    let mut c0 = conn(&t.url(NodeId::from_index(0))).await;
    assert_eq!(get(&mut c0, "early").await, None);
}

#[tokio::test(start_paused = true)]
async fn ttls_stay_absolute_deadlines_across_a_keep_data_restart() {
    let t = masters(1).await;
    let n0 = NodeId::from_index(0);
    let mut c = conn(&t.url(n0)).await;
    let _: () = run(&mut c, &["SET", "long", "v", "PX", "5000"])
        .await
        .unwrap();
    let _: () = run(&mut c, &["SET", "short", "v", "PX", "1500"])
        .await
        .unwrap();
    // Written while live, expired by the time the node is back: gone, not resurrected as a
    // key without TTL by replaying INCR onto an already expired value.
    let _: () = run(&mut c, &["SET", "counter", "5", "PX", "1000"])
        .await
        .unwrap();
    let _: () = run(&mut c, &["INCR", "counter"]).await.unwrap();
    let _: () = run(&mut c, &["SET", "forever", "v"]).await.unwrap();
    t.kill(n0).await.unwrap();
    sleep_ms(2000).await;

    t.restart_with(n0, Restart::keep_data(Duration::ZERO))
        .await
        .unwrap();
    let mut c = conn(&t.url(n0)).await;
    let pttl: i64 = run(&mut c, &["PTTL", "long"]).await.unwrap();
    assert!((2000..=3000).contains(&pttl), "{pttl}");
    assert_eq!(get(&mut c, "short").await, None);
    assert_eq!(get(&mut c, "counter").await, None);
    let pttl: i64 = run(&mut c, &["PTTL", "forever"]).await.unwrap();
    assert_eq!(pttl, -1);
    let n: i64 = run(&mut c, &["DBSIZE"]).await.unwrap();
    assert_eq!(n, 2, "expired keys are dropped at load, as Redis does");
}

#[tokio::test(start_paused = true)]
async fn a_node_killed_earlier_keeps_its_data_as_of_the_kill() {
    let t = masters(2).await;
    let n1 = NodeId::from_index(1);
    let mut c = conn(&t.url(n1)).await;
    set(&mut c, "before").await;
    sleep_ms(2000).await;
    set(&mut c, "at-kill").await;
    t.kill(n1).await.unwrap();
    // Long enough that, counted from the restart, both writes would be old.
    sleep_ms(5000).await;
    t.restart_with(n1, Restart::keep_data(Duration::from_millis(1000)))
        .await
        .unwrap();
    let mut c = conn(&t.url(n1)).await;
    assert_eq!(get(&mut c, "before").await.as_deref(), Some("v"));
    assert_eq!(get(&mut c, "at-kill").await, None);
    assert_eq!(
        labels(&t),
        ["kill n1", "restart n1 (kept data, lost last 1000 ms)"]
    );
}

#[tokio::test(start_paused = true)]
async fn the_window_is_on_the_topology_clock_not_the_nodes() {
    let t = masters(1).await;
    let n0 = NodeId::from_index(0);
    let mut c = conn(&t.url(n0)).await;
    set(&mut c, "old").await;
    sleep_ms(2000).await;
    // An hour on the node's clock, no time at all for its disk.
    t.clock_jump(n0, 3_600_000).unwrap();
    set(&mut c, "new").await;
    t.restart_with(n0, Restart::keep_data(Duration::from_millis(1000)))
        .await
        .unwrap();
    let mut c = conn(&t.url(n0)).await;
    assert_eq!(get(&mut c, "old").await.as_deref(), Some("v"));
    assert_eq!(get(&mut c, "new").await, None);
}

#[tokio::test(start_paused = true)]
async fn a_long_running_node_still_reaches_back_its_window() {
    let t = Topology::builder()
        .masters(1)
        .keep_data_window(Duration::from_secs(2))
        .seed(3)
        .build()
        .await
        .unwrap();
    let n0 = NodeId::from_index(0);
    let mut c = conn(&t.url(n0)).await;
    // 30 s of writes, every 100 ms: many windows, folded into checkpoints as they age.
    for i in 0..300 {
        let _: () = run(&mut c, &["SET", &format!("k{i}"), "v"]).await.unwrap();
        let _: () = run(&mut c, &["INCR", "count"]).await.unwrap();
        sleep_ms(100).await;
    }
    t.restart_with(n0, Restart::keep_data(Duration::from_secs(2)))
        .await
        .unwrap();
    let mut c = conn(&t.url(n0)).await;
    // Written at least 2 s before the crash (k0 to k280): kept; later: lost.
    let count: String = run(&mut c, &["GET", "count"]).await.unwrap();
    let kept: usize = count.parse().unwrap();
    assert!((278..=281).contains(&kept), "{kept}");
    assert_eq!(get(&mut c, "k0").await.as_deref(), Some("v"));
    assert_eq!(get(&mut c, "k250").await.as_deref(), Some("v"));
    assert_eq!(get(&mut c, "k290").await, None);
    let n: i64 = run(&mut c, &["DBSIZE"]).await.unwrap();
    assert_eq!(n as usize, kept + 1);
}

#[tokio::test(start_paused = true)]
async fn a_master_restarted_with_its_data_resyncs_its_replicas_to_it() {
    let t = Topology::builder()
        .replicas(1)
        .seed(5)
        .build()
        .await
        .unwrap();
    let (m, r) = (t.master(), t.replicas()[0]);
    let mut mc = conn(&t.url(m)).await;
    set(&mut mc, "kept").await;
    sleep_ms(2000).await;
    set(&mut mc, "lost").await;
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    t.restart_with(m, Restart::keep_data(Duration::from_millis(1000)))
        .await
        .unwrap();
    assert_eq!(t.master(), m);
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    let mut rc = conn(&t.url(r)).await;
    assert_eq!(get(&mut rc, "kept").await.as_deref(), Some("v"));
    assert_eq!(
        get(&mut rc, "lost").await,
        None,
        "the replica follows what its master came back with"
    );
    assert_eq!(t.nodes_info()[r.index()].role, NodeRole::Replica(m));
}

#[tokio::test(start_paused = true)]
async fn a_replica_keeps_what_it_had_applied_by_its_own_clock() {
    let t = Topology::builder()
        .replicas(1)
        .replication_delay(Duration::from_millis(500))
        .seed(6)
        .build()
        .await
        .unwrap();
    let (m, r) = (t.master(), t.replicas()[0]);
    let mut mc = conn(&t.url(m)).await;
    set(&mut mc, "a").await;
    sleep_ms(2000).await;
    // Written 1.2 s before the crash (on the master's disk by then), applied on the replica
    // 700 ms before it: lost with the replica's last second.
    set(&mut mc, "b").await;
    sleep_ms(1200).await;
    t.kill(m).await.unwrap();
    t.restart_with(r, Restart::keep_data(Duration::from_millis(1000)))
        .await
        .unwrap();
    // No master to resync from: the replica serves what it kept.
    let mut rc = conn(&t.url(r)).await;
    assert_eq!(get(&mut rc, "a").await.as_deref(), Some("v"));
    assert_eq!(get(&mut rc, "b").await, None);
}

#[tokio::test(start_paused = true)]
async fn a_replica_keeps_the_dataset_of_its_last_full_sync() {
    let t = Topology::builder()
        .replicas(1)
        .seed(7)
        .build()
        .await
        .unwrap();
    let (m, r) = (t.master(), t.replicas()[0]);
    let mut mc = conn(&t.url(m)).await;
    set(&mut mc, "synced").await;
    // A full resync hands the replica the master's dataset, journaled as a checkpoint.
    t.restart(r).await.unwrap();
    sleep_ms(2000).await;
    t.kill(m).await.unwrap();
    t.restart_with(r, Restart::keep_data(Duration::from_millis(1000)))
        .await
        .unwrap();
    let mut rc = conn(&t.url(r)).await;
    assert_eq!(get(&mut rc, "synced").await.as_deref(), Some("v"));
}

#[tokio::test(start_paused = true)]
async fn keep_data_restarts_beyond_the_window_are_refused_and_change_nothing() {
    let t = masters(1).await;
    let n0 = NodeId::from_index(0);
    let mut c = conn(&t.url(n0)).await;
    set(&mut c, "k").await;
    let err = t
        .restart_with(n0, Restart::keep_data(Duration::from_secs(11)))
        .await
        .unwrap_err();
    assert!(matches!(err, HarnessError::KeepData(_)), "{err}");
    assert_eq!(
        err.to_string(),
        "cannot keep data: losing the last 11000 ms reaches beyond the keep-data window of 10000 ms"
    );
    assert_eq!(get(&mut c, "k").await.as_deref(), Some("v"), "still up");
    assert!(labels(&t).is_empty());

    let t = Topology::builder()
        .masters(1)
        .keep_data_window(Duration::ZERO)
        .seed(1)
        .build()
        .await
        .unwrap();
    let err = t
        .restart_with(NodeId::from_index(0), Restart::keep_data(Duration::ZERO))
        .await
        .unwrap_err();
    assert!(matches!(err, HarnessError::KeepData(_)), "{err}");
    // Without a window, plain restarts work as ever.
    t.restart(NodeId::from_index(0)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn locksmith_restart_keep_data_over_the_wire() {
    let t = masters(3).await;
    let mut front = conn(&t.front_url()).await;
    let mut c1 = conn(&t.url(NodeId::from_index(1))).await;
    set(&mut c1, "old").await;
    sleep_ms(2000).await;
    set(&mut c1, "new").await;

    let ok: String = run(
        &mut front,
        &[
            "locksmith.restart",
            "n1",
            "keep-data",
            "lose-last-ms",
            "1000",
        ],
    )
    .await
    .unwrap();
    assert_eq!(ok, "OK");
    let mut c1 = conn(&t.url(NodeId::from_index(1))).await;
    assert_eq!(get(&mut c1, "old").await.as_deref(), Some("v"));
    assert_eq!(get(&mut c1, "new").await, None);

    set(&mut c1, "newer").await;
    let ok: String = run(&mut front, &["LOCKSMITH.RESTART", "n1", "KEEP-DATA"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let mut c1 = conn(&t.url(NodeId::from_index(1))).await;
    assert_eq!(get(&mut c1, "newer").await.as_deref(), Some("v"));
    assert_eq!(get(&mut c1, "old").await.as_deref(), Some("v"));

    let ok: String = run(&mut front, &["LOCKSMITH.RESTART", "n1"]).await.unwrap();
    assert_eq!(ok, "OK");
    let mut c1 = conn(&t.url(NodeId::from_index(1))).await;
    assert_eq!(get(&mut c1, "old").await, None);

    let errors: &[(&[&str], &str)] = &[
        (
            &["LOCKSMITH.RESTART"],
            "wrong number of arguments for 'locksmith.restart' command",
        ),
        (&["LOCKSMITH.RESTART", "n1", "NOPE"], "syntax error"),
        (
            &["LOCKSMITH.RESTART", "n1", "KEEP-DATA", "LOSE-LAST-MS"],
            "syntax error",
        ),
        (
            &["LOCKSMITH.RESTART", "n1", "LOSE-LAST-MS", "10", "KEEP-DATA"],
            "syntax error",
        ),
        (
            &["LOCKSMITH.RESTART", "n1", "KEEP-DATA", "LOSE-LAST-MS", "10", "x"],
            "syntax error",
        ),
        (
            &["LOCKSMITH.RESTART", "n1", "KEEP-DATA", "LOSE-LAST-MS", "-5"],
            "milliseconds must not be negative",
        ),
        (
            &["LOCKSMITH.RESTART", "n1", "KEEP-DATA", "LOSE-LAST-MS", "1.5"],
            "value is not an integer or out of range",
        ),
        (
            &["LOCKSMITH.RESTART", "n1", "KEEP-DATA", "LOSE-LAST-MS", "99999999999999999999"],
            "value is not an integer or out of range",
        ),
        (
            &["LOCKSMITH.RESTART", "n1", "KEEP-DATA", "LOSE-LAST-MS", "60000"],
            "cannot keep data: losing the last 60000 ms reaches beyond the keep-data window of 10000 ms",
        ),
        (
            &["LOCKSMITH.RESTART", "n9", "KEEP-DATA"],
            "no such node: n9",
        ),
    ];
    for (args, detail) in errors {
        let err = run::<String>(&mut front, args).await.unwrap_err();
        assert_eq!(err.detail(), Some(*detail), "{args:?}");
    }
    // None of the refused commands touched n1.
    let mut c1 = conn(&t.url(NodeId::from_index(1))).await;
    set(&mut c1, "still").await;
    assert_eq!(
        labels(&t),
        [
            "restart n1 (kept data, lost last 1000 ms)",
            "restart n1 (kept data, lost last 0 ms)",
            "restart n1 (empty)",
        ]
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_in_memory_topology_restarts_with_its_data() {
    async fn front(t: &Topology) -> MultiplexedConnection {
        let stream = t.connect_front().unwrap();
        let info = redis::RedisConnectionInfo::default();
        let config = redis::AsyncConnectionConfig::new();
        let (con, driver) = MultiplexedConnection::new_with_config(&info, stream, config)
            .await
            .unwrap();
        tokio::spawn(driver);
        con
    }
    let t = Topology::builder()
        .in_memory(true)
        .replicas(1)
        .seed(9)
        .build()
        .await
        .unwrap();
    let mut c = front(&t).await;
    set(&mut c, "old").await;
    sleep_ms(2000).await;
    set(&mut c, "new").await;
    t.restart_with(t.master(), Restart::keep_data(Duration::from_millis(1000)))
        .await
        .unwrap();
    let mut c = front(&t).await;
    assert_eq!(get(&mut c, "old").await.as_deref(), Some("v"));
    assert_eq!(get(&mut c, "new").await, None);
    t.shutdown().await;
}
