"""A minimal RESP2 client: enough to send the harness's `LOCKSMITH.*` commands and read the
reply, with the standard library only (the plugin needs no client library of its own)."""

import socket


class ReplyError(Exception):
    """An error reply (`-ERR ...`) from the server."""


class Connection:
    """One connection to a Redis-compatible server."""

    def __init__(self, host, port, timeout=10.0):
        self._sock = socket.create_connection((host, port), timeout=timeout)
        self._buf = b""

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def command(self, *args):
        """Sends one command (its arguments as str or bytes) and returns its reply: bytes for a
        bulk string, str for a status, int, None, or a list of those."""
        out = [b"*%d\r\n" % len(args)]
        for arg in args:
            if isinstance(arg, str):
                arg = arg.encode()
            elif isinstance(arg, int):
                arg = str(arg).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
        self._sock.sendall(b"".join(out))
        return self._reply()

    def _line(self):
        while b"\r\n" not in self._buf:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\r\n", 1)
        return line

    def _exactly(self, n):
        while len(self._buf) < n + 2:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self._buf += chunk
        data, self._buf = self._buf[:n], self._buf[n + 2 :]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise ReplyError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exactly(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise ConnectionError(f"unexpected reply line {line!r}")
