"""The mapping protocol as dict has it, on every structure: every method and its errors."""

import collections.abc
import sys

import pytest

import orrery
from conftest import is_ordered


def filled(make, n=100, **kw):
    m = make(**kw)
    for i in range(n):
        m[b"k%03d" % i] = b"v%d" % i
    return m


def test_isinstance_mapping(make):
    m = make()
    assert isinstance(m, collections.abc.MutableMapping)
    assert isinstance(m, collections.abc.Mapping)
    assert isinstance(m, orrery.Map)
    assert isinstance(iter(m), collections.abc.Iterator)


def test_set_get_del_contains_len(make):
    m = make()
    assert len(m) == 0 and not m
    m[b"a"] = b"1"
    m[b"b"] = b"2"
    assert len(m) == 2 and m
    assert m[b"a"] == b"1"
    assert b"a" in m and b"z" not in m
    m[b"a"] = b"one"  # upsert
    assert m[b"a"] == b"one" and len(m) == 2
    del m[b"a"]
    assert b"a" not in m and len(m) == 1
    with pytest.raises(KeyError) as e:
        m[b"a"]
    assert e.value.args == (b"a",)
    with pytest.raises(KeyError):
        del m[b"a"]


def test_edge_keys_and_values(make):
    m = make()
    keys = [b"", b"\x00", b"\xff", b"\x00\x00", b"a", b"ab", b"abc", b"a" * 1000]
    for i, k in enumerate(keys):
        m[k] = bytes([i]) * i
    for i, k in enumerate(keys):
        assert m[k] == bytes([i]) * i
    assert sorted(m) == sorted(keys)
    m[b"big"] = b"x" * orrery.MAX_VALUE_LEN
    assert len(m[b"big"]) == orrery.MAX_VALUE_LEN
    m[b"k" * orrery.MAX_KEY_LEN] = b"longest"
    assert m[b"k" * orrery.MAX_KEY_LEN] == b"longest"


def test_limits_are_value_errors_naming_the_limit(make):
    m = make()
    long_key = b"k" * (orrery.MAX_KEY_LEN + 1)
    with pytest.raises(ValueError, match=str(orrery.MAX_KEY_LEN)):
        m[long_key] = b"v"
    with pytest.raises(ValueError, match=str(orrery.MAX_VALUE_LEN)):
        m[b"k"] = b"v" * (orrery.MAX_VALUE_LEN + 1)
    assert len(m) == 0  # unchanged
    # An over-long key is simply absent for reads and removals.
    assert long_key not in m
    assert m.get(long_key) is None
    assert m.pop(long_key, None) is None
    with pytest.raises(KeyError):
        del m[long_key]


def test_bytes_like_inputs(make):
    m = make()
    m[bytearray(b"ba")] = memoryview(b"mv")
    m[memoryview(b"mv")] = bytearray(b"ba")
    assert m[b"ba"] == b"mv" and m[b"mv"] == b"ba"
    assert type(m[b"ba"]) is bytes
    import array

    m[array.array("B", [1, 2])] = b"arr"
    assert m[b"\x01\x02"] == b"arr"
    assert bytearray(b"ba") in m


@pytest.mark.parametrize("bad", ["str", 3, 3.5, None, [1, 2], object()])
def test_wrong_key_types_are_type_errors(make, bad):
    m = make()
    with pytest.raises(TypeError):
        m[bad] = b"v"
    with pytest.raises(TypeError):
        m[bad]
    with pytest.raises(TypeError):
        bad in m
    with pytest.raises(TypeError):
        m[b"k"] = bad
    assert len(m) == 0


def test_str_keys(make):
    m = make(str_keys=True)
    assert m.str_keys
    m["héllo"] = b"1"
    m["a"] = b"2"
    assert m["héllo"] == b"1"
    assert set(m) == {"héllo", "a"}
    assert all(type(k) is str for k in m)
    with pytest.raises(TypeError, match="str"):
        m[b"bytes"] = b"x"
    m.update(z=b"26")
    assert m["z"] == b"26"
    with pytest.raises(TypeError):
        m["k"] = "a str value"
    with pytest.raises(UnicodeEncodeError):
        m["\udc80"] = b"lone surrogate"
    assert not make().str_keys


