//! Deliberately broken indexes: proof that the suite can fail.
//!
//! [`Broken`] wraps a correct index and injects one [`Fault`], each a bug real indexes have
//! had: lost inserts, unordered or lossy scans, off-by-one bounds, ignored limits, stale
//! reads, miscounted `len`, racy check-then-act inserts, collisions of keys that differ only
//! in trailing zero bytes, wrong memory accounting. The self-tests
//! (`crates/core/tests/conformance_selftest.rs`) assert that the parts meant to catch each
//! fault return `Err` on it, and every part returns `Ok` on the correct reference.
//!
//! `scan_rev` is forwarded to the wrapped index's (the reference's real descending scan).
//! Scan-derived methods (`scan_range`, `scan_prefix`, `first`) are not forwarded but left to
//! the trait's defaults on top of the wrapper's `scan`, so a scan fault shows in all of them.

use std::collections::HashMap;
use std::ops::{Bound, ControlFlow};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::api::{
    KvIndex, KvUpdate, MAX_KEY_LEN, MemoryUsage, OrderedKvIndex, Result, ScanVisitor, check_entry,
};

/// The bug [`Broken`] injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Every `n`th call to `insert` reports the right result but stores nothing.
    LoseEveryNthInsert(usize),
    /// Scans yield their second pair before their first.
    SwapFirstTwoScanPairs,
    /// Scans silently skip every `n`th pair they would yield.
    DropEveryNthScanPair(usize),
    /// A scan from `Excluded(k)` starts at `k` as if `Included(k)`.
    ExcludedStartAsIncluded,
    /// `scan_prefix` yields one pair past the end of the prefix.
    PrefixScanOverrun,
    /// `last` returns the first pair.
    LastReturnsFirst,
    /// Over-long keys are truncated to `MAX_KEY_LEN` and stored instead of rejected.
    AcceptOverLongKeys,
    /// An insert rejected for its over-long value first removes the key it names.
    ChangeOnRejectedInsert,
    /// Every `n`th lookup of a key that was upserted returns its previous value.
    StaleReadEveryNth(usize),
    /// Every `n`th lookup of a present key is answered from the calling thread's own cache
    /// of the last value it read or inserted for that key, never invalidated by other
    /// threads' writes or by read-modify-writes: a stale read that only concurrency (or a
    /// `compute`) reveals.
    StaleThreadCacheEveryNth(usize),
    /// `len` is decremented by every `remove`, even of an absent key.
    LenCountsFailedRemoves,
    /// `insert` always reports the key as new.
    InsertAlwaysNew,
    /// `remove` always reports the key as present (and removes it if it was).
    RemoveAlwaysTrue,
    /// `insert` decides "new" by a lookup before storing, not atomically (racy under threads).
    RacyInsert,
    /// Keys are stored with trailing `0x00` bytes stripped, so `a`, `a\0`, `a\0\0` collide.
    StripTrailingZeros,
    /// `get_many` reports its results in reverse order.
    GetManyReversed,
    /// `memory_usage` reports only the wrapper's own size.
    UnderReportMemory,
    /// `memory_usage` adds the bytes of every replaced value, as if leaked.
    LeakOnUpsert,
    /// `insert` stores the pair, then allocates a block for it (from a
    /// [`SlabPool`](crate::alloc::SlabPool), so the test fail point reaches it) and
    /// reports `OutOfMemory` when that fails: a half-applied insert.
    StoreBeforeAllocating,
    /// `update` of an over-long key answers `Ok(false)` instead of `Err(KeyTooLong)`.
    UpdateOverLongKeyOkFalse,
    /// `compute` whose closure returns `None` for a present key leaves the key in place.
    ComputeNoneKeepsKey,
    /// `update_in_place` calls its closure on a copy and never stores it.
    UpdateInPlaceLost,
    /// `scan_rev` skips the first pair it would yield.
    ScanRevSkipsFirst,
    /// `compute` reads the value, lets the closure decide, and writes in a second step:
    /// not atomic (racy under threads).
    RacyCompute,
    /// `insert` allocates a block first (as above) and reports `OutOfMemory` before
    /// storing anything when that fails: correct, for the suite's own check that it passes.
    AllocateBeforeStoring,
}

