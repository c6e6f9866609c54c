//! [`index_api!`](crate::index_api): the public API of every structure, written once.
//!
//! A structure supplies its primitives ([`RawIndex`](crate::raw::RawIndex), and
//! [`RawOrdered`](crate::raw::RawOrdered) if ordered) on a type it reaches through a
//! private inherent method `fn raw(&self) -> &R` (its engine, or `self`). The macro writes,
//! as inherent methods of the structure (so users need no trait import, and get the
//! generic `get_with -> Option<R>`), everything the API promises, each a call into
//! [`crate::raw`] where the edges are decided:
//!
//! - `point`: `get_with`, `get`, `contains_key`, `get_many`, `insert`, `remove`,
//!   `compute`, `update`, `update_in_place`, `insert_all`, `len`, `is_empty`,
//!   `memory_usage`, and the traits [`KvIndex`](crate::KvIndex) and
//!   [`KvUpdate`](crate::KvUpdate);
//! - `ordered`: `scan`, `scan_rev`, `scan_prefix`, `first`, `last`, `remove_range`, and
//!   [`OrderedKvIndex`](crate::OrderedKvIndex); with `iter`, also `iter()` and `range(r)`
//!   over the type's [`BatchSource`](crate::batch::BatchSource);
//! - `new`: `new()` (aborts as a failed `Box::new` does when even the empty structure's
//!   memory cannot be had), `try_new()` ([`Error::OutOfMemory`](crate::Error) instead),
//!   `with_config(config)` (validated, [`ConfigError`](crate::ConfigError)), `config()`,
//!   `Default`, `Extend<(K, V)>`, `FromIterator<(K, V)>`, built on a private inherent
//!   `fn build(config: Config) -> Result<Self>` and a `config: Config` reached through
//!   `fn config_ref(&self) -> &Config`.
//!
//! ```ignore
//! orrery_core::index_api!(point impl[] CuckooTrie as "CuckooTrie");
//! orrery_core::index_api!(ordered impl[] CuckooTrie, iter);
//! orrery_core::index_api!(new impl[] CuckooTrie as "CuckooTrie", Config);
//! ```