def test_get(make):
    m = filled(make, 3)
    assert m.get(b"k001") == b"v1"
    assert m.get(b"nope") is None
    assert m.get(b"nope", b"dflt") == b"dflt"
    sentinel = object()
    assert m.get(b"nope", sentinel) is sentinel


def test_pop(make):
    m = filled(make, 3)
    assert m.pop(b"k001") == b"v1"
    assert b"k001" not in m
    with pytest.raises(KeyError):
        m.pop(b"k001")
    assert m.pop(b"k001", None) is None
    assert m.pop(b"k001", b"d") == b"d"
    with pytest.raises(TypeError):
        m.pop(b"k000", 1, 2)


def test_popitem_drains(make):
    m = filled(make, 20)
    want = {bytes(k): bytes(v) for k, v in m.items()}
    got = {}
    while m:
        k, v = m.popitem()
        got[k] = v
    assert got == want
    with pytest.raises(KeyError):
        m.popitem()


def test_setdefault(make):
    m = make()
    assert m.setdefault(b"a", b"1") == b"1"
    assert m.setdefault(b"a", b"2") == b"1"
    assert m[b"a"] == b"1"
    assert m.setdefault(b"a") == b"1"  # present: no default needed
    with pytest.raises(TypeError):
        m.setdefault(b"b")  # absent, default None: values are bytes
    assert b"b" not in m


def test_update_forms(make):
    m = make()
    m.update({b"a": b"1"})
    m.update([(b"b", b"2"), [b"c", b"3"]])
    m.update(filled(orrery.Wormhole, 2))
    m.update(iter([(b"d", b"4")]))
    m.update()
    assert dict(m.items()) == {
        b"a": b"1",
        b"b": b"2",
        b"c": b"3",
        b"d": b"4",
        b"k000": b"v0",
        b"k001": b"v1",
    }
    with pytest.raises(TypeError, match="str_keys"):
        m.update(x=b"1")
    with pytest.raises(TypeError):
        m.update([(b"x", b"1", b"extra")])
    with pytest.raises(TypeError):
        m.update([b"notapair"])


def test_clear(make):
    m = filled(make, 3000)
    m.clear()
    assert len(m) == 0 and list(m) == []
    m[b"again"] = b"1"
    assert list(m) == [b"again"]


def test_views(make):
    m = filled(make, 10)
    keys, values, items = m.keys(), m.values(), m.items()
    assert isinstance(keys, collections.abc.KeysView)
    assert isinstance(values, collections.abc.ValuesView)
    assert isinstance(items, collections.abc.ItemsView)
    assert len(keys) == len(values) == len(items) == 10
    assert b"k003" in keys and b"nope" not in keys
    assert (b"k003", b"v3") in items and (b"k003", b"wrong") not in items
    assert b"v3" in values
    assert keys & {b"k003", b"zzz"} == {b"k003"}
    assert keys - {b"k%03d" % i for i in range(9)} == {b"k009"}
    m[b"new"] = b"n"  # views are live
    assert b"new" in keys and len(items) == 11
    if is_ordered(m):
        assert list(reversed(keys)) == sorted(keys, reverse=True)
        assert list(reversed(values))[0] == m[max(m)]
        assert list(reversed(items))[-1] == (min(m), m[min(m)])
    else:
        with pytest.raises(TypeError):
            reversed(keys)
    assert "keys" in repr(keys)


