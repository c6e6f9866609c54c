"""Orrery's concurrent in-memory indexes as Python maps.

``Wormhole``, ``CuckooTrie`` and ``Hyperion`` are ordered maps (like
``sortedcontainers.SortedDict``, ordered by the bytes of the keys), ``Mercury`` is a hash
map (like ``dict``), and ``Slb(inner)`` caches hot lookups in front of any of them. Keys and
values are ``bytes`` (any bytes-like object is accepted; ``str`` keys with
``str_keys=True``). Every method may be called from any thread; the bulk operations
(``get_many``, ``set_many``, ``delete_many``, ``load``, ``update``, ``items(start, stop)``,
``copy``, pickling) release the GIL while the structure works.

>>> import orrery
>>> m = orrery.Wormhole()
>>> m[b"apple"] = b"1"; m[b"banana"] = b"2"
>>> list(m.irange(b"b"))
[b'banana']

See docs/python.md in the repository for the whole API.
"""

import collections.abc as _abc

from ._orrery import (
    MAX_KEY_LEN,
    MAX_VALUE_LEN,
    CuckooTrie,
    Hyperion,
    Map,
    MapIterator,
    Mercury,
    OrderedMap,
    Slb,
    Wormhole,
)

__all__ = [
    "Map",
    "OrderedMap",
    "Wormhole",
    "CuckooTrie",
    "Hyperion",
    "Mercury",
    "Slb",
    "MapIterator",
    "MAX_KEY_LEN",
    "MAX_VALUE_LEN",
]

__version__ = "0.1.0"

# The maps are mutable mappings, for isinstance checks.
_abc.MutableMapping.register(Map)


def _restore(cls, config, pairs):
    """Unpickles a map: an empty ``cls(**config)`` loaded with the dumped pairs."""
    m = cls(**config)
    m._load_dump(pairs)
    return m


def _restore_slb(cls, inner, config):
    """Unpickles an ``Slb``: a new one with ``config`` over the unpickled ``inner``."""
    return cls(inner, **config)
