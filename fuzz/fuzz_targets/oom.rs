//! Differential fuzzing with injected allocation failures: the fuzzer's first byte picks the
//! structure, the next eight are a schedule of failures (before insert `i`, a value `n > 0`
//! at `i % 8` makes its `n`th allocation fail through `orrery_core::alloc::failpoint`), the
//! rest are operations. A failed insert must return `OutOfMemory` and change nothing; the
//! index must stay usable and equal to the `BTreeMap` model.
#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery_core::reference::LockedBTreeMap;
use orrery_core::testing::fuzz::{
    ops_from_bytes, run_differential_point_with_failures, run_differential_with_failures, tally,
};
use orrery_mercury::Mercury;
use orrery_slb::Slb;
use orrery_wormhole::{Config, Wormhole};

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let (choice, failures, ops) = (data[0], &data[1..9], ops_from_bytes(&data[9..]));
    tally(&ops);
    // Small failure positions hit the first allocations of an insert (its pair, its leaf,
    // a split's tables); larger ones rarely fire.
    let failures: Vec<u8> = failures.iter().map(|&f| f % 8).collect();
    match choice % 4 {
        0 => run_differential_with_failures(&Wormhole::new(), &ops, &failures),
        1 => {
            // 8-key leaves: splits and merges within short inputs.
            let small =
                Wormhole::with_config(Config::builder().leaf_capacity(8).build().unwrap()).unwrap();
            run_differential_with_failures(&small, &ops, &failures);
        }
        2 => run_differential_point_with_failures(&Mercury::new(), &ops, &failures),
        _ => {
            // The SLB's own records come from its pools; the wrapped index is the reference.
            let slb = Slb::new(LockedBTreeMap::new());
            run_differential_with_failures(&slb, &ops, &failures);
        }
    }
});
