//! Connections a node opens to other servers: `MIGRATE`'s cached sockets (Redis's
//! `migrate_cached_sockets`), one per `host:port`, kept for reuse and closed after
//! [`IDLE_MS`] without use or when a transfer over them fails.
//!
//! I/O on them is blocking with the command's timeout, as Redis's `MIGRATE` is: the node serves
//! nothing else meanwhile, but through [`run_blocking`] the runtime's other tasks do (a target
//! on the same multi-thread runtime answers). A target on the same single-threaded runtime as
//! the node cannot answer, and the command fails with Redis's `IOERR` after its timeout.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Most sockets kept (Redis's `MIGRATE_SOCKET_CACHE_ITEMS`); one more drops an arbitrary one.
const MAX_SOCKETS: usize = 64;
/// A socket unused this long is closed (Redis's `MIGRATE_SOCKET_CACHE_TTL`, 10 s).
pub(crate) const IDLE_MS: u64 = 10_000;
/// Longest reply line read (Redis reads into 1024-byte buffers).
const MAX_LINE: usize = 1024;

/// One cached connection.
#[derive(Debug)]
pub(crate) struct Cached {
    stream: TcpStream,
    /// The database the target last selected for us (`None`: send `SELECT`).
    pub(crate) last_db: Option<i64>,
    last_use_ms: u64,
}

impl Cached {
    /// Writes all of `bytes` within `timeout` per write.
    pub(crate) fn write_all(&mut self, bytes: &[u8], timeout: Duration) -> std::io::Result<()> {
        self.stream.set_write_timeout(Some(timeout))?;
        self.stream.write_all(bytes)
    }

    /// Reads one reply line (without its line end), within `timeout` per read.
    pub(crate) fn read_line(&mut self, timeout: Duration) -> std::io::Result<Vec<u8>> {
        self.stream.set_read_timeout(Some(timeout))?;
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            if self.stream.read(&mut byte)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            match byte[0] {
                b'\n' => break,
                b => line.push(b),
            }
            if line.len() > MAX_LINE {
                return Err(std::io::ErrorKind::InvalidData.into());
            }
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(line)
    }
}

/// The cache, by `host:port`.
#[derive(Debug, Default)]
pub(crate) struct MigrateSockets {
    sockets: HashMap<Vec<u8>, Cached>,
}

/// The cache key of `host` and `port`.
fn name(host: &[u8], port: &[u8]) -> Vec<u8> {
    [host, b":", port].concat()
}

impl MigrateSockets {
    /// The cached connection to `host:port`, or a new one made within `timeout`; the error
    /// when it cannot be made (a port that is not a number reads as 0, as Redis's `atoi`).
    pub(crate) fn get(
        &mut self,
        host: &[u8],
        port: &[u8],
        timeout: Duration,
        now_ms: u64,
    ) -> std::io::Result<&mut Cached> {
        let key = name(host, port);
        if !self.sockets.contains_key(&key) {
            if self.sockets.len() >= MAX_SOCKETS {
                let drop = self.sockets.keys().next().cloned();
                if let Some(drop) = drop {
                    self.sockets.remove(&drop);
                }
            }
            let stream = connect(host, port, timeout)?;
            self.sockets.insert(
                key.clone(),
                Cached {
                    stream,
                    last_db: None,
                    last_use_ms: now_ms,
                },
            );
        }
        let cached = self
            .sockets
            .get_mut(&key)
            .ok_or(std::io::ErrorKind::NotFound)?;
        cached.last_use_ms = now_ms;
        Ok(cached)
    }

    /// Closes the connection to `host:port` (after an error: the next use reconnects).
    pub(crate) fn close(&mut self, host: &[u8], port: &[u8]) {
        self.sockets.remove(&name(host, port));
    }

    /// Closes the connections unused for more than [`IDLE_MS`].
    pub(crate) fn close_idle(&mut self, now_ms: u64) {
        self.sockets
            .retain(|_, c| now_ms.saturating_sub(c.last_use_ms) <= IDLE_MS);
    }

    /// Connections open (`INFO`'s `migrate_cached_sockets`).
    pub(crate) fn len(&self) -> usize {
        self.sockets.len()
    }
}

/// Runs `f`, which blocks this thread (a `MIGRATE` transfer, `DEBUG SLEEP`), on a tokio
/// worker of a multi-thread runtime through [`tokio::task::block_in_place`]: the worker's
/// queued tasks and its drivers move to another thread, so the rest of the runtime (other
/// servers in the process, this node's timers) keeps running meanwhile. Elsewhere `f` just
/// runs.
pub(crate) fn run_blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// A TCP connection to `host:port` made within `timeout`, with Nagle off.
fn connect(host: &[u8], port: &[u8], timeout: Duration) -> std::io::Result<TcpStream> {
    let host = std::str::from_utf8(host).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    let port = std::str::from_utf8(port)
        .ok()
        .and_then(|p| p.trim().parse::<u16>().ok())
        .unwrap_or(0);
    let addr = (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or(std::io::ErrorKind::AddrNotAvailable)?;
    let stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn sockets_are_reused_then_closed_when_idle() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port().to_string();
        let mut cache = MigrateSockets::default();
        let timeout = Duration::from_secs(5);
        let first = cache.get(b"127.0.0.1", port.as_bytes(), timeout, 0);
        assert!(first.is_ok());
        let (mut server, _) = listener.accept().unwrap();
        let cached = cache
            .get(b"127.0.0.1", port.as_bytes(), timeout, 5_000)
            .unwrap();
        cached.write_all(b"PING\r\n", timeout).unwrap();
        let mut got = [0u8; 6];
        server.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"PING\r\n");
        server.write_all(b"+PONG\r\n").unwrap();
        assert_eq!(cached.read_line(timeout).unwrap(), b"+PONG");
        assert_eq!(cache.len(), 1);
        cache.close_idle(5_000 + IDLE_MS);
        assert_eq!(cache.len(), 1);
        cache.close_idle(5_001 + IDLE_MS);
        assert_eq!(cache.len(), 0);
        assert!(cache.get(b"127.0.0.1", b"notaport", timeout, 0).is_err());
    }
}
