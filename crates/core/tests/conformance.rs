//! The conformance suite on the reference index, `LockedBTreeMap`: the suite's own baseline
//! (every part must pass on the executable specification).
#![cfg(feature = "testing")]

use orrery_core::reference::LockedBTreeMap;

orrery_core::conformance_tests!(ordered, LockedBTreeMap::new);

/// The point-only arm of the macro, on the same reference seen as an unordered index.
mod point {
    use orrery_core::reference::LockedBTreeMap;

    orrery_core::conformance_tests!(point, || LockedBTreeMap::new());
}
