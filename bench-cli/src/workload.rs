//! What each client sends: a workload is a cycle of steps (a script with `KEYS`/`ARGV`
//! templates, or a plain command), the expected replies of each step, and the set-up each
//! client runs first. The built-in scenarios use Redisson's script bodies byte for byte (the
//! same text as `lock/src/scripts.rs`, checked by `server/tests/bench.rs`).

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{BufMut, BytesMut};
use locksmith_resp::Frame;
use sha1::{Digest, Sha1};

// Redisson's scripts, copied from `lock/src/scripts.rs` (the server crate does not depend on
// the lock library; `tests/bench.rs` checks that the two copies are the same text).

/// `RedissonLock.tryLockInnerAsync`. KEYS: name. ARGV: lease ms, owner field.
const LOCK_ACQUIRE: &str = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";

/// `RedissonLock.unlockInnerAsync` with the unlock latch. KEYS: name, channel, latch.
/// ARGV: unlock message, lease ms, owner field, publish command, latch timeout ms.
const LOCK_RELEASE: &str = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; ";

/// `RedissonFairLock.tryLockInnerAsync` (the queueing variant). KEYS: name, queue, timeout
/// zset. ARGV: lease ms, owner field, wait ms, now ms.
const FAIR_ACQUIRE: &str = "while true do local firstThreadId2 = redis.call('lindex', KEYS[2], 0);if firstThreadId2 == false then break;end;local timeout = redis.call('zscore', KEYS[3], firstThreadId2);if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then redis.call('zrem', KEYS[3], firstThreadId2);redis.call('lpop', KEYS[2]);else break;end;end;if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0) or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then redis.call('lpop', KEYS[2]);redis.call('zrem', KEYS[3], ARGV[2]);local keys = redis.call('zrange', KEYS[3], 0, -1);for i = 1, #keys, 1 do redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);end;redis.call('hset', KEYS[1], ARGV[2], 1);redis.call('pexpire', KEYS[1], ARGV[1]);return nil;end;if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then redis.call('hincrby', KEYS[1], ARGV[2],1);redis.call('pexpire', KEYS[1], ARGV[1]);return nil;end;local timeout = redis.call('zscore', KEYS[3], ARGV[2]);if timeout ~= false then local ttl = redis.call('pttl', KEYS[1]);return math.max(0, ttl); end;local lastThreadId = redis.call('lindex', KEYS[2], -1);local ttl;if lastThreadId ~= false and lastThreadId ~= ARGV[2] and redis.call('zscore', KEYS[3], lastThreadId) ~= false then ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);else ttl = redis.call('pttl', KEYS[1]);end;local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then redis.call('rpush', KEYS[2], ARGV[2]);end;return ttl;";

/// `RedissonFairLock.unlockInnerAsync` with the unlock latch. KEYS: name, queue, timeout
/// zset, channel prefix, latch. ARGV: message, lease ms, owner field, now ms, publish command,
/// latch timeout ms.
const FAIR_RELEASE: &str = "local val = redis.call('get', KEYS[5]); if val ~= false then return tonumber(val);end; while true do local firstThreadId2 = redis.call('lindex', KEYS[2], 0);if firstThreadId2 == false then break;end; local timeout = redis.call('zscore', KEYS[3], firstThreadId2);if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then redis.call('zrem', KEYS[3], firstThreadId2); redis.call('lpop', KEYS[2]); else break;end; end;if (redis.call('exists', KEYS[1]) == 0) then local nextThreadId = redis.call('lindex', KEYS[2], 0); if nextThreadId ~= false then redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); end; redis.call('set', KEYS[5], 1, 'px', ARGV[6]); return 1; end;if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[5], 0, 'px', ARGV[6]); return 0; end; redis.call('del', KEYS[1]); redis.call('set', KEYS[5], 1, 'px', ARGV[6]); local nextThreadId = redis.call('lindex', KEYS[2], 0); if nextThreadId ~= false then redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); end; return 1; ";

