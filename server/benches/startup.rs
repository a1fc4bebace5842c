//! In-process start: `Server::builder().start()` to the first reply (issue 16, goal 8: at
//! most 5 ms). Each iteration starts a node on a free loopback port, connects a socket, sends
//! `PING`, reads `+PONG`, and shuts the node down; `start-and-ping` times all of it,
//! `start` the start alone. Run: `cargo bench -p locksmith-server --bench startup`.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn startup(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("startup");
    group.bench_function("start-and-ping", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t = Instant::now();
                    let server = locksmith_server::Server::builder().start().await.unwrap();
                    let mut socket = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
                    socket.write_all(b"PING\r\n").await.unwrap();
                    let mut reply = [0u8; 7];
                    socket.read_exact(&mut reply).await.unwrap();
                    assert_eq!(&reply, b"+PONG\r\n");
                    total += t.elapsed();
                    drop(socket);
                    server.shutdown().await;
                }
                total
            })
        });
    });
    group.bench_function("start", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t = Instant::now();
                    let server = locksmith_server::Server::builder().start().await.unwrap();
                    total += t.elapsed();
                    server.shutdown().await;
                }
                total
            })
        });
    });
    group.finish();
}

criterion_group!(benches, startup);
criterion_main!(benches);
