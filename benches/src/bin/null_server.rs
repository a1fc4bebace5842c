//! A server that answers every RESP request with `+OK` and does nothing else: the ceiling a
//! `redis-benchmark` run can reach on this machine, its client and the kernel's socket work
//! included, with no server work at all (see `benches/plain.sh`).
//!
//! `null_server --port PORT` (127.0.0.1) or `null_server --unixsocket PATH`. One thread, one
//! `epoll` loop as in Redis: each readable socket is read once, and one reply per request
//! read is written back. A request is counted at each line that starts with `*`, which is
//! what `redis-benchmark`'s requests look like; it is not a RESP parser.

use mio::net::{TcpListener, UnixListener};
use mio::{Events, Interest, Poll, Token};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};

const LISTENER: Token = Token(0);
const REPLY: &[u8] = b"+OK\r\n";

/// A connection and whether its next byte starts a line.
struct Conn<S> {
    stream: S,
    at_line_start: bool,
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("--port"), Some(port)) => {
            let addr = format!("127.0.0.1:{port}")
                .parse()
                .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e))?;
            serve(TcpListener::bind(addr)?, |l: &mut TcpListener| {
                l.accept().map(|(s, _)| s)
            })
        }
        (Some("--unixsocket"), Some(path)) => {
            let _ = std::fs::remove_file(path);
            serve(UnixListener::bind(path)?, |l: &mut UnixListener| {
                l.accept().map(|(s, _)| s)
            })
        }
        _ => {
            eprintln!("usage: null_server --port PORT | --unixsocket PATH");
            std::process::exit(2);
        }
    }
}

fn serve<L, S>(
    mut listener: L,
    accept: impl Fn(&mut L) -> std::io::Result<S>,
) -> std::io::Result<()>
where
    L: mio::event::Source,
    S: mio::event::Source + Read + Write,
{
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut events = Events::with_capacity(256);
    let mut conns: HashMap<Token, Conn<S>> = HashMap::new();
    let mut next = 1;
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::with_capacity(64 * 1024);
    loop {
        poll.poll(&mut events, None)?;
        for event in &events {
            if event.token() == LISTENER {
                while let Ok(mut stream) = accept(&mut listener) {
                    let token = Token(next);
                    next += 1;
                    poll.registry()
                        .register(&mut stream, token, Interest::READABLE)?;
                    conns.insert(
                        token,
                        Conn {
                            stream,
                            at_line_start: true,
                        },
                    );
                }
                continue;
            }
            let Some(conn) = conns.get_mut(&event.token()) else {
                continue;
            };
            let n = match conn.stream.read(&mut buf) {
                Ok(0) => None,
                Ok(n) => Some(n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                Err(_) => None,
            };
            let Some(n) = n else {
                if let Some(mut gone) = conns.remove(&event.token()) {
                    let _ = poll.registry().deregister(&mut gone.stream);
                }
                continue;
            };
            out.clear();
            for &b in &buf[..n] {
                if conn.at_line_start && b == b'*' {
                    out.extend_from_slice(REPLY);
                }
                conn.at_line_start = b == b'\n';
            }
            // Replies are a few bytes per request: the socket's buffer takes them at once,
            // as it does Redis's; a short write drops the rest (a benchmark would stall).
            let _ = conn.stream.write(&out);
        }
    }
}
