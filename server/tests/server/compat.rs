//! The compatibility target chosen at start (`--compat`, `Config::compat`): each target's
//! `INFO server`, `HELLO` and `LOLWUT` compared field by field with its reference server
//! (redis-server 7.0.15, valkey-server 8.1.8), the values that vary per process aside.

use locksmith_server::Compat;
use locksmith_testkit::{self as support, Pair};
use redis::Value;

/// `INFO server`'s fields that differ between two processes on one machine (or between two
/// builds), whose values are not compared; their names and order are.
const PER_PROCESS: &[&str] = &[
    "redis_git_dirty",
    "redis_build_id",
    "gcc_version",
    "process_id",
    "run_id",
    "tcp_port",
    "server_time_usec",
    "uptime_in_seconds",
    "uptime_in_days",
    "lru_clock",
    "executable",
];

/// `INFO server`'s lines of `con`, the per-process values blanked and the port in the
/// listener line replaced by `PORT`.
async fn info_server(con: &mut redis::aio::MultiplexedConnection, port: u16) -> Vec<String> {
    support::info(con, "server")
        .await
        .into_iter()
        .map(|(k, v)| {
            if PER_PROCESS.contains(&k.as_str()) {
                format!("{k}:")
            } else {
                format!("{k}:{}", v.replace(&format!("port={port}"), "port=PORT"))
            }
        })
        .collect()
}

/// HELLO's reply as (name, value) pairs, the connection id left out.
async fn hello(con: &mut redis::aio::MultiplexedConnection, args: &[&str]) -> Vec<String> {
    let reply: Value = support::cmd(args).query_async(con).await.unwrap();
    let pairs: Vec<(Value, Value)> = match reply {
        Value::Map(pairs) => pairs,
        Value::Array(items) => items
            .chunks(2)
            .map(|pair| (pair[0].clone(), pair[1].clone()))
            .collect(),
        other => panic!("HELLO answered {other:?}"),
    };
    pairs
        .into_iter()
        .filter(|(k, _)| *k != Value::BulkString(b"id".to_vec()))
        .map(|(k, v)| format!("{k:?} {v:?}"))
        .collect()
}

/// The last line of LOLWUT's text (the version line).
async fn lolwut_last_line(con: &mut redis::aio::MultiplexedConnection, args: &[&str]) -> String {
    let text: String = support::cmd(args).query_async(con).await.unwrap();
    text.lines().last().unwrap_or_default().to_string()
}

/// Our `INFO server` under `compat`, compared first with the target's reference (when its
/// binary is there): INFO server, HELLO 2 and 3, LOLWUT's plain version line and the last line
/// of its two drawings.
async fn matches_reference(compat: Compat) -> Vec<String> {
    let mut pair = Pair::start_for(compat).await;
    let ours_port = pair.ours.addr().port();
    let ours = info_server(&mut pair.ours_con, ours_port).await;
    let (Some(real), Some(real_con)) = (&pair.real, &mut pair.real_con) else {
        return ours;
    };
    let real_port = real.port;
    assert_eq!(
        ours,
        info_server(real_con, real_port).await,
        "INFO server under {compat} (left: ours)"
    );
    for args in [&["HELLO", "2"][..], &["HELLO", "3"], &["HELLO"]] {
        assert_eq!(
            hello(&mut pair.ours_con, args).await,
            hello(real_con, args).await,
            "{args:?} under {compat} (left: ours)"
        );
    }
    for args in [
        &["LOLWUT"][..],
        &["LOLWUT", "VERSION", "5", "1", "1", "1"],
        &["LOLWUT", "VERSION", "6", "1", "1"],
        &["LOLWUT", "VERSION", "1"],
    ] {
        let o = lolwut_last_line(&mut pair.ours_con, args).await;
        assert_eq!(
            o,
            lolwut_last_line(real_con, args).await,
            "{args:?} under {compat}"
        );
    }
    if compat == Compat::Valkey81 {
        // Valkey adds the zone to HELLO only once one is set.
        let set = ["CONFIG", "SET", "availability-zone", "zone-a"];
        let () = support::cmd(&set)
            .query_async(&mut pair.ours_con)
            .await
            .unwrap();
        let () = support::cmd(&set).query_async(real_con).await.unwrap();
        assert_eq!(
            hello(&mut pair.ours_con, &["HELLO", "3"]).await,
            hello(real_con, &["HELLO", "3"]).await
        );
        assert_eq!(
            info_server(&mut pair.ours_con, ours_port).await,
            info_server(real_con, real_port).await
        );
    }
    ours
}

