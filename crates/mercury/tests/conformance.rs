//! The shared conformance suite (point-operation parts) over Mercury, in its default
//! configuration and in one that starts from a single bucket and migrates in tiny runs, so
//! that every part also runs across many expansions (cooperative and dedicated), and in one
//! without inline areas (8-byte cells).

use orrery_mercury::{Config, Expansion, Mercury};

orrery_core::conformance_tests!(point, Mercury::new);

mod growing {
    use super::*;

    fn make() -> Mercury {
        Mercury::with_config(Config {
            initial_buckets: 1,
            migrate_run: 2,
            ..Config::default()
        })
        .expect("a one-bucket table")
    }

    orrery_core::conformance_tests!(point, make);
}

mod dedicated_expander {
    use super::*;

    fn make() -> Mercury {
        Mercury::with_config(Config {
            initial_buckets: 1,
            expansion: Expansion::Dedicated,
            ..Config::default()
        })
        .expect("a one-bucket table")
    }

    orrery_core::conformance_tests!(point, make);
}

/// Without inline areas (8-byte cells: every pair in a node), growing from one bucket.
mod word_cells {
    use super::*;

    fn make() -> Mercury {
        Mercury::with_config(Config {
            initial_buckets: 1,
            migrate_run: 2,
            inline_pairs: false,
            ..Config::default()
        })
        .expect("a one-bucket table")
    }

    orrery_core::conformance_tests!(point, make);
}

/// The memcached-like bench variant is thread-safe too, so it must conform as well.
#[cfg(feature = "bench-internals")]
mod striped_variant {
    orrery_core::conformance_tests!(
        point,
        orrery_mercury::variants::StripedMercury::new,
        without_rmw
    );
}
