//! The shared conformance suite, on the default configuration and on 8-key leaves (so that
//! splits and merges happen within every check) with all optimizations off (BaseWormhole).

mod default {
    use orrery_wormhole::Wormhole;
    orrery_core::conformance_tests!(ordered, Wormhole::new);
}

mod small_leaves {
    use orrery_wormhole::Wormhole;
    orrery_core::conformance_tests!(ordered, || Wormhole::builder()
        .leaf_capacity(8)
        .build()
        .unwrap());
}

mod base_wormhole {
    use orrery_wormhole::Wormhole;
    orrery_core::conformance_tests!(ordered, || Wormhole::builder()
        .leaf_capacity(8)
        .tag_matching(false)
        .inc_hashing(false)
        .sort_by_tag(false)
        .direct_pos(false)
        .build()
        .unwrap());
}
