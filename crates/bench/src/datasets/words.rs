//! A deterministic vocabulary of pronounceable pseudo-words, shared by the text datasets.
//!
//! Word `r` (its popularity rank) is a pure function of `r`: frequent words are short, rare
//! ones long, as in natural language, so zipfian draws over ranks give realistic lengths and
//! realistic prefix sharing (many keys start with the same frequent words).

use crate::rng::mix64;

const CONSONANTS: &[u8] = b"bcdfghklmnprstvwyz";
const VOWELS: &[u8] = b"aeiou";

/// Appends word number `rank` of the vocabulary named by `salt`.
pub(super) fn word(rank: u64, salt: u64, out: &mut Vec<u8>) {
    let mut h = mix64(rank ^ salt.rotate_left(17));
    let bits = 64 - (rank + 1).leading_zeros() as usize;
    let len = 2 + bits / 2 + (h % 3) as usize;
    for i in 0..len {
        h = mix64(h);
        let set = if (i + (rank as usize & 1)).is_multiple_of(2) {
            CONSONANTS
        } else {
            VOWELS
        };
        out.push(set[(h % set.len() as u64) as usize]);
    }
}

/// Appends `digits` base-36 characters (0-9, A-Z) derived from `h`.
pub(super) fn base36(mut h: u64, digits: usize, out: &mut Vec<u8>) {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    for _ in 0..digits {
        if h < 36 {
            h = mix64(h ^ 0xA5A5);
        }
        out.push(ALPHABET[(h % 36) as usize]);
        h /= 36;
    }
}
