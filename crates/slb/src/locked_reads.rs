//! [`LockedReadSlb`]: the paper's read path (§3.1.3), kept as a separate type to measure
//! what Orrery's lock-free hits gain (feature `bench-internals`, enabled by `orrery-bench`
//! only).
//!
//! In the paper every lookup takes its key's stripe lock (`SLB_lock`) across the SLB probe,
//! the index search and the emission, and releases it after. [`Slb`] does not: hits take no
//! lock, and emissions are validated against the stripe's version instead (the protocol is
//! in the [`buffer`](crate::buffer) module docs). This type wraps an [`Slb`] and serves
//! every lookup through the locked path; writes, scans and statistics are the `Slb`'s.
//! Both read paths keep invariant (I), so the two may even be mixed over one buffer.
//!
//! Why a type and not a configuration field: a field would be checked on every lookup of
//! every `Slb`, and since Cargo unifies features, the benchmark (which enables
//! `bench-internals` and measures the default `Slb`) would measure that check too. As a
//! type, the choice is made at compile time: `Slb`'s lookup path has no trace of the
//! switch in any build, and the locked path exists only where this feature is on.
//!
//! ```
//! use orrery_core::KvIndex;
//! use orrery_core::reference::LockedBTreeMap;
//! use orrery_slb::Config;
//! use orrery_slb::locked_reads::LockedReadSlb;
//!
//! let slb = LockedReadSlb::with_config(LockedBTreeMap::new(), Config::with_cache_bytes(4096))
//!     .unwrap();
//! slb.insert(b"k", b"v").unwrap();
//! assert_eq!(slb.get(b"k").as_deref(), Some(&b"v"[..]));
//! ```

use std::ops::Bound;

use orrery_core::api::ConfigError;
use orrery_core::{KvIndex, MemoryUsage, OrderedKvIndex, Result, ScanVisitor};

use crate::{Config, Slb, SlbStats};

/// An [`Slb`] whose lookups hold their key's stripe lock across the SLB probe, the index
/// search and the emission, as the paper's (see the [module docs](self)). For measurement
/// only: [`Slb`] is the same cache with lock-free hits.
pub struct LockedReadSlb<I: ?Sized>(Slb<I>);

impl<I: KvIndex> LockedReadSlb<I> {
    /// Wraps `inner` with the paper's default SLB, read under locks.
    pub fn new(inner: I) -> std::result::Result<Self, ConfigError> {
        Slb::with_config(inner, Config::default()).map(LockedReadSlb)
    }

    /// Wraps `inner` with an SLB built from `config`, read under locks.
    pub fn with_config(inner: I, config: Config) -> std::result::Result<Self, ConfigError> {
        Slb::with_config(inner, config).map(LockedReadSlb)
    }
}

impl<I: ?Sized> LockedReadSlb<I> {
    /// The wrapped [`Slb`] (its buffer, its index; its own lookups do not lock).
    pub fn slb(&self) -> &Slb<I> {
        &self.0
    }

    /// The SLB's statistics (hit ratio, admissions, evictions...).
    pub fn stats(&self) -> SlbStats {
        self.0.stats()
    }
}

/// Read-modify-writes are the `Slb`'s (they take the stripe lock as every write does).
impl<I: KvIndex + ?Sized> orrery_core::KvUpdate for LockedReadSlb<I> {
    fn compute_with(&self, key: &[u8], f: &mut orrery_core::ComputeFn<'_>) -> Result<bool> {
        self.0.compute(key, f)
    }

    fn update_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8]) -> Vec<u8>) -> Result<bool> {
        self.0.update(key, f)
    }

    fn update_in_place_with(&self, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        self.0.update_in_place(key, f)
    }
}

impl<I: KvIndex + ?Sized> KvIndex for LockedReadSlb<I> {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        let slb = &self.0;
        slb.buffer
            .get_locked(key, f, &mut |k, g| slb.inner.get_with(k, g))
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.0.insert(key, value)
    }

    fn remove(&self, key: &[u8]) -> bool {
        self.0.remove(key)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn memory_usage(&self) -> MemoryUsage {
        self.0.memory_usage()
    }

    /// One locked lookup per key, in order (the paper has no batched lookup).
    fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        for (i, key) in keys.iter().enumerate() {
            if !self.get_with(key, &mut |v| f(i, Some(v))) {
                f(i, None);
            }
        }
    }
}

impl<I: OrderedKvIndex + ?Sized> OrderedKvIndex for LockedReadSlb<I> {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.0.scan(start, visitor);
    }

    fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.0.scan_rev(end, visitor);
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.0.last()
    }

    fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.0.first()
    }

    fn scan_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.0.scan_range(start, end, visitor);
    }

    fn scan_prefix(&self, prefix: &[u8], visitor: &mut ScanVisitor<'_>) {
        self.0.scan_prefix(prefix, visitor);
    }
}

impl<I: ?Sized> std::fmt::Debug for LockedReadSlb<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockedReadSlb")
            .field("buffer", self.0.buffer())
            .finish_non_exhaustive()
    }
}