/// A correct index `I` with one [`Fault`] injected.
#[derive(Debug)]
pub struct Broken<I> {
    inner: I,
    fault: Fault,
    calls: AtomicUsize,
    failed_removes: AtomicUsize,
    leaked: AtomicUsize,
    previous: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
    /// Blocks for the allocation faults.
    pool: crate::alloc::SlabPool,
    /// Distinguishes wrappers in [`Fault::StaleThreadCacheEveryNth`]'s thread caches.
    id: usize,
}

impl<I> Broken<I> {
    /// `inner` with `fault` injected.
    pub fn new(inner: I, fault: Fault) -> Self {
        Broken {
            inner,
            fault,
            calls: AtomicUsize::new(0),
            failed_removes: AtomicUsize::new(0),
            leaked: AtomicUsize::new(0),
            previous: Mutex::new(HashMap::new()),
            pool: crate::alloc::SlabPool::new(64, 8).unwrap_or_else(|e| {
                unreachable!("64-byte slab objects are valid: {e}");
            }),
            id: {
                static NEXT: AtomicUsize = AtomicUsize::new(0);
                NEXT.fetch_add(1, Ordering::Relaxed)
            },
        }
    }

    /// Allocates and frees one block: `Err(OutOfMemory)` when the allocation fails.
    fn allocate(&self) -> Result<()> {
        let p = self.pool.try_alloc()?;
        // SAFETY: allocated just above from this pool, unused afterwards.
        unsafe { self.pool.free(p) };
        Ok(())
    }

    /// The injected fault.
    pub fn fault(&self) -> Fault {
        self.fault
    }

    /// Counts a call and says whether it is an `n`th one.
    fn nth(&self, n: usize) -> bool {
        (self.calls.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(n.max(1))
    }

    fn key<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        if self.fault == Fault::StripTrailingZeros {
            let end = key.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
            &key[..end]
        } else {
            key
        }
    }
}

/// (wrapper id, key) → the value this thread last read or inserted.
type ThreadCache = std::cell::RefCell<HashMap<(usize, Vec<u8>), Vec<u8>>>;

std::thread_local! {
    /// [`Fault::StaleThreadCacheEveryNth`]'s per-thread cache.
    static THREAD_CACHE: ThreadCache = std::cell::RefCell::new(HashMap::new());
}

impl<I> Broken<I> {
    fn remember(&self, key: &[u8], value: &[u8]) {
        let id = self.id;
        THREAD_CACHE.with(|c| c.borrow_mut().insert((id, key.to_vec()), value.to_vec()));
    }

    fn recall(&self, key: &[u8]) -> Option<Vec<u8>> {
        let id = self.id;
        THREAD_CACHE.with(|c| c.borrow().get(&(id, key.to_vec())).cloned())
    }
}

