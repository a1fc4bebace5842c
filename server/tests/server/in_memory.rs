//! A node without a listener, served over in-memory streams (`ServerBuilder::in_memory`,
//! `ServerHandle::serve_stream`): what a deterministic simulation runs on. It answers as a
//! socket's client is answered, scripts included, on a current-thread runtime with paused
//! time, and its shutdown closes the streams.

use locksmith_server::Server;
use redis::aio::MultiplexedConnection;
use redis::RedisConnectionInfo;
use std::net::SocketAddr;
use tokio::io::AsyncReadExt;

/// A client of `server` over a fresh duplex stream, seen by the node as `peer`.
async fn client(
    server: &locksmith_server::ServerHandle,
    peer: SocketAddr,
) -> MultiplexedConnection {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    server.serve_stream(theirs, peer);
    let info = RedisConnectionInfo::default();
    let (con, driver) =
        MultiplexedConnection::new_with_config(&info, ours, redis::AsyncConnectionConfig::new())
            .await
            .unwrap();
    tokio::spawn(driver);
    con
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_node_without_a_listener_serves_streams() {
    let advertised: SocketAddr = "127.0.0.1:30000".parse().unwrap();
    let server = Server::builder()
        .in_memory(advertised)
        .seed(7)
        .start()
        .await
        .unwrap();
    assert_eq!(server.addr(), advertised);
    let mut a = client(&server, "127.0.0.1:40001".parse().unwrap()).await;
    let mut b = client(&server, "127.0.0.1:40002".parse().unwrap()).await;
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query_async(&mut a)
        .await
        .unwrap();
    let v: String = redis::cmd("GET")
        .arg("k")
        .query_async(&mut b)
        .await
        .unwrap();
    assert_eq!(v, "v");
    // A script runs inline on the stream's task (no blocking pool on this runtime).
    let n: i64 = redis::cmd("EVAL")
        .arg("return redis.call('INCRBY', KEYS[1], ARGV[1])")
        .arg(1)
        .arg("n")
        .arg(41)
        .query_async(&mut b)
        .await
        .unwrap();
    assert_eq!(n, 41);
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut a)
        .await
        .unwrap();
    assert!(list.contains("addr=127.0.0.1:40001"), "{list}");
    assert!(list.contains("addr=127.0.0.1:40002"), "{list}");
    assert!(list.contains("laddr=127.0.0.1:30000"), "{list}");
    let port: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("port")
        .query_async(&mut a)
        .await
        .unwrap();
    assert_eq!(port, ["port", "30000"]);
    // Key expiry follows tokio's paused clock.
    let _: () = redis::cmd("SET")
        .arg("t")
        .arg("1")
        .arg("PX")
        .arg(500)
        .query_async(&mut a)
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let gone: Option<String> = redis::cmd("GET")
        .arg("t")
        .query_async(&mut a)
        .await
        .unwrap();
    assert_eq!(gone, None);
    let clients: String = redis::cmd("INFO")
        .arg("clients")
        .query_async(&mut a)
        .await
        .unwrap();
    assert!(clients.contains("connected_clients:2"), "{clients}");
    server.shutdown().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn maxclients_refuses_a_stream_with_redis_error_and_shutdown_closes_them() {
    let server = Server::builder()
        .in_memory("127.0.0.1:30001".parse().unwrap())
        .config_set("maxclients", "1")
        .start()
        .await
        .unwrap();
    let mut first = client(&server, "127.0.0.1:40001".parse().unwrap()).await;
    let (mut ours, theirs) = tokio::io::duplex(1024);
    server.serve_stream(theirs, "127.0.0.1:40002".parse().unwrap());
    let mut refused = String::new();
    ours.read_to_string(&mut refused).await.unwrap();
    assert_eq!(refused, "-ERR max number of clients reached\r\n");
    // Shutdown closes the stream of the client it served.
    server.shutdown().await;
    let after: redis::RedisResult<String> = redis::cmd("PING").query_async(&mut first).await;
    assert!(after.is_err(), "{after:?}");
}
