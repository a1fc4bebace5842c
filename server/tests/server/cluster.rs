//! Cluster mode: hash slots, redirections and cluster errors compared with a real one-node
//! Redis Cluster, and the Redisson connect probe (3-shard topologies: the harness's tests).

use locksmith_testkit as support;

use locksmith_server::{Server, ServerHandle};
use std::time::{Duration, Instant};
use support::{run, RealRedis};

/// A real `redis-server --cluster-enabled yes` serving every slot, or None without redis-server.
async fn real_cluster() -> Option<(RealRedis, redis::aio::MultiplexedConnection)> {
    // A directory of its own per server (its nodes.conf holds the slots it serves).
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "locksmith-cluster-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dir_s = dir.to_string_lossy().into_owned();
    // The bus port on a free port too (by default it is the port + 10000, never checked).
    let bus_port = support::free_port().to_string();
    let real = RealRedis::start_with(&[
        "--cluster-port",
        &bus_port,
        "--cluster-enabled",
        "yes",
        "--dir",
        &dir_s,
        "--cluster-config-file",
        "nodes.conf",
    ])?;
    let mut con = support::conn(&real.url()).await;
    let _: () = support::cmd(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"])
        .query_async(&mut con)
        .await
        .unwrap();
    // The node declares the cluster ok on its next cron tick.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = support::cmd(&["CLUSTER", "INFO"])
            .query_async(&mut con)
            .await
            .unwrap();
        if info.contains("cluster_state:ok") {
            break;
        }
        assert!(Instant::now() < deadline, "real cluster never became ok");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Some((real, con))
}

/// Our one-node cluster and, when redis-server exists, a real one.
struct ClusterPair {
    _ours: ServerHandle,
    ours: redis::aio::MultiplexedConnection,
    real: Option<(RealRedis, redis::aio::MultiplexedConnection)>,
}

impl ClusterPair {
    async fn start() -> ClusterPair {
        let ours_server = Server::builder().cluster(true).start().await.unwrap();
        let ours = support::conn(&ours_server.url()).await;
        ClusterPair {
            _ours: ours_server,
            ours,
            real: real_cluster().await,
        }
    }

    async fn same(&mut self, args: &[&str]) -> String {
        let ours = run(&mut self.ours, args).await;
        if let Some((_, real)) = &mut self.real {
            let theirs = run(real, args).await;
            assert_eq!(
                ours, theirs,
                "reply to {args:?} differs (left: ours, right: redis)"
            );
        }
        ours
    }

    async fn all_same(&mut self, script: &[&[&str]]) {
        for args in script {
            self.same(args).await;
        }
    }
}

const PROBE: &str = "redis.call('get', KEYS[1]) redis.call('get', KEYS[2])";

#[tokio::test]
async fn keyslot_and_slot_queries_match_a_real_cluster() {
    let mut pair = ClusterPair::start().await;
    for key in [
        "foo",
        "{foo}bar",
        "{}a",
        "a{}",
        "{a}{b}",
        "a{b",
        "{{a}}",
        "}a{b}",
        "",
        "redisson_lock__channel:{my_first_lock_name}",
        "my_first_lock_name",
        "{user1000}.following",
        "123456789",
        "\u{e9}t\u{e9}",
    ] {
        pair.same(&["CLUSTER", "KEYSLOT", key]).await;
    }
    pair.all_same(&[
        &["SET", "b", "1"],
        &["SET", "{b}x", "1"],
        &["SET", "bar", "1"],
        &["CLUSTER", "COUNTKEYSINSLOT", "3300"],
        &["CLUSTER", "COUNTKEYSINSLOT", "16384"],
        &["CLUSTER", "COUNTKEYSINSLOT", "-1"],
        &["CLUSTER", "COUNTKEYSINSLOT", "abc"],
        &["CLUSTER", "GETKEYSINSLOT", "5061", "10"],
        &["CLUSTER", "GETKEYSINSLOT", "3300", "0"],
        &["CLUSTER", "GETKEYSINSLOT", "3300", "-1"],
        &["CLUSTER", "GETKEYSINSLOT", "16384", "1"],
        &["CLUSTER", "GETKEYSINSLOT", "x", "1"],
        &["CLUSTER", "KEYSLOT"],
        &["CLUSTER", "KEYSLOT", "a", "b"],
        &["CLUSTER", "MYID", "x"],
        &["CLUSTER", "FOO"],
        &["CLUSTER"],
        &["READONLY"],
        &["READWRITE"],
        &["ASKING"],
        &["READONLY", "x"],
    ])
    .await;
    let keys = run(&mut pair.ours, &["CLUSTER", "GETKEYSINSLOT", "3300", "10"]).await;
    assert!(keys.contains("\"b\"") && keys.contains("{b}x"), "{keys}");
}

#[tokio::test]
async fn cluster_errors_match_a_real_cluster() {
    let mut pair = ClusterPair::start().await;
    pair.all_same(&[
        &["MSET", "a", "1", "b", "2"],
        &["MGET", "a", "b"],
        &["MSET", "{t}a", "1", "{t}b", "2"],
        &["MGET", "{t}a", "{t}b"],
        &["DEL", "a", "{t}a"],
        &["SUNIONSTORE", "{t}d", "{t}a", "x"],
        &["ZUNIONSTORE", "d", "2", "{t}a", "{t}b"],
        &["ZUNIONSTORE", "{t}d", "2", "{t}a", "{t}b"],
        &["LMPOP", "2", "a", "b", "LEFT"],
        &["SELECT", "0"],
        &["SELECT", "1"],
        &["SELECT", "99"],
        &["SELECT", "x"],
        &["MOVE", "a", "1"],
        &["SWAPDB", "0", "1"],
        &["COPY", "{t}a", "{t}c", "DB", "1"],
        &["COPY", "{t}a", "{t}c", "DB", "0"],
        &["EVAL", PROBE, "2", "test1", "test2"],
        &["EVAL", PROBE, "2", "{t}1", "{t}2"],
        &["EVAL", "return 1", "9", "a"],
        // Without a shebang a script may touch local keys of several slots (Redis 6's way).
        &["EVAL", "redis.call('get','b') return redis.call('get','bar')", "0"],
        &["EVAL", "return redis.call('get','bar')", "1", "b"],
        &[
            "EVAL",
            "#!lua\nredis.call('get','b') return redis.call('get','bar')",
            "0",
        ],
        &["EVAL", "#!lua\nreturn redis.call('get','bar')", "1", "b"],
        &[
            "EVAL",
            "#!lua flags=allow-cross-slot-keys\nredis.call('get','b') return redis.call('get','bar')",
            "0",
        ],
        &["EVAL", "#!lua flags=no-cluster\nreturn 1", "0"],
        &["EVAL", "return redis.pcall('mget','b','bar')", "0"],
        &["EVAL", "return redis.call('publish','ch','m')", "0"],
        &["PUBLISH", "ch", "m"],
    ])
    .await;
}

#[tokio::test]
async fn transactions_with_keys_of_several_slots_are_refused_at_exec() {
    let mut pair = ClusterPair::start().await;
    pair.all_same(&[
        &["MULTI"],
        &["SET", "a", "1"],
        &["SET", "b", "1"],
        &["EXEC"],
        &["GET", "a"],
        &["MULTI"],
        &["SET", "{t}a", "1"],
        &["MGET", "a", "b"],
        &["EXEC"],
        &["MULTI"],
        &["SET", "{t}a", "1"],
        &["GET", "{t}b"],
        &["EXEC"],
    ])
    .await;
}

#[tokio::test]
async fn info_reports_cluster_mode() {
    let mut pair = ClusterPair::start().await;
    assert!(pair
        .same(&["INFO", "cluster"])
        .await
        .contains("cluster_enabled:1"));
    let info = run(&mut pair.ours, &["CLUSTER", "INFO"]).await;
    for line in [
        "cluster_state:ok",
        "cluster_slots_assigned:16384",
        "cluster_slots_ok:16384",
        "cluster_known_nodes:1",
        "cluster_size:1",
    ] {
        assert!(info.contains(line), "{line} missing from {info}");
    }
    let mut standalone = support::Pair::start().await;
    assert!(standalone
        .same(&["INFO", "cluster"])
        .await
        .contains("cluster_enabled:0"));
}

#[tokio::test]
async fn a_standalone_server_refuses_cluster_commands_and_answers_the_redisson_probe() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["CLUSTER", "KEYSLOT", "a"],
        &["CLUSTER", "INFO"],
        &["CLUSTER", "SLOTS"],
        &["CLUSTER", "NODES"],
        &["CLUSTER", "SHARDS"],
        &["CLUSTER", "MYID"],
        &["CLUSTER", "COUNTKEYSINSLOT", "1"],
        &["READONLY"],
        &["READWRITE"],
        &["ASKING"],
        &["EVAL", PROBE, "2", "test1", "test2"],
        &["MGET", "a", "b"],
        &["SELECT", "1"],
    ])
    .await;
    assert_eq!(
        run(&mut pair.ours_con, &["EVAL", PROBE, "2", "test1", "test2"]).await,
        "nil"
    );
}

