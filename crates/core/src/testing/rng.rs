//! Seeds, sizes and key distributions: what makes the suite deterministic and reproducible.
//!
//! Every random choice of the suite comes from a [`SmallRng`] seeded from a `u64`. The seeds
//! are [`DEFAULT_SEED`] plus a few derived from it, or exactly the one given in the
//! `ORRERY_SEED` environment variable (decimal or `0x` hex), so a failure report's seed
//! replays the same operations. (Multi-threaded parts replay the same per-thread operation
//! sequences; the interleaving is up to the scheduler.)
//!
//! Sizes go through [`scaled`]: divided under Miri (which interprets every instruction), and
//! multiplied by `ORRERY_SCALE` (a float, default 1) for longer opt-in runs.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::api::u64_key;

/// The default seed of every randomized part ("orrery!1" in ASCII).
pub const DEFAULT_SEED: u64 = 0x6f72_7265_7279_2131;

/// How many seeds a randomized part runs when `ORRERY_SEED` is not set (one under Miri).
pub const DEFAULT_SEED_COUNT: usize = if cfg!(miri) { 1 } else { 3 };

/// The seeds a randomized part runs: the one in `ORRERY_SEED` if set, else [`DEFAULT_SEED`]
/// and seeds derived from it.
///
/// Returns an error message when `ORRERY_SEED` is set but not a number.
pub fn seeds() -> Result<Vec<u64>, String> {
    match std::env::var("ORRERY_SEED") {
        Ok(text) => parse_seed(&text)
            .map(|s| vec![s])
            .ok_or_else(|| format!("ORRERY_SEED={text:?} is not a decimal or 0x-hex u64")),
        Err(_) => Ok((0..DEFAULT_SEED_COUNT as u64)
            .map(|i| {
                if i == 0 {
                    DEFAULT_SEED
                } else {
                    derive(DEFAULT_SEED, i)
                }
            })
            .collect()),
    }
}

/// The first seed of [`seeds`]: for parts that run once.
pub fn seed() -> Result<u64, String> {
    seeds().map(|s| s[0])
}

/// Parses a seed written in decimal or in hex with a `0x` prefix (underscores allowed).
pub fn parse_seed(text: &str) -> Option<u64> {
    let t: String = text.trim().chars().filter(|&c| c != '_').collect();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

/// A seed for sub-stream `stream` of `seed` (SplitMix64 finalizer of their combination), so
/// that parts, distributions and threads draw independent sequences from one seed.
pub fn derive(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The generator of the suite, seeded.
pub fn rng(seed: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed)
}

/// A size for the current run: `native` normally, `miri` under Miri (which interprets every
/// instruction, thousands of times slower), multiplied by `ORRERY_SCALE` when that is set to a
/// positive number; at least 1.
pub fn sized(native: usize, miri: usize) -> usize {
    let factor = std::env::var("ORRERY_SCALE")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|f| f.is_finite() && *f > 0.0)
        .unwrap_or(1.0);
    let n = if cfg!(miri) { miri } else { native };
    ((n as f64 * factor) as usize).max(1)
}

/// `n` scaled for the current run: [`sized`] with a Miri size of `n / 64`.
pub fn scaled(n: usize) -> usize {
    sized(n, n / 64)
}

/// A shared value of `MAX_VALUE_LEN + 1` bytes, built once: over-long inserts need one, and
/// allocating a fresh MiB each time dominates fuzzing and Miri runs.
pub fn over_long_value() -> &'static [u8] {
    static VALUE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    VALUE.get_or_init(|| vec![0x5A; crate::api::MAX_VALUE_LEN + 1])
}

/// Random bytes of length `len`.
pub fn random_bytes(rng: &mut SmallRng, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rng.fill(&mut v[..]);
    v
}

