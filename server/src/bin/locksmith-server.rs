//! `locksmith-server`: the Redis-compatible server as a binary. Flags mirror redis-server's.

use clap::Parser;
use locksmith_server::{Config, EnableCommand, Server, Topology};
use std::net::IpAddr;
use std::time::Duration;

/// The server allocates and frees many small buffers per request (arguments, replies, Lua
/// tables) from several threads; mimalloc's thread-local free lists do that with fewer atomic
/// operations than glibc's arenas (see BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A Redis-compatible in-memory server that runs Redisson's Lua lock scripts as Redis does.
#[derive(Debug, Parser)]
#[command(name = "locksmith-server", version)]
struct Args {
    /// TCP port to listen on (0: a free port, reported on the `ready` line).
    #[arg(long, default_value_t = 6379)]
    port: u16,
    /// Once the server accepts connections, write its port (a number and a newline) to this
    /// file, atomically (a temporary file renamed into place).
    #[arg(long = "port-file")]
    port_file: Option<std::path::PathBuf>,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Require clients to AUTH with this password.
    #[arg(long)]
    requirepass: Option<String>,
    /// The listen backlog (redis-server's tcp-backlog; the kernel caps it at somaxconn).
    #[arg(long = "tcp-backlog", default_value_t = 511)]
    tcp_backlog: u32,
    /// Number of databases.
    #[arg(long, default_value_t = 16)]
    databases: usize,
    /// Log level: debug, verbose, notice or warning (redis-server's names), or a tracing filter.
    #[arg(long, default_value = "notice")]
    loglevel: String,
    /// Milliseconds a script may run before other clients get BUSY.
    #[arg(
        long = "busy-reply-threshold",
        alias = "lua-time-limit",
        default_value_t = 5000
    )]
    busy_reply_threshold: u64,
    /// Threads serving connections. Commands run one at a time under the node's lock, as in
    /// Redis's single main thread; a second thread mostly adds hand-offs between threads, and
    /// on a small machine shared with the clients one thread was faster (see BENCHMARKS.md).
    #[arg(long = "worker-threads", default_value_t = 1)]
    worker_threads: usize,
    /// Seed for random choices (logged at start).
    #[arg(long)]
    seed: Option<u64>,
    /// Start a harness topology: one master with this many replicas behind a front address
    /// on --port (each node on its own port; LOCKSMITH.* admin commands enabled).
    #[arg(long, default_value_t = 0)]
    replicas: usize,
    /// Start a harness topology of this many independent masters (RedLock).
    #[arg(long, default_value_t = 1)]
    masters: usize,
    /// Replication delay of every link, in milliseconds.
    #[arg(long = "replication-delay-ms", default_value_t = 0)]
    replication_delay_ms: u64,
    /// Random extra replication delay, up to this many milliseconds (seeded).
    #[arg(long = "replication-jitter-ms", default_value_t = 0)]
    replication_jitter_ms: u64,
    /// Start a Sentinel endpoint on this port (0 = a free port).
    #[arg(long = "sentinel-port")]
    sentinel_port: Option<u16>,
    /// The master name the Sentinel endpoint reports.
    #[arg(long = "master-name", default_value = "mymaster")]
    master_name: String,
    /// Ports of the topology's nodes: this one and the next ones (default: free ports).
    #[arg(long = "node-port")]
    node_port: Option<u16>,
    /// Cluster mode (`yes`|`no`). Alone: a one-node Redis Cluster serving all 16384 slots.
    /// With --masters N: a topology of N cluster shards (each with --replicas replicas).
    #[arg(
        long = "cluster-enabled",
        default_value = "no",
        value_parser = yes_no,
        action = clap::ArgAction::Set
    )]
    cluster_enabled: bool,
    /// Who may run DEBUG: no (the default, as Redis 7), yes, or local (loopback clients).
    #[arg(long = "enable-debug-command", default_value = "no")]
    enable_debug_command: EnableCommand,
    /// The most memory the Lua interpreter may hold while a script runs (`1gb`, `256mb`, or
    /// bytes; 0 = no bound). A script past it is stopped with an error; Redis has no bound.
    #[arg(long = "lua-memory-limit", default_value = "1gb", value_parser = memory_size)]
    lua_memory_limit: u64,
    /// Every other redis-server parameter, given as `--name value` (`--maxmemory 10mb`,
    /// `--maxmemory-policy allkeys-lru`, `--save ''`): set as `CONFIG SET` would at start.
    #[arg(skip)]
    settings: Vec<(String, String)>,
}

