#!/usr/bin/env python3
"""Connection storm: N clients connect at once to a loopback server, each sends PING as soon
as it is connected and waits for +PONG; prints the p50/p99/max time from the connect call to
the reply, clients that failed, and the kernel's ListenOverflows/ListenDrops counted meanwhile
(`nstat`, when present).

usage: python3 benches/connection_storm.py PORT [N=2000] [ROUNDS=3]
(raise `ulimit -n` above N first; every client gives up after 10 s, a round after 30 s)
"""
import errno
import selectors
import socket
import subprocess
import sys
import time


def listen_overflows():
    """TcpExtListenOverflows and TcpExtListenDrops since boot, or None without nstat."""
    try:
        out = subprocess.run(["nstat", "-az", "TcpExtListenOverflows", "TcpExtListenDrops"],
                             capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    counts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("TcpExt"):
            counts[parts[0]] = int(parts[1])
    return counts


def storm(port, n):
    sel = selectors.DefaultSelector()
    started, done, failed = {}, {}, 0
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        started[i] = time.perf_counter()
        err = s.connect_ex(("127.0.0.1", port))
        if err not in (0, errno.EINPROGRESS):
            failed += 1
            s.close()
            continue
        sel.register(s, selectors.EVENT_WRITE, (i, "connect"))
    deadline = time.perf_counter() + 30
    while len(sel.get_map()) and time.perf_counter() < deadline:
        for key, mask in sel.select(timeout=1):
            s, (i, state) = key.fileobj, key.data
            if time.perf_counter() - started[i] > 10:
                failed += 1
                sel.unregister(s)
                s.close()
                continue
            if state == "connect":
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    failed += 1
                    sel.unregister(s)
                    s.close()
                    continue
                s.send(b"PING\r\n")
                sel.modify(s, selectors.EVENT_READ, (i, "reply"))
            else:
                data = s.recv(64)
                if data.startswith(b"+PONG"):
                    done[i] = time.perf_counter() - started[i]
                else:
                    failed += 1
                sel.unregister(s)
                s.close()
    for key in list(sel.get_map().values()):
        failed += 1
        key.fileobj.close()
    return sorted(done.values()), failed


def main():
    port = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    for r in range(rounds):
        before = listen_overflows()
        times, failed = storm(port, n)
        after = listen_overflows()
        pct = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000 if times else float("nan")
        over = ("" if before is None or after is None else
                " overflows %d drops %d" % (
                    after.get("TcpExtListenOverflows", 0) - before.get("TcpExtListenOverflows", 0),
                    after.get("TcpExtListenDrops", 0) - before.get("TcpExtListenDrops", 0)))
        print("port %d n %d round %d: p50 %.1f ms p99 %.1f ms max %.1f ms failed %d%s" % (
            port, n, r + 1, pct(0.5), pct(0.99), pct(1.0) if times else float("nan"), failed, over))
        time.sleep(1)


if __name__ == "__main__":
    main()
