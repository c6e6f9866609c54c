//! Orrery's own structures, one entry per name of the facade's registry
//! ([`orrery::registry`]), so that a structure added there is in the benchmark too.

use orrery::wormhole::ablation;

use super::caps::Caps;
use super::entry::{Entry, Maker};
use super::make::{
    cuckoo_trie_probed, hyperion_config, hyperion_with_stats, mercury_config, mercury_probed,
    wormhole_with,
};

/// Orrery's own structures, as the facade's registry ([`orrery::registry`]) names them, in
/// its order: a structure added there is in the benchmark too. The facade builds each in
/// its default configuration; the two whose configuration the run's [`Settings`](crate::settings::Settings) change
/// (Wormhole's pre-fault and item prefetch, Mercury's load factor and pre-fault, plus
/// Mercury's expansion probe) are built here with those settings.
pub(super) fn entries() -> Vec<Entry> {
    own_capabilities()
        .iter()
        .map(|&(name, capability)| {
            let make = match name {
                "wormhole" => Maker::Ordered(|s| Box::new(wormhole_with::<{ ablation::ALL }>(s))),
                "mercury" => {
                    Maker::PointProbed(|s| mercury_probed(mercury_config(s, Default::default())))
                }
                // The facade's default configuration, plus its memory-manager statistics.
                "hyperion" => Maker::OrderedStats(|_| hyperion_with_stats(hyperion_config(false))),
                // The facade's default configuration, plus its growth probe and its
                // table's statistics.
                "cuckoo-trie" => Maker::OrderedProbedStats(|_| cuckoo_trie_probed()),
                _ => Maker::Facade(name),
            };
            Entry {
                name,
                about: own_about(name),
                caps: Caps {
                    ordered: capability == orrery::registry::Capability::Ordered,
                    ..Caps::CONCURRENT
                },
                make,
                check: None,
            }
        })
        .collect()
}

/// The facade's names with their capability, learnt once per process by building each
/// (the facade says what a structure can do only of a built one).
fn own_capabilities() -> &'static [(&'static str, orrery::registry::Capability)] {
    static CAPS: std::sync::OnceLock<Vec<(&'static str, orrery::registry::Capability)>> =
        std::sync::OnceLock::new();
    CAPS.get_or_init(|| {
        orrery::registry::names()
            .into_iter()
            .filter_map(|name| match orrery::registry::build(name) {
                Ok(i) => Some((name, i.capability())),
                Err(e) => {
                    eprintln!("warning: orrery::registry cannot build {name:?}: {e}");
                    None
                }
            })
            .collect()
    })
}

/// One line about one of our structures, for listings.
fn own_about(name: &str) -> &'static str {
    match name {
        "wormhole" => "Wormhole (Wu et al. 2019): hashed MetaTrie over sorted leaves",
        "mercury" => "Mercury chained hash (cooperative expansion)",
        "cuckoo-trie" => {
            "Cuckoo Trie (Zeitak & Morrison 2021): key-eliminating cuckoo table of trie nodes, MLP search"
        }
        "hyperion" => {
            "Hyperion (Mäsker et al. 2019): 65,536-ary trie of exact-fit containers, own memory manager, arenas"
        }
        _ => "an Orrery structure (orrery::registry)",
    }
}
