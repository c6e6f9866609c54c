//! The registry against the facade's names, every entry built, probes and statistics,
//! and the errors of bad names.

use std::ops::Bound;

use super::*;
use crate::settings::Settings;

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
