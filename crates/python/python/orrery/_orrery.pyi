"""Type stubs of the native module ``orrery._orrery`` (re-exported by ``orrery``)."""

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any, Generic, Literal, Optional, SupportsIndex, TypeVar, Union, final, overload

from typing_extensions import Buffer, Self


MAX_KEY_LEN: int
MAX_VALUE_LEN: int

_K = TypeVar("_K", bytes, str)
_T = TypeVar("_T")

# Keys and values given to a map: bytes or any bytes-like object (str keys only for maps
# made with str_keys=True, typed as Map[str]).
_BytesLike = Union[bytes, bytearray, memoryview, Buffer]
_KeyIn = Union[_BytesLike, str]
_Pairs = Union[Mapping[Any, _BytesLike], Iterable[tuple[_KeyIn, _BytesLike]]]

@final
class MapIterator(Iterator[_T]):
    """An iterator over a map: stays valid while other threads write; not a snapshot."""

    def __iter__(self) -> Self: ...
    def __next__(self) -> _T: ...

class Map(Generic[_K]):
    """The base class of every map: the mapping protocol, bulk calls, memory, copy, pickle."""

    def __class_getitem__(cls, _key_type: Any) -> Any: ...
    @property
    def str_keys(self) -> bool: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: object, /) -> bool: ...
    def __getitem__(self, key: _KeyIn, /) -> bytes: ...
    def __setitem__(self, key: _KeyIn, value: _BytesLike, /) -> None: ...
    def __delitem__(self, key: _KeyIn, /) -> None: ...
    def __iter__(self) -> MapIterator[_K]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    __hash__: None  # type: ignore[assignment]
    @overload
    def get(self, key: _KeyIn) -> Optional[bytes]: ...
    @overload
    def get(self, key: _KeyIn, default: _T) -> Union[bytes, _T]: ...
    @overload
    def pop(self, key: _KeyIn) -> bytes: ...
    @overload
    def pop(self, key: _KeyIn, default: _T) -> Union[bytes, _T]: ...
    def popitem(self) -> tuple[_K, bytes]: ...
    def setdefault(self, key: _KeyIn, default: Optional[_BytesLike] = None) -> bytes: ...
    def update(self, other: Optional[_Pairs] = None, **kwargs: _BytesLike) -> None: ...
    def clear(self) -> None: ...
    def keys(self) -> KeysView[_K]: ...
    def values(self) -> ValuesView[bytes]: ...
    def items(self) -> ItemsView[_K, bytes]: ...
    @overload
    def get_many(self, keys: Iterable[_KeyIn]) -> list[Optional[bytes]]: ...
    @overload
    def get_many(self, keys: Iterable[_KeyIn], default: _T) -> list[Union[bytes, _T]]: ...
    def set_many(self, pairs: _Pairs) -> int: ...
    def load(self, iterable: Iterable[tuple[_KeyIn, _BytesLike]]) -> int: ...
    def delete_many(self, keys: Iterable[_KeyIn]) -> int: ...
    @overload
    def memory_usage(self, detail: Literal[False] = False) -> int: ...
    @overload
    def memory_usage(self, detail: Literal[True]) -> dict[str, int]: ...
    def __sizeof__(self) -> int: ...
    def config(self) -> dict[str, Any]: ...
    def copy(self) -> Self: ...
    def __copy__(self) -> Self: ...
    def __deepcopy__(self, memo: Any) -> Self: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

class OrderedMap(Map[_K]):
    """A map in key order (bytes order; for str keys, their UTF-8 bytes)."""

    def __reversed__(self) -> MapIterator[_K]: ...
    def irange(
        self,
        minimum: Optional[_KeyIn] = None,
        maximum: Optional[_KeyIn] = None,
        inclusive: tuple[bool, bool] = (True, True),
        reverse: bool = False,
    ) -> MapIterator[_K]: ...
    @overload  # type: ignore[override]
    def items(self) -> ItemsView[_K, bytes]: ...
    @overload
    def items(
        self,
        start: Optional[_KeyIn] = None,
        stop: Optional[_KeyIn] = None,
        reverse: Optional[bool] = None,
        *,
        limit: Optional[int] = None,
    ) -> list[tuple[_K, bytes]]: ...
    def prefix(self, prefix: _KeyIn, reverse: bool = False) -> MapIterator[tuple[_K, bytes]]: ...
    def peekitem(self, index: SupportsIndex = -1) -> tuple[_K, bytes]: ...
    def popitem(self, index: SupportsIndex = -1) -> tuple[_K, bytes]: ...  # type: ignore[override]
    def ceiling(self, key: _KeyIn) -> Optional[_K]: ...
    def floor(self, key: _KeyIn) -> Optional[_K]: ...
    def delete_range(self, start: Optional[_KeyIn] = None, stop: Optional[_KeyIn] = None) -> int: ...

class Wormhole(OrderedMap[_K]):
    """Ordered map on Wormhole (B+-tree leaves under a hashed MetaTrie)."""

    def __new__(
        cls,
        data: Optional[_Pairs] = None,
        *,
        leaf_capacity: Optional[int] = None,
        prefault: Optional[bool] = None,
        prefetch_items: Optional[bool] = None,
        str_keys: bool = False,
    ) -> Self: ...

class CuckooTrie(OrderedMap[_K]):
    """Ordered map on the Cuckoo Trie (trie nodes in a cuckoo hash table)."""

    def __new__(
        cls,
        data: Optional[_Pairs] = None,
        *,
        symbol_bits: Optional[int] = None,
        prefetch_depth: Optional[int] = None,
        initial_buckets: Optional[int] = None,
        str_keys: bool = False,
    ) -> Self: ...

class Hyperion(OrderedMap[_K]):
    """Ordered map on Hyperion (a memory-dense trie of exact-fit containers)."""

    def __new__(
        cls,
        data: Optional[_Pairs] = None,
        *,
        arenas: Optional[int] = None,
        eject_threshold: Optional[int] = None,
        preprocess: Optional[bool] = None,
        str_keys: bool = False,
    ) -> Self: ...

class Mercury(Map[_K]):
    """Hash map on Mercury (chained hash table, in-bucket locks, incremental expansion)."""

    def __new__(
        cls,
        data: Optional[_Pairs] = None,
        *,
        initial_buckets: Optional[int] = None,
        load_percent: Optional[int] = None,
        expansion: Optional[Literal["cooperative", "dedicated"]] = None,
        migrate_run: Optional[int] = None,
        prefault: Optional[bool] = None,
        str_keys: bool = False,
    ) -> Self: ...

class Slb(OrderedMap[_K]):
    """A lookaside cache of hot lookups over another map, which it takes over for writes.
    The ordered calls raise TypeError over a Mercury map."""

    def __new__(
        cls,
        inner: Map[_K],
        *,
        cache_table_bytes: Optional[int] = None,
        log_table_ratio: Optional[int] = None,
        admission_threshold: Optional[int] = None,
        warm_admission_threshold: Optional[int] = None,
        log_sample_rate: Optional[float] = None,
        stripes: Optional[int] = None,
        max_item_bytes: Optional[int] = None,
    ) -> Self: ...
    @property
    def inner(self) -> Map[_K]: ...
    def stats(self) -> dict[str, Union[int, float]]: ...
