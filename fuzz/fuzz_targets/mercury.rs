//! Differential fuzzing of Mercury (point operations) against the `BTreeMap` model, in the
//! default configuration and in a one-bucket table that expands (and migrates in runs of
//! two buckets) within a few inserts, so that expansions interleave with every operation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery_core::testing::fuzz::{ops_from_bytes, run_differential_point, tally};
use orrery_mercury::{Config, Mercury};

fuzz_target!(|data: &[u8]| {
    let ops = ops_from_bytes(data);
    tally(&ops);
    run_differential_point(&Mercury::new(), &ops);
    let tiny = Mercury::with_config(Config {
        initial_buckets: 1,
        migrate_run: 2,
        ..Config::default()
    })
    .expect("a one-bucket table");
    run_differential_point(&tiny, &ops);
});
