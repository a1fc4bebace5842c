"""pytest fixtures for Locksmith (registered by the wheel under the `pytest11` entry point).

- `locksmith_server`: a fresh `locksmith-server` for one test (`.url`, `.host`, `.port`).
- `locksmith_topology`: a factory, `locksmith_topology(replicas=1, replication_delay_ms=2000)`,
  that starts a `locksmith-harness` topology for one test; its front address always routes to
  the current master. At the test's end every topology is asked `LOCKSMITH.CHECK`: violations
  the test did not read itself through `topology.check()` fail it, listed one per line.
"""

import pytest

from . import Server, Topology


class CheckedTopology(Topology):
    """A topology that remembers how many violations its test has seen."""

    def __init__(self, *args, **options):
        super().__init__(*args, **options)
        self.seen = 0

    def check(self):
        violations = super().check()
        self.seen = len(violations)
        return violations


@pytest.fixture
def locksmith_server():
    with Server() as server:
        yield server


@pytest.fixture
def locksmith_topology():
    started = []

    def start(*args, **options):
        topology = CheckedTopology(*args, **options)
        started.append(topology)
        return topology

    yield start
    unread = []
    try:
        for topology in started:
            violations = Topology.check(topology)
            unread += [_text(v) for v in violations[topology.seen :]]
    finally:
        for topology in started:
            topology.stop()
    if unread:
        pytest.fail(
            "LOCKSMITH.CHECK found lock violations the test did not check:\n"
            + "\n".join(unread),
            pytrace=False,
        )


def _text(value):
    """A reply as readable text."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, list):
        return " ".join(_text(v) for v in value)
    return str(value)
