//! [`Store`]: a map's structure together with how its keys convert, what the mapping
//! methods (`crate::map`) and the bulk operations (`crate::bulk`) both work on.

use orrery::OrderedKvIndex;
use orrery::api::MAX_KEY_LEN;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::convert::{self, Bytes};
use crate::index::Index;

/// The structure behind a map and its key type.
pub(crate) struct Store {
    /// The structure.
    pub(crate) index: Index,
    /// Keys are `str` (UTF-8) rather than bytes.
    pub(crate) str_keys: bool,
}

impl Store {
    /// The bytes of a key argument.
    #[inline]
    pub(crate) fn key<'a>(&self, obj: &'a Bound<'_, PyAny>) -> PyResult<Bytes<'a>> {
        convert::key(obj, self.str_keys)
    }

    /// A stored key as a Python object.
    #[inline]
    pub(crate) fn key_to_py<'py>(&self, py: Python<'py>, k: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        convert::key_to_py(py, k, self.str_keys)
    }

    /// The ordered operations; `TypeError` for an unordered map (an `Slb` over Mercury).
    pub(crate) fn ordered(&self) -> PyResult<&dyn OrderedKvIndex> {
        self.index.ordered().ok_or_else(|| {
            PyTypeError::new_err("this Slb wraps a Mercury table, which has no key order")
        })
    }

    /// Removes `key` and returns its value, atomically; `None` when absent.
    pub(crate) fn take(&self, key: &[u8]) -> PyResult<Option<Vec<u8>>> {
        if key.len() > MAX_KEY_LEN {
            return Ok(None);
        }
        let mut taken = None;
        self.index
            .kv()
            .compute_with(key, &mut |old| {
                taken = old.map(<[u8]>::to_vec);
                None
            })
            .map_err(convert::error)?;
        Ok(taken)
    }
}
