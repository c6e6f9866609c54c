//! [`Map`]: the base class of every map, with the mapping protocol as `dict` has it, the
//! bulk operations, memory accounting, copying and pickling.
//!
//! # Threads
//!
//! A map is a frozen Python object over an [`Index`] shared by `Arc`: every method takes
//! `&self` and may be called from any Python thread at any time, with the Rust structure's
//! guarantees (point operations linearizable, iteration not a snapshot: see
//! `orrery::api`). The GIL and the structures' locks cannot deadlock, because:
//!
//! 1. no Python code runs, and the GIL is never waited for, while a structure's lock or
//!    guard is held: closures given to the structure copy bytes or make a `bytes` object
//!    (an allocation that runs no Python code and waits for nothing);
//! 2. so a structure's lock is only ever held by a thread that will release it without
//!    needing the GIL, and a thread holding the GIL that waits for one (a point operation)
//!    waits for a bounded stretch of Rust work;
//! 3. the bulk operations release the GIL for their whole structure work (`crate::bulk`),
//!    and iterators hold no lock between calls (`crate::cursor`).
//!
//! Point operations (`m[k]`, `m[k] = v`, `get`, `pop`, …) keep the GIL: releasing and
//! retaking it costs more than the operation. Bulk operations release it per chunk.
//!
//! # An SLB's structure
//!
//! `Slb(inner)` takes over `inner`: every write must go through the SLB to keep its cache
//! coherent, so writes through `inner` raise `RuntimeError` from then on; reads and
//! iteration through `inner` stay allowed (they see every write made through the SLB).

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::PyTraverseError;
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyTypeError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyTuple, PyType};

use crate::bulk;
use crate::config;
use crate::convert;
use crate::cursor::Cursor;
use crate::index::Index;
use crate::iter::{MapIter, What};
use crate::store::Store;

/// Pairs shown by `repr` before it abbreviates.
const REPR_ITEMS: usize = 16;

/// The base class of every map: the mapping protocol, bulk operations, memory, copying and
/// pickling (see the module docs). Not constructed directly: use a structure's class.
#[pyclass(module = "orrery", subclass, frozen, mapping, weakref)]
pub struct Map {
    /// The structure and its key type.
    pub(crate) store: Store,
    /// Set once an `Slb` wraps this map: writes must then go through the `Slb`.
    wrapped: AtomicBool,
    /// For an `Slb`: the Python map it wraps.
    pub(crate) inner: Option<Py<PyAny>>,
}

impl Map {
    /// A map over `index`.
    pub(crate) fn new(index: Index, str_keys: bool, inner: Option<Py<PyAny>>) -> Map {
        Map {
            store: Store { index, str_keys },
            wrapped: AtomicBool::new(false),
            inner,
        }
    }

    /// `RuntimeError` once an `Slb` wraps this map.
    #[inline]
    pub(crate) fn writable(&self) -> PyResult<()> {
        if self.wrapped.load(Ordering::Relaxed) {
            return Err(PyRuntimeError::new_err(format!(
                "this {} is wrapped by an Slb: write through the Slb (a write here would \
                 leave the Slb's cache stale)",
                self.store.index.class_name()
            )));
        }
        Ok(())
    }

    /// Marks this map as wrapped by an `Slb`; `ValueError` if it already is.
    pub(crate) fn wrap(&self) -> PyResult<()> {
        if self.wrapped.swap(true, Ordering::Relaxed) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "this map is already wrapped by an Slb",
            ));
        }
        Ok(())
    }

    /// An iterator object over this map.
    pub(crate) fn iter_of(&self, cursor: Cursor, what: What, back: bool) -> MapIter {
        MapIter::new(cursor, what, back, self.store.str_keys)
    }

    /// The value of `key` as `bytes`, `None` when absent.
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let k = self.store.key(key)?;
        let mut out = None;
        self.store
            .index
            .kv()
            .get_with(&k, &mut |v| out = Some(convert::value_to_py(py, v)));
        Ok(out)
    }
}

/// One of the view classes of `orrery._views`, imported once.
fn view_class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
) -> PyResult<Bound<'py, PyType>> {
    cell.import(py, "orrery._views", name).cloned()
}

/// `collections.abc.Mapping`, imported once.
fn is_mapping(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static MAPPING: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let abc = MAPPING.import(obj.py(), "collections.abc", "Mapping")?;
    obj.is_instance(abc)
}

