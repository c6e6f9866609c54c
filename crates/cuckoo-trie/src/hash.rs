//! The peelable prefix hash and the two candidate buckets of a hash (§4.2, Algorithm 2
//! `BUCKETS`).
//!
//! A node is named by a key prefix `x` (a string of symbols). Its hash `h(x)` lies in
//! `[0, S·t)` with `S` the number of buckets (a power of two, at least 4) and `t` =
//! [`TAGS`] = 16, so hashes have `m = log2(S·t)` bits:
//!
//! ```text
//! h(ε)     = 0
//! h(x · c) = π(h(x) ⊕ K[c])          π: an invertible mix of m-bit integers
//! π(v)     = xs(C2 · xs(C1 · v))     (mod 2^m), C1, C2 odd, xs(v) = v ⊕ (v >> ⌈m/2⌉)
//! ```
//!
//! For each symbol `c`, `v ↦ h(x·c)` is a bijection of `[0, 2^m)`, so `h` is *peelable*:
//! given `h(x·c)` and `c`, `PrefixHash::peel` (tests only; the inverse mix, then `⊕ K[c]`) gives
//! back `h(x)`. Key elimination relies on that property, not on computing it: an entry's
//! tag, bucket and last symbol determine its parent's hash.
//!
//! **Deviation from the paper** (§4.2 uses `h(x·c) = ⌊(h(x)⊕c)/R⌋ + (S·t/R)·((h(x)⊕c) mod
//! R)`, a rotation by `log2 R` bits): that function is peelable too, but it is linear in
//! the symbols and places a fresh symbol's bits in the tag (low bits) while the bucket
//! index comes from the upper bits, which only a few earlier symbols reach. With small
//! alphabets the nodes of the first levels crowd into a handful of buckets — the unit test
//! `table::tests::key_elimination_finds_every_node` filled only 4 of 64 buckets' worth of
//! hashes and failed at 33% load with it. Any per-symbol bijection keeps the paper's
//! correctness argument, so we mix.
//!
//! The buckets of `h` are `B1 = ⌊h/t⌋` (primary) and `B2 = (B1 + M[h mod t]) mod S`
//! (secondary), with `M` a fixed table of `t` pseudo-random offsets in `[1, S)`: never 0, so
//! the two buckets differ. The tag `h mod t` plus a primary/secondary bit stored in the
//! entry, with the entry's bucket, give back `h` and the other bucket (relocation without
//! the key).

/// `t`: the number of tag values; a tag is `h mod t` (4 bits).
pub(crate) const TAGS: u64 = 16;

/// The odd multipliers of the mix.
const C1: u64 = 0x9E37_79B9_7F4A_7C15;
const C2: u64 = 0xD6E8_FEB8_6659_FD93;

/// The hash function and bucket mapping of one table size.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PrefixHash {
    /// `S`, the number of buckets: a power of two, at least 4.
    buckets: u64,
    /// `M`: the secondary-bucket offsets, each in `[1, S)`.
    offsets: [u64; TAGS as usize],
    /// `K`: the per-symbol keys.
    keys: [u64; 64],
    /// `2^m - 1`.
    mask: u64,
    /// `⌈m/2⌉`, the xorshift distance.
    shift: u32,
}

