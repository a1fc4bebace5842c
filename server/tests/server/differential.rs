//! Differential fuzzing of command sequences against real `redis-server`.
//!
//! The generator reads our command table (`COMMAND`: name, arity, key positions, flags) and
//! builds random sequences of commands over a small key space (four keys, a few members and
//! small numbers, the option words commands take), so that commands interact across types
//! (WRONGTYPE paths, overwrites, empty-key deletion). Each sequence runs on a fresh database of
//! our server and of real Redis, and every reply must be the same. Only what Redis itself
//! randomises or orders by hash is normalised (see [`UNORDERED`]); commands whose reply is
//! random, time- or process-dependent are not generated (see [`EXCLUDED`]).
//!
//! A bounded number of cases runs in `cargo test` (`LOCKSMITH_FUZZ_CASES`, default 256 cases of
//! up to 24 commands); proptest shrinks a failure to a minimal sequence and keeps its seed in
//! `differential.proptest-regressions`.

use locksmith_testkit as support;

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use redis::Value;
use support::RealRedis;

/// Commands never generated, with the reason.
const EXCLUDED: &[(&str, &str)] = &[
    // Random by nature.
    ("spop", "random member"),
    ("srandmember", "random member"),
    ("hrandfield", "random field"),
    ("zrandmember", "random member"),
    ("randomkey", "random key"),
    // Cursor order depends on the hash table layout.
    ("scan", "hash-table order"),
    ("sscan", "hash-table order"),
    ("hscan", "hash-table order"),
    ("zscan", "hash-table order"),
    // Time, process and server state.
    ("time", "clock"),
    ("lastsave", "clock"),
    ("info", "process state"),
    ("memory", "allocator"),
    ("object", "encodings differ by design"),
    ("debug", "protected"),
    ("client", "connection ids and addresses"),
    ("config", "process settings"),
    ("command", "the table itself"),
    ("slowlog", "timings"),
    ("latency", "timings"),
    ("monitor", "connection mode"),
    ("hello", "connection protocol"),
    ("reset", "connection state"),
    ("select", "connection state"),
    ("swapdb", "other databases"),
    ("move", "other databases"),
    ("copy", "other databases"),
    ("auth", "connection state"),
    ("quit", "closes the connection"),
    ("shutdown", "stops the server"),
    ("save", "persistence"),
    ("bgsave", "persistence"),
    ("bgrewriteaof", "persistence"),
    ("failover", "replication"),
    ("replicaof", "replication"),
    ("slaveof", "replication"),
    ("sync", "replication"),
    ("psync", "replication"),
    ("replconf", "replication"),
    ("wait", "replication"),
    ("cluster", "cluster mode"),
    ("readonly", "cluster mode"),
    ("readwrite", "cluster mode"),
    ("asking", "cluster mode"),
    ("multi", "connection state"),
    ("exec", "connection state"),
    ("discard", "connection state"),
    ("watch", "connection state"),
    ("unwatch", "connection state"),
    ("subscribe", "connection mode"),
    ("psubscribe", "connection mode"),
    ("ssubscribe", "connection mode"),
    ("unsubscribe", "connection mode"),
    ("punsubscribe", "connection mode"),
    ("sunsubscribe", "connection mode"),
    ("pubsub", "other connections"),
    ("script", "script cache state"),
    ("eval", "scripts are compared in scripting.rs"),
    ("evalsha", "scripts are compared in scripting.rs"),
    ("eval_ro", "scripts are compared in scripting.rs"),
    ("evalsha_ro", "scripts are compared in scripting.rs"),
    ("fcall", "functions are compared in scripting.rs"),
    ("fcall_ro", "functions are compared in scripting.rs"),
    ("function", "functions are compared in scripting.rs"),
    (
        "dump",
        "payload bytes differ by design (encodings); compared by content in keys.rs",
    ),
    ("restore", "needs a payload; compared in keys.rs"),
    ("flushall", "used between cases"),
    ("flushdb", "used between cases"),
    ("dbsize", "fine, but KEYS covers it"),
    ("keys", "order by hash table"),
    ("ttl", "time passes between servers"),
    ("pttl", "time passes between servers"),
    ("expiretime", "time passes between servers"),
    ("pexpiretime", "time passes between servers"),
    ("expireat", "absolute times"),
    ("pexpireat", "absolute times"),
    (
        "psetex",
        "millisecond TTLs expire while the servers run the case",
    ),
    (
        "pexpire",
        "millisecond TTLs expire while the servers run the case",
    ),
];

