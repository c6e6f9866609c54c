"""The ``keys()``, ``values()`` and ``items()`` views of orrery maps.

They are the ``collections.abc`` views (so ``keys()`` has the set operations of
``dict.keys()``), iterating through the map's own cursor rather than one lookup per key.
``reversed(view)`` works on ordered maps.
"""

import collections.abc

_KEYS, _VALUES, _ITEMS = 0, 1, 2


class KeysView(collections.abc.KeysView):
    """The keys of an orrery map: live (reflects later writes), set-like."""

    __slots__ = ()

    def __iter__(self):
        return self._mapping._iter(_KEYS, False)

    def __reversed__(self):
        return self._mapping._iter(_KEYS, True)

    def __repr__(self):
        return f"{type(self._mapping).__name__}.keys(<{len(self._mapping)} keys>)"


class ValuesView(collections.abc.ValuesView):
    """The values of an orrery map, in key order (ordered maps)."""

    __slots__ = ()

    def __iter__(self):
        return self._mapping._iter(_VALUES, False)

    def __reversed__(self):
        return self._mapping._iter(_VALUES, True)

    def __repr__(self):
        return f"{type(self._mapping).__name__}.values(<{len(self._mapping)} values>)"


class ItemsView(collections.abc.ItemsView):
    """The ``(key, value)`` pairs of an orrery map: live, set-like."""

    __slots__ = ()

    def __iter__(self):
        return self._mapping._iter(_ITEMS, False)

    def __reversed__(self):
        return self._mapping._iter(_ITEMS, True)

    def __repr__(self):
        return f"{type(self._mapping).__name__}.items(<{len(self._mapping)} pairs>)"
