//! Clients blocked on keys (`BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`, `BLMPOP`, `BZPOPMIN`,
//! `BZPOPMAX`, `BZMPOP`, `XREAD`/`XREADGROUP` with `BLOCK`).
//!
//! A blocking command that finds nothing asks to block by setting [`ClientState::block`]
//! (through `cmd::block`); the connection then registers the wait here ([`Blocked::register`]),
//! releases the state lock and waits for the reply on a oneshot channel or for its timeout.
//! When a command, `EXEC` or script writes a key some client waits for, [`serve_ready`]
//! (called from `State::finish_effects`, still under the lock) re-executes the waiting
//! clients' commands on their behalf in the order they blocked, as Redis serves blocked
//! clients first-come first-served, and sends each reply to its connection. A client whose
//! command still finds nothing stays blocked.

use crate::client::{ClientHandle, ClientState};
use crate::db::Value;
use crate::error::CommandError;
use crate::node::{Effects, Node, State};
use bytes::Bytes;
use locksmith_resp::{Frame, Version};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// The type of value a blocked command pops from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    /// A list (`BLPOP`, `BLMOVE`…).
    List,
    /// A sorted set (`BZPOPMIN`…).
    ZSet,
    /// A stream (`XREAD`, `XREADGROUP`): each waiter reads from its own ID, so one that
    /// finds nothing new does not hold back the ones behind it.
    Stream,
}

impl BlockKind {
    fn matches(self, value: &Value) -> bool {
        matches!(
            (self, value),
            (BlockKind::List, Value::List(..))
                | (BlockKind::ZSet, Value::ZSet(_))
                | (BlockKind::Stream, Value::Stream(_))
        )
    }
}

/// What a blocking command asks of its connection when it found nothing.
#[derive(Debug, Clone)]
pub(crate) struct BlockRequest {
    /// The keys to wait for, in the command's order.
    pub(crate) keys: Vec<Bytes>,
    /// How long to wait; `None` = forever (timeout 0).
    pub(crate) timeout: Option<Duration>,
    /// The value type that serves the wait.
    pub(crate) kind: BlockKind,
    /// The command to run again when a key is written, if not the one sent (`XREAD` with
    /// `$` waits for entries after the last ID at the time it blocked).
    pub(crate) argv: Option<Vec<Bytes>>,
}

/// One blocked client.
#[derive(Debug)]
struct Waiter {
    handle: Arc<ClientHandle>,
    db: usize,
    resp: Version,
    argv: Vec<Bytes>,
    keys: Vec<Bytes>,
    kind: BlockKind,
    /// The size of the request that blocked (Valkey's large-request log takes it once served).
    request_bytes: u64,
    reply: oneshot::Sender<Frame>,
}

/// Every blocked client of a node, with a FIFO queue of client ids per (db, key).
#[derive(Debug, Default)]
pub(crate) struct Blocked {
    waiters: HashMap<u64, Waiter>,
    queues: HashMap<(usize, Bytes), VecDeque<u64>>,
}

impl Blocked {
    /// Number of blocked clients (`INFO clients` `blocked_clients`).
    pub(crate) fn len(&self) -> usize {
        self.waiters.len()
    }

    /// Whether no client is blocked.
    pub(crate) fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    /// How many keys clients wait for (`INFO`'s `total_blocking_keys`).
    pub(crate) fn keys(&self) -> usize {
        self.queues.len()
    }

    /// How many keys an `XREADGROUP` waits for, which its key's deletion unblocks (`INFO`'s
    /// `total_blocking_keys_on_nokey`).
    pub(crate) fn keys_on_nokey(&self) -> usize {
        self.queues
            .values()
            .filter(|ids| {
                ids.iter().any(|id| {
                    self.waiters
                        .get(id)
                        .and_then(|w| w.argv.first())
                        .is_some_and(|c| c.eq_ignore_ascii_case(b"xreadgroup"))
                })
            })
            .count()
    }

