//! [`OrderedMap`]: what the ordered maps add to [`Map`], the calls `SortedDict` users reach
//! for: `irange`, `items(start, stop, reverse)`, `prefix`, `peekitem`, `popitem(index)`,
//! `ceiling`/`floor`, and reverse iteration.
//!
//! Order is plain lexicographic byte order (for `str_keys` maps: of the UTF-8 encoding,
//! which is code point order). Iterators are cursors that stay valid while other threads
//! write (`crate::cursor`); `items(start, stop)` collects a list with the GIL released.

use std::ops::{self, ControlFlow};

use orrery::api::prefix_successor;
use pyo3::exceptions::{PyIndexError, PyKeyError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::bulk;
use crate::convert::{self, Bytes};
use crate::cursor::Cursor;
use crate::iter::{MapIter, What};
use crate::map::Map;

/// The base class of the ordered maps (Wormhole, CuckooTrie, Hyperion, and an Slb over one
/// of them): [`Map`] plus key-order operations.
#[pyclass(module = "orrery", extends = Map, subclass, frozen)]
pub struct OrderedMap;

/// The [`Map`] of an ordered map object.
fn map<'a>(slf: &'a Bound<'_, OrderedMap>) -> &'a Map {
    slf.as_super().get()
}

/// A bound from an optional key argument: `None` is unbounded.
fn bound<'a>(
    map: &Map,
    key: Option<&'a Bound<'_, PyAny>>,
    inclusive: bool,
) -> PyResult<Option<(Bytes<'a>, bool)>> {
    key.map(|k| Ok((map.store.key(k)?, inclusive))).transpose()
}