/// `RedissonReadLock.tryLockInnerAsync`. KEYS: name, read-timeout prefix. ARGV: lease ms,
/// owner field, owner write field.
const READ_ACQUIRE: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call('hset', KEYS[1], 'mode', 'read'); redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('set', KEYS[2] .. ':1', 1); redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); local key = KEYS[2] .. ':' .. ind;redis.call('set', key, 1); redis.call('pexpire', key, ARGV[1]); local remainTime = redis.call('pttl', KEYS[1]); redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); return nil; end;return redis.call('pttl', KEYS[1]);";

/// `RedissonReadLock.unlockInnerAsync` with the unlock latch. KEYS: name, channel,
/// read-timeout prefix, key prefix, latch. ARGV: message, owner field, publish command, latch
/// timeout ms.
const READ_RELEASE: &str = "local val = redis.call('get', KEYS[5]); if val ~= false then return tonumber(val);end; local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call(ARGV[3], KEYS[2], ARGV[1]); redis.call('set', KEYS[5], 1, 'px', ARGV[4]); return nil; end; local lockExists = redis.call('hexists', KEYS[1], ARGV[2]); if (lockExists == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); if (counter == 0) then redis.call('hdel', KEYS[1], ARGV[2]); end;redis.call('del', KEYS[3] .. ':' .. (counter+1)); if (redis.call('hlen', KEYS[1]) > 1) then local maxRemainTime = -3; local keys = redis.call('hkeys', KEYS[1]); for n, key in ipairs(keys) do counter = tonumber(redis.call('hget', KEYS[1], key)); if type(counter) == 'number' then for i=counter, 1, -1 do local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i); maxRemainTime = math.max(remainTime, maxRemainTime);end; end; end; if maxRemainTime > 0 then redis.call('pexpire', KEYS[1], maxRemainTime); redis.call('set', KEYS[5], 0, 'px', ARGV[4]); return 0; end;if mode == 'write' then redis.call('set', KEYS[5], 0, 'px', ARGV[4]); return 0;end; end; redis.call('del', KEYS[1]); redis.call(ARGV[3], KEYS[2], ARGV[1]); redis.call('set', KEYS[5], 1, 'px', ARGV[4]); return 1; ";

/// `RedissonWriteLock.tryLockInnerAsync`. KEYS: name. ARGV: lease ms, owner write field.
const WRITE_ACQUIRE: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call('hset', KEYS[1], 'mode', 'write'); redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (mode == 'write') then if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); local currentExpire = redis.call('pttl', KEYS[1]); redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); return nil; end; end;return redis.call('pttl', KEYS[1]);";

/// `RedissonWriteLock.unlockInnerAsync` with the unlock latch. KEYS: name, channel, latch.
/// ARGV: message, lease ms, owner write field, publish command, latch timeout ms.
const WRITE_RELEASE: &str = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return nil; end;if (mode == 'write') then local lockExists = redis.call('hexists', KEYS[1], ARGV[3]); if (lockExists == 0) then return nil;else local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('hdel', KEYS[1], ARGV[3]); if (redis.call('hlen', KEYS[1]) == 1) then redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); else redis.call('hset', KEYS[1], 'mode', 'read'); end; redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; end; end; return nil;";

/// The compare-and-delete release of a `SET NX PX` lock (seed 003). KEYS: name. ARGV: value.
const SIMPLE_RELEASE: &str = "if redis.call(\"get\", KEYS[1]) == ARGV[1] then\n    return redis.call(\"del\",KEYS[1])\nelse\n    return 0\nend";

/// Redisson's `LockPubSub.UNLOCK_MESSAGE`.
const UNLOCK_MESSAGE: &str = "0";
/// Redisson's `LockPubSub.READ_UNLOCK_MESSAGE` (wakes every waiter).
const READ_UNLOCK_MESSAGE: &str = "1";
/// Redisson's default lease (`lockWatchdogTimeout`), in ms.
const LEASE_MS: &str = "30000";
/// Redisson's default unlock latch timeout, in ms (as `locksmith-lock`'s `ClientOptions`).
const UNLOCK_LATCH_MS: &str = "13500";
/// Redisson's fair-lock `threadWaitTime` default (5 minutes), in ms.
const FAIR_WAIT_MS: &str = "300000";
/// A reentrant count no benchmark can release down to zero (2^62): the `release` scenario's
/// lock stays held however many partial releases run.
const HELD_COUNT: &str = "4611686018427387904";