    /// The keys clients wait on in databases `dbs`.
    pub(crate) fn keys_in(&self, dbs: [usize; 2]) -> Vec<(usize, Bytes)> {
        self.queues
            .keys()
            .filter(|(db, _)| dbs.contains(db))
            .cloned()
            .collect()
    }

    /// Blocks `client` (which just ran `argv`) on `request.keys`; the reply arrives on the
    /// returned channel when a write serves it.
    pub(crate) fn register(
        &mut self,
        client: &ClientState,
        argv: &[Bytes],
        request: &BlockRequest,
    ) -> oneshot::Receiver<Frame> {
        let (tx, rx) = oneshot::channel();
        let id = client.id();
        self.remove(id);
        let mut keys: Vec<Bytes> = Vec::with_capacity(request.keys.len());
        for key in &request.keys {
            if !keys.contains(key) {
                keys.push(key.clone());
                self.queues
                    .entry((client.db, key.clone()))
                    .or_default()
                    .push_back(id);
            }
        }
        self.waiters.insert(
            id,
            Waiter {
                handle: client.handle.clone(),
                db: client.db,
                resp: client.resp,
                argv: request.argv.clone().unwrap_or_else(|| argv.to_vec()),
                keys,
                kind: request.kind,
                request_bytes: client.command.request_bytes,
                reply: tx,
            },
        );
        rx
    }

    /// Forgets client `id`'s wait (timeout, disconnect); returns whether it was blocked.
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        self.take(id).is_some()
    }

    /// `CLIENT UNBLOCK`: ends client `id`'s wait with `reply` (what its timeout answers, or
    /// an error); returns whether it was blocked.
    pub(crate) fn unblock(&mut self, id: u64, reply: Frame) -> bool {
        match self.take(id) {
            Some(waiter) => {
                let _ = waiter.reply.send(reply);
                true
            }
            None => false,
        }
    }

    /// Ends every client's wait with `reply` (the node changed its role).
    pub(crate) fn unblock_all(&mut self, reply: &Frame) {
        for (_, waiter) in self.waiters.drain() {
            let _ = waiter.reply.send(reply.clone());
        }
        self.queues.clear();
    }

    fn take(&mut self, id: u64) -> Option<Waiter> {
        let waiter = self.waiters.remove(&id)?;
        for key in &waiter.keys {
            let slot = (waiter.db, key.clone());
            if let Some(queue) = self.queues.get_mut(&slot) {
                queue.retain(|&c| c != id);
                if queue.is_empty() {
                    self.queues.remove(&slot);
                }
            }
        }
        Some(waiter)
    }

    /// The clients blocked on (`db`, `key`), in blocking order.
    fn queue(&self, db: usize, key: &Bytes) -> Vec<u64> {
        self.queues
            .get(&(db, key.clone()))
            .map(|q| q.iter().copied().collect())
            .unwrap_or_default()
    }
}

