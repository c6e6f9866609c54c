//! Differential fuzzing of the reference ordered index against the BTreeMap model.
#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery_core::reference::LockedBTreeMap;
use orrery_core::testing::fuzz::{ops_from_bytes, run_differential};

fuzz_target!(|data: &[u8]| {
    run_differential(&LockedBTreeMap::new(), &ops_from_bytes(data));
});
