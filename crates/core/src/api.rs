//! The index API every Orrery structure implements.
//!
//! [`KvIndex`] is the unordered contract (point operations), [`OrderedKvIndex`] adds ordered
//! scans. Both traits are object safe, so a benchmark or server can hold
//! `Box<dyn OrderedKvIndex>`; concrete types add faster generic or per-thread-handle methods
//! beside them. [`OrderedKvIndexExt`] adds generic conveniences (`range` over any
//! [`RangeBounds`], collecting scans) to every ordered index, trait objects included.
//!
//! # Keys and values
//!
//! Keys and values are arbitrary byte strings: empty, containing `0x00` and `0xFF`, keys that
//! are prefixes of other keys. Order is plain lexicographic byte order (the `Ord` of `[u8]`).
//! Keys may be up to [`MAX_KEY_LEN`] bytes and values up to [`MAX_VALUE_LEN`] bytes; an
//! insert beyond either gets [`Error::KeyTooLong`] / [`Error::ValueTooLong`] and leaves the
//! index unchanged. A lookup or removal of an over-long key simply finds nothing (such a key
//! can never be present). Integer keys are encoded big-endian so that byte order is numeric
//! order: see [`u64_key`], [`i64_key`] and friends.
//!
//! # Consistency guarantees
//!
//! - All operations may be called from any thread, with no registration call.
//! - Point operations (`get`, `get_with`, `contains_key`, `insert`, `remove`) are
//!   linearizable: each takes effect atomically at some instant between its call and its
//!   return. An acknowledged `insert` is visible to every operation that starts after it
//!   returned; nothing acknowledged is lost.
//! - `get_many` is a batch of independent linearizable lookups, not an atomic snapshot.
//! - `len` is exact when no writer runs concurrently, and otherwise a value the count passed
//!   through recently (it may lag concurrent writers).
//! - A scan is **not** a snapshot. It yields keys in strictly ascending order; every yielded
//!   pair was present (with that value) at some moment during the scan; every key present for
//!   the whole duration of the scan (and inside its bounds) is yielded, unless the visitor
//!   stops early. Keys inserted or removed during the scan may or may not be yielded.
//! - `memory_usage` is a point-in-time estimate that may lag concurrent writers.
//! - A concrete iterator (below) gives a scan's guarantees from each end: keys strictly
//!   ascending from the front and strictly descending from the back, the two ends never
//!   yielding a key twice or crossing; every yielded pair was present with that value at
//!   some moment; every key present for the whole iteration (and in range) is yielded
//!   exactly once. An unordered iterator (Mercury) gives the same minus the order.
//!
//! # One API, every edge decided once
//!
//! The traits are object safe (callbacks are `&mut dyn FnMut`). Every concrete structure
//! (`Wormhole`, `CuckooTrie`, `Hyperion`, `Mercury`, `Slb<I>`) also has these inherent
//! methods, with these shapes and meanings; they are written once, by
//! [`index_api!`](crate::index_api) over each structure's primitives
//! ([`crate::raw`]), so they cannot drift apart:
//!
//! | method | meaning |
//! |---|---|
//! | `new()`, `try_new()`, `with_config(config)` | empty index; `new` aborts as a failed `Box::new` does when even that memory cannot be had, `try_new` returns [`Error::OutOfMemory`], `with_config` validates (`ConfigError`) |
//! | `get_with<R>(&self, key, f: impl FnOnce(&[u8]) -> R) -> Option<R>` | zero-copy lookup: `f`'s result, `None` when absent (the trait's form returns `bool`) |
//! | `get_many(keys, f)` | batched lookups, `f(i, value)` in order of `i`, overlapping the DRAM reads of several keys |
//! | `update(&self, key, f: impl FnOnce(&[u8]) -> Vec<u8>) -> Result<bool>` | atomically replace the value of an *existing* key by `f(old)`; `Ok(false)` without calling `f` when absent; never inserts |
//! | `update_in_place(&self, key, f: impl FnOnce(&mut [u8])) -> Result<bool>` | the same, rewriting the value's bytes (same length) |
//! | `compute(&self, key, f: impl FnOnce(Option<&[u8]>) -> Option<Vec<u8>>) -> Result<bool>` | upsert or remove (like `HashMap::entry` / dashmap's `compute`): `f` sees the current value or `None`, returns the new one or `None` to remove; `Ok(was present)` |
//! | `insert_all(&self, pairs) -> Result<usize>` | upsert every pair, stopping at the first error; returns how many keys were new |
//! | `Extend<(K, V)>` / `FromIterator<(K, V)>` | bulk loading, as for `BTreeMap`; panics on input over the limits (`insert_all` returns the error) |
//! | `scan`, `scan_rev`, `scan_prefix`, `first`, `last`, `remove_range` | ordered structures: callback scans both ways |
//! | `iter()`, `range(r)`, `IntoIterator for &Index` | ordered structures: a double-ended, seekable iterator (`.rev()` descends); Mercury: `iter()` in no order |
//! | `config()`, `stats()`, `check_invariants()` | the configuration (the SLB: `buffer()`); the structure's own counters; a full walk checking its invariants, returning the key count or what is broken (Wormhole and the Cuckoo Trie; tests, no concurrent writer) |
//!
//! [`KvUpdate`] has `compute`, `update` and `update_in_place` in object-safe form.
//!
//! What each operation answers at the edges:
//!
//! | input | `get`, `get_with`, `contains_key`, `get_many` | `insert` | `update`, `update_in_place` | `compute` | `remove` | scans, iterators, `remove_range` |
//! |---|---|---|---|---|---|---|
//! | empty key | an ordinary key | an ordinary key | an ordinary key | an ordinary key | an ordinary key | an ordinary bound |
//! | key over [`MAX_KEY_LEN`] | absent (`None`, `false`) | [`Error::KeyTooLong`] | [`Error::KeyTooLong`], `f` not called | [`Error::KeyTooLong`], `f` not called | `false` | an ordinary bound |
//! | value over [`MAX_VALUE_LEN`] | — | [`Error::ValueTooLong`] | [`Error::ValueTooLong`] from `f`'s result, index unchanged | the same | — | — |
//! | absent key | `None` / `false` | inserted, `Ok(true)` | `Ok(false)`, `f` not called | `f(None)`; `None` leaves it absent | `false` | — |
//! | out of memory | — | [`Error::OutOfMemory`], index unchanged | the same | the same | never fails | — |
//!
//! Every closure runs under the structure's lock or guard: it must be short and must not
//! call back into the index. `compute` and `update` call their closure exactly once.
//!
//! # Iterators
//!
//! A std `Iterator` cannot lend slices borrowed from itself, and a structure's memory is
//! protected only while a lock or guard is held. So iterators copy one batch of pairs at a
//! time (a leaf, a run of buckets) into a [`PairBatch`](crate::batch::PairBatch) that they
//! refill in place, and yield [`Entry`](crate::batch::Entry) handles into it (`key()`,
//! `value()`, `into_pair()`): no allocation per pair, and no lock or guard held between
//! calls, so the index may be written while an iterator is alive. Ordered iterators also
//! lend pairs (`next_pair`, `next_back_pair`) and `seek` / `seek_back` to a bound.
//!
//! # Configuration
//!
//! Every structure has a `Config` (`orrery_slb::Config` for the SLB too) with public fields
//! and the paper's defaults, `Config::builder()` with one setter per field (written by
//! [`config_builder!`](crate::config_builder)), and `build()`, which validates into
//! `Result<Config, `[`ConfigError`]`>`; `Index::with_config(config)` validates again (the
//! fields are public) and returns `Result<Index, ConfigError>` ([`ConfigError::OutOfMemory`]
//! if the initial memory cannot be had). Nothing is clamped: a field out of its documented
//! range is a [`ConfigError::Invalid`] naming the field. Sizes documented as rounded to a
//! power of two are rounded.
//!
//! Tuning constants (batch sizes, windows) are private; diagnostics beyond `stats()` and
//! `check_invariants()` live behind each structure's `bench-internals` feature, which only
//! the benchmark enables.

