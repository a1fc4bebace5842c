//! The safety matrix, measured: for each lock kind and each class of faults, a number of
//! seeded runs of three clients on an in-memory topology (10 s of virtual time each), the
//! violations found, the first failing seed and its minimal schedule. Writes the table to
//! stdout and an HTML page whose failing cells link to the timeline of their minimal run.
//!
//! ```sh
//! cargo run --release --example safety-matrix                      # 200 seeds a cell
//! cargo run --release --example safety-matrix -- --seeds 20 --kinds lock,redlock --classes failover,clock
//! cargo run --release --example safety-matrix -- replay --kind lock --seed 3 --schedule 'failover/n0/1200/800/500'
//! ```
//!
//! Options: `--seeds N` (per cell, default 200), `--max-faults N` (per run, default 4),
//! `--kinds a,b` and `--classes x,y` (default all), `--threads N` (default: the machine's cores), `--out DIR` (default
//! `target/safety-matrix`). `replay` runs one seed and schedule (`--schedule`, or the one
//! the seed draws from `--class`), prints its history, its violations and liveness findings,
//! and writes its timeline (`--out`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use locksmith::explore::{
    explore, run, Exploration, FaultClass, LockKind, Report, Schedule, Workload,
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
    replay: Option<(LockKind, u64, Schedule)>,
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
        replay: None,
    };
    let (mut kind, mut seed, mut schedule, mut class) = (None, None, None, None);
    let replaying = argv.first().is_some_and(|a| a == "replay");
    let mut i = usize::from(replaying);
    while i < argv.len() {
        let flag = argv[i].as_str();
        let v = value(&argv, i, flag)?;
        match flag {
            "--seeds" => args.seeds = v.parse()?,
            "--max-faults" => args.max_faults = v.parse()?,
            "--kinds" => args.kinds = list(v)?,
            "--classes" => args.classes = list(v)?,
            "--threads" => args.threads = v.parse::<usize>()?.max(1),
            "--out" => args.out = PathBuf::from(v),
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
    Ok(args)
}

fn main() -> Result<()> {
    let args = parse()?;
    std::fs::create_dir_all(&args.out)?;
    if let Some((kind, seed, schedule)) = &args.replay {
        return replay(&args, *kind, *seed, schedule);
    }
    let cells: Vec<(LockKind, FaultClass)> = args
        .kinds
        .iter()
        .flat_map(|&k| args.classes.iter().map(move |&c| (k, c)))
        .collect();
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let reports: Mutex<Vec<Option<Report>>> = Mutex::new(vec![None; cells.len()]);
    std::thread::scope(|scope| {
        for _ in 0..args.threads.min(cells.len()).max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(kind, class)) = cells.get(i) else {
                    return;
                };
                let exploration = Exploration::new(Workload::new(kind), class).seeds(0..args.seeds);
                let report = explore(&exploration);
                eprintln!(
                    "{kind} × {class}: {} / {} unsafe",
                    report.unsafe_runs,
                    report.runs,
                    class = class.name()
                );
                if let Ok(mut reports) = reports.lock() {
                    reports[i] = Some(report);
                }
            });
        }
    });
    let reports: Vec<Report> = reports
        .into_inner()
        .map_err(|_| "a worker panicked")?
        .into_iter()
        .flatten()
        .collect();
    let elapsed = started.elapsed();
    print_table(&args, &reports, elapsed);
    let page = write_page(&args, &reports, elapsed)?;
    println!("\nHTML: {}", page.display());
    Ok(())
}