/// `CONFIG GET pattern` as a map.
async fn parameters(
    con: &mut redis::aio::MultiplexedConnection,
    pattern: &str,
) -> std::collections::BTreeMap<String, String> {
    support::cmd(&["CONFIG", "GET", pattern])
        .query_async(con)
        .await
        .unwrap()
}

/// `CONFIG GET *` as a map.
async fn all_parameters(
    con: &mut redis::aio::MultiplexedConnection,
) -> std::collections::BTreeMap<String, String> {
    parameters(con, "*").await
}

/// Under `compat`, ours lists the reference's parameter names, and the values of `compared`
/// (and of every name not in Redis 7.0.15's table) are the reference's.
async fn parameters_match_reference(compat: Compat, compared: &[&str]) {
    let mut pair = Pair::start_for(compat).await;
    let ours = all_parameters(&mut pair.ours_con).await;
    let Some(real_con) = &mut pair.real_con else {
        return;
    };
    let real = all_parameters(real_con).await;
    let names = |m: &std::collections::BTreeMap<String, String>| -> Vec<String> {
        m.keys().cloned().collect()
    };
    assert_eq!(
        names(&ours),
        names(&real),
        "CONFIG GET * names under {compat}"
    );
    let redis = Pair::start_for(Compat::Redis70).await;
    let mut redis_con = redis.ours_con;
    let redis_names = all_parameters(&mut redis_con).await;
    for (name, value) in &real {
        if compared.contains(&name.as_str()) || !redis_names.contains_key(name) {
            assert_eq!(ours.get(name), Some(value), "{name} under {compat}");
        }
    }
}

#[tokio::test]
async fn each_target_lists_its_references_parameters_and_defaults() {
    parameters_match_reference(Compat::Redis70, &["lazyfree-lazy-user-del", "syslog-ident"]).await;
    parameters_match_reference(
        Compat::Valkey81,
        &[
            "lazyfree-lazy-eviction",
            "lazyfree-lazy-expire",
            "lazyfree-lazy-server-del",
            "lazyfree-lazy-user-del",
            "lazyfree-lazy-user-flush",
            "replica-lazy-flush",
            "slave-lazy-flush",
            "repl-backlog-size",
            "syslog-ident",
            "slowlog-log-slower-than",
            "slowlog-max-len",
        ],
    )
    .await;
}

#[tokio::test]
async fn valkeys_new_names_and_parameters_answer_only_under_its_target() {
    let mut pair = Pair::start_for(Compat::Valkey81).await;
    // A new name and the old one are one parameter.
    for args in [
        &["CONFIG", "SET", "commandlog-execution-slower-than", "2500"][..],
        &["CONFIG", "GET", "slowlog-log-slower-than"],
        &["CONFIG", "SET", "slowlog-max-len", "7"],
        &["CONFIG", "GET", "commandlog-slow-execution-max-len"],
        &["CONFIG", "SET", "set-max-listpack-entries", "-1"],
        &["CONFIG", "SET", "log-format", "json"],
        &["CONFIG", "SET", "rdb-version-check", "relaxed"],
        &["CONFIG", "GET", "rdb-version-check"],
        &["CONFIG", "GET", "dynamic-hz"],
        &["CONFIG", "GET", "aof-disable-auto-gc"],
    ] {
        pair.same(args).await;
    }
    // A pattern lists in the order of the server's hash table: compared as maps.
    if let Some(real_con) = &mut pair.real_con {
        for pattern in ["commandlog-*", "aof-*", "*cpulist*", "primary*"] {
            assert_eq!(
                parameters(&mut pair.ours_con, pattern).await,
                parameters(real_con, pattern).await,
                "CONFIG GET {pattern}"
            );
        }
    }
    let mut redis = Pair::start_for(Compat::Redis70).await;
    for args in [
        &["CONFIG", "GET", "availability-zone"][..],
        &["CONFIG", "SET", "primaryauth", "x"],
        &["CONFIG", "GET", "dynamic-hz"],
    ] {
        redis.same(args).await;
    }
}

