//! Differential fuzzing of the reference through point operations only: the template for
//! unordered indexes (Mercury).
#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery_core::reference::LockedBTreeMap;
use orrery_core::testing::fuzz::{ops_from_bytes, run_differential_point};

fuzz_target!(|data: &[u8]| {
    run_differential_point(&LockedBTreeMap::new(), &ops_from_bytes(data));
});