use std::fmt;
use std::ops::{Bound, ControlFlow, RangeBounds};

/// Longest key accepted by every Orrery index: 64 KiB.
pub const MAX_KEY_LEN: usize = 64 * 1024;

/// Largest value accepted by every Orrery index: 1 MiB.
pub const MAX_VALUE_LEN: usize = 1024 * 1024;

/// An input the index cannot accept. The index is unchanged when an operation returns this.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The key is longer than the index's limit.
    KeyTooLong {
        /// Length of the rejected key in bytes.
        len: usize,
        /// The index's limit in bytes.
        max: usize,
    },
    /// The value is longer than the index's limit.
    ValueTooLong {
        /// Length of the rejected value in bytes.
        len: usize,
        /// The index's limit in bytes.
        max: usize,
    },
    /// The index could not obtain memory for the operation.
    OutOfMemory,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::KeyTooLong { len, max } => {
                write!(f, "key of {len} bytes exceeds the limit of {max} bytes")
            }
            Error::ValueTooLong { len, max } => {
                write!(f, "value of {len} bytes exceeds the limit of {max} bytes")
            }
            Error::OutOfMemory => f.write_str("out of memory"),
        }
    }
}

impl std::error::Error for Error {}

/// An invalid configuration, or a structure that could not be built. Every Orrery
/// structure's `Config` builder and `with_config` return it (see the module docs,
/// "Configuration").
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A configuration field is out of its documented range (nothing is clamped).
    Invalid {
        /// The offending field of the structure's `Config`.
        field: &'static str,
        /// What the field must satisfy.
        reason: &'static str,
    },
    /// The structure's initial memory could not be allocated.
    OutOfMemory,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Invalid { field, reason } => {
                write!(f, "invalid configuration: `{field}` {reason}")
            }
            ConfigError::OutOfMemory => f.write_str("out of memory building the structure"),
        }
    }
}