/// The placeholders a template may hold. Anything else in braces (a cluster hash tag such as
/// `{lock}`) is literal text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placeholder {
    /// `{rand}`: a random number below `--keyspace`, zero-padded to 12 digits as
    /// redis-benchmark's `__rand_int__`; one draw per iteration of the cycle, so every step
    /// and every argument of one iteration sees the same number.
    Rand,
    /// `{client}`: the client's number, from 0.
    Client,
    /// `{seq}`: the client's request number, from 0 (warm-up requests included).
    Seq,
    /// `{iter}`: the client's iteration of the cycle (`{seq}` divided by the cycle length).
    Iter,
    /// `{owner}`: the client's Redisson owner field, `<run uuid>:<client + 1>`.
    Owner,
    /// `{run}`: 8 hex digits drawn once per benchmark process (keeps runs' keys apart).
    Run,
    /// `{now}`: milliseconds since the Unix epoch, when the request is built.
    Now,
}

const PLACEHOLDERS: [(&str, Placeholder); 7] = [
    ("{rand}", Placeholder::Rand),
    ("{client}", Placeholder::Client),
    ("{seq}", Placeholder::Seq),
    ("{iter}", Placeholder::Iter),
    ("{owner}", Placeholder::Owner),
    ("{run}", Placeholder::Run),
    ("{now}", Placeholder::Now),
];

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(Vec<u8>),
    Var(Placeholder),
}

/// A key or argument with placeholders, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    source: String,
    parts: Vec<Part>,
}

