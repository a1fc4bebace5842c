//! `locksmith-server`: the Redis-compatible server as a binary. Flags mirror redis-server's.

use clap::Parser;
use locksmith_server::{Config, Server};
use std::net::IpAddr;
use std::time::Duration;

/// A Redis-compatible in-memory server that runs Redisson's Lua lock scripts as Redis does.
#[derive(Debug, Parser)]
#[command(name = "locksmith-server", version)]
struct Args {
    /// TCP port to listen on.
    #[arg(long, default_value_t = 6379)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Require clients to AUTH with this password.
    #[arg(long)]
    requirepass: Option<String>,
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
    /// Seed for random choices (logged at start).
    #[arg(long)]
    seed: Option<u64>,
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(tracing_filter(
            &args.loglevel,
        )))
        .with_writer(std::io::stderr)
        .init();
    let mut config = Config::default();
    config.port = args.port;
    config.bind = args.bind;
    config.requirepass = args.requirepass;
    config.databases = args.databases.max(1);
    config.busy_reply_threshold = Duration::from_millis(args.busy_reply_threshold);
    config.seed = args.seed;
    let server = Server::start(config).await?;
    tracing::info!(addr = %server.addr(), "Ready to accept connections tcp");
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        // A client sent SHUTDOWN.
        _ = server.stopped() => {}
    }
    tracing::info!("shutting down");
    server.shutdown().await;
    Ok(())
}
