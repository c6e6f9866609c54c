//! [`MapIter`]: the Python iterator object of every map, over a [`Cursor`].
//!
//! It yields keys, values or `(key, value)` pairs, from the front or (ordered maps) the
//! back, with the cursor's guarantees under concurrent writers (see `crate::cursor`): it
//! stays valid while any thread writes to the map, and is not a snapshot. One iterator
//! object used by two threads at once is an error (`RuntimeError`), as it is for a Python
//! generator; each thread should take its own iterator.

use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::convert;
use crate::cursor::Cursor;

/// What an iterator yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum What {
    Keys,
    Values,
    Items,
}

impl What {
    /// From the code the Python views pass: 0 keys, 1 values, 2 items.
    pub(crate) fn from_code(code: u8) -> PyResult<What> {
        match code {
            0 => Ok(What::Keys),
            1 => Ok(What::Values),
            2 => Ok(What::Items),
            _ => Err(PyValueError::new_err(
                "what must be 0 (keys), 1 (values) or 2 (items)",
            )),
        }
    }
}

/// An iterator over a map's keys, values or pairs (see the module docs).
#[pyclass(module = "orrery", name = "MapIterator", frozen)]
pub struct MapIter {
    cursor: Mutex<Cursor>,
    what: What,
    /// Yield from the back (descending).
    back: bool,
    str_keys: bool,
}

impl MapIter {
    /// An iterator yielding `what` from `cursor`.
    pub(crate) fn new(cursor: Cursor, what: What, back: bool, str_keys: bool) -> MapIter {
        MapIter {
            cursor: Mutex::new(cursor),
            what,
            back,
            str_keys,
        }
    }
}

#[pymethods]
impl MapIter {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        // The GIL is held from here to the return, so the lock is contended only when two
        // threads drive this one iterator on a free-threaded interpreter: an error then,
        // never a wait.
        let Ok(mut cursor) = self.cursor.try_lock() else {
            return Err(PyRuntimeError::new_err(
                "this orrery iterator is being used by another thread",
            ));
        };
        let (what, str_keys) = (self.what, self.str_keys);
        cursor
            .with_next(self.back, |k, v| -> PyResult<Bound<'py, PyAny>> {
                Ok(match what {
                    What::Keys => convert::key_to_py(py, k, str_keys)?,
                    What::Values => convert::value_to_py(py, v),
                    What::Items => PyTuple::new(
                        py,
                        [
                            convert::key_to_py(py, k, str_keys)?,
                            convert::value_to_py(py, v),
                        ],
                    )?
                    .into_any(),
                })
            })
            .transpose()
    }
}