/// Writes a structure's public API over its primitives (see the module docs of
/// `orrery_core::impls` for the three parts and what the type must have).
#[macro_export]
macro_rules! index_api {
    (point impl[$($gen:tt)*] $ty:ty as $name:literal) => {
        impl<$($gen)*> $ty {
            /// Zero-copy lookup: `f`'s result on the value of `key`, `None` when absent (an
            /// over-long key is absent). `f` runs while the value is protected (a lock or
            /// a guard): it must be short and must not call back into the index.
            #[inline]
            pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
                $crate::raw::get_with(self.raw(), key, f)
            }

            /// A copy of the value of `key`.
            #[inline]
            pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
                $crate::raw::get_with(self.raw(), key, <[u8]>::to_vec)
            }

            /// Whether `key` is present.
            #[inline]
            pub fn contains_key(&self, key: &[u8]) -> bool {
                $crate::raw::get_with(self.raw(), key, |_| ()).is_some()
            }

            /// Looks up every key of `keys` and calls `f(i, value)` in order of `i` (`None`
            /// when absent, over-long keys included), overlapping the memory accesses of
            /// several keys where the structure can. A batch of independent linearizable
            /// lookups, not a snapshot.
            #[inline]
            pub fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
                $crate::raw::get_many(self.raw(), keys, f)
            }

            /// Inserts or replaces the value of `key`; `Ok(true)` if the key was new.
            /// [`KeyTooLong`]($crate::Error::KeyTooLong) /
            /// [`ValueTooLong`]($crate::Error::ValueTooLong) beyond the limits,
            /// [`OutOfMemory`]($crate::Error::OutOfMemory): the index unchanged.
            #[inline]
            pub fn insert(&self, key: &[u8], value: &[u8]) -> $crate::Result<bool> {
                $crate::raw::insert(self.raw(), key, value)
            }

            /// Removes `key`; whether it was present (an over-long key never is).
            #[inline]
            pub fn remove(&self, key: &[u8]) -> bool {
                $crate::raw::remove(self.raw(), key)
            }

            /// Upsert or remove by `f(current)` (as `HashMap::entry` / dashmap's
            /// `compute`): `f` gets the current value (`None` if absent) and returns the
            /// new one (`None` removes the key, or leaves it absent); `Ok(was present)`.
            /// Atomic: no other write of the key comes between `f`'s read and its result.
            /// `f` is called exactly once, after the key was checked
            /// ([`KeyTooLong`]($crate::Error::KeyTooLong) before it runs); an over-long
            /// new value is [`ValueTooLong`]($crate::Error::ValueTooLong) and not stored.
            /// `f` must not call back into the index.
            pub fn compute<F>(&self, key: &[u8], f: F) -> $crate::Result<bool>
            where
                F: FnOnce(Option<&[u8]>) -> Option<Vec<u8>>,
            {
                $crate::raw::compute(self.raw(), key, f)
            }

            /// Atomically replaces the value of a present key by `f(old)`; `Ok(false)`
            /// without calling `f` when absent; never inserts. Errors as
            /// [`compute`](Self::compute). `f` must not call back into the index.
            pub fn update(
                &self,
                key: &[u8],
                f: impl FnOnce(&[u8]) -> Vec<u8>,
            ) -> $crate::Result<bool> {
                $crate::raw::update(self.raw(), key, f)
            }

            /// Atomically rewrites the bytes of a present key's value through `f` (same
            /// length); `Ok(false)` without calling `f` when absent;
            /// [`KeyTooLong`]($crate::Error::KeyTooLong) for an over-long key. `f` must
            /// not call back into the index.
            pub fn update_in_place(
                &self,
                key: &[u8],
                f: impl FnOnce(&mut [u8]),
            ) -> $crate::Result<bool> {
                $crate::raw::update_in_place(self.raw(), key, f)
            }

            /// Upserts every pair; how many keys were new. Stops at the first error and
            /// returns it: the pairs before it stay inserted, it and those after it are not.
            pub fn insert_all<K, V>(
                &self,
                pairs: impl IntoIterator<Item = (K, V)>,
            ) -> $crate::Result<usize>
            where
                K: AsRef<[u8]>,
                V: AsRef<[u8]>,
            {
                $crate::raw::insert_all(self.raw(), pairs)
            }

            /// Number of keys (exact when no writer runs concurrently; otherwise a value
            /// the count passed through recently).
            #[inline]
            pub fn len(&self) -> usize {
                $crate::raw::RawIndex::count(self.raw())
            }

            /// Whether the index holds no key.
            #[inline]
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// Bytes held (see the crate docs for what is counted where).
            pub fn memory_usage(&self) -> $crate::MemoryUsage {
                $crate::raw::RawIndex::bytes(self.raw())
            }
        }

        impl<$($gen)*> $crate::api::KvIndex for $ty {
            #[inline]
            fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
                <$ty>::get_with(self, key, f).is_some()
            }

            #[inline]
            fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
                <$ty>::get(self, key)
            }

            #[inline]
            fn contains_key(&self, key: &[u8]) -> bool {
                <$ty>::contains_key(self, key)
            }

            #[inline]
            fn insert(&self, key: &[u8], value: &[u8]) -> $crate::Result<bool> {
                <$ty>::insert(self, key, value)
            }

            #[inline]
            fn remove(&self, key: &[u8]) -> bool {
                <$ty>::remove(self, key)
            }

            fn len(&self) -> usize {
                <$ty>::len(self)
            }

            fn memory_usage(&self) -> $crate::MemoryUsage {
                <$ty>::memory_usage(self)
            }

            #[inline]
            fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
                <$ty>::get_many(self, keys, f)
            }
        }

        impl<$($gen)*> $crate::api::KvUpdate for $ty {
            fn compute_with(
                &self,
                key: &[u8],
                f: &mut $crate::api::ComputeFn<'_>,
            ) -> $crate::Result<bool> {
                <$ty>::compute(self, key, f)
            }

            fn update_with(
                &self,
                key: &[u8],
                f: &mut dyn FnMut(&[u8]) -> Vec<u8>,
            ) -> $crate::Result<bool> {
                <$ty>::update(self, key, f)
            }

            fn update_in_place_with(
                &self,
                key: &[u8],
                f: &mut dyn FnMut(&mut [u8]),
            ) -> $crate::Result<bool> {
                <$ty>::update_in_place(self, key, f)
            }
        }
    };
    (ordered impl[$($gen:tt)*] $ty:ty, iter) => {
        $crate::index_api!(ordered impl[$($gen)*] $ty);
        $crate::index_api!(@iter [$($gen)*] $ty);
    };
    (ordered impl[$($gen:tt)*] $ty:ty) => {
        impl<$($gen)*> $ty {
            /// Visits pairs in ascending key order from `start` until the visitor returns
            /// `Break` (not a snapshot: see `orrery_core::api`). The visitor runs while the
            /// pair is protected: it must not call back into the index.
            pub fn scan(
                &self,
                start: ::std::ops::Bound<&[u8]>,
                visitor: &mut $crate::api::ScanVisitor<'_>,
            ) {
                $crate::raw::RawOrdered::scan(self.raw(), start, visitor)
            }

            /// Visits pairs in descending key order from `end` down until the visitor
            /// returns `Break`: [`scan`](Self::scan) mirrored.
            pub fn scan_rev(
                &self,
                end: ::std::ops::Bound<&[u8]>,
                visitor: &mut $crate::api::ScanVisitor<'_>,
            ) {
                $crate::raw::RawOrdered::scan_rev(self.raw(), end, visitor)
            }

            /// Visits, ascending, the pairs whose key starts with `prefix`.
            pub fn scan_prefix(&self, prefix: &[u8], visitor: &mut $crate::api::ScanVisitor<'_>) {
                $crate::raw::scan_prefix(self.raw(), prefix, visitor)
            }

            /// The pair with the smallest key.
            pub fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
                $crate::raw::RawOrdered::first(self.raw())
            }

            /// The pair with the largest key.
            pub fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
                $crate::raw::RawOrdered::last(self.raw())
            }

            /// Removes every key within the bounds `start..end`; how many this call
            /// removed. Not atomic as a whole: a key inserted into the range meanwhile may
            /// survive it.
            pub fn remove_range(
                &self,
                start: ::std::ops::Bound<&[u8]>,
                end: ::std::ops::Bound<&[u8]>,
            ) -> usize {
                $crate::raw::RawOrdered::remove_range(self.raw(), start, end)
            }
        }

        impl<$($gen)*> $crate::api::OrderedKvIndex for $ty {
            fn scan(
                &self,
                start: ::std::ops::Bound<&[u8]>,
                visitor: &mut $crate::api::ScanVisitor<'_>,
            ) {
                <$ty>::scan(self, start, visitor)
            }

            fn scan_rev(
                &self,
                end: ::std::ops::Bound<&[u8]>,
                visitor: &mut $crate::api::ScanVisitor<'_>,
            ) {
                <$ty>::scan_rev(self, end, visitor)
            }

            fn scan_prefix(&self, prefix: &[u8], visitor: &mut $crate::api::ScanVisitor<'_>) {
                <$ty>::scan_prefix(self, prefix, visitor)
            }

            fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
                <$ty>::last(self)
            }

            fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
                <$ty>::first(self)
            }
        }
    };
    (@iter [$($gen:tt)*] $ty:ty) => {
        impl<$($gen)*> $ty {
            /// An iterator over all pairs in key order (ascending; `.rev()` descends): a
            /// double-ended, seekable cursor that copies one group of pairs at a time and
            /// holds no lock between calls (see `orrery_core::batch`).
            pub fn iter(&self) -> $crate::batch::BatchIter<&Self> {
                $crate::batch::BatchIter::all(self)
            }

            /// An iterator over the pairs whose keys fall in `range`, in key order
            /// (`.rev()` descends), as `BTreeMap::range`: `x.range(&b"a"[..]..&b"m"[..])`,
            /// `x.range(b"k".to_vec()..)`, or a pair of `Bound`s. An empty or inverted
            /// range yields nothing (where `BTreeMap::range` panics).
            pub fn range<K, R>(&self, range: R) -> $crate::batch::BatchIter<&Self>
            where
                K: AsRef<[u8]> + ?Sized,
                R: ::std::ops::RangeBounds<K>,
            {
                $crate::batch::BatchIter::range(self, range)
            }
        }

        impl<'a, $($gen)*> ::std::iter::IntoIterator for &'a $ty {
            type Item = $crate::batch::Entry;
            type IntoIter = $crate::batch::BatchIter<&'a $ty>;

            fn into_iter(self) -> Self::IntoIter {
                self.iter()
            }
        }
    };
    (new impl[$($gen:tt)*] $ty:ty as $name:literal, $config:ty) => {
        impl<$($gen)*> $ty {
            /// An empty index with the default configuration. If even its first memory
            /// cannot be had, this reports the failure as a failed `Box::new` does
            /// ([`std::alloc::handle_alloc_error`]); [`try_new`](Self::try_new) returns
            /// the error instead.
            pub fn new() -> Self {
                Self::try_new().unwrap_or_else(|_| $crate::raw::alloc_failure())
            }

            /// An empty index with the default configuration, or
            /// [`OutOfMemory`]($crate::Error::OutOfMemory) when its first memory cannot
            /// be had.
            pub fn try_new() -> $crate::Result<Self> {
                Self::build(<$config>::default())
            }

            /// An empty index with `config`, validated first (nothing is clamped: a field
            /// out of range is [`ConfigError::Invalid`]($crate::ConfigError::Invalid)
            /// naming it); [`ConfigError::OutOfMemory`]($crate::ConfigError::OutOfMemory)
            /// when its first memory cannot be had.
            pub fn with_config(config: $config) -> ::std::result::Result<Self, $crate::ConfigError> {
                config.validate()?;
                Self::build(config).map_err(|_| $crate::ConfigError::OutOfMemory)
            }

            /// The configuration this index was built with.
            pub fn config(&self) -> &$config {
                self.config_ref()
            }
        }

        impl<$($gen)*> ::std::default::Default for $ty {
            fn default() -> Self {
                Self::new()
            }
        }

        $crate::index_api!(collect impl[$($gen)*] $ty as $name);
    };
    (collect impl[$($gen:tt)*] $ty:ty as $name:literal) => {
        /// Bulk loading, as for `BTreeMap`: later pairs replace earlier ones with the same
        /// key.
        ///
        /// # Panics
        ///
        /// On a key or value over the limits, or out of memory; `insert_all` returns the
        /// error instead.
        impl<K: AsRef<[u8]>, V: AsRef<[u8]>, $($gen)*> ::std::iter::Extend<(K, V)> for $ty {
            fn extend<T: IntoIterator<Item = (K, V)>>(&mut self, pairs: T) {
                if let Err(e) = self.insert_all(pairs) {
                    $crate::raw::extend_failure($name, e);
                }
            }
        }

        /// Builds an index with the default configuration from pairs (see `Extend` for the
        /// panic on over-long input).
        impl<K: AsRef<[u8]>, V: AsRef<[u8]>, $($gen)*> ::std::iter::FromIterator<(K, V)>
            for $ty
        {
            fn from_iter<T: IntoIterator<Item = (K, V)>>(pairs: T) -> Self {
                let mut index = <$ty>::new();
                ::std::iter::Extend::extend(&mut index, pairs);
                index
            }
        }
    };
}

