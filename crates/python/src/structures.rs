//! The classes users construct: `Wormhole`, `CuckooTrie`, `Hyperion` (ordered maps),
//! `Mercury` (a hash map) and `Slb(inner)` (a lookaside cache over one of them).
//!
//! Each constructor takes its structure's configuration as keyword arguments (the names
//! of the Rust `Config` fields, validated by its builder: `crate::config`), `str_keys`, and
//! optionally initial data (a mapping or an iterable of pairs, loaded with the GIL
//! released).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::bulk;
use crate::config::{self, SlbArgs};
use crate::convert::config_error;
use crate::index::{self, Index};
use crate::map::Map;
use crate::ordered::OrderedMap;

/// A map over a new structure with `config`, loaded with `data`.
fn make(
    py: Python<'_>,
    config: index::Config,
    str_keys: bool,
    data: Option<&Bound<'_, PyAny>>,
) -> PyResult<Map> {
    let index = Index::build(config).map_err(config_error)?;
    let map = Map::new(index, str_keys, None);
    if let Some(data) = data {
        bulk::store(py, &map.store, &bulk::pairs_of(data)?)?;
    }
    Ok(map)
}

/// An ordered map on Wormhole: B+-tree leaves under a hashed MetaTrie of anchors,
/// `O(log L)` lookups in the key length.
#[pyclass(module = "orrery", extends = OrderedMap, subclass, frozen)]
pub struct Wormhole;

#[pymethods]
impl Wormhole {
    #[new]
    #[pyo3(signature = (data = None, *, leaf_capacity = None, prefault = None, prefetch_items = None, str_keys = false))]
    fn new(
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        leaf_capacity: Option<&Bound<'_, PyAny>>,
        prefault: Option<&Bound<'_, PyAny>>,
        prefetch_items: Option<&Bound<'_, PyAny>>,
        str_keys: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let config = config::wormhole(leaf_capacity, prefault, prefetch_items)?;
        let map = make(py, config, str_keys, data)?;
        Ok(PyClassInitializer::from(map)
            .add_subclass(OrderedMap)
            .add_subclass(Wormhole))
    }
}

/// An ordered map on the Cuckoo Trie: trie nodes in a key-eliminating cuckoo hash table,
/// laid out so that a lookup's memory reads overlap.
#[pyclass(module = "orrery", extends = OrderedMap, subclass, frozen)]
pub struct CuckooTrie;

#[pymethods]
impl CuckooTrie {
    #[new]
    #[pyo3(signature = (data = None, *, symbol_bits = None, prefetch_depth = None, initial_buckets = None, str_keys = false))]
    fn new(
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        symbol_bits: Option<&Bound<'_, PyAny>>,
        prefetch_depth: Option<&Bound<'_, PyAny>>,
        initial_buckets: Option<&Bound<'_, PyAny>>,
        str_keys: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let config = config::cuckoo_trie(symbol_bits, prefetch_depth, initial_buckets)?;
        let map = make(py, config, str_keys, data)?;
        Ok(PyClassInitializer::from(map)
            .add_subclass(OrderedMap)
            .add_subclass(CuckooTrie))
    }
}

/// An ordered map on Hyperion: a memory-dense trie of exact-fit containers with its own
/// memory manager.
#[pyclass(module = "orrery", extends = OrderedMap, subclass, frozen)]
pub struct Hyperion;

#[pymethods]
impl Hyperion {
    #[new]
    #[pyo3(signature = (data = None, *, arenas = None, eject_threshold = None, preprocess = None, str_keys = false))]
    fn new(
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        arenas: Option<&Bound<'_, PyAny>>,
        eject_threshold: Option<&Bound<'_, PyAny>>,
        preprocess: Option<&Bound<'_, PyAny>>,
        str_keys: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let config = config::hyperion(arenas, eject_threshold, preprocess)?;
        let map = make(py, config, str_keys, data)?;
        Ok(PyClassInitializer::from(map)
            .add_subclass(OrderedMap)
            .add_subclass(Hyperion))
    }
}

/// A hash map on Mercury: a concurrent chained hash table with in-bucket locks and
/// incremental expansion. Iteration is in no particular order.
#[pyclass(module = "orrery", extends = Map, subclass, frozen)]
pub struct Mercury;

