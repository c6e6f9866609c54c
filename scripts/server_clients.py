"""orrery-server driven by redis-py (RESP2 and RESP3), and through twemproxy.

Called by scripts/test-server-clients.sh, which starts the servers:
  server_clients.py direct PORT          redis-py against one server
  server_clients.py proxy PROXY P1 P2    keys through nutcracker, sharded over two servers
Exits non-zero (an AssertionError) on any mismatch.
"""

import sys
import warnings

import redis

# redis-py 8 deprecates lib_name/lib_version (used below for twemproxy) in favour of an API
# older versions lack.
warnings.filterwarnings("ignore", category=DeprecationWarning)


def direct(port):
    for proto in (2, 3):
        r = redis.Redis(port=port, protocol=proto, decode_responses=True, socket_timeout=60)
        r.flushdb()
        assert r.ping()
        assert r.set("greeting", "hello")
        assert r.get("greeting") == "hello"
        assert r.set("greeting", "x", nx=True) is None
        assert r.mset({"a": "1", "b": "2"})
        assert r.mget(["a", "missing", "b"]) == ["1", None, "2"]
        assert r.incr("a", 41) == 42
        assert abs(r.incrbyfloat("f", 1.5) - 1.5) < 1e-9
        assert r.append("greeting", "!") == 6
        assert r.expire("greeting", 100)
        assert 0 < r.ttl("greeting") <= 100
        assert r.persist("greeting") and r.ttl("greeting") == -1
        assert r.type("a") == "string"
        assert r.delete("b", "nope") == 1
        assert r.exists("a", "b") == 1
        # Pipelining, transaction off (MULTI is not supported).
        p = r.pipeline(transaction=False)
        for i in range(100):
            p.set(f"user:{i:03}", i)
        assert all(p.execute())
        assert sorted(r.scan_iter(match="user:*", count=7)) == [f"user:{i:03}" for i in range(100)]
        assert len(r.keys("user:0*")) == 100
        # Sorted sets.
        assert r.zadd("z", {"a": 1, "b": 2, "c": 3}) == 3
        # (redis-py returns pairs as tuples in RESP2 and as lists in RESP3, with Redis too)
        pairs = [tuple(p) for p in r.zrange("z", 0, -1, withscores=True)]
        assert pairs == [("a", 1.0), ("b", 2.0), ("c", 3.0)], pairs
        assert r.zrangebyscore("z", 2, "+inf") == ["b", "c"]
        assert r.zrangebylex("z", "[b", "+") == ["b", "c"]
        assert r.zscore("z", "b") == 2.0
        assert r.zincrby("z", 10, "a") == 11.0
        assert r.zrank("z", "a") == 2
        assert r.zcard("z") == 3
        # Errors come back as exceptions with Redis's text.
        try:
            r.incr("z")
            raise AssertionError("INCR on a sorted set must fail")
        except redis.ResponseError as e:
            assert str(e).startswith("WRONGTYPE"), e
        info = r.info()
        assert info["redis_version"] == "7.0.0", info
        assert "aof_enabled" in r.info("persistence")
        assert r.dbsize() == len(r.keys("*"))
        r.close()
    print(f"redis-py {redis.__version__}: RESP2 and RESP3 checks passed on port {port}")


def proxy(proxy_port, p1, p2):
    # twemproxy speaks RESP2 and knows neither HELLO nor CLIENT SETINFO, which redis-py
    # sends on connect unless told not to.
    via = redis.Redis(port=proxy_port, protocol=2, lib_name=None, lib_version=None,
                      decode_responses=True, socket_timeout=60)
    shards = [redis.Redis(port=p, decode_responses=True, socket_timeout=60) for p in (p1, p2)]
    n = 1000
    for i in range(n):
        assert via.set(f"key:{i}", f"value {i}")
    for i in range(0, n, 37):
        assert via.get(f"key:{i}") == f"value {i}"
    keys = [f"key:{i}" for i in range(n)]
    # twemproxy splits an MGET across the shards and merges the replies in order.
    assert via.mget(keys) == [f"value {i}" for i in range(n)]
    assert via.incr("key:counter", 5) == 5
    assert via.zadd("board", {"x": 1, "y": 2}) == 2
    assert via.zrange("board", 0, -1) == ["x", "y"]
    sizes = [s.dbsize() for s in shards]
    assert sum(sizes) == n + 2, sizes
    assert all(size > n // 10 for size in sizes), f"keys not sharded: {sizes}"
    # Every key lives on exactly one shard, and that shard holds what the proxy returned.
    for i in range(0, n, 13):
        found = [s.get(f"key:{i}") for s in shards]
        assert found.count(None) == 1 and f"value {i}" in found, found
    assert via.delete("key:1") == 1
    assert via.get("key:1") is None
    print(f"nutcracker: {n} keys sharded {sizes[0]} / {sizes[1]} over two orrery-servers; reads through the proxy see the writes")


if __name__ == "__main__":
    if sys.argv[1] == "direct":
        direct(int(sys.argv[2]))
    elif sys.argv[1] == "proxy":
        proxy(*(int(a) for a in sys.argv[2:5]))
    else:
        raise SystemExit(f"unknown mode {sys.argv[1]}")