impl std::error::Error for ConfigError {}

impl From<Error> for ConfigError {
    /// Building a structure can only fail on memory; input errors cannot occur.
    fn from(_: Error) -> Self {
        ConfigError::OutOfMemory
    }
}

/// Result of index operations that can reject their input.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Checks a key against [`MAX_KEY_LEN`].
#[inline]
pub fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(Error::KeyTooLong {
            len: key.len(),
            max: MAX_KEY_LEN,
        });
    }
    Ok(())
}

/// Checks a key against [`MAX_KEY_LEN`] and a value against [`MAX_VALUE_LEN`].
#[inline]
pub fn check_entry(key: &[u8], value: &[u8]) -> Result<()> {
    check_key(key)?;
    if value.len() > MAX_VALUE_LEN {
        return Err(Error::ValueTooLong {
            len: value.len(),
            max: MAX_VALUE_LEN,
        });
    }
    Ok(())
}

/// What a read-modify-write decides from a key's current value: the currency of the
/// structures' write paths behind `compute` and `update`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Leave the key as it is.
    Keep,
    /// Store this value.
    Store(Vec<u8>),
    /// Remove the key (or leave it absent).
    Remove,
}

/// A `compute(key, f)` closure adapted to a structure's write path: the write calls
/// [`ComputeOnce::decide`] with the current value (possibly more than once, when it
/// retries), the closure runs on the first call only (later calls keep what the first
/// stored), and [`ComputeOnce::finish`] turns the write's result into `compute`'s. A value
/// over [`MAX_VALUE_LEN`] is not stored: the key is left as it was and `finish` returns
/// [`Error::ValueTooLong`]. A closure that returns `None` for an absent key decides
/// [`Decision::Keep`], so `update(key, f)` (never inserts) is `ComputeOnce::new(|old|
/// old.map(f))`.
///
/// ```
/// use orrery_core::api::{ComputeOnce, Decision};
/// let mut c = ComputeOnce::new(|old: Option<&[u8]>| old.map(|v| [v, b"!"].concat()));
/// assert_eq!(c.decide(Some(b"hi")), Decision::Store(b"hi!".to_vec()));
/// assert_eq!(c.decide(Some(b"hi!")), Decision::Keep);
/// assert_eq!(c.finish(true), Ok(true));
///
/// // `update` of an absent key: kept absent, not "removed".
/// let mut u = ComputeOnce::new(|old: Option<&[u8]>| old.map(|v| v.to_vec()));
/// assert_eq!(u.decide(None), Decision::Keep);
/// // `compute` returning `None` for a present key removes it.
/// let mut r = ComputeOnce::new(|_: Option<&[u8]>| None);
/// assert_eq!(r.decide(Some(b"x")), Decision::Remove);
/// ```
#[derive(Debug)]
pub struct ComputeOnce<F> {
    f: Option<F>,
    too_long: Option<usize>,
}

impl<F: FnOnce(Option<&[u8]>) -> Option<Vec<u8>>> ComputeOnce<F> {
    /// Wraps the user's closure.
    pub fn new(f: F) -> Self {
        ComputeOnce {
            f: Some(f),
            too_long: None,
        }
    }

