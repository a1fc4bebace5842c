//! Acquires a lock, prints `acquired <owner-id>`, holds it, releases it and prints `released`.
//!
//! ```text
//! cargo run -p locksmith-lock --example hold -- --url redis://127.0.0.1:6379/ --name orders --hold-ms 500
//! ```

#![allow(clippy::print_stdout)]

use std::time::Duration;

use clap::Parser;
use locksmith_lock::Client;

/// Hold a Redisson-compatible lock for a while.
#[derive(Parser)]
struct Args {
    /// Redis URL.
    #[arg(long, default_value = "redis://127.0.0.1:6379/")]
    url: String,
    /// Lock name.
    #[arg(long)]
    name: String,
    /// How long to hold the lock, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    hold_ms: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let client = Client::open(&args.url).await?;
    let lock = client.lock(&args.name);
    lock.lock().await?;
    println!("acquired {}", lock.owner_field());
    let mut lost = lock.lost_signal();
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(args.hold_ms)) => {}
        reason = async { match lost.as_mut() { Some(l) => l.lost().await, None => std::future::pending().await } } => {
            println!("lost {reason:?}");
            return Err("lock lost while held".into());
        }
    }
    lock.unlock().await?;
    println!("released");
    client.shutdown().await;
    Ok(())
}