impl Template {
    /// Parses `source`: each known `{name}` becomes a placeholder, the rest is literal.
    pub(crate) fn parse(source: &str) -> Template {
        let mut parts = Vec::new();
        let mut text = Vec::new();
        let mut rest = source;
        while !rest.is_empty() {
            match PLACEHOLDERS.iter().find(|(name, _)| rest.starts_with(name)) {
                Some((name, var)) => {
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    parts.push(Part::Var(*var));
                    rest = &rest[name.len()..];
                }
                None => {
                    let c = rest.chars().next().unwrap_or_default();
                    let mut buf = [0; 4];
                    text.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    rest = &rest[c.len_utf8()..];
                }
            }
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Template {
            source: source.to_owned(),
            parts,
        }
    }

    /// Appends the rendered template to `out`.
    fn render(&self, vars: &Vars<'_>, out: &mut Vec<u8>) {
        for part in &self.parts {
            match part {
                Part::Text(t) => out.extend_from_slice(t),
                Part::Var(Placeholder::Rand) => {
                    let mut digits = itoa::Buffer::new();
                    let d = digits.format(vars.rand);
                    out.extend(std::iter::repeat_n(b'0', 12usize.saturating_sub(d.len())));
                    out.extend_from_slice(d.as_bytes());
                }
                Part::Var(Placeholder::Client) => push_int(out, vars.client),
                Part::Var(Placeholder::Seq) => push_int(out, vars.seq),
                Part::Var(Placeholder::Iter) => push_int(out, vars.iter),
                Part::Var(Placeholder::Owner) => {
                    out.extend_from_slice(vars.run_uuid.as_bytes());
                    out.push(b':');
                    push_int(out, vars.client + 1);
                }
                Part::Var(Placeholder::Run) => out.extend_from_slice(vars.run_tag.as_bytes()),
                Part::Var(Placeholder::Now) => {
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map(|d| d.as_millis() as u64)
                        .unwrap_or_default();
                    push_int(out, now);
                }
            }
        }
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

fn push_int(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// The values placeholders take for one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vars<'a> {
    /// The run's owner uuid (`{owner}` is `<uuid>:<client + 1>`).
    pub(crate) run_uuid: &'a str,
    /// The run's tag (`{run}`).
    pub(crate) run_tag: &'a str,
    /// `{client}`.
    pub(crate) client: u64,
    /// `{seq}`.
    pub(crate) seq: u64,
    /// `{iter}`.
    pub(crate) iter: u64,
    /// `{rand}`.
    pub(crate) rand: u64,
}

/// A reply a step accepts (`--expect`). Error replies are never accepted: they are counted
/// by their first word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    /// `any`: every reply that is not an error.
    Any,
    /// `nil`: the null bulk or null array.
    Nil,
    /// `int` (any integer) or `int:N` / `N` (that integer).
    Int(Option<i64>),
    /// `status` (any status reply), `status:TEXT`, or `ok` (`+OK`).
    Status(Option<String>),
    /// `bulk` (any bulk string) or `bulk:TEXT`.
    Bulk(Option<String>),
    /// `array`: any array.
    Array,
}

impl Expect {
    /// Parses one `--expect` value.
    ///
    /// # Errors
    /// A value of none of the documented forms.
    pub(crate) fn parse(s: &str) -> Result<Expect, String> {
        let (head, tail) = match s.split_once(':') {
            Some((h, t)) => (h, Some(t)),
            None => (s, None),
        };
        let lower = head.to_ascii_lowercase();
        let bad = || {
            format!(
                "unknown reply '{s}': expected any, nil, int, int:N, N, ok, status, \
                 status:TEXT, bulk, bulk:TEXT or array"
            )
        };
        Ok(match (lower.as_str(), tail) {
            ("any", None) => Expect::Any,
            ("nil", None) => Expect::Nil,
            ("int", None) => Expect::Int(None),
            ("int", Some(n)) => Expect::Int(Some(n.parse().map_err(|_| bad())?)),
            ("ok", None) => Expect::Status(Some("OK".into())),
            ("status", t) => Expect::Status(t.map(str::to_owned)),
            ("bulk", t) => Expect::Bulk(t.map(str::to_owned)),
            ("array", None) => Expect::Array,
            _ => match s.parse::<i64>() {
                Ok(n) => Expect::Int(Some(n)),
                Err(_) => return Err(bad()),
            },
        })
    }

    fn matches(&self, reply: &Frame) -> bool {
        match (self, reply) {
            (Expect::Any, _) => true,
            (Expect::Nil, Frame::Null | Frame::NullArray) => true,
            (Expect::Int(None), Frame::Integer(_)) => true,
            (Expect::Int(Some(n)), Frame::Integer(m)) => n == m,
            (Expect::Status(None), Frame::Simple(_)) => true,
            (Expect::Status(Some(t)), Frame::Simple(s)) => s.as_ref() == t.as_bytes(),
            (Expect::Bulk(None), Frame::Bulk(_)) => true,
            (Expect::Bulk(Some(t)), Frame::Bulk(b)) => b.as_ref() == t.as_bytes(),
            (Expect::Array, Frame::Array(_)) => true,
            _ => false,
        }
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Any => f.write_str("any"),
            Expect::Nil => f.write_str("nil"),
            Expect::Int(None) => f.write_str("int"),
            Expect::Int(Some(n)) => write!(f, "int:{n}"),
            Expect::Status(None) => f.write_str("status"),
            Expect::Status(Some(t)) => write!(f, "status:{t}"),
            Expect::Bulk(None) => f.write_str("bulk"),
            Expect::Bulk(Some(t)) => write!(f, "bulk:{t}"),
            Expect::Array => f.write_str("array"),
        }
    }
}

/// How a reply was judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// An accepted reply.
    Ok,
    /// An error reply; the kind is its first word (`NOSCRIPT`, `ERR`, `WRONGTYPE`, …).
    Error(String),
    /// A reply none of the step's expectations accepts.
    Unexpected,
}

/// A Lua script of the workload, with its SHA1 (what `SCRIPT LOAD` must answer).
#[derive(Debug, Clone)]
pub(crate) struct Script {
    /// A short name (`acquire`, `release`, or the file's name).
    pub(crate) name: String,
    /// The source text, sent as is.
    pub(crate) body: String,
    /// Lowercase hex SHA1 of the body.
    pub(crate) sha1: String,
}