/// Writes a `Config`'s builder: `Config::builder()`, a `ConfigBuilder` with one setter per
/// named field (each documented as setting that field), and `build()`, which validates with
/// the config's inherent `validate(&self) -> Result<(), ConfigError>`. The one builder
/// mechanism of every structure.
///
/// ```
/// #[derive(Debug, Clone, Default)]
/// pub struct Config {
///     /// Slots per node.
///     pub slots: usize,
/// }
/// impl Config {
///     fn validate(&self) -> Result<(), orrery_core::ConfigError> {
///         if self.slots > 64 {
///             return Err(orrery_core::ConfigError::Invalid { field: "slots", reason: "must be at most 64" });
///         }
///         Ok(())
///     }
/// }
/// orrery_core::config_builder!(Config => ConfigBuilder { slots: usize });
/// assert_eq!(Config::builder().slots(8).build().unwrap().slots, 8);
/// assert!(Config::builder().slots(65).build().is_err());
/// ```
#[macro_export]
macro_rules! config_builder {
    ($config:ident => $builder:ident { $($field:ident : $ty:ty),* $(,)? }) => {
        impl $config {
            /// A builder starting from the defaults.
            pub fn builder() -> $builder {
                $builder {
                    config: <$config as ::std::default::Default>::default(),
                }
            }
        }

        #[doc = concat!("Builds a validated [`", stringify!($config), "`]: one setter per field, then `build()`.")]
        #[derive(Debug, Clone, Default)]
        #[must_use]
        pub struct $builder {
            config: $config,
        }

        impl $builder {
            $(
                #[doc = concat!("Sets [`", stringify!($config), "::", stringify!($field), "`].")]
                pub fn $field(mut self, value: $ty) -> Self {
                    self.config.$field = value;
                    self
                }
            )*

            /// The configuration, validated: [`ConfigError::Invalid`]($crate::ConfigError::Invalid)
            /// names a field out of its range (nothing is clamped).
            pub fn build(self) -> ::std::result::Result<$config, $crate::ConfigError> {
                self.config.validate()?;
                Ok(self.config)
            }
        }
    };
}

