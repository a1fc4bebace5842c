//! Locks on a Redis Cluster of ours (3 shards): scripts run on the node owning the lock's
//! slot, waiters subscribe on that node, and a `PUBLISH` on any node reaches them (Redis
//! Cluster broadcasts it).

use std::time::Duration;

use locksmith_harness::Topology;
use locksmith_lock::{Client, ClientOptions};

const WAIT: Duration = Duration::from_secs(10);

async fn three_shards() -> (Topology, Client) {
    let topology = Topology::builder()
        .cluster(3)
        .seed(5)
        .build()
        .await
        .unwrap();
    let urls: Vec<String> = topology.nodes().iter().map(|&n| topology.url(n)).collect();
    let client = Client::open_cluster(&urls[..1], ClientOptions::default())
        .await
        .unwrap();
    (topology, client)
}

/// A raw connection to the node of `topology` that owns `key`.
async fn owner_of(topology: &Topology, key: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(topology.url(owner_id(topology, key).await))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Subscribers of `channel` on the node owning `key`, and on all nodes.
async fn subscribers(topology: &Topology, key: &str, channel: &str) -> (i64, i64) {
    let numsub = |mut con: redis::aio::MultiplexedConnection| async move {
        let reply: (String, i64) = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(channel)
            .query_async(&mut con)
            .await
            .unwrap();
        reply.1
    };
    let on_owner = numsub(owner_of(topology, key).await).await;
    let mut total = 0;
    for node in topology.nodes() {
        let con = redis::Client::open(topology.url(node))
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        total += numsub(con).await;
    }
    (on_owner, total)
}

/// Names whose locks live on three different shards.
fn names_on_every_shard(prefix: &str) -> Vec<String> {
    // Slots of lock-0, lock-1…: pick the first name in each third of the slot space.
    let mut picked: Vec<Option<String>> = vec![None, None, None];
    for i in 0..200 {
        let name = format!("{prefix}-{i}");
        let slot = slot_of(&name);
        let shard = match slot {
            0..=5460 => 0,
            5461..=10922 => 1,
            _ => 2,
        };
        if picked[shard].is_none() {
            picked[shard] = Some(name);
        }
    }
    picked.into_iter().map(Option::unwrap).collect()
}

fn slot_of(key: &str) -> u16 {
    let mut crc: u16 = 0;
    for &b in key.as_bytes() {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc & 16383
}

#[tokio::test]
async fn locks_on_every_shard_exclude_and_wake_waiters_on_unlock() {
    let (topology, client) = three_shards().await;
    for name in names_on_every_shard("cluster-lock") {
        let holder = client.lock(&name);
        holder.lock().await.unwrap();
        // The hash lives on the node owning the name's slot.
        let mut owner = owner_of(&topology, &name).await;
        let exists: i64 = redis::cmd("EXISTS")
            .arg(&name)
            .query_async(&mut owner)
            .await
            .unwrap();
        assert_eq!(exists, 1, "{name} not on its owner");
        let other = client.lock(&name);
        assert!(!other.try_lock().await.unwrap());
        // The holder's lease is the 30 s watchdog: only the unlock message can wake the
        // waiter within its 10 s wait.
        let waiter = tokio::spawn(async move { other.try_lock_for(WAIT, None).await });
        // The waiter subscribes on the node owning the channel's slot, and only there.
        let channel = format!("redisson_lock__channel:{{{name}}}");
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let (on_owner, total) = subscribers(&topology, &name, &channel).await;
            if on_owner == 1 {
                assert_eq!(total, 1, "{channel} subscribed beyond its owner");
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "waiter never subscribed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        holder.unlock().await.unwrap();
        let acquired = tokio::time::timeout(WAIT, waiter)
            .await
            .expect("waiter not woken")
            .unwrap()
            .unwrap();
        assert!(acquired, "waiter on {name} did not get the lock");
    }
    client.shutdown().await;
    topology.shutdown().await;
}

#[tokio::test]
async fn a_publish_on_another_node_wakes_a_waiter() {
    let (topology, client) = three_shards().await;
    let name = names_on_every_shard("cluster-broadcast").remove(0);
    let holder = client.lock(&name);
    holder.lock().await.unwrap();
    let other = client.lock(&name);
    let waiter = tokio::spawn(async move { other.try_lock_for(WAIT, None).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Release behind the library's back on the owner (no message), then publish Redisson's
    // unlock message on a node of another shard: the cluster broadcasts it.
    let mut owner = owner_of(&topology, &name).await;
    let _: i64 = redis::cmd("DEL")
        .arg(&name)
        .query_async(&mut owner)
        .await
        .unwrap();
    let nodes = topology.nodes();
    let mut elsewhere = redis::Client::open(topology.url(nodes[2]))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: i64 = redis::cmd("PUBLISH")
        .arg(format!("redisson_lock__channel:{{{name}}}"))
        .arg("0")
        .query_async(&mut elsewhere)
        .await
        .unwrap();
    let acquired = tokio::time::timeout(WAIT, waiter)
        .await
        .expect("waiter not woken")
        .unwrap()
        .unwrap();
    assert!(acquired);
    client.shutdown().await;
    topology.shutdown().await;
}

#[tokio::test]
async fn fair_locks_serve_waiters_in_order_on_every_shard() {
    let (topology, client) = three_shards().await;
    for name in names_on_every_shard("cluster-fair") {
        let holder = client.fair_lock(&name);
        holder.lock().await.unwrap();
        let first = client.fair_lock(&name);
        let second = client.fair_lock(&name);
        let t1 = tokio::spawn(async move {
            let ok = first.try_lock_for(WAIT, None).await.unwrap();
            (ok, first)
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let t2 = tokio::spawn(async move { second.try_lock_for(WAIT, None).await.unwrap() });
        tokio::time::sleep(Duration::from_millis(100)).await;
        holder.unlock().await.unwrap();
        let (ok, first) = tokio::time::timeout(WAIT, t1).await.unwrap().unwrap();
        assert!(ok, "first waiter on {name}");
        assert!(!t2.is_finished());
        first.unlock().await.unwrap();
        assert!(tokio::time::timeout(WAIT, t2).await.unwrap().unwrap());
    }
    client.shutdown().await;
    topology.shutdown().await;
}

#[tokio::test]
async fn read_write_locks_share_reads_and_wake_the_writer_on_every_shard() {
    let (topology, client) = three_shards().await;
    for name in names_on_every_shard("cluster-rw") {
        let rw = client.read_write_lock(&name);
        let r1 = rw.read_lock();
        let r2 = client.read_write_lock(&name).read_lock();
        r1.lock().await.unwrap();
        r2.lock().await.unwrap();
        let writer = client.read_write_lock(&name).write_lock();
        assert!(!writer.try_lock().await.unwrap());
        let w = tokio::spawn(async move {
            let ok = writer.try_lock_for(WAIT, None).await.unwrap();
            (ok, writer)
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        r1.unlock().await.unwrap();
        r2.unlock().await.unwrap();
        let (ok, writer) = tokio::time::timeout(WAIT, w).await.unwrap().unwrap();
        assert!(ok, "writer on {name}");
        assert!(!client
            .read_write_lock(&name)
            .read_lock()
            .try_lock()
            .await
            .unwrap());
        writer.unlock().await.unwrap();
    }
    client.shutdown().await;
    topology.shutdown().await;
}

/// The id of the node of `topology` that owns `key`.
async fn owner_id(topology: &Topology, key: &str) -> locksmith_harness::NodeId {
    for node in topology.nodes() {
        let mut con = redis::Client::open(topology.url(node))
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let served: redis::RedisResult<i64> =
            redis::cmd("EXISTS").arg(key).query_async(&mut con).await;
        if served.is_ok() {
            return node;
        }
    }
    panic!("no node serves {key}");
}

#[tokio::test]
async fn a_hung_node_does_not_hold_the_waiters_of_other_nodes() {
    use locksmith_harness::{Chunk, Verdict};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    let (topology, holder) = three_shards().await;
    let urls: Vec<String> = topology.nodes().iter().map(|&n| topology.url(n)).collect();
    // A minute for every pub/sub operation: with one lock for the whole hub, the SUBSCRIBE
    // hung on one node would hold the waiters of every other node that long.
    let options = ClientOptions::default().response_timeout(Duration::from_secs(60));
    let waiters = Client::open_cluster(&urls[..1], options).await.unwrap();
    let names = names_on_every_shard("hung-node");
    let (a, b) = (names[0].clone(), names[1].clone());
    holder.lock(&a).lock().await.unwrap();
    let held_b = holder.lock(&b);
    held_b.lock().await.unwrap();

    // Node A black-holes every connection opened from now on: the waiters' commands there
    // still run on their existing connection, their new pub/sub connection hangs.
    let cutoff = Arc::new(AtomicU64::new(u64::MAX));
    let seen = Arc::new(AtomicU64::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    let rule = {
        let (cutoff, seen, dropped) = (cutoff.clone(), seen.clone(), dropped.clone());
        move |chunk: &Chunk| {
            seen.fetch_max(chunk.connection, Ordering::SeqCst);
            if chunk.connection > cutoff.load(Ordering::SeqCst) {
                dropped.fetch_add(1, Ordering::SeqCst);
                Verdict::Drop
            } else {
                Verdict::Pass
            }
        }
    };
    let node_a = owner_id(&topology, &a).await;
    let mut node_b = redis::Client::open(topology.url(owner_id(&topology, &b).await))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _fault = topology
        .link_rule(node_a, rule, "black hole for new connections")
        .unwrap();
    assert!(waiters.lock(&a).is_locked().await.unwrap());
    cutoff.store(seen.load(Ordering::SeqCst), Ordering::SeqCst);

    let on_a = waiters.lock(&a);
    let stuck =
        tokio::spawn(async move { on_a.try_lock_for(Duration::from_secs(120), None).await });
    let deadline = tokio::time::Instant::now() + WAIT;
    while dropped.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the waiter on A never reached its pub/sub connection"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Meanwhile a waiter on B subscribes there and is woken by the unlock.
    let on_b = waiters.lock(&b);
    let waiting = tokio::spawn(async move { on_b.try_lock_for(WAIT, None).await });
    let channel = format!("redisson_lock__channel:{{{b}}}");
    loop {
        let (_, on_owner): (String, i64) = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(&channel)
            .query_async(&mut node_b)
            .await
            .unwrap();
        if on_owner == 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline + WAIT,
            "the waiter on B could not subscribe while A hung"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    held_b.unlock().await.unwrap();
    let acquired = tokio::time::timeout(WAIT, waiting)
        .await
        .expect("the waiter on B was not woken")
        .unwrap()
        .unwrap();
    assert!(acquired);
    assert!(!stuck.is_finished(), "A's waiter should still hang on A");
    stuck.abort();
    waiters.shutdown().await;
    holder.shutdown().await;
    topology.shutdown().await;
}

#[tokio::test]
async fn waiters_follow_their_channel_when_its_shard_fails_over() {
    // Shards of two nodes each: masters 0, 2, 4 and their replicas 1, 3, 5.
    let topology = Topology::builder()
        .cluster(3)
        .replicas(1)
        .seed(9)
        .build()
        .await
        .unwrap();
    let nodes = topology.nodes();
    let urls: Vec<String> = nodes.iter().map(|&n| topology.url(n)).collect();
    let holder = Client::open_cluster(&urls[2..3], ClientOptions::default())
        .await
        .unwrap();
    let waiters = Client::open_cluster(&urls[2..3], ClientOptions::default())
        .await
        .unwrap();
    // A lock of the first shard (slots 0-5460, master n0, replica n1).
    let name = names_on_every_shard("failover-waiter").remove(0);
    let held = holder.lock(&name);
    held.lock().await.unwrap();
    assert!(topology.sync_replicas(WAIT).await);
    let waiter = waiters.lock(&name);
    let waiting =
        tokio::spawn(async move { waiter.try_lock_for(Duration::from_secs(20), None).await });
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let numsub = |node| {
        let url = topology.url(node);
        let channel = channel.clone();
        async move {
            let mut con = redis::Client::open(url)
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .unwrap();
            let (_, n): (String, i64) = redis::cmd("PUBSUB")
                .arg("NUMSUB")
                .arg(&channel)
                .query_async(&mut con)
                .await
                .unwrap();
            n
        }
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while numsub(nodes[0]).await != 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never subscribed on n0"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The shard's master dies and its replica takes over its slots.
    topology.fail_master_to(nodes[1]).await.unwrap();
    // The waiter's subscription moves to the new master...
    while numsub(nodes[1]).await != 1 {
        assert!(
            tokio::time::Instant::now() < deadline + WAIT,
            "the waiter's channel never moved to the new master"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // ...so the release there wakes it (the holder's 30 s lease would outlast its wait).
    held.force_unlock().await.unwrap();
    let acquired = tokio::time::timeout(WAIT + WAIT, waiting)
        .await
        .expect("the waiter was not woken")
        .unwrap()
        .unwrap();
    assert!(
        acquired,
        "the waiter did not get the lock after the failover"
    );
    waiters.shutdown().await;
    holder.shutdown().await;
    topology.shutdown().await;
}

// Issue 36, item 11: one hung shard delays the renewals of its own locks only. Each renewal
// chunk (one per slot) runs on its own, and a round does not wait for the chunks of the last
// one: a lock on a healthy shard stays renewed while the hung shard's renewal waits out its
// response timeout (10 s here; the watchdog lease is 900 ms).
#[tokio::test]
async fn a_hung_shard_does_not_delay_the_renewals_of_the_others() {
    use locksmith_harness::{Chunk, Verdict};
    use locksmith_lock::LostReason;

    let topology = Topology::builder()
        .cluster(3)
        .seed(11)
        .build()
        .await
        .unwrap();
    let urls: Vec<String> = topology.nodes().iter().map(|&n| topology.url(n)).collect();
    let options = ClientOptions::default()
        .watchdog_timeout(Duration::from_millis(900))
        .response_timeout(Duration::from_secs(10));
    let client = Client::open_cluster(&urls[..1], options).await.unwrap();
    let names = names_on_every_shard("hung-renewal");
    let on_a = client.lock(&names[0]);
    on_a.lock().await.unwrap();
    let on_b = client.lock(&names[1]);
    on_b.lock().await.unwrap();
    let mut lost_a = on_a.lost_signal().unwrap();
    let mut lost_b = on_b.lost_signal().unwrap();
    let node_a = owner_id(&topology, &names[0]).await;
    // A first round loads the renewal script on every shard (SCRIPT LOAD goes to all of
    // them) before A hangs.
    let renewed = client.metrics().renewals;
    let deadline = tokio::time::Instant::now() + WAIT;
    while client.metrics().renewals < renewed + 2 {
        assert!(tokio::time::Instant::now() < deadline, "no renewal round");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let fault = topology
        .link_rule(node_a, |_: &Chunk| Verdict::Drop, "shard A hangs")
        .unwrap();
    // Ten renewal periods: B's lock is renewed all along.
    let quiet = tokio::time::timeout(Duration::from_secs(3), lost_b.lost()).await;
    assert!(quiet.is_err(), "B's lock was reported lost: {quiet:?}");
    assert!(on_b.is_renewing());
    assert!(on_b.is_held_by_me().await.unwrap());
    // A's renewal hangs: its signal fired at its lease's end.
    let reason = tokio::time::timeout(WAIT, lost_a.lost())
        .await
        .expect("A's lock was reported lost");
    assert_eq!(reason, Some(LostReason::RenewalFailed));
    drop(fault);
    on_b.unlock().await.unwrap();
    client.shutdown().await;
    topology.shutdown().await;
}

// Issue 36, item 15: with `ReplicaSync::Auto` a cluster client waits for the replicas of the
// master that took the write (Redisson's syncSlaves, per master entry): the lock is on that
// shard's replica when `lock` returns, on every shard, and with replication stalled an
// acquisition is not acknowledged, rolled back and reported. Before, `Auto` sent no `WAIT` in a
// cluster: the stalled acquisition succeeded, unreplicated.
#[tokio::test]
async fn an_auto_cluster_client_waits_for_the_replicas_of_the_master_it_wrote_to() {
    // Shards of two nodes each: masters 0, 2, 4 and their replicas 1, 3, 5.
    let topology = Topology::builder()
        .cluster(3)
        .replicas(1)
        .seed(11)
        .build()
        .await
        .unwrap();
    let nodes = topology.nodes();
    let urls: Vec<String> = nodes.iter().map(|&n| topology.url(n)).collect();
    let auto = |timeout| ClientOptions::default().replica_sync_timeout(timeout);
    let patient = Client::open_cluster(&urls[..1], auto(WAIT)).await.unwrap();
    for (shard, name) in names_on_every_shard("auto-wait").iter().enumerate() {
        let lock = patient.lock(name);
        lock.lock().await.unwrap();
        let mut replica = redis::Client::open(topology.url(nodes[2 * shard + 1]))
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let _: () = redis::cmd("READONLY")
            .query_async(&mut replica)
            .await
            .unwrap();
        let on_replica: bool = redis::cmd("HEXISTS")
            .arg(name)
            .arg(lock.owner_field())
            .query_async(&mut replica)
            .await
            .unwrap();
        assert!(
            on_replica,
            "shard {shard}: WAIT returned before the replica had the lock"
        );
        lock.unlock().await.unwrap();
    }

    let hasty = Client::open_cluster(&urls[..1], auto(Duration::from_millis(200)))
        .await
        .unwrap();
    let name = names_on_every_shard("auto-stalled").remove(1);
    let stalled = topology.stall_replication();
    let err = hasty.lock(&name).lock().await.unwrap_err();
    assert!(err.is_replicas_not_synced(), "{err:?}");
    let exists: bool = redis::cmd("EXISTS")
        .arg(&name)
        .query_async(&mut owner_of(&topology, &name).await)
        .await
        .unwrap();
    assert!(!exists, "a rolled-back acquisition left the lock behind");
    drop(stalled);
    hasty.shutdown().await;
    patient.shutdown().await;
    topology.shutdown().await;
}

// An explicit `ReplicaSync::Replicas(n)` on a cluster client waits, as `Auto` does, only on
// the master the write went to (Redisson's syncSlaves, per master entry). Shard 1's master is
// paused (it answers nothing); locks on shards 0 and 2 are taken and released all the same.
// Before, the redis crate routed every `WAIT` to all masters: the paused one never answered,
// so each acquisition on a healthy shard failed after the pooled connection's response
// timeout (1 s + the 1 s sync timeout) and was rolled back.
#[tokio::test]
async fn an_explicit_replica_count_in_a_cluster_waits_only_on_the_master_written_to() {
    // Shards of two nodes each: masters 0, 2, 4 and their replicas 1, 3, 5.
    let topology = Topology::builder()
        .cluster(3)
        .replicas(1)
        .seed(11)
        .build()
        .await
        .unwrap();
    let nodes = topology.nodes();
    let urls: Vec<String> = nodes.iter().map(|&n| topology.url(n)).collect();
    let client = Client::open_cluster(
        &urls[..1],
        ClientOptions::default()
            .replica_sync(locksmith_lock::ReplicaSync::Replicas(1))
            .replica_sync_timeout(Duration::from_secs(1))
            .response_timeout(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let names = names_on_every_shard("explicit-wait");
    // Every shard answers first: the client knows them all before one hangs.
    for name in &names {
        let lock = client.lock(name);
        lock.lock().await.unwrap();
        lock.unlock().await.unwrap();
    }
    let paused = topology
        .pause(nodes[2], Duration::from_secs(120))
        .await
        .unwrap();
    for shard in [0, 2] {
        let lock = client.lock(&names[shard]);
        lock.lock()
            .await
            .unwrap_or_else(|e| panic!("shard {shard}, shard 1's master paused: {e:?}"));
        let on_replica: bool = {
            let mut replica = redis::Client::open(topology.url(nodes[2 * shard + 1]))
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .unwrap();
            let _: () = redis::cmd("READONLY")
                .query_async(&mut replica)
                .await
                .unwrap();
            redis::cmd("HEXISTS")
                .arg(&names[shard])
                .arg(lock.owner_field())
                .query_async(&mut replica)
                .await
                .unwrap()
        };
        assert!(
            on_replica,
            "shard {shard}: WAIT returned before the replica had the lock"
        );
        lock.unlock().await.unwrap();
    }
    drop(paused);
    client.shutdown().await;
    topology.shutdown().await;
}
