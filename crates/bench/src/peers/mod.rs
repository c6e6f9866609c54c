//! Peers: well-known concurrent (and one sequential) maps behind Orrery's own API.
//!
//! Each peer is a thin newtype implementing [`orrery::KvIndex`] (and
//! [`orrery::OrderedKvIndex`] when it is ordered), so the benchmark drives peers and Orrery's
//! structures through the very same trait objects and code path, and the SLB can wrap a peer
//! like any other index. Keys and values are stored as `Box<[u8]>` (16-byte header plus the
//! bytes in their own allocation) except in the `std` B-trees, which hold `Vec<u8>` like
//! [`orrery::reference::LockedBTreeMap`]. Hash peers all use `foldhash` (hashbrown's default)
//! so that the hash function is not what is compared.
//!
//! No peer offers a byte count, so their `memory_usage()` reports zero and their registry
//! entry says `reports_memory: false`; the benchmark shows "n/a" there and relies on the
//! counting allocator and RSS, which measure every structure the same way.
//!
//! `wormhole_c` and `cuckoo_trie_c` are opt-in: the Wormhole and Cuckoo Trie authors' C
//! libraries, opened at run time from `$ORRERY_WORMHOLE_C` and `$ORRERY_CUCKOO_TRIE_C` (see
//! their module docs for building and running them), through the shared loader `clib`. `judy` opens the system's `libJudy`
//! (Debian `libjudy-dev`) at run time.
//!
//! The `insert` of a peer must report whether the key was new, which not every peer's API
//! tells in one call; each adapter's docs say what extra work that costs.

pub(crate) mod btree;
pub(crate) mod clib;
pub(crate) mod congee;
pub(crate) mod cuckoo_trie_c;
pub(crate) mod hash;
pub(crate) mod judy;
pub(crate) mod scc;
pub(crate) mod skiplist;
pub(crate) mod wormhole_c;

/// The hasher of every hash-table peer.
pub(crate) type Hasher = foldhash::fast::RandomState;

#[cfg(test)]
pub(crate) mod tests {
    //! A differential check every peer adapter passes against `BTreeMap`.
    use std::collections::BTreeMap;
    use std::ops::{Bound, ControlFlow};

    use orrery::{KvIndex, OrderedKvIndex};

    use crate::rng::Rng;

    /// Random inserts, overwrites, removals and lookups of `key_len`-byte keys (or
    /// 1..=12-byte keys when `key_len` is 0) with `value_len`-byte values, compared with a
    /// `BTreeMap`; scans too when `ordered` is given.
    pub(crate) fn differential(
        index: &dyn KvIndex,
        ordered: Option<&dyn OrderedKvIndex>,
        key_len: usize,
        value_len: usize,
    ) {
        differential_with(
            index,
            ordered,
            key_len,
            value_len,
            &[0u8, 1, 0x7F, 0xFF],
            true,
        );
    }

    /// [`differential`] with keys drawn from `alphabet`, and without removals unless
    /// `removes` (for peers that cannot remove; their removal steps become lookups).
    pub(crate) fn differential_with(
        index: &dyn KvIndex,
        ordered: Option<&dyn OrderedKvIndex>,
        key_len: usize,
        value_len: usize,
        alphabet: &[u8],
        removes: bool,
    ) {
        let mut model = BTreeMap::<Vec<u8>, Vec<u8>>::new();
        let mut rng = Rng::new(77);
        let key = |rng: &mut Rng| -> Vec<u8> {
            let len = if key_len == 0 {
                rng.range_incl(1, 12) as usize
            } else {
                key_len
            };
            let mut k = vec![0u8; len];
            // A small alphabet so that keys collide and share prefixes.
            for b in &mut k {
                *b = alphabet[rng.below(alphabet.len() as u64) as usize];
            }
            k
        };
        for step in 0..4000 {
            let k = key(&mut rng);
            match rng.below(10) {
                0..=3 => {
                    let mut v = vec![0u8; value_len];
                    rng.fill(&mut v);
                    let new = index.insert(&k, &v).unwrap();
                    assert_eq!(new, model.insert(k, v).is_none(), "insert at step {step}");
                }
                4..=5 if removes => assert_eq!(index.remove(&k), model.remove(&k).is_some()),
                _ => assert_eq!(index.get(&k), model.get(&k).cloned(), "get at step {step}"),
            }
            assert_eq!(index.len(), model.len());
            if let Some(o) = ordered
                && step % 50 == 0
            {
                let start = key(&mut rng);
                let bound = match rng.below(3) {
                    0 => Bound::Included(&start[..]),
                    1 => Bound::Excluded(&start[..]),
                    _ => Bound::Unbounded,
                };
                let limit = rng.range_incl(1, 30) as usize;
                let mut got = Vec::new();
                o.scan(bound, &mut |k, v| {
                    got.push((k.to_vec(), v.to_vec()));
                    if got.len() >= limit {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                });
                let want: Vec<(Vec<u8>, Vec<u8>)> = model
                    .range::<[u8], _>((bound, Bound::Unbounded))
                    .take(limit)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(got, want, "scan at step {step}");
                assert_eq!(
                    o.last(),
                    model.last_key_value().map(|(k, v)| (k.clone(), v.clone()))
                );
            }
        }
    }
}
