#!/usr/bin/env python3
"""Keyspace-at-scale measurements against one running server (ours or redis-server):
memory per key, SCAN-family cost, and an active-expiry wave. Standard library only.

    python3 benches/keyspace_scale.py memory   PORT PID [N] [string|lock|locklong|hash10]
    python3 benches/keyspace_scale.py returned PORT PID [N] [string|lock|locklong|hash10]
    python3 benches/keyspace_scale.py scan   PORT [N] [SAMPLES] [FULL yes|no]
    python3 benches/keyspace_scale.py scancases PORT [N] [SAMPLES]
    python3 benches/keyspace_scale.py expiry PORT PID [N] [px|pxat]

Each prints one JSON line. `memory`, `returned` and `expiry` read the server's RSS and CPU
time (user + system) from /proc/PID. Start each server fresh; benches/keyspace_scale.sh
does, alternating servers. See BENCHMARKS.md, "Keyspace at scale (issue 16)" and "Memory
per key and memory returned (issue 16)".

Shapes (`SHAPES`): `string` is `SET key:%012d v%015d` (16-byte values); `lock` is what
Redisson's acquire script leaves, `HSET lock:%012d <uuid>:<thread> 1` then `PEXPIRE
lock:%012d 30000` (LOCK_TTL_MS overrides the lease); `locklong` the same under a 36-byte
name (`myapp:orders:lock:order-%012d`, too long to sit inline in our node); `hash10` is
`HSET hash:%012d` of ten fields `field0`..`field9` with 16-byte values.
"""

import array
import json
import multiprocessing
import os
import socket
import statistics
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


class Conn:
    """A minimal RESP2 client on 127.0.0.1."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.pos = 0  # replies before `pos` in `buf` were read

    @staticmethod
    def encode(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if not isinstance(a, bytes):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("closed")
        self.buf = self.buf[self.pos :] + chunk
        self.pos = 0

    def _line(self):
        end = self.buf.find(b"\r\n", self.pos)
        while end < 0:
            self._fill()
            end = self.buf.find(b"\r\n", self.pos)
        line, self.pos = self.buf[self.pos : end], end + 2
        return line

    def _exact(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data, self.pos = self.buf[self.pos : self.pos + n], self.pos + n + 2
        return data

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RuntimeError("bad reply %r" % line)

    def call(self, *args):
        self.sock.sendall(self.encode(*args))
        return self.reply()

    def pipeline(self, commands, batch=10000):
        """Sends `commands` (lists of arguments) in batches, discarding the replies."""
        for i in range(0, len(commands), batch):
            part = commands[i : i + batch]
            self.sock.sendall(b"".join(self.encode(*c) for c in part))
            for _ in part:
                self.reply()


def proc_stat(pid):
    """(RSS bytes, CPU seconds user + system) of `pid`."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK
    with open("/proc/%d/status" % pid) as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) * 1024
    return rss, cpu


def load(conn, n, make):
    """Sends `make(i)` for i in 0..n in pipelined batches."""
    for start in range(0, n, 20000):
        conn.pipeline([make(i) for i in range(start, min(n, start + 20000))])


LOCK_OWNER = "58c62432-bb74-4d14-8a00-9908cc8b828f:%d"  # Redisson's <client uuid>:<thread id>
LONG_LOCK = "myapp:orders:lock:order-%012d"  # a 36-byte lock name, longer than a key kept inline


def shape_commands(shape):
    """The commands that make key `i` of `shape`, as a function of i."""
    ttl = int(os.environ.get("LOCK_TTL_MS", "30000"))
    if shape == "string":
        return lambda i: [["SET", "key:%012d" % i, "v%015d" % i]]
    if shape == "lock":
        return lambda i: [["HSET", "lock:%012d" % i, LOCK_OWNER % (i % 64 + 1), "1"],
                          ["PEXPIRE", "lock:%012d" % i, ttl]]
    if shape == "locklong":
        return lambda i: [["HSET", LONG_LOCK % i, LOCK_OWNER % (i % 64 + 1), "1"],
                          ["PEXPIRE", LONG_LOCK % i, ttl]]
    if shape == "hash10":
        return lambda i: [["HSET", "hash:%012d" % i] +
                          sum((["field%d" % f, "v%015d" % (i * 10 + f)] for f in range(10)), [])]
    sys.exit("unknown shape %r (string, lock, locklong or hash10)" % shape)


