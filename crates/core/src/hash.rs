//! CRC32C (Castagnoli) hashing: hardware when the CPU has it, incremental, plus a 64-bit
//! table hash and 16-bit tags.
//!
//! # What is here
//!
//! - [`crc32c`], [`crc32c_extend`], [`crc32c_u64`]: the standard CRC32C (reflected polynomial
//!   `0x82F63B78`, initial value and final XOR `0xFFFF_FFFF`), the checksum of iSCSI
//!   (RFC 3720) and of the SSE4.2 `crc32` instruction. `crc32c(b"123456789") == 0xE306_9283`.
//! - [`hash64`]: a 64-bit hash for hash tables (Mercury's buckets), built from two CRC lanes
//!   and a multiplicative finalizer.
//! - [`tag16`] / [`tag16_nonzero`]: 16-bit tags cut from a 32-bit hash (Wormhole's tag
//!   matching, Mercury's in-bucket filters).
//!
//! # Incremental hashing (Wormhole §3.1)
//!
//! Every function works on the *finalized* checksum, so a hash can be continued:
//! `crc32c_extend(crc32c(a), b) == crc32c(a ++ b)` for every split. Wormhole's binary search
//! over prefix lengths extends the hash of a matched prefix by the next few bytes instead of
//! rehashing the longer prefix from scratch, which brings the hashing cost of a lookup of an
//! `L`-byte key from `O(L log L)` down to `O(L)` bytes.
//!
//! # Two paths, one result
//!
//! On x86-64 CPUs with SSE4.2 (detected at run time with `is_x86_feature_detected!`, the
//! answer cached in an atomic), the `crc32` instruction consumes 8 bytes per instruction
//! (`_mm_crc32_u64`), and the 1–7 tail bytes in at most three more (4-, 2- and 1-byte forms,
//! `_mm_crc32_u32` / `_u16` / `_u8`). The instruction
//! has a latency of about 3 cycles but a throughput of one per cycle, so inputs of at least
//! [`STRIPE`] bytes are cut into stripes of three [`LANE`]-byte lanes hashed in parallel and
//! recombined with a table that advances a CRC state over `LANE` zero bytes (CRC is linear:
//! `update(s, x ++ y) = advance(update(s, x), |y|) ^ update(0, y)`).
//!
//! Each call on the hardware path is a call into a `#[target_feature]` function, which cannot
//! be inlined into code compiled for baseline x86-64; building with
//! `-C target-cpu=native` (or `-C target-feature=+sse4.2`) removes both the run-time check
//! and the call.
//!
//! Everywhere else (other architectures, CPUs without SSE4.2, Miri) a portable slice-by-8
//! table algorithm computes exactly the same function, 8 bytes per step with 8 table
//! look-ups. The tables are computed at compile time. Tests check both paths against each
//! other bit for bit (every length 0..300 at unaligned starts, and long inputs), against a
//! bit-at-a-time reference, and against the published RFC 3720 check values.
//!
//! Internally the functions work on the *raw* CRC register (no pre/post inversion); the
//! public functions invert on entry and exit.
//!
//! # `hash64` quality
//!
//! CRC is linear over GF(2): flipping a given input bit always flips the same output bits,
//! whatever the other bytes are. That is harmless for bucket selection of ordinary keys but
//! makes a poor 64-bit table hash on its own, and two CRC lanes that differ only in their
//! seed are not independent (their XOR depends only on the length). So [`hash64`] runs two
//! lanes over the 8-byte little-endian words of the key (the last word zero-padded): lane A
//! on the words themselves, lane B on each word multiplied by an odd constant (a bijection on
//! `u64` whose carries are non-linear over GF(2)). The two 32-bit lanes, concatenated and
//! XORed with a multiple of the length (which disambiguates the zero padding), go through a
//! bijective xor-shift-multiply finalizer, so every output bit depends on every lane bit.
//! Cost: about two CRC instructions and one multiplication per 8 bytes (the two lanes run
//! in parallel), plus the finalizer.
//!
//! Tests check bucket spread on the low, middle and high bits (chi-square on fixed key sets:
//! sequential big- and little-endian integers, strided integers, formatted strings, short
//! keys, keys behind a long shared prefix), that no two keys of those sets collide in 64
//! bits, and avalanche (each output bit flips with probability close to 1/2 when any input
//! bit flips). It is not keyed and not meant to resist keys chosen by an adversary.

