//! Keys under which the elements of large collections live (composite keys: the
//! collection's 8-byte id first). Hashes, sets and sorted sets share the ordered element
//! index, where one collection is one key range; lists share the positions table (a hash
//! table), where a list is the keys of its packed nodes (`crate::coll`'s list nodes).
//!
//! ```text
//! hash field   : id ++ h ++ field              -> value
//! set member   : id ++ h ++ member             -> (empty)
//! zset member  : id ++ 0x00 ++ h ++ member     -> score (the f64's 8 bytes)
//! zset order   : id ++ 0x01 ++ score ++ member -> score (the f64's 8 bytes)
//! list node    : id ++ node number             -> run of elements (in the positions table)
//! ```
//!
//! `id` is big-endian; `h` is the CRC32C of the member, big-endian. Hashes and sets are
//! unordered in Redis, so their members are kept in hash order: a random point of the hash
//! space then lands on a random member (`SPOP`, `SRANDMEMBER`, `HRANDFIELD`, and
//! `ZRANDMEMBER` through the zset's member keys), where member order would land on the
//! first member after a common prefix almost every time. A sorted set's order keys sort
//! by score, then member: its ranges and ranks are scans. A list node's number is a `u64`
//! (big-endian), unique within its list; the list's order is its node table's.

use std::ops::Bound;

use orrery::api::MAX_KEY_LEN;

/// Bytes of a collection id.
pub(crate) const ID_LEN: usize = 8;

/// Longest member or field of any collection: the index's key limit less the longest
/// prefix (a zset's order key: id, subspace byte, score).
pub(crate) const MAX_ELEMENT: usize = MAX_KEY_LEN - ID_LEN - 1 - 8;

/// The prefix every element key of collection `id` starts with.
pub(crate) fn id_prefix(id: u64) -> [u8; ID_LEN] {
    id.to_be_bytes()
}

/// The key range of collection `id`: `[id, id + 1)`.
pub(crate) fn id_bounds(id: u64) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let hi = match id.checked_add(1) {
        Some(n) => Bound::Excluded(n.to_be_bytes().to_vec()),
        None => Bound::Unbounded,
    };
    (Bound::Included(id.to_be_bytes().to_vec()), hi)
}

fn member_hash(member: &[u8]) -> [u8; 4] {
    orrery::hash::crc32c(member).to_be_bytes()
}

/// The key of a hash's field or a set's member: `id ++ h ++ member` (its member starts at
/// byte 12).
pub(crate) fn hashed_key(id: u64, member: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(12 + member.len());
    k.extend_from_slice(&id.to_be_bytes());
    k.extend_from_slice(&member_hash(member));
    k.extend_from_slice(member);
    k
}

/// The prefix of a sorted set's member keys.
pub(crate) fn zset_member_prefix(id: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[..8].copy_from_slice(&id.to_be_bytes());
    k
}

/// A sorted set's member key: `id ++ 0x00 ++ h ++ member` (the member starts at byte 13).
pub(crate) fn zset_member_key(id: u64, member: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(13 + member.len());
    k.extend_from_slice(&zset_member_prefix(id));
    k.extend_from_slice(&member_hash(member));
    k.extend_from_slice(member);
    k
}

/// The prefix of a sorted set's order keys.
pub(crate) fn zset_score_prefix(id: u64) -> [u8; 9] {
    let mut k = [1u8; 9];
    k[..8].copy_from_slice(&id.to_be_bytes());
    k
}

/// A sorted set's order key: `id ++ 0x01 ++ score ++ member` (the score at bytes 9..17,
/// the member from byte 17).
pub(crate) fn zset_score_key(id: u64, score: f64, member: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(17 + member.len());
    k.extend_from_slice(&zset_score_prefix(id));
    k.extend_from_slice(&score_key(score));
    k.extend_from_slice(member);
    k
}

/// A list node's key: `id ++ node number`.
pub(crate) fn list_key(id: u64, no: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&id.to_be_bytes());
    k[8..].copy_from_slice(&no.to_be_bytes());
    k
}

/// The node number in a list node's key.
#[cfg(test)]
fn list_pos(key: &[u8]) -> u64 {
    key.get(8..16)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_be_bytes)
}

/// A score's exact bits (big-endian), as sorted-set values hold them: `-0` stays `-0`, as
/// Redis keeps it, while keys use [`score_key`], under which `-0` and `0` are equal.
pub(crate) fn score_bits(score: f64) -> [u8; 8] {
    score.to_bits().to_be_bytes()
}

/// Decodes [`score_bits`] (0 for fewer than 8 bytes, which only damage could give).
pub(crate) fn bits_score(b: &[u8]) -> f64 {
    b.get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0.0, |b| f64::from_bits(u64::from_be_bytes(b)))
}

/// Encodes a score so that byte order is numeric order (`-0.0` is `0.0`).
pub(crate) fn score_key(score: f64) -> [u8; 8] {
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    ordered.to_be_bytes()
}

/// Decodes [`score_key`] (0 for fewer than 8 bytes, which only damage could give).
pub(crate) fn key_score(key: &[u8]) -> f64 {
    let ordered = key
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_be_bytes);
    let bits = if ordered >> 63 == 1 {
        ordered & !(1 << 63)
    } else {
        !ordered
    };
    f64::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_keys_sort_numerically() {
        let xs = [
            f64::NEG_INFINITY,
            -1e300,
            -1.5,
            -0.0,
            0.0,
            1e-300,
            1.5,
            2.0,
            f64::INFINITY,
        ];
        for w in xs.windows(2) {
            assert!(score_key(w[0]) <= score_key(w[1]), "{} {}", w[0], w[1]);
        }
        for x in xs {
            assert_eq!(key_score(&score_key(x)), if x == 0.0 { 0.0 } else { x });
        }
    }

    #[test]
    fn keys_stay_inside_their_collection() {
        let (lo, hi) = id_bounds(7);
        let inside = |k: &[u8]| {
            matches!(&lo, Bound::Included(l) if k >= &l[..])
                && matches!(&hi, Bound::Excluded(h) if k < &h[..])
        };
        assert!(inside(&hashed_key(7, &[0xFF; 40])));
        assert!(inside(&zset_score_key(7, f64::INFINITY, b"\xff")));
        assert!(inside(&list_key(7, u64::MAX)));
        assert!(!inside(&hashed_key(8, b"")));
        assert!(zset_member_key(7, b"zz") < zset_score_key(7, f64::NEG_INFINITY, b""));
        assert_eq!(list_pos(&list_key(7, 1 << 40)), 1 << 40);
        assert_eq!(id_bounds(u64::MAX).1, Bound::Unbounded);
    }
}