/// Parses a blocking timeout in seconds as Redis's `getTimeoutFromObjectOrReply` does
/// (fractions allowed, 0 = forever); `now` is the node-clock ms of the command. With
/// `rounds_up`, Valkey's rules: the milliseconds rounded up (`ceill`, so `0.0001` blocks for
/// 1 ms where Redis 7.0 blocks forever) and a count past `i64` out of range (Redis 7.0 calls
/// it negative).
///
/// # Errors
///
/// `ERR timeout is not a float or out of range`, `ERR timeout is negative`,
/// `ERR timeout is out of range`.
pub(crate) fn parse_timeout(
    arg: &[u8],
    now: u64,
    rounds_up: bool,
) -> Result<Option<Duration>, CommandError> {
    let not_float = || CommandError::err("timeout is not a float or out of range");
    // Redis's string2ld: strtold over the whole argument, no leading space, NaN refused. A
    // value beyond f64 (fine in a long double) saturates to infinity and is refused below as
    // Redis refuses its overflowing millisecond count.
    if arg.first().is_none_or(|b| b.is_ascii_whitespace()) {
        return Err(not_float());
    }
    let seconds = match crate::args::strtod(arg) {
        Some((v, _)) if !v.is_nan() => v,
        _ => return Err(not_float()),
    };
    let ms = seconds * 1000.0;
    if rounds_up && ms >= i64::MAX as f64 {
        return Err(CommandError::err("timeout is out of range"));
    }
    // C's (long long) cast of an out-of-range long double yields LLONG_MIN on x86-64, which
    // Redis then reports as a negative timeout.
    if !ms.is_finite() || ms >= i64::MAX as f64 || ms <= i64::MIN as f64 {
        return Err(CommandError::err("timeout is negative"));
    }
    let ms = if rounds_up { ms.ceil() } else { ms.trunc() } as i64;
    if ms < 0 {
        return Err(CommandError::err("timeout is negative"));
    }
    if ms == 0 {
        return Ok(None);
    }
    if ms > i64::MAX - now as i64 {
        return Err(CommandError::err("timeout is out of range"));
    }
    Ok(Some(Duration::from_millis(ms as u64)))
}

/// Serves clients blocked on the keys made ready (`effects.ready`) and written so far
/// (`effects.modified`, and the keys the served commands write in turn), in blocking order,
/// re-executing each one's command on its behalf; each reply goes to its connection. Runs
/// under the state lock.
pub(crate) fn serve_ready(state: &mut State, node: &Node, effects: &mut Effects) {
    for (db, key) in std::mem::take(&mut effects.ready) {
        if state.blocked.is_empty() {
            return;
        }
        serve_key(state, node, effects, db, &key);
    }
    let mut next = 0;
    while next < effects.modified.len() {
        if state.blocked.is_empty() {
            return;
        }
        let Some((db, key)) = effects.modified.get(next).cloned() else {
            return;
        };
        next += 1;
        serve_key(state, node, effects, db, &key);
    }
}

/// Serves the clients blocked on `key` in `db` that its value now serves, in blocking order.
/// A key whose deadline passed is reclaimed first, with its expiry's side effects (its `DEL`
/// goes to replicas after the write that made the key ready), as Redis's lookup before
/// serving does; its clients stay blocked.
fn serve_key(state: &mut State, node: &Node, effects: &mut Effects, db: usize, key: &Bytes) {
    let queue = state.blocked.queue(db, key);
    if queue.is_empty() {
        return;
    }
    let now = node.clock.now_ms();
    let reruns = node.config.profile().semantics.blocked_serve_reruns;
    // During a CLIENT PAUSE an expired key stays (deleting it would be a write); Redis 7.2
    // looks it up without side effects (it counts as absent below).
    if !reruns && !node.live.pause.is_paused(now) {
        if let Some(crate::db::Found::Expired(expired)) =
            state.dbs.get_mut(db).map(|d| d.find_live(key, now, false))
        {
            crate::node::key_expired(
                &mut state.stats,
                &state.repl,
                &state.config,
                effects,
                db,
                &expired,
            );
            return;
        }
    }
    for id in queue {
        let Some(kind) = state.blocked.waiters.get(&id).map(|w| w.kind) else {
            continue;
        };
        let now = node.clock.now_ms();
        // Redis 7.2 judges the key at the time of the command that made it ready (its cached
        // time: a transaction's start); the command re-run for the client reads the clock.
        let judged_at = match effects.command_now {
            Some(at) if reruns => at.min(now),
            _ => now,
        };
        let value = state
            .dbs
            .get(db)
            .and_then(|d| d.get(key, judged_at))
            .map(|e| &e.value);
        let mut group_gone = false;
        if kind == BlockKind::Stream {
            let waiting = state.blocked.waiters.get(&id).map(|w| &w.argv[..]);
            let gone = waiting.and_then(|argv| stream_group_gone(value, argv));
            group_gone = gone.is_some();
            if let Some(error) = gone.filter(|_| !reruns) {
                if let Some(waiter) = state.blocked.take(id) {
                    if let Some(resolved) =
                        (node.commands.resolve)(node.config.compat(), &waiter.argv)
                    {
                        state.cmdstats.record(resolved, Some(0), true);
                    }
                    let _ = waiter.reply.send(Frame::error(error));
                }
                continue;
            }
        }
        let serves = match value {
            // Redis 7.2 re-runs an XREADGROUP whose stream or group is gone: it answers its
            // error then.
            _ if group_gone => true,
            // The data is gone: everyone behind stays blocked (Redis 7.2 goes on to the
            // XREADGROUPs behind, which it re-runs).
            None if reruns => continue,
            None => break,
            Some(value) => kind.matches(value),
        };
        if !serves {
            continue;
        }
        let Some(waiter) = state.blocked.waiters.get(&id) else {
            continue;
        };
        let mut client = ClientState::new(waiter.handle.clone(), true);
        client.db = waiter.db;
        client.resp = waiter.resp;
        client.origin.reprocessing = true;
        client.command.request_bytes = waiter.request_bytes;
        let argv = waiter.argv.clone();
        let reply = (node.commands.call_argv)(state, node, &mut client, &argv, now, effects);
        if client.block.is_some() {
            if kind == BlockKind::Stream {
                // Nothing after its ID: it stays blocked; others may read from theirs.
                continue;
            }
            // Nothing to pop after all: it stays blocked, and so do the ones behind it.
            break;
        }
        if let Some(waiter) = state.blocked.take(id) {
            // The connection may be gone; the pop is then lost, as in Redis.
            let _ = waiter.reply.send(reply);
        }
    }
}

