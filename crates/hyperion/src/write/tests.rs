//! The write path's byte-level invariants after many writes: jump successors exact,
//! container and T-Node jump tables against a full decode.

use rand::Rng as _;

use crate::arena::{ArenaInner, Decision};
use crate::mm::{CHAIN_SLOTS, Hp, MemoryManager};
use crate::node::{ChildRef, cjt, jump_successor, parse, tjt, used};

use super::path::{descend, is_s};

/// Every jump successor in the payload `buf[HEADER..used]` is the exact distance to
/// the next T-Node.
fn jumps_exact(buf: &[u8]) -> bool {
    let used = used(buf);
    let mut pos = cjt::payload_start(buf);
    let mut prev = 0;
    let mut ts = Vec::new();
    while pos < used {
        let f = buf[pos];
        ts.push((crate::node::t_key(buf, pos, prev), pos));
        prev = ts.last().unwrap().0;
        let mut p = parse(buf, pos, 0).next;
        while p < used && is_s(buf[p]) {
            p = parse(buf, p, 0).next;
        }
        if let Some(d) = jump_successor(buf, pos)
            && d != p - pos
        {
            return false;
        }
        assert!(!is_s(f));
        pos = p;
    }
    // Every container jump-table entry names a T-Node with its key, ascending.
    let entries = cjt::entries(buf);
    assert!(entries.is_sorted(), "{entries:?}");
    entries.iter().all(|e| ts.contains(e))
}

/// Random inserts, upserts and removes in one trie: after every write every jump
/// successor of every container on the key's path is exact, and every key reads back.
#[test]
fn write_jump_successors_stay_exact() {
    let mut a = ArenaInner::new(16 * 1024);
    let mut model = std::collections::BTreeMap::new();
    let mut r = orrery_core::testing::rng::rng(0x1234_5678);
    let mut tables = 0;
    let ops = if cfg!(miri) { 300 } else { 5000 };
    for i in 0..ops {
        let x: u32 = r.random();
        let len = 2 + (x % 4) as usize;
        let mut k = vec![b'j'];
        k.extend((0..len).map(|j| ((x >> (j * 3)) & 0x1F) as u8 * 3));
        if x.is_multiple_of(5) {
            a.write(&k, &mut |_| Decision::Remove).unwrap();
            model.remove(&k);
        } else {
            let v = (i as u32).to_le_bytes()[..(x % 5) as usize].to_vec();
            a.write(&k, &mut |_| Decision::Store(v.clone())).unwrap();
            model.insert(k.clone(), v);
        }
        if let Some(root) = a.roots[b'j' as usize].hp {
            for c in descend(&a.mm, root, &k[1..]) {
                assert!(jumps_exact(a.mm.get(c.hp)), "op {i}");
                tables += usize::from(cjt::groups(a.mm.get(c.hp)) > 0);
            }
        }
    }
    for (k, v) in &model {
        assert_eq!(a.get(k), Some(&v[..]));
    }
    // Miri runs too few writes for a container to pass 2,016 bytes.
    assert!(cfg!(miri) || tables > 0, "some container had a jump table");
}

/// Checks every container below `root` (every part of a split one) with
/// [`tjt::check`]: T-Node jump tables against a full decode; embedded payloads have
/// none. Returns the number of tables.
fn check_tables(mm: &MemoryManager, root: Hp) -> usize {
    let mut tables = 0;
    let mut todo = vec![root];
    while let Some(hp) = todo.pop() {
        let parts: Vec<Hp> = if mm.is_chain(hp) {
            (0..CHAIN_SLOTS)
                .map(|i| hp.slot(i))
                .filter(|&p| !mm.is_void(p))
                .collect()
        } else {
            vec![hp]
        };
        for p in parts {
            let buf = mm.get(p);
            let mut payloads = vec![(cjt::payload_start(buf), used(buf), true)];
            while let Some((start, end, own)) = payloads.pop() {
                let n = tjt::check(buf, start, end);
                assert!(own || n == 0, "a table in an embedded container");
                tables += n;
                let mut pos = start;
                while pos < end {
                    let node = parse(buf, pos, 0);
                    match node.child {
                        ChildRef::Hp(c, _) => todo.push(c),
                        ChildRef::Emb(a, b) => payloads.push((a, b, false)),
                        _ => {}
                    }
                    pos = node.next;
                }
            }
        }
    }
    tables
}

