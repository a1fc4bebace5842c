//! Replication in a harness topology: the master's writes reach replicas in order after the
//! link delay, replicas refuse writes, and ROLE, WAIT and REPLICAOF tell the truth.

use locksmith_testkit::harness as harness_support;

use harness_support::{conn, run};
use locksmith_harness::{NodeId, Topology};
use std::time::Duration;

async fn topology(replicas: usize, delay_ms: u64) -> Topology {
    Topology::builder()
        .replicas(replicas)
        .replication_delay(Duration::from_millis(delay_ms))
        .seed(11)
        .build()
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn writes_reach_the_replica_only_after_the_link_delay() {
    let t = topology(1, 1000).await;
    let (m, r) = (t.master(), t.replicas()[0]);
    let mut master = conn(&t.url(m)).await;
    let mut replica = conn(&t.url(r)).await;
    let _: () = run(&mut master, &["SET", "k", "v"]).await.unwrap();
    let got: Option<String> = run(&mut replica, &["GET", "k"]).await.unwrap();
    assert_eq!(got, None);
    assert!(t.offset(r) < t.offset(m));
    tokio::time::advance(Duration::from_millis(1001)).await;
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    let got: Option<String> = run(&mut replica, &["GET", "k"]).await.unwrap();
    assert_eq!(got.as_deref(), Some("v"));
    assert_eq!(t.offset(r), t.offset(m));
}

#[tokio::test(start_paused = true)]
async fn a_replica_past_its_output_buffer_limit_is_dropped_then_resyncs() {
    let t = topology(1, 0).await;
    let (m, r) = (t.master(), t.replicas()[0]);
    let mut master = conn(&t.url(m)).await;
    let mut replica = conn(&t.url(r)).await;
    let _: () = run(
        &mut master,
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "replica 64kb 0 0",
        ],
    )
    .await
    .unwrap();
    let _: () = run(&mut master, &["SET", "before", "1"]).await.unwrap();
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    let connected = |info: String| info.contains("connected_slaves:1");
    let info: String = run(&mut master, &["INFO", "replication"]).await.unwrap();
    assert!(connected(info));
    let full_syncs = |info: String| {
        info.lines()
            .find_map(|l| l.strip_prefix("sync_full:")?.trim().parse::<u64>().ok())
    };
    let info: String = run(&mut master, &["INFO", "stats"]).await.unwrap();
    assert_eq!(
        full_syncs(info),
        Some(1),
        "the replica's first synchronisation"
    );
    // The replica stops applying; 100 KB of writes pile up for it, past the 64 KB limit.
    let stall = t.stall_replication();
    let value = "v".repeat(1000);
    for i in 0..100 {
        let _: () = run(&mut master, &["SET", &format!("k{i}"), &value])
            .await
            .unwrap();
    }
    let info: String = run(&mut master, &["INFO", "replication"]).await.unwrap();
    assert!(info.contains("connected_slaves:0"), "{info}");
    // Once the link works again the replica synchronises in full and is listed again.
    drop(stall);
    assert!(t.sync_replicas(Duration::from_secs(5)).await);
    let size: i64 = run(&mut replica, &["DBSIZE"]).await.unwrap();
    assert_eq!(size, 101);
    let info: String = run(&mut master, &["INFO", "replication"]).await.unwrap();
    assert!(connected(info));
    assert_eq!(t.offset(r), t.offset(m));
    let info: String = run(&mut master, &["INFO", "stats"]).await.unwrap();
    assert_eq!(
        full_syncs(info),
        Some(2),
        "and its second, after it was dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn replicas_refuse_writes_with_readonly() {
    let t = topology(1, 0).await;
    let mut replica = conn(&t.url(t.replicas()[0])).await;
    let err = run::<()>(&mut replica, &["SET", "k", "v"])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("READONLY"));
    assert_eq!(
        err.detail(),
        Some("You can't write against a read only replica.")
    );
    let got: Option<String> = run(&mut replica, &["GET", "k"]).await.unwrap();
    assert_eq!(got, None);
}

#[tokio::test(start_paused = true)]
async fn role_reports_master_offsets_and_replica_link() {
    let t = topology(2, 0).await;
    let mut master = conn(&t.url(t.master())).await;
    let _: () = run(&mut master, &["SET", "k", "v"]).await.unwrap();
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    let role: redis::Value = run(&mut master, &["ROLE"]).await.unwrap();
    let redis::Value::Array(items) = role else {
        panic!("ROLE is an array")
    };
    assert_eq!(items[0], redis::Value::BulkString(b"master".to_vec()));
    let offset = t.offset(t.master()) as i64;
    assert_eq!(items[1], redis::Value::Int(offset));
    let redis::Value::Array(replicas) = &items[2] else {
        panic!("replica list")
    };
    assert_eq!(replicas.len(), 2);
    let r0 = t.replicas()[0];
    assert_eq!(
        replicas[0],
        redis::Value::Array(vec![
            redis::Value::BulkString(b"127.0.0.1".to_vec()),
            redis::Value::BulkString(t.addr(r0).port().to_string().into_bytes()),
            redis::Value::BulkString(offset.to_string().into_bytes()),
        ])
    );
    let mut replica = conn(&t.url(r0)).await;
    let role: redis::Value = run(&mut replica, &["ROLE"]).await.unwrap();
    assert_eq!(
        role,
        redis::Value::Array(vec![
            redis::Value::BulkString(b"slave".to_vec()),
            redis::Value::BulkString(b"127.0.0.1".to_vec()),
            redis::Value::Int(i64::from(t.addr(t.master()).port())),
            redis::Value::BulkString(b"connected".to_vec()),
            redis::Value::Int(offset),
        ])
    );
    // The redis crate parses it as Redis's reply.
    let parsed: redis::Role = run(&mut replica, &["ROLE"]).await.unwrap();
    assert!(matches!(parsed, redis::Role::Replica { .. }));
}

