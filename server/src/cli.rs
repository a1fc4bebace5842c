//! What the command-line binaries share (`locksmith-server`, and `locksmith-harness` for
//! topologies): redis-server's argument forms, logging, the readiness line, the port file,
//! signals and the open-files limit. Behind the `cli` feature.

use std::time::Duration;

/// How long a signal's graceful shutdown may take before the process exits regardless (a
/// script that never yields, `DEBUG SLEEP` or a paused topology node must not keep it alive).
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(700);

/// A memory size with redis-server's units (`1gb`, `256mb`, bytes), for clap.
///
/// # Errors
/// When `s` is not a memory size.
pub fn memory_size(s: &str) -> Result<u64, String> {
    crate::parse_memory_size(s)
        .ok_or_else(|| "argument must be a memory value (bytes, or with kb, mb, gb)".into())
}

/// redis-server's `yes`/`no` booleans, for clap.
///
/// # Errors
/// When `s` is neither.
pub fn yes_no(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'".into()),
    }
}

/// Logs to stderr at `level`: redis-server's names (debug, verbose, notice, warning) or a
/// tracing filter.
pub fn init_logging(level: &str) {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = match level {
        "debug" => "debug",
        "verbose" | "notice" => "info",
        "warning" => "warn",
        other => other,
    };
    // `Targets` takes a tracing filter's `target=level` directives; unlike `EnvFilter` it
    // needs no regex engine (span-field filters are not supported).
    let targets = filter.parse::<Targets>().unwrap_or_else(|e| {
        eprintln!("ignoring log level '{level}' ({e}): logging at notice");
        Targets::new().with_default(tracing::Level::INFO)
    });
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(targets)
        .init();
}

/// Announces readiness once the server accepts connections: logs it, writes the port to
/// `port_file` if given (atomically), then prints `ready <host>:<port>` on stdout, flushed (the
/// documented, machine-readable line a script waits for; with `--port 0` it tells the port
/// picked).
///
/// # Errors
/// When the port file cannot be written.
pub fn announce_ready(
    addr: std::net::SocketAddr,
    port_file: Option<&std::path::Path>,
) -> std::io::Result<()> {
    use std::io::Write;
    tracing::info!(%addr, "Ready to accept connections tcp");
    if let Some(path) = port_file {
        write_port_file(path, addr.port())?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready {addr}")?;
    out.flush()
}

/// Runs a binary: raises the open-files limit, installs the signal handlers, then runs
/// `serve` (given the signal receiver of [`watch_signals`]) on a multi-thread runtime of
/// `workers` threads — multi-thread even with one, so a long script hands the worker's other
/// connections to a new thread and they get BUSY. An error is printed as `name: error` and the
/// process exits with code 1, else 0. It exits rather than returns: dropping the runtime would
/// wait for a script still running on its blocking pool.
pub fn run<F, Fut>(name: &str, workers: usize, serve: F) -> !
where
    F: FnOnce(tokio::sync::oneshot::Receiver<&'static str>) -> Fut,
    Fut: std::future::Future<Output = Result<(), Box<dyn std::error::Error>>>,
{
    raise_open_files_limit();
    let served = watch_signals()
        .map_err(|e| format!("cannot install signal handlers: {e}").into())
        .and_then(|stop| {
            crate::server::runtime_builder(workers.max(1))
                .enable_all()
                .build()
                .map_err(Into::into)
                .and_then(|runtime| runtime.block_on(serve(stop)))
        });
    let code = match served {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{name}: {e}");
            1
        }
    };
    std::process::exit(code)
}

/// Awaits a graceful shutdown for at most [`SHUTDOWN_GRACE`], logging when it did not finish.
pub async fn shut_down_within_grace(shutdown: impl std::future::Future<Output = ()>) {
    if tokio::time::timeout(SHUTDOWN_GRACE, shutdown)
        .await
        .is_err()
    {
        tracing::warn!("the graceful shutdown did not finish in time, exiting now");
    }
}

/// Writes `port` to `path` through a temporary file renamed over it, so a reader never sees a
/// partial number.
fn write_port_file(path: &std::path::Path, port: u16) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "port".into());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, format!("{port}\n"))?;
    std::fs::rename(&tmp, path)
}

/// Raises the soft limit on open files to the hard one, as redis-server does at start
/// (`adjustOpenFilesLimit`), so 10 000 clients (the default `maxclients`) fit under a shell's
/// usual soft limit of 1024.
#[allow(unsafe_code)]
pub fn raise_open_files_limit() {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit only read and write the struct passed in.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0
                && limit.rlim_cur < limit.rlim_max
            {
                limit.rlim_cur = limit.rlim_max;
                let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
        }
    }
}

/// Handles SIGTERM and SIGINT on a thread of its own, outside the server's runtime, so that a
/// signal is seen whatever the server's threads are doing. The returned receiver resolves on
/// the first signal (with its name); the process then exits with code 0 after
/// [`SHUTDOWN_GRACE`] at the latest.
///
/// # Errors
/// When the handlers cannot be installed.
pub fn watch_signals() -> std::io::Result<tokio::sync::oneshot::Receiver<&'static str>> {
    use tokio::signal::unix::{signal, SignalKind};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Registered here, before the server starts, so no signal arrives unhandled.
    let (mut term, mut int) = {
        let _entered = runtime.enter();
        (
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
        )
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let name = runtime.block_on(async {
                tokio::select! {
                    _ = term.recv() => "SIGTERM",
                    _ = int.recv() => "SIGINT",
                }
            });
            let _ = tx.send(name);
            std::thread::sleep(SHUTDOWN_GRACE);
            tracing::warn!("{name}: the graceful shutdown did not finish in time, exiting now");
            std::process::exit(0);
        })?;
    Ok(rx)
}
