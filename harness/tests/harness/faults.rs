//! Every fault verb of the harness, from Rust and over the wire (`LOCKSMITH.*`): each returns
//! once in effect, and temporary ones end when their guard drops.

use locksmith_testkit::harness as harness_support;

use harness_support::{conn, run, try_conn};
use locksmith_harness::{Chunk, Direction, Fault, NodeRole, Restart, Topology, Verdict};
use std::time::Duration;

async fn topology(replicas: usize) -> Topology {
    Topology::builder()
        .replicas(replicas)
        .seed(21)
        .build()
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_killed_node_refuses_clients_and_restarts_empty_on_the_same_address() {
    let t = Topology::builder()
        .masters(3)
        .seed(3)
        .build()
        .await
        .unwrap();
    let n1 = t.node("n1").unwrap();
    let mut c = conn(&t.url(n1)).await;
    let _: () = run(&mut c, &["SET", "k", "v"]).await.unwrap();
    t.kill(n1).await.unwrap();
    assert!(run::<String>(&mut c, &["PING"]).await.is_err());
    assert!(try_conn(&t.url(n1)).await.is_err());
    assert_eq!(t.nodes_info()[1].role, NodeRole::Down);
    t.restart(n1).await.unwrap();
    let mut c = conn(&t.url(n1)).await;
    let got: Option<String> = run(&mut c, &["GET", "k"]).await.unwrap();
    assert_eq!(got, None, "no persistence: the node comes back empty");
    let faults: Vec<String> = t
        .history()
        .faults()
        .into_iter()
        .map(|f| f.label())
        .collect();
    assert_eq!(faults, ["kill n1", "restart n1 (empty)"]);
    let records: Vec<Fault> = t.history().faults().into_iter().map(|f| f.fault).collect();
    assert_eq!(
        records,
        [Fault::Kill(n1), Fault::Restart(n1, Restart::Empty)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_restarted_master_empties_its_replicas() {
    let t = topology(1).await;
    let mut m = conn(&t.url(t.master())).await;
    let _: () = run(&mut m, &["SET", "k", "v"]).await.unwrap();
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    t.restart(t.master()).await.unwrap();
    let mut r = conn(&t.url(t.replicas()[0])).await;
    let got: Option<String> = run(&mut r, &["GET", "k"]).await.unwrap();
    assert_eq!(got, None);
    assert_eq!(t.master().index(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_restarted_replica_resyncs_from_the_master() {
    let t = topology(1).await;
    let r = t.replicas()[0];
    t.kill(r).await.unwrap();
    let mut m = conn(&t.url(t.master())).await;
    let _: () = run(&mut m, &["SET", "k", "v"]).await.unwrap();
    t.restart(r).await.unwrap();
    let mut rc = conn(&t.url(r)).await;
    let got: Option<String> = run(&mut rc, &["GET", "k"]).await.unwrap();
    assert_eq!(got.as_deref(), Some("v"));
}

#[tokio::test(start_paused = true)]
async fn a_partition_stops_replication_until_healed() {
    let t = topology(2).await;
    let (m, r1, r2) = (t.master(), t.replicas()[0], t.replicas()[1]);
    let guard = t.partition(m, r1);
    let mut mc = conn(&t.url(m)).await;
    let _: () = run(&mut mc, &["SET", "k", "v"]).await.unwrap();
    let n: i64 = run(&mut mc, &["WAIT", "2", "500"]).await.unwrap();
    assert_eq!(n, 1, "only the replica on the master's side acknowledges");
    assert_eq!(t.offset(r2), t.offset(m));
    assert!(t.offset(r1) < t.offset(m));
    drop(guard);
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    // heal() ends partitions whose guard was detached.
    t.partition(m, r1).detach();
    let _: () = run(&mut mc, &["SET", "k", "w"]).await.unwrap();
    let n: i64 = run(&mut mc, &["WAIT", "2", "200"]).await.unwrap();
    assert_eq!(n, 1);
    t.heal();
    let n: i64 = run(&mut mc, &["WAIT", "2", "0"]).await.unwrap();
    assert_eq!(n, 2);
}

#[tokio::test(start_paused = true)]
async fn an_isolated_node_black_holes_its_clients() {
    let t = topology(1).await;
    let m = t.master();
    let mut c = conn(&t.url(m)).await;
    let guard = t.isolate(m).unwrap();
    let reply =
        tokio::time::timeout(Duration::from_secs(5), run::<String>(&mut c, &["PING"])).await;
    assert!(reply.is_err(), "no answer while isolated");
    drop(guard);
    let mut c = conn(&t.url(m)).await;
    let pong: String = run(&mut c, &["PING"]).await.unwrap();
    assert_eq!(pong, "PONG");
}

#[tokio::test(start_paused = true)]
async fn a_clock_jump_moves_that_nodes_ttls_only() {
    let t = Topology::builder()
        .masters(2)
        .seed(8)
        .build()
        .await
        .unwrap();
    let (a, b) = (t.node("n0").unwrap(), t.node("n1").unwrap());
    let mut ca = conn(&t.url(a)).await;
    let mut cb = conn(&t.url(b)).await;
    for c in [&mut ca, &mut cb] {
        let _: () = run(c, &["SET", "k", "v", "PX", "10000"]).await.unwrap();
    }
    t.clock_jump(a, 20_000).unwrap();
    let got: Option<String> = run(&mut ca, &["GET", "k"]).await.unwrap();
    assert_eq!(got, None);
    let got: Option<String> = run(&mut cb, &["GET", "k"]).await.unwrap();
    assert_eq!(got.as_deref(), Some("v"));
    assert_eq!(t.nodes_info()[0].clock_shift_ms, 20_000);
}

#[tokio::test(start_paused = true)]
async fn a_paused_node_answers_nothing_until_the_pause_ends() {
    let t = topology(0).await;
    let m = t.master();
    let mut c = conn(&t.url(m)).await;
    let start = tokio::time::Instant::now();
    let guard = t.pause(m, Duration::from_secs(10)).await.unwrap();
    assert!(t.nodes_info()[0].paused);
    let pong: String = run(&mut c, &["PING"]).await.unwrap();
    assert_eq!(pong, "PONG");
    assert!(start.elapsed() >= Duration::from_secs(10));
    drop(guard);
    // Dropping the guard ends a pause early.
    let guard = t.pause(m, Duration::from_secs(3600)).await.unwrap();
    let pending = tokio::spawn(async move {
        let pong: String = run(&mut c, &["PING"]).await.unwrap();
        pong
    });
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(!pending.is_finished());
    drop(guard);
    assert_eq!(pending.await.unwrap(), "PONG");
}

#[tokio::test(start_paused = true)]
async fn client_link_latency_drop_and_reset() {
    let t = topology(0).await;
    let m = t.master();
    let mut c = conn(&t.url(m)).await;
    let guard = t.latency(m, Duration::from_millis(250)).unwrap();
    let start = tokio::time::Instant::now();
    let _: String = run(&mut c, &["PING"]).await.unwrap();
    // Once each way.
    assert!(start.elapsed() >= Duration::from_millis(500));
    drop(guard);

    // A rule that resets a connection on its first request.
    let guard = t
        .link_rule(
            m,
            |chunk: &Chunk| {
                if chunk.direction == Direction::ToNode {
                    Verdict::Reset
                } else {
                    Verdict::Pass
                }
            },
            "reset requests",
        )
        .unwrap();
    assert!(run::<String>(&mut c, &["PING"]).await.is_err());
    drop(guard);

    let mut c = conn(&t.url(m)).await;
    assert_eq!(t.reset_connections(m).unwrap(), 1);
    assert!(run::<String>(&mut c, &["PING"]).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn the_front_address_follows_the_master_and_cuts_old_connections() {
    let t = topology(2).await;
    let mut front = conn(&t.front_url()).await;
    let _: () = run(&mut front, &["SET", "k", "v"]).await.unwrap();
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    let new = t.fail_master_to(t.node("n2").unwrap()).await.unwrap();
    assert_eq!(new.index(), 2);
    assert!(run::<String>(&mut front, &["PING"]).await.is_err());
    let mut front = conn(&t.front_url()).await;
    let _: () = run(&mut front, &["SET", "k2", "v"]).await.unwrap();
    assert_eq!(t.master(), new);
    // The remaining replica now follows n2.
    assert_eq!(t.nodes_info()[1].role, NodeRole::Replica(new));
    assert!(t.sync_replicas(Duration::from_secs(1)).await);
    let mut r = conn(&t.url(t.node("n1").unwrap())).await;
    let got: Option<String> = run(&mut r, &["GET", "k2"]).await.unwrap();
    assert_eq!(got.as_deref(), Some("v"));
}

#[tokio::test(start_paused = true)]
async fn admin_commands_drive_the_topology_over_the_wire() {
    let t = Topology::builder()
        .replicas(2)
        .replication_delay(Duration::from_millis(100))
        .seed(99)
        .build()
        .await
        .unwrap();
    let mut front = conn(&t.front_url()).await;
    let topo: redis::Value = run(&mut front, &["LOCKSMITH.TOPOLOGY"]).await.unwrap();
    let text = format!("{topo:?}");
    assert!(
        text.contains("n0") && text.contains("master") && text.contains("replica"),
        "{text}"
    );

    let ok: String = run(&mut front, &["LOCKSMITH.REPLDELAY", "5000"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let _: () = run(&mut front, &["SET", "lock", "a", "NX", "PX", "30000"])
        .await
        .unwrap();
    // Sent to a replica: the master is killed and the freshest replica promoted.
    let mut r1 = conn(&t.url(t.node("n1").unwrap())).await;
    let new: String = run(&mut r1, &["LOCKSMITH.FAILOVER"]).await.unwrap();
    assert_eq!(new, "n1");
    let mut front = conn(&t.front_url()).await;
    let got: Option<String> = run(&mut front, &["GET", "lock"]).await.unwrap();
    assert_eq!(got, None, "the delayed write was lost");

    let ok: String = run(&mut front, &["LOCKSMITH.RESTART", "n0"]).await.unwrap();
    assert_eq!(ok, "OK");
    let shift: i64 = run(&mut front, &["LOCKSMITH.CLOCK", "n2", "-1500"])
        .await
        .unwrap();
    assert_eq!(shift, -1500);
    let ok: String = run(&mut front, &["LOCKSMITH.PARTITION", "n1", "n2"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let ok: String = run(&mut front, &["LOCKSMITH.LATENCY", "n2", "10"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let ok: String = run(&mut front, &["LOCKSMITH.HEAL"]).await.unwrap();
    assert_eq!(ok, "OK");
    let ok: String = run(&mut front, &["LOCKSMITH.PAUSE", "n0", "100"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let ok: String = run(&mut front, &["LOCKSMITH.KILL", "n2"]).await.unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(t.nodes_info()[2].role, NodeRole::Down);

    let err = run::<String>(&mut front, &["LOCKSMITH.KILL"])
        .await
        .unwrap_err();
    assert_eq!(
        err.detail(),
        Some("wrong number of arguments for 'locksmith.kill' command")
    );
    let err = run::<String>(&mut front, &["LOCKSMITH.KILL", "n9"])
        .await
        .unwrap_err();
    assert_eq!(err.detail(), Some("no such node: n9"));
    let err = run::<String>(&mut front, &["LOCKSMITH.NOPE"])
        .await
        .unwrap_err();
    assert!(err
        .detail()
        .unwrap()
        .starts_with("unknown command 'LOCKSMITH.NOPE'"));
    let help: Vec<String> = run(&mut front, &["LOCKSMITH.HELP"]).await.unwrap();
    assert!(help.len() > 10);

    let labels: Vec<String> = t
        .history()
        .faults()
        .into_iter()
        .map(|f| f.label())
        .collect();
    assert!(
        labels.iter().any(|l| l == "fail_master n0 -> n1"),
        "{labels:?}"
    );
    assert!(
        labels.iter().any(|l| l == "clock n2 -1500 ms"),
        "{labels:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_admin_command_that_kills_its_own_node_still_replies() {
    let t = Topology::builder()
        .masters(2)
        .seed(5)
        .build()
        .await
        .unwrap();
    let mut c = conn(&t.url(t.node("n1").unwrap())).await;
    // Its reply still gets out; then the connection closes with the node.
    let ok: String = run(&mut c, &["LOCKSMITH.KILL", "n1"]).await.unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(t.nodes_info()[1].role, NodeRole::Down);
    assert!(run::<String>(&mut c, &["PING"]).await.is_err());
    // Through the front address too.
    let t = Topology::builder()
        .replicas(1)
        .seed(6)
        .build()
        .await
        .unwrap();
    let mut front = conn(&t.front_url()).await;
    let new: String = run(&mut front, &["LOCKSMITH.FAILOVER"]).await.unwrap();
    assert_eq!(new, "n1");
    assert!(run::<String>(&mut front, &["PING"]).await.is_err());
}

#[tokio::test]
async fn admin_commands_are_unknown_outside_a_topology() {
    let server = locksmith_server::Server::builder().start().await.unwrap();
    let mut c = conn(&server.url()).await;
    let err = run::<String>(&mut c, &["LOCKSMITH.TOPOLOGY"])
        .await
        .unwrap_err();
    assert!(err.detail().unwrap().starts_with("unknown command"));
    server.shutdown().await;
}

/// `LOCKSMITH.REPLDELAY` records its delay as `Topology::replication_delay` does: a delay
/// lasts until the next one replaces it, whose record ends it then (issue 39: the command
/// left every earlier record open).
#[tokio::test(start_paused = true)]
async fn stall_resume_drop_and_reset_over_the_wire_are_recorded_as_typed_faults() {
    let t = Topology::builder()
        .replicas(1)
        .seed(41)
        .build()
        .await
        .unwrap();
    let n1 = t.node("n1").unwrap();
    let mut front = conn(&t.front_url()).await;
    let _replica_client = conn(&t.url(n1)).await;
    for cmd in [&["LOCKSMITH.STALL"][..], &["LOCKSMITH.RESUME"]] {
        let ok: String = run(&mut front, cmd).await.unwrap();
        assert_eq!(ok, "OK", "{cmd:?}");
    }
    // RESUME found the stall's guard by its variant and ended it.
    assert!(t.history().faults()[0].end_ms.is_some());
    for cmd in [&["LOCKSMITH.DROP", "n1"][..], &["LOCKSMITH.HEAL"]] {
        let ok: String = run(&mut front, cmd).await.unwrap();
        assert_eq!(ok, "OK", "{cmd:?}");
    }
    let reset: usize = run(&mut front, &["LOCKSMITH.RESET", "n1"]).await.unwrap();
    assert!(reset >= 1, "the replica's client was open");
    let faults = t.history().faults();
    let records: Vec<&Fault> = faults.iter().map(|f| &f.fault).collect();
    assert_eq!(
        records,
        [
            &Fault::ReplicationStall,
            &Fault::DropTraffic(n1),
            &Fault::Heal,
            &Fault::ResetConnections {
                node: n1,
                count: reset
            },
        ]
    );
    assert!(faults[1].end_ms.is_some(), "HEAL ended the dropped traffic");

    // A failover naming no node on independent masters: the same refusal as the Rust call.
    let masters = Topology::builder()
        .masters(2)
        .seed(41)
        .build()
        .await
        .unwrap();
    let mut m0 = conn(&masters.url(masters.nodes()[0])).await;
    let err = run::<String>(&mut m0, &["LOCKSMITH.FAILOVER"])
        .await
        .unwrap_err();
    assert_eq!(
        err.detail(),
        Some("invalid topology: independent masters have no replicas to fail over to")
    );
    assert_eq!(
        masters.fail_master().await.unwrap_err().to_string(),
        "invalid topology: independent masters have no replicas to fail over to"
    );
    t.shutdown().await;
    masters.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn repldelay_sent_twice_ends_the_first_delay_record() {
    let t = topology(1).await;
    let mut front = conn(&t.front_url()).await;
    let ok: String = run(&mut front, &["LOCKSMITH.REPLDELAY", "2000"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ok: String = run(&mut front, &["LOCKSMITH.REPLDELAY", "500"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ok: String = run(&mut front, &["LOCKSMITH.REPLDELAY", "0"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let delays: Vec<(String, u64, Option<u64>)> = t
        .history()
        .faults()
        .into_iter()
        .filter(|f| matches!(f.fault, Fault::ReplicationDelay { .. }))
        .map(|f| (f.label(), f.start_ms, f.end_ms))
        .collect();
    assert_eq!(delays.len(), 3, "{delays:?}");
    let (first, second, last) = (&delays[0], &delays[1], &delays[2]);
    assert_eq!(first.0, "replication delay 2000 ms");
    assert_eq!(first.2, Some(second.1), "the second delay ends the first");
    assert_eq!(second.2, Some(last.1), "no delay ends the second");
    assert!(first.1 < second.1 && second.1 < last.1, "{delays:?}");
    assert_eq!(
        last.2, None,
        "a zero delay is no open fault: its record just marks the end"
    );
}
