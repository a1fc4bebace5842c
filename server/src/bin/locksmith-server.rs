//! `locksmith-server`: the Redis-compatible server as a binary. Flags mirror redis-server's.

use clap::Parser;
use locksmith_server::cli;
use locksmith_server::{compat_from_env, Compat, Config, EnableCommand, Server};
use std::net::IpAddr;
use std::time::Duration;

/// The server allocates and frees many small buffers per request (arguments, replies, Lua
/// tables) from several threads; mimalloc's thread-local free lists do that with fewer atomic
/// operations than glibc's arenas (see BENCHMARKS.md).
#[global_allocator]
static GLOBAL: release::Allocator = release::Allocator;

#[allow(unsafe_code)]
mod release {
    use std::alloc::{GlobalAlloc, Layout};
    use std::ffi::c_void;

    // mimalloc's own functions, in the library the `mimalloc` crate links (its Rust bindings
    // declare them only with a feature that needs one more crate).
    unsafe extern "C" {
        fn mi_collect(force: bool);
        fn mi_version() -> std::ffi::c_int;
        fn mi_malloc(size: usize) -> *mut c_void;
        fn mi_zalloc(size: usize) -> *mut c_void;
        fn mi_realloc(p: *mut c_void, newsize: usize) -> *mut c_void;
    }

    /// Every block `mi_malloc` returns is aligned to at least this (its size classes are
    /// multiples of a machine word, on word-aligned pages).
    const MALLOC_ALIGN: usize = std::mem::size_of::<usize>();

    /// mimalloc, asked for plain blocks where plain blocks are aligned enough.
    ///
    /// `mimalloc::MiMalloc` asks for every block by `mi_malloc_aligned`. In mimalloc 3 that
    /// path serves a size whose class is not a power of two (24 bytes: a `Bytes` buffer's
    /// shared header, made for every request) from a fresh page of its class only through
    /// `mi_malloc`; when the class's page is empty it over-allocates instead, so the class's
    /// page never fills again, and each such block cost ~200 instructions and 8 bytes more
    /// than `mi_malloc`'s (callgrind, BENCHMARKS.md). Alignments above a word still go to
    /// `MiMalloc`; every block is freed by `mi_free`, whichever function made it.
    pub(super) struct Allocator;