#[tokio::test]
async fn cluster_shards_and_slots_have_redis_shape() {
    let mut pair = ClusterPair::start().await;
    let slots = run(&mut pair.ours, &["CLUSTER", "SLOTS"]).await;
    let shards = run(&mut pair.ours, &["CLUSTER", "SHARDS"]).await;
    let id = run(&mut pair.ours, &["CLUSTER", "MYID"]).await;
    if let Some((real, con)) = &mut pair.real {
        let real_id = run(con, &["CLUSTER", "MYID"]).await;
        let port = real.port.to_string();
        let ours_port = pair._ours.addr().port().to_string();
        // A lone real node does not know its own address until it meets another node.
        let normalise = |s: String, id: &str, port: &str| {
            s.replace(id, "ID")
                .replace(port, "PORT")
                .replace("\"127.0.0.1\"", "\"\"")
        };
        assert_eq!(
            normalise(slots, &id, &ours_port),
            normalise(run(con, &["CLUSTER", "SLOTS"]).await, &real_id, &port)
        );
        assert_eq!(
            normalise(shards, &id, &ours_port),
            normalise(run(con, &["CLUSTER", "SHARDS"]).await, &real_id, &port)
        );
    }
}

/// Slot assignment (ADDSLOTS, DELSLOTS, their RANGE forms, FLUSHSLOTS), config epochs
/// (BUMPEPOCH, SET-CONFIG-EPOCH), REPLICAS, COUNT-FAILURE-REPORTS and RESET on a one-node
/// cluster answer as a real one does, errors included, and routing follows the slots.
#[tokio::test]
async fn slot_assignment_epochs_and_reset_match_a_real_cluster() {
    let mut pair = ClusterPair::start().await;
    pair.all_same(&[
        &["cluster", "addslots", "1"],
        &["cluster", "delslots", "1", "2", "3"],
        &["cluster", "delslots", "1"],
        &["cluster", "addslots", "1", "x"],
        &["cluster", "addslots", "16384"],
        &["cluster", "addslots", "1", "1"],
        &["cluster", "addslots", "1", "2", "3"],
        &["set", "foo", "bar"],
        &["cluster", "delslotsrange", "12000", "12200"],
        &["set", "foo", "bar"],
        &["cluster", "delslotsrange", "12000", "12001"],
        &["cluster", "addslotsrange", "12000", "12200"],
        &["cluster", "addslotsrange", "30", "25"],
        &["cluster", "addslotsrange", "30"],
        &["cluster", "addslotsrange", "18", "40"],
        &["get", "foo"],
        &["cluster", "flushslots"],
        &["del", "foo"],
        &["cluster", "flushslots"],
        &["get", "foo"],
        &["cluster", "addslots", "1", "2", "3"],
        &["cluster", "bumpepoch"],
        &["cluster", "bumpepoch"],
        &["cluster", "set-config-epoch", "5"],
        &["cluster", "set-config-epoch", "-1"],
        &["cluster", "set-config-epoch", "x"],
        &["cluster", "count-failure-reports", "nosuch"],
        &["cluster", "replicas", "nosuch"],
        &["cluster", "slaves", "nosuch"],
        &["cluster", "reset", "hard", "x"],
        &["cluster", "reset", "bogus"],
        &["cluster", "addslotsrange", "0", "0"],
        &["set", "{a}k", "v"],
        &["cluster", "reset"],
        &["del", "{a}k"],
        &["eval", "return redis.call('cluster','reset','hard')", "0"],
        &["cluster", "reset", "hard"],
        &["cluster", "bumpepoch"],
    ])
    .await;
    // Many ranges: the checks stop at the first slot given twice (and the server does not
    // expand a thousand full ranges first).
    let mut many = vec!["cluster", "addslotsrange"];
    for _ in 0..1000 {
        many.extend(["0", "16383"]);
    }
    pair.same(&many).await;
    many[1] = "delslotsrange";
    pair.same(&many).await;
    // The node's own id: no replicas, no failure reports; a hard reset renamed it.
    let id: String = support::cmd(&["cluster", "myid"])
        .query_async(&mut pair.ours)
        .await
        .unwrap();
    let replicas: Vec<String> = support::cmd(&["cluster", "replicas", &id])
        .query_async(&mut pair.ours)
        .await
        .unwrap();
    assert!(replicas.is_empty());
    let reports: i64 = support::cmd(&["cluster", "count-failure-reports", &id])
        .query_async(&mut pair.ours)
        .await
        .unwrap();
    assert_eq!(reports, 0);
}
