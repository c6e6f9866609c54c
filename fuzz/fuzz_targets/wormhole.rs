//! Differential fuzzing of Wormhole against the BTreeMap model: the default configuration,
//! and 8-key leaves (splits and merges within short inputs) with and without the lookup
//! optimizations.
#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery_core::testing::fuzz::{ops_from_bytes, run_differential};
use orrery_wormhole::Wormhole;

fuzz_target!(|data: &[u8]| {
    let ops = ops_from_bytes(data);
    run_differential(&Wormhole::new(), &ops);
    let small = Wormhole::with_config(orrery_wormhole::Config::builder().leaf_capacity(8).build().unwrap()).unwrap();
    run_differential(&small, &ops);
    let base = Wormhole::with_config(orrery_wormhole::Config::builder()
        .leaf_capacity(8)
        .tag_matching(false)
        .inc_hashing(false)
        .sort_by_tag(false)
        .direct_pos(false)
        .build().unwrap())
        .unwrap();
    run_differential(&base, &ops);
});