/// Commands whose array reply is a set (order by hash): compared sorted.
const UNORDERED: &[&str] = &[
    "smembers", "sinter", "sunion", "sdiff", "hkeys", "hvals", "hgetall",
];

/// Non-key arguments: small numbers, members, and the option words commands take.
const WORDS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "-1",
    "-2",
    "10",
    "1.5",
    "-inf",
    "+inf",
    "(1",
    "[a",
    "-",
    "+",
    "a",
    "b",
    "c",
    "x",
    "NX",
    "XX",
    "GT",
    "LT",
    "CH",
    "INCR",
    "WITHSCORES",
    "LIMIT",
    "BYSCORE",
    "BYLEX",
    "REV",
    "COUNT",
    "LEFT",
    "RIGHT",
    "BEFORE",
    "AFTER",
    "EX",
    "PX",
    "KEEPTTL",
    "GET",
    "MIN",
    "MAX",
    "WEIGHTS",
    "AGGREGATE",
    "SUM",
    "RANK",
    "MAXLEN",
    "IDX",
    "LEN",
    "REPLACE",
    "15",
    "37.5",
    "km",
    "m",
    "WITHDIST",
    "WITHCOORD",
    "WITHHASH",
    "FROMMEMBER",
    "FROMLONLAT",
    "BYRADIUS",
    "BYBOX",
    "ANY",
    "ASC",
    "DESC",
    "STORE",
    "STOREDIST",
];

/// The key space.
const KEYS: &[&str] = &["k1", "k2", "k3", "{k}4"];

/// One command of the table we generate.
#[derive(Debug, Clone)]
struct Spec {
    name: String,
    arity: i64,
    first_key: i64,
    last_key: i64,
    step: i64,
}

