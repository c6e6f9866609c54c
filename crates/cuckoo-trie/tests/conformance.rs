//! The shared conformance suite, on the default configuration and on a 4-bucket initial
//! table (so that relocation and growth happen within every check) with 4-bit symbols and
//! a prefetch depth of 1, iterator parts included.

use std::ops::Bound;

use orrery_core::testing::{Cursor, CursorUnderTest};
use orrery_cuckoo_trie::{CuckooTrie, Iter};

/// The concrete iterator over `[lo, hi]`, for the iterator parts.
fn open<'a>(
    ct: &'a CuckooTrie,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
) -> Box<dyn CursorUnderTest + 'a> {
    Box::new(Cursor::new(
        ct.range::<[u8], _>((lo, hi)),
        |it: &mut Iter<'_>, b| it.seek(b),
    ))
}

mod default {
    use orrery_cuckoo_trie::CuckooTrie;
    orrery_core::conformance_tests!(ordered, CuckooTrie::new, iter = super::open);
}

mod small_table {
    use orrery_cuckoo_trie::{Config, CuckooTrie};
    orrery_core::conformance_tests!(
        ordered,
        || CuckooTrie::with_config(
            Config::builder()
                .initial_buckets(4)
                .symbol_bits(4)
                .prefetch_depth(1)
                .build()
                .unwrap()
        )
        .unwrap(),
        iter = super::open
    );
}
