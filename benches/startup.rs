//! In-process start: `Server::builder().start()` to the first reply (issue 16, goal 8: at
//! most 5 ms). Each iteration starts a node on a free loopback port, connects a socket, sends
//! `PING`, reads `+PONG`, and shuts the node down; `start-and-ping` times all of it,
//! `start` the start alone. Run: `cargo bench -p locksmith-benches --bench startup`.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Total time of `iters` starts (each followed by a `PING` answered when `ping`), shutdown
/// excluded.
fn time_starts(rt: &tokio::runtime::Runtime, iters: u64, ping: bool) -> Duration {
    rt.block_on(async {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let t = Instant::now();
            let server = locksmith_server::Server::builder().start().await.unwrap();
            // The socket is closed after the clock is read, as the node's shutdown is.
            let socket = if ping {
                let mut socket = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
                socket.write_all(b"PING\r\n").await.unwrap();
                let mut reply = [0u8; 7];
                socket.read_exact(&mut reply).await.unwrap();
                assert_eq!(&reply, b"+PONG\r\n");
                Some(socket)
            } else {
                None
            };
            total += t.elapsed();
            drop(socket);
            server.shutdown().await;
        }
        total
    })
}

fn startup(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("startup");
    group.bench_function("start-and-ping", |b| {
        b.iter_custom(|iters| time_starts(&rt, iters, true))
    });
    group.bench_function("start", |b| {
        b.iter_custom(|iters| time_starts(&rt, iters, false))
    });
    group.finish();
}

criterion_group!(benches, startup);
criterion_main!(benches);
