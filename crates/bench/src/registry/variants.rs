//! Bench-only configurations of Orrery's structures (the Wormhole Fig 11 ablation,
//! Hyperion with key pre-processing, Mercury's dedicated expand-thread and its striped and
//! lock-free variants) and the locked `BTreeMap` reference: names the library does not
//! register, for the papers' comparisons.

use orrery::wormhole::ablation;

use super::caps::Caps;
use super::entry::{Entry, Maker};
use super::make::{
    hyperion_config, hyperion_with_stats, mercury_config, mercury_probed, wormhole_with,
};

/// The bench-only configurations and the reference, in listing order.
pub(super) fn entries() -> Vec<Entry> {
    vec![
        // Fig 11 ablation: BaseWormhole, then one optimization added at a time.
        Entry::ordered(
            "wormhole-base",
            "BaseWormhole (no TagMatching, IncHashing, SortByTag, DirectPos)",
            Caps::CONCURRENT,
            |s| Box::new(wormhole_with::<{ ablation::BASE }>(s)),
        ),
        Entry::ordered(
            "wormhole+tm",
            "Wormhole +TagMatching",
            Caps::CONCURRENT,
            |s| Box::new(wormhole_with::<{ ablation::TAG_MATCHING }>(s)),
        ),
        Entry::ordered(
            "wormhole+ih",
            "Wormhole +TagMatching +IncHashing",
            Caps::CONCURRENT,
            |s| {
                Box::new(wormhole_with::<
                    { ablation::TAG_MATCHING | ablation::INC_HASHING },
                >(s))
            },
        ),
        Entry::ordered(
            "wormhole+sbt",
            "Wormhole +TagMatching +IncHashing +SortByTag",
            Caps::CONCURRENT,
            |s| {
                Box::new(wormhole_with::<
                    { ablation::TAG_MATCHING | ablation::INC_HASHING | ablation::SORT_BY_TAG },
                >(s))
            },
        ),
        // Hyperion with the paper's key pre-processing (§3.4, Hyperion_p of Table 2).
        Entry {
            name: "hyperion-prep",
            about: "Hyperion with key pre-processing (§3.4: Hyperion_p, for integer-like keys)",
            caps: Caps::CONCURRENT,
            make: Maker::OrderedStats(|_| hyperion_with_stats(hyperion_config(true))),
            check: None,
        },
        Entry::point_probed(
            "mercury-dedicated",
            "Mercury with the paper's dedicated expand-thread",
            Caps::CONCURRENT,
            |s| {
                mercury_probed(mercury_config(
                    s,
                    orrery::mercury::Config {
                        expansion: orrery::mercury::Expansion::Dedicated,
                        ..Default::default()
                    },
                ))
            },
        ),
        Entry::point(
            "mercury-striped",
            "Mercury nodes behind memcached-like striped mutexes (bench-only variant)",
            Caps::CONCURRENT,
            |_| Box::new(orrery::mercury::variants::StripedMercury::new()),
        ),
        Entry::point(
            "mercury-nolock",
            "Mercury without any synchronization, the paper's upper bound (bench-only, 1 thread)",
            Caps {
                concurrent: false,
                ..Caps::CONCURRENT
            },
            |_| {
                // SAFETY: `concurrent: false` makes the harness use this index from the one
                // thread that built it (single-thread phases run on the calling thread, loads
                // of a non-concurrent index use one thread), so no call ever runs
                // concurrently with a write, which is `NoLockMercury::new`'s contract.
                Box::new(unsafe { orrery::mercury::variants::NoLockMercury::new() })
            },
        ),
        Entry::ordered(
            "btreemap",
            "std BTreeMap behind a RwLock (orrery::reference::LockedBTreeMap)",
            Caps::CONCURRENT,
            |_| Box::new(orrery::reference::LockedBTreeMap::new()),
        ),
    ]
}
