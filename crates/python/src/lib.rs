//! The `orrery` Python package's native module (`orrery._orrery`): Orrery's structures as
//! Python maps, `dict`- and `SortedDict`-like, whose bulk operations release the GIL.
//!
//! Built as an abi3 wheel (CPython 3.9 and later) by maturin from `pyproject.toml`; the
//! pure-Python part of the package (`python/orrery/`: views, pickling helpers, type stubs)
//! lives beside it. See `docs/python.md` for the API reference.
//!
//! | module | what |
//! |---|---|
//! | `structures` | the classes users construct: `Wormhole`, `CuckooTrie`, `Hyperion`, `Mercury`, `Slb` |
//! | `map` | `Map`, the base class: mapping protocol, bulk calls, memory, copy, pickle; the threading argument |
//! | `ordered` | `OrderedMap`: `irange`, `items(start, stop)`, `prefix`, `peekitem`, `ceiling`/`floor`, … |
//! | `bulk` | the operations that release the GIL, and the pickled form |
//! | `iter` | `MapIterator`, the Python iterator object |
//! | `cursor` | owning iterators over any structure |
//! | `owned` | Mercury's iterator with the table it borrows (the crate's one `unsafe`) |
//! | `store` | `Store`: a map's structure and key type, shared by `map` and `bulk` |
//! | `index` | `Index`: the structure behind a map, one variant each |
//! | `config` | constructor keyword arguments to the structures' `Config`s and back |
//! | `convert` | Python objects to byte strings and back; errors to exceptions |
//!
//! Linking: the crate's tests are the Python suite (`tests/`, `scripts/test-python.sh`); it
//! has no Rust test target (`test = false`), so `cargo test --workspace` links nothing of
//! it and needs no libpython, and `cargo clippy`/`cargo doc` never link. A plain `cargo
//! build` links libpython like any PyO3 crate; maturin sets `PYO3_BUILD_EXTENSION_MODULE`
//! when it builds the wheel, which leaves the Python symbols to the interpreter that
//! imports the module.

mod bulk;
mod config;
mod convert;
mod cursor;
mod index;
mod iter;
mod map;
mod ordered;
mod owned;
mod store;
mod structures;

use pyo3::prelude::*;

pub use iter::MapIter;
pub use map::Map;
pub use ordered::OrderedMap;
pub use structures::{CuckooTrie, Hyperion, Mercury, Slb, Wormhole};

/// The native module `orrery._orrery`.
#[pymodule]
fn _orrery(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Map>()?;
    m.add_class::<OrderedMap>()?;
    m.add_class::<Wormhole>()?;
    m.add_class::<CuckooTrie>()?;
    m.add_class::<Hyperion>()?;
    m.add_class::<Mercury>()?;
    m.add_class::<Slb>()?;
    m.add_class::<MapIter>()?;
    m.add("MAX_KEY_LEN", orrery::api::MAX_KEY_LEN)?;
    m.add("MAX_VALUE_LEN", orrery::api::MAX_VALUE_LEN)?;
    Ok(())
}
