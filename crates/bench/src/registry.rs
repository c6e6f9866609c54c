//! The index registry: names → constructors with capability flags.
//!
//! Everything the benchmark runs is an [`AnyIndex`]: a boxed [`orrery::OrderedKvIndex`] or
//! [`orrery::KvIndex`] trait object. Orrery's own structures come from the facade's
//! registry ([`orrery::registry`], which `orrery-server` uses too): every name it lists is
//! an entry here, built by it, so a structure added to the facade needs nothing here
//! (`own_entries`; only structures whose configuration the run's [`Settings`] change are
//! built here with them). Bench-only configurations (the Wormhole ablation, Mercury
//! variants) and peers are entries of this file, one each, e.g.
//!
//! ```ignore
//! Entry::ordered("scc-tree", "scc TreeIndex", Caps::PEER, |_| Box::<scc::SccTree>::default()),
//! ```
//!
//! after which the name works in `run --index`, in suites, in `indexes`, in reports, and
//! wrapped by the SLB as `slb:wormhole`. Peers enter the same way through thin adapters
//! (`peers/`). `slb:<name>` resolves `<name>` first, then wraps it with the SLB (16 MiB Cache
//! Table); `slb16:`, `slb32:`, `slb64:<name>` choose the Cache Table size in MiB (the
//! paper's Table 2; any power of two from 1 to 1024 is accepted).

use std::ops::Bound;
use std::sync::Arc;

use orrery::api::ScanVisitor;
use orrery::wormhole::ablation;
use orrery::{KvIndex, MemoryUsage, OrderedKvIndex, Result};

use crate::metrics::index_stats::StatsFn;
use crate::peers;
use crate::settings::Settings;

/// What an index can do, checked before a run so that an impossible pairing is a clear
/// message rather than a wrong number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Caps {
    /// Supports ordered scans (`OrderedKvIndex`).
    pub(crate) ordered: bool,
    /// May be used from several threads at once.
    pub(crate) concurrent: bool,
    /// Accepts only keys of exactly this length.
    pub(crate) key_len: Option<usize>,
    /// Accepts only values of exactly this length.
    pub(crate) value_len: Option<usize>,
    /// `memory_usage()` reports real figures.
    pub(crate) reports_memory: bool,
    /// Replacing a present key's value is atomic: concurrent lookups never miss the key.
    /// False for peers whose upsert is remove-then-insert (crossbeam-skiplist); their
    /// multi-threaded misses are reported as warnings instead of failing the run.
    pub(crate) atomic_upsert: bool,
    /// Supports `remove` (false for the Cuckoo Trie authors' C code, which has no deletion:
    /// workloads that delete are refused before the index is built).
    pub(crate) removes: bool,
    /// Keys may contain the byte 0x00 only when they are exactly 8 bytes long (Judy: 8-byte
    /// keys go to JudyL as integers, others to JudySL, whose keys are NUL-terminated
    /// strings): datasets whose keys may hold 0x00 and are not all 8 bytes are refused,
    /// and the peer's `insert` of such a key is an error.
    pub(crate) nul_only_in_8_byte_keys: bool,
    /// `memory_usage()` is complete only when every key is 8 bytes long (Judy: JudyL has
    /// `JudyLMemUsed`, JudySL has no count); with other keys memory shows as n/a.
    pub(crate) memory_only_8_byte_keys: bool,
}

impl Caps {
    /// A thread-safe index accepting any key and value, reporting its memory.
    pub(crate) const CONCURRENT: Caps = Caps {
        ordered: true,
        concurrent: true,
        key_len: None,
        value_len: None,
        reports_memory: true,
        atomic_upsert: true,
        removes: true,
        nul_only_in_8_byte_keys: false,
        memory_only_8_byte_keys: false,
    };

    /// A thread-safe peer with no memory accounting of its own.
    const PEER: Caps = Caps {
        reports_memory: false,
        ..Caps::CONCURRENT
    };

