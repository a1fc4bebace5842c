//! Where requests go: `redis://` URLs (password and database included) or the in-process
//! locksmith server, and one client connection to either (connect, `AUTH`, `SELECT`).

use std::time::Duration;

use bytes::BytesMut;
use locksmith_resp::{Frame, FrameDecoder, Limits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::workload::describe_reply;
use locksmith_resp::encode_command;

/// The name `--target in-process` (and the default target) is given.
pub(crate) const IN_PROCESS_NAME: &str = "locksmith (in-process)";

/// A target as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TargetSpec {
    /// Shown in reports: `NAME` of `NAME=URL`, else the URL.
    pub(crate) name: String,
    /// What to connect to.
    pub(crate) endpoint: Endpoint,
}

/// A target's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// A locksmith server started inside this process on 127.0.0.1:0.
    InProcess,
    /// A `redis://` URL.
    Url(RedisUrl),
}

/// The parts of `redis://[[user]:password@]host[:port][/db]` a benchmark uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedisUrl {
    /// The URL as given.
    pub(crate) text: String,
    /// Host name or address (IPv6 without its brackets).
    pub(crate) host: String,
    /// Port (6379 when absent).
    pub(crate) port: u16,
    /// `AUTH` user, if given with a password.
    pub(crate) user: Option<String>,
    /// `AUTH` password.
    pub(crate) password: Option<String>,
    /// `SELECT` database (0 when absent).
    pub(crate) db: u32,
}

impl TargetSpec {
    /// Parses `--target`: `in-process`, a `redis://` URL, or `NAME=` before either.
    ///
    /// # Errors
    /// A value that is neither.
    pub(crate) fn parse(s: &str) -> Result<TargetSpec, String> {
        let (name, rest) = match s.split_once('=') {
            Some((name, rest)) if !name.contains("://") && !name.is_empty() => {
                (Some(name.to_owned()), rest)
            }
            _ => (None, s),
        };
        if rest == "in-process" {
            return Ok(TargetSpec {
                name: name.unwrap_or_else(|| IN_PROCESS_NAME.into()),
                endpoint: Endpoint::InProcess,
            });
        }
        let url = RedisUrl::parse(rest)?;
        Ok(TargetSpec {
            name: name.unwrap_or_else(|| url.text.clone()),
            endpoint: Endpoint::Url(url),
        })
    }
}

impl RedisUrl {
    /// Parses `redis://[[user]:password@]host[:port][/db]`.
    ///
    /// # Errors
    /// Another scheme, an empty host, a bad port or database number.
    pub(crate) fn parse(s: &str) -> Result<RedisUrl, String> {
        let bad = |why: &str| format!("bad target '{s}': {why} (expected redis://host:port/db)");
        let rest = s
            .strip_prefix("redis://")
            .ok_or_else(|| bad("not a redis:// URL or in-process"))?;
        let (authority, path) = match rest.split_once('/') {
            Some((a, p)) => (a, p),
            None => (rest, ""),
        };
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => match u.split_once(':') {
                Some((user, pass)) => (
                    (!user.is_empty()).then(|| user.to_owned()),
                    Some(pass.to_owned()),
                ),
                None => (None, Some(u.to_owned())),
            },
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, tail) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
            (h, tail.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            Some(p) => p.parse().map_err(|_| bad("bad port"))?,
            None => 6379,
        };
        let db = match path.trim_end_matches('/') {
            "" => 0,
            d => d.parse().map_err(|_| bad("bad database number"))?,
        };
        Ok(RedisUrl {
            text: s.to_owned(),
            host: host.to_owned(),
            port,
            user,
            password,
            db,
        })
    }
}

/// Where to connect and what to send first.
#[derive(Debug, Clone)]
pub(crate) struct ConnectInfo {
    /// `host:port` (or `[v6]:port`).
    pub(crate) addr: String,
    /// `AUTH` user.
    pub(crate) user: Option<String>,
    /// `AUTH` password.
    pub(crate) password: Option<String>,
    /// `SELECT` database.
    pub(crate) db: u32,
}

impl ConnectInfo {
    /// For a URL.
    pub(crate) fn from_url(url: &RedisUrl) -> ConnectInfo {
        let addr = if url.host.contains(':') {
            format!("[{}]:{}", url.host, url.port)
        } else {
            format!("{}:{}", url.host, url.port)
        };
        ConnectInfo {
            addr,
            user: url.user.clone(),
            password: url.password.clone(),
            db: url.db,
        }
    }

    /// For a local address without password.
    pub(crate) fn from_addr(addr: std::net::SocketAddr) -> ConnectInfo {
        ConnectInfo {
            addr: addr.to_string(),
            user: None,
            password: None,
            db: 0,
        }
    }
}

