//! `requirepass` in every topology mode: each node, the front address (`LOCKSMITH.*`
//! included) and the Sentinel endpoint refuse commands before `AUTH` with Redis's `NOAUTH`,
//! and serve them after it. Through the Rust builder and through the binary's flags.

use locksmith_testkit as support;

use locksmith_harness::Topology;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::Wire;

const PASSWORD: &str = "s3cret";
const NOAUTH: &str = "-NOAUTH Authentication required.\r\n";

/// One command's reply as text, on a fresh connection (`AUTH` first when `auth`).
async fn reply(addr: SocketAddr, auth: bool, args: &[&str]) -> String {
    let mut wire = Wire::connect(addr).await;
    if auth {
        let ok = wire.call(&[&["AUTH", PASSWORD]], 1).await;
        assert_eq!(String::from_utf8_lossy(&ok[0]), "+OK\r\n", "AUTH on {addr}");
    }
    let frames = wire.call(&[args], 1).await;
    String::from_utf8_lossy(&frames[0]).into_owned()
}

/// Every address of `t` refuses `SET` and `LOCKSMITH.TOPOLOGY` before AUTH and serves them
/// after; wrong passwords get Redis's WRONGPASS.
async fn check_topology(t: &Topology, what: &str) {
    let mut addrs = vec![t.front_addr()];
    addrs.extend(t.nodes().into_iter().map(|n| t.addr(n)));
    for addr in addrs {
        assert_eq!(
            reply(addr, false, &["SET", "k", "v"]).await,
            NOAUTH,
            "{what} {addr}"
        );
        assert_eq!(
            reply(addr, false, &["LOCKSMITH.TOPOLOGY"]).await,
            NOAUTH,
            "{what} {addr}"
        );
        assert_eq!(
            reply(addr, false, &["AUTH", "wrong"]).await,
            "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        );
        let topology = reply(addr, true, &["LOCKSMITH.TOPOLOGY"]).await;
        assert!(!topology.starts_with('-'), "{what} {addr}: {topology}");
    }
    let set = reply(t.front_addr(), true, &["SET", "k", "v"]).await;
    assert_eq!(set, "+OK\r\n", "{what}");
}

#[tokio::test]
async fn every_mode_of_a_topology_requires_the_password() {
    let replicated = Topology::builder()
        .replicas(2)
        .sentinel(0)
        .requirepass(PASSWORD)
        .build()
        .await
        .unwrap();
    check_topology(&replicated, "replicas").await;
    let sentinel = replicated.sentinel_addr().unwrap();
    let refused = reply(
        sentinel,
        false,
        &["SENTINEL", "get-master-addr-by-name", "mymaster"],
    );
    assert_eq!(refused.await, NOAUTH);
    let answered = reply(
        sentinel,
        true,
        &["SENTINEL", "get-master-addr-by-name", "mymaster"],
    )
    .await;
    assert!(answered.starts_with("*2\r\n"), "{answered}");
    replicated.shutdown().await;

    let masters = Topology::builder()
        .masters(3)
        .requirepass(PASSWORD)
        .build()
        .await
        .unwrap();
    check_topology(&masters, "masters").await;
    masters.shutdown().await;

    let cluster = Topology::builder()
        .cluster(3)
        .requirepass(PASSWORD)
        .build()
        .await
        .unwrap();
    for node in cluster.nodes() {
        let addr = cluster.addr(node);
        assert_eq!(reply(addr, false, &["CLUSTER", "INFO"]).await, NOAUTH);
        assert!(reply(addr, true, &["CLUSTER", "INFO"])
            .await
            .contains("cluster_state:ok"));
    }
    cluster.shutdown().await;
}

struct Binary(Child);

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// The binary's `--requirepass` reaches every node of `--replicas N` and `--masters N`.
#[tokio::test]
async fn the_binary_passes_requirepass_to_every_node() {
    for (i, shape) in [["--replicas", "1"], ["--masters", "2"]].iter().enumerate() {
        // Port 0 and the port file: a port chosen up front could be taken by another test's
        // server before the binary binds it.
        let port_file = std::env::temp_dir().join(format!(
            "locksmith-harness-auth-{}-{i}.port",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&port_file);
        let child = Command::new(env!("CARGO_BIN_EXE_locksmith-harness"))
            .args(["--port", "0", "--loglevel", "warning"])
            .arg("--port-file")
            .arg(&port_file)
            .args(["--requirepass", PASSWORD])
            .args(shape)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let _bin = Binary(child);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let port: u16 = loop {
            let written = std::fs::read_to_string(&port_file).unwrap_or_default();
            if let Ok(port) = written.trim().parse() {
                break port;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the binary did not start"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let _ = std::fs::remove_file(&port_file);
        let front: SocketAddr = ([127, 0, 0, 1], port).into();
        // Ready once a command is answered (NOAUTH here): the front address accepts as soon
        // as it is bound, but resets connections until it routes to the master.
        let ready = tokio::task::spawn_blocking(move || {
            support::answers_ping(port, Duration::from_secs(10))
        })
        .await
        .unwrap();
        assert!(ready, "the binary did not answer");
        assert_eq!(reply(front, false, &["SET", "k", "v"]).await, NOAUTH);
        assert_eq!(
            reply(front, false, &["LOCKSMITH.FAILOVER"]).await,
            NOAUTH,
            "{shape:?}"
        );
        assert_eq!(reply(front, true, &["SET", "k", "v"]).await, "+OK\r\n");
    }
}