use std::sync::atomic::{AtomicU8, Ordering};

/// Reflected CRC32C (Castagnoli) polynomial.
const POLY: u32 = 0x82F6_3B78;

/// Bytes per lane of the three-lane hardware path.
pub const LANE: usize = 128;

/// Inputs of at least this many bytes use three interleaved lanes on the hardware path.
pub const STRIPE: usize = 3 * LANE;

// ---------------------------------------------------------------------------------------
// Tables (computed at compile time)
// ---------------------------------------------------------------------------------------

/// `SLICE8[j][b]`: the raw CRC register after processing byte `b` followed by `j` zero bytes,
/// starting from 0. `SLICE8[0]` is the classic byte-at-a-time table.
static SLICE8: [[u32; 256]; 8] = slice8_tables();

/// `ADVANCE_LANE[k][b]`: the raw register `b << 8k` advanced over [`LANE`] zero bytes. The
/// advance is linear, so advancing any state is the XOR of its four bytes' entries.
#[cfg(all(target_arch = "x86_64", not(miri)))]
static ADVANCE_LANE: [[u32; 256]; 4] = advance_tables(LANE);

const fn slice8_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut b = 0;
    while b < 256 {
        let mut c = b as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][b] = c;
        b += 1;
    }
    let mut j = 1;
    while j < 8 {
        let mut b = 0;
        while b < 256 {
            let prev = t[j - 1][b];
            t[j][b] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            b += 1;
        }
        j += 1;
    }
    t
}

/// Advances the raw register `s` over one zero byte.
const fn advance_zero_byte(s: u32, t0: &[u32; 256]) -> u32 {
    (s >> 8) ^ t0[(s & 0xFF) as usize]
}

#[cfg(any(all(target_arch = "x86_64", not(miri)), test))]
const fn advance_tables(zero_bytes: usize) -> [[u32; 256]; 4] {
    let t0 = slice8_tables()[0];
    // Images of the 32 basis vectors, then every table entry as the XOR of the images of its
    // set bits (the advance is linear over GF(2)).
    let mut basis = [0u32; 32];
    let mut i = 0;
    while i < 32 {
        let mut s = 1u32 << i;
        let mut n = 0;
        while n < zero_bytes {
            s = advance_zero_byte(s, &t0);
            n += 1;
        }
        basis[i] = s;
        i += 1;
    }
    let mut t = [[0u32; 256]; 4];
    let mut k = 0;
    while k < 4 {
        let mut b = 0;
        while b < 256 {
            let mut v = 0u32;
            let mut bit = 0;
            while bit < 8 {
                if b & (1 << bit) != 0 {
                    v ^= basis[8 * k + bit];
                }
                bit += 1;
            }
            t[k][b] = v;
            b += 1;
        }
        k += 1;
    }
    t
}

/// Advances the raw register `s` over `n` zero bytes with a table from [`advance_tables`].
#[cfg(any(all(target_arch = "x86_64", not(miri)), test))]
#[inline(always)]
fn advance(s: u32, t: &[[u32; 256]; 4]) -> u32 {
    t[0][(s & 0xFF) as usize]
        ^ t[1][((s >> 8) & 0xFF) as usize]
        ^ t[2][((s >> 16) & 0xFF) as usize]
        ^ t[3][(s >> 24) as usize]
}

// ---------------------------------------------------------------------------------------
// Portable path
// ---------------------------------------------------------------------------------------

/// Reads 8 bytes (exactly) as a little-endian `u64`.
#[inline(always)]
fn le_u64(chunk: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(chunk);
    u64::from_le_bytes(w)
}

/// Reads up to 8 bytes as a little-endian `u64`, zero-padded at the top.
#[inline(always)]
fn le_u64_padded(tail: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..tail.len()].copy_from_slice(tail);
    u64::from_le_bytes(w)
}