impl Script {
    fn new(name: &str, body: &str) -> Script {
        Script {
            name: name.to_owned(),
            body: body.to_owned(),
            sha1: hex::encode(Sha1::digest(body.as_bytes())),
        }
    }
}

/// What one step sends.
#[derive(Debug, Clone)]
pub(crate) enum Call {
    /// `EVALSHA <sha1 of scripts[i]> numkeys keys… args…`.
    Script {
        /// Index into [`Workload::scripts`].
        script: usize,
        /// The `KEYS` templates.
        keys: Vec<Template>,
        /// The `ARGV` templates.
        args: Vec<Template>,
    },
    /// A plain command (name and arguments as templates).
    Command(Vec<Template>),
}

/// One step of the cycle.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// Shown in reports (`acquire`, `release`, …).
    pub(crate) label: String,
    /// What it sends.
    pub(crate) call: Call,
    /// The replies it accepts (any of them).
    pub(crate) expect: Vec<Expect>,
}

/// What every client runs: set-up commands once, then the steps in a cycle.
#[derive(Debug, Clone)]
pub(crate) struct Workload {
    /// The scenario's name, or `script`.
    pub(crate) name: String,
    /// One line for reports.
    pub(crate) description: String,
    /// Scripts loaded with `SCRIPT LOAD` before the run.
    pub(crate) scripts: Vec<Script>,
    /// Commands each client sends once before the run (their replies must not be errors).
    pub(crate) setup: Vec<Vec<Template>>,
    /// The cycle: request `seq` runs `steps[seq % steps.len()]`.
    pub(crate) steps: Vec<Step>,
}

/// The built-in scenarios, by name, with a one-line description each (`--scenario`).
pub(crate) const SCENARIOS: [(&str, &str); 8] = [
    (
        "acquire",
        "Redisson lock acquire (tryLockInnerAsync) on random names lock:{run}:{rand}",
    ),
    (
        "release",
        "Redisson lock release (unlockInnerAsync) of a held reentrant lock, count stays above 0",
    ),
    (
        "reentrant",
        "Redisson lock acquire of a lock the client already holds (re-entry)",
    ),
    (
        "cycle",
        "Redisson lock acquire then full release, one lock per client",
    ),
    (
        "contended",
        "Redisson lock acquire then release, every client on one lock name",
    ),
    (
        "fair",
        "Redisson fair lock acquire then release, one lock per client",
    ),
    (
        "rwlock",
        "Redisson read lock acquire, release, write lock acquire, release, one lock per client",
    ),
    (
        "simple",
        "SET NX PX then the compare-and-delete release script, one lock per client",
    ),
];

fn t(parts: &[&str]) -> Vec<Template> {
    parts.iter().map(|p| Template::parse(p)).collect()
}

fn script_step(label: &str, script: usize, keys: &[&str], args: &[&str], e: &[Expect]) -> Step {
    Step {
        label: label.to_owned(),
        call: Call::Script {
            script,
            keys: t(keys),
            args: t(args),
        },
        expect: e.to_vec(),
    }
}