    /// A short description of the limits, for listings.
    pub(crate) fn describe(&self) -> String {
        let mut parts = vec![if self.ordered { "ordered" } else { "point" }.to_string()];
        parts.push(
            if self.concurrent {
                "concurrent"
            } else {
                "1 thread"
            }
            .into(),
        );
        if let Some(k) = self.key_len {
            parts.push(format!("{k}-byte keys"));
        }
        if let Some(v) = self.value_len {
            parts.push(format!("{v}-byte values"));
        }
        if !self.reports_memory {
            parts.push("no memory_usage".into());
        }
        if !self.removes {
            parts.push("no remove".into());
        }
        if self.nul_only_in_8_byte_keys {
            parts.push("0x00 only in 8-byte keys".into());
        }
        if self.memory_only_8_byte_keys {
            parts.push("memory_usage for 8-byte keys only".into());
        }
        parts.join(", ")
    }
}

/// An index the benchmark can drive: ordered or point-only.
pub(crate) enum AnyIndex {
    /// An ordered index (scans available).
    Ordered(Box<dyn OrderedKvIndex>),
    /// A point-only index.
    Point(Box<dyn KvIndex>),
}

impl AnyIndex {
    /// `KvIndex::get_with`.
    #[inline]
    pub(crate) fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        match self {
            AnyIndex::Ordered(i) => i.get_with(key, f),
            AnyIndex::Point(i) => i.get_with(key, f),
        }
    }

    /// `KvIndex::insert`.
    #[inline]
    pub(crate) fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        match self {
            AnyIndex::Ordered(i) => i.insert(key, value),
            AnyIndex::Point(i) => i.insert(key, value),
        }
    }

    /// `KvIndex::remove`.
    #[inline]
    pub(crate) fn remove(&self, key: &[u8]) -> bool {
        match self {
            AnyIndex::Ordered(i) => i.remove(key),
            AnyIndex::Point(i) => i.remove(key),
        }
    }

    /// `KvIndex::get_many`.
    #[inline]
    pub(crate) fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        match self {
            AnyIndex::Ordered(i) => i.get_many(keys, f),
            AnyIndex::Point(i) => i.get_many(keys, f),
        }
    }

    /// `OrderedKvIndex::scan`; `false` (nothing visited) for a point index — the harness
    /// never schedules scans on one.
    #[inline]
    pub(crate) fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) -> bool {
        match self {
            AnyIndex::Ordered(i) => {
                i.scan(start, visitor);
                true
            }
            AnyIndex::Point(_) => false,
        }
    }

    /// `KvIndex::len`.
    pub(crate) fn len(&self) -> usize {
        match self {
            AnyIndex::Ordered(i) => i.len(),
            AnyIndex::Point(i) => i.len(),
        }
    }

    /// `KvIndex::memory_usage`.
    pub(crate) fn memory_usage(&self) -> MemoryUsage {
        match self {
            AnyIndex::Ordered(i) => i.memory_usage(),
            AnyIndex::Point(i) => i.memory_usage(),
        }
    }
}

/// Hooks into an index's internal state (indexes that restructure themselves
/// incrementally; for Mercury: its expansions).
pub(crate) struct Hooks {
    /// Whether the index is restructuring right now (an expansion is in progress), sampled
    /// by the harness during a phase: phases of indexes with hooks report throughput split
    /// by it.
    pub(crate) expanding: Box<dyn Fn() -> bool + Send + Sync>,
    /// Completes any restructuring left in progress; the harness calls it at the end of a
    /// load, inside the load's timing, so that a load ends in a settled index (work the
    /// load deferred is charged to it) and workloads start from a steady state.
    pub(crate) settle: Box<dyn Fn() + Send + Sync>,
}

/// Shared [`Hooks`].
pub(crate) type Probe = Arc<Hooks>;

/// A freshly built index with its hooks.
pub(crate) struct Built {
    /// The index.
    pub(crate) index: AnyIndex,
    /// Its probe, if it has one.
    pub(crate) probe: Option<Probe>,
    /// Its statistics, if it reports any.
    pub(crate) stats: Option<StatsFn>,
}