#[tokio::test]
async fn redis_target_answers_as_redis_server_7_0_15() {
    let info = matches_reference(Compat::Redis70).await;
    assert_eq!(
        info.first().map(String::as_str),
        Some("redis_version:7.0.15")
    );
}

#[tokio::test]
async fn valkey_target_answers_as_valkey_server_8_1_8() {
    let info = matches_reference(Compat::Valkey81).await;
    assert_eq!(
        info.get(..3),
        Some(
            &[
                "redis_version:7.2.4".to_string(),
                "server_name:valkey".to_string(),
                "valkey_version:8.1.8".to_string()
            ][..]
        )
    );
}

#[test]
fn the_binary_refuses_an_unknown_target_and_names_the_accepted_ones() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_locksmith-server"))
        .args(["--port", "0", "--compat", "valkey-9.0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "invalid value 'valkey-9.0' for '--compat <COMPAT>': unknown compatibility target \
             'valkey-9.0' (expected redis-7.0 or valkey-8.1)"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn scripts_and_functions_see_the_targets_lua_api() {
    let mut valkey = Pair::start_for(Compat::Valkey81).await;
    for field in [
        "REDIS_VERSION",
        "REDIS_VERSION_NUM",
        "VALKEY_VERSION",
        "VALKEY_VERSION_NUM",
        "SERVER_NAME",
        "SERVER_VERSION",
    ] {
        let script = format!("return tostring(server.{field})");
        valkey.same(&["EVAL", &script, "0"]).await;
    }
    valkey
        .same(&["EVAL", "return tostring(server == redis)", "0"])
        .await;
    valkey
        .same(&["EVAL", "return server.call('SET', KEYS[1], 'v')", "1", "k"])
        .await;
    let library = "#!lua name=lib\n\
                   server.register_function('get', function(keys) \
                   return {server.call('GET', keys[1]), server.SERVER_NAME} end)";
    valkey.same(&["FUNCTION", "LOAD", library]).await;
    let ours = valkey.same(&["FCALL", "get", "1", "k"]).await;
    assert!(ours.contains("valkey"), "{ours}");

    // Redis 7.0 has no `server` global: the sandbox refuses it, and a library using it fails.
    let mut redis = Pair::start_for(Compat::Redis70).await;
    redis
        .same(&["EVAL", "return tostring(redis.REDIS_VERSION_NUM)", "0"])
        .await;
    let refused = redis
        .same(&["EVAL", "return server.call('PING')", "0"])
        .await;
    assert!(
        refused.contains("nonexistent global variable 'server'"),
        "{refused}"
    );
    redis.same(&["FUNCTION", "LOAD", library]).await;
}

#[tokio::test]
async fn script_error_texts_name_commands_as_the_target_does() {
    let library = "#!lua name=bad\nredis.register_function('f')";
    for compat in Compat::ALL {
        let mut pair = Pair::start_for(compat).await;
        for args in [
            &["EVAL", "return redis.call('nosuch')", "0"][..],
            &["EVAL", "return redis.call('get')", "0"],
            &["EVAL", "return redis.call('subscribe', 'c')", "0"],
            &["FUNCTION", "LOAD", library],
        ] {
            pair.same(args).await;
        }
    }
}

/// The commands and subcommands README lists as missing under `compat` (Redis's list, and
/// Valkey's too under its target), lowercase as `COMMAND LIST` names them (`cluster|meet`).
fn lacking_under(compat: Compat) -> Vec<String> {
    let readme = include_str!("../../../README.md");
    let markers: &[&str] = match compat {
        Compat::Redis70 => &["not-implemented"],
        _ => &["not-implemented", "not-implemented-valkey"],
    };
    let mut names = Vec::new();
    for marker in markers {
        let listed = readme
            .split(&format!("<!-- {marker} -->"))
            .nth(1)
            .and_then(|rest| rest.split(&format!("<!-- /{marker} -->")).next())
            .unwrap_or_default();
        names.extend(
            listed
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|w| {
                    w.chars()
                        .all(|c| c.is_ascii_uppercase() || c == ' ' || c == '-')
                })
                .map(|w| w.to_ascii_lowercase().replace(' ', "|")),
        );
    }
    names
}
/// `value` with every `[name, ...]` array or `name => ...` map entry in it whose name is in
/// `drop` left out, and the entries of every array of arrays or map sorted (a server lists
/// subcommands in its hash table's order, which changes from process to process).
fn without(value: &Value, drop: &[String]) -> Value {
    let named = |v: &Value| match v {
        Value::Array(items) => match items.first() {
            Some(Value::BulkString(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            Some(Value::SimpleString(s)) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    };
    let key = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        other => format!("{other:?}"),
    };
    match value {
        Value::Array(items) if !items.is_empty() && items.iter().all(|i| named(i).is_some()) => {
            let mut kept: Vec<Value> = items
                .iter()
                .filter(|i| named(i).is_none_or(|n| !drop.contains(&n)))
                .map(|i| without(i, drop))
                .collect();
            kept.sort_by_key(|i| named(i).unwrap_or_default());
            Value::Array(kept)
        }
        // A map in RESP2: name, value, name, value...
        Value::Array(items)
            if items.len() % 2 == 0
                && items.chunks(2).all(|pair| {
                    matches!(pair[0], Value::BulkString(_))
                        && matches!(pair[1], Value::Array(_) | Value::Map(_))
                }) =>
        {
            let mut pairs: Vec<(String, Value, Value)> = items
                .chunks(2)
                .filter(|pair| !drop.contains(&key(&pair[0])))
                .map(|pair| (key(&pair[0]), pair[0].clone(), without(&pair[1], drop)))
                .collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Array(pairs.into_iter().flat_map(|(_, k, v)| [k, v]).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(|i| without(i, drop)).collect()),
        Value::Map(pairs) => {
            let mut kept: Vec<(Value, Value)> = pairs
                .iter()
                .filter(|(k, _)| !drop.contains(&key(k)))
                .map(|(k, v)| (k.clone(), without(v, drop)))
                .collect();
            kept.sort_by_key(|(k, _)| key(k));
            Value::Map(kept)
        }
        other => other.clone(),
    }
}

/// Under `compat` the command table is its reference's: `COMMAND LIST` is the reference's list
/// without what README says we lack (and with `ours`, our additions the reference lacks),
/// `COMMAND COUNT` counts the same, and `COMMAND INFO`/`DOCS` of every command and subcommand
/// are the reference's replies (subcommands we lack left out), in RESP2 and RESP3.
async fn command_table_is_the_references(compat: Compat, ours_only: &[&str]) -> Vec<String> {
    let mut pair = Pair::start_for(compat).await;
    let lacking = lacking_under(compat);
    let mut ours: Vec<String> = support::cmd(&["COMMAND", "LIST"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    ours.sort();
    let count: usize = support::cmd(&["COMMAND", "COUNT"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    assert_eq!(count, ours.iter().filter(|n| !n.contains('|')).count());
    let Some(real_con) = pair.real_con.as_mut() else {
        return ours;
    };
    let mut theirs: Vec<String> = support::cmd(&["COMMAND", "LIST"])
        .query_async(real_con)
        .await
        .unwrap();
    theirs.retain(|n| !lacking.contains(n));
    theirs.extend(ours_only.iter().map(|n| n.to_string()));
    theirs.sort();
    assert_eq!(ours, theirs, "COMMAND LIST under {compat} (left: ours)");
    let mut compared = 0;
    for protocol in ["2", "3"] {
        let hello = ["HELLO", protocol];
        let _: Value = support::cmd(&hello)
            .query_async(&mut pair.ours_con)
            .await
            .unwrap();
        let _: Value = support::cmd(&hello).query_async(real_con).await.unwrap();
        for name in ours.iter().filter(|n| !ours_only.contains(&n.as_str())) {
            for what in ["INFO", "DOCS"] {
                let args = ["COMMAND", what, name.as_str()];
                let o: Value = support::cmd(&args)
                    .query_async(&mut pair.ours_con)
                    .await
                    .unwrap();
                let r: Value = support::cmd(&args).query_async(real_con).await.unwrap();
                let mut drop = lacking.clone();
                drop.extend(ours_only.iter().map(|n| n.to_string()));
                assert_eq!(
                    without(&o, &drop),
                    without(&r, &drop),
                    "COMMAND {what} {name} in RESP{protocol} under {compat} (left: ours)"
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 1400, "{compared}");
    // And the table's errors.
    pair.all_same(&[
        &["COMMAND", "INFO", "nosuch"],
        &["COMMAND", "DOCS", "nosuch"],
        &["COMMAND", "COUNT", "x"],
        &["COMMAND", "GETKEYS", "set", "a", "b"],
        &["COMMAND", "GETKEYS", "nosuch", "a"],
        &["COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch"],
    ])
    .await;
    ours
}

#[tokio::test]
async fn command_table_under_valkey_is_valkey_servers() {
    let ours = command_table_is_the_references(Compat::Valkey81, &[]).await;
    // Valkey's additions after Redis 7.0 that we have.
    for name in ["client|no-touch", "client|setinfo"] {
        assert!(ours.contains(&name.to_string()), "{name}");
    }
}

/// The default target keeps Redis 7.0.15's table (with our two 7.2 `CLIENT` subcommands):
/// Valkey's additions are unknown there, as redis-server answers.
#[tokio::test]
async fn command_table_under_redis_is_redis_servers() {
    let ours =
        command_table_is_the_references(Compat::Redis70, &["client|no-touch", "client|setinfo"])
            .await;
    assert!(!ours.contains(&"waitaof".to_string()));
    let mut pair = Pair::start_for(Compat::Redis70).await;
    pair.all_same(&[
        &["WAITAOF", "0", "0", "0"],
        &["COMMANDLOG", "LEN", "slow"],
        &["SCRIPT", "SHOW", "abc"],
        &["CLIENT", "CAPA", "redirect"],
        &["CLUSTER", "MYSHARDID"],
        &["COMMAND", "INFO", "waitaof"],
        &["COMMAND", "DOCS", "commandlog"],
    ])
    .await;
}

/// The binary started with `env` set (and `args`): the first `INFO server` line after
/// `redis_version`, or the error it exited with.
fn binary_target(env: &str, args: &[&str]) -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!(
        "locksmith-compat-env-{}-{}",
        std::process::id(),
        support::free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let port_file = dir.join("port");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_locksmith-server"))
        .env(locksmith_server::COMPAT_ENV, env)
        .args(["--port", "0", "--loglevel", "warning", "--port-file"])
        .arg(&port_file)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let port = loop {
        if let Some(port) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|p| p.trim().parse::<u16>().ok())
        {
            break port;
        }
        if let Some(_status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            let _ = std::fs::remove_dir_all(&dir);
            return Err(stderr);
        }
        assert!(std::time::Instant::now() < deadline, "no port file");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let reply = support::raw_exchange(
        std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        b"INFO server\r\n",
        std::time::Duration::from_millis(300),
    );
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&reply).to_string();
    Ok(text
        .lines()
        .nth(3)
        .unwrap_or_default()
        .trim_end()
        .to_string())
}

/// `LOCKSMITH_COMPAT` chooses the target where `--compat` is not given (how the lock library's
/// and the harness's suites run against Valkey's); `--compat` wins; a bad name stops the start.
#[test]
fn the_binary_takes_its_default_target_from_locksmith_compat() {
    assert_eq!(
        binary_target("valkey-8.1", &[]).as_deref(),
        Ok("server_name:valkey")
    );
    assert_eq!(
        binary_target("", &[]).as_deref(),
        Ok("redis_git_sha1:00000000")
    );
    assert_eq!(
        binary_target("valkey-8.1", &["--compat", "redis-7.0"]).as_deref(),
        Ok("redis_git_sha1:00000000")
    );
    let refused = binary_target("valkey-9", &[]).unwrap_err();
    assert!(
        refused.contains(
            "LOCKSMITH_COMPAT: unknown compatibility target 'valkey-9' (expected redis-7.0 or \
             valkey-8.1)"
        ),
        "{refused}"
    );
}

/// Waits (bounded) until `INFO clients` counts `n` blocked clients.
async fn blocked(con: &mut redis::aio::MultiplexedConnection, n: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let now = support::info_field(con, "clients", "blocked_clients").await;
        if now == n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{now} blocked clients, not {n}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// `INFO clients` under each target against its reference: the fields in order (Valkey's
/// pub/sub, WATCH, blocking-key and pause fields) and their values with two clients blocked
/// (a list pop and an XREADGROUP on one key), one watching two keys and one subscribed; the
/// reference's input/output buffer peaks aside.
#[tokio::test]
async fn info_clients_has_each_targets_fields_and_counts() {
    for compat in Compat::ALL {
        let pair = Pair::start_for(compat).await;
        let mut addrs = vec![pair.ours.addr()];
        addrs.extend(pair.real.as_ref().map(|r| r.addr()));
        let mut seen = Vec::new();
        for addr in addrs {
            let url = format!("redis://{addr}/");
            let mut con = support::conn(&url).await;
            support::run(&mut con, &["XGROUP", "CREATE", "k", "g", "$", "MKSTREAM"]).await;
            support::run(&mut con, &["DEL", "k"]).await;
            let mut pop = support::Wire::connect(addr).await;
            pop.send(&[&["BLPOP", "k", "0"]]).await;
            // The pop blocks on a missing key before the stream takes the key's name.
            blocked(&mut con, "1").await;
            support::run(&mut con, &["XGROUP", "CREATE", "k", "g", "$", "MKSTREAM"]).await;
            let mut group = support::Wire::connect(addr).await;
            group
                .send(&[&[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c",
                    "BLOCK",
                    "0",
                    "STREAMS",
                    "k",
                    ">",
                ]])
                .await;
            let mut watch = support::Wire::connect(addr).await;
            watch.call(&[&["WATCH", "a", "b"]], 1).await;
            let mut sub = support::Wire::connect(addr).await;
            sub.call(&[&["SUBSCRIBE", "ch"]], 1).await;
            blocked(&mut con, "2").await;
            let lines: Vec<String> = support::info(&mut con, "clients")
                .await
                .into_iter()
                .map(|(k, v)| {
                    if k.starts_with("client_recent_max") || k == "connected_clients" {
                        k
                    } else {
                        format!("{k}:{v}")
                    }
                })
                .collect();
            seen.push(lines);
        }
        let expected: &[&str] = match compat {
            Compat::Redis70 => &["blocked_clients:2", "tracking_clients:0"],
            Compat::Valkey81 => &[
                "blocked_clients:2",
                "pubsub_clients:1",
                "watching_clients:1",
                "total_watched_keys:2",
                "total_blocking_keys:1",
                "total_blocking_keys_on_nokey:1",
                "paused_reason:none",
            ],
        };
        for line in expected {
            assert!(
                seen[0].iter().any(|l| l == line),
                "{compat}: {line} in {:?}",
                seen[0]
            );
        }
        if let [ours, theirs] = &seen[..] {
            assert_eq!(ours, theirs, "{compat}: ours, then the reference");
        }
    }
}
