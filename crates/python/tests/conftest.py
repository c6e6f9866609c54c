"""Shared fixtures: one constructor per kind of map, so that every test runs on each.

An Slb is built with a small cache (64 KiB) so that tests stay light; it wraps a fresh
structure of its own.
"""

import pytest

import orrery

SMALL_SLB = dict(cache_table_bytes=64 * 1024, log_table_ratio=1)


def slb_wormhole(**kw):
    return orrery.Slb(orrery.Wormhole(**kw), **SMALL_SLB)


def slb_mercury(**kw):
    return orrery.Slb(orrery.Mercury(**kw), **SMALL_SLB)


ORDERED = {
    "Wormhole": orrery.Wormhole,
    "CuckooTrie": orrery.CuckooTrie,
    "Hyperion": orrery.Hyperion,
    "Slb(Wormhole)": slb_wormhole,
}
UNORDERED = {
    "Mercury": orrery.Mercury,
    "Slb(Mercury)": slb_mercury,
}
ALL = {**ORDERED, **UNORDERED}


@pytest.fixture(params=list(ALL), ids=list(ALL))
def make(request):
    """A constructor of an empty map (keyword arguments: str_keys)."""
    return ALL[request.param]


@pytest.fixture(params=list(ORDERED), ids=list(ORDERED))
def make_ordered(request):
    """A constructor of an empty ordered map."""
    return ORDERED[request.param]


@pytest.fixture(params=list(UNORDERED), ids=list(UNORDERED))
def make_unordered(request):
    """A constructor of an empty unordered map."""
    return UNORDERED[request.param]


def is_ordered(m):
    """Whether `m` keeps its keys in order."""
    if isinstance(m, orrery.Slb):
        return isinstance(m.inner, orrery.OrderedMap)
    return isinstance(m, orrery.OrderedMap)