def load_shape(conn, n, shape, keys=None):
    """Makes keys `keys` (default 0..n) of `shape` in pipelined batches."""
    make = shape_commands(shape)
    keys = range(n) if keys is None else keys
    for start in range(0, len(keys), 10000):
        conn.pipeline([c for i in keys[start : start + 10000] for c in make(i)], batch=20000)


def settled_rss(pid, conn, wait=5.0):
    """RSS once it stopped falling (at most `wait` seconds), after lazy frees are done."""
    deadline = time.time() + 30
    while time.time() < deadline:  # Redis's FLUSHALL ASYNC frees in a background thread
        info = conn.call("INFO", "memory").decode()
        pending = [l for l in info.split("\r\n") if l.startswith("lazyfree_pending_objects:")]
        if not pending or pending[0].split(":")[1] == "0":
            break
        time.sleep(0.05)
    last, _ = proc_stat(pid)
    end = time.time() + wait
    stable_since = time.time()
    while time.time() < end:
        time.sleep(0.1)
        rss, _ = proc_stat(pid)
        if rss < last:
            last, stable_since = rss, time.time()
        elif time.time() - stable_since >= 1.0:
            break
    return last


def cmd_memory(port, pid, n, shape):
    c = Conn(port)
    rss0, _ = proc_stat(pid)
    t = time.time()
    load_shape(c, n, shape)
    load_s = time.time() - t
    time.sleep(0.5)
    rss1, _ = proc_stat(pid)
    print(json.dumps({"shape": shape, "keys": c.call("DBSIZE"), "rss_before": rss0, "rss_after": rss1,
                      "load_seconds": round(load_s, 1), "bytes_per_key": round((rss1 - rss0) / n, 1)}))


def cmd_returned(port, pid, n, shape):
    """RSS (MB) at start, after loading n keys, after FLUSHALL, after loading again and
    FLUSHALL ASYNC, and after loading again and deleting 90 % of the keys (DEL in batches of
    100 names, every key whose number is not a multiple of 10)."""
    c = Conn(port)
    mb = lambda b: round(b / 1e6, 1)
    out = {"shape": shape, "n": n, "start": mb(settled_rss(pid, c, 1.0))}
    load_shape(c, n, shape)
    out["loaded"] = mb(settled_rss(pid, c, 1.0))
    c.call("FLUSHALL", "SYNC")
    out["flushall_sync"] = mb(settled_rss(pid, c))
    load_shape(c, n, shape)
    out["reloaded"] = mb(settled_rss(pid, c, 1.0))
    c.call("FLUSHALL", "ASYNC")
    out["flushall_async"] = mb(settled_rss(pid, c))
    load_shape(c, n, shape)
    out["reloaded_2"] = mb(settled_rss(pid, c, 1.0))
    gone = [i for i in range(n) if i % 10]
    prefix = {"string": "key:%012d", "lock": "lock:%012d", "locklong": LONG_LOCK,
              "hash10": "hash:%012d"}[shape]
    for start in range(0, len(gone), 100000):
        part = gone[start : start + 100000]
        c.pipeline([["DEL"] + [prefix % i for i in part[j : j + 100]] for j in range(0, len(part), 100)])
    out["keys_left"] = c.call("DBSIZE")
    out["del_90pct"] = mb(settled_rss(pid, c))
    print(json.dumps(out))


def timed(conn, *args):
    t = time.perf_counter()
    r = conn.call(*args)
    return time.perf_counter() - t, r


def full_scan(conn, prefix_args, count):
    """A whole iteration: (seconds, calls, distinct names)."""
    cursor, calls, seen = b"0", 0, set()
    t = time.perf_counter()
    for _ in range(100_000_000):  # bounded; an iteration ends long before
        cursor, items = conn.call(*prefix_args, cursor, "COUNT", count)
        calls += 1
        seen.update(items[::2] if prefix_args[0] in ("HSCAN", "ZSCAN") else items)
        if cursor == b"0":
            break
    return time.perf_counter() - t, calls, len(seen)