/// Our command table, minus [`EXCLUDED`], blocking and container commands.
fn specs(con: &mut redis::Connection) -> Vec<Spec> {
    let table: Value = redis::cmd("COMMAND").query(con).unwrap();
    let Value::Array(entries) = table else {
        panic!("COMMAND: {table:?}");
    };
    let mut out = Vec::new();
    for entry in entries {
        let Value::Array(fields) = entry else {
            continue;
        };
        let text = |v: &Value| match v {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::SimpleString(s) => s.clone(),
            _ => String::new(),
        };
        let int = |v: &Value| match v {
            Value::Int(i) => *i,
            _ => 0,
        };
        let (Some(name), Some(arity), Some(flags)) = (fields.first(), fields.get(1), fields.get(2))
        else {
            continue;
        };
        let name = text(name);
        let flags: Vec<String> = match flags {
            Value::Array(f) | Value::Set(f) => f.iter().map(text).collect(),
            _ => Vec::new(),
        };
        let has_subcommands = matches!(fields.get(9), Some(Value::Array(s)) if !s.is_empty());
        if EXCLUDED.iter().any(|(n, _)| *n == name)
            || flags
                .iter()
                .any(|f| f == "blocking" || f == "pubsub" || f == "admin")
            || has_subcommands
            || name.starts_with("locksmith")
        {
            continue;
        }
        out.push(Spec {
            name,
            arity: int(arity),
            first_key: fields.get(3).map_or(0, int),
            last_key: fields.get(4).map_or(0, int),
            step: fields.get(5).map_or(0, int),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// A command line for `spec`: `choices` picks the extra-argument count, then each argument.
fn command_line(spec: &Spec, choices: &[usize]) -> Vec<String> {
    let mut picks = choices.iter().copied();
    let fixed = (spec.arity.unsigned_abs() as usize).saturating_sub(1);
    let extra = if spec.arity < 0 {
        picks.next().unwrap_or(0) % 4
    } else {
        0
    };
    let count = fixed + extra;
    let is_key = |i: usize| {
        let pos = i as i64 + 1;
        if spec.first_key <= 0 || pos < spec.first_key {
            return false;
        }
        let last = if spec.last_key < 0 {
            count as i64 + 1 + spec.last_key
        } else {
            spec.last_key
        };
        pos <= last && (pos - spec.first_key) % spec.step.max(1) == 0
    };
    let mut line = vec![spec.name.clone()];
    for i in 0..count {
        let pick = picks.next().unwrap_or(0);
        let arg = if is_key(i) || pick % 5 == 0 {
            KEYS[pick % KEYS.len()]
        } else {
            WORDS[pick % WORDS.len()]
        };
        line.push(arg.to_string());
    }
    line
}

/// A reply as comparable text; set-like replies of [`UNORDERED`] commands sorted.
fn normalised(name: &str, reply: redis::RedisResult<Value>) -> String {
    match reply {
        Err(e) => format!("ERR {}", support::error_text(&e)),
        Ok(Value::Array(mut items)) if UNORDERED.contains(&name) => {
            let mut text: Vec<String> = items.drain(..).map(|v| format!("{v:?}")).collect();
            text.sort();
            format!("unordered {text:?}")
        }
        Ok(v) => format!("{v:?}"),
    }
}

fn fuzz_cases() -> u32 {
    std::env::var("LOCKSMITH_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

#[test]
fn random_command_sequences_answer_as_redis_does() {
    let Some(real) = RealRedis::start() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ours = runtime.block_on(support::start());
    let connect = |url: &str| {
        let con = redis::Client::open(url).unwrap().get_connection().unwrap();
        con.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        con
    };
    let mut ours_con = connect(&ours.url());
    let specs = specs(&mut ours_con);
    // proptest's test closure is `Fn`: the connections live in cells.
    let ours_con = std::cell::RefCell::new(ours_con);
    let real_con = std::cell::RefCell::new(connect(&real.url()));
    assert!(specs.len() > 100, "only {} commands generated", specs.len());
    let command = (0..specs.len(), prop::collection::vec(0usize..10_000, 8));
    let strategy = prop::collection::vec(command, 1..24);
    let mut runner = TestRunner::new(Config {
        cases: fuzz_cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/server/differential.proptest-regressions"
        )))),
        ..Config::default()
    });
    let result = runner.run(&strategy, |sequence| {
        let (mut ours_con, mut real_con) = (ours_con.borrow_mut(), real_con.borrow_mut());
        for con in [&mut *ours_con, &mut *real_con] {
            let _: () = redis::cmd("FLUSHALL").query(con).unwrap();
        }
        let mut done: Vec<Vec<String>> = Vec::new();
        for (i, (spec, choices)) in sequence.iter().enumerate() {
            let Some(spec) = specs.get(*spec) else {
                continue;
            };
            let line = command_line(spec, choices);
            let run = |con: &mut redis::Connection| {
                let mut cmd = redis::cmd(&line[0]);
                for arg in &line[1..] {
                    cmd.arg(arg);
                }
                normalised(&spec.name, cmd.query::<Value>(con))
            };
            let (a, b) = (run(&mut ours_con), run(&mut real_con));
            if a != b {
                return Err(TestCaseError::fail(format!(
                    "command {i} {line:?} after {:?}\n  ours:  {a}\n  redis: {b}",
                    &done
                )));
            }
            done.push(line);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