/// Random inserts, upserts and removes of keys whose S-Node bytes take all 256
/// values, in a few T-Nodes (so that T-Nodes collect enough S-Nodes for jump tables,
/// and destinations are inserted, emptied into placeholders and filled again): after
/// every write every T-Node jump table of the trie matches a full decode of its
/// S-Nodes, and at the end every key of the model reads back and the walk yields
/// exactly the model.
#[test]
fn write_tnode_jump_tables_stay_exact() {
    let mut a = ArenaInner::new(16 * 1024);
    let mut model = std::collections::BTreeMap::new();
    let mut r = orrery_core::testing::rng::rng(0x9E37_79B9);
    let mut max_tables = 0;
    let ops = if cfg!(miri) { 400 } else { 6000 };
    for i in 0..ops {
        let x: u32 = r.random();
        // 'q', a T-Node byte of 4, an S-Node byte of 256, then 0–3 more bytes (path
        // compressed, embedded or child containers below).
        let len = (x >> 20) % 4;
        let mut k = vec![b'q', (x % 4) as u8 * 5, (x >> 2) as u8];
        k.extend((0..len).map(|j| (x >> (10 + 2 * j)) as u8 & 7));
        if (x >> 24).is_multiple_of(16) {
            // A key that ends at the T-Node.
            k.truncate(2);
        }
        if (x >> 28).is_multiple_of(3) {
            let present = model.remove(&k).is_some();
            a.write(&k, &mut |_| Decision::Remove).unwrap();
            assert_eq!(a.get(&k), None, "op {i}: removed {k:?} (present {present})");
        } else {
            let v = (i as u32).to_le_bytes()[..(x >> 29) as usize % 5].to_vec();
            a.write(&k, &mut |_| Decision::Store(v.clone())).unwrap();
            model.insert(k.clone(), v);
        }
        if let Some(root) = a.roots[b'q' as usize].hp {
            max_tables = max_tables.max(check_tables(&a.mm, root));
        }
    }
    assert!(max_tables >= 4, "every T-Node got a table ({max_tables})");
    // Empty two T-Nodes (one with its own key kept): placeholders do not keep a
    // T-Node alive. T-Node 0 loses every key, its own (`q 0`, ending at the T-Node) too.
    model.insert(vec![b'q', 5], vec![7]);
    a.write(&[b'q', 5], &mut |_| Decision::Store(vec![7]))
        .unwrap();
    let gone: Vec<Vec<u8>> = model
        .keys()
        .filter(|k| k[1] == 0 || (k[1] == 5 && k.len() > 2))
        .cloned()
        .collect();
    for i in 0..gone.len() {
        let k = &gone[(i * 7919) % gone.len()];
        if model.remove(k).is_none() {
            continue;
        }
        a.write(k, &mut |_| Decision::Remove).unwrap();
        let root = a.roots[b'q' as usize].hp.expect("keys remain");
        check_tables(&a.mm, root);
    }
    for k in &gone {
        model.remove(k);
        a.write(k, &mut |_| Decision::Remove).unwrap();
    }
    let root = a.roots[b'q' as usize].hp.expect("keys remain");
    // T-Node 0 went; T-Node 5 stays for its own key, its table gone with its last
    // S-Nodes (`tjt.rs`, "When it loses it").
    assert_eq!(check_tables(&a.mm, root), 2);
    model.remove(&[b'q', 5][..]);
    a.write(&[b'q', 5], &mut |_| Decision::Remove).unwrap();
    let root = a.roots[b'q' as usize].hp.expect("keys remain");
    assert_eq!(check_tables(&a.mm, root), 2, "T-Node 5 went");
    for (k, v) in &model {
        assert_eq!(a.get(k), Some(&v[..]), "{k:?}");
    }
    for s in 0..=255u8 {
        let k = [b'q', 1, s];
        assert_eq!(a.get(&k).is_some(), model.contains_key(&k[..]));
    }
    let want: Vec<_> = model.into_iter().collect();
    for desc in [false, true] {
        let mut seen = Vec::new();
        let _ = a.walk(
            b'q',
            std::ops::Bound::Unbounded,
            desc,
            &mut Vec::new(),
            &mut |k, v| {
                seen.push((k.to_vec(), v.to_vec()));
                std::ops::ControlFlow::Continue(())
            },
        );
        if desc {
            seen.reverse();
        }
        assert_eq!(seen, want, "desc {desc}");
    }
}

