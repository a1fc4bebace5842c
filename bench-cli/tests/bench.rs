//! `locksmith-bench`, the built binary, run with small `--requests` counts against its
//! in-process server, our server and a real `redis-server` (skipped with a notice when it is
//! not on the PATH), checked through its `--json` output: counts, error kinds, `--expect`,
//! the NOSCRIPT fallback after `SCRIPT FLUSH`, templates, and the `--html` page.

use locksmith_testkit as support;

use std::net::TcpListener;
use std::time::Duration;

use redis::AsyncCommands;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_locksmith-bench");

/// A hang guard for one run of the binary (the runs here take well under a second).
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// Runs the binary with `args` and returns its exit status, stdout and stderr.
async fn run_bench(args: &[&str]) -> (bool, String, String) {
    let child = tokio::process::Command::new(BIN)
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(RUN_LIMIT, child)
        .await
        .expect("locksmith-bench finished within the hang guard")
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the binary with `args --json -q`, requires success and parses its report.
async fn bench(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--json", "-q"]);
    let (ok, stdout, stderr) = run_bench(&all).await;
    assert!(ok, "locksmith-bench {args:?} failed: {stderr}");
    serde_json::from_str(&stdout).unwrap()
}

/// The report of target `i`.
fn target(report: &Value, i: usize) -> &Value {
    &report["targets"][i]
}

fn count(v: &Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

fn errors_of(v: &Value, kind: &str) -> u64 {
    v["errors"][kind]["count"].as_u64().unwrap_or(0)
}

/// `--target` values: our server (in the test process, so the test can reach it) and the
/// real one when it is installed.
fn targets(
    ours: &locksmith_server::ServerHandle,
    real: &Option<support::RealRedis>,
) -> Vec<String> {
    let mut t = vec![format!("ours={}", ours.url())];
    if let Some(r) = real {
        t.push(format!("redis={}", r.url()));
    }
    t
}

fn with_targets<'a>(args: &[&'a str], targets: &'a [String]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    for t in targets {
        all.extend(["--target", t.as_str()]);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_runs_without_errors_in_process_and_on_redis() {
    let real = support::RealRedis::start();
    let mut target_args = vec!["--target", "in-process"];
    let url = real.as_ref().map(|r| format!("redis={}", r.url()));
    if let Some(u) = &url {
        target_args.extend(["--target", u.as_str()]);
    }
    let listed: Value = serde_json::from_str(&run_bench(&["--list", "--json"]).await.1).unwrap();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "acquire",
            "release",
            "reentrant",
            "cycle",
            "contended",
            "fair",
            "rwlock",
            "simple"
        ]
    );
    for name in names {
        let mut args = vec![
            "--scenario",
            name,
            "--requests",
            "200",
            "--clients",
            "4",
            "--pipeline",
            "3",
            "--warmup",
            "0",
        ];
        args.extend(&target_args);
        let report = bench(&args).await;
        assert_eq!(report["workload"]["name"], name);
        assert_eq!(count(&report, "clients"), 4);
        assert_eq!(count(&report, "pipeline"), 3);
        let n = report["targets"].as_array().unwrap().len();
        assert_eq!(n, 1 + usize::from(real.is_some()));
        for i in 0..n {
            let t = target(&report, i);
            assert_eq!(count(t, "requests"), 200, "{name}: {t}");
            assert_eq!(count(t, "ok"), 200, "{name}: {t}");
            assert_eq!(count(t, "error_count"), 0, "{name}: {t}");
            let latency = &t["latency_us"];
            let p50 = latency["p50"].as_f64().unwrap();
            let p99 = latency["p99"].as_f64().unwrap();
            let max = latency["max"].as_f64().unwrap();
            assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{name}: {latency}");
        }
        assert_eq!(target(&report, 0)["name"], "locksmith (in-process)");
        assert_eq!(target(&report, 0)["ratio"].as_f64(), Some(1.0));
        if real.is_some() {
            let ratio = target(&report, 1)["ratio"].as_f64().unwrap();
            let expected = target(&report, 1)["throughput"].as_f64().unwrap()
                / target(&report, 0)["throughput"].as_f64().unwrap();
            assert!((ratio - expected).abs() < 1e-9 * expected.max(1.0));
        }
    }
}

