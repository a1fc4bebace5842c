"""Fault testing an unmodified client library from Python, with the `locksmith` wheel only.

Two redis-py `Lock` holders on a topology's front address, one master and a replica whose
replication lags 2 s: a failover between their acquisitions loses the first holder's key, and
the second gets the same lock. The harness observes the grants on the server side and
`LOCKSMITH.CHECK` names both tokens; without the failover, or with the write waited for
(`WAIT 1`), it reports nothing. The same for pottery's `Redlock`.
"""

import redis
from pottery import Redlock


def _client(topology):
    return redis.Redis.from_url(topology.url, socket_timeout=10)


def test_the_server_fixture_answers(locksmith_server):
    r = redis.Redis.from_url(locksmith_server.url)
    assert r.ping()
    assert r.set("k", "v") and r.get("k") == b"v"


def test_a_failover_hands_a_redis_py_lock_to_two_holders(locksmith_topology):
    topology = locksmith_topology(replicas=1, replication_delay_ms=2000, observe=True)
    first = _client(topology).lock("resource", timeout=30)
    assert first.acquire(blocking=False, token="token-a")
    topology.command("LOCKSMITH.FAILOVER")
    second = _client(topology).lock("resource", timeout=30)
    assert second.acquire(blocking=False, token="token-b")
    violations = topology.check()
    assert len(violations) == 1, violations
    text = repr(violations[0])
    assert "token-a" in text and "token-b" in text, text


def test_without_a_fault_the_second_holder_waits(locksmith_topology):
    topology = locksmith_topology(replicas=1, replication_delay_ms=2000, observe=True)
    first = _client(topology).lock("resource", timeout=30)
    assert first.acquire(blocking=False, token="token-a")
    second = _client(topology).lock("resource", timeout=30)
    assert not second.acquire(blocking=False, token="token-b")
    first.release()
    assert topology.check() == []


def test_a_lock_write_waited_for_survives_the_failover(locksmith_topology):
    topology = locksmith_topology(replicas=1, replication_delay_ms=200, observe=True)
    client = _client(topology)
    first = client.lock("resource", timeout=30)
    assert first.acquire(blocking=False, token="token-a")
    # The replica has the key before the master goes: the promoted one refuses the second.
    assert client.execute_command("WAIT", 1, 5000) == 1
    topology.command("LOCKSMITH.FAILOVER")
    second = _client(topology).lock("resource", timeout=30)
    assert not second.acquire(blocking=False, token="token-b")
    assert topology.check() == []


def test_a_failover_hands_a_pottery_redlock_to_two_holders(locksmith_topology):
    topology = locksmith_topology(replicas=1, replication_delay_ms=2000, observe=True)
    first = Redlock(key="resource", masters={_client(topology)}, auto_release_time=30)
    assert first.acquire(blocking=False)
    topology.command("LOCKSMITH.FAILOVER")
    second = Redlock(key="resource", masters={_client(topology)}, auto_release_time=30)
    assert second.acquire(blocking=False)
    violations = topology.check()
    assert len(violations) == 1, violations
