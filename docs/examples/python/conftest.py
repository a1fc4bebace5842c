"""A pytest fixture that starts locksmith-server for the test session.

The binary comes from $LOCKSMITH_SERVER_BIN (default: `locksmith-server` on the PATH). It is
started with `--port 0`: the first line it prints, `ready <host>:<port>`, says where it listens
and that it accepts connections. The fixture yields the server's `redis://` URL and stops it.
"""

import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def locksmith_url():
    binary = os.environ.get("LOCKSMITH_SERVER_BIN", "locksmith-server")
    server = subprocess.Popen(
        [binary, "--port", "0", "--loglevel", "warning"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = server.stdout.readline().strip()
        if not line.startswith("ready "):
            raise RuntimeError(f"locksmith-server did not start: {line!r}")
        yield f"redis://{line.removeprefix('ready ')}/"
    finally:
        server.terminate()
        server.wait(timeout=10)
