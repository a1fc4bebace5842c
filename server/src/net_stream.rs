//! A socket the node's listeners accepted, TCP or Unix (`unixsocket`), read and written on
//! readiness: both kinds take the same path through the connection and the write round.

use bytes::BufMut;
use std::io;
use tokio::io::Interest;
use tokio::net::{TcpStream, UnixStream};

/// An accepted socket.
#[derive(Debug)]
pub(crate) enum NetStream {
    /// From the TCP listener.
    Tcp(TcpStream),
    /// From the Unix socket listener.
    Unix(UnixStream),
}

impl NetStream {
    /// Waits until the socket may be read (it may still turn out to have nothing).
    pub(crate) async fn readable(&self) -> io::Result<()> {
        match self {
            NetStream::Tcp(s) => s.readable().await,
            NetStream::Unix(s) => s.readable().await,
        }
    }

    /// Waits until the socket may be written.
    pub(crate) async fn writable(&self) -> io::Result<()> {
        match self {
            NetStream::Tcp(s) => s.writable().await,
            NetStream::Unix(s) => s.writable().await,
        }
    }

    /// Reads what is there into `buf` without waiting (`WouldBlock` when nothing is).
    pub(crate) fn try_read_buf<B: BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        match self {
            NetStream::Tcp(s) => s.try_read_buf(buf),
            NetStream::Unix(s) => s.try_read_buf(buf),
        }
    }

    /// Writes what the socket takes of `buf` without waiting.
    pub(crate) fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            NetStream::Tcp(s) => s.try_write(buf),
            NetStream::Unix(s) => s.try_write(buf),
        }
    }

    /// Runs `f` (a non-blocking operation on the socket); a `WouldBlock` from it clears the
    /// readiness `interest` it consumed, as tokio's own reads do.
    pub(crate) fn try_io<R>(
        &self,
        interest: Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        match self {
            NetStream::Tcp(s) => s.try_io(interest, f),
            NetStream::Unix(s) => s.try_io(interest, f),
        }
    }
}

/// The listener of `unixsocket`: its socket file is made when it is bound and removed when
/// it is dropped (the node stopped), as Redis removes it at shutdown.
#[derive(Debug)]
pub(crate) struct UnixSocketListener {
    listener: tokio::net::UnixListener,
    /// The path as configured (what `CLIENT LIST` shows).
    path: std::sync::Arc<str>,
    /// Where the socket's file is (a relative path is taken in `dir`, as Redis takes it after
    /// changing into `dir`).
    file: std::path::PathBuf,
}

impl UnixSocketListener {
    /// Listens at `path` (relative to `dir` when not absolute and `dir` is set), replacing any
    /// file there (Redis unlinks it first), with the socket's file given `mode` when not 0
    /// (`unixsocketperm`).
    ///
    /// # Errors
    ///
    /// When the socket cannot be bound there, with Redis's words.
    pub(crate) fn bind(path: &str, dir: &str, mode: u32) -> io::Result<Self> {
        use std::os::unix::fs::PermissionsExt;
        let failed = |step: &str, e: io::Error| {
            io::Error::new(e.kind(), format!("Failed opening Unix socket: {step}: {e}"))
        };
        let file = crate::cmd::acl::resolve_path(dir, path);
        // As Redis: whatever file is there goes (a directory stays, and bind then fails).
        let _ = std::fs::remove_file(&file);
        let listener = tokio::net::UnixListener::bind(&file).map_err(|e| failed("bind", e))?;
        if mode != 0 {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode))
                .map_err(|e| failed("chmod", e))?;
        }
        Ok(Self {
            listener,
            path: path.into(),
            file,
        })
    }

    /// The socket's path.
    pub(crate) fn path(&self) -> &std::sync::Arc<str> {
        &self.path
    }

    /// The next connection.
    pub(crate) async fn accept(&self) -> io::Result<UnixStream> {
        self.listener.accept().await.map(|(stream, _)| stream)
    }
}

impl Drop for UnixSocketListener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}
