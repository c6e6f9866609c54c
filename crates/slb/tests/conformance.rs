//! The conformance suite over the SLB: ordered over `LockedBTreeMap`, point over a hash
//! table (`HashIndex`, a `Mutex<HashMap>` test double standing in for the hash peers of
//! orrery-bench), each with the paper's default 16 MiB SLB and with a tiny SLB that churns
//! (4 buckets, every emission logged, admission at the first emission), so that the suite's
//! operations run through hits, admissions, evictions, invalidations and updates.

mod common;

use orrery_slb::Config;

/// Four buckets (28 slots), every emission logged and admitted at once, two stripes.
fn churning() -> Config {
    Config {
        cache_table_bytes: 4 * 64,
        admission_threshold: 1,
        log_sample_rate: 1.0,
        stripes: 2,
        ..Config::default()
    }
}

mod ordered_default {
    use orrery_core::reference::LockedBTreeMap;
    use orrery_slb::Slb;

    orrery_core::conformance_tests!(ordered, || Slb::new(LockedBTreeMap::new()));
}

mod ordered_churning {
    use orrery_core::reference::LockedBTreeMap;
    use orrery_slb::Slb;

    orrery_core::conformance_tests!(ordered, || {
        Slb::with_config(LockedBTreeMap::new(), super::churning()).unwrap()
    });
}

mod point_default {
    use super::common::HashIndex;
    use orrery_slb::Slb;

    orrery_core::conformance_tests!(point, || Slb::new(HashIndex::new()));
}

mod point_churning {
    use super::common::HashIndex;
    use orrery_slb::Slb;

    orrery_core::conformance_tests!(point, || {
        Slb::with_config(HashIndex::new(), super::churning()).unwrap()
    });
}

/// The paper's locking (lookups hold the stripe lock), churning.
#[cfg(feature = "bench-internals")]
mod ordered_locked_reads {
    use orrery_core::reference::LockedBTreeMap;
    use orrery_slb::locked_reads::LockedReadSlb;

    orrery_core::conformance_tests!(ordered, || {
        LockedReadSlb::with_config(LockedBTreeMap::new(), super::churning()).unwrap()
    });
}
