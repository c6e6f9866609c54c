//! Constructors of Orrery's structures as the benchmark builds them: with the run's
//! [`Settings`] (Wormhole's pre-fault and item prefetch, Mercury's load factor and
//! pre-fault), shared with a [`Probe`] (Mercury's expansions, the Cuckoo Trie's growth) or
//! with a reader of their statistics (Hyperion's memory manager, the Cuckoo Trie's table).
//! Both the facade's own names (`own`) and the bench-only configurations (`variants`)
//! build through these.

use std::sync::Arc;

use orrery::{KvIndex, OrderedKvIndex};

use super::index::{Hooks, Probe};
use crate::metrics::index_stats::StatsFn;
use crate::settings::Settings;

/// A Mercury table shared with its probe (expansion in progress?).
pub(super) fn mercury_probed(m: orrery::mercury::Mercury) -> (Box<dyn KvIndex>, Probe) {
    let m = Arc::new(m);
    let (a, b) = (Arc::clone(&m), Arc::clone(&m));
    let hooks = Hooks {
        expanding: Box::new(move || a.stats().next_buckets.is_some()),
        settle: Box::new(move || b.finish_expansion()),
    };
    (Box::new(m), Arc::new(hooks))
}

/// A Cuckoo Trie (default configuration, as the facade builds it) shared with its probe:
/// "expanding" while a growth freezes and copies its table (`CuckooTrie::is_growing`). A
/// growth completes within the writes that take part in it, so nothing is left to settle.
pub(super) fn cuckoo_trie_probed() -> (Box<dyn OrderedKvIndex>, Probe, StatsFn) {
    let ct = Arc::new(orrery::cuckoo_trie::CuckooTrie::new());
    let a = Arc::clone(&ct);
    let hooks = Hooks {
        expanding: Box::new(move || a.stats().migrating),
        settle: Box::new(|| {}),
    };
    let reader = Arc::clone(&ct);
    let stats = move || {
        let (entries, slots) = (reader.stats().entries as f64, reader.stats().slots as f64);
        [
            ("entries", entries),
            ("slots", slots),
            ("load_percent", 100.0 * entries / slots.max(1.0)),
            // The paper's Fig 11 figure for the same nodes: the table at 85% load.
            ("paper_m_bytes", entries * 16.0 / 0.85),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    };
    (Box::new(ct), Arc::new(hooks), Arc::new(stats))
}

/// A Hyperion index with `config`, shared with a reader of its memory manager's breakdown
/// (`Hyperion::stats`: chunks, their bytes, free chunks in mapped bins — external
/// fragmentation —, extended blocks and metadata, summed over arenas).
pub(super) fn hyperion_with_stats(
    config: orrery::hyperion::Config,
) -> (Box<dyn OrderedKvIndex>, StatsFn) {
    let h = Arc::new(
        orrery::hyperion::Hyperion::with_config(config)
            .expect("a Hyperion configuration built by its validating builder"),
    );
    let reader = Arc::clone(&h);
    let stats = move || {
        let m = reader.stats();
        [
            ("chunks", m.chunks),
            ("chunk_bytes", m.chunk_bytes),
            ("free_chunk_bytes", m.free_chunk_bytes),
            ("extended", m.extended),
            ("extended_bytes", m.extended_bytes),
            ("metadata_bytes", m.metadata_bytes),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v as f64))
        .collect()
    };
    (Box::new(h), Arc::new(stats))
}

/// Hyperion's configuration: the defaults, with key pre-processing (§3.4) on or off.
pub(super) fn hyperion_config(preprocess: bool) -> orrery::hyperion::Config {
    orrery::hyperion::Config::builder()
        .preprocess(preprocess)
        .build()
        .expect("the default Hyperion configuration is valid")
}

/// A Mercury table with `config` and the run's Mercury [`Settings`] (load factor,
/// pre-fault thread).
pub(super) fn mercury_config(
    s: &Settings,
    config: orrery::mercury::Config,
) -> orrery::mercury::Mercury {
    orrery::mercury::Mercury::with_config(s.mercury(config))
        .expect("a valid Mercury configuration (--mercury-load-percent is at least 1)")
}

/// A Wormhole with the Fig 11 optimizations `OPTS` (compiled in: `wormhole::ablation`) and
/// the run's Wormhole [`Settings`] (pre-fault thread, item prefetch).
pub(super) fn wormhole_with<const OPTS: u32>(s: &Settings) -> orrery::wormhole::WormholeWith<OPTS> {
    orrery::wormhole::WormholeWith::with_config(s.wormhole().build().unwrap())
        .expect("the ablation configurations use the default leaf size, which is valid")
}
