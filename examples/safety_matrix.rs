//! The safety matrix, measured: for each lock kind and each class of faults, a number of
//! seeded runs of three clients on an in-memory topology (10 s of virtual time each), the
//! violations found, the first failing seed and its minimal schedule. Writes the table to
//! stdout and an HTML page whose failing cells link to the timeline of their minimal run.
//!
//! ```sh
//! cargo run --release --example safety-matrix                      # 200 seeds a cell
//! cargo run --release --example safety-matrix -- --seeds 20 --kinds lock,redlock --classes failover,clock
//! cargo run --release --example safety-matrix -- replay --kind lock --seed 3 --schedule 'failover/n0/1200/800/500'
//! cargo run --release --example safety-matrix -- --seeds 1000000 --shard 3/16 --out shard-3  # one of 16 machines
//! cargo run --release --example safety-matrix -- merge --out all shard-*/report.json
//! ```
//!
//! Options: `--seeds N` (per cell, default 200), `--max-faults N` (per run, default 4),
//! `--kinds a,b` and `--classes x,y` (default all), `--threads N` (default: the machine's cores), `--out DIR` (default
//! `target/safety-matrix`), `--shard I/N` (run only the seeds `s` with `s % N == I`). Every
//! run writes `report.json` in `--out`: each cell's counts and first findings, without timings,
//! so the same seeds give the same file. `merge` reads the reports of all N shards of one
//! matrix and writes the report, table and page of the whole seed range: the same
//! `report.json` a single process exploring every seed writes. `replay` runs one seed and
//! schedule (`--schedule`, or the one the seed draws from `--class`), prints its history, its
//! violations and liveness findings, and writes its timeline (`--out`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use locksmith::explore::{
    explore, run, Exploration, FaultClass, LockKind, Schedule, Shard, Summary, Workload,
};
use locksmith::harness::Timeline;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

struct Args {
    seeds: u64,
    max_faults: usize,
    kinds: Vec<LockKind>,
    classes: Vec<FaultClass>,
    threads: usize,
    out: PathBuf,
    shard: Shard,
    replay: Option<(LockKind, u64, Schedule)>,
    /// `merge`: the shards' reports.
    merge: Vec<PathBuf>,
}

fn value<'a>(args: &'a [String], i: usize, flag: &str) -> Result<&'a str> {
    args.get(i + 1)
        .map(String::as_str)
        .ok_or_else(|| format!("{flag} needs a value").into())
}

fn list<T: std::str::FromStr>(text: &str) -> Result<Vec<T>>
where
    T::Err: std::fmt::Display,
{
    text.split(',')
        .map(|w| w.trim().parse::<T>().map_err(|e| e.to_string().into()))
        .collect()
}

fn parse() -> Result<Args> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut args = Args {
        seeds: 200,
        max_faults: 4,
        kinds: LockKind::ALL.to_vec(),
        classes: FaultClass::ALL.to_vec(),
        threads: std::thread::available_parallelism().map_or(2, usize::from),
        out: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/safety-matrix"),
        shard: Shard::WHOLE,
        replay: None,
        merge: Vec::new(),
    };
    let (mut kind, mut seed, mut schedule, mut class) = (None, None, None, None);
    let replaying = argv.first().is_some_and(|a| a == "replay");
    let merging = argv.first().is_some_and(|a| a == "merge");
    let mut i = usize::from(replaying || merging);
    while i < argv.len() {
        let flag = argv[i].as_str();
        if merging && !flag.starts_with("--") {
            args.merge.push(PathBuf::from(flag));
            i += 1;
            continue;
        }
        let v = value(&argv, i, flag)?;
        match flag {
            "--seeds" => args.seeds = v.parse()?,
            "--max-faults" => args.max_faults = v.parse()?,
            "--kinds" => args.kinds = list(v)?,
            "--classes" => args.classes = list(v)?,
            "--threads" => args.threads = v.parse::<usize>()?.max(1),
            "--out" => args.out = PathBuf::from(v),
            "--shard" => args.shard = v.parse()?,
            "--kind" => kind = Some(v.parse::<LockKind>()?),
            "--seed" => seed = Some(v.parse::<u64>()?),
            "--schedule" => schedule = Some(v.parse::<Schedule>()?),
            "--class" => class = Some(v.parse::<FaultClass>()?),
            other => return Err(format!("unknown option {other}").into()),
        }
        i += 2;
    }
    if replaying {
        let kind = kind.ok_or("replay needs --kind")?;
        let seed = seed.ok_or("replay needs --seed")?;
        // Without a schedule: the one the seed draws from `--class` (none without a class).
        let schedule = match (schedule, class) {
            (Some(s), _) => s,
            (None, Some(c)) => Exploration::new(Workload::new(kind), c).schedule(seed),
            (None, None) => Schedule::default(),
        };
        args.replay = Some((kind, seed, schedule));
    }
    if merging && args.merge.is_empty() {
        return Err("merge needs the shards' report.json files".into());
    }
    Ok(args)
}

