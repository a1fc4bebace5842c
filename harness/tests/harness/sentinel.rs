//! Scenario 8: the Sentinel endpoint. The redis crate's Sentinel client finds the master, a
//! subscriber sees `+switch-master` after `fail_master()`, and the client follows it.

use locksmith_testkit::harness as harness_support;

use futures::StreamExt;
use harness_support::{conn, run};
use locksmith_harness::Topology;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use std::collections::HashMap;
use std::time::Duration;

async fn topology() -> Topology {
    Topology::builder()
        .replicas(2)
        .replication_delay(Duration::from_millis(50))
        .sentinel(0)
        .seed(8)
        .build()
        .await
        .unwrap()
}

fn sentinel_client(t: &Topology) -> SentinelClient {
    SentinelClient::build(
        vec![format!("redis://{}/", t.sentinel_addr().unwrap())],
        t.master_name().to_string(),
        Some(SentinelNodeConnectionInfo::default()),
        SentinelServerType::Master,
    )
    .unwrap()
}

#[tokio::test]
async fn sentinel_commands_describe_the_topology() {
    let t = topology().await;
    let mut s = conn(&format!("redis://{}/", t.sentinel_addr().unwrap())).await;
    let addr: Vec<String> = run(&mut s, &["SENTINEL", "get-master-addr-by-name", "mymaster"])
        .await
        .unwrap();
    let m = t.addr(t.master());
    assert_eq!(addr, [m.ip().to_string(), m.port().to_string()]);
    let none: redis::Value = run(&mut s, &["SENTINEL", "get-master-addr-by-name", "nope"])
        .await
        .unwrap();
    assert_eq!(none, redis::Value::Nil);
    let masters: Vec<HashMap<String, String>> =
        run(&mut s, &["SENTINEL", "MASTERS"]).await.unwrap();
    assert_eq!(masters[0]["name"], "mymaster");
    assert_eq!(masters[0]["flags"], "master");
    assert_eq!(masters[0]["num-slaves"], "2");
    let replicas: Vec<HashMap<String, String>> = run(&mut s, &["SENTINEL", "REPLICAS", "mymaster"])
        .await
        .unwrap();
    assert_eq!(replicas.len(), 2);
    assert_eq!(replicas[0]["master-link-status"], "ok");
    let sentinels: Vec<String> = run(&mut s, &["SENTINEL", "SENTINELS", "mymaster"])
        .await
        .unwrap();
    assert!(sentinels.is_empty());
    let q: String = run(&mut s, &["SENTINEL", "CKQUORUM", "mymaster"])
        .await
        .unwrap();
    assert!(q.starts_with("OK 1 usable Sentinels"));
    let err = run::<String>(&mut s, &["SENTINEL", "MASTER", "nope"])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("IDONTKNOW"));
    let role: redis::Role = run(&mut s, &["ROLE"]).await.unwrap();
    assert!(matches!(role, redis::Role::Sentinel { .. }));
}

#[tokio::test]
async fn a_sentinel_client_follows_switch_master_after_fail_master() {
    let t = topology().await;
    let mut sentinel = sentinel_client(&t);
    let mut con = sentinel.get_async_connection().await.unwrap();
    let _: () = run(&mut con, &["SET", "k", "v"]).await.unwrap();
    assert!(t.sync_replicas(Duration::from_secs(5)).await);

    let client = redis::Client::open(format!("redis://{}/", t.sentinel_addr().unwrap())).unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub.subscribe("+switch-master").await.unwrap();
    let old = t.addr(t.master());
    let new = t.fail_master().await.unwrap();
    let msg = tokio::time::timeout(Duration::from_secs(5), pubsub.on_message().next())
        .await
        .unwrap()
        .unwrap();
    let payload: String = msg.get_payload().unwrap();
    let n = t.addr(new);
    assert_eq!(
        payload,
        format!(
            "mymaster {} {} {} {}",
            old.ip(),
            old.port(),
            n.ip(),
            n.port()
        )
    );
    // The old connection died with the old master; the client asks Sentinel again.
    assert!(run::<String>(&mut con, &["PING"]).await.is_err());
    let mut con = sentinel.get_async_connection().await.unwrap();
    let role: redis::Role = run(&mut con, &["ROLE"]).await.unwrap();
    assert!(matches!(role, redis::Role::Primary { .. }));
    let got: Option<String> = run(&mut con, &["GET", "k"]).await.unwrap();
    assert_eq!(got.as_deref(), Some("v"));
    let _: () = run(&mut con, &["SET", "k2", "v"]).await.unwrap();
}

#[tokio::test]
async fn sentinel_failover_promotes_without_killing() {
    let t = topology().await;
    let mut s = conn(&format!("redis://{}/", t.sentinel_addr().unwrap())).await;
    let old = t.master();
    let ok: String = run(&mut s, &["SENTINEL", "FAILOVER", "mymaster"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    assert_ne!(t.master(), old);
    let mut o = conn(&t.url(old)).await;
    let role: redis::Role = run(&mut o, &["ROLE"]).await.unwrap();
    assert!(
        matches!(role, redis::Role::Replica { .. }),
        "the old master now replicates"
    );
}
