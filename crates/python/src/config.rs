//! Keyword arguments of the constructors to the structures' `Config`s, and back to dicts.
//!
//! Each field is set through the structure's `Config::builder()` (so the Rust crate's
//! validation is the only one), after a type check of its own: a size must be an `int`
//! (`TypeError` otherwise) that is not negative (`ValueError`), a switch a `bool`. An
//! argument left out keeps the structure's default. `config()` returns the same names, so
//! that `type(m)(**m.config())` builds an empty map like `m` (what `copy()` and pickling
//! do).

use orrery::cuckoo_trie;
use orrery::hyperion;
use orrery::mercury::{self, Expansion};
use orrery::slb;
use orrery::wormhole;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use crate::convert::config_error;
use crate::index::Config;

/// A size argument: a non-negative `int`.
fn size(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    if !obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "`{name}` must be an int, not {}",
            obj.get_type().name()?
        )));
    }
    let v: i128 = obj.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "`{name}` must be a non-negative integer below 2**64"
        ))
    })?;
    usize::try_from(v).map_err(|_| {
        PyValueError::new_err(format!(
            "`{name}` must be a non-negative integer below 2**64, got {v}"
        ))
    })
}

/// A switch argument: a `bool`.
fn flag(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    obj.cast::<PyBool>().map(|b| b.is_true()).map_err(|_| {
        PyTypeError::new_err(format!(
            "`{name}` must be a bool, not {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

/// Sets a builder field from an optional argument, converted by `conv`.
macro_rules! set {
    ($b:ident, $arg:ident, $conv:expr) => {
        if let Some(v) = $arg {
            $b = $b.$arg($conv(stringify!($arg), v)?);
        }
    };
}

/// `Wormhole(leaf_capacity=, prefault=, prefetch_items=)`.
pub(crate) fn wormhole(
    leaf_capacity: Option<&Bound<'_, PyAny>>,
    prefault: Option<&Bound<'_, PyAny>>,
    prefetch_items: Option<&Bound<'_, PyAny>>,
) -> PyResult<Config> {
    let mut b = wormhole::Config::builder();
    set!(b, leaf_capacity, size);
    set!(b, prefault, flag);
    set!(b, prefetch_items, flag);
    Ok(Config::Wormhole(b.build().map_err(config_error)?))
}

/// `CuckooTrie(symbol_bits=, prefetch_depth=, initial_buckets=)`.
pub(crate) fn cuckoo_trie(
    symbol_bits: Option<&Bound<'_, PyAny>>,
    prefetch_depth: Option<&Bound<'_, PyAny>>,
    initial_buckets: Option<&Bound<'_, PyAny>>,
) -> PyResult<Config> {
    let mut b = cuckoo_trie::Config::builder();
    let small = |name: &str, v: &Bound<'_, PyAny>| -> PyResult<u32> {
        u32::try_from(size(name, v)?)
            .map_err(|_| PyValueError::new_err(format!("`{name}` must be below 2**32")))
    };
    set!(b, symbol_bits, small);
    set!(b, prefetch_depth, size);
    set!(b, initial_buckets, size);
    Ok(Config::CuckooTrie(b.build().map_err(config_error)?))
}

/// `Hyperion(arenas=, eject_threshold=, preprocess=)`.
pub(crate) fn hyperion(
    arenas: Option<&Bound<'_, PyAny>>,
    eject_threshold: Option<&Bound<'_, PyAny>>,
    preprocess: Option<&Bound<'_, PyAny>>,
) -> PyResult<Config> {
    let mut b = hyperion::Config::builder();
    set!(b, arenas, size);
    set!(b, eject_threshold, size);
    set!(b, preprocess, flag);
    Ok(Config::Hyperion(b.build().map_err(config_error)?))
}

/// `Mercury(initial_buckets=, load_percent=, expansion=, migrate_run=, prefault=)`.
pub(crate) fn mercury(
    initial_buckets: Option<&Bound<'_, PyAny>>,
    load_percent: Option<&Bound<'_, PyAny>>,
    expansion: Option<&Bound<'_, PyAny>>,
    migrate_run: Option<&Bound<'_, PyAny>>,
    prefault: Option<&Bound<'_, PyAny>>,
) -> PyResult<Config> {
    let mut b = mercury::Config::builder();
    let mode = |name: &str, v: &Bound<'_, PyAny>| -> PyResult<Expansion> {
        let s = v
            .cast::<PyString>()
            .map_err(|_| PyTypeError::new_err(format!("`{name}` must be a str")))?;
        match &*s.to_cow()? {
            "cooperative" => Ok(Expansion::Cooperative),
            "dedicated" => Ok(Expansion::Dedicated),
            other => Err(PyValueError::new_err(format!(
                "`{name}` must be 'cooperative' or 'dedicated', not {other:?}"
            ))),
        }
    };
    set!(b, initial_buckets, size);
    set!(b, load_percent, size);
    set!(b, expansion, mode);
    set!(b, migrate_run, size);
    set!(b, prefault, flag);
    Ok(Config::Mercury(b.build().map_err(config_error)?))
}

/// The SLB's keyword arguments.
pub(crate) struct SlbArgs<'a, 'py> {
    pub(crate) cache_table_bytes: Option<&'a Bound<'py, PyAny>>,
    pub(crate) log_table_ratio: Option<&'a Bound<'py, PyAny>>,
    pub(crate) admission_threshold: Option<&'a Bound<'py, PyAny>>,
    pub(crate) warm_admission_threshold: Option<&'a Bound<'py, PyAny>>,
    pub(crate) log_sample_rate: Option<&'a Bound<'py, PyAny>>,
    pub(crate) stripes: Option<&'a Bound<'py, PyAny>>,
    pub(crate) max_item_bytes: Option<&'a Bound<'py, PyAny>>,
}

/// `Slb(inner, cache_table_bytes=, …)`.
pub(crate) fn slb(args: SlbArgs<'_, '_>) -> PyResult<slb::Config> {
    let SlbArgs {
        cache_table_bytes,
        log_table_ratio,
        admission_threshold,
        warm_admission_threshold,
        log_sample_rate,
        stripes,
        max_item_bytes,
    } = args;
    let rate = |name: &str, v: &Bound<'_, PyAny>| -> PyResult<f64> {
        if !(v.is_instance_of::<PyFloat>() || v.is_instance_of::<PyInt>())
            || v.is_instance_of::<PyBool>()
        {
            return Err(PyTypeError::new_err(format!("`{name}` must be a float")));
        }
        v.extract()
    };
    let mut b = slb::Config::builder();
    set!(b, cache_table_bytes, size);
    set!(b, log_table_ratio, size);
    set!(b, admission_threshold, size);
    set!(b, warm_admission_threshold, size);
    set!(b, log_sample_rate, rate);
    set!(b, stripes, size);
    set!(b, max_item_bytes, size);
    b.build().map_err(config_error)
}

/// A structure's configuration as the constructor's keyword arguments.
pub(crate) fn to_dict<'py>(py: Python<'py>, config: &Config) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match config {
        Config::Wormhole(c) => {
            d.set_item("leaf_capacity", c.leaf_capacity)?;
            d.set_item("prefault", c.prefault)?;
            d.set_item("prefetch_items", c.prefetch_items)?;
        }
        Config::CuckooTrie(c) => {
            d.set_item("symbol_bits", c.symbol_bits)?;
            d.set_item("prefetch_depth", c.prefetch_depth)?;
            d.set_item("initial_buckets", c.initial_buckets)?;
        }
        Config::Hyperion(c) => {
            d.set_item("arenas", c.arenas)?;
            d.set_item("eject_threshold", c.eject_threshold)?;
            d.set_item("preprocess", c.preprocess)?;
        }
        Config::Mercury(c) => {
            d.set_item("initial_buckets", c.initial_buckets)?;
            d.set_item("load_percent", c.load_percent)?;
            let mode = match c.expansion {
                Expansion::Cooperative => "cooperative",
                Expansion::Dedicated => "dedicated",
            };
            d.set_item("expansion", mode)?;
            d.set_item("migrate_run", c.migrate_run)?;
            d.set_item("prefault", c.prefault)?;
        }
    }
    Ok(d)
}

/// An SLB's configuration as its constructor's keyword arguments.
pub(crate) fn slb_to_dict<'py>(py: Python<'py>, c: &slb::Config) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("cache_table_bytes", c.cache_table_bytes)?;
    d.set_item("log_table_ratio", c.log_table_ratio)?;
    d.set_item("admission_threshold", c.admission_threshold)?;
    d.set_item("warm_admission_threshold", c.warm_admission_threshold)?;
    d.set_item("log_sample_rate", c.log_sample_rate)?;
    d.set_item("stripes", c.stripes)?;
    d.set_item("max_item_bytes", c.max_item_bytes)?;
    Ok(d)
}
