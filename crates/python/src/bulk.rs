//! The bulk operations, which release the GIL while the structure works: `get_many`,
//! `set_many`/`load`/`update`, `delete_many`, range collection, copying and the pickled
//! form.
//!
//! Each takes its input from Python in chunks of [`CHUNK`] items with the GIL held
//! (references to the argument objects plus their bytes: borrowed from `bytes`, copied from
//! anything mutable, see `crate::convert`), then detaches from the interpreter
//! (`Python::detach`) for the structure's work on that chunk, then converts the results to
//! Python objects with the GIL held again. While detached, only Rust data is touched: the
//! borrowed buffers belong to immutable `bytes` objects that the chunk's references keep
//! alive, and the structure's locks are taken and released inside the detached part, so
//! no structure lock is ever held by a thread that waits for the GIL (the argument against
//! deadlock is in `crate::map`, "Threads").
//!
//! Writes are not atomic as a whole: on an error (a key or value over the limits, out of
//! memory, an argument of the wrong type), the pairs before the failing one are stored and
//! the error is raised; the failing one and those after it are not.

use std::ops::{self, ControlFlow};

use orrery::Entry;
use orrery::batch::PairBatch;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::convert::{self, Bytes};
use crate::cursor::Cursor;
use crate::index::Index;
use crate::store::Store;

/// Items taken from Python per detached stretch of work.
pub(crate) const CHUNK: usize = 16 * 1024;

/// `get_many(keys, default)`: the values of `keys` in order, `default` for absent keys,
/// through the structure's batched lookup.
pub(crate) fn get_many<'py>(
    py: Python<'py>,
    store: &Store,
    keys: &Bound<'py, PyAny>,
    default: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let mut out: Vec<Bound<'py, PyAny>> = Vec::new();
    let mut objs: Vec<Bound<'py, PyAny>> = Vec::with_capacity(CHUNK.min(1024));
    let mut values: Vec<u8> = Vec::new();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut iter = keys.try_iter()?;
    loop {
        objs.clear();
        for item in iter.by_ref().take(CHUNK) {
            objs.push(item?);
        }
        if objs.is_empty() {
            break;
        }
        let bytes: Vec<Bytes<'_>> = objs.iter().map(|o| store.key(o)).collect::<PyResult<_>>()?;
        let slices: Vec<&[u8]> = bytes.iter().map(|b| &**b).collect();
        values.clear();
        spans.clear();
        py.detach(|| {
            store.index.kv().get_many(&slices, &mut |_, v| match v {
                Some(v) => {
                    let a = values.len();
                    values.extend_from_slice(v);
                    spans.push((a, values.len()));
                }
                None => spans.push((usize::MAX, 0)),
            })
        });
        out.reserve(spans.len());
        for &(a, b) in &spans {
            out.push(if a == usize::MAX {
                default.clone()
            } else {
                PyBytes::new(py, &values[a..b]).into_any()
            });
        }
        if objs.len() < CHUNK {
            break;
        }
    }
    PyList::new(py, out)
}

/// The pairs a `set_many`/`update` argument holds: a `dict`'s items, a mapping's
/// `items()`, or the argument itself as an iterable of pairs.
pub(crate) fn pairs_of<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(d) = obj.cast::<PyDict>() {
        return Ok(d.items().into_any());
    }
    if obj.hasattr("items")? && !obj.is_instance_of::<PyList>() {
        return obj.call_method0("items");
    }
    Ok(obj.clone())
}

