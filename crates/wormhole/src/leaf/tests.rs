//! Unit tests of the leaf: entries, sorting, inserts, splits and merges against a model.

use super::*;
use orrery_core::alloc::SizeClassPool;
use orrery_core::hash::crc32c;
use std::collections::BTreeMap;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn tag_of(k: &[u8]) -> u16 {
    leaf_tag(crc32c(k))
}

/// A pair as the index makes it: inline when the leaf takes inline pairs and it fits.
fn mk(w: &WriteLeaf<'_>, kvp: &SizeClassPool, k: &[u8], v: &[u8]) -> Pair {
    match InlinePair::new(k, v).filter(|_| w.inline_on()) {
        Some(ip) => Pair::Inline(ip),
        None => Pair::Heap(Kv::new(kvp, k, v).unwrap()),
    }
}

fn check(w: &WriteLeaf<'_>, model: &Model) {
    assert_eq!(w.len(), model.len());
    let tags = w.tags();
    for win in tags.windows(2) {
        assert!(etag(win[0]) <= etag(win[1]));
    }
    let mut seen: Vec<usize> = w.order().iter().map(|&o| o as usize).collect();
    seen.sort_unstable();
    let real: Vec<usize> = (0..tags.len()).filter(|&i| !is_hole(tags[i])).collect();
    assert_eq!(seen, real, "order names exactly the real slots");
    // A hole carries the tag of the next real slot to its right.
    let mut next = HOLE_END;
    for &e in tags.iter().rev() {
        if is_hole(e) {
            assert_eq!(e, next);
        } else {
            next = hole(etag(e));
        }
    }
    for (k, v) in model {
        for direct in [true, false] {
            let i = w.find_by_tag(k, tag_of(k), direct).expect("present");
            assert_eq!(w.pair(i), (k.as_slice(), v.as_slice()));
            // Small pairs are inline exactly when the leaf takes inline pairs.
            let small = k.len() + v.len() <= INLINE_MAX;
            assert_eq!(
                is_inline(tags[i]),
                small && w.inline_on(),
                "inline placement"
            );
        }
    }
    assert!(
        w.find_by_tag(b"absent-key", tag_of(b"absent-key"), true)
            .is_err()
    );
}

fn free_all(w: &mut WriteLeaf<'_>, kvp: &SizeClassPool) {
    for (_, p) in w.sorted_pairs() {
        // SAFETY: the test owns every pair.
        unsafe { p.free(kvp) };
    }
    w.rebuild(&[]);
}

/// Values of 4, 12 (key + value = 16: the largest inline pair) and 13 bytes (one byte
/// too long) for 4-byte keys.
fn val(i: u32) -> Vec<u8> {
    let len = [4usize, 12, 13][i as usize % 3];
    (0..len).map(|j| (i as usize + j) as u8).collect()
}