/// Raw register update by the 8 little-endian bytes of `w` (slice-by-8).
#[inline(always)]
fn portable_u64(s: u32, w: u64) -> u32 {
    let x = w ^ u64::from(s);
    SLICE8[7][(x & 0xFF) as usize]
        ^ SLICE8[6][((x >> 8) & 0xFF) as usize]
        ^ SLICE8[5][((x >> 16) & 0xFF) as usize]
        ^ SLICE8[4][((x >> 24) & 0xFF) as usize]
        ^ SLICE8[3][((x >> 32) & 0xFF) as usize]
        ^ SLICE8[2][((x >> 40) & 0xFF) as usize]
        ^ SLICE8[1][((x >> 48) & 0xFF) as usize]
        ^ SLICE8[0][(x >> 56) as usize]
}

/// Raw register update by one byte.
#[inline(always)]
fn portable_u8(s: u32, b: u8) -> u32 {
    (s >> 8) ^ SLICE8[0][((s ^ u32::from(b)) & 0xFF) as usize]
}

/// Raw register update by `data`, portable slice-by-8.
fn portable_update(mut s: u32, data: &[u8]) -> u32 {
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        s = portable_u64(s, le_u64(w));
    }
    for &b in words.remainder() {
        s = portable_u8(s, b);
    }
    s
}

// ---------------------------------------------------------------------------------------
// Hardware path (x86-64 SSE4.2)
// ---------------------------------------------------------------------------------------

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod hw {
    use std::arch::x86_64::{_mm_crc32_u8, _mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64};

    use super::{ADVANCE_LANE, LANE, STRIPE, advance, le_u64};

    /// Raw register update by the 8 little-endian bytes of `w`.
    #[target_feature(enable = "sse4.2")]
    #[inline]
    pub(super) fn u64(s: u32, w: u64) -> u32 {
        // The instruction zero-extends its 32-bit result into the 64-bit register.
        _mm_crc32_u64(u64::from(s), w) as u32
    }

    /// Raw register update by `data`: three interleaved lanes per [`STRIPE`] (long inputs
    /// only), then 8 bytes per instruction, then a 4-, 2- and 1-byte step for the tail.
    #[target_feature(enable = "sse4.2")]
    pub(super) fn update(mut s: u32, mut data: &[u8]) -> u32 {
        if data.len() >= STRIPE {
            (s, data) = stripes(s, data);
        }
        let mut s64 = u64::from(s);
        while let Some((w, rest)) = data.split_first_chunk::<8>() {
            s64 = _mm_crc32_u64(s64, u64::from_le_bytes(*w));
            data = rest;
        }
        let mut s = s64 as u32;
        if let Some((w, rest)) = data.split_first_chunk::<4>() {
            s = _mm_crc32_u32(s, u32::from_le_bytes(*w));
            data = rest;
        }
        if let Some((w, rest)) = data.split_first_chunk::<2>() {
            s = _mm_crc32_u16(s, u16::from_le_bytes(*w));
            data = rest;
        }
        if let Some(&b) = data.first() {
            s = _mm_crc32_u8(s, b);
        }
        s
    }

    /// Hashes the whole [`STRIPE`]s of `data` in three interleaved lanes; returns the raw
    /// register and the remaining (shorter than a stripe) bytes.
    #[target_feature(enable = "sse4.2")]
    fn stripes(mut s: u32, data: &[u8]) -> (u32, &[u8]) {
        let mut stripes = data.chunks_exact(STRIPE);
        for stripe in &mut stripes {
            let (a, rest) = stripe.split_at(LANE);
            let (b, c) = rest.split_at(LANE);
            let (mut sa, mut sb, mut sc) = (u64::from(s), 0u64, 0u64);
            for ((wa, wb), wc) in a
                .chunks_exact(8)
                .zip(b.chunks_exact(8))
                .zip(c.chunks_exact(8))
            {
                sa = _mm_crc32_u64(sa, le_u64(wa));
                sb = _mm_crc32_u64(sb, le_u64(wb));
                sc = _mm_crc32_u64(sc, le_u64(wc));
            }
            // update(s, A ++ B ++ C) = adv(adv(sa) ^ sb) ^ sc, adv = advance over LANE bytes.
            let ab = advance(sa as u32, &ADVANCE_LANE) ^ sb as u32;
            s = advance(ab, &ADVANCE_LANE) ^ sc as u32;
        }
        (s, stripes.remainder())
    }

    /// [`super::hash64_with`] with the instruction as the word step.
    #[target_feature(enable = "sse4.2")]
    pub(super) fn hash64(data: &[u8]) -> u64 {
        super::hash64_with(data, |s, w| _mm_crc32_u64(u64::from(s), w) as u32)
    }
}