    /// The decision for the key's current value `old`.
    pub fn decide(&mut self, old: Option<&[u8]>) -> Decision {
        let Some(f) = self.f.take() else {
            return Decision::Keep;
        };
        match f(old) {
            Some(v) if v.len() > MAX_VALUE_LEN => {
                self.too_long = Some(v.len());
                Decision::Keep
            }
            Some(v) => Decision::Store(v),
            // Removing an absent key is leaving it as it is.
            None if old.is_none() => Decision::Keep,
            None => Decision::Remove,
        }
    }

    /// `compute`'s result from the write's "was present": the over-long value's error, if
    /// the closure returned one.
    pub fn finish(self, present: bool) -> Result<bool> {
        match self.too_long {
            Some(len) => Err(Error::ValueTooLong {
                len,
                max: MAX_VALUE_LEN,
            }),
            None => Ok(present),
        }
    }
}

/// Bytes an index holds, split so that bytes/key can be compared across structures.
///
/// `structure_bytes` is everything the index allocated for its own organisation (tables,
/// nodes, slack in containers, pointers, metadata); `key_value_bytes` is the bytes of keys
/// and values themselves where they are stored separately. A structure that stores keys
/// inline in its nodes may report them in either field, but must say which in its docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Bytes of the structure itself (tables, nodes, metadata, slack).
    pub structure_bytes: usize,
    /// Bytes of stored keys and values.
    pub key_value_bytes: usize,
}

impl MemoryUsage {
    /// All bytes held: structure plus keys and values.
    #[inline]
    pub fn total(&self) -> usize {
        self.structure_bytes + self.key_value_bytes
    }
}

impl std::ops::Add for MemoryUsage {
    type Output = MemoryUsage;
    fn add(self, rhs: MemoryUsage) -> MemoryUsage {
        MemoryUsage {
            structure_bytes: self.structure_bytes + rhs.structure_bytes,
            key_value_bytes: self.key_value_bytes + rhs.key_value_bytes,
        }
    }
}

/// A concurrent key-value index over byte strings (point operations).
///
/// See the [module docs](self) for the semantics every implementation honours.
pub trait KvIndex: Send + Sync {
    /// Looks `key` up and, if present, calls `f` with its value (zero-copy) before returning
    /// `true`; returns `false` without calling `f` when absent.
    ///
    /// `f` runs while the value is protected (under a lock or a reclamation guard): it must be
    /// short and must not call back into the index.
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool;

    /// Returns a copy of the value stored under `key`.
    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut out = None;
        self.get_with(key, &mut |v| out = Some(v.to_vec()));
        out
    }

    /// Whether `key` is present.
    fn contains_key(&self, key: &[u8]) -> bool {
        self.get_with(key, &mut |_| {})
    }

    /// Inserts or replaces the value under `key`; returns `Ok(true)` if the key was new.
    ///
    /// Fails with [`Error::KeyTooLong`] / [`Error::ValueTooLong`] beyond the limits, leaving
    /// the index unchanged.
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool>;

    /// Removes `key`; returns whether it was present.
    fn remove(&self, key: &[u8]) -> bool;

    /// Number of keys (see the module docs for what it means under concurrent writers).
    fn len(&self) -> usize;

    /// Whether the index holds no key.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held by the index.
    fn memory_usage(&self) -> MemoryUsage;

    /// Looks up every key of `keys` and calls `f(i, value)` for each, with `i` the key's index
    /// in `keys` and `value` `None` when absent. Calls come in order of `i`.
    ///
    /// The default performs single lookups one after the other; structures override it with
    /// a pipeline that overlaps the memory accesses of several keys.
    fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        for (i, key) in keys.iter().enumerate() {
            if !self.get_with(key, &mut |v| f(i, Some(v))) {
                f(i, None);
            }
        }
    }
}

/// The closure of [`KvUpdate::compute_with`]: the current value (`None` when absent) to the
/// new one (`None` removes).
pub type ComputeFn<'a> = dyn FnMut(Option<&[u8]>) -> Option<Vec<u8>> + 'a;