/// Inserts into and removals from T-Node groups with jump tables and successors (one
/// T-Node collecting S-Nodes of all 256 keys, with path-compressed suffixes of varying
/// length): most splices move the jump fields without walking the group
/// (`path::shift_jumps`), and the result is the walk's (every write in a debug build
/// compares the two, `apply.rs`), the tables exact after every write.
#[test]
fn write_jump_fields_shift_without_a_walk() {
    let mut a = ArenaInner::new(16 * 1024);
    let mut model = std::collections::BTreeMap::new();
    let mut r = orrery_core::testing::rng::rng(0x5EED_0037);
    let ops = if cfg!(miri) { 300 } else { 2000 };
    super::path::SHIFTED.with(|c| c.set(0));
    for i in 0..ops {
        let x: u32 = r.random();
        // Four T-Nodes of up to 256 S-Nodes, mostly with a path-compressed suffix (an
        // S-Node that gets a second key gets an embedded container: no shift there).
        let mut k = vec![b's', (x % 4) as u8 * 9, (x >> 8) as u8];
        k.extend((0..(x >> 16) % 6).map(|j| (x >> (2 * j)) as u8));
        if (x >> 24).is_multiple_of(4) {
            model.remove(&k);
            a.write(&k, &mut |_| Decision::Remove).unwrap();
        } else {
            let v = (i as u32).to_le_bytes()[..(x >> 28) as usize % 5].to_vec();
            a.write(&k, &mut |_| Decision::Store(v.clone())).unwrap();
            model.insert(k, v);
        }
        if let Some(root) = a.roots[b's' as usize].hp {
            check_tables(&a.mm, root);
        }
    }
    let shifted = super::path::SHIFTED.with(std::cell::Cell::get);
    assert!(shifted > ops / 2, "{shifted} of {ops} writes shifted");
    for (k, v) in &model {
        assert_eq!(a.get(k), Some(&v[..]), "{k:?}");
    }
}

/// An insert reports whether its key was present from its own descent (`Txn::replaced`),
/// with no lookup first: every place a key can end — a root value, a T-Node, an S-Node,
/// a path-compressed suffix (equal, a prefix of another, split into a new pair), an
/// embedded container and a child container — answers "new" on the first insert and
/// "present" on the second, and the value is the second one.
#[test]
fn write_put_reports_presence_from_its_descent() {
    let mut a = ArenaInner::new(64);
    let mut keys: Vec<Vec<u8>> = vec![
        b"a".to_vec(),
        b"ab".to_vec(),
        b"abc".to_vec(),
        b"abcdefgh".to_vec(),
        b"abcdefgx".to_vec(),
        b"abcdef".to_vec(),
        b"abcdefghijklmnop".to_vec(),
        b"b\0\0".to_vec(),
        b"b\xff\xff\xff".to_vec(),
    ];
    let mut r = orrery_core::testing::rng::rng(0x5EED);
    for _ in 0..if cfg!(miri) { 200 } else { 3000 } {
        let x: u64 = r.random();
        keys.push(x.to_be_bytes()[..r.random_range(2..8)].to_vec());
    }
    let mut seen = std::collections::BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        let was = seen.insert(k.clone(), i).is_some();
        assert_eq!(a.put(k, &i.to_le_bytes()).unwrap(), was, "key {k:?}");
    }
    for (k, &i) in &seen {
        assert!(a.put(k, &(i + 1).to_le_bytes()).unwrap(), "key {k:?}");
        assert_eq!(a.get(k), Some(&(i + 1).to_le_bytes()[..]));
    }
}

