//! Python objects to byte strings and back, and Orrery's errors as Python exceptions.
//!
//! Keys and values are byte strings. A `bytes` argument is borrowed, not copied: a `bytes`
//! object is immutable and the caller's reference keeps it alive for the whole call, also
//! while the GIL is released for a bulk operation. Every other bytes-like object
//! (`bytearray`, `memoryview`, anything with the buffer protocol) is copied first, because
//! another thread may change it once the GIL is released. A `str` key is UTF-8 encoded when
//! the map was made with `str_keys=True` and a `TypeError` otherwise; an `int` is always a
//! `TypeError` (where `bytes(3)` would make three zero bytes).
//!
//! Errors: [`orrery::Error::KeyTooLong`] and [`orrery::Error::ValueTooLong`] become
//! `ValueError` naming the limit, [`orrery::Error::OutOfMemory`] `MemoryError`; an
//! invalid configuration is a `ValueError` naming the field.

use std::ops::Deref;

use orrery::{ConfigError, Error};
use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyInt, PyMemoryView, PyString};

/// A byte string taken from a Python object: borrowed from a `bytes`, or a copy.
pub(crate) enum Bytes<'a> {
    /// The buffer of an immutable `bytes` object the caller holds.
    Borrowed(&'a [u8]),
    /// A copy (mutable buffers, encoded `str`).
    Owned(Vec<u8>),
}

impl Deref for Bytes<'_> {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Borrowed(b) => b,
            Bytes::Owned(v) => v,
        }
    }
}

/// The bytes of a key: `bytes`-like, or a `str` when the map has `str_keys`.
#[inline]
pub(crate) fn key<'a>(obj: &'a Bound<'_, PyAny>, str_keys: bool) -> PyResult<Bytes<'a>> {
    if !str_keys {
        return bytes_like(obj, "key");
    }
    match obj.cast::<PyString>() {
        Ok(s) => Ok(match s.to_cow()? {
            std::borrow::Cow::Borrowed(s) => Bytes::Borrowed(s.as_bytes()),
            std::borrow::Cow::Owned(s) => Bytes::Owned(s.into_bytes()),
        }),
        Err(_) => Err(PyTypeError::new_err(format!(
            "key must be str (this map was made with str_keys=True), not {}",
            type_name(obj)
        ))),
    }
}

/// The bytes of a value: any bytes-like object.
#[inline]
pub(crate) fn value<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<Bytes<'a>> {
    bytes_like(obj, "value")
}

fn bytes_like<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Bytes<'a>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Bytes::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Bytes::Owned(b.to_vec()));
    }
    if obj.is_instance_of::<PyString>() {
        let hint = if what == "key" {
            " (make the map with str_keys=True for str keys)"
        } else {
            ""
        };
        return Err(PyTypeError::new_err(format!(
            "{what} must be a bytes-like object, not str{hint}"
        )));
    }
    if !obj.is_instance_of::<PyInt>()
        && let Ok(view) = PyMemoryView::from(obj)
    {
        let copy = view.call_method0("tobytes")?;
        return Ok(Bytes::Owned(copy.cast::<PyBytes>()?.as_bytes().to_vec()));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a bytes-like object, not {}",
        type_name(obj)
    )))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

/// A stored key as the Python object the map hands out: `bytes`, or `str` with `str_keys`.
#[inline]
pub(crate) fn key_to_py<'py>(
    py: Python<'py>,
    key: &[u8],
    str_keys: bool,
) -> PyResult<Bound<'py, PyAny>> {
    if str_keys {
        match std::str::from_utf8(key) {
            Ok(s) => Ok(PyString::new(py, s).into_any()),
            Err(e) => Err(pyo3::exceptions::PyUnicodeDecodeError::new_err_from_utf8(
                py, key, e,
            )),
        }
    } else {
        Ok(PyBytes::new(py, key).into_any())
    }
}

/// A stored value as `bytes`.
#[inline]
pub(crate) fn value_to_py<'py>(py: Python<'py>, value: &[u8]) -> Bound<'py, PyAny> {
    PyBytes::new(py, value).into_any()
}

/// An index error as the Python exception it is.
pub(crate) fn error(e: Error) -> PyErr {
    match e {
        Error::OutOfMemory => PyMemoryError::new_err("out of memory: the map is unchanged"),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// A configuration error as the Python exception it is.
pub(crate) fn config_error(e: ConfigError) -> PyErr {
    match e {
        ConfigError::OutOfMemory => PyMemoryError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}