fn main() -> Result<()> {
    let mut args = parse()?;
    std::fs::create_dir_all(&args.out)?;
    if let Some((kind, seed, schedule)) = &args.replay {
        return replay(&args, *kind, *seed, schedule);
    }
    let started = Instant::now();
    let summaries = if args.merge.is_empty() {
        explore_cells(&args)?
    } else {
        let summaries = merge(&args.merge)?;
        // The table and page show the merged matrix's own cells and seeds.
        args.kinds = dedup(summaries.iter().map(|s| s.kind));
        args.classes = dedup(summaries.iter().map(|s| s.class));
        args.seeds = summaries.first().map_or(0, |s| s.seeds.end);
        summaries
    };
    let elapsed = started.elapsed();
    let report = args.out.join("report.json");
    let cells: Vec<_> = summaries.iter().map(Summary::to_json).collect();
    std::fs::write(&report, serde_json::to_string_pretty(&cells)? + "\n")?;
    print_table(&args, &summaries, elapsed);
    let page = write_page(&args, &summaries, elapsed)?;
    println!("\nreport: {}\nHTML: {}", report.display(), page.display());
    Ok(())
}

/// Explores every cell of the matrix (this process's shard of the seeds) on `--threads`
/// threads; the summaries in the matrix's order.
fn explore_cells(args: &Args) -> Result<Vec<Summary>> {
    let cells: Vec<(LockKind, FaultClass)> = args
        .kinds
        .iter()
        .flat_map(|&k| args.classes.iter().map(move |&c| (k, c)))
        .collect();
    let next = AtomicUsize::new(0);
    let summaries: Mutex<Vec<Option<Summary>>> = Mutex::new(vec![None; cells.len()]);
    std::thread::scope(|scope| {
        for _ in 0..args.threads.min(cells.len()).max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(kind, class)) = cells.get(i) else {
                    return;
                };
                let exploration = Exploration::new(Workload::new(kind), class)
                    .seeds(0..args.seeds)
                    .max_faults(args.max_faults)
                    .shard(args.shard);
                let report = explore(&exploration);
                eprintln!(
                    "{kind} × {class}: {} / {} unsafe",
                    report.unsafe_runs,
                    report.runs,
                    class = class.name()
                );
                if let Ok(mut summaries) = summaries.lock() {
                    summaries[i] = Some(Summary::of(&report));
                }
            });
        }
    });
    Ok(summaries
        .into_inner()
        .map_err(|_| "a worker panicked")?
        .into_iter()
        .flatten()
        .collect())
}

/// Reads the shards' reports and merges them cell by cell, in the first report's order.
fn merge(paths: &[PathBuf]) -> Result<Vec<Summary>> {
    let mut shards = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let cells: Vec<serde_json::Value> = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a report: {e}", path.display()))?;
        let cells = cells
            .iter()
            .map(Summary::from_json)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        shards.push(cells);
    }
    let first = shards.first().ok_or("no reports")?;
    first
        .iter()
        .map(|cell| {
            let parts: Vec<Summary> = shards
                .iter()
                .filter_map(|s| {
                    s.iter()
                        .find(|c| c.kind == cell.kind && c.class == cell.class)
                        .cloned()
                })
                .collect();
            if parts.len() != shards.len() {
                return Err(format!(
                    "{} × {} is missing from a report",
                    cell.kind,
                    cell.class.name()
                )
                .into());
            }
            Ok(Summary::merge(&parts)?)
        })
        .collect()
}