#[pymethods]
impl Mercury {
    #[new]
    #[pyo3(signature = (data = None, *, initial_buckets = None, load_percent = None, expansion = None, migrate_run = None, prefault = None, str_keys = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        initial_buckets: Option<&Bound<'_, PyAny>>,
        load_percent: Option<&Bound<'_, PyAny>>,
        expansion: Option<&Bound<'_, PyAny>>,
        migrate_run: Option<&Bound<'_, PyAny>>,
        prefault: Option<&Bound<'_, PyAny>>,
        str_keys: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let config = config::mercury(
            initial_buckets,
            load_percent,
            expansion,
            migrate_run,
            prefault,
        )?;
        let map = make(py, config, str_keys, data)?;
        Ok(PyClassInitializer::from(map).add_subclass(Mercury))
    }
}

/// A Search Lookaside Buffer over `inner` (a Wormhole, CuckooTrie, Hyperion or Mercury
/// map): a cache of hot lookups in front of it. The Slb takes `inner` over: writes go
/// through the Slb (writes through `inner` raise `RuntimeError`), reads through either.
/// The ordered operations need an ordered `inner` (`TypeError` over Mercury). Wrap a map
/// no other thread is writing to at that moment (a bulk write already under way through
/// `inner` would finish unseen by the cache).
#[pyclass(module = "orrery", extends = OrderedMap, subclass, frozen)]
pub struct Slb;

#[pymethods]
impl Slb {
    #[new]
    #[pyo3(signature = (inner, *, cache_table_bytes = None, log_table_ratio = None, admission_threshold = None, warm_admission_threshold = None, log_sample_rate = None, stripes = None, max_item_bytes = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        inner: &Bound<'_, PyAny>,
        cache_table_bytes: Option<&Bound<'_, PyAny>>,
        log_table_ratio: Option<&Bound<'_, PyAny>>,
        admission_threshold: Option<&Bound<'_, PyAny>>,
        warm_admission_threshold: Option<&Bound<'_, PyAny>>,
        log_sample_rate: Option<&Bound<'_, PyAny>>,
        stripes: Option<&Bound<'_, PyAny>>,
        max_item_bytes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let wrapped = inner.cast::<Map>().map_err(|_| {
            PyTypeError::new_err(
                "Slb wraps an orrery map: a Wormhole, CuckooTrie, Hyperion or Mercury",
            )
        })?;
        let wrapped = wrapped.get();
        if wrapped.inner.is_some() {
            return Err(PyTypeError::new_err("an Slb cannot wrap another Slb"));
        }
        let config = config::slb(SlbArgs {
            cache_table_bytes,
            log_table_ratio,
            admission_threshold,
            warm_admission_threshold,
            log_sample_rate,
            stripes,
            max_item_bytes,
        })?;
        let index = Index::slb(wrapped.store.index.clone(), config).map_err(config_error)?;
        wrapped.wrap()?;
        let map = Map::new(index, wrapped.store.str_keys, Some(inner.clone().unbind()));
        Ok(PyClassInitializer::from(map)
            .add_subclass(OrderedMap)
            .add_subclass(Slb))
    }

    /// The map this Slb wraps.
    #[getter]
    fn inner(slf: &Bound<'_, Self>) -> Option<Py<PyAny>> {
        let map: &Map = slf.as_super().as_super().get();
        map.inner.as_ref().map(|i| i.clone_ref(slf.py()))
    }

    /// The cache's counters: hits, misses, admissions, evictions, … and `hit_ratio`.
    fn stats<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let map: &Map = slf.as_super().as_super().get();
        let s = match &map.store.index {
            Index::SlbOrdered(s, _) => s.stats(),
            Index::SlbHash(s, _) => s.stats(),
            _ => unreachable!("an Slb object holds an SLB"),
        };
        let d = PyDict::new(slf.py());
        d.set_item("hits", s.hits)?;
        d.set_item("misses", s.misses)?;
        d.set_item("logged", s.logged)?;
        d.set_item("admissions", s.admissions)?;
        d.set_item("evictions", s.evictions)?;
        d.set_item("invalidations", s.invalidations)?;
        d.set_item("updates", s.updates)?;
        d.set_item("emit_conflicts", s.emit_conflicts)?;
        d.set_item("cached_items", s.cached_items)?;
        d.set_item("capacity", s.capacity)?;
        d.set_item("record_bytes", s.record_bytes)?;
        d.set_item("hit_ratio", s.hit_ratio())?;
        Ok(d)
    }
}
