//! In-memory topologies replay exactly: on a current-thread runtime with paused time, with
//! nodes and client links in memory, the seed alone decides the interleaving, so the same
//! seed and workload give a byte-identical `History`, and different seeds with faults give
//! different ones. Each run gets a fresh runtime, as a replay in another process would.

use locksmith_harness::{NodeId, Topology, Verdict};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use std::time::Duration;

/// A connection to the current master through the in-memory front address.
async fn front(topology: &Topology) -> Option<MultiplexedConnection> {
    let stream = topology.connect_front().ok()?;
    let info = redis::RedisConnectionInfo::default();
    let config =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_millis(500)));
    let (con, driver) = MultiplexedConnection::new_with_config(&info, stream, config)
        .await
        .ok()?;
    tokio::spawn(driver);
    Some(con)
}

const UNLOCK: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/// One client: bounded rounds of `SET NX PX` / hold / compare-and-delete, reconnecting after
/// a failover cut its link, every pause drawn from its own seeded generator.
async fn client(topology: Topology, name: String, seed: u64) {
    let history = topology.history();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut con = None;
    for _ in 0..12 {
        if con.is_none() {
            con = front(&topology).await;
        }
        let Some(c) = con.as_mut() else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let op = history.begin(name.clone(), "lock");
        let set: redis::RedisResult<Option<String>> = redis::cmd("SET")
            .arg("lock")
            .arg(&name)
            .arg("NX")
            .arg("PX")
            .arg(400)
            .query_async(c)
            .await;
        match set {
            Ok(Some(_)) => {
                op.acquired(None);
                tokio::time::sleep(Duration::from_millis(rng.random_range(50..300))).await;
                let release = history.begin(name.clone(), "lock");
                let _: redis::RedisResult<i64> = redis::cmd("EVAL")
                    .arg(UNLOCK)
                    .arg(1)
                    .arg("lock")
                    .arg(&name)
                    .query_async(c)
                    .await;
                release.released();
            }
            Ok(None) => op.failed(),
            Err(_) => {
                op.failed();
                con = None;
            }
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(10..120))).await;
    }
}

/// Faults drawn from the seed: failovers, pauses, and latency on the master's link.
async fn faults(topology: Topology, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xfa17);
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(rng.random_range(100..700))).await;
        let master = topology.master();
        match rng.random_range(0..3) {
            0 => {
                let _ = topology.fail_master().await;
                // The old master comes back (empty) as a replica of the new one.
                let _ = topology.restart(master).await;
            }
            1 => {
                if let Ok(pause) = topology
                    .pause(master, Duration::from_millis(rng.random_range(100..600)))
                    .await
                {
                    pause.detach();
                }
            }
            _ => {
                let extra = Duration::from_millis(rng.random_range(5..80));
                if let Ok(guard) = topology.latency(master, extra) {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    guard.undo();
                }
            }
        }
    }
}

/// One whole run in a fresh current-thread runtime with paused time; its serialised history.
fn run(seed: u64) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let topology = Topology::builder()
            .in_memory(true)
            .replicas(2)
            .replication_delay(Duration::from_millis(30))
            .replication_jitter(Duration::from_millis(40))
            .seed(seed)
            .build()
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for i in 0..3u64 {
            tasks.push(tokio::spawn(client(
                topology.clone(),
                format!("c{i}"),
                seed.wrapping_mul(31).wrapping_add(i),
            )));
        }
        tasks.push(tokio::spawn(faults(topology.clone(), seed)));
        for task in tasks {
            task.await.unwrap();
        }
        let history = topology.history().serialize();
        topology.shutdown().await;
        history
    })
}

#[test]
fn the_same_seed_gives_a_byte_identical_history() {
    for seed in [1, 2, 3, 42, 1234] {
        let first = run(seed);
        assert!(first.contains("acquired"), "seed {seed}: {first}");
        assert!(first.contains("fault"), "seed {seed}: {first}");
        assert_eq!(first, run(seed), "seed {seed} did not replay");
    }
}

#[test]
fn different_seeds_with_faults_give_different_histories() {
    let histories: Vec<String> = (10..14).map(run).collect();
    for (i, a) in histories.iter().enumerate() {
        for b in histories.iter().skip(i + 1) {
            assert_ne!(a, b);
        }
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn in_memory_links_follow_rules_failover_and_kill() {
    let topology = Topology::builder()
        .in_memory(true)
        .replicas(1)
        .seed(5)
        .build()
        .await
        .unwrap();
    let mut con = front(&topology).await.unwrap();
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(topology.sync_replicas(Duration::from_secs(1)).await);
    // A dropped link: the command never gets its reply (the response timeout ends it).
    let guard = topology
        .link_rule(
            NodeId::from_index(0),
            |_: &locksmith_harness::Chunk| Verdict::Drop,
            "drop",
        )
        .unwrap();
    let lost: redis::RedisResult<String> = redis::cmd("PING").query_async(&mut con).await;
    assert!(lost.is_err());
    guard.undo();
    // Failover cuts the front's links; a new one reaches the promoted replica.
    let promoted = topology.fail_master().await.unwrap();
    assert_eq!(promoted, NodeId::from_index(1));
    let mut con = front(&topology).await.unwrap();
    let v: String = redis::cmd("GET")
        .arg("k")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(v, "v");
    let role: Vec<redis::Value> = redis::cmd("ROLE").query_async(&mut con).await.unwrap();
    assert_eq!(
        role.first(),
        Some(&redis::Value::BulkString(b"master".to_vec()))
    );
    // The killed node refuses connections.
    assert_eq!(
        topology.connect(NodeId::from_index(0)).unwrap_err().kind(),
        std::io::ErrorKind::ConnectionRefused
    );
    topology.shutdown().await;
}