/// The distinct values of `items`, in their first order.
fn dedup<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The matrix as a Markdown table, then each failing cell's first seed and minimal schedule.
fn print_table(args: &Args, reports: &[Summary], elapsed: std::time::Duration) {
    let runs: u64 = reports.iter().map(|r| r.runs).sum();
    println!(
        "Safety matrix: unsafe runs / seeds ({} seeds a cell{}, {runs} runs in {:.1} s on {} threads)\n",
        args.seeds,
        shard_text(args.shard),
        elapsed.as_secs_f64(),
        args.threads
    );
    print!("| kind |");
    for c in &args.classes {
        print!(" {} |", c.name());
    }
    println!(" bounded wait |");
    print!("|---|");
    for _ in &args.classes {
        print!("---:|");
    }
    println!("---:|");
    for kind in &args.kinds {
        print!("| {kind} |");
        for class in &args.classes {
            match reports
                .iter()
                .find(|r| r.kind == *kind && r.class == *class)
            {
                Some(r) => print!(" {}", cell_text(r)),
                None => print!(" –"),
            }
            print!(" |");
        }
        println!(" {} |", wait_text(reports, *kind));
    }
    println!();
    for r in reports {
        if let Some(f) = &r.first {
            println!(
                "{} × {}: first unsafe seed {}, minimal schedule `{}`\n  {}\n  replay: {}",
                r.kind,
                r.class.name(),
                f.seed,
                f.minimal,
                f.violation,
                f.replay
            );
        }
        if let Some((seed, found)) = &r.first_liveness {
            println!(
                "{} × {}: {} runs with liveness findings; first at seed {seed}: {}",
                r.kind,
                r.class.name(),
                r.liveness_runs,
                found.first().map_or("", String::as_str)
            );
        }
    }
}

/// The bounded-wait column: runs of `kind` (every class) where an acquire overran its wait
/// outside faults, of all its runs.
fn wait_text(reports: &[Summary], kind: LockKind) -> String {
    let mine = reports.iter().filter(|r| r.kind == kind);
    let overran: u64 = mine.clone().map(|r| r.wait_overrun_runs).sum();
    let runs: u64 = mine.map(|r| r.runs).sum();
    format!("{overran}/{runs}")
}

/// `", shard I/N"` for a part of the seeds, nothing for the whole range.
fn shard_text(shard: Shard) -> String {
    if shard == Shard::WHOLE {
        String::new()
    } else {
        format!(", shard {shard}")
    }
}