/// How long a signal's graceful shutdown may take before the process exits regardless (a
/// script that never yields, `DEBUG SLEEP` or a paused topology node must not keep it alive).
const SHUTDOWN_GRACE: Duration = Duration::from_millis(700);

/// A memory size with redis-server's units.
fn memory_size(s: &str) -> Result<u64, String> {
    locksmith_server::parse_memory_size(s)
        .ok_or_else(|| "argument must be a memory value (bytes, or with kb, mb, gb)".into())
}

/// redis-server's `yes`/`no` booleans.
fn yes_no(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'".into()),
    }
}

/// Starts a harness topology and prints where everything listens.
#[allow(clippy::print_stdout)]
async fn run_topology(args: &Args) -> Result<Topology, Box<dyn std::error::Error>> {
    let mut builder = Topology::builder();
    builder
        .masters(args.masters)
        .replicas(args.replicas)
        .replication_delay(Duration::from_millis(args.replication_delay_ms))
        .replication_jitter(Duration::from_millis(args.replication_jitter_ms))
        .master_name(args.master_name.clone())
        .front_port(args.port)
        .bind(args.bind);
    if let Some(seed) = args.seed {
        builder.seed(seed);
    }
    if let Some(password) = &args.requirepass {
        builder.requirepass(password.clone());
    }
    if let Some(port) = args.sentinel_port {
        builder.sentinel(port);
    }
    if let Some(port) = args.node_port {
        builder.node_ports(port);
    }
    if args.cluster_enabled {
        builder.cluster(args.masters);
    }
    let topology = builder.build().await?;
    println!("seed {}", topology.seed());
    println!(
        "front {} (routes to the current master)",
        topology.front_addr()
    );
    for info in topology.nodes_info() {
        println!("node {} {} {:?}", info.id, info.addr, info.role);
    }
    if let Some(addr) = topology.sentinel_addr() {
        println!("sentinel {addr} (master name {})", topology.master_name());
    }
    Ok(topology)
}

/// Prints the readiness line on stdout, flushed: `ready <host>:<port>` (the documented,
/// machine-readable line a script waits for; with `--port 0` it tells the port picked).
fn announce_ready(addr: std::net::SocketAddr) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ready {addr}");
    let _ = out.flush();
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

fn tracing_filter(level: &str) -> String {
    match level {
        "debug" => "debug",
        "verbose" => "info",
        "notice" => "info",
        "warning" => "warn",
        other => other,
    }
    .to_string()
}

/// Splits the command line into what clap parses and the other `CONFIG` parameters given as
/// redis-server takes them (`--maxmemory 10mb --maxmemory-policy allkeys-lru`), in order.
fn split_config_parameters(argv: Vec<String>) -> (Vec<String>, Vec<(String, String)>) {
    use clap::CommandFactory;
    let command = Args::command();
    let ours: Vec<String> = command
        .get_arguments()
        .flat_map(|a| {
            a.get_long_and_visible_aliases()
                .unwrap_or_default()
                .into_iter()
                .chain(a.get_all_aliases().unwrap_or_default())
                .map(str::to_string)
        })
        .chain(["help".to_string(), "version".to_string()])
        .collect();
    let mut flags = Vec::new();
    let mut settings = Vec::new();
    let mut rest = argv.into_iter();
    while let Some(arg) = rest.next() {
        let name = arg.strip_prefix("--").unwrap_or("");
        if !name.is_empty()
            && !name.contains('=')
            && !ours.iter().any(|o| o == name)
            && locksmith_server::is_config_parameter(name)
        {
            match rest.next() {
                Some(value) => settings.push((name.to_string(), value)),
                // clap reports the missing value.
                None => flags.push(arg),
            }
        } else {
            flags.push(arg);
        }
    }
    (flags, settings)
}

