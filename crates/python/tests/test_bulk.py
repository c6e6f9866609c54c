"""Bulk operations (get_many, set_many, load, delete_many), pickling, construction and
configuration errors."""

import pickle

import pytest

import orrery
from conftest import is_ordered

# Larger than the chunk the bulk calls take from Python at a time (16 Ki items), so that
# every path crosses chunk boundaries.
N = 40_000


def keys(n=N, tag=b"k"):
    return [tag + b"%08d" % i for i in range(n)]


def test_get_many(make):
    m = make()
    ks = keys()
    m.set_many((k, k[::-1]) for k in ks[::2])
    got = m.get_many(ks)
    assert isinstance(got, list) and len(got) == N
    assert got[::2] == [k[::-1] for k in ks[::2]]
    assert got[1::2] == [None] * (N // 2)
    assert m.get_many(ks[:3], default=b"-") == [ks[0][::-1], b"-", ks[2][::-1]]
    assert m.get_many([]) == []
    assert m.get_many(iter(ks[:2])) == [ks[0][::-1], None]  # any iterable
    long_key = b"x" * (orrery.MAX_KEY_LEN + 1)
    assert m.get_many([ks[0], long_key, bytearray(ks[2])]) == [ks[0][::-1], None, ks[2][::-1]]
    with pytest.raises(TypeError):
        m.get_many([ks[0], "str"])
    with pytest.raises(TypeError):
        m.get_many(5)


def test_set_many_load_delete_many(make):
    m = make()
    ks = keys()
    assert m.set_many({k: b"v" for k in ks[:10]}) == 10
    assert m.set_many([(k, b"w") for k in ks]) == N - 10
    assert len(m) == N and m[ks[0]] == b"w"
    gen = ((k, b"g") for k in keys(N, b"g"))
    assert m.load(gen) == N
    assert len(m) == 2 * N
    assert m.delete_many(ks) == N
    assert m.delete_many(ks) == 0
    assert m.delete_many(iter(keys(N, b"g"))) == N
    assert len(m) == 0


def test_bulk_errors_keep_the_pairs_before(make):
    m = make()
    ks = keys(20_000)
    pairs = [(k, b"v") for k in ks]
    pairs[18_000] = (ks[18_000], b"v" * (orrery.MAX_VALUE_LEN + 1))
    with pytest.raises(ValueError, match="exceeds the limit"):
        m.set_many(pairs)
    assert len(m) == 18_000 and ks[17_999] in m and ks[18_000] not in m
    m.clear()
    pairs[18_000] = (123, b"v")
    with pytest.raises(TypeError):
        m.load(iter(pairs))
    assert len(m) == 18_000
    with pytest.raises(TypeError):
        m.delete_many(ks[:5] + [None] + ks[5:])
    assert len(m) == 18_000 - 5


def test_pickle_roundtrip(make):
    m = make()
    m.set_many((k, k * 3) for k in keys(5000))
    m[b""] = b""
    m[b"\x00\xff"] = b"\xff" * 1000
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        r = pickle.loads(pickle.dumps(m, protocol=proto))
        assert type(r) is type(m)
        assert r == m and len(r) == len(m)
        assert r.config() == m.config()
        if is_ordered(m):
            assert list(r.items()) == list(m.items())
    s = make(str_keys=True)
    s["ü"] = b"1"
    r = pickle.loads(pickle.dumps(s))
    assert r.str_keys and r["ü"] == b"1"


def test_pickle_of_slb_keeps_its_inner():
    inner = orrery.Hyperion({b"a": b"1"})
    s = orrery.Slb(inner, cache_table_bytes=1 << 16)
    r = pickle.loads(pickle.dumps(s))
    assert isinstance(r, orrery.Slb) and isinstance(r.inner, orrery.Hyperion)
    assert r == s and r.config() == s.config()
    with pytest.raises(RuntimeError):
        r.inner[b"b"] = b"2"  # the restored inner is wrapped too


def test_corrupt_pickle_is_a_value_error():
    m = orrery.Wormhole()
    with pytest.raises(ValueError, match="header"):
        m._load_dump(b"not a pickle")
    good = orrery.Wormhole({b"a": b"1"}).__reduce__()[1][2]
    with pytest.raises(ValueError, match="truncated"):
        m._load_dump(good[:-1])
    s = orrery.Wormhole(str_keys=True)
    bad = orrery.Wormhole({b"\xff": b"1"}).__reduce__()[1][2]
    with pytest.raises(ValueError, match="UTF-8"):
        s._load_dump(bad)
    assert len(s) == 0


@pytest.mark.parametrize("cls", [orrery.Wormhole, orrery.CuckooTrie, orrery.Hyperion, orrery.Mercury])
def test_constructor_data(cls):
    m = cls({b"b": b"2", b"a": b"1"})
    assert sorted(m.items()) == [(b"a", b"1"), (b"b", b"2")]
    assert len(cls([(b"x", b"y")] * 3)) == 1
    assert cls({"k": b"v"}, str_keys=True)["k"] == b"v"
    with pytest.raises(TypeError):
        cls({"k": b"v"})


GOOD = {
    orrery.Wormhole: dict(leaf_capacity=64, prefault=False, prefetch_items=False),
    orrery.CuckooTrie: dict(symbol_bits=4, prefetch_depth=8, initial_buckets=64),
    orrery.Hyperion: dict(arenas=4, eject_threshold=4096, preprocess=True),
    orrery.Mercury: dict(initial_buckets=100, load_percent=75, expansion="dedicated", migrate_run=8, prefault=False),
}
BAD = [
    (orrery.Wormhole, dict(leaf_capacity=4), ValueError, "leaf_capacity"),
    (orrery.Wormhole, dict(leaf_capacity=-1), ValueError, "leaf_capacity"),
    (orrery.Wormhole, dict(leaf_capacity=2**70), ValueError, "leaf_capacity"),
    (orrery.Wormhole, dict(leaf_capacity="64"), TypeError, "leaf_capacity"),
    (orrery.Wormhole, dict(leaf_capacity=True), TypeError, "leaf_capacity"),
    (orrery.Wormhole, dict(prefault=1), TypeError, "prefault"),
    (orrery.CuckooTrie, dict(symbol_bits=6), ValueError, "symbol_bits"),
    (orrery.CuckooTrie, dict(prefetch_depth=0), ValueError, "prefetch_depth"),
    (orrery.CuckooTrie, dict(initial_buckets=100), ValueError, "initial_buckets"),
    (orrery.Hyperion, dict(arenas=0), ValueError, "arenas"),
    (orrery.Hyperion, dict(eject_threshold=10), ValueError, "eject_threshold"),
    (orrery.Mercury, dict(load_percent=0), ValueError, "load_percent"),
    (orrery.Mercury, dict(expansion="eager"), ValueError, "expansion"),
    (orrery.Mercury, dict(expansion=1), TypeError, "expansion"),
    (orrery.Mercury, dict(migrate_run=0), ValueError, "migrate_run"),
    (orrery.Wormhole, dict(no_such_option=1), TypeError, "no_such_option"),
]


@pytest.mark.parametrize("cls", list(GOOD))
def test_configs(cls):
    m = cls(**GOOD[cls])
    cfg = m.config()
    for k, v in GOOD[cls].items():
        if k == "initial_buckets" and cls is orrery.Mercury:
            assert cfg[k] == 128  # rounded up to a power of two, as documented
        else:
            assert cfg[k] == v
    m[b"k"] = b"v"
    assert m[b"k"] == b"v"


@pytest.mark.parametrize("cls,kw,exc,name", BAD)
def test_bad_configs(cls, kw, exc, name):
    with pytest.raises(exc, match=name):
        cls(**kw)


def test_slb_configs_and_errors():
    s = orrery.Slb(orrery.Wormhole(), cache_table_bytes=1 << 16, admission_threshold=2, log_sample_rate=0.5)
    assert s.config()["admission_threshold"] == 2 and s.config()["log_sample_rate"] == 0.5
    for kw, exc in [
        (dict(cache_table_bytes=10), ValueError),
        (dict(stripes=1000), ValueError),
        (dict(log_sample_rate=2.0), ValueError),
        (dict(log_sample_rate="x"), TypeError),
        (dict(admission_threshold=16), ValueError),
    ]:
        inner = orrery.Wormhole()
        with pytest.raises(exc):
            orrery.Slb(inner, **kw)
        inner[b"still"] = b"writable"  # a failed Slb does not take its inner over
    with pytest.raises(TypeError):
        orrery.Slb({})
    with pytest.raises(TypeError):
        orrery.Slb(s)
    with pytest.raises(ValueError, match="already"):
        orrery.Slb(s.inner)


def test_slb_caches_and_stays_coherent():
    inner = orrery.Mercury()
    s = orrery.Slb(inner, cache_table_bytes=1 << 16)
    s[b"hot"] = b"1"
    for _ in range(10):
        assert s[b"hot"] == b"1"
    assert s.stats()["hits"] > 0
    s[b"hot"] = b"2"
    assert s[b"hot"] == b"2" and inner[b"hot"] == b"2"
    del s[b"hot"]
    assert b"hot" not in s and b"hot" not in inner
    assert s.inner is inner
    assert s.memory_usage() > inner.memory_usage()
    for write in (
        lambda: inner.__setitem__(b"k", b"v"),
        lambda: inner.__delitem__(b"k"),
        lambda: inner.pop(b"k", None),
        lambda: inner.popitem(),
        lambda: inner.setdefault(b"k", b"v"),
        lambda: inner.update({b"k": b"v"}),
        lambda: inner.set_many([]),
        lambda: inner.load([]),
        lambda: inner.delete_many([]),
        lambda: inner.clear(),
    ):
        with pytest.raises(RuntimeError, match="Slb"):
            write()
    assert inner.get(b"nothing") is None  # reads through the inner are fine


def test_out_of_memory_is_memory_error():
    with pytest.raises(MemoryError):
        orrery.Mercury(initial_buckets=2**40)
    with pytest.raises(MemoryError):
        orrery.CuckooTrie(initial_buckets=2**36)