/// Regression guard for a writer's second DRAM miss (`path.rs`, `seek_writer`): a writer
/// looking for a T-Node that the container jump table names starts at that T-Node (no
/// T-Node passed) and knows its previous sibling's key; it used to start at the entry
/// below and pass one T-Node, a cache miss a reader does not pay.
#[test]
fn write_starts_at_the_jump_table_entry_of_its_t_node() {
    let mut a = ArenaInner::new(16 * 1024);
    // 64 T-Nodes of 12 S-Nodes each with a 4-byte suffix: an extended container (over
    // 2,016 bytes) under the split threshold, whose table has an entry per T-Node.
    for t in 0..64u8 {
        for s in 0..12u8 {
            a.put(&[b'w', t, s, 1, 2, 3, 4], &[t]).unwrap();
        }
    }
    let root = a.roots[b'w' as usize].hp.unwrap();
    assert!(MemoryManager::is_extended(root) && !a.mm.is_chain(root));
    let buf = a.mm.get(root);
    let entries = cjt::entries(buf);
    assert!(entries.len() >= 32, "{} entries", entries.len());
    let mut exact = 0;
    for &(k, off) in &entries {
        if (buf[off] >> 2) & 7 == 0 {
            continue; // an explicit key: the writer starts below it
        }
        let path = descend(&a.mm, root, &[k, 5, 9, 9, 9, 9]);
        let l = *path[0].levels.last().unwrap();
        let loc = super::locate(buf, &l, k, Some(5));
        assert_eq!((loc.ts, loc.hops), (off, 0), "T-Node {k}");
        assert_eq!(loc.prev_t, k - 1, "T-Node {k}");
        exact += 1;
    }
    assert!(exact >= 32, "{exact} delta-encoded entries");
}

/// Writes inside an embedded container move the enclosing T-Node's jump fields by the
/// splice's length difference (`shift_jumps`) instead of walking the T-Node's group
/// (`fix_jumps`); debug builds compare the result with a walk's on every write.
#[test]
fn write_into_embedded_containers_shifts_jumps() {
    let mut a = ArenaInner::new(16 * 1024);
    let mut model = std::collections::BTreeMap::new();
    let mut r = orrery_core::testing::rng::rng(0x5EED_0038);
    // Two T-Nodes of 16 S-Nodes each: the first two keys of an S-Node make it an
    // embedded container; every later key of it is a write inside that container.
    let keys: Vec<[u8; 5]> = (0..400)
        .map(|_| {
            let x: u32 = r.random();
            [
                b'e',
                (x % 2) as u8,
                (x >> 8) as u8 % 16,
                (x >> 16) as u8 % 4,
                (x >> 24) as u8,
            ]
        })
        .collect();
    for k in &keys[..64] {
        a.put(k, &[1]).unwrap();
        model.insert(*k, 1u8);
    }
    super::path::SHIFTED.with(|c| c.set(0));
    let mut writes = 0;
    for (i, k) in keys[64..].iter().enumerate() {
        let root = a.roots[b'e' as usize].hp.unwrap();
        let path = descend(&a.mm, root, &k[1..]);
        let embedded = path.len() == 1 && path[0].levels.len() > 1;
        let before = super::path::SHIFTED.with(std::cell::Cell::get);
        a.put(k, &[i as u8]).unwrap();
        model.insert(*k, i as u8);
        if embedded {
            writes += 1;
            let after = super::path::SHIFTED.with(std::cell::Cell::get);
            assert_eq!(
                after,
                before + 1,
                "write {i} into an embedded container walked"
            );
        }
        check_tables(&a.mm, a.roots[b'e' as usize].hp.unwrap());
    }
    assert!(writes > 200, "{writes} writes into embedded containers");
    for (k, v) in &model {
        assert_eq!(a.get(k), Some(&[*v][..]), "{k:?}");
    }
}