impl<I: KvIndex> KvIndex for Broken<I> {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        let key = self.key(key);
        if let Fault::StaleThreadCacheEveryNth(n) = self.fault {
            if let Some(old) = self.recall(key)
                && self.inner.contains_key(key)
                && self.nth(n)
            {
                f(&old);
                return true;
            }
            let mut seen = None;
            let found = self.inner.get_with(key, &mut |v| {
                seen = Some(v.to_vec());
                f(v)
            });
            if let Some(v) = seen {
                self.remember(key, &v);
            }
            return found;
        }
        if let Fault::StaleReadEveryNth(n) = self.fault {
            let previous = self.previous.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(old) = previous.get(key)
                && self.inner.contains_key(key)
                && self.nth(n)
            {
                f(old);
                return true;
            }
        }
        self.inner.get_with(key, f)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        let key = self.key(key);
        match self.fault {
            Fault::LoseEveryNthInsert(n) => {
                check_entry(key, value)?;
                if self.nth(n) {
                    return Ok(!self.inner.contains_key(key));
                }
            }
            Fault::AcceptOverLongKeys if key.len() > MAX_KEY_LEN => {
                return self.inner.insert(&key[..MAX_KEY_LEN], value);
            }
            Fault::ChangeOnRejectedInsert => {
                if let Err(e) = check_entry(key, value) {
                    self.inner.remove(key);
                    return Err(e);
                }
            }
            Fault::StoreBeforeAllocating => {
                let new = self.inner.insert(key, value)?;
                self.allocate()?;
                return Ok(new);
            }
            Fault::AllocateBeforeStoring => {
                check_entry(key, value)?;
                self.allocate()?;
            }
            Fault::StaleReadEveryNth(_) | Fault::LeakOnUpsert => {
                check_entry(key, value)?;
                let mut old = None;
                self.inner.get_with(key, &mut |v| old = Some(v.to_vec()));
                if let Some(old) = old {
                    self.leaked.fetch_add(old.len(), Ordering::Relaxed);
                    self.previous
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(key.to_vec(), old);
                }
            }
            Fault::InsertAlwaysNew => return self.inner.insert(key, value).map(|_| true),
            Fault::StaleThreadCacheEveryNth(_) => {
                let new = self.inner.insert(key, value)?;
                self.remember(key, value);
                return Ok(new);
            }
            Fault::RacyInsert => {
                check_entry(key, value)?;
                let new = !self.inner.contains_key(key);
                // Widen the window between the check and the act (without yielding the CPU,
                // which is slow on a busy machine).
                for _ in 0..256 {
                    std::hint::spin_loop();
                }
                self.inner.insert(key, value)?;
                return Ok(new);
            }
            _ => {}
        }
        self.inner.insert(key, value)
    }

    fn remove(&self, key: &[u8]) -> bool {
        let key = self.key(key);
        let found = self.inner.remove(key);
        if found && matches!(self.fault, Fault::StaleReadEveryNth(_)) {
            self.previous
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(key);
        }
        match self.fault {
            Fault::LenCountsFailedRemoves if !found => {
                self.failed_removes.fetch_add(1, Ordering::Relaxed);
                false
            }
            Fault::RemoveAlwaysTrue => true,
            _ => found,
        }
    }

    fn len(&self) -> usize {
        self.inner
            .len()
            .saturating_sub(self.failed_removes.load(Ordering::Relaxed))
    }

    fn memory_usage(&self) -> MemoryUsage {
        match self.fault {
            Fault::UnderReportMemory => MemoryUsage {
                structure_bytes: size_of::<Self>(),
                key_value_bytes: 0,
            },
            _ => {
                let mut m = self.inner.memory_usage();
                m.structure_bytes += self.leaked.load(Ordering::Relaxed)
                    * usize::from(self.fault == Fault::LeakOnUpsert);
                m
            }
        }
    }

    fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        if self.fault != Fault::GetManyReversed {
            for (i, key) in keys.iter().enumerate() {
                if !self.get_with(key, &mut |v| f(i, Some(v))) {
                    f(i, None);
                }
            }
            return;
        }
        for (i, key) in keys.iter().enumerate().rev() {
            if !self.get_with(key, &mut |v| f(i, Some(v))) {
                f(i, None);
            }
        }
    }
}

impl<I: KvUpdate> KvUpdate for Broken<I> {
    fn compute_with(&self, key: &[u8], f: &mut crate::api::ComputeFn<'_>) -> Result<bool> {
        let key = self.key(key);
        if self.fault == Fault::RacyCompute {
            crate::api::check_key(key)?;
            let old = self.inner.get(key);
            // Widen the window between the read and the write (without yielding the CPU).
            for _ in 0..256 {
                std::hint::spin_loop();
            }
            return match f(old.as_deref()) {
                Some(v) => self.inner.insert(key, &v).map(|_| old.is_some()),
                None => Ok(self.inner.remove(key)),
            };
        }
        if self.fault == Fault::ComputeNoneKeepsKey {
            return self
                .inner
                .compute_with(key, &mut |old| f(old).or_else(|| old.map(<[u8]>::to_vec)));
        }
        self.inner.compute_with(key, f)
    }

