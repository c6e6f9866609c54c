//! The benchmark's own deterministic pseudo-random generator.
//!
//! Datasets and operation streams must be identical for a given seed on every machine and
//! with every version of every dependency, so the generator is written here rather than
//! taken from a crate whose streams may change: xoshiro256** seeded through SplitMix64
//! (Blackman and Vigna). Streams for different purposes are split off by [`Rng::fork`] with
//! a label, so adding a consumer never shifts another consumer's numbers.

/// SplitMix64 step: a good 64-bit mixer, also used to hash small integers.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xoshiro256**: fast, 256 bits of state, passes BigCrush.
#[derive(Clone, Debug)]
pub(crate) struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose stream is fully determined by `seed`.
    pub(crate) fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut s = [0u64; 4];
        for w in &mut s {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            *w = mix64(x);
        }
        Rng { s }
    }

    /// An independent generator for the purpose named by `label` (and `index`).
    pub(crate) fn fork(seed: u64, label: &str, index: u64) -> Rng {
        let mut h = seed ^ 0x6A09_E667_F3BC_C908;
        for &b in label.as_bytes() {
            h = mix64(h ^ u64::from(b));
        }
        Rng::new(mix64(h ^ index))
    }

    /// The next 64 random bits.
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// A number in `0..n` (`n > 0`), by multiply-shift (bias below 2^-32 for `n < 2^32`).
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `lo..=hi`.
    #[inline]
    pub(crate) fn range_incl(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// A float uniformly distributed in `[0, 1)`.
    #[inline]
    pub(crate) fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Fills `out` with random bytes.
    pub(crate) fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let x = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&x[..chunk.len()]);
        }
    }

    /// Shuffles `v` in place (Fisher–Yates).
    pub(crate) fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_forks_differ() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut x = Rng::fork(7, "ops", 0);
        let mut y = Rng::fork(7, "ops", 1);
        assert_ne!(x.next_u64(), y.next_u64());
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            assert!(r.below(10) < 10);
            let f = r.f64();
            assert!((0.0..1.0).contains(&f));
        }
    }
}
