//! `locksmith-bench`: script throughput, Redisson's lock scenarios or any Lua file, against an
//! in-process locksmith server (the default) and any `redis://` targets one after the other,
//! side by side. Latency per request from the write of its batch to its reply, in an HDR
//! histogram; errors by kind; `--json` and `--html` reports.
//!
//! Templates (`--keys`, `--args`) may hold `{rand}` (a random number below `--keyspace`,
//! 12 digits, one per iteration), `{client}`, `{seq}`, `{iter}`, `{owner}` (Redisson's owner
//! field `<uuid>:<client + 1>`), `{run}` and `{now}` (ms since the epoch); other braces (hash
//! tags) are literal.

mod report;
mod run;
mod target;
mod workload;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use rand::{Rng, SeedableRng};

use report::{Report, TargetReport};
use run::{Mode, RunConfig};
use target::{ConnectInfo, Endpoint, TargetSpec};
use workload::{Expect, Workload, SCENARIOS};

/// The same allocator as `locksmith-server`, so the in-process target runs as the binary does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Benchmark Lua script throughput: Redisson's lock scripts or your own, against an
/// in-process locksmith server and any redis:// targets, side by side.
///
/// Templates in --keys/--args may use {rand} (a random number below --keyspace, zero-padded to
/// 12 digits as redis-benchmark's __rand_int__, one per iteration), {client} (client number
/// from 0), {seq} (the client's request number), {iter} (the client's iteration of a
/// multi-step scenario), {owner} (Redisson's owner field: the run's uuid, a colon, client + 1),
/// {run} (8 hex digits per run) and {now} (ms since the Unix epoch). Other braces, such as hash
/// tags, are kept as written.
#[derive(Debug, Parser)]
#[command(name = "locksmith-bench", version, after_help = scenario_help())]
struct Args {
    /// A built-in scenario (see below); `acquire` when neither --scenario nor --script is given.
    #[arg(long, conflicts_with = "script")]
    scenario: Option<String>,
    /// A Lua file to run with EVALSHA (after SCRIPT LOAD), with --keys and --args.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// KEYS templates of --script.
    #[arg(long, num_args = 0.., allow_negative_numbers = true, value_name = "TEMPLATE", requires = "script")]
    keys: Vec<String>,
    /// ARGV templates of --script.
    #[arg(long, num_args = 0.., allow_negative_numbers = true, value_name = "TEMPLATE", requires = "script")]
    args: Vec<String>,
    /// Accepted replies (repeatable, any of them): any, nil, int, int:N (or just N), ok,
    /// status, status:TEXT, bulk, bulk:TEXT, array. Other replies count as `unexpected`
    /// errors; error replies always count by their first word. Replaces a scenario's own
    /// checks; --script accepts any non-error reply without it.
    #[arg(long, value_name = "REPLY", value_parser = Expect::parse)]
    expect: Vec<Expect>,
    /// A target: `redis://[[user]:password@]host:port[/db]` or `in-process`, optionally
    /// `NAME=` before it. Repeatable; run in order, ratios against the first. Default:
    /// in-process.
    #[arg(long, value_name = "TARGET", value_parser = TargetSpec::parse)]
    target: Vec<TargetSpec>,
    /// Parallel connections.
    #[arg(long, short = 'c', default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    clients: u64,
    /// Requests per batch each connection writes before reading the replies.
    #[arg(long, short = 'P', default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pipeline: u64,
    /// Measure for this many seconds (default 10 unless --requests is given).
    #[arg(long, value_name = "SECS", conflicts_with = "requests", value_parser = seconds)]
    duration: Option<Duration>,
    /// Measure this many requests (over all clients) instead of a duration.
    #[arg(long, short = 'n')]
    requests: Option<u64>,
    /// Seconds run first and left out of the numbers.
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = seconds)]
    warmup: Duration,
    /// `{rand}` is below this (redis-benchmark's -r).
    #[arg(long, default_value_t = 10_000)]
    keyspace: u64,
    /// Milliseconds a batch may wait for its replies before they count as `timeout`.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    timeout: u64,
    /// Threads of the clients' runtime (redis-benchmark uses one).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Worker threads of the in-process server (the binary's default is one).
    #[arg(long = "server-threads", default_value_t = 1)]
    server_threads: usize,
    /// Seed of the random numbers (`{rand}`, the run's uuid); random when absent.
    #[arg(long)]
    seed: Option<u64>,
    /// Do not SCRIPT LOAD before the run: each client's first EVALSHA meets NOSCRIPT, loads
    /// the script and retries, as redis-rs's `Script` and Redisson do.
    #[arg(long = "no-preload")]
    no_preload: bool,
    /// Print the results as JSON on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write a self-contained HTML page with the table and charts.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// No progress line on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// List the built-in scenarios (with --json: their scripts and steps) and exit.
    #[arg(long)]
    list: bool,
}