impl Workload {
    /// The built-in scenario `name` (one of [`SCENARIOS`]), with its keyspace in `{rand}`.
    ///
    /// # Errors
    /// An unknown name.
    pub(crate) fn scenario(name: &str) -> Result<Workload, String> {
        use Expect::{Int, Nil, Status};
        let description = SCENARIOS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, d)| d.to_string())
            .ok_or_else(|| {
                let names: Vec<&str> = SCENARIOS.iter().map(|(n, _)| *n).collect();
                format!("unknown scenario '{name}' (one of {})", names.join(", "))
            })?;
        let lock_scripts = || {
            vec![
                Script::new("acquire", LOCK_ACQUIRE),
                Script::new("release", LOCK_RELEASE),
            ]
        };
        // The release of lock `name` by this client: channel and latch as Redisson names them
        // (`prefix_name`), one latch per request.
        let release = |name: &str, expect: &[Expect]| {
            script_step(
                "release",
                1,
                &[
                    name,
                    &format!("redisson_lock__channel:{{{name}}}"),
                    &format!("redisson_unlock_latch:{{{name}}}:{{client}}:{{seq}}"),
                ],
                &[
                    UNLOCK_MESSAGE,
                    LEASE_MS,
                    "{owner}",
                    "PUBLISH",
                    UNLOCK_LATCH_MS,
                ],
                expect,
            )
        };
        let acquire = |name: &str, expect: &[Expect]| {
            script_step("acquire", 0, &[name], &[LEASE_MS, "{owner}"], expect)
        };
        let (scripts, setup, steps) = match name {
            "acquire" => (
                lock_scripts(),
                vec![],
                vec![acquire("lock:{run}:{rand}", &[Nil, Int(None)])],
            ),
            "release" => {
                let name = "lock:{run}:{client}";
                (
                    lock_scripts(),
                    vec![
                        t(&["HSET", name, "{owner}", HELD_COUNT]),
                        t(&["PEXPIRE", name, LEASE_MS]),
                    ],
                    vec![release(name, &[Int(Some(0))])],
                )
            }
            "reentrant" => {
                let name = "lock:{run}:{client}";
                (lock_scripts(), vec![], vec![acquire(name, &[Nil])])
            }
            "cycle" => {
                let name = "lock:{run}:{client}";
                (
                    lock_scripts(),
                    vec![],
                    vec![acquire(name, &[Nil]), release(name, &[Int(Some(1))])],
                )
            }
            "contended" => {
                // The holder re-enters and releases one hold; the others get the PTTL and
                // a nil release (not the owner).
                let name = "lock:{run}";
                (
                    lock_scripts(),
                    vec![],
                    vec![
                        acquire(name, &[Nil, Int(None)]),
                        release(name, &[Nil, Int(Some(0)), Int(Some(1))]),
                    ],
                )
            }
            "fair" => {
                let name = "fair:{run}:{client}";
                let queue = format!("redisson_lock_queue:{{{name}}}");
                let timeouts = format!("redisson_lock_timeout:{{{name}}}");
                let channel = format!("redisson_lock__channel:{{{name}}}");
                let latch = format!("redisson_unlock_latch:{{{name}}}:{{seq}}");
                (
                    vec![
                        Script::new("fair_acquire", FAIR_ACQUIRE),
                        Script::new("fair_release", FAIR_RELEASE),
                    ],
                    vec![],
                    vec![
                        script_step(
                            "fair_acquire",
                            0,
                            &[name, &queue, &timeouts],
                            &[LEASE_MS, "{owner}", FAIR_WAIT_MS, "{now}"],
                            &[Nil],
                        ),
                        script_step(
                            "fair_release",
                            1,
                            &[name, &queue, &timeouts, &channel, &latch],
                            &[
                                UNLOCK_MESSAGE,
                                LEASE_MS,
                                "{owner}",
                                "{now}",
                                "PUBLISH",
                                UNLOCK_LATCH_MS,
                            ],
                            &[Int(Some(1))],
                        ),
                    ],
                )
            }
            "rwlock" => {
                let name = "rw:{run}:{client}";
                // Redisson's names: `suffixName(name, field) + ":rwlock_timeout"`, the key
                // prefix `{name}` and the channel `redisson_rwlock:{name}`.
                let timeout_prefix = format!("{{{name}}}:{{owner}}:rwlock_timeout");
                let key_prefix = format!("{{{name}}}");
                let channel = format!("redisson_rwlock:{{{name}}}");
                let latch = format!("redisson_unlock_latch:{{{name}}}:{{seq}}");
                (
                    vec![
                        Script::new("read_acquire", READ_ACQUIRE),
                        Script::new("read_release", READ_RELEASE),
                        Script::new("write_acquire", WRITE_ACQUIRE),
                        Script::new("write_release", WRITE_RELEASE),
                    ],
                    vec![],
                    vec![
                        script_step(
                            "read_acquire",
                            0,
                            &[name, &timeout_prefix],
                            &[LEASE_MS, "{owner}", "{owner}:write"],
                            &[Nil],
                        ),
                        script_step(
                            "read_release",
                            1,
                            &[name, &channel, &timeout_prefix, &key_prefix, &latch],
                            &[UNLOCK_MESSAGE, "{owner}", "PUBLISH", UNLOCK_LATCH_MS],
                            &[Int(Some(1))],
                        ),
                        script_step(
                            "write_acquire",
                            2,
                            &[name],
                            &[LEASE_MS, "{owner}:write"],
                            &[Nil],
                        ),
                        script_step(
                            "write_release",
                            3,
                            &[name, &channel, &latch],
                            &[
                                READ_UNLOCK_MESSAGE,
                                LEASE_MS,
                                "{owner}:write",
                                "PUBLISH",
                                UNLOCK_LATCH_MS,
                            ],
                            &[Int(Some(1))],
                        ),
                    ],
                )
            }
            "simple" => {
                let name = "simple:{run}:{client}";
                (
                    vec![Script::new("simple_release", SIMPLE_RELEASE)],
                    vec![],
                    vec![
                        Step {
                            label: "set_nx_px".into(),
                            call: Call::Command(t(&["SET", name, "{owner}", "NX", "PX", LEASE_MS])),
                            expect: vec![Status(Some("OK".into()))],
                        },
                        script_step("simple_release", 0, &[name], &["{owner}"], &[Int(Some(1))]),
                    ],
                )
            }
            _ => return Err(format!("unknown scenario '{name}'")),
        };
        Ok(Workload {
            name: name.to_owned(),
            description,
            scripts,
            setup,
            steps,
        })
    }

    /// A workload of one script: `body` run with the `keys` and `args` templates.
    pub(crate) fn script(file_name: &str, body: String, keys: &[String], args: &[String]) -> Self {
        let script = Script::new(file_name, &body);
        Workload {
            name: "script".into(),
            description: format!(
                "EVALSHA of {file_name}, KEYS [{}], ARGV [{}]",
                keys.join(", "),
                args.join(", ")
            ),
            scripts: vec![script],
            setup: vec![],
            steps: vec![Step {
                label: file_name.to_owned(),
                call: Call::Script {
                    script: 0,
                    keys: keys.iter().map(|k| Template::parse(k)).collect(),
                    args: args.iter().map(|a| Template::parse(a)).collect(),
                },
                expect: vec![Expect::Any],
            }],
        }
    }

    /// Replaces every step's accepted replies with `expect` (`--expect`).
    pub(crate) fn set_expect(&mut self, expect: &[Expect]) {
        for step in &mut self.steps {
            step.expect = expect.to_vec();
        }
    }

    /// The step request `seq` runs.
    pub(crate) fn step(&self, seq: u64) -> &Step {
        &self.steps[(seq % self.steps.len() as u64) as usize]
    }

    /// Appends request `vars.seq` to `out` as a RESP array of bulk strings; `scratch` is a
    /// reusable buffer.
    pub(crate) fn encode_request(
        &self,
        vars: &Vars<'_>,
        out: &mut BytesMut,
        scratch: &mut Vec<u8>,
    ) {
        let step = self.step(vars.seq);
        match &step.call {
            Call::Script { script, keys, args } => {
                let sha = &self.scripts[*script].sha1;
                put_array_header(out, 3 + keys.len() + args.len());
                put_bulk(out, b"EVALSHA");
                put_bulk(out, sha.as_bytes());
                put_bulk(out, itoa::Buffer::new().format(keys.len()).as_bytes());
                for tpl in keys.iter().chain(args) {
                    scratch.clear();
                    tpl.render(vars, scratch);
                    put_bulk(out, scratch);
                }
            }
            Call::Command(parts) => encode_templates(parts, vars, out, scratch),
        }
    }

    /// The script request `vars.seq` runs, if it runs one.
    pub(crate) fn script_of(&self, seq: u64) -> Option<&Script> {
        match &self.step(seq).call {
            Call::Script { script, .. } => self.scripts.get(*script),
            Call::Command(_) => None,
        }
    }

    /// Judges the reply to request `seq`.
    pub(crate) fn judge(&self, seq: u64, reply: &Frame) -> Verdict {
        if let Frame::Error(e) = reply {
            return Verdict::Error(error_kind(e));
        }
        if self.step(seq).expect.iter().any(|e| e.matches(reply)) {
            Verdict::Ok
        } else {
            Verdict::Unexpected
        }
    }
}

