//! A script fuzzer (issue 37): random Lua programs built from Redis's script API and libraries
//! (cjson, cmsgpack, bit, struct, string, table, load, redis.pcall) with pathological arguments
//! (huge counts and ranges, deep nesting, long patterns, binary chunks, hostile bytes as
//! `ARGV[1]`), run against one in-process server over a connection; a script still running
//! after its bound (20 ms, `LOCKSMITH_SCRIPT_FUZZ_BOUND_MS`; also the server's
//! `busy-reply-threshold`) is ended with SCRIPT KILL from another connection, and the test
//! fails as soon as the server does not answer or refuses the kill. The generator and the
//! watchdog are
//! `fuzz/src/lib.rs`, which the cargo-fuzz target `script` shares. A short run by default;
//! long runs by hand with a count and a seed (CONTRIBUTING.md):
//! `LOCKSMITH_SCRIPT_FUZZ_CASES=1000000 LOCKSMITH_SCRIPT_FUZZ_SEED=1 cargo test -p
//! locksmith-server-tests --test server script_fuzz -- --nocapture`.

#[allow(unreachable_pub, dead_code)]
#[path = "../../../fuzz/src/lib.rs"]
mod programs;

use programs::{Kill, Part, Watchdog, BYTE_SEEDS, ENDLESS_KIND, KINDS, MAX_PARTS};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use std::time::{Duration, Instant};

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Programs between two `SCRIPT FLUSH`es: every `EVAL` of a new body stays in the script
/// cache, as in Redis 7.0, so a long run would otherwise grow without bound.
const FLUSH_EVERY: u64 = 1000;

/// Fragments and `ARGV[1]`: a seed, random bytes, or a seed with random bytes after it.
fn programs() -> impl Strategy<Value = (Vec<Part>, Vec<u8>)> {
    // The endless kind a quarter as often as the others: each one costs the whole bound.
    let kind = prop_oneof![
        1 => Just(ENDLESS_KIND),
        4 * u32::from(KINDS - 1) => (0..KINDS - 1).prop_map(|k| k + u8::from(k >= ENDLESS_KIND)),
    ];
    let part = (kind, any::<usize>(), any::<usize>(), any::<usize>())
        .prop_map(|(kind, n, x, y)| Part { kind, n, x, y });
    let seed = prop::sample::select(BYTE_SEEDS);
    let argv = prop_oneof![
        seed.clone().prop_map(<[u8]>::to_vec),
        prop::collection::vec(any::<u8>(), 0..64),
        (seed, prop::collection::vec(any::<u8>(), 0..16))
            .prop_map(|(seed, tail)| [seed, &tail].concat()),
    ];
    (prop::collection::vec(part, 1..=MAX_PARTS), argv)
}

#[test]
fn random_scripts_never_take_the_server_down() {
    let bound = Duration::from_millis(env_u64("LOCKSMITH_SCRIPT_FUZZ_BOUND_MS").unwrap_or(20));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(async {
        locksmith_server::Server::builder()
            .busy_reply_threshold(bound)
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
    let con = std::cell::RefCell::new(connect());
    let mut admin = connect();
    // No fragment writes, so every script can be killed; anything but OK or NOTBUSY (the
    // script ended meanwhile) is a failure the run reports.
    let watchdog = Watchdog::new(bound, move || {
        let r: redis::RedisResult<String> = redis::cmd("SCRIPT").arg("KILL").query(&mut admin);
        match r {
            Ok(_) => Ok(Kill::Sent),
            Err(e) if e.code() == Some("NOTBUSY") => Ok(Kill::NotBusy),
            Err(e) => Err(format!("SCRIPT KILL failed: {e}")),
        }
    });
    let cases = env_u64("LOCKSMITH_SCRIPT_FUZZ_CASES").unwrap_or(200);
    let seed = env_u64("LOCKSMITH_SCRIPT_FUZZ_SEED").unwrap_or(37);
    let print = std::env::var_os("LOCKSMITH_SCRIPT_FUZZ_PRINT").is_some();
    let mut runner = TestRunner::new(Config {
        cases: u32::try_from(cases).unwrap_or(u32::MAX),
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    });
    let started = Instant::now();
    let ran = std::cell::Cell::new(0u64);
    let errors = std::cell::Cell::new(0u64);
    let result = runner.run(&programs(), |(parts, argv)| {
        let script = programs::program(&parts);
        let shown = || format!("{script}\nARGV[1] = {:?}", String::from_utf8_lossy(&argv));
        if print {
            eprintln!("--- script\n{}", shown());
        }
        ran.set(ran.get() + 1);
        let mut con = con.borrow_mut();
        if ran.get().is_multiple_of(FLUSH_EVERY) {
            let flushed: redis::RedisResult<String> =
                redis::cmd("SCRIPT").arg("FLUSH").query(&mut *con);
            prop_assert!(flushed.is_ok(), "SCRIPT FLUSH: {:?}", flushed);
        }
        if ran.get().is_multiple_of(10_000) {
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "script_fuzz: {} programs in {secs:.0} s ({:.0}/s), {} killed, {} answered an \
                 error",
                ran.get(),
                ran.get() as f64 / secs,
                watchdog.kills(),
                errors.get(),
            );
        }
        let reply: redis::RedisResult<redis::Value> = watchdog.run(|| {
            redis::cmd("EVAL")
                .arg(&script)
                .arg(0)
                .arg(&argv)
                .query(&mut *con)
        });
        if let Some(failure) = watchdog.failure() {
            return Err(TestCaseError::fail(format!(
                "{failure} during:\n{}",
                shown()
            )));
        }
        if let Err(e) = &reply {
            // Script errors are replies (a killed script's among them); an I/O error is a
            // server that went away.
            if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() {
                return Err(TestCaseError::fail(format!("{e} after:\n{}", shown())));
            }
            errors.set(errors.get() + 1);
        }
        let pong: redis::RedisResult<String> = redis::cmd("PING").query(&mut *con);
        let pong = pong.unwrap_or_else(|e| e.to_string());
        prop_assert_eq!(pong.as_str(), "PONG", "after:\n{}", shown());
        Ok(())
    });
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "script_fuzz: seed {seed}, {} programs in {secs:.1} s, {} killed, {} answered an error",
        ran.get(),
        watchdog.kills(),
        errors.get()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    drop(watchdog);
    drop(server);
}
