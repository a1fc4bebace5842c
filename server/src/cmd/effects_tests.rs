//! Keyspace events and replication effects of the string, expiry, hash, key and GEO commands,
//! checked against what Redis 7.0 raises and propagates (not observable over the wire yet).

use super::call_argv;
use crate::client::ClientState;
use crate::node::{Effects, Node, State};
use crate::notify;
use bytes::Bytes;
use locksmith_resp::Frame;

struct Harness {
    state: State,
    node: Node,
    client: ClientState,
    now: u64,
}

/// What one command did: (events as (db, class, name, key)), propagated argv as text.
type Observed = (
    Vec<(usize, u32, &'static str, String)>,
    Vec<(usize, String)>,
);

impl Harness {
    /// Every event class enabled but `new` (`KEA`), so each event a command raises is seen.
    fn new() -> Self {
        let node = Node::for_tests();
        let config = crate::config::Config {
            notify_keyspace_events: "KEA".into(),
            ..crate::config::Config::default()
        };
        let config = match crate::config::runtime::RuntimeConfig::new(&config) {
            Ok(config) => std::sync::Arc::new(config),
            Err(e) => panic!("KEA is a valid setting: {e}"),
        };
        Harness {
            state: State::new(config, 1),
            node,
            client: ClientState::for_tests(1),
            now: 1_000_000,
        }
    }

    /// Runs `args`, recording into `effects`.
    fn call(&mut self, args: &[&str], effects: &mut Effects) -> Frame {
        let argv: Vec<Bytes> = args.iter().map(|a| Bytes::from(a.to_string())).collect();
        call_argv(
            &mut self.state,
            &self.node,
            &mut self.client,
            &argv,
            self.now,
            effects,
        )
    }

    fn run(&mut self, args: &[&str]) -> (Frame, Observed) {
        let mut effects = Effects::default();
        let reply = self.call(args, &mut effects);
        let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
        let events = effects
            .events
            .iter()
            .map(|(db, class, name, key)| (*db, *class, *name, text(key)))
            .collect();
        let propagated = effects
            .propagate
            .iter()
            .map(|(db, argv)| (*db, argv.iter().map(text).collect::<Vec<_>>().join(" ")))
            .collect();
        (reply, (events, propagated))
    }

    /// Runs `args`, asserts it did not fail, returns (events, propagation).
    fn ok(&mut self, args: &[&str]) -> Observed {
        let (reply, observed) = self.run(args);
        assert!(!reply.is_error(), "{args:?}: {reply:?}");
        observed
    }
}

const G: u32 = notify::GENERIC;
const S: u32 = notify::STRING;
const H: u32 = notify::HASH;
const Z: u32 = notify::ZSET;

fn ev(list: &[(usize, u32, &'static str, &str)]) -> Vec<(usize, u32, &'static str, String)> {
    list.iter()
        .map(|(d, c, n, k)| (*d, *c, *n, k.to_string()))
        .collect()
}

fn prop(list: &[&str]) -> Vec<(usize, String)> {
    list.iter().map(|s| (0, s.to_string())).collect()
}

#[test]
fn string_commands_raise_redis_events_and_propagate_absolute_deadlines() {
    let mut h = Harness::new();
    let (e, p) = h.ok(&["SET", "k", "v", "EX", "10"]);
    assert_eq!(e, ev(&[(0, S, "set", "k"), (0, G, "expire", "k")]));
    assert_eq!(p, prop(&["SET k v PXAT 1010000"]));
    let (e, p) = h.ok(&["SET", "k", "v", "GET", "NX"]);
    assert!(e.is_empty() && p.is_empty());
    let (_, p) = h.ok(&["SET", "k", "w", "GET", "KEEPTTL"]);
    assert_eq!(p, prop(&["SET k w KEEPTTL"]));
    let (_, p) = h.ok(&["SETEX", "k", "5", "v"]);
    assert_eq!(p, prop(&["SET k v PXAT 1005000"]));
    let (_, p) = h.ok(&["PSETEX", "k", "5", "v"]);
    assert_eq!(p, prop(&["SET k v PXAT 1000005"]));
    let (e, p) = h.ok(&["GETSET", "k", "x"]);
    assert_eq!(e, ev(&[(0, S, "set", "k")]));
    assert_eq!(p, prop(&["SET k x"]));
    let (e, p) = h.ok(&["GETEX", "k", "PX", "100"]);
    assert_eq!(e, ev(&[(0, G, "expire", "k")]));
    assert_eq!(p, prop(&["PEXPIREAT k 1000100"]));
    let (e, p) = h.ok(&["GETEX", "k", "PERSIST"]);
    assert_eq!(e, ev(&[(0, G, "persist", "k")]));
    assert_eq!(p, prop(&["PERSIST k"]));
    let (e, p) = h.ok(&["GETEX", "k"]);
    assert!(e.is_empty() && p.is_empty());
    let (e, p) = h.ok(&["GETEX", "k", "EXAT", "1"]);
    assert_eq!(e, ev(&[(0, G, "del", "k")]));
    assert_eq!(p, prop(&["DEL k"]));
    let (e, p) = h.ok(&["INCRBY", "n", "5"]);
    assert_eq!(e, ev(&[(0, S, "incrby", "n")]));
    assert_eq!(p, prop(&["INCRBY n 5"]));
    let (e, p) = h.ok(&["INCRBYFLOAT", "n", "0.5"]);
    assert_eq!(e, ev(&[(0, S, "incrbyfloat", "n")]));
    assert_eq!(p, prop(&["SET n 5.5 KEEPTTL"]));
    let (e, p) = h.ok(&["GETDEL", "n"]);
    assert_eq!(e, ev(&[(0, G, "del", "n")]));
    assert_eq!(p, prop(&["DEL n"]));
    let (e, _) = h.ok(&["APPEND", "a", "x"]);
    assert_eq!(e, ev(&[(0, S, "append", "a")]));
    let (e, _) = h.ok(&["SETRANGE", "a", "3", "y"]);
    assert_eq!(e, ev(&[(0, S, "setrange", "a")]));
    let (e, p) = h.ok(&["MSET", "a", "1", "b", "2"]);
    assert_eq!(e, ev(&[(0, S, "set", "a"), (0, S, "set", "b")]));
    assert_eq!(p, prop(&["MSET a 1 b 2"]));
    let (e, p) = h.ok(&["GET", "a"]);
    assert!(e.is_empty() && p.is_empty());
    // A failed command propagates nothing.
    let (reply, (e, p)) = h.run(&["INCR", "b", "x"]);
    assert!(reply.is_error() && e.is_empty() && p.is_empty());
}

#[test]
fn expiry_commands_propagate_pexpireat_or_del() {
    let mut h = Harness::new();
    h.ok(&["SET", "k", "v"]);
    let (e, p) = h.ok(&["EXPIRE", "k", "100", "NX"]);
    assert_eq!(e, ev(&[(0, G, "expire", "k")]));
    assert_eq!(p, prop(&["PEXPIREAT k 1100000 NX"]));
    let (_, p) = h.ok(&["PEXPIRE", "k", "500"]);
    assert_eq!(p, prop(&["PEXPIREAT k 1000500"]));
    let (_, p) = h.ok(&["EXPIREAT", "k", "2000"]);
    assert_eq!(p, prop(&["PEXPIREAT k 2000000"]));
    let (_, p) = h.ok(&["PEXPIREAT", "k", "3000000"]);
    assert_eq!(p, prop(&["PEXPIREAT k 3000000"]));
    let (e, p) = h.ok(&["EXPIRE", "k", "10", "GT"]);
    assert!(e.is_empty() && p.is_empty());
    let (e, p) = h.ok(&["PERSIST", "k"]);
    assert_eq!(e, ev(&[(0, G, "persist", "k")]));
    assert_eq!(p, prop(&["PERSIST k"]));
    let (e, p) = h.ok(&["PERSIST", "k"]);
    assert!(e.is_empty() && p.is_empty());
    let (e, p) = h.ok(&["PEXPIRE", "k", "0"]);
    assert_eq!(e, ev(&[(0, G, "del", "k")]));
    assert_eq!(p, prop(&["DEL k"]));
    // Lazy expiry on access: `expired`, and DEL to replicas.
    h.ok(&["SET", "t", "v", "PX", "10"]);
    h.now += 20;
    let (reply, (e, p)) = h.run(&["GET", "t"]);
    assert_eq!(reply, Frame::Null);
    assert_eq!(e, ev(&[(0, notify::EXPIRED, "expired", "t")]));
    assert_eq!(p, prop(&["DEL t"]));
}

#[test]
fn hash_and_key_commands_raise_redis_events() {
    let mut h = Harness::new();
    let (e, p) = h.ok(&["HSET", "h", "a", "1", "b", "2"]);
    assert_eq!(e, ev(&[(0, H, "hset", "h")]));
    assert_eq!(p, prop(&["HSET h a 1 b 2"]));
    let (e, _) = h.ok(&["HINCRBY", "h", "a", "2"]);
    assert_eq!(e, ev(&[(0, H, "hincrby", "h")]));
    let (e, p) = h.ok(&["HINCRBYFLOAT", "h", "a", "0.5"]);
    assert_eq!(e, ev(&[(0, H, "hincrbyfloat", "h")]));
    assert_eq!(p, prop(&["HSET h a 3.5"]));
    let (e, p) = h.ok(&["HSETNX", "h", "a", "x"]);
    assert!(e.is_empty() && p.is_empty());
    let (e, _) = h.ok(&["HDEL", "h", "a"]);
    assert_eq!(e, ev(&[(0, H, "hdel", "h")]));
    let (e, _) = h.ok(&["HDEL", "h", "b"]);
    assert_eq!(e, ev(&[(0, H, "hdel", "h"), (0, G, "del", "h")]));
    h.ok(&["SET", "a", "1"]);
    let (e, p) = h.ok(&["RENAME", "a", "b"]);
    assert_eq!(
        e,
        ev(&[(0, G, "rename_from", "a"), (0, G, "rename_to", "b")])
    );
    assert_eq!(p, prop(&["RENAME a b"]));
    let (e, _) = h.ok(&["COPY", "b", "c", "DB", "3"]);
    assert_eq!(e, ev(&[(3, G, "copy_to", "c")]));
    let (e, p) = h.ok(&["MOVE", "b", "2"]);
    assert_eq!(e, ev(&[(0, G, "move_from", "b"), (2, G, "move_to", "b")]));
    assert_eq!(p, prop(&["MOVE b 2"]));
    let (e, _) = h.ok(&["DEL", "b", "nope"]);
    assert!(e.is_empty());
    h.ok(&["SET", "d", "1"]);
    let (e, p) = h.ok(&["UNLINK", "d"]);
    assert_eq!(e, ev(&[(0, G, "del", "d")]));
    assert_eq!(p, prop(&["UNLINK d"]));
    let (_, p) = h.ok(&["SWAPDB", "0", "2"]);
    assert_eq!(p, prop(&["SWAPDB 0 2"]));
    let (reply, _) = h.run(&["EXISTS", "b"]);
    assert_eq!(reply, Frame::Integer(1));
    assert_eq!(h.client.db, 0);
}

/// The propagations are what a Redis 7.0.15 master sent a replica (`SYNC`) for the same
/// commands.
#[test]
fn geo_commands_propagate_zadd_or_themselves() {
    let mut h = Harness::new();
    let (e, p) = h.ok(&[
        "GEOADD",
        "g",
        "CH",
        "13.361389",
        "38.115556",
        "Palermo",
        "15.087269",
        "37.502669",
        "Catania",
    ]);
    assert_eq!(e, ev(&[(0, Z, "zadd", "g")]));
    assert_eq!(
        p,
        prop(&["zadd g CH 3479099956230698 Palermo 3479447370796909 Catania"])
    );
    let (e, p) = h.ok(&["GEOADD", "g", "NX", "13.361389", "38.115556", "Palermo"]);
    assert!(e.is_empty() && p.is_empty());
    let (_, p) = h.ok(&["GEOADD", "g", "XX", "CH", "13.4", "38.1", "Palermo"]);
    assert_eq!(p, prop(&["zadd g XX CH 3479099937378871 Palermo"]));
    let (e, p) = h.ok(&["GEORADIUS", "g", "15", "37", "200", "km", "STORE", "d1"]);
    assert_eq!(e, ev(&[(0, Z, "georadiusstore", "d1")]));
    assert_eq!(p, prop(&["GEORADIUS g 15 37 200 km STORE d1"]));
    // An empty result deletes the destination; with nothing to delete nothing propagates.
    let empty = ["GEORADIUS", "g", "15", "37", "1", "km", "STORE", "d1"];
    let (e, p) = h.ok(&empty);
    assert_eq!(e, ev(&[(0, G, "del", "d1")]));
    assert_eq!(p, prop(&["GEORADIUS g 15 37 1 km STORE d1"]));
    let (e, p) = h.ok(&empty);
    assert!(e.is_empty() && p.is_empty());
    let (e, p) = h.ok(&[
        "GEOSEARCHSTORE",
        "d2",
        "g",
        "FROMLONLAT",
        "15",
        "37",
        "BYRADIUS",
        "200",
        "km",
        "STOREDIST",
    ]);
    assert_eq!(e, ev(&[(0, Z, "geosearchstore", "d2")]));
    assert_eq!(
        p,
        prop(&["GEOSEARCHSTORE d2 g FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST"])
    );
    let (e, p) = h.ok(&[
        "GEOSEARCHSTORE",
        "d2",
        "nokey",
        "FROMLONLAT",
        "15",
        "37",
        "BYRADIUS",
        "200",
        "km",
    ]);
    assert_eq!(e, ev(&[(0, G, "del", "d2")]));
    assert_eq!(
        p,
        prop(&["GEOSEARCHSTORE d2 nokey FROMLONLAT 15 37 BYRADIUS 200 km"])
    );
    let (e, p) = h.ok(&["GEORADIUSBYMEMBER", "nokey", "m", "1", "km", "STORE", "d3"]);
    assert!(e.is_empty() && p.is_empty());
    for read in [
        &["GEORADIUS", "g", "15", "37", "200", "km"][..],
        &[
            "GEOSEARCH",
            "g",
            "FROMMEMBER",
            "Palermo",
            "BYBOX",
            "1",
            "1",
            "km",
        ],
        &["GEOPOS", "g", "Palermo"],
        &["GEODIST", "g", "Palermo", "Catania"],
        &["GEOHASH", "g", "Palermo"],
    ] {
        let (e, p) = h.ok(read);
        assert!(e.is_empty() && p.is_empty(), "{read:?}");
    }
}

/// The keyspace's memory account after a batch of writes (one `Effects`, one
/// `finish_effects`) equals that of the same final keys written one at a time: a value stored
/// whole is measured as it is stored, and a later change in place in the same batch is
/// measured again at the end.
#[test]
fn a_batch_accounts_memory_as_the_same_writes_one_by_one() {
    let big = "x".repeat(3000);
    let batch: &[&[&str]] = &[
        &["SET", "k", "v"],
        &["APPEND", "k", &big],
        &["SET", "k2", "v2"],
        &["HSET", "h", "f", "v"],
        &["SET", "k3", &big],
        &["SET", "k3", "short"],
        &["HSET", "h", "f2", &big],
        &["SET", "k4", "1"],
        &["INCRBY", "k4", "100000000000"],
        &["HSETNX", "h", "f3", &big],
        &["HINCRBY", "h", "n", "5"],
        &["HINCRBYFLOAT", "h", "fl", "1.5"],
        &["HDEL", "h", "f"],
        &["HINCRBY", "h2", "n", "7"],
        &["HSET", "gone", "f", &big],
        &["HDEL", "gone", "f"],
        &["RPUSH", "l", "a", &big],
        &["LPUSH", "l", "b"],
        &["RPUSHX", "l", "c"],
        &["SADD", "s", "1", "2"],
        &["SADD", "s", &big],
    ];
    let mut h = Harness::new();
    let mut effects = Effects::default();
    for args in batch {
        let reply = h.call(args, &mut effects);
        assert!(!reply.is_error(), "{args:?}: {reply:?}");
    }
    h.state.finish_effects(&h.node, &mut effects);
    let batched = h.state.used_memory();
    let db = &h.state.dbs[0];
    assert_eq!(db.used_bytes(), db.measured_afresh());

    let vk = format!("v{big}");
    let one_by_one: &[&[&str]] = &[
        &["SET", "k", &vk],
        &["SET", "k2", "v2"],
        &["HSET", "h", "f2", &big, "f3", &big, "n", "5", "fl", "1.5"],
        &["HSET", "h2", "n", "7"],
        &["RPUSH", "l", "b", "a", &big, "c"],
        &["SADD", "s", "1", "2", &big],
        &["SET", "k3", "short"],
        &["SET", "k4", "100000000001"],
    ];
    let mut fresh = Harness::new();
    for args in one_by_one {
        let mut effects = Effects::default();
        let reply = fresh.call(args, &mut effects);
        assert!(!reply.is_error(), "{args:?}: {reply:?}");
        fresh.state.finish_effects(&fresh.node, &mut effects);
    }
    assert_eq!(batched, fresh.state.used_memory());
    assert!(
        batched > 9000,
        "the three big values are counted: {batched}"
    );
}

#[test]
fn writes_that_remove_in_place_keep_memory_measured_and_delete_what_they_empty() {
    const L: u32 = notify::LIST;
    const SET: u32 = notify::SET;
    let big = "x".repeat(3000);
    let mut h = Harness::new();
    // (command, the events it raises on its key)
    type Step<'a> = (&'a [&'a str], &'a [(u32, &'static str)]);
    let steps: &[Step] = &[
        (&["RPUSH", "l", "a", &big, "b", "c"], &[(L, "rpush")]),
        (&["LPOP", "l"], &[(L, "lpop")]),
        (&["RPOP", "l", "2"], &[(L, "rpop")]),
        (&["RPUSH", "l2", &big], &[(L, "rpush")]),
        (&["RPOP", "l2"], &[(L, "rpop"), (G, "del")]),
        (&["LPOP", "l2"], &[]),
        (&["LPUSHX", "l3", "x"], &[]),
        (&["RPUSH", "l3", "a", "b", "a", "c", "a"], &[(L, "rpush")]),
        (&["LPUSHX", "l3", &big], &[(L, "lpush")]),
        (&["LSET", "l3", "0", "y"], &[(L, "lset")]),
        (&["LSET", "l3", "99", "y"], &[]),
        (&["LINSERT", "l3", "BEFORE", "c", &big], &[(L, "linsert")]),
        (&["LINSERT", "l3", "AFTER", "nope", "x"], &[]),
        (&["LREM", "l3", "-2", "a"], &[(L, "lrem")]),
        (&["LREM", "l3", "0", "zzz"], &[]),
        (&["LTRIM", "l3", "1", "3"], &[(L, "ltrim")]),
        (&["LRANGE", "l3", "0", "-1"], &[]),
        (&["LTRIM", "l3", "5", "1"], &[(L, "ltrim"), (G, "del")]),
        (&["SADD", "s", "1", &big], &[(SET, "sadd")]),
        (&["SREM", "s", &big, "nope"], &[(SET, "srem")]),
        (&["SREM", "s", "1"], &[(SET, "srem"), (G, "del")]),
        (&["HSET", "h", "f", &big, "g", "1"], &[(H, "hset")]),
        (&["HDEL", "h", "f"], &[(H, "hdel")]),
        (&["HDEL", "h", "g", "f"], &[(H, "hdel"), (G, "del")]),
        (
            &["ZADD", "z", "1", "a", "2", &big, "3", "c"],
            &[(Z, "zadd")],
        ),
        (&["ZADD", "z", "XX", "5", "a", "9", "new"], &[(Z, "zadd")]),
        (&["ZADD", "z", "NX", "7", "a"], &[]),
        (&["ZINCRBY", "z", "1", "c"], &[(Z, "zincr")]),
        (&["ZREM", "z", "c"], &[(Z, "zrem")]),
        (&["ZPOPMIN", "z"], &[(Z, "zpopmin")]),
        (&["ZADD", "z2", "1", &big], &[(Z, "zadd")]),
        (&["ZPOPMAX", "z2", "5"], &[(Z, "zpopmax"), (G, "del")]),
        (&["ZADD", "z3", "XX", "1", "m"], &[]),
    ];
    // Each step is checked without `finish_effects`: the write measured what it changed.
    for (args, events) in steps {
        let key = args[1];
        let (_, (seen, _)) = h.run(args);
        let expected: Vec<_> = events.iter().map(|&(c, n)| (0, c, n, key)).collect();
        assert_eq!(seen, ev(&expected), "{args:?}");
        let db = &h.state.dbs[0];
        assert_eq!(db.used_bytes(), db.measured_afresh(), "{args:?}");
    }
    for gone in ["l2", "l3", "s", "h", "z2", "z3"] {
        assert_eq!(h.run(&["EXISTS", gone]).0, Frame::Integer(0), "{gone}");
    }
    let (l, _) = h.run(&["LRANGE", "l", "0", "-1"]);
    assert_eq!(l, Frame::Array(vec![Frame::Bulk(Bytes::from(big.clone()))]));
    let (z, _) = h.run(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]);
    assert_eq!(
        z,
        Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(b"a")),
            Frame::Double(5.0)
        ])
    );
    // A wrong type is refused and left as it was.
    h.ok(&["SET", "str", "v"]);
    for args in [
        &["LPOP", "str"][..],
        &["LPUSHX", "str", "v"],
        &["LSET", "str", "0", "v"],
        &["LINSERT", "str", "BEFORE", "v", "w"],
        &["LREM", "str", "0", "v"],
        &["LTRIM", "str", "0", "1"],
        &["SREM", "str", "v"],
        &["HDEL", "str", "f"],
        &["ZREM", "str", "m"],
        &["ZPOPMIN", "str"],
        &["ZADD", "str", "XX", "1", "m"],
        &["ZADD", "str", "1", "m"],
    ] {
        let (reply, (seen, _)) = h.run(args);
        assert!(reply.is_error(), "{args:?}: {reply:?}");
        assert!(seen.is_empty(), "{args:?}");
    }
    assert_eq!(
        h.run(&["GET", "str"]).0,
        Frame::Bulk(Bytes::from_static(b"v"))
    );
}