fn cell_text(r: &Summary) -> String {
    let mut text = format!("{}/{}", r.unsafe_runs, r.runs);
    if let Some(f) = &r.first {
        text.push_str(&format!(" (seed {})", f.seed));
    }
    if r.liveness_runs > 0 {
        text.push_str(&format!(" L{}", r.liveness_runs));
    }
    if r.leak_runs > 0 {
        text.push_str(&format!(" K{}", r.leak_runs));
    }
    text
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The HTML page: the matrix, each failing cell linking to its minimal run's timeline (the
/// minimal run made again from its seed and schedule: runs are deterministic).
fn write_page(args: &Args, reports: &[Summary], elapsed: std::time::Duration) -> Result<PathBuf> {
    let mut html = String::from(
        "<!doctype html><meta charset=\"utf-8\"><title>Locksmith safety matrix</title>\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{border:1px solid #bbb;padding:.3em .6em;text-align:right}\
         td.bad{background:#ffcdd2}td.ok{background:#e8f5e9}code{font-size:.85em}</style>\
         <h1>Safety matrix</h1>",
    );
    html.push_str(&format!(
        "<p>Unsafe runs / seeds, {} seeds a cell{}, {:.1} s on {} threads. \
         Failing cells link to the timeline of their first seed's minimal schedule.</p>\
         <table><tr><th>kind</th>",
        args.seeds,
        shard_text(args.shard),
        elapsed.as_secs_f64(),
        args.threads
    ));
    for c in &args.classes {
        html.push_str(&format!("<th>{}</th>", c.name()));
    }
    html.push_str("<th>bounded wait</th></tr>");
    for kind in &args.kinds {
        html.push_str(&format!("<tr><th>{kind}</th>"));
        for class in &args.classes {
            let Some(r) = reports
                .iter()
                .find(|r| r.kind == *kind && r.class == *class)
            else {
                html.push_str("<td>–</td>");
                continue;
            };
            match &r.first {
                Some(f) => {
                    let file = format!("{kind}-{}.html", class.name());
                    let title = format!(
                        "{kind} under {}: seed {}, schedule {}",
                        class.name(),
                        f.seed,
                        f.minimal
                    );
                    let minimal = f.minimal.parse::<Schedule>()?;
                    let outcome = run(Workload::new(*kind), &minimal, f.seed);
                    Timeline::new(title, &outcome.history).write_html(args.out.join(&file))?;
                    html.push_str(&format!(
                        "<td class=\"bad\"><a href=\"{file}\" title=\"{}\">{}</a></td>",
                        escape(&f.replay),
                        escape(&cell_text(r))
                    ));
                }
                None => html.push_str(&format!("<td class=\"ok\">{}</td>", escape(&cell_text(r)))),
            }
        }
        let overran = reports
            .iter()
            .any(|r| r.kind == *kind && r.wait_overrun_runs > 0);
        html.push_str(&format!(
            "<td class=\"{}\">{}</td></tr>",
            if overran { "bad" } else { "ok" },
            wait_text(reports, *kind)
        ));
    }
    html.push_str("</table><h2>Minimal schedules</h2><ul>");
    for r in reports {
        if let Some(f) = &r.first {
            html.push_str(&format!(
                "<li>{} × {}: seed {}, <code>{}</code><br><code>{}</code></li>",
                r.kind,
                r.class.name(),
                f.seed,
                escape(&f.minimal.to_string()),
                escape(&f.replay)
            ));
        }
    }
    html.push_str("</ul>");
    let page = args.out.join("index.html");
    std::fs::write(&page, html)?;
    Ok(page)
}

/// Replays one run: prints its history and findings, writes its timeline.
fn replay(args: &Args, kind: LockKind, seed: u64, schedule: &Schedule) -> Result<()> {
    if std::env::var_os("RUST_LOG").is_some() {
        // `RUST_LOG=locksmith_lock=debug` shows what the clients did.
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        // `RUST_LOG`'s `target=level` directives (`Targets`: no regex engine to compile).
        let targets = std::env::var("RUST_LOG")
            .ok()
            .and_then(|s| s.parse::<tracing_subscriber::filter::Targets>().ok())
            .unwrap_or_default();
        let _ = tracing_subscriber::registry()
            .with(tracing_subscriber::fmt::layer())
            .with(targets)
            .try_init();
    }
    eprintln!("replaying {kind}, seed {seed}, schedule '{schedule}'");
    let outcome = run(Workload::new(kind), schedule, seed);
    print!("{}", outcome.history.serialize());
    for v in &outcome.violations {
        println!("violation: {v}");
    }
    for v in &outcome.over_limit {
        println!("violation: {v}");
    }
    for l in &outcome.liveness {
        println!("liveness: {l}");
    }
    for leak in &outcome.leaks {
        println!("leak: {leak}");
    }
    println!(
        "{}",
        if outcome.is_unsafe() {
            "UNSAFE"
        } else {
            "safe"
        }
    );
    let path = args.out.join(format!("replay-{kind}-{seed}.html"));
    let title = format!("{kind}, seed {seed}, schedule {schedule}");
    Timeline::new(title, &outcome.history).write_html(&path)?;
    println!("timeline: {}", path.display());
    Ok(())
}