#[tokio::test]
async fn scenario_scripts_are_the_lock_librarys_redisson_text() {
    let listed: Value = serde_json::from_str(&run_bench(&["--list", "--json"]).await.1).unwrap();
    let lock_scripts = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../lock/src/scripts.rs"
    ))
    .unwrap();
    let mut checked = 0;
    for scenario in listed.as_array().unwrap() {
        for script in scenario["scripts"].as_array().unwrap() {
            let body = script["body"].as_str().unwrap();
            // The Rust literal of the body, as `lock/src/scripts.rs` writes it.
            let literal = format!("{body:?}");
            assert!(
                lock_scripts.contains(&literal),
                "{} of {} differs from lock/src/scripts.rs",
                script["name"],
                scenario["name"]
            );
            checked += 1;
        }
    }
    // acquire+release in five scenarios, fair 2, rwlock 4, simple 1.
    assert_eq!(checked, 17);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_templates_fill_in_client_sequence_and_random_numbers() {
    let (ours, real) = support::both().await;
    let dir = std::env::temp_dir().join(format!("locksmith-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("log.lua");
    std::fs::write(
        &script,
        "redis.call('rpush', 'bench:log', KEYS[1] .. '|' .. ARGV[1]); return 1",
    )
    .unwrap();
    let script = script.to_str().unwrap();
    for url in targets(&ours, &real) {
        let url = url.split_once('=').unwrap().1.to_owned();
        let mut conn = support::conn(&url).await;
        let _: () = redis::cmd("DEL")
            .arg("bench:log")
            .query_async(&mut conn)
            .await
            .unwrap();
        let report = bench(&[
            "--script",
            script,
            "--keys",
            "{x}:{client}:{seq}",
            "--args",
            "{client}:{seq}:{rand}",
            "--expect",
            "1",
            "--keyspace",
            "5",
            "--clients",
            "3",
            "--pipeline",
            "2",
            "--requests",
            "30",
            "--warmup",
            "0",
            "--target",
            &url,
        ])
        .await;
        let t = target(&report, 0);
        assert_eq!((count(t, "requests"), count(t, "ok")), (30, 30), "{t}");
        let log: Vec<String> = conn.lrange("bench:log", 0, -1).await.unwrap();
        assert_eq!(log.len(), 30);
        let mut seqs = vec![Vec::new(); 3];
        for entry in &log {
            let (key, arg) = entry.split_once('|').unwrap();
            // `{x}` is not a placeholder: it stays, as a hash tag would.
            let key = key.strip_prefix("{x}:").unwrap();
            let parts: Vec<&str> = arg.split(':').collect();
            assert_eq!(parts.len(), 3, "{entry}");
            assert_eq!(key, format!("{}:{}", parts[0], parts[1]), "{entry}");
            let rand = parts[2];
            assert_eq!(rand.len(), 12, "{entry}");
            assert!(rand.parse::<u64>().unwrap() < 5, "{entry}");
            let client: usize = parts[0].parse().unwrap();
            seqs[client].push(parts[1].parse::<u64>().unwrap());
        }
        // Each client numbers its own requests from 0, in order.
        for s in &seqs {
            assert_eq!(*s, (0..s.len() as u64).collect::<Vec<_>>());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_catches_a_wrong_script_with_one_example() {
    let (ours, real) = support::both().await;
    let dir = std::env::temp_dir().join(format!("locksmith-bench-expect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Meant to return nil like Redisson's acquire, but returns 1.
    let script = dir.join("wrong.lua");
    std::fs::write(&script, "redis.call('set', KEYS[1], ARGV[1]); return 1").unwrap();
    let ts = targets(&ours, &real);
    let args = with_targets(
        &[
            "--script",
            script.to_str().unwrap(),
            "--keys",
            "k:{client}",
            "--args",
            "v",
            "--expect",
            "nil",
            "--requests",
            "40",
            "--clients",
            "2",
            "--warmup",
            "0",
        ],
        &ts,
    );
    let report = bench(&args).await;
    for i in 0..ts.len() {
        let t = target(&report, i);
        assert_eq!(count(t, "requests"), 40);
        assert_eq!(count(t, "ok"), 0);
        assert_eq!(errors_of(t, "unexpected"), 40, "{t}");
        assert_eq!(count(t, "error_count"), 40);
        let example = t["errors"]["unexpected"]["example"].as_str().unwrap();
        assert_eq!(example, "wrong.lua: got :1, expected nil");
    }
    // The right expectation passes, and a scenario's own check holds without --expect.
    let mut ok_args = args.clone();
    let at = ok_args.iter().position(|a| *a == "nil").unwrap();
    ok_args[at] = "int:1";
    let report = bench(&ok_args).await;
    for i in 0..ts.len() {
        assert_eq!(count(target(&report, i), "error_count"), 0);
    }
    // A scenario run with a wrong --expect is caught the same way.
    let report = bench(&with_targets(
        &[
            "--scenario",
            "reentrant",
            "--expect",
            "int",
            "-n",
            "10",
            "-c",
            "1",
            "--warmup",
            "0",
        ],
        &ts,
    ))
    .await;
    for i in 0..ts.len() {
        assert_eq!(errors_of(target(&report, i), "unexpected"), 10);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_replies_are_counted_by_their_first_word_on_both_servers() {
    let (ours, real) = support::both().await;
    let dir = std::env::temp_dir().join(format!("locksmith-bench-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Even requests: an ERR reply; odd ones: WRONGTYPE from a command the script runs.
    let script = dir.join("errors.lua");
    std::fs::write(
        &script,
        "if tonumber(ARGV[1]) % 2 == 0 then return redis.error_reply('ERR boom') end \
         redis.call('hset', KEYS[1], 'f', 'v') return redis.call('incr', KEYS[1])",
    )
    .unwrap();
    let ts = targets(&ours, &real);
    let report = bench(&with_targets(
        &[
            "--script",
            script.to_str().unwrap(),
            "--keys",
            "h:{client}",
            "--args",
            "{seq}",
            "--clients",
            "1",
            "--pipeline",
            "4",
            "--requests",
            "20",
            "--warmup",
            "0",
        ],
        &ts,
    ))
    .await;
    for i in 0..ts.len() {
        let t = target(&report, i);
        assert_eq!(count(t, "requests"), 20, "{t}");
        assert_eq!(errors_of(t, "ERR"), 10, "{t}");
        assert_eq!(errors_of(t, "WRONGTYPE"), 10, "{t}");
        assert_eq!(count(t, "error_count"), 20);
        let example = t["errors"]["ERR"]["example"].as_str().unwrap();
        assert_eq!(example, "errors.lua: -ERR boom");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evalsha_falls_back_to_script_load_after_script_flush() {
    let (ours, real) = support::both().await;
    let ts = targets(&ours, &real);
    let args = |preload: bool| {
        let mut a = vec![
            "--scenario",
            "cycle",
            "--clients",
            "3",
            "--pipeline",
            "4",
            "--requests",
            "60",
            "--warmup",
            "0",
        ];
        if !preload {
            a.push("--no-preload");
        }
        with_targets(&a, &ts)
    };
    // A first run loads the scripts.
    let report = bench(&args(true)).await;
    for i in 0..ts.len() {
        let t = target(&report, i);
        assert_eq!((count(t, "ok"), count(t, "noscript_reloads")), (60, 0));
    }
    for t in &ts {
        let mut conn = support::conn(t.split_once('=').unwrap().1).await;
        let _: () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    // After the flush, EVALSHA meets NOSCRIPT: load and retry, no request lost or failed.
    let report = bench(&args(false)).await;
    for i in 0..ts.len() {
        let t = target(&report, i);
        assert_eq!(count(t, "requests"), 60, "{t}");
        assert_eq!(count(t, "ok"), 60, "{t}");
        assert_eq!(count(t, "error_count"), 0, "{t}");
        // Each client's first batch holds both scripts; at most all three clients reload both.
        let reloads = count(t, "noscript_reloads");
        assert!((1..=6).contains(&reloads), "{t}");
    }
    // The in-process server starts empty: the same fallback.
    let report = bench(&[
        "--scenario",
        "acquire",
        "--no-preload",
        "-n",
        "20",
        "-c",
        "2",
        "--warmup",
        "0",
    ])
    .await;
    let t = target(&report, 0);
    assert_eq!((count(t, "ok"), count(t, "error_count")), (20, 0));
    assert!(count(t, "noscript_reloads") >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_closing_servers_count_as_timeouts_and_io_errors() {
    // A server that accepts and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("redis://{}/", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for _ in 0..16 {
            match silent.accept() {
                Ok((s, _)) => held.push(s),
                Err(_) => break,
            }
        }
    });
    let report = bench(&[
        "--no-preload",
        "-n",
        "6",
        "-c",
        "1",
        "-P",
        "2",
        "--warmup",
        "0",
        "--timeout",
        "200",
        "--target",
        &silent_url,
    ])
    .await;
    let t = target(&report, 0);
    assert_eq!(errors_of(t, "timeout"), 6, "{t}");
    assert_eq!(count(t, "requests"), 0);
    // A server that closes every connection at once.
    let closing = TcpListener::bind("127.0.0.1:0").unwrap();
    let closing_url = format!("redis://{}/", closing.local_addr().unwrap());
    std::thread::spawn(move || {
        for _ in 0..16 {
            if closing.accept().is_err() {
                break;
            }
        }
    });
    let report = bench(&[
        "--no-preload",
        "-n",
        "6",
        "-c",
        "1",
        "-P",
        "2",
        "--warmup",
        "0",
        "--target",
        &closing_url,
    ])
    .await;
    let t = target(&report, 0);
    assert_eq!(errors_of(t, "io"), 6, "{t}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_target_fails_the_run_and_the_others_still_run() {
    let closed = format!("nothing=redis://127.0.0.1:{}/", support::free_port());
    let (ok, stdout, stderr) = run_bench(&[
        "-n",
        "10",
        "-c",
        "1",
        "--warmup",
        "0",
        "--json",
        "-q",
        "--target",
        "in-process",
        "--target",
        &closed,
    ])
    .await;
    assert!(!ok);
    assert!(
        stderr.contains("nothing: connecting to 127.0.0.1"),
        "{stderr}"
    );
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(count(target(&report, 0), "ok"), 10);
    assert!(target(&report, 1)["failed"]
        .as_str()
        .unwrap()
        .contains("connecting"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_report_has_the_charts_and_every_target() {
    let real = support::RealRedis::start();
    let page = std::env::temp_dir().join(format!("locksmith-bench-{}.html", std::process::id()));
    let page_arg = page.to_str().unwrap().to_owned();
    let mut args = vec![
        "--scenario",
        "contended",
        "-n",
        "50",
        "-c",
        "2",
        "--warmup",
        "0",
        "--html",
        &page_arg,
        "--target",
        "ours=in-process",
    ];
    let url = real.as_ref().map(|r| format!("real-redis={}", r.url()));
    if let Some(u) = &url {
        args.extend(["--target", u.as_str()]);
    }
    let report = bench(&args).await;
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg") && html.contains("<polyline") && html.contains("<rect"));
    assert!(!html.contains("<script"), "self-contained, no scripts");
    for t in report["targets"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        // In the table, the bar chart and the distribution's legend.
        assert!(html.matches(&format!(">{name}<")).count() >= 3, "{name}");
    }
    let _ = std::fs::remove_file(&page);
}

#[tokio::test]
async fn duration_and_warmup_settings_are_reported_with_the_table_by_default() {
    let report = bench(&[
        "--scenario",
        "simple",
        "--duration",
        "0.5",
        "--warmup",
        "0.2",
        "-c",
        "2",
        "-P",
        "2",
    ])
    .await;
    assert_eq!(report["duration_secs"].as_f64(), Some(0.5));
    assert_eq!(report["warmup_secs"].as_f64(), Some(0.2));
    assert_eq!(report["requests"], Value::Null);
    let t = target(&report, 0);
    assert!(count(t, "requests") >= 1);
    assert_eq!(count(t, "ok"), count(t, "requests"));
    assert_eq!(count(t, "error_count"), 0);
    // Without --json: the table, one row per target, with the column names.
    let (ok, stdout, _) = run_bench(&["-n", "10", "-c", "1", "--warmup", "0", "-q"]).await;
    assert!(ok);
    assert!(stdout.contains("p99.9 ms"), "{stdout}");
    assert!(stdout.contains("locksmith (in-process)"), "{stdout}");
}