/// The read-modify-write operations, in object-safe form: what every Orrery structure has
/// as the generic inherent methods `compute`, `update` and `update_in_place` (see the
/// module docs' table), so that trait objects, wrappers and the conformance suite can call
/// them. Each is atomic with respect to every other operation on the key.
pub trait KvUpdate: KvIndex {
    /// Upsert or remove by `f(current)`: `Some(v)` stores `v`, `None` removes the key (or
    /// leaves it absent); `Ok(was present)`. `f` is called exactly once, after the key was
    /// checked: [`Error::KeyTooLong`] before it runs, [`Error::ValueTooLong`] (index
    /// unchanged) when it returns an over-long value.
    fn compute_with(&self, key: &[u8], f: &mut ComputeFn<'_>) -> Result<bool>;

    /// Replaces the value of a present key by `f(old)`; `Ok(false)` without calling `f`
    /// when absent; never inserts. Errors as [`KvUpdate::compute_with`].
    fn update_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8]) -> Vec<u8>) -> Result<bool>;

    /// Rewrites the bytes of a present key's value through `f` (same length); `Ok(false)`
    /// without calling `f` when absent; [`Error::KeyTooLong`] for an over-long key.
    fn update_in_place_with(&self, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool>;
}

/// The visitor of a scan: called with each `(key, value)` pair in ascending key order; returns
/// [`ControlFlow::Break`] to stop the scan.
pub type ScanVisitor<'a> = dyn FnMut(&[u8], &[u8]) -> ControlFlow<()> + 'a;

/// A concurrent ordered key-value index: [`KvIndex`] plus ascending scans.
///
/// See the [module docs](self) for what a scan concurrent with writers guarantees.
pub trait OrderedKvIndex: KvIndex {
    /// Visits pairs in ascending key order starting at `start`, until the visitor returns
    /// [`ControlFlow::Break`] or the keys run out.
    ///
    /// The visitor runs while the pair is protected: it must not call back into the index.
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>);

    /// Visits pairs in descending key order from `end` down (`Included(k)`: `k` and below;
    /// `Excluded(k)`: below `k`), until the visitor returns [`ControlFlow::Break`] or the
    /// keys run out. The same guarantees as [`OrderedKvIndex::scan`], mirrored.
    ///
    /// The default collects the pairs up to `end` with an ascending scan and visits them
    /// backwards: correct, but it copies everything below `end` first. Every Orrery
    /// structure overrides it with a real descending scan.
    fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        let mut pairs = Vec::new();
        self.scan(Bound::Unbounded, &mut |k, v| {
            let inside = within_end(k, end);
            if !inside {
                return ControlFlow::Break(());
            }
            pairs.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        for (k, v) in pairs.iter().rev() {
            if visitor(k, v).is_break() {
                return;
            }
        }
    }

    /// The pair with the largest key, if any.
    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)>;

    /// The pair with the smallest key, if any.
    fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut out = None;
        self.scan(Bound::Unbounded, &mut |k, v| {
            out = Some((k.to_vec(), v.to_vec()));
            ControlFlow::Break(())
        });
        out
    }

    /// Visits, in ascending order, the pairs with keys in `[start, end]` bounds.
    fn scan_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.scan(start, &mut |k, v| {
            let inside = within_end(k, end);
            if inside {
                visitor(k, v)
            } else {
                ControlFlow::Break(())
            }
        });
    }

    /// Visits, in ascending order, the pairs whose key starts with `prefix`.
    fn scan_prefix(&self, prefix: &[u8], visitor: &mut ScanVisitor<'_>) {
        self.scan(Bound::Included(prefix), &mut within_prefix(prefix, visitor));
    }
}

/// Forwards every method (defaults included, so a structure's overrides are kept) through a
/// pointer type: `Box<dyn OrderedKvIndex>`, `Arc<I>` and `&I` are indexes themselves, which
/// lets wrappers such as the SLB hold any index, trait objects included.
macro_rules! forward_index {
    ($($ptr:ty),*) => {$(
        impl<T: KvIndex + ?Sized> KvIndex for $ptr {
            #[inline]
            fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
                (**self).get_with(key, f)
            }
            #[inline]
            fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
                (**self).get(key)
            }
            #[inline]
            fn contains_key(&self, key: &[u8]) -> bool {
                (**self).contains_key(key)
            }
            #[inline]
            fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
                (**self).insert(key, value)
            }
            #[inline]
            fn remove(&self, key: &[u8]) -> bool {
                (**self).remove(key)
            }
            fn len(&self) -> usize {
                (**self).len()
            }
            fn is_empty(&self) -> bool {
                (**self).is_empty()
            }
            fn memory_usage(&self) -> MemoryUsage {
                (**self).memory_usage()
            }
            #[inline]
            fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
                (**self).get_many(keys, f)
            }
        }

        impl<T: OrderedKvIndex + ?Sized> OrderedKvIndex for $ptr {
            fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
                (**self).scan(start, visitor)
            }
            fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
                (**self).scan_rev(end, visitor)
            }
            fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
                (**self).last()
            }
            fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
                (**self).first()
            }
            fn scan_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
                (**self).scan_range(start, end, visitor)
            }
            fn scan_prefix(&self, prefix: &[u8], visitor: &mut ScanVisitor<'_>) {
                (**self).scan_prefix(prefix, visitor)
            }
        }
    )*};
}

