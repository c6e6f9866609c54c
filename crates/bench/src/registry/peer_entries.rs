//! The peers' entries: well-known maps behind the thin adapters of [`crate::peers`], and
//! the opt-in ones (libJudy, the Wormhole and Cuckoo Trie authors' C code) with the check
//! that says whether they can be built here.

use orrery::OrderedKvIndex;

use super::caps::Caps;
use super::entry::Entry;
use crate::peers::{btree, congee, cuckoo_trie_c, hash, judy, scc, skiplist, wormhole_c};

/// The peers, in listing order.
pub(super) fn entries() -> Vec<Entry> {
    vec![
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
    ]
}
