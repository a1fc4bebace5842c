//! Cluster mode: hash slots, redirections and cluster errors compared with a real one-node
//! Redis Cluster, the Redisson connect probe, and a 3-shard harness topology driven by the
//! redis crate's cluster client.

mod support;

use locksmith_server::{Server, ServerHandle, Topology};
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

/// A 3-shard topology of ours.
async fn three_shards(replicas: usize) -> Topology {
    Topology::builder()
        .cluster(3)
        .replicas(replicas)
        .seed(11)
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_three_shard_topology_describes_the_whole_cluster_and_redirects() {
    let topology = three_shards(0).await;
    let nodes = topology.nodes();
    assert_eq!(nodes.len(), 3);
    let mut con = support::conn(&topology.url(nodes[0])).await;
    let slots: Vec<(i64, i64, (String, i64, String))> = support::cmd(&["CLUSTER", "SLOTS"])
        .query_async(&mut con)
        .await
        .map(|v: Vec<redis::Value>| {
            v.into_iter()
                .map(|entry| {
                    let redis::Value::Array(parts) = entry else {
                        panic!("{entry:?}")
                    };
                    let n = |v: &redis::Value| match v {
                        redis::Value::Int(i) => *i,
                        other => panic!("{other:?}"),
                    };
                    let redis::Value::Array(node) = &parts[2] else {
                        panic!()
                    };
                    let s = |v: &redis::Value| match v {
                        redis::Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
                        other => panic!("{other:?}"),
                    };
                    (
                        n(&parts[0]),
                        n(&parts[1]),
                        (s(&node[0]), n(&node[1]), s(&node[2])),
                    )
                })
                .collect()
        })
        .unwrap();
    let ranges: Vec<(i64, i64)> = slots.iter().map(|(a, b, _)| (*a, *b)).collect();
    assert_eq!(ranges, vec![(0, 5460), (5461, 10922), (10923, 16383)]);
    for (i, (_, _, (ip, port, id))) in slots.iter().enumerate() {
        let addr = topology.addr(nodes[i]);
        assert_eq!((ip.as_str(), *port), ("127.0.0.1", i64::from(addr.port())));
        let mut node_con = support::conn(&topology.url(nodes[i])).await;
        let myid: String = support::cmd(&["CLUSTER", "MYID"])
            .query_async(&mut node_con)
            .await
            .unwrap();
        assert_eq!(&myid, id);
    }
    // foo hashes to 12182: the third shard's.
    let third = topology.addr(nodes[2]);
    assert_eq!(
        run(&mut con, &["SET", "foo", "1"]).await,
        format!("ERROR MOVED 12182 127.0.0.1:{}", third.port())
    );
    assert_eq!(
        run(&mut con, &["EVAL", "return 1", "1", "foo"]).await,
        format!("ERROR MOVED 12182 127.0.0.1:{}", third.port())
    );
    let nodes_text: String = support::cmd(&["CLUSTER", "NODES"])
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(nodes_text.lines().count(), 3);
    assert!(nodes_text.contains("myself,master"), "{nodes_text}");
    assert!(nodes_text.contains(" 10923-16383\n"), "{nodes_text}");
    let info: String = support::cmd(&["CLUSTER", "INFO"])
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(
        info.contains("cluster_known_nodes:3\r\ncluster_size:3\r\n"),
        "{info}"
    );
    // A script on the right node touching a key of another node is refused with Redis's text.
    let mut third_con = support::conn(&topology.url(nodes[2])).await;
    let reply = run(
        &mut third_con,
        &["EVAL", "return redis.call('get', 'b')", "1", "foo"],
    )
    .await;
    assert!(
        reply.starts_with(
            "ERROR ERR Script attempted to access a non local key in a cluster node script: "
        ) && reply.ends_with(", on @user_script:1."),
        "{reply}"
    );
    topology.shutdown().await;
}

#[tokio::test]
async fn the_redis_cluster_client_follows_moved_across_three_shards() {
    let topology = three_shards(0).await;
    let urls: Vec<String> = vec![topology.url(topology.nodes()[0])];
    let client = redis::cluster::ClusterClient::new(urls).unwrap();
    let mut con = client.get_async_connection().await.unwrap();
    for i in 0..50 {
        let key = format!("key:{i}");
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg(i)
            .query_async(&mut con)
            .await
            .unwrap();
    }
    for i in 0..50 {
        let v: i64 = redis::cmd("GET")
            .arg(format!("key:{i}"))
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(v, i);
    }
    // Every shard got some keys, and each holds only keys of its own slots.
    for node in topology.nodes() {
        let mut c = support::conn(&topology.url(node)).await;
        let n: i64 = support::cmd(&["DBSIZE"]).query_async(&mut c).await.unwrap();
        assert!(n > 0 && n < 50, "node {node} holds {n} keys");
    }
    // A plain connection to one node is redirected to the owner.
    let mut plain = support::conn(&topology.url(topology.nodes()[0])).await;
    let reply = run(&mut plain, &["GET", "key:0"]).await;
    assert!(
        reply == "bulk-string('\"0\"')" || reply.starts_with("ERROR MOVED "),
        "{reply}"
    );
    topology.shutdown().await;
}

#[tokio::test]
async fn publish_reaches_subscribers_on_every_node() {
    let topology = three_shards(0).await;
    let nodes = topology.nodes();
    let client = support::client(&topology.url(nodes[2]));
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub.subscribe("news").await.unwrap();
    let mut publisher = support::conn(&topology.url(nodes[0])).await;
    // Receivers counted are this node's own, as in Redis Cluster.
    assert_eq!(
        run(&mut publisher, &["PUBLISH", "news", "one"]).await,
        "int(0)"
    );
    assert_eq!(
        run(
            &mut publisher,
            &["EVAL", "return redis.call('publish', 'news', 'two')", "0"]
        )
        .await,
        "int(0)"
    );
    use futures::StreamExt;
    let mut stream = pubsub.on_message();
    for expected in ["one", "two"] {
        let msg = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(msg.get_channel_name(), "news");
        assert_eq!(msg.get_payload::<String>().unwrap(), expected);
    }
    drop(stream);
    topology.shutdown().await;
}

#[tokio::test]
async fn cluster_replicas_redirect_until_readonly() {
    let topology = three_shards(1).await;
    let nodes = topology.nodes();
    assert_eq!(nodes.len(), 6);
    // Node 0 is the first master, node 1 its replica; "b" (slot 3300) is the first shard's.
    let mut master = support::conn(&topology.url(nodes[0])).await;
    let _: () = support::cmd(&["SET", "b", "1"])
        .query_async(&mut master)
        .await
        .unwrap();
    let master_port = topology.addr(nodes[0]).port();
    let mut replica = redis::Client::open(topology.url(nodes[1]))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    assert_eq!(
        run(&mut replica, &["GET", "b"]).await,
        format!("ERROR MOVED 3300 127.0.0.1:{master_port}")
    );
    let _: () = support::cmd(&["READONLY"])
        .query_async(&mut replica)
        .await
        .unwrap();
    // Replication is asynchronous: wait (bounded) for the write to arrive.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let v: redis::RedisResult<Option<String>> =
            support::cmd(&["GET", "b"]).query_async(&mut replica).await;
        if matches!(&v, Ok(Some(s)) if s == "1") {
            break;
        }
        assert!(Instant::now() < deadline, "replica never served b: {v:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        run(&mut replica, &["SET", "b", "2"]).await,
        format!("ERROR MOVED 3300 127.0.0.1:{master_port}")
    );
    let slots = run(&mut master, &["CLUSTER", "SLOTS"]).await;
    assert!(
        slots.contains(&topology.addr(nodes[1]).port().to_string()),
        "replica missing from {slots}"
    );
    topology.shutdown().await;
}

#[tokio::test]
async fn a_shard_fails_over_to_its_replica_and_the_cluster_follows() {
    // Nodes 0, 2, 4 are the masters of shards 0, 1, 2; 1, 3, 5 their replicas.
    let topology = three_shards(1).await;
    let nodes = topology.nodes();
    let (old, new) = (nodes[0], nodes[1]);
    let client = redis::cluster::ClusterClient::new(vec![topology.url(nodes[2])]).unwrap();
    let mut con = client.get_async_connection().await.unwrap();
    // A key of shard 0.
    let mut other = support::conn(&topology.url(nodes[4])).await;
    let mut key = String::new();
    let mut slot = i64::MAX;
    for i in 0..100 {
        key = format!("k{i}");
        slot = support::cmd(&["CLUSTER", "KEYSLOT", &key])
            .query_async(&mut other)
            .await
            .unwrap();
        if slot <= 5460 {
            break;
        }
    }
    assert!(slot <= 5460);
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg("before")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(topology.sync_replicas(Duration::from_secs(5)).await);

    assert_eq!(topology.fail_master_to(new).await.unwrap(), new);

    // Every live node describes the new layout.
    let slots: redis::Value = support::cmd(&["CLUSTER", "SLOTS"])
        .query_async(&mut other)
        .await
        .unwrap();
    let text = format!("{slots:?}");
    assert!(
        text.contains(&topology.addr(new).port().to_string())
            && !text.contains(&topology.addr(old).port().to_string()),
        "{text}"
    );
    assert_eq!(
        run(&mut other, &["GET", &key]).await,
        format!("ERROR MOVED {slot} 127.0.0.1:{}", topology.addr(new).port())
    );
    let nodes_text: String = support::cmd(&["CLUSTER", "NODES"])
        .query_async(&mut other)
        .await
        .unwrap();
    let line = |n: locksmith_server::harness::NodeId| {
        let port = format!(":{}@", topology.addr(n).port());
        nodes_text
            .lines()
            .find(|l| l.contains(&port))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line(new).contains(" master - ") && line(new).contains(" 0-5460"),
        "{nodes_text}"
    );
    assert!(line(old).contains("slave,fail"), "{nodes_text}");
    let info: String = support::cmd(&["CLUSTER", "INFO"])
        .query_async(&mut other)
        .await
        .unwrap();
    assert!(info.contains("cluster_current_epoch:4\r\n"), "{info}");

    // The cluster client follows: the data that reached the replica is there, writes go on.
    let got: String = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(got, "before");
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg("after")
        .query_async(&mut con)
        .await
        .unwrap();
    // The old master comes back empty as a replica of the new one and resyncs.
    topology.restart(old).await.unwrap();
    assert!(topology.sync_replicas(Duration::from_secs(5)).await);
    let mut back = support::conn(&topology.url(old)).await;
    let role: redis::Value = support::cmd(&["ROLE"])
        .query_async(&mut back)
        .await
        .unwrap();
    assert!(format!("{role:?}").contains("slave"), "{role:?}");
    assert!(topology.fail_master().await.is_err());
    topology.shutdown().await;
}
