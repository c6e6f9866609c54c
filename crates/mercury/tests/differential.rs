//! The fuzz target's differential check (`fuzz/fuzz_targets/mercury.rs`) on pseudo-random
//! inputs, so that every `cargo test` runs it: operation sequences decoded from random bytes
//! (short keys and 0-12 byte values, so pairs cross the 16-byte inline limit both ways,
//! sometimes long keys and values) against the `BTreeMap` model, in the default table and in
//! a one-bucket table that expands within a few inserts.

use orrery_core::testing::fuzz::{ops_from_bytes, run_differential_point};
use orrery_mercury::{Config, Mercury};
use rand::Rng;

#[test]
fn random_inputs_match_the_model() {
    let inputs = if cfg!(miri) { 2 } else { 300 };
    let mut rng = orrery_core::testing::rng::rng(0x9E37_79B9_7F4A_7C15);
    let mut next = move || rng.random::<u64>();
    for _ in 0..inputs {
        let len = 256 + (next() % 8192) as usize;
        let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let ops = ops_from_bytes(&data);
        run_differential_point(&Mercury::new(), &ops);
        let tiny = Mercury::with_config(Config {
            initial_buckets: 1,
            migrate_run: 2,
            ..Config::default()
        })
        .expect("a one-bucket table");
        run_differential_point(&tiny, &ops);
    }
}
