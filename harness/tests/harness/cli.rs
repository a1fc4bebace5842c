//! Scenario 9: the failover double grant driven purely over the wire by `redis-cli`
//! (`tests/harness_cli.sh`), against the `locksmith-harness` binary.

use std::process::Command;

#[test]
fn redis_cli_drives_a_failover_with_admin_commands() {
    if Command::new("redis-cli").arg("--version").output().is_err() {
        eprintln!("redis-cli not on PATH: skipping the shell scenario");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/harness_cli.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_locksmith-harness"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "harness_cli.sh failed");
    assert!(stdout.contains("client B takes the same lock: double grant"));
}

/// `locksmith-harness --observe PATTERN --history-file F --timeline-file G`: the failover
/// double grant of a plain client is in `LOCKSMITH.CHECK`, and in both files once the harness
/// exits on SIGTERM.
#[test]
fn the_binary_observes_locks_and_writes_its_history_and_timeline_at_exit() {
    let dir = std::env::temp_dir().join(format!("locksmith-observe-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (port_file, history, timeline) = (
        dir.join("port"),
        dir.join("history.json"),
        dir.join("timeline.html"),
    );
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_locksmith-harness"))
        .args([
            "--port",
            "0",
            "--replicas",
            "1",
            "--replication-delay-ms",
            "2000",
        ])
        .args(["--observe", "lock:*", "--loglevel", "warning"])
        .args(["--port-file", &path(&port_file)])
        .args(["--history-file", &path(&history)])
        .args(["--timeline-file", &path(&timeline)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let url = announced_url(&port_file);
    let connect = || {
        redis::Client::open(url.as_str())
            .unwrap()
            .get_connection()
            .unwrap()
    };
    let mut a = connect();
    let set = |con: &mut redis::Connection, token: &str| -> Option<String> {
        redis::cmd("SET")
            .arg("lock:k")
            .arg(token)
            .arg("NX")
            .arg("PX")
            .arg(30_000)
            .query(con)
            .unwrap()
    };
    assert_eq!(set(&mut a, "tokA").as_deref(), Some("OK"));
    let promoted: String = redis::cmd("LOCKSMITH.FAILOVER").query(&mut a).unwrap();
    assert_eq!(promoted, "n1");
    let mut b = connect();
    assert_eq!(set(&mut b, "tokB").as_deref(), Some("OK"));
    let check: Vec<redis::Value> = redis::cmd("LOCKSMITH.CHECK").query(&mut b).unwrap();
    assert_eq!(check.len(), 1, "{check:?}");

    assert_eq!(sigterm(child.id()), 0);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let json = std::fs::read_to_string(&history).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let violations = doc["violations"].as_array().unwrap();
    assert_eq!(violations.len(), 1, "{json}");
    assert_eq!(violations[0]["kind"], "double-grant");
    assert_eq!(violations[0]["first"]["owner"], "tokA");
    assert_eq!(violations[0]["second"]["owner"], "tokB");
    let html = std::fs::read_to_string(&timeline).unwrap();
    assert!(html.contains("tokA") && html.contains("tokB"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The URL of the harness that writes its port to `port_file` once it listens, waited for
/// (bounded: 10 s).
fn announced_url(port_file: &std::path::Path) -> String {
    for _ in 0..200 {
        if let Some(port) = std::fs::read_to_string(port_file)
            .ok()
            .and_then(|s| s.trim().parse::<u16>().ok())
        {
            return format!("redis://127.0.0.1:{port}/");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!(
        "the harness did not announce its port in {}",
        port_file.display()
    );
}

/// Sends SIGTERM to our child `pid` with the `kill` command; its exit code.
fn sigterm(pid: u32) -> i32 {
    Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .map_or(-1, |s| s.code().unwrap_or(-1))
}

/// `locksmith-harness --schedule TEXT`: the explorer's failover schedule run from start (a 2 s
/// replication lag from 10 ms, the master failing 2 s later) double-grants a string lock taken
/// during the lag, and `LOCKSMITH.CHECK` reports it naming both tokens; the same harness
/// without a schedule refuses the second client and reports nothing.
#[test]
fn a_schedule_given_on_the_command_line_double_grants_a_lock_taken_during_its_lag() {
    for scheduled in [true, false] {
        let dir = std::env::temp_dir().join(format!(
            "locksmith-schedule-cli-{}-{scheduled}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let port_file = dir.join("port");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_locksmith-harness"));
        cmd.args(["--port", "0", "--replicas", "1", "--loglevel", "warning"])
            .args(["--observe", "lock:*"])
            .args(["--port-file", port_file.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if scheduled {
            cmd.args(["--schedule", "failover/n0/10/60000/2000"]);
        }
        let mut child = cmd.spawn().unwrap();
        let url = announced_url(&port_file);
        // The front resets the connections it has open to the old master at the failover: a
        // connection made at that instant is tried again (bounded).
        let connect = || {
            let client = redis::Client::open(url.as_str()).unwrap();
            let mut tries = 0;
            loop {
                match client.get_connection() {
                    Ok(con) => break con,
                    Err(e) if tries < 50 => {
                        tries += 1;
                        eprintln!("connect: {e}; trying again");
                        std::thread::sleep(std::time::Duration::from_millis(20));
                    }
                    Err(e) => panic!("connect: {e}"),
                }
            }
        };
        let set = |con: &mut redis::Connection, token: &str| -> Option<String> {
            redis::cmd("SET")
                .arg("lock:k")
                .arg(token)
                .arg("NX")
                .arg("PX")
                .arg(30_000)
                .query(con)
                .unwrap()
        };
        // After the lag started (10 ms), well before the failover (2010 ms).
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut a = connect();
        assert_eq!(set(&mut a, "tokA").as_deref(), Some("OK"));
        if scheduled {
            // Bounded wait for the scheduled failover: the front then routes to n1.
            let mut promoted = false;
            for _ in 0..100 {
                std::thread::sleep(std::time::Duration::from_millis(100));
                let Ok(info) = redis::cmd("LOCKSMITH.TOPOLOGY").query(&mut connect()) else {
                    continue; // reset by the failover
                };
                use redis::Value::{Array, BulkString};
                let master = match &info {
                    Array(items) => match items.first() {
                        Some(Array(head)) => head.chunks(2).find_map(|p| match p {
                            [BulkString(k), BulkString(v)] if k == b"master" => {
                                Some(String::from_utf8_lossy(v).into_owned())
                            }
                            _ => None,
                        }),
                        _ => None,
                    },
                    _ => None,
                };
                if master.as_deref() == Some("n1") {
                    promoted = true;
                    break;
                }
            }
            assert!(promoted, "the schedule's failover happened within 10 s");
        }
        let mut b = connect();
        let got = set(&mut b, "tokB");
        let check: Vec<redis::Value> = redis::cmd("LOCKSMITH.CHECK").query(&mut b).unwrap();
        assert_eq!(sigterm(child.id()), 0);
        assert!(child.wait().unwrap().success());
        let _ = std::fs::remove_dir_all(&dir);
        if scheduled {
            assert_eq!(
                got.as_deref(),
                Some("OK"),
                "granted again after the failover"
            );
            assert_eq!(check.len(), 1, "{check:?}");
            let text = format!("{check:?}");
            assert!(text.contains("tokA") && text.contains("tokB"), "{text}");
        } else {
            assert_eq!(got, None, "refused without a fault");
            assert!(check.is_empty(), "{check:?}");
        }
    }
}