#[cfg(test)]
// The generated methods are `pub` on a test-private type, and not all are called.
#[allow(unreachable_pub, dead_code)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::{Bound, ControlFlow};
    use std::sync::Mutex;

    use crate::api::{self, Decision, KvIndex, KvUpdate, MemoryUsage, OrderedKvIndex, ScanVisitor};
    use crate::raw::{RawIndex, RawOrdered, WriteMode};

    /// A minimal configuration for the `new` part.
    #[derive(Debug, Default, Clone)]
    struct TinyConfig {
        fail: bool,
    }

    impl TinyConfig {
        fn validate(&self) -> Result<(), api::ConfigError> {
            Ok(())
        }
    }

    /// A minimal structure with the primitives the macro builds on.
    struct Tiny<const N: u32> {
        map: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
        config: TinyConfig,
    }

    impl<const N: u32> Tiny<N> {
        fn raw(&self) -> &Self {
            self
        }
        fn build(config: TinyConfig) -> api::Result<Self> {
            if config.fail {
                return Err(api::Error::OutOfMemory);
            }
            Ok(Tiny {
                map: Mutex::default(),
                config,
            })
        }
        fn config_ref(&self) -> &TinyConfig {
            &self.config
        }
    }

    impl<const N: u32> RawIndex for Tiny<N> {
        fn read<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
            self.map.lock().unwrap().get(key).map(|v| f(v))
        }
        fn put(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
            Ok(self
                .map
                .lock()
                .unwrap()
                .insert(key.to_vec(), value.to_vec())
                .is_none())
        }
        fn delete(&self, key: &[u8]) -> bool {
            self.map.lock().unwrap().remove(key).is_some()
        }
        fn write(
            &self,
            key: &[u8],
            _mode: WriteMode,
            decide: &mut dyn FnMut(Option<&[u8]>) -> Decision,
        ) -> api::Result<bool> {
            let mut map = self.map.lock().unwrap();
            let present = map.contains_key(key);
            match decide(map.get(key).map(Vec::as_slice)) {
                Decision::Keep => {}
                Decision::Store(v) => {
                    map.insert(key.to_vec(), v);
                }
                Decision::Remove => {
                    map.remove(key);
                }
            }
            Ok(present)
        }
        fn count(&self) -> usize {
            self.map.lock().unwrap().len()
        }
        fn bytes(&self) -> MemoryUsage {
            MemoryUsage::default()
        }
    }

    impl<const N: u32> RawOrdered for Tiny<N> {
        fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
            let map = self.map.lock().unwrap();
            for (k, v) in map.range::<[u8], _>((start, Bound::Unbounded)) {
                if visitor(k, v).is_break() {
                    break;
                }
            }
        }
        fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
            let map = self.map.lock().unwrap();
            for (k, v) in map.range::<[u8], _>((Bound::Unbounded, end)).rev() {
                if visitor(k, v).is_break() {
                    break;
                }
            }
        }
    }

    crate::index_api!(point impl[const N: u32] Tiny<N> as "Tiny");
    crate::index_api!(ordered impl[const N: u32] Tiny<N>);
    crate::index_api!(new impl[const N: u32] Tiny<N> as "Tiny", TinyConfig);

    #[test]
    fn the_traits_forward_to_the_generated_methods() {
        let t: Tiny<3> = [(b"a", b"1"), (b"b", b"2"), (b"a", b"3")]
            .into_iter()
            .collect();
        let dyn_t: &dyn OrderedKvIndex = &t;
        assert_eq!(dyn_t.len(), 2);
        assert_eq!(dyn_t.get(b"a").as_deref(), Some(&b"3"[..]));
        assert!(dyn_t.get_with(b"b", &mut |v| assert_eq!(v, b"2")));
        assert!(!dyn_t.contains_key(b"c"));
        assert_eq!(dyn_t.insert(b"c", b"4"), Ok(true));
        assert!(dyn_t.remove(b"c"));
        assert_eq!(dyn_t.first().map(|p| p.0), Some(b"a".to_vec()));
        assert_eq!(dyn_t.last().map(|p| p.0), Some(b"b".to_vec()));
        let mut seen = Vec::new();
        dyn_t.scan_rev(Bound::Unbounded, &mut |k, _| {
            seen.push(k.to_vec());
            ControlFlow::Continue(())
        });
        assert_eq!(seen, [b"b".to_vec(), b"a".to_vec()]);
        let mut got = Vec::new();
        KvIndex::get_many(&t, &[b"a", b"z"], &mut |i, v| got.push((i, v.is_some())));
        assert_eq!(got, [(0, true), (1, false)]);
        let upd: &dyn KvUpdate = &t;
        assert_eq!(upd.update_with(b"a", &mut |v| [v, b"!"].concat()), Ok(true));
        assert_eq!(t.get(b"a").as_deref(), Some(&b"3!"[..]));
        assert_eq!(upd.compute_with(b"a", &mut |_| None), Ok(true));
        assert!(!t.contains_key(b"a"));
    }

    #[test]
    fn the_edges_are_decided_before_the_primitives() {
        let t = Tiny::<0>::new();
        let long = vec![0u8; api::MAX_KEY_LEN + 1];
        assert!(matches!(
            t.update(&long, |_| unreachable!()),
            Err(api::Error::KeyTooLong { .. })
        ));
        assert!(matches!(
            t.update_in_place(&long, |_| unreachable!()),
            Err(api::Error::KeyTooLong { .. })
        ));
        assert!(matches!(
            t.compute(&long, |_| unreachable!()),
            Err(api::Error::KeyTooLong { .. })
        ));
        assert_eq!(t.get(&long), None);
        assert!(!t.remove(&long));
        t.insert(b"k", b"v").unwrap();
        let mut got = Vec::new();
        t.get_many(&[b"k", &long, b"k"], &mut |i, v| {
            got.push((i, v.map(<[u8]>::to_vec)))
        });
        assert_eq!(
            got,
            [
                (0, Some(b"v".to_vec())),
                (1, None),
                (2, Some(b"v".to_vec()))
            ]
        );
        let big = vec![0u8; api::MAX_VALUE_LEN + 1];
        assert!(matches!(
            t.compute(b"k", |_| Some(big.clone())),
            Err(api::Error::ValueTooLong { .. })
        ));
        assert_eq!(t.get(b"k").as_deref(), Some(&b"v"[..]));
        assert_eq!(t.update(b"absent", |_| unreachable!()), Ok(false));
        assert_eq!(t.update_in_place(b"k", |v| v[0] = b'w'), Ok(true));
        assert_eq!(t.get(b"k").as_deref(), Some(&b"w"[..]));
        assert!(Tiny::<0>::build(TinyConfig { fail: true }).is_err());
        assert_eq!(
            Tiny::<0>::with_config(TinyConfig { fail: true }).err(),
            Some(api::ConfigError::OutOfMemory)
        );
        assert!(!t.config().fail);
    }

    #[test]
    #[should_panic(expected = "Tiny::extend")]
    fn extend_panics_with_the_structure_name() {
        let mut t = Tiny::<0>::new();
        t.extend([(vec![0u8; api::MAX_KEY_LEN + 1], b"v".to_vec())]);
    }
}