/// Builds an ordered index for the run's settings and a key capacity, or says why not.
type SizedMaker =
    fn(&Settings, u64) -> std::result::Result<(Box<dyn OrderedKvIndex>, Option<StatsFn>), String>;

/// Builds an ordered index with its probe and its statistics.
type ProbedStatsMaker = fn(&Settings) -> (Box<dyn OrderedKvIndex>, Probe, StatsFn);

/// How an entry builds its index.
#[derive(Clone, Copy)]
enum Maker {
    Ordered(fn(&Settings) -> Box<dyn OrderedKvIndex>),
    Point(fn(&Settings) -> Box<dyn KvIndex>),
    /// A point index with a [`Probe`].
    PointProbed(fn(&Settings) -> (Box<dyn KvIndex>, Probe)),
    /// One of our structures in its default configuration, built by the facade's
    /// registry ([`orrery::registry::build`]) under this name.
    Facade(&'static str),
    /// An ordered index that must be sized up front for the keys it will hold (a peer
    /// whose table cannot grow), or that can fail to build (`Err` says why), with its
    /// statistics if it reports any.
    OrderedSized(SizedMaker),
    /// An ordered index that reports [`IndexStats`](crate::metrics::index_stats::IndexStats).
    OrderedStats(fn(&Settings) -> (Box<dyn OrderedKvIndex>, StatsFn)),
    /// An ordered index with a [`Probe`] and [`IndexStats`](crate::metrics::index_stats::IndexStats).
    OrderedProbedStats(ProbedStatsMaker),
}

/// One registered index.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    /// The name used on the command line.
    pub(crate) name: &'static str,
    /// One line for listings.
    pub(crate) about: &'static str,
    /// What it can do.
    pub(crate) caps: Caps,
    make: Maker,
    /// For opt-in peers that need something from the environment: `Err` says why the
    /// index cannot be built here, and [`resolve`] refuses the name with that message.
    check: Option<fn() -> std::result::Result<(), String>>,
}

impl Entry {
    /// An ordered index.
    fn ordered(
        name: &'static str,
        about: &'static str,
        caps: Caps,
        make: fn(&Settings) -> Box<dyn OrderedKvIndex>,
    ) -> Entry {
        let caps = Caps {
            ordered: true,
            ..caps
        };
        Entry {
            name,
            about,
            caps,
            make: Maker::Ordered(make),
            check: None,
        }
    }

    /// A point-only index.
    fn point(
        name: &'static str,
        about: &'static str,
        caps: Caps,
        make: fn(&Settings) -> Box<dyn KvIndex>,
    ) -> Entry {
        let caps = Caps {
            ordered: false,
            ..caps
        };
        Entry {
            name,
            about,
            caps,
            make: Maker::Point(make),
            check: None,
        }
    }
}

impl Entry {
    /// A point-only index with a [`Probe`].
    fn point_probed(
        name: &'static str,
        about: &'static str,
        caps: Caps,
        make: fn(&Settings) -> (Box<dyn KvIndex>, Probe),
    ) -> Entry {
        Entry {
            name,
            about,
            caps: Caps {
                ordered: false,
                ..caps
            },
            make: Maker::PointProbed(make),
            check: None,
        }
    }

    /// An ordered index built for a known number of keys (see [`Maker::OrderedSized`]).
    fn ordered_sized(
        name: &'static str,
        about: &'static str,
        caps: Caps,
        make: SizedMaker,
    ) -> Entry {
        Entry {
            name,
            about,
            caps: Caps {
                ordered: true,
                ..caps
            },
            make: Maker::OrderedSized(make),
            check: None,
        }
    }

    /// The same entry, buildable only when `check` passes (opt-in peers).
    fn checked(self, check: fn() -> std::result::Result<(), String>) -> Entry {
        Entry {
            check: Some(check),
            ..self
        }
    }
}

