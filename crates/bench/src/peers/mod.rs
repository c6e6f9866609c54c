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
//! `wormhole_c` is opt-in: the Wormhole authors' C library, opened at run time from
//! `$ORRERY_WORMHOLE_C` (see its module docs for building and running it).
//!
//! The `insert` of a peer must report whether the key was new, which not every peer's API
//! tells in one call; each adapter's docs say what extra work that costs.

pub(crate) mod btree;
pub(crate) mod congee;
pub(crate) mod hash;
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
                *b = [0u8, 1, 0x7F, 0xFF][rng.below(4) as usize];
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
                4..=5 => assert_eq!(index.remove(&k), model.remove(&k).is_some()),
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