fn insert_find_remove_sort_with(pool: &impl LeafAlloc, n: usize) {
    let kvp = crate::kv::kv_pools();
    let leaf = LeafPtr::alloc(pool, n, Box::new([]), 0).unwrap();
    let mut model = Model::new();
    {
        // SAFETY: the test owns the leaf.
        let mut w = unsafe { leaf.write() };
        for i in 0..n as u32 {
            let k = (i.wrapping_mul(2_654_435_761)).to_be_bytes().to_vec();
            let t = tag_of(&k);
            assert!(w.find_by_tag(&k, t, true).is_err());
            let p = mk(&w, &kvp, &k, &val(i));
            w.insert(None, t, p);
            model.insert(k, val(i));
            if i % 7 == 0 {
                w.sort();
                assert!(w.is_sorted());
                // Shifts must carry the inline cells along: check everything often.
                check(&w, &model);
            }
        }
        assert!(w.is_full());
        check(&w, &model);
        let sorted: Vec<Vec<u8>> = w
            .sorted_pairs()
            .iter()
            // SAFETY: live.
            .map(|(_, p)| unsafe { p.key() }.to_vec())
            .collect();
        assert_eq!(sorted, model.keys().cloned().collect::<Vec<_>>());
        // Remove every third key; unsorted tail mixes with removals.
        let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        for (j, k) in keys.iter().enumerate() {
            if j % 3 == 0 {
                let i = w.find_by_tag(k, tag_of(k), false).unwrap();
                let p = w.remove(i);
                // SAFETY: live until freed below.
                assert_eq!(unsafe { p.key() }, k.as_slice());
                // SAFETY: removed from the leaf, owned by the test.
                unsafe { p.free(&kvp) };
                model.remove(k);
            }
        }
        check(&w, &model);
        // Lower bound on sorted order.
        w.sort();
        let first = model.keys().next().unwrap().clone();
        assert_eq!(w.lower_bound(&first, true), 0);
        assert_eq!(w.lower_bound(&first, false), 1);
        assert_eq!(w.find_sorted(&first), Ok(0));
        assert_eq!(w.sorted_pair(0).0, first.as_slice());
        // Replace: grow past the inline limit, shrink back into it, change in place.
        for new in [vec![1u8; 13], vec![2u8; 3], vec![3u8; 12], vec![4u8; 40]] {
            let i = w.find_by_tag(&first, tag_of(&first), true).unwrap();
            let p = mk(&w, &kvp, &first, &new);
            let old = w.replace(i, p);
            // SAFETY: live until freed.
            assert_eq!(unsafe { old.key() }, first.as_slice());
            // SAFETY: replaced, owned by the test.
            unsafe { old.free(&kvp) };
            model.insert(first.clone(), new);
            check(&w, &model);
        }
        for k in model.keys().cloned().collect::<Vec<_>>() {
            let i = w.find_by_tag(&k, tag_of(&k), true).unwrap();
            w.value_mut(i).iter_mut().for_each(|b| *b ^= 0x5A);
            model
                .get_mut(&k)
                .unwrap()
                .iter_mut()
                .for_each(|b| *b ^= 0x5A);
        }
        check(&w, &model);
        free_all(&mut w, &kvp);
    }
    // SAFETY: unlocked and owned.
    unsafe { leaf.free(pool) };
}

/// The lazy sort with keys whose first 8 bytes after a shared prefix tie (suffixes
/// longer than 8 bytes need the full comparison), keys that are prefixes of others,
/// trailing zeros, and both the full sort and the merge of a tail into a sorted run.
#[test]
fn sort_long_ties_and_common_prefixes() {
    let n = if cfg!(miri) { 20 } else { 64 };
    for prefix in [&b""[..], &b"ab"[..], &b"http://www.example.com/"[..]] {
        for mid_sort in [false, true] {
            let pools = LeafPools::new(n);
            let kvp = crate::kv::kv_pools();
            let leaf = LeafPtr::alloc(&pools, n, Box::new([]), 0).unwrap();
            let mut model = Model::new();
            // SAFETY: the test owns the leaf.
            let mut w = unsafe { leaf.write() };
            let mut i = 0u32;
            while model.len() < n {
                let b = (i / 7) as u8;
                let mut k = prefix.to_vec();
                match i % 7 {
                    0 => k.push(b),
                    1 => k.extend([b, 0]),
                    2 => k.extend(
                        b"12345678"
                            .iter()
                            .chain(&[b])
                            .chain(&[0u8; 2][..i as usize % 3]),
                    ),
                    3 => k.extend(b"12345678"),
                    4 => k.extend(b"1234567"),
                    5 => k.extend(b"12345678\xFF".iter().chain(&[b, b])),
                    _ => k.extend([0xFF, b, 0, 0, 0, 0, 0, 0, 0, b]),
                }
                i += 1;
                if model.contains_key(&k) {
                    continue;
                }
                let v = [b; 3];
                let p = mk(&w, &kvp, &k, &v);
                w.insert(None, tag_of(&k), p);
                model.insert(k, v.to_vec());
                if mid_sort && model.len() == n / 2 {
                    w.sort();
                }
            }
            w.sort();
            let got: Vec<Vec<u8>> = (0..w.len()).map(|j| w.sorted_pair(j).0.to_vec()).collect();
            assert_eq!(got, model.keys().cloned().collect::<Vec<_>>(), "{prefix:?}");
            check(&w, &model);
            free_all(&mut w, &kvp);
            drop(w);
            // SAFETY: unlocked and owned.
            unsafe { leaf.free(&pools) };
        }
    }
}

