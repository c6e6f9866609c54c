"""Hypothesis stateful tests: random operation sequences on a map and on a model (a
SortedDict for the ordered maps, a dict for Mercury), ranges and iteration included, must
never differ.

Keys come from a six-byte alphabet (0x00, 0x01, 'a', 'b', 0xfe, 0xff) and are at most five
bytes long, so that sequences hit equal keys, shared prefixes, the empty key and the
0xff runs that have no prefix successor. More examples: ORRERY_HYPOTHESIS_EXAMPLES=N.
"""

import os
import pickle

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from sortedcontainers import SortedDict

import orrery
from conftest import ORDERED, UNORDERED

SETTINGS = settings(
    max_examples=int(os.environ.get("ORRERY_HYPOTHESIS_EXAMPLES", "60")),
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

keys = st.lists(st.sampled_from([0x00, 0x01, 0x61, 0x62, 0xFE, 0xFF]), max_size=5).map(bytes)
values = st.binary(max_size=8)
bounds = st.none() | keys
pairs = st.lists(st.tuples(keys, values), max_size=12)
key_lists = st.lists(keys, max_size=12)


def same_error(f, g):
    """Runs f (the map) and g (the model): the same result, or the same exception type."""
    try:
        want = g()
    except (KeyError, IndexError) as e:
        with pytest.raises(type(e)):
            f()
        return None
    assert f() == want
    return want


class Common(RuleBasedStateMachine):
    """Rules every map has; the model is a dict-like `self.model`."""

    make = None

    def __init__(self):
        super().__init__()
        self.m = type(self).make()
        self.model = self.new_model()

    @rule(k=keys, v=values)
    def set_item(self, k, v):
        self.m[k] = v
        self.model[k] = v

    @rule(k=keys)
    def del_item(self, k):
        same_error(lambda: self.m.__delitem__(k), lambda: self.model.__delitem__(k))

    @rule(k=keys)
    def get_item(self, k):
        same_error(lambda: self.m[k], lambda: self.model[k])
        assert (k in self.m) == (k in self.model)
        assert self.m.get(k) == self.model.get(k)

    @rule(k=keys, d=values)
    def pop(self, k, d):
        same_error(lambda: self.m.pop(k), lambda: self.model.pop(k))
        assert self.m.pop(k, d) == self.model.pop(k, d)

    @rule(k=keys, v=values)
    def setdefault(self, k, v):
        assert self.m.setdefault(k, v) == self.model.setdefault(k, v)

    @rule(p=pairs, how=st.sampled_from(["set_many", "update", "load", "dict"]))
    def bulk_set(self, p, how):
        if how == "set_many":
            self.m.set_many(p)
        elif how == "update":
            self.m.update(p)
        elif how == "load":
            self.m.load(iter(p))
        else:
            self.m.update(dict(p))
        self.model.update(p)

    @rule(ks=key_lists)
    def delete_many(self, ks):
        removed = 0
        for k in ks:
            removed += self.model.pop(k, None) is not None
        assert self.m.delete_many(ks) == removed

    @rule(ks=key_lists)
    def get_many(self, ks):
        assert self.m.get_many(ks) == [self.model.get(k) for k in ks]
        assert self.m.get_many(ks, b"?") == [self.model.get(k, b"?") for k in ks]

    @rule()
    def clear(self):
        self.m.clear()
        self.model.clear()

    @rule(how=st.sampled_from(["copy", "pickle"]))
    def carry_on_with_a_copy(self, how):
        if how == "copy":
            c = self.m.copy()
        else:
            c = pickle.loads(pickle.dumps(self.m))
        assert c == self.m
        self.m = c

    @rule()
    def compare(self):
        assert self.m == dict(self.model)

    @invariant()
    def same_length(self):
        assert len(self.m) == len(self.model)


class OrderedMachine(Common):
    """The ordered maps against SortedDict."""

    new_model = SortedDict

    @rule(index=st.integers(-4, 4))
    def popitem(self, index):
        same_error(lambda: self.m.popitem(index), lambda: self.model.popitem(index))

    @rule(index=st.integers(-4, 4))
    def peekitem(self, index):
        same_error(lambda: self.m.peekitem(index), lambda: self.model.peekitem(index))

    @rule()
    def iterate(self):
        assert list(self.m) == list(self.model)
        assert list(reversed(self.m)) == list(reversed(self.model))
        assert list(self.m.items()) == list(self.model.items())
        assert list(reversed(self.m.values())) == list(reversed(self.model.values()))

    @rule(lo=bounds, hi=bounds, inclusive=st.tuples(st.booleans(), st.booleans()), reverse=st.booleans())
    def irange(self, lo, hi, inclusive, reverse):
        want = list(self.model.irange(lo, hi, inclusive, reverse))
        assert list(self.m.irange(lo, hi, inclusive, reverse)) == want

    @rule(start=bounds, stop=bounds, reverse=st.booleans(), limit=st.none() | st.integers(0, 6))
    def items_range(self, start, stop, reverse, limit):
        ks = list(self.model.irange(start, stop, (True, False), reverse))
        want = [(k, self.model[k]) for k in ks][:limit]
        assert self.m.items(start, stop, reverse, limit=limit) == want

    @rule(p=keys, reverse=st.booleans())
    def prefix(self, p, reverse):
        want = [(k, v) for k, v in self.model.items() if k.startswith(p)]
        assert list(self.m.prefix(p, reverse)) == (want[::-1] if reverse else want)

    @rule(k=keys)
    def ceiling_floor(self, k):
        ks = self.model.keys()
        i = self.model.bisect_left(k)
        assert self.m.ceiling(k) == (ks[i] if i < len(ks) else None)
        j = self.model.bisect_right(k)
        assert self.m.floor(k) == (ks[j - 1] if j else None)

    @rule(start=bounds, stop=bounds)
    def delete_range(self, start, stop):
        doomed = list(self.model.irange(start, stop, (True, False)))
        assert self.m.delete_range(start, stop) == len(doomed)
        for k in doomed:
            del self.model[k]


class HashMachine(Common):
    """Mercury (and an Slb over it) against dict."""

    new_model = dict

    @rule()
    def popitem(self):
        if not self.model:
            with pytest.raises(KeyError):
                self.m.popitem()
            return
        k, v = self.m.popitem()
        assert self.model.pop(k) == v

    @rule()
    def iterate(self):
        ks = list(self.m)
        assert len(ks) == len(set(ks)) and set(ks) == set(self.model)
        assert sorted(self.m.items()) == sorted(self.model.items())
        assert sorted(self.m.values()) == sorted(self.model.values())


def machine(base, make):
    return type(base.__name__, (base,), {"make": staticmethod(make)})


TestWormhole = machine(OrderedMachine, ORDERED["Wormhole"]).TestCase
TestCuckooTrie = machine(OrderedMachine, ORDERED["CuckooTrie"]).TestCase
TestHyperion = machine(OrderedMachine, ORDERED["Hyperion"]).TestCase
TestSlbWormhole = machine(OrderedMachine, ORDERED["Slb(Wormhole)"]).TestCase
TestMercury = machine(HashMachine, UNORDERED["Mercury"]).TestCase
TestSlbMercury = machine(HashMachine, UNORDERED["Slb(Mercury)"]).TestCase

for case in (TestWormhole, TestCuckooTrie, TestHyperion, TestSlbWormhole, TestMercury, TestSlbMercury):
    case.settings = SETTINGS

del case