/// The first word of an error reply (`NOSCRIPT`, `ERR`, `WRONGTYPE`, …), as clients classify
/// errors.
pub(crate) fn error_kind(line: &[u8]) -> String {
    let word = line.split(|b| *b == b' ').next().unwrap_or_default();
    if word.is_empty() {
        "ERR".into()
    } else {
        String::from_utf8_lossy(word).into_owned()
    }
}

/// Appends a command built from templates.
pub(crate) fn encode_templates(
    parts: &[Template],
    vars: &Vars<'_>,
    out: &mut BytesMut,
    scratch: &mut Vec<u8>,
) {
    put_array_header(out, parts.len());
    for tpl in parts {
        scratch.clear();
        tpl.render(vars, scratch);
        put_bulk(out, scratch);
    }
}

fn put_array_header(out: &mut BytesMut, n: usize) {
    out.put_u8(b'*');
    out.put_slice(itoa::Buffer::new().format(n).as_bytes());
    out.put_slice(b"\r\n");
}

fn put_bulk(out: &mut BytesMut, b: &[u8]) {
    out.put_u8(b'$');
    out.put_slice(itoa::Buffer::new().format(b.len()).as_bytes());
    out.put_slice(b"\r\n");
    out.put_slice(b);
    out.put_slice(b"\r\n");
}