/// A distribution of keys for randomized operations. Each is chosen to stress a different
/// part of an index: dense short keys, deep shared prefixes, prefix relations, integer keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyDist {
    /// 0 to 8 uniformly random bytes: short keys, the empty key, some collisions.
    ShortRandom,
    /// One of three ~200-byte prefixes (two of them prefixes of the third) followed by 0 to
    /// 3 bytes from a 4-letter alphabet: deep shared prefixes, few distinct keys.
    LongSharedPrefix,
    /// 0 to 6 bytes from `{00, 01, 7F, 80, FE, FF}`: keys that are prefixes of each other,
    /// runs of `0x00` and `0xFF`, many collisions.
    TinyAlphabet,
    /// Big-endian `u64` keys from a small range plus the extremes: fixed-length binary keys.
    BigEndianInts,
    /// A mix of all the above in one index.
    Mixed,
}

impl KeyDist {
    /// Every distribution.
    pub const ALL: [KeyDist; 5] = [
        KeyDist::ShortRandom,
        KeyDist::LongSharedPrefix,
        KeyDist::TinyAlphabet,
        KeyDist::BigEndianInts,
        KeyDist::Mixed,
    ];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            KeyDist::ShortRandom => "short-random",
            KeyDist::LongSharedPrefix => "long-shared-prefix",
            KeyDist::TinyAlphabet => "tiny-alphabet",
            KeyDist::BigEndianInts => "big-endian-ints",
            KeyDist::Mixed => "mixed",
        }
    }

    /// Draws one key.
    pub fn sample(self, rng: &mut SmallRng) -> Vec<u8> {
        match self {
            KeyDist::ShortRandom => {
                let len = rng.random_range(0..=8);
                random_bytes(rng, len)
            }
            KeyDist::LongSharedPrefix => {
                let mut key = long_prefix(rng.random_range(0..3));
                let extra = rng.random_range(0..=3);
                for _ in 0..extra {
                    key.push([0x00, b'm', 0xFE, 0xFF][rng.random_range(0..4)]);
                }
                key
            }
            KeyDist::TinyAlphabet => {
                let len = rng.random_range(0..=6);
                (0..len)
                    .map(|_| TINY_ALPHABET[rng.random_range(0..TINY_ALPHABET.len())])
                    .collect()
            }
            KeyDist::BigEndianInts => {
                let x = match rng.random_range(0..16) {
                    0 => [0, 1, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1]
                        [rng.random_range(0..6)],
                    _ => rng.random_range(0..4096u64) << (8 * rng.random_range(0..2u32)),
                };
                u64_key(x).to_vec()
            }
            KeyDist::Mixed => {
                let d = KeyDist::ALL[rng.random_range(0..4)];
                d.sample(rng)
            }
        }
    }
}

/// The alphabet of [`KeyDist::TinyAlphabet`].
pub const TINY_ALPHABET: [u8; 6] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF];

/// The shared prefixes of [`KeyDist::LongSharedPrefix`]: `which` 0 is 200 bytes, 1 is the
/// first 199 bytes of it, 2 is it plus `0x00`.
fn long_prefix(which: usize) -> Vec<u8> {
    let mut p: Vec<u8> = (0..200u32).map(|i| (i * 37 % 251) as u8).collect();
    match which {
        0 => {}
        1 => {
            p.pop();
        }
        _ => p.push(0x00),
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_parse_and_derive() {
        assert_eq!(parse_seed("42"), Some(42));
        assert_eq!(parse_seed("0xff"), Some(255));
        assert_eq!(parse_seed("0x6f72_7265"), Some(0x6f72_7265));
        assert_eq!(parse_seed("nope"), None);
        assert_ne!(derive(1, 0), derive(1, 1));
        assert_ne!(derive(1, 0), derive(2, 0));
    }

    #[test]
    fn distributions_are_deterministic_and_varied() {
        for d in KeyDist::ALL {
            let a: Vec<_> = (0..50)
                .map({
                    let mut r = rng(7);
                    move |_| d.sample(&mut r)
                })
                .collect();
            let b: Vec<_> = (0..50)
                .map({
                    let mut r = rng(7);
                    move |_| d.sample(&mut r)
                })
                .collect();
            assert_eq!(a, b, "{}", d.name());
            let distinct: std::collections::BTreeSet<_> = a.iter().collect();
            assert!(
                distinct.len() > 5,
                "{} gave {} distinct keys",
                d.name(),
                distinct.len()
            );
        }
    }
}
