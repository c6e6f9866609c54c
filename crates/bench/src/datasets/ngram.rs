//! `ngram`: word 2- and 3-grams with a publication year, like the Google Books n-gram keys
//! Hyperion indexes (§4.3, ~23 B): `word word[ word]\tyear`.
//!
//! Words are drawn zipfian over a 200k-word vocabulary (frequent words short), years
//! uniformly in 1800–2008. Three quarters of the keys are 2-grams. Sorted neighbours share
//! their leading words, which is what makes the set trie-friendly.

use super::KeyGen;
use super::words::word;
use crate::dist::Zipf;
use crate::rng::Rng;

/// The vocabulary's popularity and salt, drawn from `rng` as [`generator`] draws them
/// (`stream:ngram` uses the same words).
pub(super) fn vocabulary(rng: &mut Rng) -> (Zipf, u64) {
    (Zipf::new(200_000, 0.9), rng.next_u64())
}

/// A generator of n-gram keys.
pub(super) fn generator(rng: &mut Rng) -> KeyGen {
    let (vocab, salt) = vocabulary(rng);
    Box::new(move |rng, out| {
        let n = if rng.below(4) < 3 { 2 } else { 3 };
        for i in 0..n {
            if i > 0 {
                out.push(b' ');
            }
            word(vocab.sample(rng.f64()), salt, out);
        }
        out.push(b'\t');
        out.extend_from_slice(rng.range_incl(1800, 2008).to_string().as_bytes());
    })
}