/// A reply, shortened for an error example.
pub(crate) fn describe_reply(reply: &Frame) -> String {
    let text = match reply {
        Frame::Error(e) => format!("-{}", String::from_utf8_lossy(e)),
        Frame::Simple(s) => format!("+{}", String::from_utf8_lossy(s)),
        Frame::Integer(n) => format!(":{n}"),
        Frame::Bulk(b) => format!("\"{}\"", String::from_utf8_lossy(b)),
        Frame::Null | Frame::NullArray => "(nil)".into(),
        other => format!("{other:?}"),
    };
    let mut short: String = text.chars().take(200).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(template: &str, vars: &Vars<'_>) -> String {
        let mut out = Vec::new();
        Template::parse(template).render(vars, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn placeholders_render_and_hash_tags_stay_literal() {
        let vars = Vars {
            run_uuid: "u",
            run_tag: "r",
            client: 3,
            seq: 7,
            iter: 2,
            rand: 42,
        };
        assert_eq!(
            render("redisson_lock__channel:{lock:{rand}}", &vars),
            "redisson_lock__channel:{lock:000000000042}"
        );
        assert_eq!(
            render("{owner}|{client}|{seq}|{iter}|{run}|{x}", &vars),
            "u:4|3|7|2|r|{x}"
        );
    }

    #[test]
    fn expectations_parse_and_match() {
        assert_eq!(Expect::parse("nil").unwrap(), Expect::Nil);
        assert_eq!(Expect::parse("1").unwrap(), Expect::Int(Some(1)));
        assert_eq!(Expect::parse("int:-2").unwrap(), Expect::Int(Some(-2)));
        assert!(Expect::parse("nope").is_err());
        assert!(Expect::parse("ok")
            .unwrap()
            .matches(&Frame::Simple("OK".into())));
        assert!(!Expect::Nil.matches(&Frame::Integer(0)));
        assert!(Expect::Bulk(Some("a".into())).matches(&Frame::Bulk("a".into())));
    }

    #[test]
    fn error_replies_are_classified_by_their_first_word() {
        assert_eq!(error_kind(b"NOSCRIPT No matching script."), "NOSCRIPT");
        assert_eq!(error_kind(b"WRONGTYPE Operation"), "WRONGTYPE");
        assert_eq!(error_kind(b""), "ERR");
    }
}
