//! The conformance suite on the reference index, `LockedBTreeMap`: the suite's own baseline
//! (every part must pass on the executable specification).
#![cfg(feature = "testing")]

use orrery_core::reference::LockedBTreeMap;

// `std_alloc`: the reference allocates only from the standard library, which the test fail
// point of `orrery_core::alloc` cannot reach, so the out-of-memory part is left out.
orrery_core::conformance_tests!(ordered, LockedBTreeMap::new, std_alloc);

/// The point-only arm of the macro, on the same reference seen as an unordered index.
mod point {
    use orrery_core::reference::LockedBTreeMap;

    orrery_core::conformance_tests!(point, || LockedBTreeMap::new(), std_alloc);
}
