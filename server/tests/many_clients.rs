//! Connections at Redis's scale: 10 000 clients connecting at once to the binary all get PONG
//! (the listen backlog is `tcp-backlog`, 511, and accepting never stalls).

use locksmith_testkit as support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The number of clients, Redis's default `maxclients`.
const CLIENTS: usize = 10_000;

/// Raises this process's soft limit on open files to the hard one; the soft limit after.
#[allow(unsafe_code)]
fn raise_open_files_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed in.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return raised.rlim_cur;
            }
        }
    }
    limit.rlim_cur
}

struct Binary(Child);

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Connects, sends PING and reads the 7-byte reply; the connection is handed back open.
async fn ping(port: u16) -> std::io::Result<(Vec<u8>, TcpStream)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await?;
    s.write_all(b"PING\r\n").await?;
    let mut buf = vec![0u8; 7];
    s.read_exact(&mut buf).await?;
    Ok((buf, s))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_clients_connecting_at_once_all_get_pong() {
    let limit = raise_open_files_limit();
    if limit < (CLIENTS + 500) as u64 {
        eprintln!("open files limit {limit} is below {CLIENTS} clients: skipping");
        return;
    }
    let port = support::free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_locksmith-server"))
        .args(["--port", &port.to_string(), "--loglevel", "warning"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _bin = Binary(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while ping(port).await.is_err() {
        assert!(Instant::now() < deadline, "the binary did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let clients: Vec<_> = (0..CLIENTS).map(|_| tokio::spawn(ping(port))).collect();
    // Every connection stays open until all clients have their reply, so they are all
    // concurrent, and none closes while others still connect: a closed client port can be
    // taken again at once when the host's TIME_WAIT table is full (runs in quick
    // succession), and a new connection on the same four-tuple as one the server has not yet
    // closed is reset by the kernel.
    let all = async {
        let mut pongs = 0;
        let mut open = Vec::with_capacity(CLIENTS);
        for c in clients {
            let (reply, stream) = c.await.unwrap().unwrap();
            if reply == b"+PONG\r\n" {
                pongs += 1;
            }
            open.push(stream);
        }
        pongs
    };
    // A hang guard, not a speed check.
    let pongs = tokio::time::timeout(Duration::from_secs(120), all)
        .await
        .expect("every client answered");
    assert_eq!(pongs, CLIENTS);
}
