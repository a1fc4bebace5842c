#!/usr/bin/env python3
"""Memory per idle connection: opens N connections to a server, sends one PING on each,
waits for every reply, and prints the server's RSS growth per connection.

usage: python3 benches/idle_connections.py PORT PID [N=5000]
(raise `ulimit -n` above N first; PID is the server process to measure)
"""
import socket
import sys
import time


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    raise SystemExit(f"no VmRSS for pid {pid}")


def main():
    port, pid = int(sys.argv[1]), int(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
    before = rss_kb(pid)
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"PING\r\n")
        conns.append(s)
    for s in conns:
        s.settimeout(10)
        s.recv(16)
    time.sleep(1.0)
    after = rss_kb(pid)
    print(f"{n} idle connections: RSS {before} KB -> {after} KB, "
          f"{(after - before) * 1024 / n:.0f} B per connection")


if __name__ == "__main__":
    main()