fn scenario_help() -> String {
    let mut s = String::from("Scenarios (Redisson's script bodies):\n");
    for (name, description) in SCENARIOS {
        s.push_str(&format!("  {name:<10} {description}\n"));
    }
    s
}

fn seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(0.0..=86_400.0).contains(&secs) {
        return Err("seconds must be between 0 and 86400".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("locksmith-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn workload(args: &Args) -> Result<Workload, String> {
    let mut workload = match &args.script {
        Some(path) => {
            let body = std::fs::read_to_string(path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "script".into());
            Workload::script(&name, body, &args.keys, &args.args)
        }
        None => Workload::scenario(args.scenario.as_deref().unwrap_or("acquire"))?,
    };
    if !args.expect.is_empty() {
        workload.set_expect(&args.expect);
    }
    Ok(workload)
}

fn list(as_json: bool) -> Result<ExitCode, String> {
    let mut out = std::io::stdout().lock();
    let text = if as_json {
        let mut all = Vec::new();
        for (name, _) in SCENARIOS {
            let w = Workload::scenario(name)?;
            all.push(serde_json::json!({
                "name": w.name,
                "description": w.description,
                "scripts": w.scripts.iter().map(|s| serde_json::json!({
                    "name": s.name, "sha1": s.sha1, "body": s.body,
                })).collect::<Vec<_>>(),
                "steps": w.steps.iter().map(|s| s.label.clone()).collect::<Vec<_>>(),
            }));
        }
        serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?
    } else {
        scenario_help()
    };
    writeln!(out, "{}", text.trim_end()).map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

fn run(args: Args) -> Result<ExitCode, String> {
    if args.list {
        return list(args.json);
    }
    let workload = Arc::new(workload(&args)?);
    let seed = args.seed.unwrap_or_else(rand::random);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let uuid: [u8; 16] = rng.random();
    let hex = hex::encode(uuid);
    let run_uuid = format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    );
    let cfg = RunConfig {
        clients: args.clients as usize,
        pipeline: args.pipeline as usize,
        mode: match (args.requests, args.duration) {
            (Some(n), _) => Mode::Requests(n),
            (None, Some(d)) => Mode::Duration(d),
            (None, None) => Mode::Duration(Duration::from_secs(10)),
        },
        warmup: args.warmup,
        timeout: Duration::from_millis(args.timeout.max(1)),
        keyspace: args.keyspace.max(1),
        seed,
        run_tag: hex[0..8].to_owned(),
        run_uuid,
        quiet: args.quiet,
        no_preload: args.no_preload,
    };
    let targets = if args.target.is_empty() {
        vec![TargetSpec::parse("in-process")?]
    } else {
        args.target.clone()
    };
    let clients_rt = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    }
    .map_err(|e| format!("starting the clients' runtime: {e}"))?;
    // The in-process server gets a runtime of its own, as the binary has: the clients' work
    // does not run on its threads.
    let mut server = None;
    if targets.iter().any(|t| t.endpoint == Endpoint::InProcess) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.server_threads.max(1))
            .enable_all()
            .build()
            .map_err(|e| format!("starting the server's runtime: {e}"))?;
        let handle = rt
            .block_on(locksmith_server::Server::builder().start())
            .map_err(|e| format!("starting the in-process server: {e}"))?;
        server = Some((rt, handle));
    }
    let mut reports = Vec::new();
    for spec in &targets {
        let (info, url) = match &spec.endpoint {
            Endpoint::InProcess => match &server {
                Some((_, handle)) => (ConnectInfo::from_addr(handle.addr()), "in-process".into()),
                None => return Err("the in-process server did not start".into()),
            },
            Endpoint::Url(url) => (ConnectInfo::from_url(url), url.text.clone()),
        };
        let outcome =
            clients_rt.block_on(run::run_target(&spec.name, &info, workload.clone(), &cfg));
        if let Err(e) = &outcome {
            eprintln!("locksmith-bench: {}: {e}", spec.name);
        }
        reports.push(TargetReport {
            name: spec.name.clone(),
            url,
            outcome,
        });
    }
    drop(clients_rt);
    if let Some((rt, handle)) = server {
        rt.block_on(handle.shutdown());
    }
    let failed = reports.iter().any(|r| r.outcome.is_err());
    let report = Report {
        workload: &workload,
        cfg: &cfg,
        targets: reports,
    };
    if let Some(path) = &args.html {
        std::fs::write(path, report.html())
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        if !args.quiet {
            eprintln!("wrote {}", path.display());
        }
    }
    let text = if args.json {
        serde_json::to_string_pretty(&report.json()).map_err(|e| e.to_string())?
    } else {
        report.table()
    };
    writeln!(std::io::stdout().lock(), "{}", text.trim_end()).map_err(|e| e.to_string())?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
