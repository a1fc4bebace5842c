//! Cluster topologies: three shards (with replicas) whose nodes describe the whole cluster,
//! redirect with `MOVED`, reach each other's subscribers, and follow a shard's failover, driven
//! by the redis crate's cluster client.

use locksmith_harness::Topology;
use locksmith_testkit as support;
use std::time::{Duration, Instant};
use support::run;

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
    let line = |n: locksmith_harness::NodeId| {
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