/// A function of the `orrery` package (the pickle reconstructors).
fn package_fn<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("orrery")?.getattr(name)
}

#[pymethods]
impl Map {
    /// Maps are mutable: not hashable.
    #[classattr]
    const __hash__: Option<Py<PyAny>> = None;

    /// The garbage collector's view: an `Slb` refers to the map it wraps (a reference that
    /// never changes, so the cycles it closes are broken elsewhere, e.g. by clearing the
    /// `__dict__` of a subclass instance).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(inner) = &self.inner {
            visit.call(inner)?;
        }
        Ok(())
    }

    /// `Wormhole[bytes]`, `Wormhole[str]` in annotations evaluated at run time: the class.
    #[classmethod]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        _key_type: &Bound<'py, PyAny>,
    ) -> Bound<'py, PyType> {
        cls.clone()
    }

    /// Number of keys.
    fn __len__(&self) -> usize {
        self.store.index.kv().len()
    }

    /// Whether `key` is present.
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.store.index.kv().contains_key(&self.store.key(key)?))
    }

    /// The value of `key`; `KeyError` when absent.
    fn __getitem__<'py>(&self, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        match self.lookup(key.py(), key)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// Inserts or replaces; `ValueError` over the limits, `MemoryError` out of memory.
    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.writable()?;
        let k = self.store.key(key)?;
        let v = convert::value(value)?;
        self.store
            .index
            .kv()
            .insert(&k, &v)
            .map_err(convert::error)?;
        Ok(())
    }

    /// Removes `key`; `KeyError` when absent.
    fn __delitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.writable()?;
        if self.store.index.kv().remove(&self.store.key(key)?) {
            Ok(())
        } else {
            Err(PyKeyError::new_err(key.clone().unbind()))
        }
    }

    /// The keys (ascending for ordered maps, in no order for Mercury).
    fn __iter__(&self) -> MapIter {
        self.iter_of(Cursor::all(&self.store.index), What::Keys, false)
    }

    /// Iterator behind the views: `what` 0 keys, 1 values, 2 items; `reverse` descends.
    fn _iter(&self, what: u8, reverse: bool) -> PyResult<MapIter> {
        if reverse && self.store.index.ordered().is_none() {
            return Err(PyTypeError::new_err(
                "a Mercury table has no order to reverse",
            ));
        }
        Ok(self.iter_of(
            Cursor::all(&self.store.index),
            What::from_code(what)?,
            reverse,
        ))
    }

    /// The value of `key`, or `default` when absent.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(self.lookup(key.py(), key)?.or(default))
    }

    /// Removes `key` and returns its value (atomically); `default` when absent if given,
    /// else `KeyError`.
    #[pyo3(signature = (key, *default))]
    fn pop<'py>(
        &self,
        key: &Bound<'py, PyAny>,
        default: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.writable()?;
        if default.len() > 1 {
            return Err(PyTypeError::new_err("pop expected at most 2 arguments"));
        }
        match self.store.take(&self.store.key(key)?)? {
            Some(v) => Ok(convert::value_to_py(key.py(), &v)),
            None if default.len() == 1 => default.get_item(0),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// Removes and returns some `(key, value)` pair (Mercury: the first its table walk
    /// finds); `KeyError` when empty. Ordered maps override this with `popitem(index=-1)`.
    pub(crate) fn popitem<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.writable()?;
        loop {
            let Some(e) = Cursor::all(&self.store.index).next(false) else {
                return Err(PyKeyError::new_err("popitem(): the map is empty"));
            };
            // Another thread may take the key first: then try the next one.
            if let Some(v) = self.store.take(e.key())? {
                let k = self.store.key_to_py(py, e.key())?;
                return PyTuple::new(py, [k, convert::value_to_py(py, &v)]);
            }
        }
    }

    /// The value of `key`; when absent, stores `default` (which must then be bytes-like)
    /// and returns it. Atomic: of two threads calling it on an absent key, both get the
    /// value of the one that stored first.
    #[pyo3(signature = (key, default = None))]
    fn setdefault<'py>(
        &self,
        key: &Bound<'py, PyAny>,
        default: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.writable()?;
        let py = key.py();
        if let Some(v) = self.lookup(py, key)? {
            return Ok(v);
        }
        let k = self.store.key(key)?;
        let Some(default) = default else {
            return Err(PyTypeError::new_err(
                "setdefault of an absent key needs a bytes-like default (values are bytes)",
            ));
        };
        let d = convert::value(default)?;
        let mut now: Option<Vec<u8>> = None;
        self.store
            .index
            .kv()
            .compute_with(&k, &mut |old| {
                let v = old.unwrap_or(&d).to_vec();
                now = Some(v.clone());
                Some(v)
            })
            .map_err(convert::error)?;
        Ok(convert::value_to_py(py, &now.unwrap_or_default()))
    }

    /// Stores the pairs of `other` (a mapping, or an iterable of pairs) and of `kwargs`
    /// (str keys: `str_keys` maps only), with the GIL released per chunk.
    #[pyo3(signature = (other = None, **kwargs))]
    fn update(
        &self,
        py: Python<'_>,
        other: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        self.writable()?;
        if let Some(other) = other {
            bulk::store(py, &self.store, &bulk::pairs_of(other)?)?;
        }
        if let Some(kw) = kwargs.filter(|k| !k.is_empty()) {
            if !self.store.str_keys {
                return Err(PyTypeError::new_err(
                    "keyword arguments are str keys: only for maps made with str_keys=True",
                ));
            }
            bulk::store(py, &self.store, kw.items().as_any())?;
        }
        Ok(())
    }

    /// Removes every key (with the GIL released). Not atomic: keys inserted by other
    /// threads meanwhile may survive.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.writable()?;
        let index = &self.store.index;
        py.detach(|| index.clear());
        Ok(())
    }

    /// A view of the keys (a `collections.abc.KeysView`).
    fn keys<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
        view_class(slf.py(), &CLASS, "KeysView")?.call1((slf,))
    }

    /// A view of the values (a `collections.abc.ValuesView`).
    fn values<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
        view_class(slf.py(), &CLASS, "ValuesView")?.call1((slf,))
    }

    /// A view of the `(key, value)` pairs (a `collections.abc.ItemsView`).
    pub(crate) fn items<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
        view_class(slf.py(), &CLASS, "ItemsView")?.call1((slf,))
    }

    /// `==` and `!=` against any mapping: the same keys with equal values.
    fn __richcmp__<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        op: CompareOp,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let want = match op {
            CompareOp::Eq => true,
            CompareOp::Ne => false,
            _ => return Ok(py.NotImplemented().into_bound(py)),
        };
        if !is_mapping(other)? {
            return Ok(py.NotImplemented().into_bound(py));
        }
        let same = slf.is(other) || equal(slf.get(), other)?;
        Ok(PyBool::new(py, same == want).to_owned().into_any())
    }

    /// `Name({k: v, …})`, abbreviated past 16 pairs; an `Slb` shows the map it wraps.
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let this = slf.get();
        let name = slf.get_type().name()?.to_string();
        if let Some(inner) = &this.inner {
            return Ok(format!("{name}({})", inner.bind(slf.py()).repr()?));
        }
        let py = slf.py();
        let mut cursor = Cursor::all(&this.store.index);
        let mut parts = Vec::new();
        while let Some(e) = cursor.next(false) {
            if parts.len() == REPR_ITEMS {
                let rest = this.store.index.kv().len().saturating_sub(REPR_ITEMS);
                parts.push(format!("... <{rest} more>"));
                break;
            }
            let k = this.store.key_to_py(py, e.key())?.repr()?;
            let v = convert::value_to_py(py, e.value()).repr()?;
            parts.push(format!("{k}: {v}"));
        }
        let flag = if this.store.str_keys {
            ", str_keys=True"
        } else {
            ""
        };
        Ok(format!("{name}({{{}}}{flag})", parts.join(", ")))
    }

    /// The values of `keys` in order (`default` for absent keys), looked up with the GIL
    /// released through the structure's batched lookup.
    #[pyo3(signature = (keys, default = None))]
    fn get_many<'py>(
        &self,
        keys: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = keys.py();
        let default = default.unwrap_or_else(|| py.None().into_bound(py));
        Ok(bulk::get_many(py, &self.store, keys, &default)?.into_any())
    }

    /// Stores the pairs of a mapping or an iterable of pairs, with the GIL released per
    /// chunk; how many keys were new.
    fn set_many(&self, py: Python<'_>, pairs: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.writable()?;
        bulk::store(py, &self.store, &bulk::pairs_of(pairs)?)
    }

    /// Stores the `(key, value)` pairs an iterable yields (a generator, a reader: taken a
    /// chunk at a time), with the GIL released per chunk; how many keys were new.
    fn load(&self, py: Python<'_>, iterable: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.writable()?;
        bulk::store(py, &self.store, iterable)
    }

    /// Removes the keys of `keys`, with the GIL released per chunk; how many were present.
    fn delete_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.writable()?;
        bulk::delete_many(py, &self.store, keys)
    }

    /// Bytes the structure holds (an `Slb`: its cache and the structure it wraps);
    /// `detail=True` gives `{"structure_bytes": …, "key_value_bytes": …}`.
    #[pyo3(signature = (detail = false))]
    fn memory_usage<'py>(&self, py: Python<'py>, detail: bool) -> PyResult<Bound<'py, PyAny>> {
        let m = self.store.index.memory_usage();
        if !detail {
            return Ok(m.total().into_pyobject(py)?.into_any());
        }
        let d = PyDict::new(py);
        d.set_item("structure_bytes", m.structure_bytes)?;
        d.set_item("key_value_bytes", m.key_value_bytes)?;
        Ok(d.into_any())
    }

    /// `memory_usage()` plus the Python object itself.
    fn __sizeof__(&self) -> usize {
        self.store.index.memory_usage().total() + std::mem::size_of::<Map>() + 16
    }

    /// The constructor's keyword arguments that made this map (an `Slb`: its own).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if let Some(c) = self.store.index.slb_config() {
            return config::slb_to_dict(py, c);
        }
        let d = config::to_dict(py, &self.store.index.config())?;
        d.set_item("str_keys", self.store.str_keys)?;
        Ok(d)
    }

    /// Whether keys are `str` (UTF-8) rather than bytes.
    #[getter]
    fn str_keys(&self) -> bool {
        self.store.str_keys
    }

    /// A new map of the same class and configuration holding the same pairs (copied with
    /// the GIL released); an `Slb`'s copy wraps a copy of its map.
    fn copy<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let cls = slf.get_type();
        if let Some(inner) = &this.inner {
            let inner_copy = inner.bind(py).call_method0("copy")?;
            return cls.call((inner_copy,), Some(&this.config(py)?));
        }
        let new = cls.call((), Some(&this.config(py)?))?;
        let target = new.cast::<Map>()?.get();
        bulk::copy_into(py, &this.store.index, &target.store.index)?;
        Ok(new)
    }

    /// `copy.copy(m)`: [`Map::copy`].
    fn __copy__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::copy(slf)
    }

    /// `copy.deepcopy(m)`: [`Map::copy`] (keys and values are immutable bytes).
    fn __deepcopy__<'py>(
        slf: &Bound<'py, Self>,
        _memo: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Self::copy(slf)
    }

    /// Pickling: `orrery._restore(cls, config, pairs)` (the pairs in one `bytes`, dumped
    /// with the GIL released); an `Slb`: `orrery._restore_slb(cls, inner, config)`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let this = slf.get();
        let cls = slf.get_type().into_any();
        let config = this.config(py)?.into_any();
        if let Some(inner) = &this.inner {
            let args = PyTuple::new(py, [cls, inner.bind(py).clone(), config])?;
            return PyTuple::new(py, [package_fn(py, "_restore_slb")?, args.into_any()]);
        }
        let blob = bulk::dump(py, &this.store.index).into_any();
        let args = PyTuple::new(py, [cls, config, blob])?;
        PyTuple::new(py, [package_fn(py, "_restore")?, args.into_any()])
    }

    /// Stores the pairs of a pickled form (`__reduce__`'s `bytes`).
    fn _load_dump(&self, py: Python<'_>, blob: &Bound<'_, PyBytes>) -> PyResult<usize> {
        self.writable()?;
        bulk::load_dump(py, &self.store, blob.as_bytes())
    }
}

/// Whether `map` and the mapping `other` hold the same keys with equal values.
fn equal(map: &Map, other: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = other.py();
    if other.len()? != map.store.index.kv().len() {
        return Ok(false);
    }
    let mut cursor = Cursor::all(&map.store.index);
    while let Some(e) = cursor.next(false) {
        let k = map.store.key_to_py(py, e.key())?;
        let theirs = match other.get_item(&k) {
            Ok(v) => v,
            Err(err) if err.is_instance_of::<PyKeyError>(py) => return Ok(false),
            Err(err) => return Err(err),
        };
        if !theirs.eq(convert::value_to_py(py, e.value()))? {
            return Ok(false);
        }
    }
    Ok(true)
}
