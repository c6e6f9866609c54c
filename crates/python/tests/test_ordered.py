"""What the ordered maps add: irange, items(start, stop, reverse, limit), prefix, peekitem,
popitem(index), ceiling/floor, delete_range, reverse iteration; and the same calls on an
Slb over Mercury (TypeError: no order)."""

import pytest
from sortedcontainers import SortedDict

import orrery

KEYS = [b"", b"\x00", b"a", b"ab", b"abc", b"abd", b"b", b"ba", b"c", b"\xff", b"\xff\xff"]


@pytest.fixture
def pair(make_ordered):
    """An ordered map and the SortedDict holding the same pairs."""
    m = make_ordered()
    sd = SortedDict()
    for i, k in enumerate(KEYS):
        m[k] = b"%d" % i
        sd[k] = b"%d" % i
    return m, sd


def test_is_ordered_map(make_ordered):
    assert isinstance(make_ordered(), orrery.OrderedMap)


def test_iteration_both_ways(pair):
    m, sd = pair
    assert list(m) == list(sd)
    assert list(reversed(m)) == list(reversed(sd))
    assert list(m.keys()) == list(sd.keys())
    assert list(m.values()) == list(sd.values())
    assert list(m.items()) == list(sd.items())
    assert list(reversed(m.items())) == list(reversed(sd.items()))


BOUNDS = [None, b"", b"a", b"ab", b"abc\x00", b"b", b"zz", b"\xff", b"\xff\xff\xff"]


@pytest.mark.parametrize("lo", BOUNDS)
@pytest.mark.parametrize("hi", BOUNDS)
@pytest.mark.parametrize("inclusive", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("reverse", [False, True])
def test_irange_matches_sorteddict(pair, lo, hi, inclusive, reverse):
    m, sd = pair
    want = list(sd.irange(lo, hi, inclusive, reverse))
    assert list(m.irange(lo, hi, inclusive, reverse)) == want
    assert list(m.irange(minimum=lo, maximum=hi, inclusive=inclusive, reverse=reverse)) == want


@pytest.mark.parametrize("start", BOUNDS)
@pytest.mark.parametrize("stop", BOUNDS)
@pytest.mark.parametrize("reverse", [False, True])
def test_items_range(pair, start, stop, reverse):
    m, sd = pair
    keys = list(sd.irange(start, stop, (True, False), reverse))
    want = [(k, sd[k]) for k in keys]
    got = m.items(start, stop, reverse)
    assert isinstance(got, list)
    assert got == want
    assert m.items(start, stop, reverse, limit=3) == want[:3]
    assert m.items(start, stop, reverse=reverse, limit=0) == []


def test_items_forms(pair):
    m, sd = pair
    assert m.items(reverse=False) == list(sd.items())
    assert m.items(limit=2) == list(sd.items())[:2]
    assert not isinstance(m.items(), list)  # no argument: the view


@pytest.mark.parametrize("p", [b"", b"a", b"ab", b"abc", b"b", b"\xff", b"\xff\xff", b"q"])
def test_prefix(pair, p):
    m, sd = pair
    want = [(k, sd[k]) for k in sd if k.startswith(p)]
    assert list(m.prefix(p)) == want
    assert list(m.prefix(p, reverse=True)) == want[::-1]


def test_peekitem(pair):
    m, sd = pair
    for i in range(-len(sd), len(sd)):
        assert m.peekitem(i) == sd.peekitem(i)
    assert m.peekitem() == sd.peekitem()
    for i in (len(sd), -len(sd) - 1):
        with pytest.raises(IndexError):
            m.peekitem(i)
    empty = m.copy()
    empty.clear()
    with pytest.raises(IndexError):
        empty.peekitem(0)


def test_popitem_by_index(pair):
    m, sd = pair
    assert m.popitem() == sd.popitem()
    assert m.popitem(0) == sd.popitem(0)
    assert m.popitem(2) == sd.popitem(2)
    assert m.popitem(-2) == sd.popitem(-2)
    assert list(m.items()) == list(sd.items())
    with pytest.raises(IndexError):
        m.popitem(100)
    while sd:
        assert m.popitem() == sd.popitem()
    with pytest.raises(KeyError):
        m.popitem()


@pytest.mark.parametrize("k", BOUNDS[1:] + [b"aa", b"abcd", b"\x00\x00"])
def test_ceiling_floor(pair, k):
    m, sd = pair
    i = sd.bisect_left(k)
    assert m.ceiling(k) == (sd.keys()[i] if i < len(sd) else None)
    j = sd.bisect_right(k)
    assert m.floor(k) == (sd.keys()[j - 1] if j > 0 else None)


def test_ceiling_floor_empty(make_ordered):
    m = make_ordered()
    assert m.ceiling(b"a") is None and m.floor(b"a") is None


@pytest.mark.parametrize("start,stop", [(None, None), (b"a", b"b"), (b"ab", None), (None, b"ab"), (b"b", b"a")])
def test_delete_range(pair, start, stop):
    m, sd = pair
    doomed = list(sd.irange(start, stop, (True, False)))
    assert m.delete_range(start, stop) == len(doomed)
    for k in doomed:
        del sd[k]
    assert list(m.items()) == list(sd.items())


def test_str_keys_order_is_utf8_order(make_ordered):
    m = make_ordered(str_keys=True)
    words = ["zebra", "äpfel", "apple", "", "Apple", "日本", "a\x00b"]
    for w in words:
        m[w] = w.encode()
    assert list(m) == sorted(words, key=lambda w: w.encode())
    assert list(m.irange("a", "b")) == ["a\x00b", "apple"]
    assert list(m.prefix("ap")) == [("apple", b"apple")]
    assert m.ceiling("b") == "zebra" and m.floor("b") == "apple"
    assert m.items("a", "b") == [("a\x00b", b"a\x00b"), ("apple", b"apple")]


def test_iterators_are_independent_cursors(pair):
    m, sd = pair
    a, b = iter(m), iter(m)
    assert next(a) == next(b) == sd.keys()[0]
    assert next(a) == sd.keys()[1]
    assert list(b) == list(sd)[1:]


def test_unordered_slb_has_no_order():
    s = orrery.Slb(orrery.Mercury(), cache_table_bytes=1 << 16)
    s[b"a"] = b"1"
    assert isinstance(s, orrery.OrderedMap)  # the class is shared with ordered inners
    for call in (
        lambda: list(s.irange()),
        lambda: s.items(b"a", None),
        lambda: list(s.prefix(b"a")),
        lambda: s.peekitem(0),
        lambda: s.popitem(0),
        lambda: s.ceiling(b"a"),
        lambda: s.floor(b"a"),
        lambda: s.delete_range(),
        lambda: reversed(s),
    ):
        with pytest.raises(TypeError, match="order"):
            call()
    assert s.popitem() == (b"a", b"1")  # the unordered popitem()
