//! Differential fuzzing of Hyperion against the BTreeMap model: the default configuration,
//! one arena with a 256-byte ejection threshold (ejection within short inputs), and key
//! pre-processing. After the operations, the concrete iterators (`iter`, `range`, `.rev()`,
//! both ends at once, `seek`) are checked against the full scan the model has just
//! confirmed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery_core::testing::fuzz::{check_batch_iterators, ops_from_bytes, run_differential, tally};
use orrery_hyperion::{Config, Hyperion};

fuzz_target!(|data: &[u8]| {
    let ops = ops_from_bytes(data);
    tally(&ops);
    let default = Hyperion::new();
    run_differential(&default, &ops);
    check_batch_iterators(&default);
    let small = Hyperion::with_config(
        Config::builder()
            .arenas(1)
            .eject_threshold(256)
            .build()
            .unwrap(),
    )
    .unwrap();
    run_differential(&small, &ops);
    check_batch_iterators(&small);
    let prep = Hyperion::with_config(Config::builder().preprocess(true).build().unwrap()).unwrap();
    run_differential(&prep, &ops);
    check_batch_iterators(&prep);
});