/// A Mercury table shared with its probe (expansion in progress?).
fn mercury_probed(m: orrery::mercury::Mercury) -> (Box<dyn KvIndex>, Probe) {
    let m = Arc::new(m);
    let (a, b) = (Arc::clone(&m), Arc::clone(&m));
    let hooks = Hooks {
        expanding: Box::new(move || a.buckets().1.is_some()),
        settle: Box::new(move || b.finish_expansion()),
    };
    (Box::new(m), Arc::new(hooks))
}

/// A Cuckoo Trie (default configuration, as the facade builds it) shared with its probe:
/// "expanding" while a growth freezes and copies its table (`CuckooTrie::is_growing`). A
/// growth completes within the writes that take part in it, so nothing is left to settle.
fn cuckoo_trie_probed() -> (Box<dyn OrderedKvIndex>, Probe, StatsFn) {
    let ct = Arc::new(orrery::cuckoo_trie::CuckooTrie::new());
    let a = Arc::clone(&ct);
    let hooks = Hooks {
        expanding: Box::new(move || a.is_growing()),
        settle: Box::new(|| {}),
    };
    let reader = Arc::clone(&ct);
    let stats = move || {
        let (entries, slots) = (reader.entries() as f64, reader.slots() as f64);
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
/// (`Hyperion::mem_stats`: chunks, their bytes, free chunks in mapped bins — external
/// fragmentation —, extended blocks and metadata, summed over arenas).
fn hyperion_with_stats(config: orrery::hyperion::Config) -> (Box<dyn OrderedKvIndex>, StatsFn) {
    let h = Arc::new(
        orrery::hyperion::Hyperion::with_config(config)
            .expect("a Hyperion configuration built by its validating builder"),
    );
    let reader = Arc::clone(&h);
    let stats = move || {
        let m = reader.mem_stats();
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
fn hyperion_config(preprocess: bool) -> orrery::hyperion::Config {
    orrery::hyperion::Config::builder()
        .preprocess(preprocess)
        .build()
        .expect("the default Hyperion configuration is valid")
}

/// A Mercury table with `config` and the run's Mercury [`Settings`] (load factor,
/// pre-fault thread).
fn mercury_config(s: &Settings, config: orrery::mercury::Config) -> orrery::mercury::Mercury {
    orrery::mercury::Mercury::with_config(s.mercury(config))
        .expect("a valid Mercury configuration (--mercury-load-percent is at least 1)")
}

/// Every registered index that can be built here, in listing order: opt-in peers whose
/// check fails (e.g. `wormhole-c` without `ORRERY_WORMHOLE_C`) are left out, and
/// [`resolve`] explains why when one is asked for by name.
pub(crate) fn entries() -> Vec<Entry> {
    all_entries()
        .into_iter()
        .filter(|e| e.check.is_none_or(|c| c().is_ok()))
        .collect()
}

/// Every registered index, buildable here or not, in listing order.
fn all_entries() -> Vec<Entry> {
    use peers::{btree, congee, cuckoo_trie_c, hash, judy, scc, skiplist, wormhole_c};
    let mut all = own_entries();
    all.extend([
        // Bench-only configurations of our structures.
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
        // Peers.
        Entry::ordered(
            "btreemap-st",
            "std BTreeMap, no lock (single-thread runs only)",
            Caps {
                concurrent: false,
                ..Caps::PEER
            },
            |_| Box::new(btree::StBTreeMap::new()),
        ),
        Entry::ordered(
            "skiplist",
            "crossbeam-skiplist SkipMap (lock-free; upsert is remove-then-insert)",
            Caps {
                atomic_upsert: false,
                ..Caps::PEER
            },
            |_| Box::<skiplist::SkipList>::default(),
        ),
        Entry::ordered(
            "scc-tree",
            "scc TreeIndex (lock-free B+-tree)",
            Caps::PEER,
            |_| Box::<scc::SccTree>::default(),
        ),
        Entry::ordered(
            "congee",
            "congee ART with optimistic lock coupling (8-byte keys and values)",
            Caps {
                key_len: Some(8),
                value_len: Some(8),
                ..Caps::PEER
            },
            |_| Box::<congee::CongeeArt>::default(),
        ),
        Entry::point("scc-hash", "scc HashMap", Caps::PEER, |_| {
            Box::<scc::SccHash>::default()
        }),
        Entry::point(
            "dashmap",
            "dashmap DashMap (sharded RwLocks)",
            Caps::PEER,
            |_| Box::<hash::Dash>::default(),
        ),
        Entry::point("papaya", "papaya HashMap (lock-free)", Caps::PEER, |_| {
            Box::<hash::Papaya>::default()
        }),
        Entry::point(
            "hashbrown",
            "hashbrown HashMap behind a RwLock",
            Caps::PEER,
            |_| Box::<hash::LockedHashbrown>::default(),
        ),
        // Opt-in: the system's libJudy (apt-get install libjudy-dev), peers/judy.rs.
        Entry::ordered(
            "judy",
            "Judy arrays (libJudy): JudyL for 8-byte keys, JudySL for strings; one writer \
             behind a RwLock; 8-byte values",
            Caps {
                value_len: Some(judy::VALUE_LEN),
                nul_only_in_8_byte_keys: true,
                memory_only_8_byte_keys: true,
                ..Caps::CONCURRENT
            },
            |_| Box::new(judy::Judy::new().expect("resolve() checked that libJudy loads")),
        )
        .checked(judy::available),
        // Opt-in: the authors' C code, loaded from $ORRERY_WORMHOLE_C (peers/wormhole_c.rs).
        Entry::ordered(
            "wormhole-c",
            "the Wormhole authors' C code (opt-in: ORRERY_WORMHOLE_C=libwh.so)",
            Caps::CONCURRENT,
            |_| {
                Box::new(
                    wormhole_c::WormholeC::new()
                        .expect("resolve() checked that the C library loads"),
                )
            },
        )
        .checked(wormhole_c::available),
        // Opt-in: the Cuckoo Trie authors' C code, from $ORRERY_CUCKOO_TRIE_C
        // (peers/cuckoo_trie_c.rs). Its table cannot grow: sized for the run's keys.
        Entry::ordered_sized(
            "cuckoo-trie-c",
            "the Cuckoo Trie authors' C code, fixed table sized for the run (opt-in: \
             ORRERY_CUCKOO_TRIE_C=libcuckoo_trie.so)",
            Caps {
                removes: false,
                ..Caps::CONCURRENT
            },
            |s, keys| {
                cuckoo_trie_c::CuckooTrieC::for_keys(keys, s.cuckoo_trie_c_cells_percent).map(|t| {
                    let stats = t.stats_fn();
                    (Box::new(t) as Box<dyn OrderedKvIndex>, Some(stats))
                })
            },
        )
        .checked(cuckoo_trie_c::available),
    ]);
    all
}

/// Orrery's own structures, as the facade's registry ([`orrery::registry`]) names them, in
/// its order: a structure added there is in the benchmark too. The facade builds each in
/// its default configuration; the two whose configuration the run's [`Settings`] change
/// (Wormhole's pre-fault and item prefetch, Mercury's load factor and pre-fault, plus
/// Mercury's expansion probe) are built here with those settings.
fn own_entries() -> Vec<Entry> {
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

/// A Wormhole with the Fig 11 optimizations `OPTS` (compiled in: `wormhole::ablation`) and
/// the run's Wormhole [`Settings`] (pre-fault thread, item prefetch).
fn wormhole_with<const OPTS: u32>(s: &Settings) -> orrery::wormhole::WormholeWith<OPTS> {
    orrery::wormhole::WormholeWith::with_config(s.wormhole().build().unwrap())
        .expect("the ablation configurations use the default leaf size, which is valid")
}

/// A resolved index name: capabilities and a constructor (possibly wrapped by the SLB).
#[derive(Clone)]
pub(crate) struct Resolved {
    /// The name as given (e.g. `slb:btreemap`).
    pub(crate) name: String,
    /// What it can do.
    pub(crate) caps: Caps,
    inner: Entry,
    /// Cache Table MiB of each SLB layer, innermost first.
    slb_layers: Vec<usize>,
}

impl Resolved {
    /// A fresh, empty index (sized for 100K keys where that matters).
    #[cfg(test)]
    pub(crate) fn make(&self) -> AnyIndex {
        self.make_probed(&Settings::DEFAULT, 100_000)
            .expect("builds")
            .index
    }

    /// A fresh, empty index built with `settings`, with its probe and statistics if it has
    /// them (an SLB in front keeps the inner index's). `capacity`: how many distinct keys
    /// the run may insert at most (for indexes that cannot grow). `Err` when the index
    /// cannot be built here (e.g. missing huge pages).
    pub(crate) fn make_probed(
        &self,
        settings: &Settings,
        capacity: u64,
    ) -> std::result::Result<Built, String> {
        let mut stats = None;
        let (index, probe) = match self.inner.make {
            Maker::OrderedSized(f) => {
                let (i, s) = f(settings, capacity).map_err(|e| format!("{}: {e}", self.name))?;
                stats = s;
                (AnyIndex::Ordered(i), None)
            }
            Maker::Ordered(f) => (AnyIndex::Ordered(f(settings)), None),
            Maker::OrderedStats(f) => {
                let (i, s) = f(settings);
                stats = Some(s);
                (AnyIndex::Ordered(i), None)
            }
            Maker::Facade(name) => {
                match orrery::registry::build(name).map_err(|e| format!("{}: {e}", self.name))? {
                    orrery::registry::AnyIndex::Ordered(i) => (AnyIndex::Ordered(i), None),
                    orrery::registry::AnyIndex::Unordered(i) => (AnyIndex::Point(i), None),
                }
            }
            Maker::Point(f) => (AnyIndex::Point(f(settings)), None),
            Maker::OrderedProbedStats(f) => {
                let (i, p, s) = f(settings);
                stats = Some(s);
                (AnyIndex::Ordered(i), Some(p))
            }
            Maker::PointProbed(f) => {
                let (i, p) = f(settings);
                (AnyIndex::Point(i), Some(p))
            }
        };
        let index = self
            .slb_layers
            .iter()
            .fold(index, |i, &mib| slb::wrap(i, mib));
        Ok(Built {
            index,
            probe,
            stats,
        })
    }
}

/// Whether `name` (possibly behind `slb:` prefixes) is a registered opt-in index whose
/// check fails here (e.g. `cuckoo-trie-c` without its library).
pub(crate) fn is_unavailable_opt_in(name: &str) -> bool {
    let mut base = name;
    while let Ok(Some((_, inner))) = slb::parse_prefix(base) {
        base = inner;
    }
    all_entries()
        .iter()
        .any(|e| e.name == base && e.check.is_some_and(|c| c().is_err()))
}

/// Looks `name` up; `slb:<name>` (or `slbN:<name>`, N MiB of Cache Table) wraps any
/// registered index.
pub(crate) fn resolve(name: &str) -> std::result::Result<Resolved, String> {
    if let Some((mib, inner)) = slb::parse_prefix(name)? {
        let mut r = resolve(inner).map_err(|e| format!("in {name:?}: {e}"))?;
        r.slb_layers.push(mib);
        r.name = name.to_string();
        return Ok(r);
    }
    let all = entries();
    if let Some(e) = all_entries().iter().find(|e| e.name == name)
        && let Some(check) = e.check
        && let Err(why) = check()
    {
        return Err(format!("index {name:?} is unavailable: {why}"));
    }
    match all.iter().find(|e| e.name == name) {
        Some(e) => Ok(Resolved {
            name: name.to_string(),
            caps: e.caps,
            inner: *e,
            slb_layers: Vec::new(),
        }),
        None => Err(format!(
            "unknown index {name:?}; known: {} (and slb:<name> for any of them)",
            all.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// The SLB hook: wraps an index in the Search Lookaside Buffer (default configuration:
/// 16 MiB Cache Table, 64 MiB Log Table, as in the paper's Table 2; `slbN:` sets the Cache
/// Table to N MiB, the Log Table staying four times as large).
mod slb {
    use super::AnyIndex;
    use orrery::slb::{Slb, SlbConfig};

    /// The default Cache Table size (`slb:`), MiB.
    const DEFAULT_MIB: usize = 16;

    /// Splits `slb:<rest>` / `slbN:<rest>` into (Cache Table MiB, rest); `None` for names
    /// without an SLB prefix.
    pub(super) fn parse_prefix(name: &str) -> Result<Option<(usize, &str)>, String> {
        let Some((head, rest)) = name.split_once(':') else {
            return Ok(None);
        };
        let Some(size) = head.strip_prefix("slb") else {
            return Ok(None);
        };
        if size.is_empty() {
            return Ok(Some((DEFAULT_MIB, rest)));
        }
        match size.parse::<usize>() {
            Ok(mib) if mib.is_power_of_two() && mib <= 1024 => Ok(Some((mib, rest))),
            _ => Err(format!(
                "in {name:?}: the SLB size must be a power of two of MiB from 1 to 1024, as in \
                 slb16:, slb32:, slb64:"
            )),
        }
    }

    /// Wraps `index` in an SLB with a `mib` MiB Cache Table; a boxed index is an index
    /// itself, so any entry works.
    pub(super) fn wrap(index: AnyIndex, mib: usize) -> AnyIndex {
        const VALID: &str = "parse_prefix admits only valid SLB sizes";
        let config = || SlbConfig::with_cache_mib(mib);
        match index {
            AnyIndex::Ordered(i) => {
                AnyIndex::Ordered(Box::new(Slb::with_config(i, config()).expect(VALID)))
            }
            AnyIndex::Point(i) => {
                AnyIndex::Point(Box::new(Slb::with_config(i, config()).expect(VALID)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every structure of the facade's registry is an entry here with its capability, and
    /// no entry of ours shadows a facade name with another kind.
    #[test]
    fn our_structures_come_from_the_facade_registry() {
        let all = entries();
        for name in orrery::registry::names() {
            let e = all
                .iter()
                .find(|e| e.name == name)
                .unwrap_or_else(|| panic!("{name} of orrery::registry is not in the bench"));
            let ordered = orrery::registry::build(name).unwrap().capability()
                == orrery::registry::Capability::Ordered;
            assert_eq!(e.caps.ordered, ordered, "{name}");
            assert_eq!(all.iter().filter(|e| e.name == name).count(), 1, "{name}");
            let built = resolve(name).unwrap().make();
            built.insert(b"k", b"v").unwrap();
            assert_eq!(built.len(), 1, "{name}");
        }
    }

    #[test]
    fn every_entry_builds_an_empty_index_with_matching_kind() {
        for e in entries() {
            let r = resolve(e.name).unwrap();
            let i = r.make();
            assert_eq!(i.len(), 0, "{}", e.name);
            assert_eq!(
                matches!(i, AnyIndex::Ordered(_)),
                e.caps.ordered,
                "{}",
                e.name
            );
        }
    }

    /// Mercury's probe sees an expansion while inserts run and none once it finished.
    #[test]
    fn mercury_probe_sees_expansions() {
        let Built { index, probe, .. } = resolve("mercury")
            .unwrap()
            .make_probed(&Settings::DEFAULT, 0)
            .unwrap();
        let probe = probe.expect("mercury has a probe");
        let mut seen = false;
        for i in 0..20_000u64 {
            index.insert(&i.to_be_bytes(), b"v").unwrap();
            seen |= (probe.expanding)();
        }
        assert!(seen, "20K inserts into a 1024-bucket table expand it");
        (probe.settle)();
        assert!(!(probe.expanding)());
        assert!(
            resolve("dashmap")
                .unwrap()
                .make_probed(&Settings::DEFAULT, 0)
                .unwrap()
                .probe
                .is_none()
        );
    }

    /// `hyperion` and `hyperion-prep` report their memory manager's breakdown, which grows
    /// with the keys; pre-processing keeps the keys and their order.
    #[test]
    fn cuckoo_trie_reports_its_table_load() {
        let b = resolve("cuckoo-trie")
            .unwrap()
            .make_probed(&Settings::DEFAULT, 0)
            .unwrap();
        assert!(b.probe.is_some(), "the growth probe stays");
        let stats = b.stats.expect("the cuckoo trie reports statistics");
        for i in 0..20_000u64 {
            b.index
                .insert(&orrery::api::u64_key(i * 7919), b"v")
                .unwrap();
        }
        let st = stats();
        // 20K leaves and at least the root; at most every slot.
        assert!(st["entries"] > 20_000.0, "{st:?}");
        assert!(st["entries"] <= st["slots"], "{st:?}");
        assert_eq!(st["load_percent"], 100.0 * st["entries"] / st["slots"]);
        assert_eq!(st["paper_m_bytes"], st["entries"] * 16.0 / 0.85);
    }

    #[test]
    fn hyperion_reports_mem_stats_and_prep_keeps_keys() {
        for name in ["hyperion", "hyperion-prep", "slb:hyperion"] {
            let b = resolve(name)
                .unwrap()
                .make_probed(&Settings::DEFAULT, 0)
                .unwrap();
            let stats = b.stats.expect("hyperion reports statistics");
            let empty = stats();
            for i in 0..5_000u64 {
                b.index
                    .insert(&orrery::api::u64_key(i * 7919), &i.to_le_bytes())
                    .unwrap();
            }
            let full = stats();
            assert!(full["chunks"] > empty["chunks"], "{name}: {full:?}");
            assert!(full["chunk_bytes"] > 0.0, "{name}: {full:?}");
            assert!(full.contains_key("free_chunk_bytes"), "{name}");
            let mut seen = Vec::new();
            b.index.scan(Bound::Unbounded, &mut |k, _| {
                seen.push(k.to_vec());
                std::ops::ControlFlow::Continue(())
            });
            let want: Vec<Vec<u8>> = (0..5_000u64)
                .map(|i| orrery::api::u64_key(i * 7919).to_vec())
                .collect();
            assert_eq!(
                seen, want,
                "{name}: scans return the original keys in order"
            );
        }
        assert!(
            resolve("btreemap")
                .unwrap()
                .make_probed(&Settings::DEFAULT, 0)
                .unwrap()
                .stats
                .is_none()
        );
    }

    #[test]
    fn unknown_and_slb_names_are_clear_errors() {
        assert!(
            resolve("nope")
                .err()
                .unwrap()
                .contains("unknown index \"nope\"")
        );
        let r = resolve("slb:btreemap").unwrap();
        assert_eq!(r.name, "slb:btreemap");
        assert_eq!(r.make().len(), 0);
        let e = resolve("slb:nope").err().unwrap();
        assert!(e.contains("unknown index"), "{e}");
        for (name, layers) in [
            ("slb32:btreemap", vec![32]),
            ("slb64:scc-hash", vec![64]),
            ("slb1:slb:mercury", vec![16, 1]),
        ] {
            let r = resolve(name).unwrap();
            assert_eq!((r.name.as_str(), &r.slb_layers), (name, &layers));
            assert_eq!(r.make().len(), 0);
        }
        for bad in [
            "slb3:btreemap",
            "slb0:btreemap",
            "slbx:btreemap",
            "slb2048:btreemap",
        ] {
            let e = resolve(bad).err().unwrap();
            assert!(e.contains("power of two"), "{bad}: {e}");
        }
    }
}
