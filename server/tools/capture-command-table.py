#!/usr/bin/env python3
"""Capture redis-server's own description of its commands for locksmith-server.

Writes the RESP3 replies of `COMMAND INFO` and `COMMAND DOCS` (every command, subcommands
included) of a running redis-server, byte for byte, to server/src/redis_table/info.resp and
docs.resp. The server embeds them (src/redis_table.rs) and answers COMMAND INFO/DOCS, ACL
categories and key specifications from them for every command it has.

usage: capture-command-table.py [PORT]   (default 6379; the server must be redis-server 7.0.x)
The files in the repository come from Debian's redis-server 7.0.15.
"""
import os
import socket
import sys


def request(sock, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(out)


class Reader:
    """Reads one whole RESP3 reply and returns its raw bytes."""

    def __init__(self, sock):
        self.f = sock.makefile("rb")

    def raw(self):
        line = self.f.readline()
        if not line.endswith(b"\r\n"):
            raise EOFError("connection closed")
        kind, rest = line[:1], line[1:-2]
        if kind in b"$=!":
            n = int(rest)
            return line + (self.f.read(n + 2) if n >= 0 else b"")
        if kind in b"*~>%|":
            n = int(rest)
            if kind in b"%|":
                n *= 2
            return line + b"".join(self.raw() for _ in range(max(n, 0)))
        return line


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
    sock = socket.create_connection(("127.0.0.1", port))
    reader = Reader(sock)
    request(sock, "HELLO", "3")
    hello = reader.raw()
    if b"7.0." not in hello:
        sys.exit("not a redis-server 7.0.x: %r" % hello[:200])
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "redis_table")
    for what in ("info", "docs"):
        request(sock, "COMMAND", what.upper())
        data = reader.raw()
        with open(os.path.join(here, what + ".resp"), "wb") as out:
            out.write(data)
        print("%s.resp: %d bytes" % (what, len(data)))


if __name__ == "__main__":
    main()