fn main() -> std::process::ExitCode {
    let (argv, settings) = split_config_parameters(std::env::args().collect());
    let mut args = Args::parse_from(argv);
    args.settings = settings;
    raise_open_files_limit();
    let stop = match watch_signals() {
        Ok(stop) => stop,
        Err(e) => {
            eprintln!("locksmith-server: cannot install signal handlers: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // Always the multi-thread flavour, even with one worker: a long script hands the worker's
    // other connections to a new thread (`block_in_place`) so they get BUSY.
    let served = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.worker_threads.max(1))
        .enable_all()
        .build()
        .map_err(Into::into)
        .and_then(|runtime| runtime.block_on(serve(args, stop)));
    let code = match served {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("locksmith-server: {e}");
            1
        }
    };
    // Not a return: dropping the runtime would wait for a script still running on its
    // blocking pool.
    std::process::exit(code)
}

/// Raises the soft limit on open files to the hard one, as redis-server does at start
/// (`adjustOpenFilesLimit`), so 10 000 clients (the default `maxclients`) fit under a shell's
/// usual soft limit of 1024.
#[allow(unsafe_code)]
fn raise_open_files_limit() {
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
/// the first signal; the process then exits with code 0 after [`SHUTDOWN_GRACE`] at the latest.
fn watch_signals() -> std::io::Result<tokio::sync::oneshot::Receiver<&'static str>> {
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

async fn serve(
    args: Args,
    stop: tokio::sync::oneshot::Receiver<&'static str>,
) -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(tracing_filter(
            &args.loglevel,
        )))
        .with_writer(std::io::stderr)
        .init();
    let mut config = Config::default();
    config.port = args.port;
    config.bind = args.bind;
    config.requirepass = args.requirepass.clone();
    config.databases = args.databases.max(1);
    config.busy_reply_threshold = Duration::from_millis(args.busy_reply_threshold);
    config.seed = args.seed;
    config.cluster_enabled = args.cluster_enabled;
    config.enable_debug_command = args.enable_debug_command;
    config.tcp_backlog = args.tcp_backlog;
    config.settings = args.settings.clone();
    config.lua_memory_limit = args.lua_memory_limit;
    let topology = args.replicas > 0 || args.masters > 1 || args.sentinel_port.is_some();
    if topology && !config.settings.is_empty() {
        return Err(
            "configuration parameters (--name value) apply to a single server, \
                    not to a topology (--replicas, --masters, --sentinel-port); set them \
                    on each node with CONFIG SET"
                .into(),
        );
    }
    let (server, topology) = if topology {
        (None, Some(run_topology(&args).await?))
    } else {
        (Some(Server::start(config).await?), None)
    };
    // The address clients use: the server's, or a topology's front.
    let ready = match (&server, &topology) {
        (Some(server), _) => Some(server.addr()),
        (None, Some(topology)) => Some(topology.front_addr()),
        (None, None) => None,
    };
    if let Some(addr) = ready {
        tracing::info!(%addr, "Ready to accept connections tcp");
        if let Some(path) = &args.port_file {
            write_port_file(path, addr.port())?;
        }
        announce_ready(addr);
    }
    tokio::select! {
        signal = stop => {
            let name = signal.unwrap_or("a signal");
            tracing::info!("Received {name} scheduling shutdown...");
        }
        // A client sent SHUTDOWN (single-node mode).
        _ = async {
            match &server {
                Some(server) => server.stopped().await,
                None => std::future::pending().await,
            }
        } => {}
    }
    tracing::info!("shutting down");
    let graceful = async {
        if let Some(server) = server {
            server.shutdown().await;
        }
        if let Some(topology) = topology {
            topology.shutdown().await;
        }
    };
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful)
        .await
        .is_err()
    {
        tracing::warn!("the graceful shutdown did not finish in time, exiting now");
    }
    tracing::info!("Redis is now ready to exit, bye bye...");
    Ok(())
}
