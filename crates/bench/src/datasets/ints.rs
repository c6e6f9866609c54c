//! Integer keys as 8-byte big-endian strings (Hyperion §4.4): `seq-int` and `rand-int`.
//!
//! Big-endian encoding makes byte order numeric order, so a trie sees sequential integers
//! fill its lower levels densely (Hyperion's best case) and random ones spread out.

use super::KeyGen;

/// 0, 1, 2, … in that order.
pub(super) fn sequential() -> KeyGen {
    let mut next = 0u64;
    Box::new(move |_rng, out| {
        out.extend_from_slice(&orrery::api::u64_key(next));
        next += 1;
    })
}

/// Uniformly random 64-bit integers.
pub(super) fn random() -> KeyGen {
    Box::new(|rng, out| out.extend_from_slice(&orrery::api::u64_key(rng.next_u64())))
}