forward_index!(Box<T>, std::sync::Arc<T>, &T);

macro_rules! forward_update {
    ($($ptr:ty),*) => {$(
        impl<T: KvUpdate + ?Sized> KvUpdate for $ptr {
            fn compute_with(&self, key: &[u8], f: &mut ComputeFn<'_>) -> Result<bool> {
                (**self).compute_with(key, f)
            }
            fn update_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8]) -> Vec<u8>) -> Result<bool> {
                (**self).update_with(key, f)
            }
            fn update_in_place_with(&self, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
                (**self).update_in_place_with(key, f)
            }
        }
    )*};
}

forward_update!(Box<T>, std::sync::Arc<T>, &T);

/// Generic conveniences over every [`OrderedKvIndex`], trait objects included.
pub trait OrderedKvIndexExt: OrderedKvIndex {
    /// Visits the pairs whose keys fall in `range`, ascending: the callback form, which
    /// every ordered index (trait objects included) has. Concrete ordered types also have
    /// an inherent `range(r)` returning an `Iterator`, as `BTreeMap` does.
    ///
    /// ```
    /// use orrery_core::api::{OrderedKvIndexExt, KvIndex};
    /// use orrery_core::reference::LockedBTreeMap;
    /// use std::ops::ControlFlow;
    ///
    /// let index = LockedBTreeMap::new();
    /// for k in [b"a", b"b", b"c", b"d"] {
    ///     index.insert(k, b"v").unwrap();
    /// }
    /// let mut seen = Vec::new();
    /// index.range_with(&b"b"[..]..&b"d"[..], |k, _| {
    ///     seen.push(k.to_vec());
    ///     ControlFlow::Continue(())
    /// });
    /// assert_eq!(seen, [b"b".to_vec(), b"c".to_vec()]);
    /// ```
    fn range_with<K, R, F>(&self, range: R, mut visitor: F)
    where
        K: AsRef<[u8]>,
        R: RangeBounds<K>,
        F: FnMut(&[u8], &[u8]) -> ControlFlow<()>,
    {
        let start = as_slice_bound(range.start_bound());
        let end = as_slice_bound(range.end_bound());
        self.scan_range(start, end, &mut visitor);
    }

    /// Collects up to `limit` pairs of `range`, ascending.
    fn range_collect<K, R>(&self, range: R, limit: usize) -> Vec<(Vec<u8>, Vec<u8>)>
    where
        K: AsRef<[u8]>,
        R: RangeBounds<K>,
    {
        let mut out = Vec::new();
        if limit == 0 {
            return out;
        }
        self.range_with(range, |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            if out.len() >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        out
    }

    /// Collects the pairs whose key starts with `prefix`, ascending.
    fn prefix_collect(&self, prefix: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        self.scan_prefix(prefix, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        out
    }
}

impl<T: OrderedKvIndex + ?Sized> OrderedKvIndexExt for T {}

fn as_slice_bound<K: AsRef<[u8]>>(b: Bound<&K>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The visitor of a prefix scan: passes pairs whose key starts with `prefix` on to
/// `visitor` and stops at the first key without it (an ascending scan from `prefix` visits
/// the prefix's keys first, then leaves them for good).
pub fn within_prefix<'a>(
    prefix: &'a [u8],
    visitor: &'a mut ScanVisitor<'_>,
) -> impl FnMut(&[u8], &[u8]) -> ControlFlow<()> + 'a {
    move |k, v| {
        if k.starts_with(prefix) {
            visitor(k, v)
        } else {
            ControlFlow::Break(())
        }
    }
}

/// Whether `key` lies at or below the upper bound `end` (`Included`: `<=`; `Excluded`: `<`;
/// `Unbounded`: always): where an ascending scan of a range stops.
#[inline]
pub fn within_end(key: &[u8], end: Bound<&[u8]>) -> bool {
    match end {
        Bound::Included(e) => key <= e,
        Bound::Excluded(e) => key < e,
        Bound::Unbounded => true,
    }
}

/// The smallest key greater than every key starting with `prefix`, or `None` when no such
/// key exists (`prefix` is empty or all `0xFF`). Useful as the exclusive end of a prefix
/// range.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let end = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut succ = prefix[..=end].to_vec();
    succ[end] += 1;
    Some(succ)
}

