//! `locksmith-harness`: a fault-injecting topology from the command line — one master with
//! replicas behind a front address, independent masters (RedLock) or cluster shards, an
//! optional Sentinel endpoint, and the `LOCKSMITH.*` admin commands on every node.

use clap::Parser;
use locksmith_harness::schedule::{FaultClass, Schedule};
use locksmith_harness::Topology;
use locksmith_server::cli;
use std::net::IpAddr;
use std::time::Duration;

/// Most faults a `--chaos` schedule draws (the explorer's default).
const CHAOS_MAX_FAULTS: usize = 4;

/// A topology of Redis-compatible nodes that fail on command.
#[derive(Debug, Parser)]
#[command(name = "locksmith-harness", version)]
struct Args {
    /// The front address's port: it always routes to the current master (0: a free port,
    /// reported on the `ready` line).
    #[arg(long, default_value_t = 6379)]
    port: u16,
    /// Once the front accepts connections, write its port (a number and a newline) to this
    /// file, atomically.
    #[arg(long = "port-file")]
    port_file: Option<std::path::PathBuf>,
    /// Address to bind (front, nodes and Sentinel).
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Every node (and the Sentinel endpoint) requires clients to AUTH with this password.
    #[arg(long)]
    requirepass: Option<String>,
    /// Log level: debug, verbose, notice or warning (redis-server's names), or a tracing filter.
    #[arg(long, default_value = "notice")]
    loglevel: String,
    /// Seed for every random choice (printed at start).
    #[arg(long)]
    seed: Option<u64>,
    /// One master with this many replicas (with --cluster-enabled: replicas per shard).
    #[arg(long, default_value_t = 0)]
    replicas: usize,
    /// This many independent masters (RedLock), or cluster shards with --cluster-enabled.
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
    /// How far back `LOCKSMITH.RESTART node KEEP-DATA LOSE-LAST-MS ms` may reach: each node
    /// journals this many milliseconds of its writes (0: none, KEEP-DATA is refused).
    #[arg(long = "keep-data-window-ms", default_value_t = 10_000)]
    keep_data_window_ms: u64,
    /// A Redis Cluster of --masters shards (`yes`|`no`).
    #[arg(
        long = "cluster-enabled",
        default_value = "no",
        value_parser = cli::yes_no,
        action = clap::ArgAction::Set
    )]
    cluster_enabled: bool,
    /// Observe the locks of keys matching these glob patterns (none: every key) from the
    /// start: grants, re-entries, renewals, releases and expiries on every node, checked by
    /// LOCKSMITH.CHECK. Off by default (it costs nothing then).
    #[arg(long, num_args = 0.., value_name = "PATTERN")]
    observe: Option<Vec<String>>,
    /// At exit, write the observed history (LOCKSMITH.HISTORY's JSON) to this file.
    #[arg(long = "history-file")]
    history_file: Option<std::path::PathBuf>,
    /// At exit, write the timeline of the observed locks (LOCKSMITH.TIMELINE's HTML) here.
    #[arg(long = "timeline-file")]
    timeline_file: Option<std::path::PathBuf>,
    /// Run this fault schedule from start (the explorer's one-line form:
    /// kind/n<node>/<at ms>/<duration ms>/<amount ms>, comma-separated; times from start).
    #[arg(long, conflicts_with = "chaos")]
    schedule: Option<String>,
    /// Run a schedule drawn from --seed as the explorer draws one for this fault class
    /// (failover, crash, partition, clock, pause, replication, link); printed at start so a
    /// failing seed replays with --schedule.
    #[arg(long, value_name = "CLASS")]
    chaos: Option<String>,
    /// The run length --chaos places faults in (within its first 80 %), in milliseconds.
    #[arg(long = "chaos-run-ms", default_value_t = 10_000)]
    chaos_run_ms: u64,
    /// The lease --chaos sizes faults for (pauses, jumps, lags), in milliseconds.
    #[arg(long = "chaos-lease-ms", default_value_t = 3000)]
    chaos_lease_ms: u64,
}

/// Starts the topology and prints where everything listens.
#[allow(clippy::print_stdout)]
async fn start(args: &Args) -> Result<Topology, Box<dyn std::error::Error>> {
    let mut builder = Topology::builder();
    builder
        .masters(args.masters)
        .replicas(args.replicas)
        .replication_delay(Duration::from_millis(args.replication_delay_ms))
        .replication_jitter(Duration::from_millis(args.replication_jitter_ms))
        .master_name(args.master_name.clone())
        .front_port(args.port)
        .bind(args.bind)
        .keep_data_window(Duration::from_millis(args.keep_data_window_ms));
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
    if let Some(patterns) = &args.observe {
        builder.observe(patterns.iter().cloned());
    }
    // Parsed before anything starts: a bad schedule or class is refused at once.
    let given = match &args.schedule {
        Some(text) => Some(text.parse::<Schedule>().map_err(|e| e.0)?),
        None => None,
    };
    let class = match &args.chaos {
        Some(name) => Some(name.parse::<FaultClass>().map_err(|e| e.0)?),
        None => None,
    };
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
    let replicated = args.replicas > 0 && args.masters == 1 && !args.cluster_enabled;
    let schedule = given.or_else(|| {
        class.map(|class| {
            Schedule::generate(
                topology.seed(),
                class,
                topology.nodes().len(),
                replicated,
                args.chaos_run_ms,
                args.chaos_lease_ms,
                CHAOS_MAX_FAULTS,
            )
        })
    });
    if let Some(schedule) = schedule {
        println!("schedule {schedule}");
        topology.run_schedule(schedule);
    }
    Ok(topology)
}

/// Writes `--history-file` and `--timeline-file` (a failure is logged: the topology still
/// shuts down).
fn write_files(args: &Args, topology: &Topology) {
    if let Some(path) = &args.history_file {
        if let Err(e) = std::fs::write(path, topology.history_json()) {
            tracing::warn!(path = %path.display(), error = %e, "could not write the history");
        }
    }
    if let Some(path) = &args.timeline_file {
        if let Err(e) = topology
            .observed_timeline("observed locks")
            .write_html(path)
        {
            tracing::warn!(path = %path.display(), error = %e, "could not write the timeline");
        }
    }
}

fn main() {
    let args = Args::parse();
    cli::run("locksmith-harness", 1, |stop| serve(args, stop))
}

async fn serve(
    args: Args,
    stop: tokio::sync::oneshot::Receiver<&'static str>,
) -> Result<(), Box<dyn std::error::Error>> {
    cli::init_logging(&args.loglevel);
    let topology = start(&args).await?;
    cli::announce_ready(topology.front_addr(), args.port_file.as_deref())?;
    let signal = stop.await;
    tracing::info!(
        "Received {} scheduling shutdown...",
        signal.unwrap_or("a signal")
    );
    write_files(&args, &topology);
    cli::shut_down_within_grace(topology.shutdown()).await;
    Ok(())
}