    fn update_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8]) -> Vec<u8>) -> Result<bool> {
        let key = self.key(key);
        if self.fault == Fault::UpdateOverLongKeyOkFalse && key.len() > MAX_KEY_LEN {
            return Ok(false);
        }
        self.inner.update_with(key, f)
    }

    fn update_in_place_with(&self, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        let key = self.key(key);
        if self.fault == Fault::UpdateInPlaceLost {
            return self
                .inner
                .update_in_place_with(key, &mut |v| f(&mut v.to_vec()));
        }
        self.inner.update_in_place_with(key, f)
    }
}

/// Iteration is forwarded without a fault, so a scan fault shows as a difference between
/// the scan and the iterator.
impl<I: crate::batch::BatchSource> crate::batch::BatchSource for Broken<I> {
    fn fill_front(
        &self,
        start: Bound<&[u8]>,
        out: &mut crate::batch::PairBatch,
    ) -> Option<Bound<Vec<u8>>> {
        self.inner.fill_front(start, out)
    }

    fn fill_back(
        &self,
        end: Bound<&[u8]>,
        out: &mut crate::batch::PairBatch,
    ) -> Option<Bound<Vec<u8>>> {
        self.inner.fill_back(end, out)
    }
}

impl<I: OrderedKvIndex> OrderedKvIndex for Broken<I> {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        let start = match (self.fault, start) {
            (Fault::ExcludedStartAsIncluded, Bound::Excluded(k)) => Bound::Included(k),
            (_, b) => b.map(|k| self.key(k)),
        };
        match self.fault {
            Fault::SwapFirstTwoScanPairs => {
                let mut held: Option<(Vec<u8>, Vec<u8>)> = None;
                let mut seen = 0usize;
                let mut stopped = false;
                self.inner.scan(start, &mut |k, v| {
                    seen += 1;
                    match seen {
                        1 => {
                            held = Some((k.to_vec(), v.to_vec()));
                            ControlFlow::Continue(())
                        }
                        2 => {
                            let first = held.take().expect("held since pair 1");
                            if visitor(k, v).is_break() {
                                stopped = true;
                                return ControlFlow::Break(());
                            }
                            let flow = visitor(&first.0, &first.1);
                            stopped = flow.is_break();
                            flow
                        }
                        _ => {
                            let flow = visitor(k, v);
                            stopped = flow.is_break();
                            flow
                        }
                    }
                });
                if let (Some((k, v)), false) = (held, stopped) {
                    let _ = visitor(&k, &v);
                }
            }
            Fault::DropEveryNthScanPair(n) => {
                let mut seen = 0usize;
                self.inner.scan(start, &mut |k, v| {
                    seen += 1;
                    if seen.is_multiple_of(n.max(1)) {
                        ControlFlow::Continue(())
                    } else {
                        visitor(k, v)
                    }
                });
            }
            _ => self.inner.scan(start, visitor),
        }
    }

    fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        let end = end.map(|k| self.key(k));
        if self.fault != Fault::ScanRevSkipsFirst {
            return self.inner.scan_rev(end, visitor);
        }
        let mut skipped = false;
        self.inner.scan_rev(end, &mut |k, v| {
            if skipped {
                visitor(k, v)
            } else {
                skipped = true;
                ControlFlow::Continue(())
            }
        });
    }

    fn scan_prefix(&self, prefix: &[u8], visitor: &mut ScanVisitor<'_>) {
        let overrun = self.fault == Fault::PrefixScanOverrun;
        self.scan(Bound::Included(prefix), &mut |k, v| {
            if k.starts_with(prefix) {
                visitor(k, v)
            } else if overrun {
                let _ = visitor(k, v);
                ControlFlow::Break(())
            } else {
                ControlFlow::Break(())
            }
        });
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        if self.fault == Fault::LastReturnsFirst {
            self.first()
        } else {
            self.inner.last()
        }
    }
}