    // SAFETY: each method returns a block of at least `layout.size()` bytes aligned to
    // `layout.align()` or null: `mi_malloc`/`mi_zalloc`/`mi_realloc` return blocks aligned to
    // `MALLOC_ALIGN`, used only when the alignment asked is at most that; larger alignments go
    // to `MiMalloc`, a correct `GlobalAlloc`. Blocks of either come from the same mimalloc
    // heap, which `MiMalloc::dealloc` (`mi_free`) frees, and `mi_realloc_aligned`, used by
    // `MiMalloc::realloc`, accepts any of them.
    unsafe impl GlobalAlloc for Allocator {
        #[inline]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if layout.align() <= MALLOC_ALIGN {
                // SAFETY: `mi_malloc` has no preconditions.
                unsafe { mi_malloc(layout.size()).cast() }
            } else {
                // SAFETY: the caller's contract is passed on unchanged.
                unsafe { mimalloc::MiMalloc.alloc(layout) }
            }
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            if layout.align() <= MALLOC_ALIGN {
                // SAFETY: `mi_zalloc` has no preconditions.
                unsafe { mi_zalloc(layout.size()).cast() }
            } else {
                // SAFETY: the caller's contract is passed on unchanged.
                unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
            }
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` came from this allocator, so from mimalloc (see above).
            unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
        }

        #[inline]
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if layout.align() <= MALLOC_ALIGN {
                // SAFETY: `ptr` is a live mimalloc block (from this allocator); the new block
                // is aligned to `MALLOC_ALIGN`, enough for `layout.align()`.
                unsafe { mi_realloc(ptr.cast(), new_size).cast() }
            } else {
                // SAFETY: the caller's contract is passed on unchanged.
                unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
            }
        }
    }

    /// `mimalloc-MAJOR.MINOR.PATCH`, for `INFO`'s `mem_allocator` (as Redis's
    /// `jemalloc-5.3.0`).
    pub(super) fn name() -> String {
        // SAFETY: `mi_version` has no preconditions and only returns a constant.
        let v = unsafe { mi_version() };
        format!("mimalloc-{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
    }

    /// Returns mimalloc's free pages to the operating system now (it otherwise purges them
    /// only as later allocations pass by: an idle server kept the memory of a `FLUSHALL`ed
    /// keyspace). Installed with `locksmith_server::set_memory_release`.
    pub(super) fn collect() {
        // SAFETY: `mi_collect` has no preconditions; it may be called from any thread at any
        // time, and only frees memory the allocator itself holds as unused.
        unsafe { mi_collect(true) }
    }
}

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
    /// Topologies (replicas, independent masters, Sentinel) are started by `locksmith-harness`;
    /// these flags only say so.
    #[arg(long, hide = true)]
    replicas: Option<String>,
    #[arg(long, hide = true)]
    masters: Option<String>,
    #[arg(long = "sentinel-port", hide = true)]
    sentinel_port: Option<String>,
    /// Cluster mode (`yes`|`no`): a one-node Redis Cluster serving all 16384 slots
    /// (`locksmith-harness --cluster-enabled yes --masters N` starts a cluster of N shards).
    #[arg(
        long = "cluster-enabled",
        default_value = "no",
        value_parser = cli::yes_no,
        action = clap::ArgAction::Set
    )]
    cluster_enabled: bool,
    /// Who may run DEBUG: no (the default, as Redis 7), yes, or local (loopback clients).
    #[arg(long = "enable-debug-command", default_value = "no")]
    enable_debug_command: EnableCommand,
    /// The most memory the Lua interpreter may hold while a script runs (`1gb`, `256mb`, or
    /// bytes; 0 = no bound). A script past it is stopped with an error; Redis has no bound.
    #[arg(long = "lua-memory-limit", default_value = "1gb", value_parser = cli::memory_size)]
    lua_memory_limit: u64,
    /// The server to reproduce: redis-7.0 (the default: Redis 7.0.15's replies) or valkey-8.1
    /// (Valkey 8.1.8's versions, INFO fields and parameters). Without it, the target the
    /// LOCKSMITH_COMPAT environment variable names, else redis-7.0.
    #[arg(long)]
    compat: Option<Compat>,
    /// Every other redis-server parameter, given as `--name value` (`--maxmemory 10mb`,
    /// `--maxmemory-policy allkeys-lru`, `--save ''`): set as `CONFIG SET` would at start.
    #[arg(skip)]
    settings: Vec<(String, String)>,
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

fn main() {
    locksmith_server::set_memory_release(release::collect);
    // Named once per process; the name lives as long as the process.
    locksmith_server::set_allocator_name(Box::leak(release::name().into_boxed_str()));
    let (argv, settings) = split_config_parameters(std::env::args().collect());
    let mut args = Args::parse_from(argv);
    args.settings = settings;
    cli::run("locksmith-server", args.worker_threads, |stop| {
        serve(args, stop)
    })
}

async fn serve(
    args: Args,
    stop: tokio::sync::oneshot::Receiver<&'static str>,
) -> Result<(), Box<dyn std::error::Error>> {
    cli::init_logging(&args.loglevel);
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
    config.compat = match args.compat {
        Some(compat) => compat,
        None => compat_from_env()?,
    };
    if args.replicas.is_some() || args.masters.is_some() || args.sentinel_port.is_some() {
        return Err(
            "topologies (--replicas, --masters, --sentinel-port) are started by \
                    locksmith-harness, with the same flags: \
                    cargo run --release -p locksmith-harness -- --replicas 2"
                .into(),
        );
    }
    let server = Server::start(config).await?;
    cli::announce_ready(server.addr(), args.port_file.as_deref())?;
    tokio::select! {
        signal = stop => {
            let name = signal.unwrap_or("a signal");
            tracing::info!("Received {name} scheduling shutdown...");
        }
        // A client sent SHUTDOWN.
        _ = server.stopped() => {}
    }
    tracing::info!("shutting down");
    cli::shut_down_within_grace(server.shutdown()).await;
    tracing::info!("Redis is now ready to exit, bye bye...");
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn collect_returns_freed_pages_and_memory_stays_usable() {
        let blocks: Vec<Vec<u8>> = (0..10_000).map(|i| vec![i as u8; 112]).collect();
        drop(blocks);
        super::release::collect();
        let again: Vec<Vec<u8>> = (0..10_000).map(|i| vec![i as u8; 112]).collect();
        assert!(again.iter().enumerate().all(|(i, b)| b[111] == i as u8));
    }
}
