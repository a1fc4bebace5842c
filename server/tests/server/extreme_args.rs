//! Every numeric argument of every command that sizes work, fed extreme values, side by side
//! with real `redis-server`: the same class of reply (the same error text where Redis answers
//! an error, the same reply where Redis's reply is deterministic), an answer within a bounded
//! time, and the server still answering PING after each case.

use locksmith_testkit as support;

use redis::aio::MultiplexedConnection;
use redis::Value;
use std::time::Duration;
use support::{cmd, conn, error_text, start, RealRedis};

/// The values sent in every numeric position.
const EXTREMES: &[&str] = &[
    "-9223372036854775808",
    "-9223372036854775807",
    "9223372036854775807",
    "9223372036854775808",
    "-1",
    "0",
    "4294967296",
    "1e400",
    "-1e400",
    "nan",
    "inf",
    "-inf",
    "",
    "1.5",
    " 1",
    "0x10",
];

/// Command templates; `N` marks the numeric position the extremes go to. The fixture (see
/// [`FIXTURE`]) gives every type a key with data, so blocking commands return at once.
const TEMPLATES: &[&[&str]] = &[
    // Random picks and pops.
    &["SRANDMEMBER", "s", "N"],
    &["SPOP", "s", "N"],
    &["ZRANDMEMBER", "z", "N"],
    &["ZRANDMEMBER", "z", "N", "WITHSCORES"],
    &["HRANDFIELD", "h", "N"],
    &["HRANDFIELD", "h", "N", "WITHVALUES"],
    &["LPOP", "l", "N"],
    &["RPOP", "l", "N"],
    &["ZPOPMIN", "z", "N"],
    &["ZPOPMAX", "z", "N"],
    &["LMPOP", "N", "l", "LEFT"],
    &["LMPOP", "1", "l", "LEFT", "COUNT", "N"],
    &["ZMPOP", "N", "z", "MIN"],
    &["ZMPOP", "1", "z", "MIN", "COUNT", "N"],
    // Lists.
    &["LPOS", "l", "a", "RANK", "N"],
    &["LPOS", "l", "a", "COUNT", "N"],
    &["LPOS", "l", "a", "MAXLEN", "N"],
    &["LRANGE", "l", "N", "-1"],
    &["LRANGE", "l", "0", "N"],
    &["LINDEX", "l", "N"],
    &["LSET", "l", "N", "x"],
    &["LTRIM", "l", "N", "-1"],
    &["LTRIM", "l", "0", "N"],
    // Blocking timeouts (the keys hold data, so they answer at once).
    &["BLPOP", "l", "N"],
    &["BRPOP", "l", "N"],
    &["BLMOVE", "l", "l2", "LEFT", "LEFT", "N"],
    &["BRPOPLPUSH", "l", "l2", "N"],
    &["BZPOPMIN", "z", "N"],
    &["BLMPOP", "N", "1", "l", "LEFT"],
    &["BLMPOP", "0", "N", "l", "LEFT"],
    &["BZMPOP", "N", "1", "z", "MIN"],
    // Strings.
    &["GETRANGE", "str", "N", "-1"],
    &["GETRANGE", "str", "0", "N"],
    &["SETRANGE", "str", "N", "x"],
    &["SETRANGE", "str", "N", ""],
    &["INCRBY", "n", "N"],
    &["DECRBY", "n", "N"],
    &["INCRBYFLOAT", "n", "N"],
    &["INCRBYFLOAT", "f", "N"],
    &["SET", "n", "N"],
    // Hashes.
    &["HINCRBY", "h", "a", "N"],
    &["HINCRBYFLOAT", "h", "a", "N"],
    // Sorted sets.
    &["ZADD", "z", "N", "d"],
    &["ZADD", "z", "N", "a"],
    &["ZADD", "z", "INCR", "N", "a"],
    &["ZINCRBY", "z", "N", "a"],
    &["ZCOUNT", "z", "N", "+inf"],
    &["ZCOUNT", "z", "-inf", "N"],
    &["ZRANGEBYSCORE", "z", "N", "+inf"],
    &["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "N", "1"],
    &["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "0", "N"],
    &["ZRANGE", "z", "N", "-1"],
    &["ZRANGE", "z", "0", "N", "WITHSCORES"],
    &["ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "N", "2"],
    &["ZREMRANGEBYRANK", "z", "N", "-1"],
    &["ZREMRANGEBYSCORE", "z", "N", "+inf"],
    &["ZUNIONSTORE", "d", "1", "z", "WEIGHTS", "N"],
    &["ZUNIONSTORE", "d", "N", "z"],
    &["ZINTER", "N", "z"],
    &["ZRANGESTORE", "d", "z", "N", "-1"],
    // Expiry.
    &["EXPIRE", "str", "N"],
    &["PEXPIRE", "str", "N"],
    &["EXPIREAT", "str", "N"],
    &["PEXPIREAT", "str", "N"],
    &["SET", "k", "v", "EX", "N"],
    &["SET", "k", "v", "PX", "N"],
    &["SET", "k", "v", "EXAT", "N"],
    &["SET", "k", "v", "PXAT", "N"],
    &["SETEX", "k", "N", "v"],
    &["PSETEX", "k", "N", "v"],
    &["GETEX", "str", "EX", "N"],
    &["GETEX", "str", "PXAT", "N"],
    // Databases.
    &["SELECT", "N"],
    &["MOVE", "str", "N"],
    &["SWAPDB", "0", "N"],
    &["SWAPDB", "N", "0"],
    &["COPY", "str", "k", "DB", "N"],
    // Iteration.
    &["SCAN", "0", "COUNT", "N"],
    &["SSCAN", "s", "0", "COUNT", "N"],
    &["HSCAN", "h", "0", "COUNT", "N"],
    &["ZSCAN", "z", "0", "COUNT", "N"],
    // Scripting, connection and server numerics.
    &["EVAL", "return 1", "N"],
    &["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "N"],
    &["WAIT", "0", "N"],
    &["WAIT", "N", "1"],
    &["CLIENT", "KILL", "ID", "N"],
    &["HELLO", "N"],
];

/// The data every case starts from.
const FIXTURE: &[&[&str]] = &[
    &["SET", "str", "hello"],
    &["SET", "n", "10"],
    &["SET", "f", "1.5"],
    &["RPUSH", "l", "a", "b", "a", "c"],
    &["SADD", "s", "a", "b", "c"],
    &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
    &["HSET", "h", "a", "1", "b", "2"],
];

/// Commands whose successful reply depends on Redis's randomness or hash-table order: only the
/// reply's kind is compared (errors are still compared exactly).
const RANDOM_REPLIES: &[&str] = &[
    "SRANDMEMBER",
    "SPOP",
    "ZRANDMEMBER",
    "HRANDFIELD",
    "SCAN",
    "SSCAN",
    "HSCAN",
    "CLIENT",
    "HELLO",
];

/// Cases where real Redis does not answer in bounded time or memory (it builds a reply of
/// 2^63 elements), so only our server is checked: it must answer an error at once.
const REDIS_UNBOUNDED: &[(&str, &str)] = &[
    ("SRANDMEMBER", "-9223372036854775807"),
    ("ZRANDMEMBER", "-9223372036854775807"),
    ("HRANDFIELD", "-9223372036854775807"),
];

/// The hang guard for one command (not a speed check: every case answers in microseconds).
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// The reply as comparable text, or `None` when it did not come within [`ANSWER_WITHIN`].
async fn reply(con: &mut MultiplexedConnection, args: &[&str]) -> Option<Result<Value, String>> {
    let sent = tokio::time::timeout(ANSWER_WITHIN, cmd(args).query_async::<Value>(con)).await;
    sent.ok().map(|r| r.map_err(|e| error_text(&e)))
}

/// A variant name, for comparing replies whose content is random.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Int(_) => "int",
        Value::BulkString(_) => "bulk",
        Value::Array(_) => "array",
        Value::SimpleString(_) | Value::Okay => "status",
        Value::Map(_) => "map",
        Value::Set(_) => "set",
        Value::Double(_) => "double",
        _ => "other",
    }
}

/// Resets `con`'s server to [`FIXTURE`].
async fn reset(con: &mut MultiplexedConnection) {
    let mut pipe = redis::pipe();
    pipe.cmd("SELECT").arg(0).ignore();
    pipe.cmd("FLUSHALL").ignore();
    for c in FIXTURE {
        pipe.add_command(cmd(c)).ignore();
    }
    let done: redis::RedisResult<()> = pipe.query_async(con).await;
    done.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extreme_numeric_arguments_answer_as_redis_does() {
    let ours = start().await;
    let mut ours_con = conn(&ours.url()).await;
    let real = RealRedis::start();
    let mut real_con = match &real {
        Some(r) => Some(conn(&r.url()).await),
        None => None,
    };
    let mut differences = Vec::new();
    let mut cases = 0;
    for template in TEMPLATES {
        for value in EXTREMES {
            let args: Vec<&str> = template
                .iter()
                .map(|a| if *a == "N" { *value } else { *a })
                .collect();
            cases += 1;
            reset(&mut ours_con).await;
            let ours_reply = reply(&mut ours_con, &args).await;
            let Some(ours_reply) = ours_reply else {
                panic!("{args:?} did not answer within {ANSWER_WITHIN:?}");
            };
            let pong: String = cmd(&["PING"]).query_async(&mut ours_con).await.unwrap();
            assert_eq!(pong, "PONG", "after {args:?}");
            let unbounded = REDIS_UNBOUNDED
                .iter()
                .any(|(name, v)| template[0] == *name && value == v);
            if unbounded {
                assert!(ours_reply.is_err(), "{args:?} answered {ours_reply:?}");
                continue;
            }
            let Some(real_con) = real_con.as_mut() else {
                continue;
            };
            reset(real_con).await;
            let Some(real_reply) = reply(real_con, &args).await else {
                panic!("real Redis did not answer {args:?}: add it to REDIS_UNBOUNDED");
            };
            let same = match (&ours_reply, &real_reply) {
                (Err(a), Err(b)) => a == b,
                (Ok(a), Ok(b)) if RANDOM_REPLIES.contains(&template[0]) => kind(a) == kind(b),
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            };
            if !same {
                differences.push(format!(
                    "{args:?}\n    ours:  {ours_reply:?}\n    redis: {real_reply:?}"
                ));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {cases} cases differ from Redis:\n{}",
        differences.len(),
        differences.join("\n")
    );
}
