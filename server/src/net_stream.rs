//! A socket the node's listeners accepted, TCP or Unix (`unixsocket`), read and written on
//! readiness: both kinds take the same path through the connection and the write round.

use bytes::BufMut;
use std::io;
use tokio::io::Interest;
use tokio::net::{TcpStream, UnixListener, UnixStream};

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
    listener: UnixListener,
    /// The path as configured (what `CLIENT LIST` shows).
    path: std::sync::Arc<str>,
    /// Where the socket's file is (a relative path is taken in `dir`, as Redis takes it after
    /// changing into `dir`).
    file: std::path::PathBuf,
}

impl UnixSocketListener {
    /// Listens at `path` (relative to `dir` when not absolute and `dir` is set), replacing any
    /// file there (Redis unlinks it first), with the socket's file given `mode` when not 0
    /// (`unixsocketperm`) before anyone can connect, and a queue of `backlog` connections
    /// (`tcp-backlog`, as Redis's `anetUnixServer` takes it).
    ///
    /// # Errors
    ///
    /// When the socket cannot be bound there, with Redis's words.
    pub(crate) fn bind(path: &str, dir: &str, mode: u32, backlog: u32) -> io::Result<Self> {
        let file = crate::cmd::acl::resolve_path(dir, path);
        // As Redis: whatever file is there goes (a directory stays, and bind then fails).
        let _ = std::fs::remove_file(&file);
        let listener = if mode == 0 {
            let socket = tokio::net::UnixSocket::new_stream().map_err(|e| failed("socket", e))?;
            socket.bind(&file).map_err(|e| failed("bind", e))?;
            socket.listen(backlog).map_err(|e| failed("listen", e))?
        } else {
            bind_with_mode(&file, mode, backlog)?
        };
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

/// `Failed opening Unix socket: <step>: <error>`, Redis's words.
fn failed(step: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("Failed opening Unix socket: {step}: {e}"))
}

/// The room in `sockaddr_un.sun_path` for a path and its closing NUL on Linux.
const SUN_PATH_LEN: usize = 108;

/// Tells apart the private directories of sockets bound at once in one process.
static PRIVATE_DIRS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Binds a listening socket at `file` whose file has `mode` from the moment the path exists
/// (CVE-2023-45145: binding, listening and then setting the mode let any local user connect
/// in between, whatever `unixsocketperm` said). The socket is bound in a new directory next to
/// `file` that only this user may enter, given its mode there, and renamed into place: the
/// path never shows a looser mode. The umask is left alone (it is the process's, and other
/// threads make files). When the private directory's path would not fit a socket address,
/// the socket is bound at `file` itself and given its mode before it listens: the file then
/// has the umask's mode for a moment, but refuses every connection until its mode is final.
fn bind_with_mode(file: &std::path::Path, mode: u32, backlog: u32) -> io::Result<UnixListener> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let chmod = |at: &std::path::Path| {
        std::fs::set_permissions(at, std::fs::Permissions::from_mode(mode))
            .map_err(|e| failed("chmod", e))
    };
    let socket = tokio::net::UnixSocket::new_stream().map_err(|e| failed("socket", e))?;
    let parent = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => std::path::Path::new("."),
    };
    let seq = PRIVATE_DIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let private = parent.join(format!(".locksmith-{}-{seq}", std::process::id()));
    let inner = private.join("s");
    if inner.as_os_str().len() >= SUN_PATH_LEN {
        socket.bind(file).map_err(|e| failed("bind", e))?;
        chmod(file)?;
        return socket.listen(backlog).map_err(|e| failed("listen", e));
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&private)
        .map_err(|e| failed("bind", e))?;
    let listener = socket
        .bind(&inner)
        .map_err(|e| failed("bind", e))
        .and_then(|()| chmod(&inner))
        .and_then(|()| socket.listen(backlog).map_err(|e| failed("listen", e)))
        .and_then(|listener| {
            std::fs::rename(&inner, file).map_err(|e| failed("bind", e))?;
            Ok(listener)
        });
    if listener.is_err() {
        let _ = std::fs::remove_file(&inner);
    }
    let _ = std::fs::remove_dir(&private);
    listener
}