/// SplitMix64: the fixed pseudo-random source of the offset table.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl PrefixHash {
    /// The hash of a table of `buckets` buckets (a power of two, at least 4).
    pub(crate) fn new(buckets: u64) -> PrefixHash {
        assert!(buckets.is_power_of_two() && buckets >= 4, "bucket count");
        let mut offsets = [0; TAGS as usize];
        for (i, o) in offsets.iter_mut().enumerate() {
            *o = 1 + splitmix(i as u64 ^ 0xC0C0_0C0C) % (buckets - 1);
        }
        let mask = buckets * TAGS - 1;
        let mut keys = [0; 64];
        for (i, k) in keys.iter_mut().enumerate() {
            *k = splitmix(i as u64 ^ 0x5EED_0000) & mask;
        }
        let m = mask.count_ones();
        PrefixHash {
            buckets,
            offsets,
            keys,
            mask,
            shift: m.div_ceil(2),
        }
    }

    /// `S·t`: hashes lie in `[0, space)`.
    #[inline]
    pub(crate) fn space(&self) -> u64 {
        self.buckets * TAGS
    }

    /// The number of buckets `S`.
    #[inline]
    pub(crate) fn buckets(&self) -> u64 {
        self.buckets
    }

    /// `h(x · c)` from `h(x)`.
    #[inline]
    pub(crate) fn child(&self, parent: u64, c: u8) -> u64 {
        debug_assert!(parent <= self.mask && c < 64);
        let mut v = parent ^ self.keys[usize::from(c)];
        v = v.wrapping_mul(C1) & self.mask;
        v ^= v >> self.shift;
        v = v.wrapping_mul(C2) & self.mask;
        v ^ (v >> self.shift)
    }

    /// `h(x)` from `h(x · c)` and `c`: the peel function `P_h` (used by tests only; the
    /// search never needs it).
    #[cfg(test)]
    pub(crate) fn peel(&self, h: u64, c: u8) -> u64 {
        // xs is its own inverse when the shift is at least half the width.
        let unxs = |v: u64| v ^ (v >> self.shift);
        let mut v = unxs(h);
        v = v.wrapping_mul(inverse(C2)) & self.mask;
        v = unxs(v);
        v = v.wrapping_mul(inverse(C1)) & self.mask;
        v ^ self.keys[usize::from(c)]
    }

    /// The hash of a whole symbol string.
    #[cfg(test)]
    pub(crate) fn of(&self, symbols: &[u8]) -> u64 {
        symbols.iter().fold(0, |h, &c| self.child(h, c))
    }

    /// `(B1, B2)`: the primary and secondary bucket of `h`.
    #[inline]
    pub(crate) fn buckets_of(&self, h: u64) -> (usize, usize) {
        let b1 = h / TAGS;
        let b2 = (b1 + self.offsets[(h % TAGS) as usize]) & (self.buckets - 1);
        (b1 as usize, b2 as usize)
    }

    /// The tag of `h`: `h mod t`.
    #[inline]
    pub(crate) fn tag(h: u64) -> u8 {
        (h % TAGS) as u8
    }

    /// The hash of an entry found in `bucket` with `tag`, in its primary bucket or not.
    #[inline]
    pub(crate) fn hash_at(&self, bucket: usize, tag: u8, primary: bool) -> u64 {
        let b1 = if primary {
            bucket as u64
        } else {
            (bucket as u64 + self.buckets - self.offsets[usize::from(tag)]) & (self.buckets - 1)
        };
        b1 * TAGS + u64::from(tag)
    }

    /// The other candidate bucket of an entry found in `bucket` with `tag`.
    #[inline]
    pub(crate) fn alternate(&self, bucket: usize, tag: u8, primary: bool) -> usize {
        let (b1, b2) = self.buckets_of(self.hash_at(bucket, tag, primary));
        if primary { b2 } else { b1 }
    }
}

/// The inverse of an odd `a` modulo 2^64 (Newton's iteration).
#[cfg(test)]
fn inverse(a: u64) -> u64 {
    let mut x = a;
    for _ in 0..6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peelable_and_in_range() {
        for s in [4u64, 8, 64, 1 << 12] {
            let ph = PrefixHash::new(s);
            let mut h = 0;
            for i in 0..200u32 {
                let c = (i * 7 % 33) as u8;
                let next = ph.child(h, c);
                assert!(next < ph.space());
                assert_eq!(ph.peel(next, c), h, "S={s} step {i}");
                h = next;
            }
        }
    }

    #[test]
    fn child_is_a_bijection_per_symbol() {
        let ph = PrefixHash::new(8);
        for c in [0u8, 1, 17, 32] {
            let mut seen = vec![false; ph.space() as usize];
            for h in 0..ph.space() {
                let x = ph.child(h, c) as usize;
                assert!(!seen[x]);
                seen[x] = true;
            }
        }
    }

    #[test]
    fn buckets_differ_and_tags_recover_the_hash() {
        for s in [4u64, 16, 1024] {
            let ph = PrefixHash::new(s);
            for h in 0..ph.space().min(4096) {
                let (b1, b2) = ph.buckets_of(h);
                assert_ne!(b1, b2);
                assert!(b1 < s as usize && b2 < s as usize);
                let tag = PrefixHash::tag(h);
                assert_eq!(ph.hash_at(b1, tag, true), h);
                assert_eq!(ph.hash_at(b2, tag, false), h);
                assert_eq!(ph.alternate(b1, tag, true), b2);
                assert_eq!(ph.alternate(b2, tag, false), b1);
            }
        }
    }
}