def test_equality(make):
    m = filled(make, 5)
    d = {b"k%03d" % i: b"v%d" % i for i in range(5)}
    assert m == d and d == m and not (m != d)
    assert m == filled(orrery.Mercury, 5) == filled(orrery.Wormhole, 5)
    d[b"k000"] = b"other"
    assert m != d
    del d[b"k000"]
    assert m != d  # a key fewer
    assert m != [1, 2] and m != None  # noqa: E711
    assert m == m
    with pytest.raises(TypeError):
        m < d
    with pytest.raises(TypeError):
        hash(m)


def test_repr(make):
    m = make()
    name = "Slb(" if isinstance(m, orrery.Slb) else type(m).__name__ + "("
    assert repr(m).startswith(name)
    m[b"a"] = b"1"
    assert "b'a': b'1'" in repr(m)
    big = filled(make, 100)
    assert "more>" in repr(big)
    s = make(str_keys=True)
    s["x"] = b"y"
    assert "'x': b'y'" in repr(s) and "str_keys=True" in repr(s)


def test_iteration_is_complete_and_typed(make):
    m = filled(make, 1000)
    ks = list(m)
    assert len(ks) == 1000 and len(set(ks)) == 1000
    assert all(type(k) is bytes for k in ks)
    if is_ordered(m):
        assert ks == sorted(ks)
        assert list(reversed(m)) == sorted(ks, reverse=True)
    it = iter(m)
    assert iter(it) is it


def test_iterator_survives_writes(make):
    m = filled(make, 500)
    seen = []
    for k in m:
        seen.append(k)
        if not k.startswith(b"z"):
            del m[k]  # removing behind the iterator is allowed
            m[b"z" + k] = b"later"  # keys inserted meanwhile may or may not be yielded
    assert {k for k in seen if not k.startswith(b"z")} == {b"k%03d" % i for i in range(500)}


def test_memory_usage_and_sizeof(make):
    m = make()
    empty = m.memory_usage()
    assert isinstance(empty, int) and empty > 0
    for i in range(2000):
        m[b"key-%06d" % i] = b"value-%06d" % i
    grown = m.memory_usage()
    assert grown > empty
    detail = m.memory_usage(detail=True)
    assert detail["structure_bytes"] + detail["key_value_bytes"] == grown
    assert sys.getsizeof(m) >= grown
    assert m.__sizeof__() > grown


def test_config_roundtrip(make):
    m = make(str_keys=True)
    cfg = m.config()
    if isinstance(m, orrery.Slb):
        assert "cache_table_bytes" in cfg
        assert type(m)(type(m.inner)(**m.inner.config()), **cfg).config() == cfg
    else:
        assert cfg["str_keys"] is True
        assert type(m)(**cfg).config() == cfg


def test_copy(make):
    import copy

    m = filled(make, 300)
    for c in (m.copy(), copy.copy(m), copy.deepcopy(m)):
        assert type(c) is type(m)
        assert c == m and c is not m
        c[b"only-in-copy"] = b"1"
        assert b"only-in-copy" not in m
        assert c.config() == m.config()


def test_weakref(make):
    import weakref

    m = make()
    r = weakref.ref(m)
    assert r() is m


def test_subclassing():
    class Mine(orrery.Wormhole):
        pass

    m = Mine({b"a": b"1"})
    m.note = "instances of subclasses have a __dict__"
    assert m[b"a"] == b"1"
    assert type(m.copy()) is Mine


def test_generic_alias():
    assert orrery.Wormhole[bytes] is orrery.Wormhole
    assert orrery.Mercury[str] is orrery.Mercury


def test_map_base_cannot_be_built():
    with pytest.raises(TypeError):
        orrery.Map()
    with pytest.raises(TypeError):
        orrery.OrderedMap()


def test_cycles_through_an_slb_are_collected():
    import gc
    import weakref

    class Mine(orrery.Wormhole):
        pass

    inner = Mine()
    s = orrery.Slb(inner, cache_table_bytes=1 << 16)
    inner.back = s  # a cycle: inner.__dict__ -> s -> inner
    r = weakref.ref(s)
    del inner, s
    gc.collect()
    assert r() is None