#[tokio::test(start_paused = true)]
async fn wait_counts_acknowledged_replicas_and_times_out() {
    let t = topology(2, 300).await;
    let mut master = conn(&t.url(t.master())).await;
    let _: () = run(&mut master, &["SET", "k", "v"]).await.unwrap();
    let start = tokio::time::Instant::now();
    let n: i64 = run(&mut master, &["WAIT", "2", "5000"]).await.unwrap();
    assert_eq!(n, 2);
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_millis(5000));

    let stall = t.stall_replication();
    let _: () = run(&mut master, &["SET", "k", "w"]).await.unwrap();
    let start = tokio::time::Instant::now();
    let n: i64 = run(&mut master, &["WAIT", "1", "1000"]).await.unwrap();
    assert_eq!(n, 0);
    assert!(start.elapsed() >= Duration::from_millis(1000));
    drop(stall);
    let n: i64 = run(&mut master, &["WAIT", "2", "0"]).await.unwrap();
    assert_eq!(n, 2);
    // Already satisfied: immediate.
    let n: i64 = run(&mut master, &["WAIT", "0", "0"]).await.unwrap();
    assert_eq!(n, 2);
}

#[tokio::test(start_paused = true)]
async fn wait_errors_match_redis() {
    let t = topology(1, 0).await;
    let mut master = conn(&t.url(t.master())).await;
    let mut replica = conn(&t.url(t.replicas()[0])).await;
    let err = run::<i64>(&mut master, &["WAIT", "1", "-1"])
        .await
        .unwrap_err();
    assert_eq!(err.detail(), Some("timeout is negative"));
    let err = run::<i64>(&mut master, &["WAIT", "a", "1"])
        .await
        .unwrap_err();
    assert_eq!(
        err.detail(),
        Some("value is not an integer or out of range")
    );
    let err = run::<i64>(&mut master, &["WAIT", "1"]).await.unwrap_err();
    assert_eq!(
        err.detail(),
        Some("wrong number of arguments for 'wait' command")
    );
    let err = run::<i64>(&mut replica, &["WAIT", "1", "0"])
        .await
        .unwrap_err();
    assert!(err
        .detail()
        .unwrap()
        .starts_with("WAIT cannot be used with replica instances."));
}

#[tokio::test(start_paused = true)]
async fn relative_expiries_replicate_as_absolute_deadlines() {
    let t = topology(1, 2000).await;
    let mut master = conn(&t.url(t.master())).await;
    let _: () = run(&mut master, &["SET", "k", "v", "PX", "5000"])
        .await
        .unwrap();
    tokio::time::advance(Duration::from_millis(2001)).await;
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    let mut replica = conn(&t.url(t.replicas()[0])).await;
    // The replica got it 2 s late, yet it expires when the master's copy does.
    let got: Option<String> = run(&mut replica, &["GET", "k"]).await.unwrap();
    assert_eq!(got.as_deref(), Some("v"));
    tokio::time::advance(Duration::from_millis(3000)).await;
    let got: Option<String> = run(&mut replica, &["GET", "k"]).await.unwrap();
    assert_eq!(got, None);
}

#[tokio::test(start_paused = true)]
async fn replicaof_re_points_nodes_of_the_topology() {
    let t = topology(2, 0).await;
    let (n1, n2): (NodeId, NodeId) = (t.node("n1").unwrap(), t.node("n2").unwrap());
    let mut c1 = conn(&t.url(n1)).await;
    let ok: String = run(&mut c1, &["REPLICAOF", "NO", "ONE"]).await.unwrap();
    assert_eq!(ok, "OK");
    let _: () = run(&mut c1, &["SET", "only-on-n1", "1"]).await.unwrap();
    let port = t.addr(n1).port().to_string();
    let mut c2 = conn(&t.url(n2)).await;
    let ok: String = run(&mut c2, &["REPLICAOF", "127.0.0.1", &port])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let again: String = run(&mut c2, &["REPLICAOF", "127.0.0.1", &port])
        .await
        .unwrap();
    assert_eq!(again, "OK Already connected to specified master");
    let got: Option<String> = run(&mut c2, &["GET", "only-on-n1"]).await.unwrap();
    assert_eq!(got.as_deref(), Some("1"));
    // Redis takes ports 0 to 65535.
    let err = run::<String>(&mut c2, &["REPLICAOF", "127.0.0.1", "65536"])
        .await
        .unwrap_err();
    assert_eq!(err.detail(), Some("Invalid master port"));
}