macro_rules! int_keys {
    ($($ty:ty => $enc:ident, $dec:ident, $flip:expr;)*) => {$(
        #[doc = concat!("Encodes a `", stringify!($ty), "` as an order-preserving big-endian key.")]
        #[inline]
        pub fn $enc(x: $ty) -> [u8; size_of::<$ty>()] {
            (x ^ $flip).to_be_bytes()
        }

        #[doc = concat!("Decodes a key made by [`", stringify!($enc), "`]; `None` if the length is not ",
            stringify!($ty), "'s.")]
        #[inline]
        pub fn $dec(key: &[u8]) -> Option<$ty> {
            let bytes: [u8; size_of::<$ty>()] = key.try_into().ok()?;
            Some(<$ty>::from_be_bytes(bytes) ^ $flip)
        }
    )*};
}

int_keys! {
    u32 => u32_key, key_to_u32, 0;
    u64 => u64_key, key_to_u64, 0;
    u128 => u128_key, key_to_u128, 0;
    i32 => i32_key, key_to_i32, i32::MIN;
    i64 => i64_key, key_to_i64, i64::MIN;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_keys_preserve_order() {
        let us = [0u64, 1, 255, 256, u64::MAX / 2, u64::MAX];
        for w in us.windows(2) {
            assert!(u64_key(w[0]) < u64_key(w[1]));
        }
        let is = [i64::MIN, -256, -1, 0, 1, 255, i64::MAX];
        for w in is.windows(2) {
            assert!(i64_key(w[0]) < i64_key(w[1]), "{} vs {}", w[0], w[1]);
        }
        for &x in &is {
            assert_eq!(key_to_i64(&i64_key(x)), Some(x));
        }
        for x in [i32::MIN, -1, 0, 7, i32::MAX] {
            assert_eq!(key_to_i32(&i32_key(x)), Some(x));
        }
        assert_eq!(key_to_u64(&[1, 2, 3]), None);
        assert_eq!(key_to_u32(&u32_key(0xdead_beef)), Some(0xdead_beef));
    }

    #[test]
    fn pointers_to_indexes_are_indexes() {
        use crate::reference::LockedBTreeMap;
        let boxed: Box<dyn OrderedKvIndex> = Box::new(LockedBTreeMap::new());
        assert_eq!(boxed.insert(b"a", b"1"), Ok(true));
        let shared = std::sync::Arc::new(boxed);
        let by_ref: &dyn OrderedKvIndex = &shared;
        assert_eq!(by_ref.get(b"a"), Some(b"1".to_vec()));
        assert_eq!(by_ref.first().map(|(k, _)| k), Some(b"a".to_vec()));
        assert_eq!(by_ref.len(), 1);
        assert!(by_ref.remove(b"a"));
        assert!(shared.is_empty());
    }

    #[test]
    fn prefix_successor_cases() {
        assert_eq!(prefix_successor(b""), None);
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(&[1, 0xFF]), Some(vec![2]));
    }

    #[test]
    fn limits() {
        assert!(check_key(&vec![0; MAX_KEY_LEN]).is_ok());
        assert_eq!(
            check_key(&vec![0; MAX_KEY_LEN + 1]),
            Err(Error::KeyTooLong {
                len: MAX_KEY_LEN + 1,
                max: MAX_KEY_LEN
            })
        );
        assert!(check_entry(b"k", &vec![0; MAX_VALUE_LEN]).is_ok());
        assert!(matches!(
            check_entry(b"k", &vec![0; MAX_VALUE_LEN + 1]),
            Err(Error::ValueTooLong { .. })
        ));
        assert!(Error::OutOfMemory.to_string().contains("memory"));
    }
}
