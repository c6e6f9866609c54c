//! Key streams: datasets whose key `i` is computed from `i`, so a run of any size costs the
//! harness no key memory (`stream:rand-int`, `stream:seq-int`, `stream:ngram`).
//!
//! A stored set ([`super::KeySet`] built by the generators) holds every key of a run: 16
//! bytes a key for `rand-8`, 16 GiB at a billion keys, more than the index under test
//! would need. A stream holds a few constants instead and writes key `i` into a caller's
//! buffer on demand ([`KeyStream::key`]). The key pool's layout is the stored sets' (keys
//! `0..N` loaded, `N..2N` absent for `lookup-neg`, fresh keys for inserts after), so every
//! workload runs on a stream unchanged: a lookup of a present or an absent key regenerates
//! it.
//!
//! Distinct by construction, so no deduplication (which would need memory):
//! - `stream:rand-int`: key `i` is `u64_key(mix(i))`, where `mix` is a bijection of the
//!   64-bit integers keyed by the seed (xors, additions and multiplications by odd
//!   constants, and xor-shifts right: each step invertible). Present keys are `mix(i)` for
//!   `i < N` and absent keys `mix(i)` for `i ≥ N`: the split is exact because `mix` is a
//!   bijection.
//! - `stream:seq-int`: key `i` is `u64_key(i)` (the seed plays no part), as `seq-int`.
//! - `stream:ngram`: text keys with the lengths of the `ngram` set. Key `i` is filler
//!   (zipfian pseudo-words from the `ngram` vocabulary, so sorted neighbours share
//!   prefixes) followed by [`CODE_LEN`] characters that spell `mix(i)` in base 64; the code
//!   at a fixed distance from the end makes keys with distinct `i` distinct whatever their
//!   filler. The total length is drawn (from a second hash of `i`) from the length
//!   histogram of 65,536 keys of the stored `ngram` set for the same seed, raised to
//!   [`CODE_LEN`] where shorter (a few per cent of `ngram` keys are) and capped at
//!   [`MAX_LEN`].
//!
//! Costs: a `load` of a stream computes each key inside the timed loop (a few ns for the
//! integer streams, tens of ns for `stream:ngram`; measured in `docs/bench.md`), whereas a
//! stored set's key is a prefetched read; lookups copy their keys into the untimed trace
//! first, as for stored sets (`exec`), so lookup rates are comparable.

use super::ngram;
use crate::dist::Zipf;
use crate::rng::{Rng, mix64};

/// Longest key a stream writes (the size of a [`KeyBuf`]).
pub(crate) const MAX_LEN: usize = 64;

/// Characters of the base-64 code that makes `stream:ngram` keys distinct (66 bits ≥ 64).
pub(crate) const CODE_LEN: usize = 11;

/// A buffer a stream key is written into.
pub(crate) type KeyBuf = [u8; MAX_LEN];

/// The code's alphabet: printable, no NUL, no tab or newline.
const CODE_ALPHABET: &[u8; 64] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+/";

/// Entries of the length table (a length is drawn by indexing it with 12 random bits).
const LEN_TABLE: usize = 4096;

/// Which family a stream generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamKind {
    /// `u64_key(mix(i))`.
    RandInt,
    /// `u64_key(i)`.
    SeqInt,
    /// Variable-length text with `ngram`'s length distribution.
    Ngram,
}

impl StreamKind {
    /// Parses the part after `stream:`.
    pub(crate) fn parse(s: &str) -> Option<StreamKind> {
        Some(match s {
            "rand-int" => StreamKind::RandInt,
            "seq-int" => StreamKind::SeqInt,
            "ngram" => StreamKind::Ngram,
            _ => return None,
        })
    }

    /// The family's name (after `stream:`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            StreamKind::RandInt => "rand-int",
            StreamKind::SeqInt => "seq-int",
            StreamKind::Ngram => "ngram",
        }
    }
}

/// The seeded bijection of `u64` (module docs): every step is invertible.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mixer {
    k: [u64; 3],
}

impl Mixer {
    /// The mixer keyed by `seed` and `label`.
    pub(crate) fn new(seed: u64, label: &str) -> Mixer {
        let mut r = Rng::fork(seed, label, 0);
        Mixer {
            k: [r.next_u64(), r.next_u64(), r.next_u64()],
        }
    }

    /// The image of `x`: distinct `x` give distinct images.
    #[inline]
    pub(crate) fn mix(&self, x: u64) -> u64 {
        let mut z = x ^ self.k[0];
        z = z.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z ^= z >> 31;
        z = z
            .wrapping_add(self.k[1])
            .wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 29;
        z = (z ^ self.k[2]).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        z ^ (z >> 32)
    }
}