/// The index's conversion of a pair moving into a leaf of the other kind (see
/// `Wormhole::convert_pair`), without the memory counters.
fn convert(kvp: &SizeClassPool, p: Pair, inline: bool) -> Pair {
    match p {
        Pair::Inline(ip) if !inline => Pair::Heap(Kv::new(kvp, ip.key(), ip.value()).unwrap()),
        Pair::Heap(kv) if inline => {
            // SAFETY: the test owns the block.
            let (k, v) = unsafe { (kv.key(), kv.value()) };
            match InlinePair::new(k, v) {
                Some(ip) => {
                    // SAFETY: replaced by its copy, never used again.
                    unsafe { kv.free(kvp) };
                    Pair::Inline(ip)
                }
                None => p,
            }
        }
        _ => p,
    }
}

fn split_into_case(pool: &impl LeafAlloc, n: usize, j: usize, kinds: (bool, bool)) {
    let kvp = crate::kv::kv_pools();
    let left = LeafPtr::alloc_kind(pool, n, Box::new([]), 0, kinds.0).unwrap();
    let right = LeafPtr::alloc_kind(pool, n, Box::new([]), 0, kinds.1).unwrap();
    let mut model = Model::new();
    // SAFETY: the test owns both leaves.
    let (mut lw, mut rw) = unsafe { (left.write(), right.write()) };
    for i in 0..n as u32 {
        let k = i.wrapping_mul(0x9E37_79B9).to_be_bytes().to_vec();
        let p = mk(&lw, &kvp, &k, &val(i));
        lw.insert(None, tag_of(&k), p);
        model.insert(k, val(i));
    }
    lw.sort();
    let mut converted = 0;
    lw.split_into(
        &mut rw,
        j,
        &mut |p, inline| {
            converted += 1;
            Ok(convert(&kvp, p, inline))
        },
        &mut |_| unreachable!("no conversion fails"),
    )
    .unwrap();
    // Pairs are converted exactly when the kinds differ, one call per moving pair.
    let differ = lw.inline_on() != rw.inline_on();
    assert_eq!(converted, if differ { n - j } else { 0 });
    // The right leaf holds every pair in its own kind's form.
    for &e in rw.tags() {
        if !is_hole(e) && rw.inline_on() && differ {
            assert!(is_inline(e) || ekv(e).pair_len() > INLINE_MAX);
        }
        if !is_hole(e) && !rw.inline_on() {
            assert!(!is_inline(e));
        }
    }
    let mut it = model.into_iter();
    let ml: Model = it.by_ref().take(j).collect();
    let mr: Model = it.collect();
    for (w, m) in [(&lw, &ml), (&rw, &mr)] {
        check(w, m);
        assert!(w.is_sorted());
        let got: Vec<Vec<u8>> = (0..w.len()).map(|x| w.sorted_pair(x).0.to_vec()).collect();
        assert_eq!(got, m.keys().cloned().collect::<Vec<_>>(), "j {j}");
    }
    free_all(&mut lw, &kvp);
    free_all(&mut rw, &kvp);
    drop((lw, rw));
    // SAFETY: unlocked and owned.
    unsafe { left.free(pool) };
    // SAFETY: as above.
    unsafe { right.free(pool) };
}

/// `split_into` at the middle and at both extremes, for leaves with and without an
/// inline area and between the kinds: both halves hold exactly their key ranges, sorted,
/// with valid arrays, and a right leaf of the other kind holds its pairs in its form.
#[test]
fn split_into_halves() {
    let n = if cfg!(miri) { 16 } else { 128 };
    for j in [1, n / 2, n - 1] {
        for kinds in [(true, true), (true, false), (false, true), (false, false)] {
            split_into_case(&LeafPools::new(n), n, j, kinds);
        }
        split_into_case(&leaf_pool(n), n, j, (true, true));
    }
}

