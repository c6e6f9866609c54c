//! The structures and configurations the torture runner drives: every configuration the
//! structures' conformance suites run (`crates/*/tests/conformance.rs`), each as a
//! [`Subject`] with every extra its concrete type has (iterators, `remove_range`, the
//! invariant walk, Mercury's unordered iterator).

use orrery::Entry;
use orrery::cuckoo_trie::CuckooTrie;
use orrery::hyperion::Hyperion;
use orrery::mercury::{Expansion, Mercury};
use orrery::reference::LockedBTreeMap;
use orrery::slb::Slb;
use orrery::testing::torture::{Subject, Target};
use orrery::wormhole::{Wormhole, WormholeWith, ablation};

use crate::peers::hash::LockedHashbrown;

/// One configuration: its name on the command line, what it is, how to build it.
pub(crate) struct Config {
    /// `structure` or `structure/variant`.
    pub(crate) name: &'static str,
    /// The configuration, in words.
    pub(crate) about: &'static str,
    /// A fresh subject.
    pub(crate) make: fn() -> Box<dyn Subject>,
}

fn wormhole<const OPTS: u32>(w: WormholeWith<OPTS>) -> Box<dyn Subject> {
    Box::new(
        Target::ordered(w)
            .with_rmw()
            .with_batches()
            .with_remove_range(|w: &WormholeWith<OPTS>, a, b| w.remove_range(a, b))
            .with_invariants(|w: &WormholeWith<OPTS>| w.check_invariants()),
    )
}

fn wormhole_small_leaves<const OPTS: u32>() -> WormholeWith<OPTS> {
    let config = orrery::wormhole::Config::builder()
        .leaf_capacity(8)
        .build()
        .expect("8-key leaves are valid");
    WormholeWith::<OPTS>::with_config(config).expect("a small Wormhole")
}

fn cuckoo_trie(ct: CuckooTrie) -> Box<dyn Subject> {
    Box::new(
        Target::ordered(ct)
            .with_rmw()
            .with_batches()
            .with_remove_range(|c: &CuckooTrie, a, b| c.remove_range(a, b))
            .with_invariants(|c: &CuckooTrie| c.check_invariants()),
    )
}

fn hyperion(config: orrery::hyperion::Config) -> Box<dyn Subject> {
    let h = Hyperion::with_config(config).expect("a Hyperion");
    Box::new(
        Target::ordered(h)
            .with_rmw()
            .with_batches()
            .with_remove_range(|h: &Hyperion, a, b| h.remove_range(a, b)),
    )
}

fn mercury(config: orrery::mercury::Config) -> Box<dyn Subject> {
    let m = Mercury::with_config(config).expect("a Mercury");
    Box::new(
        Target::point(m)
            .with_rmw()
            .with_unordered_iter(|m: &Mercury| m.iter().map(Entry::into_pair).collect()),
    )
}

fn one_bucket(expansion: Expansion, migrate_run: Option<usize>) -> orrery::mercury::Config {
    let mut c = orrery::mercury::Config {
        initial_buckets: 1,
        expansion,
        ..Default::default()
    };
    if let Some(run) = migrate_run {
        c.migrate_run = run;
    }
    c
}

/// The SLB conformance suite's churning configuration: four buckets (28 slots), every
/// emission logged and admitted at once, two stripes.
fn churning() -> orrery::slb::Config {
    orrery::slb::Config {
        cache_table_bytes: 4 * 64,
        admission_threshold: 1,
        log_sample_rate: 1.0,
        stripes: 2,
        ..Default::default()
    }
}

fn slb_ordered(config: orrery::slb::Config) -> Box<dyn Subject> {
    let s = Slb::with_config(LockedBTreeMap::new(), config).expect("an SLB");
    Box::new(
        Target::ordered(s)
            .with_rmw()
            .with_remove_range(|s: &Slb<LockedBTreeMap>, a, b| s.remove_range(a, b)),
    )
}

fn slb_point(config: orrery::slb::Config) -> Box<dyn Subject> {
    let s = Slb::with_config(LockedHashbrown::default(), config).expect("an SLB");
    Box::new(Target::point(s).with_rmw())
}