/// A key stream of `len` keys (module docs).
#[derive(Clone, Debug)]
pub(crate) struct KeyStream {
    kind: StreamKind,
    len: usize,
    mixer: Mixer,
    /// Salt of the second hash (lengths and filler of `stream:ngram`).
    salt: u64,
    /// `stream:ngram`: key lengths, drawn by indexing with 12 random bits.
    lengths: Vec<u8>,
    /// `stream:ngram`: the vocabulary's popularity.
    vocab: Option<Zipf>,
    /// `stream:ngram`: the vocabulary's salt.
    word_salt: u64,
}

impl KeyStream {
    /// The stream of `kind` for `seed`, `len` keys long.
    pub(crate) fn new(kind: StreamKind, len: usize, seed: u64) -> KeyStream {
        let label = format!("stream:{}", kind.name());
        let mixer = Mixer::new(seed, &label);
        let salt = Rng::fork(seed, &label, 1).next_u64();
        let (mut lengths, mut vocab, mut word_salt) = (Vec::new(), None, 0);
        if kind == StreamKind::Ngram {
            lengths = ngram_lengths(seed);
            let (v, s) = ngram::vocabulary(&mut Rng::fork(seed, "ngram", 0));
            (vocab, word_salt) = (Some(v), s);
        }
        KeyStream {
            kind,
            len,
            mixer,
            salt,
            lengths,
            vocab,
            word_salt,
        }
    }

    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The family.
    pub(crate) fn kind(&self) -> StreamKind {
        self.kind
    }

    /// Writes key `i` into `buf` and returns it.
    #[inline]
    pub(crate) fn key<'a>(&self, i: u64, buf: &'a mut KeyBuf) -> &'a [u8] {
        match self.kind {
            StreamKind::RandInt => {
                buf[..8].copy_from_slice(&self.mixer.mix(i).to_be_bytes());
                &buf[..8]
            }
            StreamKind::SeqInt => {
                buf[..8].copy_from_slice(&i.to_be_bytes());
                &buf[..8]
            }
            StreamKind::Ngram => {
                let n = self.ngram_key(i, buf);
                &buf[..n]
            }
        }
    }

    /// Writes `stream:ngram` key `i`; returns its length.
    fn ngram_key(&self, i: u64, buf: &mut KeyBuf) -> usize {
        let mut h = mix64(i ^ self.salt);
        let len = usize::from(self.lengths[(h >> 52) as usize % LEN_TABLE]);
        let fill = len - CODE_LEN;
        let mut at = 0;
        let mut word = Vec::with_capacity(MAX_LEN);
        if let Some(vocab) = &self.vocab {
            while at < fill {
                if at > 0 {
                    buf[at] = b' ';
                    at += 1;
                    if at == fill {
                        break;
                    }
                }
                h = mix64(h);
                let u = (h >> 11) as f64 / (1u64 << 53) as f64;
                word.clear();
                super::words::word(vocab.sample(u), self.word_salt, &mut word);
                let take = word.len().min(fill - at);
                buf[at..at + take].copy_from_slice(&word[..take]);
                at += take;
            }
        }
        let mut code = self.mixer.mix(i);
        for b in &mut buf[fill..len] {
            *b = CODE_ALPHABET[(code & 63) as usize];
            code >>= 6;
        }
        len
    }
}

