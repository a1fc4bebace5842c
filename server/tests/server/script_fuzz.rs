//! A script fuzzer (issue 37): random Lua programs built from Redis's script API and libraries
//! (cjson, cmsgpack, bit, struct, string, table, load, redis.call) with pathological arguments
//! (huge counts and ranges, deep nesting, long patterns, binary chunks), run against one
//! in-process server; a script still running after a few seconds is ended with SCRIPT KILL,
//! and the test fails as soon as the server does not answer. A short run by default;
//! `LOCKSMITH_SCRIPT_FUZZ_CASES=5000 LOCKSMITH_SCRIPT_FUZZ_SEED=7 cargo test -p locksmith-server
//! --test server script_fuzz` runs long (CONTRIBUTING.md).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use std::time::Duration;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Numbers that break careless integer code: the ends of int32, beyond them, zero, small.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "100",
    "8000",
    "65535",
    "2147483647",
    "-2147483648",
    "2^31",
    "-2^31",
    "2^32",
    "2^53",
    "2^63",
    "2^64",
    "-2^63",
    "1e10",
    "-1e10",
    "1/0",
    "-1/0",
    "0/0",
    "0.5",
    "-0.5",
];

/// Counts for repetitions and nesting: around the limits of Redis and ours.
const COUNTS: &[u32] = &[
    0, 1, 15, 16, 17, 255, 1000, 1001, 3999, 4000, 5001, 8000, 50000, 70000,
];

/// One Lua expression or statement of the API, with `n` a count and `x`, `y` numbers; each
/// runs in its own pcall, so a script goes on after an error.
fn fragment(kind: u8, n: u32, x: &str, y: &str) -> String {
    match kind % 24 {
        0 => format!("unpack({{1,2,3}}, {x}, {y})"),
        1 => format!("#{{unpack({{}}, 1, {n})}}"),
        2 => format!("string.match(string.rep('a', {n}), string.rep('a?', {n}))"),
        3 => format!("string.find(string.rep('a', {n}), string.rep('.-', {n}) .. 'b')"),
        4 => format!("string.gsub(string.rep('ab', {n}), string.rep('(a)', {n} % 40), '%1')"),
        5 => format!("cjson.decode(string.rep('[', {n}) .. string.rep(']', {n}))"),
        6 => format!("cjson.decode(string.rep('{{\"a\":', {n}))"),
        7 => format!("cjson.encode(deep({n}, {}))", n.is_multiple_of(2)),
        8 => format!("cjson.decode_max_depth({x}) cjson.encode_max_depth({y})"),
        9 => format!("cmsgpack.unpack(string.rep(string.char(0x91), {n}) .. string.char(0xc0))"),
        10 => format!("cmsgpack.unpack(string.rep(string.char(0x81, 0xa1, 0x61), {n}) .. string.char(0xc0))"),
        11 => format!("cmsgpack.unpack(string.rep(string.char(0xa1, 0x61), {n}))"),
        12 => format!("cmsgpack.pack(deep({n}, {}))", !n.is_multiple_of(2)),
        13 => format!("bit.tohex({x}, {y})"),
        14 => format!("bit.band({x}, {y}) + bit.lshift({x}, {y}) + bit.arshift({x}, {y})"),
        15 => format!("struct.unpack('ic0', struct.pack('i', {x}) .. string.rep('z', {n}))"),
        16 => format!("struct.pack('c' .. {n}, 'x') .. struct.pack('i' .. ({n} % 20), {x})"),
        17 => format!("local t = {{}} table.insert(t, ({n} % 5) + 1, {x}) return table.concat(t, ',')"),
        18 => "loadstring(string.dump(function() return 1 end))".to_string(),
        19 => format!(
            "local s, d = string.dump(function() return {x} end), false \
             return load(function() if d then return nil end d = true return s end)"
        ),
        20 => format!("loadstring('return [' .. string.rep('=', {n}) .. '[x]' .. string.rep('=', {n}) .. ']')"),
        21 => format!("local t = {{}} for i = 2, {n} do t = {{t}} end return t"),
        22 => format!(
            "return {{redis.pcall('echo', {x}), redis.pcall('getrange', 'fuzz', {x}, {y})}}"
        ),
        _ => format!("string.rep('x', {n}, ''):byte({x}, {y})"),
    }
}

