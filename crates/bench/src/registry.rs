//! The index registry: names → constructors with capability flags.
//!
//! Everything the benchmark runs is an [`AnyIndex`]: a boxed [`orrery::OrderedKvIndex`] or
//! [`orrery::KvIndex`] trait object. Orrery's structures implement those traits already, so
//! adding one is ONE line in [`entries`]:
//!
//! ```ignore
//! Entry::ordered("wormhole", "Wormhole (Wu et al. 2019)", Caps::CONCURRENT, |_| Box::new(Wormhole::new())),
//! Entry::point("mercury", "Mercury chained hash", Caps::CONCURRENT, |_| Box::new(Mercury::new())),
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
use orrery::{KvIndex, MemoryUsage, OrderedKvIndex, Result};

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

/// How an entry builds its index.
#[derive(Clone, Copy)]
enum Maker {
    Ordered(fn(&Settings) -> Box<dyn OrderedKvIndex>),
    Point(fn(&Settings) -> Box<dyn KvIndex>),
    /// A point index with a [`Probe`].
    PointProbed(fn(&Settings) -> (Box<dyn KvIndex>, Probe)),
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
    use peers::{btree, congee, hash, scc, skiplist, wormhole_c};
    vec![
        // Orrery's structures register here, one line each.
        Entry::ordered(
            "wormhole",
            "Wormhole (Wu et al. 2019): hashed MetaTrie over sorted leaves",
            Caps::CONCURRENT,
            |s| Box::new(wormhole_with(s, true, true, true, true)),
        ),
        // Fig 11 ablation: BaseWormhole, then one optimization added at a time.
        Entry::ordered(
            "wormhole-base",
            "BaseWormhole (no TagMatching, IncHashing, SortByTag, DirectPos)",
            Caps::CONCURRENT,
            |s| Box::new(wormhole_with(s, false, false, false, false)),
        ),
        Entry::ordered(
            "wormhole+tm",
            "Wormhole +TagMatching",
            Caps::CONCURRENT,
            |s| Box::new(wormhole_with(s, true, false, false, false)),
        ),
        Entry::ordered(
            "wormhole+ih",
            "Wormhole +TagMatching +IncHashing",
            Caps::CONCURRENT,
            |s| Box::new(wormhole_with(s, true, true, false, false)),
        ),
        Entry::ordered(
            "wormhole+sbt",
            "Wormhole +TagMatching +IncHashing +SortByTag",
            Caps::CONCURRENT,
            |s| Box::new(wormhole_with(s, true, true, true, false)),
        ),
        Entry::ordered(
            "cuckoo-trie",
            "Cuckoo Trie (Zeitak & Morrison 2021): key-eliminating cuckoo table of trie nodes, MLP search",
            Caps::CONCURRENT,
            |_| Box::new(orrery::cuckoo_trie::CuckooTrie::new()),
        ),
        Entry::ordered(
            "hyperion",
            "Hyperion (Mäsker et al. 2019): 65,536-ary trie of exact-fit containers, own memory manager, arenas",
            Caps::CONCURRENT,
            |_| Box::new(orrery::hyperion::Hyperion::new()),
        ),
        Entry::point_probed(
            "mercury",
            "Mercury chained hash (cooperative expansion)",
            Caps::CONCURRENT,
            |s| mercury_probed(mercury_config(s, Default::default())),
        ),
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
    ]
}

/// A Wormhole with the given Fig 11 switches and the run's Wormhole [`Settings`] (pre-fault
/// thread, item prefetch).
fn wormhole_with(
    s: &Settings,
    tm: bool,
    ih: bool,
    sbt: bool,
    dp: bool,
) -> orrery::wormhole::Wormhole {
    orrery::wormhole::Wormhole::with_config(
        s.wormhole()
            .tag_matching(tm)
            .inc_hashing(ih)
            .sort_by_tag(sbt)
            .direct_pos(dp)
            .build()
            .unwrap(),
    )
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
    /// A fresh, empty index.
    #[cfg(test)]
    pub(crate) fn make(&self) -> AnyIndex {
        self.make_probed(&Settings::DEFAULT).0
    }

    /// A fresh, empty index built with `settings` and its probe, if it has one (an SLB in front keeps the inner
    /// index's probe).
    pub(crate) fn make_probed(&self, settings: &Settings) -> (AnyIndex, Option<Probe>) {
        let (index, probe) = match self.inner.make {
            Maker::Ordered(f) => (AnyIndex::Ordered(f(settings)), None),
            Maker::Point(f) => (AnyIndex::Point(f(settings)), None),
            Maker::PointProbed(f) => {
                let (i, p) = f(settings);
                (AnyIndex::Point(i), Some(p))
            }
        };
        let index = self
            .slb_layers
            .iter()
            .fold(index, |i, &mib| slb::wrap(i, mib));
        (index, probe)
    }
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
        let (index, probe) = resolve("mercury").unwrap().make_probed(&Settings::DEFAULT);
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
                .make_probed(&Settings::DEFAULT)
                .1
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