/// Every configuration, in order.
pub(crate) fn all() -> Vec<Config> {
    vec![
        Config {
            name: "wormhole",
            about: "Wormhole, default configuration",
            make: || wormhole(Wormhole::new()),
        },
        Config {
            name: "wormhole/small-leaves",
            about: "Wormhole, 8-key leaves (splits and merges all the time)",
            make: || wormhole(wormhole_small_leaves::<{ ablation::ALL }>()),
        },
        Config {
            name: "wormhole/base",
            about: "BaseWormhole (every optimization off), 8-key leaves",
            make: || wormhole(wormhole_small_leaves::<{ ablation::BASE }>()),
        },
        Config {
            name: "cuckoo-trie",
            about: "Cuckoo Trie, default configuration",
            make: || cuckoo_trie(CuckooTrie::new()),
        },
        Config {
            name: "cuckoo-trie/small-table",
            about: "Cuckoo Trie, 4-bucket initial table, 4-bit symbols, prefetch depth 1",
            make: || {
                let config = orrery::cuckoo_trie::Config::builder()
                    .initial_buckets(4)
                    .symbol_bits(4)
                    .prefetch_depth(1)
                    .build()
                    .expect("a small table is valid");
                cuckoo_trie(CuckooTrie::with_config(config).expect("a Cuckoo Trie"))
            },
        },
        Config {
            name: "hyperion",
            about: "Hyperion, default configuration",
            make: || hyperion(Default::default()),
        },
        Config {
            name: "hyperion/small-eject",
            about: "Hyperion, one arena, ejection threshold 256",
            make: || {
                hyperion(
                    orrery::hyperion::Config::builder()
                        .arenas(1)
                        .eject_threshold(256)
                        .build()
                        .expect("valid"),
                )
            },
        },
        Config {
            name: "hyperion/preprocess",
            about: "Hyperion with key pre-processing",
            make: || {
                hyperion(
                    orrery::hyperion::Config::builder()
                        .preprocess(true)
                        .build()
                        .expect("valid"),
                )
            },
        },
        Config {
            name: "mercury",
            about: "Mercury, default configuration",
            make: || mercury(Default::default()),
        },
        Config {
            name: "mercury/growing",
            about: "Mercury from one bucket, migrating in runs of 2 (cooperative expansion)",
            make: || mercury(one_bucket(Expansion::default(), Some(2))),
        },
        Config {
            name: "mercury/dedicated",
            about: "Mercury from one bucket, dedicated expander thread",
            make: || mercury(one_bucket(Expansion::Dedicated, None)),
        },
        Config {
            name: "mercury/word-cells",
            about: "Mercury from one bucket without inline pairs (8-byte cells, every pair a node)",
            make: || {
                mercury(orrery::mercury::Config {
                    inline_pairs: false,
                    ..one_bucket(Expansion::default(), Some(2))
                })
            },
        },
        Config {
            name: "mercury/striped",
            about: "the bench's striped-lock Mercury variant (no read-modify-writes)",
            make: || {
                Box::new(Target::point(
                    orrery::mercury::variants::StripedMercury::new(),
                ))
            },
        },
        Config {
            name: "slb/btree",
            about: "SLB (default 16 MiB) over the locked BTreeMap reference (ordered)",
            make: || slb_ordered(Default::default()),
        },
        Config {
            name: "slb/btree-churning",
            about: "SLB of 4 buckets, admit at once, 2 stripes, over the locked BTreeMap",
            make: || slb_ordered(churning()),
        },
        Config {
            name: "slb/btree-locked-reads",
            about: "the paper's locked-read SLB, churning, over the locked BTreeMap",
            make: || {
                let s = orrery::slb::locked_reads::LockedReadSlb::with_config(
                    LockedBTreeMap::new(),
                    churning(),
                )
                .expect("an SLB");
                Box::new(Target::ordered(s).with_rmw())
            },
        },
        Config {
            name: "slb/hash",
            about: "SLB (default 16 MiB) over a locked hashbrown map (point only)",
            make: || slb_point(Default::default()),
        },
        Config {
            name: "slb/hash-churning",
            about: "SLB of 4 buckets, admit at once, 2 stripes, over a locked hashbrown map",
            make: || slb_point(churning()),
        },
    ]
}

/// The configurations named in `names` (a structure's name selects all its
/// configurations; `all` selects everything).
pub(crate) fn select(names: &[String]) -> Result<Vec<Config>, String> {
    let every = all();
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok(every);
    }
    let mut out = Vec::new();
    for n in names {
        let mut matched = false;
        for c in all() {
            let family = c.name.split('/').next() == Some(n.as_str());
            if c.name == n || family {
                matched = true;
                if !out.iter().any(|o: &Config| o.name == c.name) {
                    out.push(c);
                }
            }
        }
        if !matched {
            let known: Vec<&str> = every.iter().map(|c| c.name).collect();
            return Err(format!(
                "unknown structure {n:?}; known: all, {}",
                known.join(", ")
            ));
        }
    }
    Ok(out)
}