/// Stores every pair of the iterable `pairs` (2-item sequences of key and value); how many
/// keys were new.
pub(crate) fn store<'py>(
    py: Python<'py>,
    store: &Store,
    pairs: &Bound<'py, PyAny>,
) -> PyResult<usize> {
    let mut new = 0usize;
    let mut objs: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = Vec::new();
    let mut iter = pairs.try_iter()?;
    loop {
        objs.clear();
        let mut failed: Option<PyErr> = None;
        for item in iter.by_ref().take(CHUNK) {
            match item.and_then(|p| pair(&p)) {
                Ok(p) => objs.push(p),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let mut bytes: Vec<(Bytes<'_>, Bytes<'_>)> = Vec::with_capacity(objs.len());
        for (k, v) in &objs {
            match store.key(k).and_then(|k| Ok((k, convert::value(v)?))) {
                Ok(p) => bytes.push(p),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let kv = store.index.kv();
        let stored = py.detach(|| -> orrery::Result<usize> {
            let mut n = 0;
            for (k, v) in &bytes {
                n += usize::from(kv.insert(k, v)?);
            }
            Ok(n)
        });
        new += stored.map_err(convert::error)?;
        if let Some(e) = failed {
            return Err(e);
        }
        if objs.len() < CHUNK {
            return Ok(new);
        }
    }
}

/// A key-value pair from Python: a 2-item tuple or any 2-item iterable.
fn pair<'py>(p: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    if let Ok(t) = p.cast::<PyTuple>() {
        if t.len() == 2 {
            return Ok((t.get_item(0)?, t.get_item(1)?));
        }
    } else if let Ok(mut it) = p.try_iter()
        && let (Some(k), Some(v), None) = (it.next(), it.next(), it.next())
    {
        return Ok((k?, v?));
    }
    Err(PyTypeError::new_err(
        "set_many/update/load take (key, value) pairs or a mapping",
    ))
}

/// Removes every key of `keys`; how many were present.
pub(crate) fn delete_many<'py>(
    py: Python<'py>,
    store: &Store,
    keys: &Bound<'py, PyAny>,
) -> PyResult<usize> {
    let mut removed = 0;
    let mut objs: Vec<Bound<'py, PyAny>> = Vec::new();
    let mut iter = keys.try_iter()?;
    loop {
        objs.clear();
        for item in iter.by_ref().take(CHUNK) {
            objs.push(item?);
        }
        let mut failed = None;
        let mut bytes: Vec<Bytes<'_>> = Vec::with_capacity(objs.len());
        for o in &objs {
            match store.key(o) {
                Ok(b) => bytes.push(b),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let kv = store.index.kv();
        removed += py.detach(|| bytes.iter().filter(|k| kv.remove(k)).count());
        if let Some(e) = failed {
            return Err(e);
        }
        if objs.len() < CHUNK {
            return Ok(removed);
        }
    }
}

/// The pairs of an ordered index between `lo` and `hi`, ascending (descending when
/// `reverse`), at most `limit`, copied with the GIL released.
pub(crate) fn collect_range(
    py: Python<'_>,
    store: &Store,
    lo: ops::Bound<&[u8]>,
    hi: ops::Bound<&[u8]>,
    reverse: bool,
    limit: usize,
) -> PyResult<PairBatch> {
    let ordered = store.ordered()?;
    let mut out = PairBatch::default();
    if limit == 0 {
        return Ok(out);
    }
    py.detach(|| {
        let mut visit = |k: &[u8], v: &[u8]| {
            out.push(k, v);
            if out.len() >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        if reverse {
            ordered.scan_rev(hi, &mut |k, v| {
                if above_start(k, lo) {
                    visit(k, v)
                } else {
                    ControlFlow::Break(())
                }
            });
        } else {
            ordered.scan_range(lo, hi, &mut visit);
        }
    });
    Ok(out)
}

/// Whether `key` lies at or above the lower bound `lo`.
pub(crate) fn above_start(key: &[u8], lo: ops::Bound<&[u8]>) -> bool {
    match lo {
        ops::Bound::Included(s) => key >= s,
        ops::Bound::Excluded(s) => key > s,
        ops::Bound::Unbounded => true,
    }
}

/// `[(key, value), …]` from a batch of copied pairs.
pub(crate) fn pair_list<'py>(
    py: Python<'py>,
    batch: &PairBatch,
    str_keys: bool,
) -> PyResult<Bound<'py, PyList>> {
    let mut items = Vec::with_capacity(batch.len());
    for i in 0..batch.len() {
        let (k, v) = batch.pair(i);
        let k = convert::key_to_py(py, k, str_keys)?;
        items.push(PyTuple::new(py, [k, convert::value_to_py(py, v)])?);
    }
    PyList::new(py, items)
}

/// Copies every pair of `from` into `to` with the GIL released; how many keys were new.
pub(crate) fn copy_into(py: Python<'_>, from: &Index, to: &Index) -> PyResult<usize> {
    py.detach(|| -> orrery::Result<usize> {
        let mut cursor = Cursor::all(from);
        let kv = to.kv();
        let mut n = 0;
        while let Some(e) = cursor.next(false) {
            n += usize::from(kv.insert(e.key(), e.value())?);
        }
        Ok(n)
    })
    .map_err(convert::error)
}

/// First bytes of the pickled form: name and format version.
const MAGIC: &[u8; 8] = b"ORRERY\x00\x01";

/// Every pair of `index` in the pickled form: [`MAGIC`], then per pair the key's and the
/// value's lengths (little-endian `u32`) and their bytes. Built with the GIL released.
pub(crate) fn dump<'py>(py: Python<'py>, index: &Index) -> Bound<'py, PyBytes> {
    let blob = py.detach(|| {
        let mut out = MAGIC.to_vec();
        let mut cursor = Cursor::all(index);
        let mut push = |e: Entry| {
            let (k, v) = e.pair();
            // Keys and values are at most 64 KiB and 1 MiB: their lengths fit a u32.
            out.extend_from_slice(&(k.len() as u32).to_le_bytes());
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(k);
            out.extend_from_slice(v);
        };
        while let Some(e) = cursor.next(false) {
            push(e);
        }
        out
    });
    PyBytes::new(py, &blob)
}

/// Stores the pairs of a pickled form made by [`dump`], with the GIL released; a
/// `ValueError` names what is wrong with a malformed one (the pairs before it are stored).
pub(crate) fn load_dump(py: Python<'_>, store: &Store, blob: &[u8]) -> PyResult<usize> {
    let bad = |what: &str| PyValueError::new_err(format!("not an orrery pickle: {what}"));
    let Some(mut rest) = blob.strip_prefix(&MAGIC[..]) else {
        return Err(bad("wrong header"));
    };
    if store.str_keys {
        // Keys come back as str: check them before storing anything.
        let mut r = rest;
        while !r.is_empty() {
            let (k, _, tail) = split_pair(r).ok_or_else(|| bad("truncated"))?;
            std::str::from_utf8(k).map_err(|_| bad("a key is not UTF-8 in a str_keys map"))?;
            r = tail;
        }
    }
    let kv = store.index.kv();
    py.detach(|| -> PyResult<usize> {
        let mut n = 0;
        while !rest.is_empty() {
            let (k, v, tail) = split_pair(rest).ok_or_else(|| bad("truncated"))?;
            n += usize::from(kv.insert(k, v).map_err(convert::error)?);
            rest = tail;
        }
        Ok(n)
    })
}

/// The first pair of a pickled form's body, and the rest.
fn split_pair(b: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let klen = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?) as usize;
    let vlen = u32::from_le_bytes(b.get(4..8)?.try_into().ok()?) as usize;
    let body = b.get(8..)?;
    if body.len() < klen.checked_add(vlen)? {
        return None;
    }
    let (k, body) = body.split_at(klen);
    let (v, rest) = body.split_at(vlen);
    Some((k, v, rest))
}
