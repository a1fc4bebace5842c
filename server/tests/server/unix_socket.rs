//! `unixsocket`: the node listens on a Unix socket beside its TCP port, and shows its clients
//! as Redis does (`addr=<path>:0`, flag `U`), compared with real Redis where present.

use locksmith_testkit as support;

use locksmith_server::{Server, ServerHandle};
use redis::aio::MultiplexedConnection;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use support::RealRedis;

/// A fresh directory for this test's sockets.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "locksmith-unix-{name}-{}-{}",
        std::process::id(),
        support::free_port()
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn url(path: &Path) -> String {
    format!("unix://{}", path.display())
}

/// `args`' reply as text (a string, a status or an integer).
async fn run(con: &mut MultiplexedConnection, args: &[&str]) -> String {
    support::cmd(args)
        .query_async::<String>(con)
        .await
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// `CONFIG GET name`'s reply.
async fn config_get(con: &mut MultiplexedConnection, name: &str) -> Vec<String> {
    support::cmd(&["CONFIG", "GET", name])
        .query_async(con)
        .await
        .expect("CONFIG GET")
}

async fn start(path: &Path, perm: &str) -> ServerHandle {
    Server::builder()
        .config_set("unixsocket", path.display().to_string())
        .config_set("unixsocketperm", perm)
        .start()
        .await
        .expect("start with a Unix socket")
}

/// `CLIENT INFO` with what differs between two servers and runs (ids, fds, ages, buffer
/// sizes, the path) left out: the fields whose form Redis defines for a Unix client.
fn shape(info: &str, path: &Path) -> String {
    let path = path.display().to_string();
    info.split_whitespace()
        .filter(|f| {
            ["addr=", "laddr=", "flags=", "db=", "cmd=", "user=", "resp="]
                .iter()
                .any(|k| f.starts_with(k))
        })
        .map(|f| f.replace(&path, "<path>"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn a_unix_socket_serves_commands_and_shows_its_clients_as_redis_does() {
    let dir = scratch("serve");
    let ours_path = dir.join("ours.sock");
    let server = start(&ours_path, "700").await;
    let mode = std::fs::metadata(&ours_path)
        .expect("socket file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "unixsocketperm applied");

    let mut ours = support::conn(&url(&ours_path)).await;
    assert_eq!(run(&mut ours, &["SET", "k", "v"]).await, "OK");
    // The TCP port serves the same node.
    let mut tcp = support::conn(&server.url()).await;
    assert_eq!(run(&mut tcp, &["GET", "k"]).await, "v");
    assert_eq!(
        config_get(&mut ours, "unixsocketperm").await,
        ["unixsocketperm", "700"]
    );
    let info = run(&mut ours, &["CLIENT", "INFO"]).await;
    let ours_shape = shape(&info, &ours_path);
    assert_eq!(
        ours_shape,
        "addr=<path>:0 laddr=<path>:0 flags=U db=0 cmd=client|info user=default resp=2"
    );
    // RESET leaves the connection what it is.
    assert_eq!(run(&mut ours, &["RESET"]).await, "RESET");
    let info = run(&mut ours, &["CLIENT", "INFO"]).await;
    assert!(info.contains(" flags=U "), "{info}");

    let real_path = dir.join("real.sock");
    let path_arg = real_path.display().to_string();
    if let Some(_real) =
        RealRedis::start_with(&["--unixsocket", &path_arg, "--unixsocketperm", "700"])
    {
        let mut real = support::conn(&url(&real_path)).await;
        let info = run(&mut real, &["CLIENT", "INFO"]).await;
        assert_eq!(ours_shape, shape(&info, &real_path));
        assert_eq!(
            config_get(&mut real, "unixsocketperm").await,
            ["unixsocketperm", "700"]
        );
    }

    // CLIENT KILL ADDR finds a Unix client by `<path>:0`.
    let mut other = support::conn(&url(&ours_path)).await;
    let addr = format!("{}:0", ours_path.display());
    assert_eq!(
        run(&mut tcp, &["CLIENT", "KILL", "ADDR", &addr]).await,
        "2",
        "both Unix clients"
    );
    let after: redis::RedisResult<String> = support::cmd(&["PING"]).query_async(&mut other).await;
    assert!(after.is_err(), "the killed client's connection is closed");

    // The socket's file goes with the node.
    drop((ours, tcp, other));
    server.shutdown().await;
    assert!(!ours_path.exists(), "socket file removed at shutdown");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_file_left_at_the_path_is_replaced_and_a_bad_mode_refused() {
    let dir = scratch("replace");
    let path = dir.join("s.sock");
    std::fs::write(&path, b"left over").expect("write");
    let server = start(&path, "0").await;
    let mut con = support::conn(&url(&path)).await;
    assert_eq!(run(&mut con, &["PING"]).await, "PONG");
    drop(con);
    server.shutdown().await;

    for (perm, error) in [
        ("789", "argument couldn't be parsed as an octal number"),
        ("1000", "argument must be between 0 and 777 inclusive"),
        ("7a", "argument couldn't be parsed as an octal number"),
        ("-1", "argument must be between 0 and 777 inclusive"),
        (" ", "argument couldn't be parsed as an octal number"),
    ] {
        let started = Server::builder()
            .config_set("unixsocket", path.display().to_string())
            .config_set("unixsocketperm", perm)
            .start()
            .await;
        let Err(e) = started else {
            panic!("{perm}: a bad unixsocketperm is refused");
        };
        assert!(e.to_string().contains(error), "{perm}: {e}");
    }

    // A relative path lies in `dir`, and clients see it as given (as on Redis).
    let server = Server::builder()
        .config_set("dir", dir.display().to_string())
        .config_set("unixsocket", "rel.sock")
        .start()
        .await
        .expect("start with a relative unixsocket");
    let file = dir.join("rel.sock");
    let mut con = support::conn(&url(&file)).await;
    let info = run(&mut con, &["CLIENT", "INFO"]).await;
    assert!(
        info.contains(" addr=rel.sock:0 laddr=rel.sock:0 "),
        "{info}"
    );
    drop(con);
    server.shutdown().await;
    assert!(!file.exists(), "socket file removed at shutdown");

    // A directory that does not exist: the node does not start, with Redis's words.
    let missing = dir.join("no/such/dir/s.sock");
    let started = Server::builder()
        .config_set("unixsocket", missing.display().to_string())
        .start()
        .await;
    let Err(e) = started else {
        panic!("no directory, no socket");
    };
    assert!(
        e.to_string()
            .starts_with("Failed opening Unix socket: bind:"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The modes a watcher saw at `path` until `stop` (bounded in count); returns once the
/// watcher runs.
fn watch_modes(
    path: PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<std::collections::BTreeSet<u32>> {
    let (running, started) = std::sync::mpsc::channel();
    let watcher = std::thread::spawn(move || {
        let mut seen = std::collections::BTreeSet::new();
        let _ = running.send(());
        for _ in 0..5_000_000 {
            if stop.load(std::sync::atomic::Ordering::Acquire) {
                break;
            }
            if let Ok(meta) = std::fs::symlink_metadata(&path) {
                seen.insert(meta.permissions().mode() & 0o777);
            }
        }
        seen
    });
    let _ = started.recv_timeout(std::time::Duration::from_secs(5));
    watcher
}

/// CVE-2023-45145: the socket's file had the umask's mode, and took connections, until
/// `unixsocketperm` was applied after `listen`. Now the path shows only the final mode, from
/// the moment it exists, for a short path (bound in a private directory and renamed into
/// place), a relative one, and one too long for that directory (given its mode before it
/// listens).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_path_never_shows_a_looser_mode_than_unixsocketperm() {
    let dir = scratch("perm");
    let long = "l".repeat(100usize.saturating_sub(dir.as_os_str().len()));
    for round in 0..30 {
        let name = match round % 3 {
            0 => format!("s{round}.sock"),
            1 => format!("{long}{round}"),
            _ => format!("r{round}.sock"),
        };
        let path = dir.join(&name);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = watch_modes(path.clone(), stop.clone());
        let mut builder = Server::builder().config_set("unixsocketperm", "700");
        builder = if round % 3 == 2 {
            builder
                .config_set("dir", dir.display().to_string())
                .config_set("unixsocket", name.clone())
        } else {
            builder.config_set("unixsocket", path.display().to_string())
        };
        let server = builder.start().await.expect("start with a Unix socket");
        let mode = std::fs::metadata(&path).expect("socket file").permissions();
        stop.store(true, std::sync::atomic::Ordering::Release);
        let seen = watcher.join().expect("watcher");
        assert_eq!(mode.mode() & 0o777, 0o700, "{name}");
        assert!(
            seen.iter().all(|m| *m == 0o700),
            "{name}: modes seen {seen:?} (decimal)"
        );
        let mut con = support::conn(&url(&path)).await;
        assert_eq!(run(&mut con, &["PING"]).await, "PONG");
        drop(con);
        server.shutdown().await;
        assert!(!path.exists(), "socket file removed at shutdown");
    }
    // Nothing is left beside the sockets (the private directories are gone).
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("scratch dir")
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What happened to `name` in a directory, as inotify reported it (bounded: what is queued).
#[cfg(target_os = "linux")]
fn inotify_events(
    inotify: &std::os::fd::OwnedFd,
    name: &str,
) -> Vec<rustix::fs::inotify::ReadFlags> {
    use rustix::fs::inotify;
    let mut buf = [std::mem::MaybeUninit::uninit(); 4096];
    let mut reader = inotify::Reader::new(inotify, &mut buf);
    let mut events = Vec::new();
    for _ in 0..10_000 {
        let Ok(event) = reader.next() else {
            break;
        };
        if event
            .file_name()
            .is_some_and(|n| n.to_bytes() == name.as_bytes())
        {
            events.push(event.events());
        }
    }
    events
}

/// CVE-2023-45145, as the kernel sees it: the socket's name appears in its directory by a
/// rename, its mode already final, and is never created there and then changed (the socket
/// took connections in between). inotify reports every step, so no race is needed to see it.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_unix_socket_arrives_at_its_path_by_rename_with_its_mode() {
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    let dir = scratch("inotify");
    let watch = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).unwrap();
    inotify::add_watch(
        &watch,
        &dir,
        WatchFlags::CREATE | WatchFlags::ATTRIB | WatchFlags::MOVED_TO,
    )
    .unwrap();
    let path = dir.join("s.sock");
    let server = start(&path, "700").await;
    let events = inotify_events(&watch, "s.sock");
    assert_eq!(events, [ReadFlags::MOVED_TO], "{events:?}");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
