//! One place for the trait impls every structure writes the same way over its inherent
//! methods: [`index_traits!`](crate::index_traits) implements [`KvIndex`](crate::KvIndex),
//! optionally [`OrderedKvIndex`](crate::OrderedKvIndex), and the std bulk conversions
//! `Extend<(K, V)>` / `FromIterator<(K, V)>` for a structure.
//!
//! A structure keeps its API as inherent methods (so users need no trait import and get the
//! generic `get_with -> Option<R>`); the traits, which stay object safe for the registry,
//! the server and the conformance suite, forward to them. What the macro needs from the
//! type, as inherent items:
//!
//! - `get_with(&self, key, f) -> Option<_>`, `get`, `contains_key`, `insert`, `remove`,
//!   `len`, `memory_usage`, `get_many` with the trait's signatures;
//! - with `ordered`: `scan`, `first`, `last`, and each method named after `+`
//!   (`scan_prefix`, `scan_range`), which the type overrides instead of taking the trait's
//!   default;
//! - `insert_all(pairs) -> Result<usize>` and `new()` for `Extend`/`FromIterator`.
//!
//! A missing inherent method would make the forwarding call the trait method itself; rustc's
//! `unconditional_recursion` lint (denied in this workspace's CI) reports that at build time.

/// Implements `KvIndex`, optionally `OrderedKvIndex`, and `Extend<(K, V)>` /
/// `FromIterator<(K, V)>` for a structure by forwarding to its inherent methods (see the
/// module docs of `orrery_core::impls` for what the type must have).
///
/// ```ignore
/// orrery_core::index_traits!(impl[] CuckooTrie as "CuckooTrie"; ordered + scan_prefix);
/// orrery_core::index_traits!(impl[const OPTS: u32] WormholeWith<OPTS> as "Wormhole"; ordered);
/// orrery_core::index_traits!(impl[] Hyperion as "Hyperion");
/// // Only `Extend`/`FromIterator`, for a type that writes its `KvIndex` impl itself:
/// orrery_core::index_traits!(extend impl[] Mercury as "Mercury");
/// ```
///
/// `Extend` panics on a key or value over the limits or out of memory, with the message
/// `"<name>::extend: <error>"` (`insert_all` returns the error instead); `FromIterator`
/// builds the structure with `new()` and extends it.
#[macro_export]
macro_rules! index_traits {
    (extend impl[$($gen:tt)*] $ty:ty as $name:literal) => {
        $crate::index_traits!(@collect [$($gen)*] $ty, $name);
    };
    (impl[$($gen:tt)*] $ty:ty as $name:literal) => {
        $crate::index_traits!(@kv [$($gen)*] $ty);
        $crate::index_traits!(@collect [$($gen)*] $ty, $name);
    };
    (impl[$($gen:tt)*] $ty:ty as $name:literal; ordered $(+ $extra:ident)*) => {
        $crate::index_traits!(@kv [$($gen)*] $ty);
        impl<$($gen)*> $crate::api::OrderedKvIndex for $ty {
            fn scan(
                &self,
                start: ::std::ops::Bound<&[u8]>,
                visitor: &mut $crate::api::ScanVisitor<'_>,
            ) {
                <$ty>::scan(self, start, visitor)
            }

            fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
                <$ty>::last(self)
            }

            fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
                <$ty>::first(self)
            }

            $($crate::index_traits!(@ordered_extra $ty, $extra);)*
        }
        $crate::index_traits!(@collect [$($gen)*] $ty, $name);
    };
    (@ordered_extra $ty:ty, scan_prefix) => {
        fn scan_prefix(&self, prefix: &[u8], visitor: &mut $crate::api::ScanVisitor<'_>) {
            <$ty>::scan_prefix(self, prefix, visitor)
        }
    };
    (@ordered_extra $ty:ty, scan_range) => {
        fn scan_range(
            &self,
            start: ::std::ops::Bound<&[u8]>,
            end: ::std::ops::Bound<&[u8]>,
            visitor: &mut $crate::api::ScanVisitor<'_>,
        ) {
            <$ty>::scan_range(self, start, end, visitor)
        }
    };
    (@kv [$($gen:tt)*] $ty:ty) => {
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
            fn insert(&self, key: &[u8], value: &[u8]) -> $crate::api::Result<bool> {
                <$ty>::insert(self, key, value)
            }

            #[inline]
            fn remove(&self, key: &[u8]) -> bool {
                <$ty>::remove(self, key)
            }

            fn len(&self) -> usize {
                <$ty>::len(self)
            }

            fn memory_usage(&self) -> $crate::api::MemoryUsage {
                <$ty>::memory_usage(self)
            }

            #[inline]
            fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
                <$ty>::get_many(self, keys, f)
            }
        }
    };
    (@collect [$($gen:tt)*] $ty:ty, $name:literal) => {
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
                    panic!("{}::extend: {e}", $name);
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::{Bound, ControlFlow};
    use std::sync::Mutex;

    use crate::api::{self, KvIndex, MemoryUsage, OrderedKvIndex, ScanVisitor};

    /// A minimal structure with the inherent API the macro forwards to.
    #[derive(Default)]
    struct Tiny<const N: u32> {
        map: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
    }

    impl<const N: u32> Tiny<N> {
        fn new() -> Self {
            Self::default()
        }
        fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
            self.map.lock().unwrap().get(key).map(|v| f(v))
        }
        fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
            self.get_with(key, <[u8]>::to_vec)
        }
        fn contains_key(&self, key: &[u8]) -> bool {
            self.get_with(key, |_| ()).is_some()
        }
        fn insert(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
            api::check_entry(key, value)?;
            Ok(self
                .map
                .lock()
                .unwrap()
                .insert(key.to_vec(), value.to_vec())
                .is_none())
        }
        fn remove(&self, key: &[u8]) -> bool {
            self.map.lock().unwrap().remove(key).is_some()
        }
        fn len(&self) -> usize {
            self.map.lock().unwrap().len()
        }
        fn memory_usage(&self) -> MemoryUsage {
            MemoryUsage::default()
        }
        fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
            for (i, k) in keys.iter().enumerate() {
                f(i, self.get(k).as_deref());
            }
        }
        fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
            let map = self.map.lock().unwrap();
            for (k, v) in map.range::<[u8], _>((start, Bound::Unbounded)) {
                if visitor(k, v).is_break() {
                    break;
                }
            }
        }
        fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
            let map = self.map.lock().unwrap();
            map.first_key_value().map(|(k, v)| (k.clone(), v.clone()))
        }
        fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
            let map = self.map.lock().unwrap();
            map.last_key_value().map(|(k, v)| (k.clone(), v.clone()))
        }
        fn scan_prefix(&self, prefix: &[u8], visitor: &mut ScanVisitor<'_>) {
            // Deliberately yields nothing, so the test can tell the override was forwarded.
            let _ = (prefix, visitor);
        }
        fn insert_all<K: AsRef<[u8]>, V: AsRef<[u8]>>(
            &self,
            pairs: impl IntoIterator<Item = (K, V)>,
        ) -> api::Result<usize> {
            let mut n = 0;
            for (k, v) in pairs {
                self.insert(k.as_ref(), v.as_ref())?;
                n += 1;
            }
            Ok(n)
        }
    }

    crate::index_traits!(impl[const N: u32] Tiny<N> as "Tiny"; ordered + scan_prefix);

    #[test]
    fn the_traits_forward_to_the_inherent_methods() {
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
        let mut seen = 0;
        dyn_t.scan(Bound::Unbounded, &mut |_, _| {
            seen += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(seen, 2);
        // The overridden prefix scan is the inherent one (which yields nothing), not the
        // trait's default on top of `scan` (which would yield "a").
        dyn_t.scan_prefix(b"a", &mut |_, _| panic!("the trait's default ran"));
        let mut got = Vec::new();
        KvIndex::get_many(&t, &[b"a", b"z"], &mut |i, v| got.push((i, v.is_some())));
        assert_eq!(got, [(0, true), (1, false)]);
    }

    #[test]
    #[should_panic(expected = "Tiny::extend")]
    fn extend_panics_with_the_structure_name() {
        let mut t = Tiny::<0>::new();
        t.extend([(vec![0u8; api::MAX_KEY_LEN + 1], b"v".to_vec())]);
    }
}