/// Inserts whose tags all have their home at one end of the leaf: every insert after
/// the first few shifts, toward the right at the left end and toward the left at the
/// right end (the nearest hole is searched outward).
#[test]
fn inserts_shift_toward_nearest_hole() {
    let cap = 16;
    let pools = LeafPools::new(cap);
    let kvp = crate::kv::kv_pools();
    let leaf = LeafPtr::alloc(&pools, cap, Box::new([]), 0).unwrap();
    let mut model = Model::new();
    // SAFETY: owned.
    let mut w = unsafe { leaf.write() };
    let (mut lo, mut hi) = (0, 0);
    let mut i = 0u32;
    while model.len() < cap {
        let k = i.to_le_bytes().to_vec();
        i += 1;
        let h = home(tag_of(&k), cap);
        let take = if h == 0 && lo < cap / 2 {
            lo += 1;
            true
        } else if h == cap - 1 && hi < cap / 2 {
            hi += 1;
            true
        } else {
            false
        };
        if take {
            let p = mk(&w, &kvp, &k, b"v");
            let slot = w.insert(None, tag_of(&k), p);
            model.insert(k.clone(), b"v".to_vec());
            assert_eq!(w.find_by_tag(&k, tag_of(&k), true), Ok(slot));
            check(&w, &model);
        }
    }
    assert!(w.is_full());
    free_all(&mut w, &kvp);
    drop(w);
    // SAFETY: owned, unlocked.
    unsafe { leaf.free(&pools) };
}

#[test]
fn insert_find_remove_sort_plain() {
    let n = if cfg!(miri) { 24 } else { 128 };
    insert_find_remove_sort_with(&leaf_pool(n), n);
}

#[test]
fn insert_find_remove_sort_inline() {
    let n = if cfg!(miri) { 24 } else { 128 };
    let pools = LeafPools::new(n);
    insert_find_remove_sort_with(&pools, n);
    // Dense shifting: a small leaf filled and drained twice.
    insert_find_remove_sort_with(&LeafPools::new(MIN_CAP), MIN_CAP);
}

/// Splits and merges as `smo` does them: inline pairs move between leaves through
/// `sorted_pairs` and `rebuild` (including a rebuild of a leaf from its own pairs).
#[test]
fn rebuild_moves_inline_pairs() {
    let n = if cfg!(miri) { 16 } else { 64 };
    let pools = LeafPools::new(n);
    let kvp = crate::kv::kv_pools();
    let left = LeafPtr::alloc(&pools, n, Box::new([]), 0).unwrap();
    let right = LeafPtr::alloc(&pools, n, Box::new(*b"r"), 0).unwrap();
    let mut model = Model::new();
    // SAFETY: the test owns both leaves.
    let (mut lw, mut rw) = unsafe { (left.write(), right.write()) };
    for i in 0..n as u32 {
        let k = i.wrapping_mul(0x9E37_79B9).to_le_bytes().to_vec();
        let p = mk(&lw, &kvp, &k, &val(i));
        lw.insert(None, tag_of(&k), p);
        model.insert(k, val(i));
    }
    let pairs = lw.sorted_pairs();
    let j = pairs.len() / 2;
    rw.rebuild(&pairs[j..]);
    lw.rebuild(&pairs[..j]);
    let (ml, mr): (Model, Model) = {
        let mut it = model.clone().into_iter();
        let l: Model = it.by_ref().take(j).collect();
        (l, it.collect())
    };
    check(&lw, &ml);
    check(&rw, &mr);
    // Merge back (right into left), the right leaf emptied.
    let mut all = lw.sorted_pairs();
    all.extend(rw.sorted_pairs());
    lw.rebuild(&all);
    rw.rebuild(&[]);
    check(&lw, &model);
    check(&rw, &Model::new());
    free_all(&mut lw, &kvp);
    drop((lw, rw));
    // SAFETY: unlocked and owned.
    unsafe { left.free(&pools) };
    // SAFETY: as above.
    unsafe { right.free(&pools) };
}

