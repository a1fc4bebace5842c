"""Interop checks of real Python clients and lock libraries against one Redis-compatible target.

Run once per target (our `locksmith-server` and a real `redis-server`):

    python test_interop.py --target ours --urls redis://127.0.0.1:P1/ redis://...P2/ redis://...P3/ \
        --out results-ours.json

Every check asserts what the client must see; values whose exact form matters are also recorded
with `ctx.record(...)` and written to `--out`, so `interop/compare.py` can diff the targets.
The first URL is the main target; the other two (optional) are independent masters for the
quorum checks. Each check starts from FLUSHALL and restores any setting it changes.
"""

import argparse
import json
import sys
import threading
import time
import traceback

import logging

import redis
from redis.exceptions import LockNotOwnedError, ResponseError, WatchError

# Redisson's lock scripts, copied byte for byte from lock/src/scripts.rs.
REDISSON_ACQUIRE = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
REDISSON_RELEASE = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; "
REDISSON_RENEW = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;"
REDISSON_PROBE = "redis.call('get', KEYS[1]) redis.call('get', KEYS[2])"

logging.getLogger("redis_lock").setLevel(logging.ERROR)  # "Failed to acquire" is expected here

WAIT = 5.0  # upper bound of every wait for something that must happen


class Ctx:
    def __init__(self, urls):
        self.urls = urls
        self.obs = {}
        self.test = ""
        self.clients = []

    def client(self, url=None, **kw):
        kw.setdefault("decode_responses", True)
        kw.setdefault("socket_timeout", 10)
        c = redis.Redis.from_url(url or self.urls[0], **kw)
        self.clients.append(c)
        return c

    def record(self, name, value):
        self.obs[f"{self.test}.{name}"] = normalise(value)

    def close(self):
        for c in self.clients:
            try:
                c.close()
            except Exception:
                pass
        self.clients = []


def normalise(v):
    """JSON-able form that keeps the distinctions clients see (set vs list, float vs int)."""
    if isinstance(v, (set, frozenset)):
        return {"set": sorted(normalise(x) for x in v)}
    if isinstance(v, dict):
        return {"map": [[normalise(k), normalise(x)] for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))]}
    if isinstance(v, (list, tuple)):
        return [normalise(x) for x in v]
    if isinstance(v, bytes):
        return {"bytes": v.decode("latin-1")}
    if isinstance(v, float):
        return {"float": repr(v)}
    if isinstance(v, BaseException):
        return {"error": type(v).__name__, "text": str(v)}
    return v


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error itself is the observation
        return e
    raise AssertionError("expected an error")


def wait_until(pred, what, limit=WAIT):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def get_messages(p, n, limit=WAIT):
    """Collect `n` pub/sub messages (subscribe confirmations included) within `limit` seconds."""
    out = []
    deadline = time.monotonic() + limit
    while len(out) < n and time.monotonic() < deadline:
        m = p.get_message(timeout=0.1)
        if m is not None:
            out.append(m)
    assert len(out) == n, f"got {len(out)} of {n} messages: {out}"
    return out