/// The matrix as a Markdown table, then each failing cell's first seed and minimal schedule.
fn print_table(args: &Args, reports: &[Report], elapsed: std::time::Duration) {
    let runs: u64 = reports.iter().map(|r| r.runs).sum();
    println!(
        "Safety matrix: unsafe runs / seeds ({} seeds a cell, {runs} runs in {:.1} s on {} threads)\n",
        args.seeds,
        elapsed.as_secs_f64(),
        args.threads
    );
    print!("| kind |");
    for c in &args.classes {
        print!(" {} |", c.name());
    }
    println!();
    print!("|---|");
    for _ in &args.classes {
        print!("---:|");
    }
    println!();
    for kind in &args.kinds {
        print!("| {kind} |");
        for class in &args.classes {
            match reports
                .iter()
                .find(|r| r.exploration.workload.kind == *kind && r.exploration.class == *class)
            {
                Some(r) => print!(" {}", cell_text(r)),
                None => print!(" –"),
            }
            print!(" |");
        }
        println!();
    }
    println!();
    for r in reports {
        if let Some(f) = &r.first {
            println!(
                "{} × {}: first unsafe seed {}, minimal schedule `{}`\n  {}\n  replay: {}",
                r.exploration.workload.kind,
                r.exploration.class.name(),
                f.seed,
                f.minimal,
                f.outcome
                    .unsafe_violations()
                    .next()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                f.replay
            );
        }
        if let Some((seed, found)) = &r.first_liveness {
            println!(
                "{} × {}: {} runs with liveness findings; first at seed {seed}: {}",
                r.exploration.workload.kind,
                r.exploration.class.name(),
                r.liveness_runs,
                found.first().map_or("", String::as_str)
            );
        }
    }
}

fn cell_text(r: &Report) -> String {
    let mut text = format!("{}/{}", r.unsafe_runs, r.runs);
    if let Some(f) = &r.first {
        text.push_str(&format!(" (seed {})", f.seed));
    }
    if r.liveness_runs > 0 {
        text.push_str(&format!(" L{}", r.liveness_runs));
    }
    text
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The HTML page: the matrix, each failing cell linking to its minimal run's timeline.
fn write_page(args: &Args, reports: &[Report], elapsed: std::time::Duration) -> Result<PathBuf> {
    let mut html = String::from(
        "<!doctype html><meta charset=\"utf-8\"><title>Locksmith safety matrix</title>\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{border:1px solid #bbb;padding:.3em .6em;text-align:right}\
         td.bad{background:#ffcdd2}td.ok{background:#e8f5e9}code{font-size:.85em}</style>\
         <h1>Safety matrix</h1>",
    );
    html.push_str(&format!(
        "<p>Unsafe runs / seeds, {} seeds a cell, {:.1} s on {} threads. \
         Failing cells link to the timeline of their first seed's minimal schedule.</p>\
         <table><tr><th>kind</th>",
        args.seeds,
        elapsed.as_secs_f64(),
        args.threads
    ));
    for c in &args.classes {
        html.push_str(&format!("<th>{}</th>", c.name()));
    }
    html.push_str("</tr>");
    for kind in &args.kinds {
        html.push_str(&format!("<tr><th>{kind}</th>"));
        for class in &args.classes {
            let Some(r) = reports
                .iter()
                .find(|r| r.exploration.workload.kind == *kind && r.exploration.class == *class)
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
                    Timeline::new(title, &f.outcome.history).write_html(args.out.join(&file))?;
                    html.push_str(&format!(
                        "<td class=\"bad\"><a href=\"{file}\" title=\"{}\">{}</a></td>",
                        escape(&f.replay),
                        escape(&cell_text(r))
                    ));
                }
                None => html.push_str(&format!("<td class=\"ok\">{}</td>", escape(&cell_text(r)))),
            }
        }
        html.push_str("</tr>");
    }
    html.push_str("</table><h2>Minimal schedules</h2><ul>");
    for r in reports {
        if let Some(f) = &r.first {
            html.push_str(&format!(
                "<li>{} × {}: seed {}, <code>{}</code><br><code>{}</code></li>",
                r.exploration.workload.kind,
                r.exploration.class.name(),
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
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .try_init();
    }
    eprintln!("replaying {kind}, seed {seed}, schedule '{schedule}'");
    let outcome = run(Workload::new(kind), schedule, seed);
    print!("{}", outcome.history.serialize());
    for v in &outcome.violations {
        println!("violation: {v}");
    }
    for l in &outcome.liveness {
        println!("liveness: {l}");
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