/// A program of `parts` fragments, each in a pcall, returning how the last one ended.
fn program(parts: &[(u8, usize, usize, usize)]) -> String {
    let mut s = String::from(
        "local function deep(n, map) local t = {} local c = t \
           for i = 1, n - 1 do local x = {} if map then c.a = x else c[1] = x end c = x end \
           return t end \
         local r\n",
    );
    for &(kind, n, x, y) in parts {
        let f = fragment(
            kind,
            COUNTS[n % COUNTS.len()],
            NUMBERS[x % NUMBERS.len()],
            NUMBERS[y % NUMBERS.len()],
        );
        let body = if f.starts_with("local ") || f.contains(" return ") {
            f
        } else {
            format!("return {f}")
        };
        s.push_str(&format!("r = {{pcall(function() {body} end)}}\n"));
    }
    // What the last fragment gave, flat: deep replies have tests of their own (a client's
    // parser refuses them).
    s.push_str(
        "cjson.decode_max_depth(1000) cjson.encode_max_depth(1000)\n\
         return {tostring(r[1]), type(r[2]), type(r[2]) == 'string' and r[2]:sub(1, 100) or ''}",
    );
    s
}

#[test]
fn random_scripts_never_take_the_server_down() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(async {
        locksmith_server::Server::builder()
            .busy_reply_threshold(Duration::from_millis(50))
            .lua_memory_limit(256 << 20)
            .start()
            .await
            .unwrap()
    });
    let url = server.url();
    let connect = || {
        let con = redis::Client::open(url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        con.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        con
    };
    let runner_con = std::cell::RefCell::new(connect());
    let admin = std::sync::Arc::new(std::sync::Mutex::new(connect()));
    let fragment = (any::<u8>(), any::<usize>(), any::<usize>(), any::<usize>());
    let strategy = prop::collection::vec(fragment, 1..6);
    let mut runner = TestRunner::new(Config {
        cases: env_u64("LOCKSMITH_SCRIPT_FUZZ_CASES").map_or(24, |c| c as u32),
        rng_seed: RngSeed::Fixed(env_u64("LOCKSMITH_SCRIPT_FUZZ_SEED").unwrap_or(37)),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |parts| {
        let script = program(&parts);
        if std::env::var_os("LOCKSMITH_SCRIPT_FUZZ_PRINT").is_some() {
            eprintln!("--- script\n{script}");
        }
        // A watchdog ends a script still running after 1 s (a backtracking pattern runs for
        // ever, in Redis too; no fragment writes, so every script can be killed): SCRIPT KILL
        // from another connection, bounded tries.
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let admin = admin.clone();
        let watchdog = std::thread::spawn(move || {
            if done_rx.recv_timeout(Duration::from_secs(1)).is_ok() {
                return;
            }
            let mut admin = admin.lock().unwrap();
            for _ in 0..100 {
                let r: redis::RedisResult<String> =
                    redis::cmd("SCRIPT").arg("KILL").query(&mut *admin);
                match r {
                    Ok(_) => return,
                    Err(e) if e.code() == Some("NOTBUSY") => {
                        if done_rx.recv_timeout(Duration::from_millis(100)).is_ok() {
                            return;
                        }
                    }
                    Err(e) => panic!("SCRIPT KILL failed: {e}"),
                }
            }
        });
        let mut con = runner_con.borrow_mut();
        let reply: redis::RedisResult<redis::Value> =
            redis::cmd("EVAL").arg(&script).arg(0).query(&mut *con);
        let _ = done_tx.send(());
        watchdog
            .join()
            .map_err(|_| TestCaseError::fail("the watchdog panicked"))?;
        if let Err(e) = &reply {
            // Script errors are replies; an I/O error is a server that went away.
            if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() {
                return Err(TestCaseError::fail(format!("{e} after:\n{script}")));
            }
        }
        let pong: redis::RedisResult<String> = redis::cmd("PING").query(&mut *con);
        let pong = pong.unwrap_or_else(|e| e.to_string());
        prop_assert_eq!(pong.as_str(), "PONG", "after:\n{}", script);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    drop(server);
}
