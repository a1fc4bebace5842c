"""Application tests against locksmith-server through the `locksmith_url` fixture."""

import redis
import redis_lock


def test_commands(locksmith_url):
    r = redis.Redis.from_url(locksmith_url)
    assert r.set("greeting", "hello")
    assert r.get("greeting") == b"hello"
    assert r.incr("counter") == 1


def test_a_lock_excludes_a_second_holder(locksmith_url):
    r = redis.Redis.from_url(locksmith_url)
    first = redis_lock.Lock(r, "resource", expire=30)
    second = redis_lock.Lock(r, "resource", expire=30)
    assert first.acquire(blocking=False)
    assert not second.acquire(blocking=False)
    first.release()
    assert second.acquire(blocking=False)
    second.release()
