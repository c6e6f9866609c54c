//! Differential fuzzing of Wormhole against the BTreeMap model: the default configuration,
//! and 8-key leaves (splits and merges within short inputs) with and without the lookup
//! optimizations. After the operations, the concrete iterators (`iter`, `range`, `.rev()`,
//! both ends at once, `seek`) are checked against the full scan the model has just
//! confirmed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery_core::testing::fuzz::{check_batch_iterators, ops_from_bytes, run_differential, tally};
use orrery_wormhole::{Config, Wormhole, WormholeWith, ablation};

fuzz_target!(|data: &[u8]| {
    let ops = ops_from_bytes(data);
    tally(&ops);
    let default = Wormhole::new();
    run_differential(&default, &ops);
    check_batch_iterators(&default);
    let small = Wormhole::with_config(Config::builder().leaf_capacity(8).build().unwrap()).unwrap();
    run_differential(&small, &ops);
    check_batch_iterators(&small);
    let base = WormholeWith::<{ ablation::BASE }>::with_config(
        Config::builder().leaf_capacity(8).build().unwrap(),
    )
    .unwrap();
    run_differential(&base, &ops);
    check_batch_iterators(&base);
});