/// Why talking to a target failed.
#[derive(Debug)]
pub(crate) enum ConnError {
    /// No reply within the timeout.
    Timeout,
    /// The socket failed or the peer closed it.
    Io(String),
    /// The peer sent something that is not RESP.
    Protocol(String),
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Timeout => f.write_str("no reply within the timeout"),
            ConnError::Io(e) => write!(f, "connection error: {e}"),
            ConnError::Protocol(e) => write!(f, "protocol error: {e}"),
        }
    }
}

/// A RESP2 connection: writes whole batches, decodes replies one at a time.
pub(crate) struct Conn {
    stream: TcpStream,
    read: BytesMut,
    decoder: FrameDecoder,
}

impl Conn {
    /// Connects, then sends `AUTH` and `SELECT` as the target asks.
    ///
    /// # Errors
    /// When the connection fails, or `AUTH`/`SELECT` is refused.
    pub(crate) async fn open(info: &ConnectInfo, timeout: Duration) -> Result<Conn, String> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(&info.addr))
            .await
            .map_err(|_| format!("connecting to {}: timed out", info.addr))?
            .map_err(|e| format!("connecting to {}: {e}", info.addr))?;
        let _ = stream.set_nodelay(true);
        let mut conn = Conn {
            stream,
            read: BytesMut::with_capacity(16 * 1024),
            decoder: FrameDecoder::new(Limits::default()),
        };
        if let Some(password) = &info.password {
            let mut args: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(user) = &info.user {
                args.push(user.as_bytes());
            }
            args.push(password.as_bytes());
            conn.expect_ok(&args, timeout).await?;
        }
        if info.db != 0 {
            let db = info.db.to_string();
            conn.expect_ok(&[b"SELECT", db.as_bytes()], timeout).await?;
        }
        Ok(conn)
    }

    async fn expect_ok(&mut self, args: &[&[u8]], timeout: Duration) -> Result<(), String> {
        let name = String::from_utf8_lossy(args.first().copied().unwrap_or_default());
        match self.call(args, timeout).await {
            Ok(Frame::Simple(_)) => Ok(()),
            Ok(other) => Err(format!("{name}: {}", describe_reply(&other))),
            Err(e) => Err(format!("{name}: {e}")),
        }
    }

    /// Sends one command and waits for its reply.
    ///
    /// # Errors
    /// Timeout, I/O or protocol errors (an error reply is a reply).
    pub(crate) async fn call(
        &mut self,
        args: &[&[u8]],
        timeout: Duration,
    ) -> Result<Frame, ConnError> {
        let mut out = BytesMut::new();
        encode_command(args, &mut out);
        self.send(&out).await?;
        let deadline = tokio::time::Instant::now() + timeout;
        self.reply(deadline).await
    }

    /// Writes a whole encoded batch.
    ///
    /// # Errors
    /// I/O errors.
    pub(crate) async fn send(&mut self, bytes: &[u8]) -> Result<(), ConnError> {
        self.stream
            .write_all(bytes)
            .await
            .map_err(|e| ConnError::Io(e.to_string()))
    }

    /// The next reply, read before `deadline`.
    ///
    /// # Errors
    /// Timeout, I/O (including the peer closing) or protocol errors.
    pub(crate) async fn reply(
        &mut self,
        deadline: tokio::time::Instant,
    ) -> Result<Frame, ConnError> {
        loop {
            match self.decoder.decode(&mut self.read) {
                Ok(Some(frame)) => return Ok(frame),
                Ok(None) => {}
                Err(e) => return Err(ConnError::Protocol(e.to_string())),
            }
            let read = tokio::time::timeout_at(deadline, self.stream.read_buf(&mut self.read));
            match read.await {
                Err(_) => return Err(ConnError::Timeout),
                Ok(Ok(0)) => return Err(ConnError::Io("closed by the server".into())),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(ConnError::Io(e.to_string())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_with_password_port_and_database_parse() {
        let u = RedisUrl::parse("redis://:secret@127.0.0.1:6380/2").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.password.as_deref(), u.user, u.db),
            ("127.0.0.1", 6380, Some("secret"), None, 2)
        );
        let u = RedisUrl::parse("redis://bench:pw@[::1]").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.user.as_deref()),
            ("::1", 6379, Some("bench"))
        );
        assert!(RedisUrl::parse("http://x").is_err());
        assert!(RedisUrl::parse("redis://h:notaport").is_err());
    }

    #[test]
    fn targets_take_an_optional_name() {
        let t = TargetSpec::parse("redis=redis://127.0.0.1:7000/").unwrap();
        assert_eq!(t.name, "redis");
        let t = TargetSpec::parse("redis://127.0.0.1:7000/").unwrap();
        assert_eq!(t.name, "redis://127.0.0.1:7000/");
        assert_eq!(
            TargetSpec::parse("in-process").unwrap().endpoint,
            Endpoint::InProcess
        );
    }
}