/// The borrowed form of [`bound`]'s result.
fn as_bound<'b>(b: &'b Option<(Bytes<'_>, bool)>) -> ops::Bound<&'b [u8]> {
    match b {
        None => ops::Bound::Unbounded,
        Some((k, true)) => ops::Bound::Included(&**k),
        Some((k, false)) => ops::Bound::Excluded(&**k),
    }
}

/// The pair at `index` of the key order (negative: from the end), `None` past either end.
fn pair_at(map: &Map, index: isize) -> PyResult<Option<(Vec<u8>, Vec<u8>)>> {
    let ordered = map.store.ordered()?;
    Ok(match index {
        0 => ordered.first(),
        -1 => ordered.last(),
        i => {
            let back = i < 0;
            let skip = if back {
                (-(i + 1)) as usize
            } else {
                i as usize
            };
            let mut cursor = Cursor::all(&map.store.index);
            let mut e = None;
            for _ in 0..=skip {
                e = cursor.next(back);
                if e.is_none() {
                    break;
                }
            }
            e.map(|e| e.into_pair())
        }
    })
}

#[pymethods]
impl OrderedMap {
    /// The keys in descending order.
    fn __reversed__(slf: &Bound<'_, Self>) -> PyResult<MapIter> {
        let m = map(slf);
        m.store.ordered()?;
        Ok(m.iter_of(Cursor::all(&m.store.index), What::Keys, true))
    }

    /// The keys from `minimum` to `maximum` (`None`: unbounded; each end included or not
    /// per `inclusive`), ascending, or descending when `reverse`: `SortedDict.irange`.
    #[pyo3(signature = (minimum = None, maximum = None, inclusive = (true, true), reverse = false))]
    fn irange(
        slf: &Bound<'_, Self>,
        minimum: Option<&Bound<'_, PyAny>>,
        maximum: Option<&Bound<'_, PyAny>>,
        inclusive: (bool, bool),
        reverse: bool,
    ) -> PyResult<MapIter> {
        let m = map(slf);
        m.store.ordered()?;
        let lo = bound(m, minimum, inclusive.0)?;
        let hi = bound(m, maximum, inclusive.1)?;
        let cursor = Cursor::range(&m.store.index, as_bound(&lo), as_bound(&hi));
        Ok(m.iter_of(cursor, What::Keys, reverse))
    }

    /// With no argument, a view of the pairs (as `dict.items()`). With any argument, the
    /// list of `(key, value)` pairs with `start <= key < stop` (`None`: unbounded),
    /// ascending or descending (`reverse`), at most `limit`, collected with the GIL
    /// released.
    #[pyo3(signature = (start = None, stop = None, reverse = None, *, limit = None))]
    fn items<'py>(
        slf: &Bound<'py, Self>,
        start: Option<&Bound<'py, PyAny>>,
        stop: Option<&Bound<'py, PyAny>>,
        reverse: Option<bool>,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if start.is_none() && stop.is_none() && reverse.is_none() && limit.is_none() {
            return Map::items(slf.as_super());
        }
        let m = map(slf);
        let lo = bound(m, start, true)?;
        let hi = bound(m, stop, false)?;
        let py = slf.py();
        let batch = bulk::collect_range(
            py,
            &m.store,
            as_bound(&lo),
            as_bound(&hi),
            reverse.unwrap_or(false),
            limit.unwrap_or(usize::MAX),
        )?;
        Ok(bulk::pair_list(py, &batch, m.store.str_keys)?.into_any())
    }

    /// The `(key, value)` pairs whose key starts with `prefix`, ascending (descending when
    /// `reverse`).
    #[pyo3(signature = (prefix, reverse = false))]
    fn prefix(
        slf: &Bound<'_, Self>,
        prefix: &Bound<'_, PyAny>,
        reverse: bool,
    ) -> PyResult<MapIter> {
        let m = map(slf);
        m.store.ordered()?;
        let p = m.store.key(prefix)?;
        let end = prefix_successor(&p);
        let hi = match &end {
            Some(e) => ops::Bound::Excluded(e.as_slice()),
            None => ops::Bound::Unbounded,
        };
        let cursor = Cursor::range(&m.store.index, ops::Bound::Included(&p), hi);
        Ok(m.iter_of(cursor, What::Items, reverse))
    }

    /// The `(key, value)` pair at position `index` of the key order (`0` first, `-1` last;
    /// other positions walk from the nearer end, `O(|index|)`); `IndexError` out of range.
    #[pyo3(signature = (index = -1))]
    fn peekitem<'py>(slf: &Bound<'py, Self>, index: isize) -> PyResult<Bound<'py, PyTuple>> {
        let m = map(slf);
        let py = slf.py();
        let Some((k, v)) = pair_at(m, index)? else {
            return Err(PyIndexError::new_err("peekitem index out of range"));
        };
        PyTuple::new(
            py,
            [m.store.key_to_py(py, &k)?, convert::value_to_py(py, &v)],
        )
    }

    /// Removes and returns the pair at position `index` (`-1`: the last, `0`: the first),
    /// atomically per key; `KeyError` when empty, `IndexError` past the ends.
    #[pyo3(signature = (index = -1))]
    fn popitem<'py>(slf: &Bound<'py, Self>, index: isize) -> PyResult<Bound<'py, PyTuple>> {
        let m = map(slf);
        let py = slf.py();
        if m.store.index.ordered().is_none() && index == -1 {
            // An Slb over Mercury: `popitem()` as the unordered maps have it.
            return m.popitem(py);
        }
        m.writable()?;
        loop {
            let Some((k, _)) = pair_at(m, index)? else {
                if m.store.index.kv().is_empty() {
                    return Err(PyKeyError::new_err("popitem(): the map is empty"));
                }
                return Err(PyIndexError::new_err("popitem index out of range"));
            };
            // Another thread may take the key first: then look again.
            if let Some(v) = m.store.take(&k)? {
                return PyTuple::new(
                    py,
                    [m.store.key_to_py(py, &k)?, convert::value_to_py(py, &v)],
                );
            }
        }
    }

    /// The smallest key `>= key`, or `None`.
    fn ceiling<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let m = map(slf);
        let k = m.store.key(key)?;
        let mut found = None;
        m.store
            .ordered()?
            .scan(ops::Bound::Included(&k), &mut |k, _| {
                found = Some(k.to_vec());
                ControlFlow::Break(())
            });
        found.map(|k| m.store.key_to_py(slf.py(), &k)).transpose()
    }

    /// The largest key `<= key`, or `None`.
    fn floor<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let m = map(slf);
        let k = m.store.key(key)?;
        let mut found = None;
        m.store
            .ordered()?
            .scan_rev(ops::Bound::Included(&k), &mut |k, _| {
                found = Some(k.to_vec());
                ControlFlow::Break(())
            });
        found.map(|k| m.store.key_to_py(slf.py(), &k)).transpose()
    }

    /// Removes every key with `start <= key < stop` (`None`: unbounded), with the GIL
    /// released; how many were removed (an empty or inverted range removes nothing). Not atomic: a key inserted into the range meanwhile
    /// may survive.
    #[pyo3(signature = (start = None, stop = None))]
    fn delete_range(
        slf: &Bound<'_, Self>,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let m = map(slf);
        m.writable()?;
        m.store.ordered()?;
        let lo = bound(m, start, true)?;
        let hi = bound(m, stop, false)?;
        let (lo, hi) = (as_bound(&lo), as_bound(&hi));
        let index = &m.store.index;
        Ok(slf.py().detach(|| index.remove_range(lo, hi)))
    }
}
