"""Locksmith from Python: start `locksmith-server` or a `locksmith-harness` topology, and ask the
harness what it saw of your locks.

    from locksmith import Topology
    with Topology(replicas=1, replication_delay_ms=2000) as topology:
        url = topology.url            # the front address, always the current master
        ...                           # your code, with any Redis client
        topology.command("LOCKSMITH.FAILOVER")
        assert topology.check() == [] # LOCKSMITH.CHECK: the violations observed so far

The binaries come from this package (a wheel built from the repository carries them), else
from `$LOCKSMITH_BIN_DIR`, else from the PATH. The pytest plugin (`locksmith.pytest_plugin`,
registered by the wheel) gives these as fixtures.
"""

import os
import shutil
import subprocess
import tempfile
import threading

from ._resp import Connection, ReplyError

__all__ = ["Connection", "ReplyError", "Server", "Topology", "binary"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def binary(name):
    """The path of the `name` binary (`locksmith-server` or `locksmith-harness`)."""
    candidates = [os.path.join(_HERE, "bin", name)]
    if os.environ.get("LOCKSMITH_BIN_DIR"):
        candidates.append(os.path.join(os.environ["LOCKSMITH_BIN_DIR"], name))
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(
        f"{name} is not in this package, in $LOCKSMITH_BIN_DIR or on the PATH"
    )


class _Process:
    """A binary started with `--port 0`: the stdout line `ready <host>:<port>` says where it
    listens once it accepts connections (the harness prints its seed before it). Later output
    is drained, so a chatty process never blocks on a full pipe; stderr goes to a file that is
    shown if it fails to start."""

    def __init__(self, name, args, timeout):
        self.args = [binary(name), "--port", "0", "--loglevel", "warning", *args]
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen(
            self.args, stdout=subprocess.PIPE, stderr=self._stderr, text=True
        )
        self.seed = None
        line = ""
        for _ in range(100):
            line = self._proc.stdout.readline()
            if not line or line.startswith("ready "):
                break
            if line.startswith("seed "):
                self.seed = line.split()[1]
        line = line.strip()
        if not line.startswith("ready "):
            self._proc.kill()
            self._proc.wait()
            self._stderr.seek(0)
            err = self._stderr.read()
            raise RuntimeError(f"{name} did not start ({line!r}): {err.strip()[-2000:]}")
        threading.Thread(target=self._proc.stdout.read, daemon=True).start()
        self.host, port = line[len("ready ") :].rsplit(":", 1)
        self.port = int(port)
        self._timeout = timeout

    @property
    def url(self):
        """The `redis://host:port/` URL clients connect to."""
        return f"redis://{self.host}:{self.port}/"

    def connect(self):
        """A plain RESP connection (see `Connection.command`)."""
        return Connection(self.host, self.port, timeout=self._timeout)

    def command(self, *args):
        """Runs one command on a fresh connection and returns its reply."""
        with self.connect() as con:
            return con.command(*args)

    def stop(self):
        """Stops the process (SIGTERM, then SIGKILL after 10 s)."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Server(_Process):
    """A fresh `locksmith-server` on a free loopback port; `args` are extra options."""

    def __init__(self, *args, timeout=10.0):
        super().__init__("locksmith-server", list(args), timeout)


class Topology(_Process):
    """A `locksmith-harness` topology; the front address (`url`, `host`, `port`) routes to the
    current master. Keyword options become the harness's flags: `replicas=1` is
    `--replicas 1`, `replication_delay_ms=2000` is `--replication-delay-ms 2000`, `observe=True`
    is `--observe` (every key's locks), `observe=["lock:*"]` is `--observe lock:*`."""

    def __init__(self, *args, timeout=10.0, **options):
        flags = []
        for key, value in options.items():
            if value is None or value is False:
                continue
            flag = "--" + key.replace("_", "-")
            if value is True:
                flags.append(flag)
            elif isinstance(value, (list, tuple)):
                flags += [flag, *map(str, value)]
            else:
                flags += [flag, str(value)]
        super().__init__("locksmith-harness", [*flags, *args], timeout)

    def check(self):
        """`LOCKSMITH.CHECK`: the violations the harness observed so far (empty when safe)."""
        return self.command("LOCKSMITH.CHECK")

    def locks(self):
        """`LOCKSMITH.LOCKS`: the current holders of observed lock keys, per node."""
        return self.command("LOCKSMITH.LOCKS")

    def history(self):
        """`LOCKSMITH.HISTORY`: observed lock events and faults, as JSON text."""
        reply = self.command("LOCKSMITH.HISTORY")
        return reply.decode() if isinstance(reply, bytes) else reply

    def mark(self, text):
        """`LOCKSMITH.MARK text`: an annotation in the history."""
        return self.command("LOCKSMITH.MARK", text)

    def timeline(self, path):
        """`LOCKSMITH.TIMELINE path`: the HTML timeline of what was observed, written to path."""
        return self.command("LOCKSMITH.TIMELINE", os.path.abspath(path))