/// A plain leaf from the index's pools stores every pair as a block; the pools count
/// the live leaves of each kind and hint cell prefetches while most leaves have cells.
#[test]
fn plain_leaf_stores_blocks_and_pools_count_kinds() {
    let pools = LeafPools::new(16);
    let kvp = crate::kv::kv_pools();
    let head = LeafPtr::alloc(&pools, 16, Box::new([]), 0).unwrap();
    assert_eq!((pools.live(), pools.prefetch_cells()), ((1, 0), true));
    let leaf = LeafPtr::alloc_kind(&pools, 16, Box::new([]), 0, false).unwrap();
    assert_eq!((pools.live(), pools.prefetch_cells()), ((1, 1), true));
    let other = LeafPtr::alloc_kind(&pools, 16, Box::new([]), 0, false).unwrap();
    assert_eq!((pools.live(), pools.prefetch_cells()), ((1, 2), false));
    // SAFETY: owned.
    let mut w = unsafe { leaf.write() };
    assert!(!w.inline_on());
    let mut model = Model::new();
    for i in 0..10u32 {
        let k = i.to_be_bytes().to_vec();
        let p = mk(&w, &kvp, &k, b"v");
        assert!(matches!(p, Pair::Heap(_)));
        w.insert(None, tag_of(&k), p);
        model.insert(k, b"v".to_vec());
    }
    check(&w, &model);
    w.sort();
    assert_eq!(w.small_from(0), 10);
    assert_eq!(w.small_from(7), 3);
    free_all(&mut w, &kvp);
    drop(w);
    // SAFETY: owned, unlocked.
    unsafe { leaf.free(&pools) };
    pools.unlinked(false);
    assert_eq!((pools.live(), pools.prefetch_cells()), ((1, 1), true));
    // SAFETY: as above.
    unsafe { other.free(&pools) };
    // SAFETY: as above.
    unsafe { head.free(&pools) };
}

#[test]
fn sorted_mode_insert_and_shared_sort() {
    let pools = LeafPools::new(16);
    let kvp = crate::kv::kv_pools();
    let leaf = LeafPtr::alloc(&pools, 16, Box::new(*b"anc"), 3).unwrap();
    let mut model = Model::new();
    {
        // SAFETY: owned.
        let mut w = unsafe { leaf.write() };
        for i in [5u8, 1, 9, 3, 7, 0, 2] {
            let k = vec![i, i];
            let v = vec![i; 1 + 3 * i as usize];
            let t = tag_of(&k);
            let j = w.find_sorted(&k).unwrap_err();
            let p = mk(&w, &kvp, &k, &v);
            w.insert(Some(j), t, p);
            model.insert(k, v);
            assert!(w.is_sorted());
        }
        check(&w, &model);
        // Append unsorted, then let a reader sort.
        for i in [4u8, 8, 6] {
            let k = vec![i, i];
            let t = tag_of(&k);
            let p = mk(&w, &kvp, &k, &[i]);
            w.insert(None, t, p);
            model.insert(k, vec![i]);
        }
        assert!(!w.is_sorted());
    }
    {
        // SAFETY: owned.
        let r = unsafe { leaf.read() };
        r.ensure_sorted();
        assert!(r.is_sorted());
        let got: Vec<(Vec<u8>, Vec<u8>)> = (0..r.len())
            .map(|j| {
                let (k, v) = r.sorted_pair(j);
                (k.to_vec(), v.to_vec())
            })
            .collect();
        assert_eq!(got, model.clone().into_iter().collect::<Vec<_>>());
        // SAFETY: owned.
        assert_eq!(unsafe { leaf.hdr() }.anchor(), b"anc");
    }
    // SAFETY: owned.
    let mut w = unsafe { leaf.write() };
    free_all(&mut w, &kvp);
    drop(w);
    // SAFETY: owned.
    unsafe { leaf.free(&pools) };
}