/// Cached answer of the CPU feature detection: [`HW_UNKNOWN`], [`HW_NO`] or [`HW_YES`].
static HW_STATE: AtomicU8 = AtomicU8::new(HW_UNKNOWN);
const HW_UNKNOWN: u8 = 0;
const HW_NO: u8 = 1;
const HW_YES: u8 = 2;

/// Whether the hardware CRC32C path is used: an x86-64 CPU with SSE4.2 (always `false` on
/// other architectures and under Miri). Detected once, then cached.
#[inline]
pub fn crc32c_hardware_available() -> bool {
    // Built for SSE4.2 CPUs (`-C target-cpu=native` or `-C target-feature=+sse4.2`): no check,
    // and the `target_feature` functions inline into their callers.
    if cfg!(all(
        target_arch = "x86_64",
        target_feature = "sse4.2",
        not(miri)
    )) {
        return true;
    }
    // A Relaxed load suffices: the flag publishes no other memory, and racing detections
    // store the same answer.
    match HW_STATE.load(Ordering::Relaxed) {
        HW_YES => true,
        HW_NO => false,
        _ => detect_hardware(),
    }
}

#[cold]
fn detect_hardware() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    let yes = std::arch::is_x86_feature_detected!("sse4.2");
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let yes = false;
    HW_STATE.store(if yes { HW_YES } else { HW_NO }, Ordering::Relaxed);
    yes
}

// ---------------------------------------------------------------------------------------
// Public CRC32C
// ---------------------------------------------------------------------------------------

/// Raw register update by `data` on the fastest available path.
#[inline]
fn update(s: u32, data: &[u8]) -> u32 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if crc32c_hardware_available() {
        // SAFETY: the CPU supports SSE4.2 (runtime detection above), the only requirement of
        // the `target_feature` function.
        return unsafe { hw::update(s, data) };
    }
    portable_update(s, data)
}

/// CRC32C of `data` (standard: initial value and final XOR `0xFFFF_FFFF`).
///
/// ```
/// assert_eq!(orrery_core::hash::crc32c(b"123456789"), 0xE306_9283);
/// ```
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_extend(0, data)
}

/// Continues the CRC32C `crc` (of some bytes `a`) over `data`:
/// `crc32c_extend(crc32c(a), b) == crc32c(a ++ b)`. `crc32c_extend(0, b) == crc32c(b)`.
///
/// ```
/// use orrery_core::hash::{crc32c, crc32c_extend};
/// assert_eq!(crc32c_extend(crc32c(b"1234"), b"56789"), crc32c(b"123456789"));
/// ```
#[inline]
pub fn crc32c_extend(crc: u32, data: &[u8]) -> u32 {
    !update(!crc, data)
}

/// Continues the CRC32C `crc` over the 8 little-endian bytes of `x`: the same as
/// `crc32c_extend(crc, &x.to_le_bytes())`, one instruction on the hardware path.
#[inline]
pub fn crc32c_u64(crc: u32, x: u64) -> u32 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if crc32c_hardware_available() {
        // SAFETY: the CPU supports SSE4.2 (runtime detection above).
        return !unsafe { hw::u64(!crc, x) };
    }
    !portable_u64(!crc, x)
}

/// [`crc32c_extend`] on the portable table path, whatever the CPU (for tests and benchmarks).
pub fn crc32c_extend_portable(crc: u32, data: &[u8]) -> u32 {
    !portable_update(!crc, data)
}

