//! Differential fuzzing of the SLB (over the reference `LockedBTreeMap`) against the
//! BTreeMap model. The first byte picks a small SLB configuration, so that admissions,
//! evictions, invalidations and updates all happen within short inputs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery_core::reference::LockedBTreeMap;
use orrery_core::testing::fuzz::{ops_from_bytes, run_differential, tally};
use orrery_slb::{Slb, Config};

fuzz_target!(|data: &[u8]| {
    let Some((&choice, ops)) = data.split_first() else {
        return;
    };
    let config = Config {
        // One or two buckets (7 or 14 slots): constant eviction.
        cache_table_bytes: 64 << (choice & 1),
        // Admission at the first, second or third emission.
        admission_threshold: 1 + usize::from(choice >> 1 & 3).min(2),
        // While a bucket has an empty slot: admission at the first emission, or the above.
        warm_admission_threshold: if choice & 32 == 0 {
            1
        } else {
            1 + usize::from(choice >> 1 & 3).min(2)
        },
        // Every emission logged, or the paper's 5% once a bucket is full.
        log_sample_rate: if choice & 8 == 0 { 1.0 } else { 0.05 },
        // Small items only, or the API limits.
        max_item_bytes: if choice & 16 == 0 { 64 } else { 4096 },
        stripes: 2,
        ..Config::default()
    };
    let slb = Slb::with_config(LockedBTreeMap::new(), config).expect("valid configuration");
    let ops = ops_from_bytes(ops);
    tally(&ops);
    run_differential(&slb, &ops);
});