def cmd_scan(port, n, samples, full):
    c = Conn(port)
    out = {"n": n}
    load(c, n, lambda i: ["SET", "key:%012d" % i, "v"])
    # One aggregate of n elements each; batches of 1000 elements per command.
    per = 1000
    load(c, n // per, lambda j: ["HSET", "h"] + sum((["f%d" % (j * per + i), "v"] for i in range(per)), []))
    load(c, n // per, lambda j: ["SADD", "s"] + ["m%d" % (j * per + i) for i in range(per)])
    load(c, n // per, lambda j: ["ZADD", "z"] + sum(([str(i), "m%d" % (j * per + i)] for i in range(per)), []))
    # The round trip of a command that does nothing, for scale.
    times = sorted(timed(c, "PING")[0] for _ in range(samples))
    out["ping_ms"] = {"median": round(statistics.median(times) * 1e3, 4),
                      "p99": round(times[int(0.99 * (samples - 1))] * 1e3, 4)}
    for name, prefix in (("scan", ["SCAN"]), ("hscan", ["HSCAN", "h"]), ("sscan", ["SSCAN", "s"]),
                         ("zscan", ["ZSCAN", "z"])):
        times = sorted(timed(c, *prefix, 0, "COUNT", 10)[0] for _ in range(samples))
        out[name + "_0_count10_ms"] = {"median": round(statistics.median(times) * 1e3, 4),
                                        "p99": round(times[int(0.99 * (samples - 1))] * 1e3, 4)}
    for name, prefix in (("scan", ["SCAN"]), ("hscan", ["HSCAN", "h"])) if full else ():
        secs, calls, distinct = full_scan(c, prefix, 10)
        out[name + "_full_count10"] = {"seconds": round(secs, 2), "calls": calls, "distinct": distinct}
    print(json.dumps(out))


def scan_costs(conn, samples, extra=()):
    """`SCAN 0 COUNT 10` `samples` times, then `samples` calls walking on from cursor 0 (a
    cursor in the middle of an iteration), each with `extra` arguments: ms, median and p99."""
    def stats(times):
        times = sorted(times)
        return {"median": round(statistics.median(times) * 1e3, 4),
                "p99": round(times[int(0.99 * (len(times) - 1))] * 1e3, 4)}
    first = [timed(conn, "SCAN", 0, "COUNT", 10, *extra)[0] for _ in range(samples)]
    walk, cursor = [], b"0"
    for _ in range(samples):
        t, (cursor, _) = timed(conn, "SCAN", cursor, "COUNT", 10, *extra)
        walk.append(t)
    return {"scan0": stats(first), "walk": stats(walk)}


def cmd_scancases(port, n, samples):
    """SCAN with a small COUNT on keyspaces of n keys made in different ways (issue 37): one
    JSON line per case. Needs `enable-debug-command yes` (DEBUG POPULATE and RELOAD)."""
    c = Conn(port)
    fill = lambda i: ["SET", "key:%012d" % i, "v"]

    def case(name, extra=(), **more):
        out = {"case": name, "dbsize": c.call("DBSIZE")}
        out.update(scan_costs(c, samples, extra))
        out.update(more)
        print(json.dumps(out), flush=True)

    c.call("FLUSHALL")
    load(c, n, fill)
    case("set")
    case("match", ("MATCH", "key:0000000001*"))
    case("type", ("TYPE", "string"))
    c.call("DEBUG", "RELOAD")
    case("debug_reload")
    c.call("FLUSHALL")
    load(c, n, fill)
    case("flushall_refill")
    c.call("FLUSHALL")
    c.call("DEBUG", "POPULATE", n)
    case("debug_populate")
    c.call("FLUSHALL")
    load(c, n, lambda i: ["SET", "key:%012d" % i, "v", "EX", 100000])
    case("set_ex")
    c.call("FLUSHALL")
    load(c, n, fill)
    load(c, n, lambda i: ["EXPIRE", "key:%012d" % i, 100000])
    case("expire_all")
    # Grown to n, then 90 % deleted: measured at once, then after the cron had a second.
    c.call("FLUSHALL")
    load(c, n, fill)
    load(c, n, lambda i: ["DEL", "key:%012d" % i] if i % 10 else ["PING"])
    case("deleted_90pct")
    time.sleep(1)
    case("deleted_90pct_after_1s")
    time.sleep(5)
    case("deleted_90pct_after_6s")
    # A rehash under way: filled to a power of two, then one more key (the table doubles).
    c.call("FLUSHALL")
    size = 1 << max(1, (n - 1).bit_length())
    load(c, size, fill)
    c.call("SET", "one-more", "v")
    case("rehashing")


def pinger(port, stop, samples):
    """Runs in its own process: PINGs once a millisecond until `stop`, then reports."""
    p = Conn(port)
    sent, rtt = array.array("d"), array.array("d")
    while not stop.is_set():
        t0 = time.time()
        s = time.perf_counter()
        p.call("PING")
        sent.append(t0)
        rtt.append(time.perf_counter() - s)
        time.sleep(0.001)
    samples.put((sent, rtt))


def cmd_expiry(port, pid, n, mode):
    c = Conn(port)
    lead = 8.0  # seconds between the start of loading and the common deadline (pxat)
    t_load = time.time()
    deadline_ms = int((t_load + lead) * 1000)
    if mode == "pxat":
        load(c, n, lambda i: ["SET", "key:%012d" % i, "v", "PXAT", deadline_ms])
    else:
        load(c, n, lambda i: ["SET", "key:%012d" % i, "v", "PX", 1000])
    t_loaded = time.time()
    # One PING a millisecond (a paced client, as `redis-cli --latency` is), from a process of
    # its own so this one's polling never holds it up: each PING's send time and round trip.
    stop = multiprocessing.Event()
    samples = multiprocessing.Queue()
    th = multiprocessing.Process(target=pinger, args=(port, stop, samples))
    th.start()
    if mode == "pxat":
        wave_start = deadline_ms / 1000
        time.sleep(max(0.0, wave_start - time.time()))
    else:
        wave_start = t_loaded
    _, cpu0 = proc_stat(pid)
    t_start = time.time()
    size = None
    for _ in range(12000):  # bounded: 2 minutes of 10 ms polls
        size = c.call("DBSIZE")
        if size == 0:
            break
        time.sleep(0.01)
    t_empty = time.time()
    _, cpu1 = proc_stat(pid)
    time.sleep(0.2)
    stop.set()
    sent, rtt = samples.get()
    th.join()
    info = c.call("INFO", "stats").decode()
    stats = dict(l.split(":", 1) for l in info.split("\r\n") if ":" in l)
    during = sorted(r for t, r in zip(sent, rtt) if t_start <= t <= t_empty) or [0.0]
    q = lambda p: round(during[min(len(during) - 1, int(p * len(during)))] * 1e3, 3)
    print(json.dumps({
        "keys_at_end": c.call("DBSIZE"), "mode": mode, "n": n, "load_seconds": round(t_loaded - t_load, 2),
        "seconds_to_empty": round(t_empty - t_start, 2), "left": size,
        "server_cpu_seconds": round(cpu1 - cpu0, 2),
        "ping_during": {"count": len(during), "p50_ms": q(0.5), "p99_ms": q(0.99),
                        "p999_ms": q(0.999), "max_ms": round(during[-1] * 1e3, 3)},
        "expired_keys": int(stats.get("expired_keys", -1)),
        "expire_cycle_cpu_milliseconds": int(stats.get("expire_cycle_cpu_milliseconds", -1)),
        "expired_time_cap_reached_count": int(stats.get("expired_time_cap_reached_count", -1)),
    }))


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    what, port = argv[1], int(argv[2])
    if what in ("memory", "returned"):
        run = cmd_memory if what == "memory" else cmd_returned
        run(port, int(argv[3]), int(argv[4]) if len(argv) > 4 else 1_000_000,
            argv[5] if len(argv) > 5 else "string")
    elif what == "scan":
        cmd_scan(port, int(argv[3]) if len(argv) > 3 else 1_000_000,
                 int(argv[4]) if len(argv) > 4 else 200, (argv[5] if len(argv) > 5 else "yes") == "yes")
    elif what == "scancases":
        cmd_scancases(port, int(argv[3]) if len(argv) > 3 else 1_000_000,
                      int(argv[4]) if len(argv) > 4 else 200)
    elif what == "expiry":
        cmd_expiry(port, int(argv[3]), int(argv[4]) if len(argv) > 4 else 1_000_000,
                   argv[5] if len(argv) > 5 else "pxat")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