/// [`crc32c_extend`] on the hardware path, or `None` when the CPU lacks SSE4.2 (or under
/// Miri, or off x86-64). For tests and benchmarks.
pub fn crc32c_extend_hardware(crc: u32, data: &[u8]) -> Option<u32> {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if crc32c_hardware_available() {
        // SAFETY: the CPU supports SSE4.2 (runtime detection above).
        return Some(!unsafe { hw::update(!crc, data) });
    }
    let _ = (crc, data);
    None
}

// ---------------------------------------------------------------------------------------
// hash64 and tags
// ---------------------------------------------------------------------------------------

/// Initial raw register of lane A of [`hash64`].
const SEED_A: u32 = 0x9E37_79B9;
/// Initial raw register of lane B of [`hash64`].
const SEED_B: u32 = 0x7F4A_7C15;
/// Odd multiplier applied to each word before lane B (a bijection on `u64`).
const LANE_B_MUL: u64 = 0x9E37_79B9_7F4A_7C15;
/// Odd multiplier of the length folded into the lanes.
const LEN_MUL: u64 = 0xC2B2_AE3D_27D4_EB4F;
/// Finalizer multipliers (odd).
const FIN_MUL_1: u64 = 0xBF58_476D_1CE4_E5B9;
const FIN_MUL_2: u64 = 0x94D0_49BB_1331_11EB;

/// The two-lane structure of [`hash64`], generic over the raw 8-byte CRC step so that both
/// paths share it.
#[inline(always)]
fn hash64_with(data: &[u8], step: impl Fn(u32, u64) -> u32) -> u64 {
    let (mut a, mut b) = (SEED_A, SEED_B);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let w = le_u64(w);
        a = step(a, w);
        b = step(b, w.wrapping_mul(LANE_B_MUL));
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let w = le_u64_padded(tail);
        a = step(a, w);
        b = step(b, w.wrapping_mul(LANE_B_MUL));
    }
    let x = ((u64::from(a) << 32) | u64::from(b)) ^ (data.len() as u64).wrapping_mul(LEN_MUL);
    finalize64(x)
}

/// A bijective xor-shift-multiply finalizer: every output bit depends on every input bit.
#[inline(always)]
fn finalize64(mut x: u64) -> u64 {
    x ^= x >> 31;
    x = x.wrapping_mul(FIN_MUL_1);
    x ^= x >> 29;
    x = x.wrapping_mul(FIN_MUL_2);
    x ^ (x >> 32)
}

/// [`hash64`] on the portable path.
fn hash64_portable(data: &[u8]) -> u64 {
    hash64_with(data, portable_u64)
}

/// A 64-bit hash of `data` for hash tables: two CRC32C lanes (one over the words, one over
/// multiplied words) and a multiplicative finalizer, so that the low, middle and high bits are
/// all usable as bucket indexes (see the [module docs](self#hash64-quality)). The same value on
/// every CPU and path. Not keyed: not for keys chosen by an adversary.
#[inline]
pub fn hash64(data: &[u8]) -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if crc32c_hardware_available() {
        // SAFETY: the CPU supports SSE4.2 (runtime detection above).
        return unsafe { hw::hash64(data) };
    }
    hash64_portable(data)
}

/// A 16-bit tag from a 32-bit hash: its upper 16 bits, so that it is independent of the low
/// bits that index a table of up to 2^16 buckets (pair it with `hash & mask`).
#[inline]
pub fn tag16(hash: u32) -> u16 {
    (hash >> 16) as u16
}

