//! Differential fuzzing of the Cuckoo Trie against the BTreeMap model: the default
//! configuration, and a 4-bucket initial table with 1-bit and 4-bit symbols (relocation,
//! growth, jump chains and their splits and collapses within short inputs). After the
//! operations, the concrete iterators (`iter`, `range`, `.rev()`, both ends at once, `seek`)
//! are checked against the full scan the model has just confirmed: ascending ones walk the
//! next-leaf locators, descending ones the trie backwards.
#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery_core::testing::fuzz::{check_batch_iterators, ops_from_bytes, run_differential, tally};
use orrery_cuckoo_trie::{Config, CuckooTrie};

fuzz_target!(|data: &[u8]| {
    let ops = ops_from_bytes(data);
    tally(&ops);
    let default = CuckooTrie::new();
    run_differential(&default, &ops);
    check_batch_iterators(&default);
    for bits in [1, 4] {
        let config = Config::builder()
            .initial_buckets(4)
            .symbol_bits(bits)
            .prefetch_depth(2)
            .build()
            .unwrap();
        let small = CuckooTrie::with_config(config).unwrap();
        run_differential(&small, &ops);
        check_batch_iterators(&small);
    }
});