/// For a client blocked in `XREADGROUP`: the error that ends its wait when the stream it waits
/// on was deleted or replaced (`UNBLOCKED`), or its group destroyed (`NOGROUP`), as Redis
/// answers; `None` otherwise (and for `XREAD`, which keeps waiting).
fn stream_group_gone(value: Option<&Value>, argv: &[Bytes]) -> Option<&'static str> {
    if !argv.first()?.eq_ignore_ascii_case(b"xreadgroup") {
        return None;
    }
    let Some(Value::Stream(s)) = value else {
        return Some("UNBLOCKED the stream key no longer exists");
    };
    let at = argv.iter().position(|a| a.eq_ignore_ascii_case(b"group"))?;
    let group = argv.get(at + 1)?;
    if s.groups.contains_key(group) {
        None
    } else {
        Some("NOGROUP the consumer group this client was blocked on no longer exists")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Harness {
        state: State,
        node: Node,
        clients: Vec<ClientState>,
    }

    fn client(id: u64) -> ClientState {
        ClientState::for_tests(id)
    }

    impl Harness {
        fn new() -> Self {
            let node = Node::for_tests();
            Harness {
                state: State::for_tests(),
                node,
                clients: (1..=3).map(client).collect(),
            }
        }

        /// Runs `args` as client `c` the way the connection does (finish_effects after);
        /// returns the reply, whether it asked to block, and the propagated commands.
        fn run(&mut self, c: usize, args: &[&str]) -> (Frame, Option<BlockRequest>, Vec<String>) {
            let argv: Vec<Bytes> = args.iter().map(|a| Bytes::from(a.to_string())).collect();
            let mut effects = Effects::default();
            let client = &mut self.clients[c];
            let reply = (self.node.commands.call_argv)(
                &mut self.state,
                &self.node,
                client,
                &argv,
                1_000_000,
                &mut effects,
            );
            let block = client.block.take();
            crate::blocking::serve_ready(&mut self.state, &self.node, &mut effects);
            let propagated = effects
                .propagate
                .iter()
                .map(|(_, argv)| {
                    argv.iter()
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            (reply, block, propagated)
        }

        fn block(&mut self, c: usize, args: &[&str]) -> oneshot::Receiver<Frame> {
            let argv: Vec<Bytes> = args.iter().map(|a| Bytes::from(a.to_string())).collect();
            let (_, request, _) = self.run(c, args);
            let request = request.expect("the command blocks");
            self.state
                .blocked
                .register(&self.clients[c], &argv, &request)
        }
    }

    fn bulk(s: &str) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn timeouts_parse_as_redis() {
        assert_eq!(parse_timeout(b"0", 0, false), Ok(None));
        assert_eq!(parse_timeout(b"0.0001", 0, false), Ok(None));
        assert_eq!(
            parse_timeout(b"1.5", 0, false),
            Ok(Some(Duration::from_millis(1500)))
        );
        let negative = Err(CommandError::err("timeout is negative"));
        assert_eq!(parse_timeout(b"-1", 0, false), negative);
        assert_eq!(parse_timeout(b"inf", 0, false), negative);
        assert_eq!(parse_timeout(b"1e30", 0, false), negative);
        let bad = Err(CommandError::err("timeout is not a float or out of range"));
        assert_eq!(parse_timeout(b"abc", 0, false), bad);
        assert_eq!(parse_timeout(b"nan", 0, false), bad);
        assert_eq!(parse_timeout(b"", 0, false), bad);
    }

    #[test]
    fn timeouts_parse_as_valkey_when_rounding_up() {
        let valkey = |arg: &[u8]| parse_timeout(arg, 0, true);
        assert_eq!(valkey(b"0"), Ok(None));
        assert_eq!(valkey(b"0.0001"), Ok(Some(Duration::from_millis(1))));
        assert_eq!(valkey(b"-0.0001"), Ok(None));
        assert_eq!(valkey(b"1.5"), Ok(Some(Duration::from_millis(1500))));
        let negative = Err(CommandError::err("timeout is negative"));
        assert_eq!(valkey(b"-1"), negative);
        assert_eq!(valkey(b"-inf"), negative);
        assert_eq!(valkey(b"-1e30"), negative);
        let out = Err(CommandError::err("timeout is out of range"));
        assert_eq!(valkey(b"inf"), out);
        assert_eq!(valkey(b"1e30"), out);
    }

    #[test]
    fn blocking_commands_inside_exec_or_a_script_answer_the_timeout_reply_at_once() {
        let mut h = Harness::new();
        h.clients[0].origin.in_exec = true;
        for (args, expected) in [
            (&["BLPOP", "k", "0"][..], Frame::NullArray),
            (&["BRPOP", "k", "0"], Frame::NullArray),
            (&["BLMPOP", "0", "1", "k", "LEFT"], Frame::NullArray),
            (&["BZPOPMIN", "z", "0"], Frame::NullArray),
            (&["BZMPOP", "0", "1", "z", "MIN"], Frame::NullArray),
            (&["BLMOVE", "k", "d", "LEFT", "LEFT", "0"], Frame::Null),
            (&["BRPOPLPUSH", "k", "d", "0"], Frame::Null),
        ] {
            let (reply, block, _) = h.run(0, args);
            assert_eq!(reply, expected, "{args:?}");
            assert!(block.is_none(), "{args:?} must not block");
        }
        h.clients[0].origin.in_exec = false;
        h.clients[0].origin.in_script = true;
        let (reply, block, _) = h.run(0, &["BLPOP", "k", "0"]);
        assert_eq!((reply, block.is_none()), (Frame::NullArray, true));
    }

    #[test]
    fn blocking_pops_propagate_as_their_plain_forms() {
        let mut h = Harness::new();
        h.run(0, &["RPUSH", "k", "a", "b", "c", "d", "e"]);
        assert_eq!(h.run(0, &["BLPOP", "k", "0"]).2, ["LPOP k"]);
        assert_eq!(h.run(0, &["BRPOP", "k", "0"]).2, ["RPOP k"]);
        assert_eq!(
            h.run(0, &["BLMPOP", "0", "1", "k", "LEFT", "COUNT", "9"]).2,
            ["LPOP k 3"]
        );
        h.run(0, &["RPUSH", "k", "a", "b"]);
        assert_eq!(
            h.run(0, &["BLMOVE", "k", "d", "LEFT", "RIGHT", "0"]).2,
            ["LMOVE k d LEFT RIGHT"]
        );
        assert_eq!(
            h.run(0, &["BRPOPLPUSH", "k", "d", "0"]).2,
            ["RPOPLPUSH k d"]
        );
        h.run(0, &["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
        assert_eq!(h.run(0, &["BZPOPMIN", "z", "0"]).2, ["ZPOPMIN z"]);
        assert_eq!(
            h.run(0, &["BZMPOP", "0", "1", "z", "MAX", "COUNT", "5"]).2,
            ["ZPOPMAX z 2"]
        );
        h.run(0, &["SADD", "s", "a", "b", "c"]);
        let (reply, _, propagated) = h.run(0, &["SPOP", "s"]);
        assert_eq!(propagated.len(), 1);
        let member = match reply {
            Frame::Bulk(m) => String::from_utf8_lossy(&m).into_owned(),
            other => panic!("{other:?}"),
        };
        assert_eq!(propagated[0], format!("SREM s {member}"));
        assert_eq!(h.run(0, &["SPOP", "s", "5"]).2, ["DEL s"]);
    }

    #[test]
    fn a_push_serves_blocked_clients_first_come_first_served() {
        let mut h = Harness::new();
        let mut first = h.block(0, &["BLPOP", "k", "0"]);
        let mut second = h.block(1, &["BRPOP", "other", "k", "0"]);
        assert_eq!(h.state.blocked.len(), 2);
        let (reply, _, propagated) = h.run(2, &["RPUSH", "k", "a", "b", "c"]);
        assert_eq!(reply, Frame::Integer(3));
        assert_eq!(propagated, ["RPUSH k a b c", "LPOP k", "RPOP k"]);
        assert_eq!(
            first.try_recv(),
            Ok(Frame::Array(vec![bulk("k"), bulk("a")]))
        );
        assert_eq!(
            second.try_recv(),
            Ok(Frame::Array(vec![bulk("k"), bulk("c")]))
        );
        assert!(h.state.blocked.is_empty());
    }

    #[test]
    fn waiters_stay_blocked_when_the_data_is_gone_or_of_another_type() {
        let mut h = Harness::new();
        let mut first = h.block(0, &["BLPOP", "k", "0"]);
        let mut second = h.block(1, &["BZPOPMIN", "k", "0"]);
        h.run(2, &["RPUSH", "k", "a"]);
        assert_eq!(
            first.try_recv(),
            Ok(Frame::Array(vec![bulk("k"), bulk("a")]))
        );
        assert!(second.try_recv().is_err(), "a list does not serve BZPOPMIN");
        assert!(h.state.blocked.waiters.contains_key(&2));
        h.run(2, &["ZADD", "k", "5", "m"]);
        assert_eq!(
            second.try_recv(),
            Ok(Frame::Array(vec![bulk("k"), bulk("m"), Frame::Double(5.0)]))
        );
    }

    #[test]
    fn a_served_blmove_wakes_the_waiters_of_its_destination() {
        let mut h = Harness::new();
        let mut mover = h.block(0, &["BLMOVE", "a", "b", "LEFT", "LEFT", "0"]);
        let mut popper = h.block(1, &["BLPOP", "b", "0"]);
        let (_, _, propagated) = h.run(2, &["LPUSH", "a", "x"]);
        assert_eq!(mover.try_recv(), Ok(bulk("x")));
        assert_eq!(
            popper.try_recv(),
            Ok(Frame::Array(vec![bulk("b"), bulk("x")]))
        );
        assert_eq!(propagated, ["LPUSH a x", "LMOVE a b LEFT LEFT", "LPOP b"]);
    }

    #[test]
    fn resp3_replies_are_encoded_as_redis_7_0_sends_them() {
        let mut h = Harness::new();
        h.clients[0].resp = Version::Resp3;
        fn check(h: &mut Harness, args: &[&str], expected: &[u8]) {
            let (reply, _, _) = h.run(0, args);
            let bytes = locksmith_resp::encode_to_vec(&reply, Version::Resp3);
            assert_eq!(
                String::from_utf8_lossy(&bytes),
                String::from_utf8_lossy(expected),
                "{args:?}"
            );
        }
        // Captured from redis-server 7.0.15 with HELLO 3.
        check(&mut h, &["ZADD", "z", "0.1", "a", "2", "b"], b":2\r\n");
        check(&mut h, &["ZSCORE", "z", "a"], b",0.10000000000000001\r\n");
        check(
            &mut h,
            &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
            b"*2\r\n*2\r\n$1\r\na\r\n,0.10000000000000001\r\n*2\r\n$1\r\nb\r\n,2\r\n",
        );
        check(
            &mut h,
            &["ZPOPMIN", "z"],
            b"*2\r\n$1\r\na\r\n,0.10000000000000001\r\n",
        );
        check(&mut h, &["ZADD", "z", "0.1", "a"], b":1\r\n");
        check(
            &mut h,
            &["ZPOPMIN", "z", "1"],
            b"*1\r\n*2\r\n$1\r\na\r\n,0.10000000000000001\r\n",
        );
        check(&mut h, &["ZADD", "z", "0.1", "a"], b":1\r\n");
        check(
            &mut h,
            &["ZMPOP", "1", "z", "MIN"],
            b"*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\na\r\n,0.10000000000000001\r\n",
        );
        check(&mut h, &["ZADD", "z", "0.1", "a"], b":1\r\n");
        check(
            &mut h,
            &["BZPOPMIN", "z", "0"],
            b"*3\r\n$1\r\nz\r\n$1\r\na\r\n,0.10000000000000001\r\n",
        );
        check(&mut h, &["ZUNION", "1", "missing", "WITHSCORES"], b"*0\r\n");
        check(&mut h, &["ZADD", "z", "0.1", "a"], b":1\r\n");
        check(
            &mut h,
            &["ZSCAN", "z", "0"],
            b"*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$19\r\n0.10000000000000001\r\n$1\r\nb\r\n$1\r\n2\r\n",
        );
        check(&mut h, &["SADD", "s", "1", "2"], b":2\r\n");
        check(&mut h, &["SMEMBERS", "s"], b"~2\r\n$1\r\n1\r\n$1\r\n2\r\n");
        check(&mut h, &["SPOP", "nos", "1"], b"~0\r\n");
        h.clients[0].origin.in_exec = true;
        check(&mut h, &["BLPOP", "nol", "0.01"], b"_\r\n");
        h.clients[0].origin.in_exec = false;
        check(&mut h, &["LPOP", "nol", "1"], b"_\r\n");
        check(
            &mut h,
            &["ZADD", "z", "INCR", "1", "a"],
            b",1.1000000000000001\r\n",
        );
        check(
            &mut h,
            &["ZINCRBY", "z", "1", "a"],
            b",2.1000000000000001\r\n",
        );
        check(
            &mut h,
            &["ZMSCORE", "z", "a", "b"],
            b"*2\r\n,2.1000000000000001\r\n,2\r\n",
        );
    }

    #[test]
    fn a_gone_client_no_longer_waits() {
        let mut h = Harness::new();
        let _rx = h.block(0, &["BLPOP", "k", "0"]);
        let mut second = h.block(1, &["BLPOP", "k", "0"]);
        h.state.client_gone(1);
        h.run(2, &["RPUSH", "k", "v"]);
        assert_eq!(
            second.try_recv(),
            Ok(Frame::Array(vec![bulk("k"), bulk("v")]))
        );
    }
}