def in_thread(fn):
    """Run fn in a thread; returns a join function giving fn's result (or raising its error)."""
    box = {}

    def run():
        try:
            box["v"] = fn()
        except BaseException as e:  # noqa: BLE001
            box["e"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()

    def join(limit=WAIT * 2):
        t.join(limit)
        assert not t.is_alive(), "thread did not finish"
        if "e" in box:
            raise box["e"]
        return box["v"]

    join.alive = t.is_alive
    return join


# ---------------------------------------------------------------- basic commands


def check_commands(ctx, proto):
    r = ctx.client(protocol=proto)
    assert r.ping() is True
    assert r.set("s", "v") is True
    ctx.record("get", r.get("s"))
    ctx.record("set_nx_existing", r.set("s", "w", nx=True))
    ctx.record("set_get", r.set("s", "w", get=True))
    ctx.record("incr", [r.incr("n"), r.incrby("n", 5), r.decr("n"), r.incrbyfloat("f", 1.5)])
    ctx.record("mget", r.mget("s", "missing", "n"))
    ctx.record("append_strlen", [r.append("s", "xy"), r.strlen("s"), r.getrange("s", 0, 1)])
    assert r.set("t", "1", px=60000) is True
    ttl = r.pttl("t")
    assert 59000 < ttl <= 60000, ttl
    ctx.record("ttl_missing", [r.ttl("missing"), r.pttl("s"), r.persist("t"), r.ttl("t")])
    ctx.record("expire_opts", [r.expire("t", 100, nx=True), r.expire("t", 50, gt=True), r.expire("t", 200, gt=True)])
    ctx.record("hash", [r.hset("h", mapping={"a": "1", "b": "2"}), r.hget("h", "a"), r.hgetall("h"),
                        r.hincrby("h", "a", 2), r.hmget("h", "a", "zz"), r.hlen("h"), r.hexists("h", "b"),
                        sorted(r.hkeys("h")), r.hdel("h", "b"), r.hrandfield("h")])
    ctx.record("list", [r.rpush("l", "a", "b", "c"), r.lpush("l", "z"), r.lrange("l", 0, -1), r.lpop("l"),
                        r.rpop("l", 2), r.llen("l"), r.lpos("l", "a"), r.lmove("l", "l2", "LEFT", "RIGHT"),
                        r.exists("l")])
    ctx.record("set", [r.sadd("st", "a", "b", "c"), r.smembers("st"), r.sismember("st", "a"),
                       r.smismember("st", ["a", "q"]), r.scard("st"), r.sinter("st", "missing"),
                       r.srem("st", "a")])
    ctx.record("zset", [r.zadd("z", {"a": 1, "b": 2.5, "c": 3}), r.zscore("z", "b"), r.zincrby("z", 1, "a"),
                        r.zrange("z", 0, -1, withscores=True), r.zrangebyscore("z", 2, "+inf"),
                        r.zrank("z", "c"), r.zpopmin("z"), r.zmscore("z", ["b", "q"]), r.zcard("z")])
    ctx.record("keys", [sorted(r.keys("*")), r.type("h"), r.type("z"), r.type("missing"), r.dbsize(),
                        sorted(r.scan_iter(match="s*", count=2)), r.rename("s", "s2"), r.exists("s", "s2"),
                        r.delete("s2", "missing"), r.unlink("h")])
    ctx.record("wrongtype", error_of(lambda: r.lpush("z", "x")))
    ctx.record("unknown", error_of(lambda: r.execute_command("NOSUCHCMD", "a")))
    ctx.record("arity", error_of(lambda: r.execute_command("GET")))
    ctx.record("not_int", error_of(lambda: r.incr("f")))
    ctx.record("echo_binary", redis.Redis.from_url(ctx.urls[0], protocol=proto).echo(b"\x00\xff\r\n"))
    ctx.record("time_len", len(r.time()))
    ctx.record("select_db", [ctx.client(db=3, protocol=proto).set("in3", 1), r.exists("in3"),
                             ctx.client(db=3, protocol=proto).get("in3")])


def t_commands_resp2(ctx):
    check_commands(ctx, 2)


def t_commands_resp3(ctx):
    check_commands(ctx, 3)


def t_connection_handshake(ctx):
    for proto in (2, 3):
        r = ctx.client(protocol=proto, client_name=f"interop-{proto}")
        assert r.client_getname() == f"interop-{proto}"
        info = r.client_info()
        assert info["name"] == f"interop-{proto}" and str(info["resp"]) == str(proto), info
        assert r.client_id() == int(info["id"])
        assert any(c["name"] == f"interop-{proto}" for c in r.client_list())
        ctx.record(f"hello{proto}", {k: v for k, v in r.execute_command("HELLO", proto).items()
                                     if k not in ("id",)} if proto == 3 else
                   [x for i, x in enumerate(r.execute_command("HELLO", proto)) if i not in (7, 8)])
        server = r.info("server")
        assert server["redis_version"].startswith("7."), server
        for section in ("default", "all", "everything"):
            assert "redis_version" in r.info(section)
        ctx.record(f"info_keys_{proto}", sorted(k for k in r.info("clients")))
        ctx.record(f"info_keyspace_{proto}", r.info("keyspace"))
        assert r.info("replication")["role"] == "master"
        cmds = r.command()
        for name in ("get", "set", "eval", "evalsha", "hincrby", "pexpire", "publish", "blpop"):
            assert name in cmds, name
        ctx.record(f"command_get_{proto}", {k: cmds["get"][k] for k in ("arity", "flags", "first_key_pos",
                                                                          "last_key_pos", "step_count")})
        ctx.record(f"command_eval_{proto}", {k: cmds["eval"][k] for k in ("arity", "flags")})
        assert r.command_count() == len(cmds)
        ctx.record(f"config_get_{proto}", r.config_get("maxmemory*"))
        ctx.record(f"config_notify_{proto}", r.config_get("notify-keyspace-events"))


def t_auth(ctx):
    admin = ctx.client()
    admin.config_set("requirepass", "s3cret")
    try:
        for proto in (2, 3):
            r = ctx.client(protocol=proto, password="s3cret")  # RESP3: HELLO 3 AUTH default s3cret
            assert r.ping() is True
            bad = error_of(lambda: ctx.client(protocol=proto, password="wrong").ping())
            ctx.record(f"bad_password_{proto}", bad)
            noauth = error_of(lambda: ctx.client(protocol=proto).get("x"))
            ctx.record(f"noauth_{proto}", noauth)
    finally:
        admin.config_set("requirepass", "")


def t_blocking_pops(ctx):
    r = ctx.client()
    t0 = time.monotonic()
    assert r.blpop("bl", timeout=0.2) is None
    assert time.monotonic() - t0 >= 0.15
    other = ctx.client()
    join = in_thread(lambda: r.blpop(["bl", "bl2"], timeout=5))
    time.sleep(0.1)
    other.rpush("bl2", "x")
    ctx.record("blpop", join())
    join = in_thread(lambda: r.brpoplpush("src", "dst", timeout=5))
    time.sleep(0.1)
    other.rpush("src", "y")
    ctx.record("brpoplpush", [join(), other.lrange("dst", 0, -1)])
    join = in_thread(lambda: r.bzpopmin("bz", timeout=5))
    time.sleep(0.1)
    other.zadd("bz", {"m": 2})
    ctx.record("bzpopmin", join())


# ---------------------------------------------------------------- pipelines, transactions


def t_pipeline(ctx):
    for proto in (2, 3):
        r = ctx.client(protocol=proto)
        r.flushdb()
        p = r.pipeline(transaction=False)
        for i in range(200):
            p.set(f"k{i}", i)
        p.get("k7").incr("k7").hset("h", "f", 1).hgetall("h").lpush("h", 1).get("k199")
        res = p.execute(raise_on_error=False)
        assert res[:200] == [True] * 200
        ctx.record(f"tail_{proto}", res[200:])
        p = r.pipeline(transaction=True)
        res = p.set("a", 1).incr("a").lpush("a", 1).get("a").execute(raise_on_error=False)
        ctx.record(f"multi_exec_{proto}", res)
        p = r.pipeline(transaction=True)
        p.set("b", 1)
        p.execute_command("NOSUCHCMD")
        ctx.record(f"exec_abort_{proto}", error_of(p.execute))
        assert r.exists("b") == 0


def t_transaction_watch(ctx):
    r = ctx.client()
    other = ctx.client()
    r.set("counter", 0)
    # Explicit WATCH: a write by another client between WATCH and EXEC aborts EXEC.
    with r.pipeline() as p:
        p.watch("counter")
        val = int(p.get("counter"))
        other.set("counter", 100)
        p.multi()
        p.set("counter", val + 1)
        ctx.record("watch_conflict", error_of(p.execute))
    assert r.get("counter") == "100"
    # redis-py's optimistic-locking helper retries until EXEC succeeds.
    attempts = []

    def incr(pipe):
        v = int(pipe.get("counter"))
        if not attempts:
            other.incr("counter")  # first attempt always conflicts
        attempts.append(v)
        pipe.multi()
        pipe.set("counter", v + 1)

    ctx.record("transaction_helper", [r.transaction(incr, "counter"), attempts, r.get("counter")])
    # WATCH of a key that expires / UNWATCH / an untouched key.
    with r.pipeline() as p:
        p.watch("quiet")
        p.multi()
        p.set("quiet", 1)
        ctx.record("watch_untouched", p.execute())
    with r.pipeline() as p:
        p.watch("counter")
        p.unwatch()
        other.set("counter", 7)
        p.multi()
        p.incr("counter")
        ctx.record("unwatch", p.execute())
    assert isinstance(WatchError("x"), Exception)


# ---------------------------------------------------------------- pub/sub


def pubsub_messages(ctx, proto):
    r = ctx.client(protocol=proto)
    pub = ctx.client()
    p = r.pubsub()
    p.subscribe("ch1", "ch2")
    p.psubscribe("news.*")
    subs = get_messages(p, 3)
    ctx.record("subscribe", [(m["type"], m["channel"], m["pattern"], m["data"]) for m in subs])
    ctx.record("numsub", [pub.pubsub_numsub("ch1", "nope"), pub.pubsub_numpat(), sorted(pub.pubsub_channels())])
    assert pub.publish("ch1", "hello") == 1
    assert pub.publish("news.tech", "pattern") == 1
    assert pub.publish("ch2", b"\x00bin") == 1
    assert pub.publish("nobody", "x") == 0
    msgs = get_messages(p, 3)
    ctx.record("messages", [(m["type"], m["channel"], m["pattern"], m["data"]) for m in msgs])
    # Publishing from a script delivers after the script, like any other publish.
    pub.eval("redis.call('publish', KEYS[1], ARGV[1]); return 1", 1, "ch1", "from-lua")
    ctx.record("script_publish", [(m["type"], m["data"]) for m in get_messages(p, 1)])
    if proto == 2:  # a PING while subscribed answers as a pub/sub message in RESP2
        p.ping("in-sub")
        ctx.record("ping_in_sub", [(m["type"], m["data"]) for m in get_messages(p, 1)])
    p.unsubscribe("ch1")
    p.punsubscribe()
    ctx.record("unsubscribe", [(m["type"], m["channel"], m["data"]) for m in get_messages(p, 2)])
    assert pub.publish("ch1", "gone") == 0
    ctx.record("after_unsub", [pub.pubsub_numsub("ch1", "ch2"), pub.pubsub_numpat()])
    p.close()


def t_pubsub_resp2(ctx):
    pubsub_messages(ctx, 2)


def t_pubsub_resp3(ctx):
    pubsub_messages(ctx, 3)


def t_pubsub_handler_thread(ctx):
    """The callback style with run_in_thread, as lock libraries use for unlock channels."""
    r = ctx.client(protocol=3)
    got = []
    done = threading.Event()

    def handler(m):
        got.append((m["channel"], m["data"]))
        if len(got) == 2:
            done.set()

    p = r.pubsub()
    p.subscribe(**{"redisson_lock__channel:{x}": handler})
    p.psubscribe(**{"redisson_lock__channel:*": handler})
    t = p.run_in_thread(sleep_time=0.05, daemon=True)
    try:
        pub = ctx.client()
        wait_until(lambda: pub.pubsub_numsub("redisson_lock__channel:{x}")[0][1] == 1, "subscription")
        wait_until(lambda: pub.pubsub_numpat() == 1, "pattern subscription")
        pub.publish("redisson_lock__channel:{x}", "0")
        assert done.wait(WAIT), got
        ctx.record("got", sorted(got))
    finally:
        t.stop()
        t.join(WAIT)


def t_raw_resp3_push(ctx):
    """The exact RESP3 push frames, read off the socket (no client-side parsing)."""
    import socket

    host, port = ctx.urls[0].split("//")[1].rstrip("/").split(":")
    s = socket.create_connection((host, int(port)), timeout=WAIT)
    try:
        def exchange(cmd, until):
            s.sendall(cmd)
            buf = b""
            deadline = time.monotonic() + WAIT
            while not buf.endswith(until) and time.monotonic() < deadline:
                buf += s.recv(65536)
            return buf

        exchange(b"HELLO 3\r\n", b"modules\r\n*0\r\n")
        ctx.record("subscribe", exchange(b"SUBSCRIBE c\r\n", b":1\r\n").decode())
        ctx.record("psubscribe", exchange(b"PSUBSCRIBE p*\r\n", b":2\r\n").decode())
        ctx.client().publish("pq", "m")
        buf = b""
        deadline = time.monotonic() + WAIT
        while buf.count(b"\r\n") < 9 and time.monotonic() < deadline:
            buf += s.recv(65536)
        ctx.record("pmessage", buf.decode())
        ctx.record("get_while_subscribed", exchange(b"GET nokey\r\n", b"_\r\n").decode())
        ctx.record("unsubscribe_all", exchange(b"UNSUBSCRIBE\r\n", b":1\r\n").decode())
    finally:
        s.close()


def t_pubsub_health_check_and_reconnect(ctx):
    """redis-py's pub/sub health-check PINGs, and resubscription after the server drops the link."""
    for proto in (2, 3):
        r = ctx.client(protocol=proto, health_check_interval=0.05)
        pub = ctx.client()
        p = r.pubsub()
        p.subscribe("hc")
        get_messages(p, 1)
        time.sleep(0.1)  # the next read sends `PING redis-py-health-check` first
        assert p.get_message(timeout=0.1) is None
        assert pub.publish("hc", "after-ping") == 1
        ctx.record(f"after_ping_{proto}", [(m["type"], m["data"]) for m in get_messages(p, 1)])
        victim = [c for c in pub.client_list() if "subscribe" in c["cmd"] or c["sub"] == "1"]
        assert len(victim) == 1, victim
        assert pub.client_kill_filter(_id=victim[0]["id"]) == 1
        # The next read fails, redis-py reconnects and subscribes again (the new subscribe
        # confirmation may be read here or below; only the published message is recorded).
        deadline = time.monotonic() + WAIT
        while pub.pubsub_numsub("hc")[0][1] == 0 and time.monotonic() < deadline:
            try:
                p.get_message(timeout=0.05)
            except redis.ConnectionError:
                pass
        assert pub.publish("hc", "after-reconnect") == 1
        msgs = []
        while not msgs and time.monotonic() < deadline + WAIT:
            m = p.get_message(timeout=0.1)
            if m is not None and m["type"] == "message":
                msgs.append(m)
        ctx.record(f"after_reconnect_{proto}", [(m["type"], m["data"]) for m in msgs])
        p.close()


def t_monitor(ctx):
    r = ctx.client()
    with r.monitor() as m:
        # No CLIENT SETINFO at connect: Redis 7.0 rejects it (so MONITOR never shows it) while
        # we accept it as 7.2 does; keep the stream to the commands under test.
        other = ctx.client(lib_name=None, lib_version=None)
        other.set("mk", "a b")
        other.eval("return redis.call('get', KEYS[1])", 1, "mk")
        seen = []
        deadline = time.monotonic() + WAIT
        while len(seen) < 4 and time.monotonic() < deadline:
            ev = m.next_command()
            seen.append((ev["db"], ev.get("client_type"), ev["command"]))
    ctx.record("commands", seen)


def t_client_tracking(ctx):
    """Client-side caching as RESP2 caches do it (Redisson, Lettuce): CLIENT TRACKING with
    REDIRECT to a `__redis__:invalidate` subscriber; then RESP3 pushes on the reading connection
    through redis-py's invalidation push handler (BCAST with a prefix). redis-py's own cache
    (`cache_config`) refuses servers below 7.4, real Redis 7.0 included, so it is not used."""
    other = ctx.client()
    p = ctx.client(protocol=2).pubsub()
    p.subscribe("__redis__:invalidate")
    assert p.get_message(timeout=WAIT)["type"] == "subscribe"
    redirect = int(ctx.client().client_list(_type="pubsub")[0]["id"])
    reader = ctx.client(protocol=2, single_connection_client=True)
    ctx.record("tracking_on", reader.client_tracking_on(clientid=redirect))
    other.set("ck", "v1")
    ctx.record("read", reader.get("ck"))
    other.set("ck", "v2")
    m = p.get_message(timeout=WAIT)
    ctx.record("invalidation", [m["type"], m["channel"], m["data"]])
    assert reader.client_getredir() == redirect
    info = reader.client_trackinginfo()
    assert info[3] == redirect
    ctx.record("trackinginfo_resp2", [info[0], info[1], info[2], info[4], info[5]])
    pushed = []
    resp3 = ctx.client(protocol=3, single_connection_client=True)
    resp3.ping()
    resp3.connection._parser.set_invalidation_push_handler(pushed.append)
    ctx.record("bcast_on", resp3.client_tracking_on(bcast=True, prefix=["user:"]))
    other.mset({"user:1": "a", "other": "b"})
    wait_until(lambda: resp3.ping() and pushed, "the RESP3 invalidation push")
    ctx.record("push", pushed)
    ctx.record("trackinginfo_resp3", resp3.client_trackinginfo())


def t_asyncio_client_and_lock(ctx):
    import asyncio

    import redis.asyncio as aioredis

    async def run():
        a = aioredis.Redis.from_url(ctx.urls[0], protocol=3, decode_responses=True)
        b = aioredis.Redis.from_url(ctx.urls[0], protocol=2, decode_responses=True)
        try:
            async with a.pipeline(transaction=True) as p:
                res = await p.set("ak", 1).incr("ak").hset("ah", "f", "v").hgetall("ah").execute()
            ctx.record("pipeline", res)
            held = a.lock("alock", timeout=30)
            assert await held.acquire(blocking=False)
            waiter = b.lock("alock", timeout=30, sleep=0.02)
            task = asyncio.create_task(waiter.acquire(blocking=True, blocking_timeout=WAIT))
            await asyncio.sleep(0.2)
            assert not task.done(), "the waiter must block while the lock is held"
            await held.release()
            assert await asyncio.wait_for(task, WAIT) is True
            await waiter.release()
            p = a.pubsub()
            await p.subscribe("achan")
            assert (await p.get_message(timeout=WAIT))["type"] == "subscribe"
            await b.publish("achan", "hi")
            msg = None
            deadline = time.monotonic() + WAIT
            while msg is None and time.monotonic() < deadline:
                msg = await p.get_message(ignore_subscribe_messages=True, timeout=0.1)
            ctx.record("message", [msg["type"], msg["channel"], msg["data"]])
            await p.aclose()
        finally:
            await a.aclose()
            await b.aclose()

    asyncio.run(run())


def t_keyspace_notifications(ctx):
    r = ctx.client()
    old = r.config_get("notify-keyspace-events")["notify-keyspace-events"]
    r.config_set("notify-keyspace-events", "KEA")
    try:
        sub = ctx.client(protocol=3).pubsub()
        sub.psubscribe("__keyspace@0__:*", "__keyevent@0__:*")
        get_messages(sub, 2)
        r.set("ka", 1)
        r.expire("ka", 100)
        r.hset("kh", "f", 1)
        r.hincrby("kh", "f", 1)
        r.lpush("kl", 1)
        r.rename("ka", "kb")
        r.delete("kb")
        r.set("kx", 1, px=50)
        # 10 events (rename is rename_from + rename_to, SET PX is set + expire), each twice.
        msgs = get_messages(sub, 20)
        ctx.record("events", [(m["channel"], m["data"]) for m in msgs])
        expired = get_messages(sub, 2, limit=WAIT)  # active expiry, no access to the key
        ctx.record("expired", [(m["channel"], m["data"]) for m in expired])
        sub.close()
    finally:
        r.config_set("notify-keyspace-events", old)


# ---------------------------------------------------------------- scripts


def t_scripts(ctx):
    for proto in (2, 3):
        r = ctx.client(protocol=proto)
        r.script_flush()
        s = r.register_script("return {KEYS[1], ARGV[1], redis.call('incr', KEYS[1]), 3.99, false, 'x'}")
        assert r.script_exists(s.sha) == [False]
        ctx.record(f"first_call_{proto}", s(keys=["cnt"], args=["a"]))  # EVALSHA, NOSCRIPT, load, retry
        assert r.script_exists(s.sha) == [True]
        ctx.record(f"second_call_{proto}", s(keys=["cnt"], args=["b"]))
        r.script_flush()
        p = r.pipeline()
        s(keys=["cnt"], args=["c"], client=p)  # pipelines load scripts with SCRIPT EXISTS/LOAD first
        p.get("cnt")
        ctx.record(f"pipeline_{proto}", p.execute())
        ctx.record(f"nosha_{proto}", error_of(lambda: r.evalsha("0" * 40, 0)))
        ctx.record(f"error_reply_{proto}", error_of(lambda: r.eval("return redis.error_reply('MY err')", 0)))
        ctx.record(f"runtime_error_type_{proto}",
                   type(error_of(lambda: r.eval("return redis.call('nosuch')", 0))).__name__)
        ctx.record(f"status_{proto}", r.eval("return redis.status_reply('FINE')", 0))
        ctx.record(f"cjson_{proto}", r.eval("return cjson.encode(cjson.decode(ARGV[1]))", 0, '{"a":[1,2]}'))
        ctx.record(f"resp3_{proto}", r.eval("redis.setresp(3); return redis.call('hgetall', KEYS[1])", 1, "nohash"))
        ctx.record(f"sha1hex_{proto}", r.eval("return redis.sha1hex('')", 0))
        ctx.record(f"global_write_{proto}", type(error_of(lambda: r.eval("x = 1", 0))).__name__)


def t_redisson_scripts(ctx):
    """Redisson's acquire/renew/release scripts from Python: hash layout, TTLs, unlock message."""
    r = ctx.client(protocol=3)
    acquire = r.register_script(REDISSON_ACQUIRE)
    release = r.register_script(REDISSON_RELEASE)
    renew = r.register_script(REDISSON_RENEW)
    name = "orders"
    channel = "redisson_lock__channel:{orders}"
    owner_a = "2f0b3c4e-6c8a-4d7e-9a51-3f0e7c1d2b4a:1"
    owner_b = "9d1e2f3a-4b5c-4d6e-8f70-a1b2c3d4e5f6:7"
    latch = "redisson_unlock_latch:{orders}:" + "a" * 32
    ctx.record("probe", r.eval(REDISSON_PROBE, 2, "test1", "test2"))
    sub = ctx.client().pubsub()
    sub.subscribe(channel)
    get_messages(sub, 1)
    assert acquire(keys=[name], args=[30000, owner_a]) is None
    assert acquire(keys=[name], args=[30000, owner_a]) is None  # reentrant
    ctx.record("hash", r.hgetall(name))
    assert 29000 < r.pttl(name) <= 30000
    other = acquire(keys=[name], args=[30000, owner_b])
    assert isinstance(other, int) and 29000 < other <= 30000, other
    assert renew(keys=[name], args=[60000, owner_a]) == 1 and r.pttl(name) > 59000
    assert renew(keys=[name], args=[60000, owner_b]) == 0
    ctx.record("release_not_owner", release(keys=[name, channel, latch + "0"], args=[0, 30000, owner_b, "publish", 6000]))
    ctx.record("release_once", release(keys=[name, channel, latch + "1"], args=[0, 30000, owner_a, "publish", 6000]))
    ctx.record("hash_after_one", r.hgetall(name))
    ctx.record("release_twice", release(keys=[name, channel, latch + "2"], args=[0, 30000, owner_a, "publish", 6000]))
    ctx.record("gone", [r.exists(name), r.get(latch + "1"), r.get(latch + "2")])
    assert 0 < r.pttl(latch + "2") <= 6000
    # The same request id again: the latch answers, nothing is published twice.
    ctx.record("release_retry", release(keys=[name, channel, latch + "2"], args=[0, 30000, owner_a, "publish", 6000]))
    msgs = get_messages(sub, 1)
    ctx.record("unlock_message", [(m["type"], m["channel"], m["data"]) for m in msgs])
    assert sub.get_message(timeout=0.2) is None
    assert acquire(keys=[name], args=[30000, owner_b]) is None
    ctx.record("hash_b", r.hgetall(name))
    sub.close()


# ---------------------------------------------------------------- lock libraries


def t_redis_py_lock(ctx):
    for proto in (2, 3):
        r = ctx.client(protocol=proto)
        r.flushdb()
        lock = r.lock("res", timeout=10, blocking_timeout=0)
        assert lock.acquire() is True
        assert lock.owned() and lock.locked()
        assert 9000 < r.pttl("res") <= 10000
        assert lock.extend(20) is True and 29000 < r.pttl("res") <= 30000
        assert lock.extend(5, replace_ttl=True) is True and 4000 < r.pttl("res") <= 5000
        assert lock.reacquire() is True and 9000 < r.pttl("res") <= 10000
        other = ctx.client(protocol=proto).lock("res", timeout=10)
        assert other.acquire(blocking=False) is False
        assert other.acquire(blocking_timeout=0.2) is False
        assert other.locked() and not other.owned()
        lock.release()
        assert not lock.locked()
        ctx.record(f"release_again_{proto}", type(error_of(lock.release)).__name__)
        ctx.record(f"extend_unowned_{proto}", type(error_of(lambda: lock.extend(1))).__name__)


def t_redis_py_lock_contention(ctx):
    a = ctx.client()
    b = ctx.client()
    held = a.lock("contended", timeout=30, thread_local=False)
    assert held.acquire(blocking=False)
    waiter = b.lock("contended", timeout=30, sleep=0.02, thread_local=False)
    join = in_thread(lambda: waiter.acquire(blocking=True, blocking_timeout=WAIT))
    time.sleep(0.2)
    assert join.alive(), "waiter must block while the lock is held"
    held.release()
    assert join() is True and waiter.owned()
    waiter.release()
    # Expiry: the holder never releases; the waiter gets the lock once the lease runs out.
    short = a.lock("expiring", timeout=0.4, thread_local=False)
    assert short.acquire(blocking=False)
    waiter = b.lock("expiring", timeout=5, sleep=0.02, thread_local=False)
    t0 = time.monotonic()
    assert waiter.acquire(blocking=True, blocking_timeout=WAIT) is True
    assert time.monotonic() - t0 > 0.2
    assert not short.owned()
    assert isinstance(error_of(short.release), LockNotOwnedError)
    waiter.release()


def t_python_redis_lock(ctx):
    import redis_lock

    a = ctx.client()
    b = ctx.client()
    lock = redis_lock.Lock(a, "job", expire=10, id="holder-a")
    assert lock.acquire(blocking=False) is True
    ctx.record("layout", [a.get("lock:job"), 9 <= a.ttl("lock:job") <= 10, lock.get_owner_id(), lock.locked()])
    assert lock.extend(expire=20) is None and 19 <= a.ttl("lock:job") <= 20
    other = redis_lock.Lock(b, "job", expire=10, id="holder-b")
    assert other.acquire(blocking=False) is False
    # Contention: the waiter blocks in BLPOP on the signal list until release() pushes to it.
    join = in_thread(lambda: other.acquire(blocking=True, timeout=WAIT))
    time.sleep(0.2)
    assert join.alive(), "waiter must block in BLPOP"
    lock.release()
    assert join() is True
    ctx.record("after_handover", [b.get("lock:job"), b.llen("lock-signal:job"), 0 < b.pttl("lock-signal:job") <= 1000])
    ctx.record("release_not_owner", type(error_of(lock.release)).__name__)
    ctx.record("extend_not_owner", type(error_of(lambda: redis_lock.Lock(a, "job", expire=5, id="holder-a").extend())).__name__)
    other.release()
    # Expiry: a holder that never releases; the waiter's BLPOP times out and SET NX wins.
    gone = redis_lock.Lock(a, "exp", expire=1, id="lost")
    assert gone.acquire(blocking=False)
    waiter = redis_lock.Lock(b, "exp", expire=5, id="next")
    t0 = time.monotonic()
    assert waiter.acquire(blocking=True, timeout=3) is True  # one BLPOP of 3 s, then SET NX
    assert time.monotonic() - t0 > 0.5
    waiter.release()
    # Auto-renewal keeps a short lease alive past its expiry.
    renewing = redis_lock.Lock(a, "renew", expire=1, auto_renewal=True)
    assert renewing.acquire(blocking=False)
    time.sleep(1.3)
    assert a.get("lock:renew") == renewing.id
    renewing.release()
    assert redis_lock.Lock(a, "x", expire=5).acquire(blocking=False)
    redis_lock.reset_all(a)
    ctx.record("reset_all", sorted(a.keys("lock*")))


def pottery_checks(ctx, masters, tag):
    from pottery import Redlock

    a = Redlock(key="printer", masters=masters, auto_release_time=10)
    b = Redlock(key="printer", masters=masters, auto_release_time=10)
    assert a.acquire(blocking=False) is True
    ttl = a.locked()
    assert 9 < ttl <= 10, ttl
    assert b.acquire(blocking=False) is False and b.locked() == 0
    a.extend()
    join = in_thread(lambda: b.acquire(blocking=True, timeout=WAIT))
    time.sleep(0.2)
    assert join.alive(), "redlock waiter must spin while held"
    a.release()
    assert join() is True and b.locked() > 0
    # pottery returns once a quorum answered, from release as from acquire: a's release may reach
    # the last master after b's acquire was refused there, so only a quorum is certain to hold b.
    quorum = len(masters) // 2 + 1
    wait_until(lambda: sum(m.exists("redlock:printer") for m in masters) >= quorum, "the lock on a quorum")
    ctx.record(f"keys_{tag}", sorted({tuple(m.keys("redlock:*")) for m in masters} - {()}))
    b.release()
    short = Redlock(key="tmp", masters=masters, auto_release_time=0.3)
    assert short.acquire(blocking=False)
    c = Redlock(key="tmp", masters=masters, auto_release_time=5)
    assert c.acquire(blocking=True, timeout=WAIT) is True
    c.release()


def t_pottery_redlock(ctx):
    pottery_checks(ctx, {ctx.client(decode_responses=False)}, "single")


def t_pottery_redlock_quorum(ctx):
    if len(ctx.urls) < 3:
        raise SkipCheck("needs three targets")
    masters = [ctx.client(u, decode_responses=False) for u in ctx.urls[:3]]
    for m in masters[1:]:
        m.flushall()
    pottery_checks(ctx, set(masters), "quorum")
    # Two of three masters held by someone else: no quorum.
    for m in masters[:2]:
        m.set("redlock:q", "someone", px=10000)
    from pottery import Redlock

    assert Redlock(key="q", masters=set(masters), auto_release_time=5).acquire(blocking=False) is False


class SkipCheck(Exception):
    pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--urls", nargs="+", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("-k", default="")
    args = ap.parse_args()
    ctx = Ctx(args.urls)
    tests = [(n, f) for n, f in globals().items() if n.startswith("t_") and callable(f) and args.k in n]
    passed = failed = 0
    failures = []
    for name, fn in tests:
        ctx.test = name[2:]
        t0 = time.monotonic()
        try:
            ctx.client().flushall()
            fn(ctx)
            passed += 1
            print(f"ok   python/{args.target} {ctx.test} ({time.monotonic() - t0:.2f}s)", flush=True)
        except SkipCheck as e:
            print(f"skip python/{args.target} {ctx.test}: {e}", flush=True)
        except Exception as e:  # noqa: BLE001
            failed += 1
            failures.append(ctx.test)
            print(f"FAIL python/{args.target} {ctx.test}: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=4, file=sys.stdout)
        finally:
            ctx.close()
    with open(args.out, "w") as f:
        json.dump({"suite": f"python/{args.target}", "passed": passed, "failed": failed,
                   "failures": failures, "versions": versions(), "obs": ctx.obs}, f, indent=1, sort_keys=True)
    return 1 if failed else 0


def versions():
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("redis", "python-redis-lock", "pottery"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


if __name__ == "__main__":
    sys.exit(main())