/// The `LEN_TABLE`-entry length table of `stream:ngram`: the length histogram of 65,536
/// keys of the stored `ngram` set, raised to [`CODE_LEN`] and capped at [`MAX_LEN`].
fn ngram_lengths(seed: u64) -> Vec<u8> {
    const SAMPLE: usize = 65_536;
    let mut rng = Rng::fork(seed, "ngram", 0);
    let mut next = ngram::generator(&mut rng);
    let mut buf = Vec::new();
    let mut lens: Vec<usize> = (0..SAMPLE)
        .map(|_| {
            buf.clear();
            next(&mut rng, &mut buf);
            buf.len().clamp(CODE_LEN, MAX_LEN)
        })
        .collect();
    lens.sort_unstable();
    (0..LEN_TABLE)
        .map(|j| lens[j * SAMPLE / LEN_TABLE + SAMPLE / LEN_TABLE / 2] as u8)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn keys(kind: StreamKind, n: usize, seed: u64) -> Vec<Vec<u8>> {
        let s = KeyStream::new(kind, n, seed);
        let mut buf = [0u8; MAX_LEN];
        (0..n as u64).map(|i| s.key(i, &mut buf).to_vec()).collect()
    }

    const KINDS: [StreamKind; 3] = [StreamKind::RandInt, StreamKind::SeqInt, StreamKind::Ngram];

    /// Distinct exhaustively at a small N (present and absent keys together), and
    /// deterministic per seed.
    #[test]
    fn keys_are_distinct_and_deterministic() {
        for kind in KINDS {
            let a = keys(kind, 200_000, 7);
            let set: HashSet<&Vec<u8>> = a.iter().collect();
            assert_eq!(set.len(), a.len(), "{kind:?}: duplicate keys");
            assert_eq!(a, keys(kind, 200_000, 7), "{kind:?}: same seed, same keys");
            if kind != StreamKind::SeqInt {
                assert_ne!(
                    a[..100],
                    keys(kind, 100, 8)[..],
                    "{kind:?}: seed changes keys"
                );
            }
            assert!(a.iter().all(|k| !k.is_empty() && k.len() <= MAX_LEN));
        }
    }

    /// The present/absent split is exact: no key of `0..N` equals one of `N..2N`, and the
    /// mixer is a bijection (checked through its inverse on random samples far apart).
    #[test]
    fn present_and_absent_keys_are_disjoint() {
        for kind in KINDS {
            let n = 50_000usize;
            let all = keys(kind, 2 * n, 3);
            let present: HashSet<&Vec<u8>> = all[..n].iter().collect();
            assert!(all[n..].iter().all(|k| !present.contains(k)), "{kind:?}");
        }
        let m = Mixer::new(5, "t");
        let mut r = crate::rng::Rng::new(1);
        for _ in 0..100_000 {
            let (a, b) = (r.next_u64(), r.next_u64());
            assert_eq!(a == b, m.mix(a) == m.mix(b));
            assert_eq!(unmix(&m, m.mix(a)), a, "the mixer is invertible");
        }
    }

    /// The mixer's inverse, step by step: proves bijectivity on samples.
    fn unmix(m: &Mixer, y: u64) -> u64 {
        fn unshift(y: u64, s: u32) -> u64 {
            let mut x = y;
            for _ in 0..64 / s {
                x = y ^ (x >> s);
            }
            x
        }
        fn inv(a: u64) -> u64 {
            let mut x = a;
            for _ in 0..6 {
                x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
            }
            x
        }
        let mut z = unshift(y, 32);
        z = z.wrapping_mul(inv(0xD6E8_FEB8_6659_FD93)) ^ m.k[2];
        z = unshift(z, 29);
        z = z
            .wrapping_mul(inv(0x94D0_49BB_1331_11EB))
            .wrapping_sub(m.k[1]);
        z = unshift(z, 31);
        z.wrapping_mul(inv(0xBF58_476D_1CE4_E5B9)) ^ m.k[0]
    }

    /// Sampled far beyond small N: keys at random positions up to 2^50 are distinct.
    #[test]
    fn sampled_keys_are_distinct() {
        for kind in KINDS {
            let s = KeyStream::new(kind, 1 << 50, 9);
            let mut r = crate::rng::Rng::new(2);
            let mut buf = [0u8; MAX_LEN];
            let mut seen = std::collections::HashMap::new();
            for _ in 0..200_000 {
                let i = r.below(1 << 50);
                let k = s.key(i, &mut buf).to_vec();
                if let Some(j) = seen.insert(k, i) {
                    assert_eq!(i, j, "{kind:?}: keys {i} and {j} are equal");
                }
            }
        }
    }

    /// `stream:ngram`'s lengths follow the `ngram` set's distribution: the same mean
    /// (within a byte) and deciles (within two bytes, above the code's length).
    #[test]
    fn ngram_lengths_match_the_ngram_set() {
        let stored = super::super::Spec::Ngram
            .generate(50_000, 50_000, 4, &crate::progress::Progress::hidden())
            .unwrap();
        let mut want: Vec<usize> = (0..stored.len()).map(|i| stored.get(i).len()).collect();
        let mut got: Vec<usize> = keys(StreamKind::Ngram, 50_000, 4)
            .iter()
            .map(Vec::len)
            .collect();
        want.sort_unstable();
        got.sort_unstable();
        let mean = |v: &[usize]| v.iter().sum::<usize>() as f64 / v.len() as f64;
        assert!(
            (mean(&want) - mean(&got)).abs() < 1.0,
            "mean {} vs {}",
            mean(&want),
            mean(&got)
        );
        for d in 1..10 {
            let (w, g) = (want[d * 5000].max(CODE_LEN), got[d * 5000]);
            assert!(w.abs_diff(g) <= 2, "decile {d}: ngram {w}, stream {g}");
        }
        let k = keys(StreamKind::Ngram, 1000, 4);
        assert!(k.iter().all(|k| !k.contains(&0) && !k.contains(&b'\n')));
    }
}