/// [`tag16`], but never 0 (a tag of 0 is mapped to 1), so that 0 can mark an empty slot.
#[inline]
pub fn tag16_nonzero(hash: u32) -> u16 {
    let t = tag16(hash);
    t | u16::from(t == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;
    use rand::rngs::SmallRng;

    /// Bit-at-a-time CRC32C: the definition, independent of every table.
    fn crc32c_bitwise(data: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in data {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            }
        }
        !c
    }

    /// The fixed-seed generator of the tests' inputs (the conformance suite's).
    fn test_rng(seed: u64) -> SmallRng {
        crate::testing::rng::rng(seed)
    }

    /// `n` random bytes.
    fn bytes(rng: &mut SmallRng, n: usize) -> Vec<u8> {
        crate::testing::rng::random_bytes(rng, n)
    }

    /// RFC 3720 (iSCSI) appendix B.4 check values, plus the catalogue check value.
    fn check_vectors() -> Vec<(Vec<u8>, u32)> {
        vec![
            (vec![0u8; 32], 0x8A91_36AA),
            (vec![0xFFu8; 32], 0x62A8_AB43),
            ((0u8..32).collect(), 0x46DD_794E),
            ((0u8..32).rev().collect(), 0x113F_DB5C),
            (b"123456789".to_vec(), 0xE306_9283),
            (Vec::new(), 0),
        ]
    }

    #[test]
    fn hash_crc32c_check_values() {
        for (data, want) in check_vectors() {
            assert_eq!(crc32c(&data), want, "crc32c({data:?})");
            assert_eq!(crc32c_extend_portable(0, &data), want, "portable({data:?})");
            assert_eq!(crc32c_bitwise(&data), want, "bitwise({data:?})");
            if let Some(hw) = crc32c_extend_hardware(0, &data) {
                assert_eq!(hw, want, "hardware({data:?})");
            }
        }
    }

    /// The portable path against the bit-at-a-time definition (runs under Miri: this is the
    /// path Miri executes).
    #[test]
    fn hash_portable_matches_bitwise() {
        let mut rng = test_rng(1);
        let max = if cfg!(miri) { 40 } else { 300 };
        let buf = bytes(&mut rng, max + 8);
        for len in 0..max {
            for start in [0usize, 1, 3, 7] {
                let data = &buf[start..start + len];
                assert_eq!(
                    crc32c_extend_portable(0, data),
                    crc32c_bitwise(data),
                    "len {len}"
                );
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "the hardware path is compiled out under Miri")]
    fn hash_hardware_matches_portable() {
        if !crc32c_hardware_available() {
            eprintln!("no SSE4.2 on this CPU: hardware path not tested");
            return;
        }
        let mut rng = test_rng(2);
        let buf = bytes(&mut rng, 4096 + 16);
        for len in 0..300 {
            for start in 0..8 {
                let data = &buf[start..start + len];
                let seed = rng.next_u64() as u32;
                assert_eq!(
                    crc32c_extend_hardware(seed, data),
                    Some(crc32c_extend_portable(seed, data)),
                    "len {len} start {start}"
                );
            }
        }
        // Long inputs cross the three-lane stripes (STRIPE = 384 bytes) at every remainder.
        for _ in 0..2000 {
            let len = (rng.next_u64() % 4096) as usize;
            let start = (rng.next_u64() % 16) as usize;
            let data = &buf[start..start + len];
            assert_eq!(crc32c_extend_hardware(0, data), Some(crc32c_bitwise(data)));
        }
        for len in [
            STRIPE - 1,
            STRIPE,
            STRIPE + 1,
            2 * STRIPE,
            2 * STRIPE + 7,
            4096,
        ] {
            let data = &buf[..len];
            assert_eq!(crc32c_extend_hardware(0, data), Some(crc32c_bitwise(data)));
        }
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        for x in [0u64, 1, u64::MAX, 0x0123_4567_89AB_CDEF] {
            let seed = rng.next_u64() as u32;
            // SAFETY: the CPU supports SSE4.2 (checked at the top of the test).
            let hw = !unsafe { hw::u64(!seed, x) };
            assert_eq!(hw, !portable_u64(!seed, x));
        }
    }

    #[test]
    fn hash_extend_all_splits() {
        let strings: [&[u8]; 4] = [
            b"123456789",
            b"the quick brown fox jumps over the lazy dog, twice: the quick brown fox!",
            &[0u8; 40],
            &[0xFFu8; 23],
        ];
        let mut rng = test_rng(3);
        let random = bytes(&mut rng, if cfg!(miri) { 50 } else { 900 });
        for s in strings.iter().copied().chain([random.as_slice()]) {
            let whole = crc32c(s);
            assert_eq!(whole, crc32c_bitwise(s));
            for i in 0..=s.len() {
                let (a, b) = s.split_at(i);
                assert_eq!(crc32c_extend(crc32c(a), b), whole, "split at {i}");
                assert_eq!(
                    crc32c_extend_portable(crc32c_extend_portable(0, a), b),
                    whole
                );
            }
            // Three-way splits, as Wormhole extends a prefix several times.
            for i in (0..=s.len()).step_by(7) {
                for j in (i..=s.len()).step_by(5) {
                    let c = crc32c_extend(crc32c_extend(crc32c(&s[..i]), &s[i..j]), &s[j..]);
                    assert_eq!(c, whole);
                }
            }
        }
    }

    #[test]
    fn hash_crc32c_u64_is_extend_by_le_bytes() {
        let mut rng = test_rng(4);
        for _ in 0..if cfg!(miri) { 50 } else { 10_000 } {
            let (crc, x) = (rng.next_u64() as u32, rng.next_u64());
            let want = crc32c_extend(crc, &x.to_le_bytes());
            assert_eq!(crc32c_u64(crc, x), want);
            assert_eq!(!portable_u64(!crc, x), want);
        }
        assert_eq!(crc32c_u64(0, 0), crc32c(&[0u8; 8]));
    }

    #[test]
    fn hash_advance_tables_match_zero_bytes() {
        // The lane-advance table equals extending the raw register by LANE zero bytes.
        let t = advance_tables(LANE);
        let mut rng = test_rng(5);
        for _ in 0..if cfg!(miri) { 4 } else { 1000 } {
            let s = rng.next_u64() as u32;
            assert_eq!(advance(s, &t), portable_update(s, &[0u8; LANE]));
        }
        let t3 = advance_tables(3);
        assert_eq!(
            advance(0xDEAD_BEEF, &t3),
            portable_update(0xDEAD_BEEF, &[0u8; 3])
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "the hardware path is compiled out under Miri")]
    fn hash_hash64_paths_agree() {
        let mut rng = test_rng(6);
        for len in 0..200 {
            let data = bytes(&mut rng, len);
            assert_eq!(hash64(&data), hash64_portable(&data), "len {len}");
        }
    }

    #[test]
    fn hash_hash64_distinguishes_padding_and_length() {
        // Zero padding of the tail must not make "", "\0", "\0\0", ... collide.
        let mut seen = std::collections::HashSet::new();
        for len in 0..=64 {
            assert!(
                seen.insert(hash64(&vec![0u8; len])),
                "zero key of length {len}"
            );
        }
        assert_ne!(hash64(b"ab"), hash64(b"ab\0"));
        assert_ne!(hash64(b"abcdefgh"), hash64(b"abcdefgh\0"));
    }

    /// Chi-square statistic of `hashes` over `2^bits` buckets taken at bit offset `shift`.
    fn chi_square(hashes: &[u64], bits: u32, shift: u32) -> f64 {
        let buckets = 1usize << bits;
        let mut counts = vec![0u32; buckets];
        for &h in hashes {
            counts[((h >> shift) as usize) & (buckets - 1)] += 1;
        }
        let expect = hashes.len() as f64 / buckets as f64;
        counts
            .iter()
            .map(|&c| (f64::from(c) - expect).powi(2) / expect)
            .sum()
    }

    /// Fixed key sets with structure a weak hash would show in its buckets.
    fn structured_key_sets(n: u64) -> Vec<(&'static str, Vec<Vec<u8>>)> {
        vec![
            (
                "u64 big-endian 0..n",
                (0..n).map(|i| i.to_be_bytes().to_vec()).collect(),
            ),
            (
                "u64 little-endian 0..n",
                (0..n).map(|i| i.to_le_bytes().to_vec()).collect(),
            ),
            (
                "strided u64 (i << 20)",
                (0..n).map(|i| (i << 20).to_be_bytes().to_vec()).collect(),
            ),
            (
                "user%010d",
                (0..n)
                    .map(|i| format!("user{i:010}").into_bytes())
                    .collect(),
            ),
            (
                "short 1-3 bytes",
                (0..n)
                    .map(|i| i.to_le_bytes()[..1 + (i % 3) as usize].to_vec())
                    .collect(),
            ),
            (
                "long shared prefix",
                (0..n)
                    .map(|i| {
                        let mut k = vec![b'p'; 40];
                        k.extend_from_slice(&i.to_be_bytes());
                        k
                    })
                    .collect(),
            ),
        ]
    }

    #[test]
    fn hash_hash64_bucket_spread() {
        // Deterministic inputs, so the statistic is a fixed number; the bound is the chi-square
        // mean plus 6 standard deviations (df = 2^bits - 1), far from a flaky edge for a
        // good hash and far below what a hash that ignores some key bits produces.
        let (n, bits) = if cfg!(miri) {
            (512u64, 4u32)
        } else {
            (1u64 << 16, 10u32)
        };
        let df = f64::from((1u32 << bits) - 1);
        let bound = df + 6.0 * (2.0 * df).sqrt();
        for (name, keys) in structured_key_sets(n) {
            let keys = if name == "short 1-3 bytes" {
                // Only 256 + 65536 + ... distinct short keys; dedupe.
                let mut k = keys;
                k.sort();
                k.dedup();
                k
            } else {
                keys
            };
            let hashes: Vec<u64> = keys.iter().map(|k| hash64(k)).collect();
            let mut distinct = hashes.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), hashes.len(), "{name}: 64-bit collision");
            for shift in [0, 27, 64 - bits] {
                let chi = chi_square(&hashes, bits, shift);
                assert!(
                    chi < bound,
                    "{name}: chi-square {chi:.0} >= {bound:.0} at bit {shift}"
                );
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistical test, too slow under Miri")]
    fn hash_hash64_avalanche() {
        // Flipping any one input bit flips each output bit with probability ~1/2.
        let mut rng = test_rng(7);
        let samples = 300;
        for len in [3usize, 8, 16, 37] {
            let mut flips = vec![vec![0u32; 64]; len * 8];
            for _ in 0..samples {
                let mut key = bytes(&mut rng, len);
                let h = hash64(&key);
                for bit in 0..len * 8 {
                    key[bit / 8] ^= 1 << (bit % 8);
                    let d = h ^ hash64(&key);
                    key[bit / 8] ^= 1 << (bit % 8);
                    for (o, count) in flips[bit].iter_mut().enumerate() {
                        *count += ((d >> o) & 1) as u32;
                    }
                }
            }
            // Binomial(300, 1/2): sd ~ 8.7; the bounds are ~8.6 sd away.
            for (bit, row) in flips.iter().enumerate() {
                for (o, &c) in row.iter().enumerate() {
                    assert!(
                        (75..=225).contains(&c),
                        "len {len} in-bit {bit} out-bit {o}: {c}"
                    );
                }
            }
        }
    }

    #[test]
    fn hash_tags() {
        assert_eq!(tag16(0xABCD_1234), 0xABCD);
        assert_eq!(tag16(0x0000_FFFF), 0);
        assert_eq!(tag16_nonzero(0x0000_FFFF), 1);
        assert_eq!(tag16_nonzero(0x0001_0000), 1);
        assert_eq!(tag16_nonzero(0xFFFF_0000), 0xFFFF);
        let mut rng = test_rng(8);
        for _ in 0..1000 {
            let h = rng.next_u64() as u32;
            let t = tag16_nonzero(h);
            assert_ne!(t, 0);
            if tag16(h) != 0 {
                assert_eq!(t, tag16(h));
            }
        }
        // Tags of CRC32C hashes are spread: sequential keys fill the tag space evenly.
        let n = if cfg!(miri) { 256u64 } else { 1 << 16 };
        let hashes: Vec<u64> = (0..n)
            .map(|i| u64::from(tag16(crc32c(&i.to_be_bytes()))))
            .collect();
        let bits = if cfg!(miri) { 3 } else { 8 };
        let df = f64::from((1u32 << bits) - 1);
        let chi = chi_square(&hashes, bits, 16 - bits);
        assert!(chi < df + 6.0 * (2.0 * df).sqrt(), "tag chi-square {chi}");
    }
}