#[tokio::test]
async fn a_standalone_server_answers_role_and_wait() {
    let server = locksmith_server::Server::builder().start().await.unwrap();
    let mut con = conn(&server.url()).await;
    let role: redis::Value = run(&mut con, &["ROLE"]).await.unwrap();
    assert_eq!(
        role,
        redis::Value::Array(vec![
            redis::Value::BulkString(b"master".to_vec()),
            redis::Value::Int(0),
            redis::Value::Array(vec![]),
        ])
    );
    let n: i64 = run(&mut con, &["WAIT", "0", "0"]).await.unwrap();
    assert_eq!(n, 0);
    let n: i64 = run(&mut con, &["WAIT", "1", "10"]).await.unwrap();
    assert_eq!(n, 0);
    server.shutdown().await;
}

// min-replicas-to-write counts replicas whose link delivers: with one attached writes run, with
// its link stalled they are refused with NOREPLICAS (scripts too), and they run again after.
#[tokio::test(start_paused = true)]
async fn min_replicas_to_write_counts_replicas_whose_link_delivers() {
    let t = topology(1, 0).await;
    let m = t.master();
    let mut master = conn(&t.url(m)).await;
    let _: () = run(
        &mut master,
        &["CONFIG", "SET", "min-replicas-to-write", "1"],
    )
    .await
    .unwrap();
    let _: () = run(&mut master, &["SET", "k", "1"]).await.unwrap();
    let stall = t.stall_replication();
    let refused = |r: redis::RedisResult<redis::Value>| match r {
        Err(e) => format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or("")),
        Ok(v) => format!("{v:?}"),
    };
    assert_eq!(
        refused(run(&mut master, &["SET", "k", "2"]).await),
        "NOREPLICAS Not enough good replicas to write."
    );
    assert!(refused(
        run(
            &mut master,
            &["EVAL", "return redis.call('set','k','3')", "0"]
        )
        .await
    )
    .starts_with("NOREPLICAS Not enough good replicas to write. script: "));
    let read: Option<String> = run(&mut master, &["GET", "k"]).await.unwrap();
    assert_eq!(read.as_deref(), Some("1"));
    drop(stall);
    let _: () = run(&mut master, &["SET", "k", "4"]).await.unwrap();
    // min-replicas-max-lag 0 turns the check off, as in Redis.
    let stall = t.stall_replication();
    let _: () = run(&mut master, &["CONFIG", "SET", "min-replicas-max-lag", "0"])
        .await
        .unwrap();
    let _: () = run(&mut master, &["SET", "k", "5"]).await.unwrap();
    drop(stall);
}

// Function libraries reach a replica through the stream (FUNCTION LOAD, DELETE) and through
// a full synchronisation (a library loaded while the replica was cut off), and it runs them.
#[tokio::test(start_paused = true)]
async fn functions_reach_replicas_by_the_stream_and_by_full_sync() {
    let t = topology(1, 0).await;
    let (m, r) = (t.master(), t.replicas()[0]);
    let mut master = conn(&t.url(m)).await;
    let mut replica = conn(&t.url(r)).await;
    let lib = |name: &str| {
        format!(
            "#!lua name={name}\nredis.register_function{{function_name='{name}_f', \
             callback=function() return '{name}' end, flags={{'no-writes'}}}}"
        )
    };
    let loaded: String = run(&mut master, &["FUNCTION", "LOAD", &lib("a")])
        .await
        .unwrap();
    assert_eq!(loaded, "a");
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    let a: String = run(&mut replica, &["FCALL", "a_f", "0"]).await.unwrap();
    assert_eq!(a, "a");
    let _: () = run(&mut master, &["FUNCTION", "DELETE", "a"])
        .await
        .unwrap();
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    let gone: redis::RedisResult<String> = run(&mut replica, &["FCALL", "a_f", "0"]).await;
    assert!(gone.is_err());
    // Cut the replica off (past its output buffer limit), load a library, let it resync.
    let _: () = run(
        &mut master,
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "replica 64kb 0 0",
        ],
    )
    .await
    .unwrap();
    let stall = t.stall_replication();
    let value = "v".repeat(1000);
    for i in 0..100 {
        let _: () = run(&mut master, &["SET", &format!("k{i}"), &value])
            .await
            .unwrap();
    }
    let _: String = run(&mut master, &["FUNCTION", "LOAD", &lib("b")])
        .await
        .unwrap();
    drop(stall);
    assert!(t.sync_replicas(Duration::from_secs(5)).await);
    let b: String = run(&mut replica, &["FCALL", "b_f", "0"]).await.unwrap();
    assert_eq!(b, "b");
}
