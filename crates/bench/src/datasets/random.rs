//! Random fixed-length keys: `rand-N`, Wormhole's `k3`…`k10`, `kshort-L` / `klong-L`.
//!
//! Bytes are uniform over 0..=255 (so keys contain `0x00` and `0xFF`). `kshort-L` keys are
//! deduplicated on their last 4 bytes, so that `klong-L` (the same keys with the first L−4
//! bytes replaced by `'0'`, Wormhole §4.2) holds exactly the same number of distinct keys,
//! one for one.

use super::KeyGen;

/// A generator of random keys of `len` bytes.
pub(super) fn fixed(len: usize) -> KeyGen {
    Box::new(move |rng, out| {
        let start = out.len();
        out.resize(start + len, 0);
        rng.fill(&mut out[start..]);
    })
}

/// Wormhole's K_short: random `len`-byte keys (deduplicated on the last 4 bytes).
pub(super) fn kshort(len: usize) -> KeyGen {
    fixed(len)
}

/// Wormhole's K_long: K_short's keys with the first `len - 4` bytes set to `'0'`.
pub(super) fn klong(len: usize) -> KeyGen {
    let mut inner = fixed(len);
    Box::new(move |rng, out| {
        let start = out.len();
        inner(rng, out);
        out[start..start + len - 4].fill(b'0');
    })
}
