//! The lazy incremental sort of the order array (§3.2, Algorithm 3 `incSort`).

#[allow(unused_imports)]
use super::*;

/// The first 8 bytes of `k` as a big-endian integer, zero-padded. For keys `a`, `b`:
/// `prefix8(a) < prefix8(b)` implies `a < b` (at the first differing byte of the padded
/// prefixes either both keys have a byte, or the shorter key ended there and is a prefix of
/// the other up to that byte, which is then non-zero), so the prefixes order keys except
/// on ties.
#[inline]
pub(super) fn prefix8(k: &[u8]) -> u64 {
    if let Some(b) = k.first_chunk::<8>() {
        // One load instead of a `memcpy` call (most keys of the sorted sets are this long).
        return u64::from_be_bytes(*b);
    }
    let mut b = [0u8; 8];
    b[..k.len()].copy_from_slice(k);
    u64::from_be_bytes(b)
}

/// Sorts the order array incrementally: sort the unsorted tail, merge it with the sorted
/// run (Algorithm 3 `incSort`), publish `nr_sorted = nr`.
///
/// # Safety
/// The caller has exclusive access to the order array (exclusive lock, or the sort bit of a
/// leaf with `nr_sorted < nr` under the shared lock).
pub(super) unsafe fn sort_order(p: LeafPtr) {
    // SAFETY: live (caller holds a lock).
    let h = unsafe { p.hdr() };
    let n = h.nr.load(Ordering::Relaxed) as usize;
    let s = h.nr_sorted.load(Ordering::Relaxed) as usize;
    let cap = h.cap();
    let tags_p = p.base().wrapping_add(size_of::<Leaf>()).cast::<u64>();
    // SAFETY: tag array inside the block; not written concurrently (caller's contract).
    let tags = unsafe { std::slice::from_raw_parts(tags_p, cap) };
    let order_p = p.base().wrapping_add(size_of::<Leaf>() + cap * 8);
    // SAFETY: exclusive access to the order array per the contract.
    let order = unsafe { std::slice::from_raw_parts_mut(order_p, n) };
    // The tag array is read below in key order (random lines): fetch it whole first.
    for off in (0..cap * 8).step_by(64) {
        orrery_core::prefetch(tags_p.cast::<u8>().wrapping_add(off));
    }
    // The comparisons below chase one pointer per block key; issue all the pair fetches up
    // front so that they overlap instead of missing one after the other.
    for &i in order.iter() {
        let e = tags[i as usize];
        if !is_inline(e) {
            orrery_core::prefetch(ekv(e).as_ptr());
        }
    }
    // The keys of inline pairs are in the cells, read below in key order (random lines of
    // a leaf that is usually cold: a split reads each leaf once per ~64 inserts): fetch the
    // whole inline area at once instead of one miss after the other.
    if h.kind.load(Ordering::Relaxed) & KIND_INLINE_AREA != 0 {
        let cells = p.base().wrapping_add(inline_off(cap));
        for off in (0..cap * INLINE_MAX).step_by(64) {
            orrery_core::prefetch(cells.wrapping_add(off).cast_const());
        }
    }
    let key = |i: u8| {
        // SAFETY: order entries name real slots, whose pairs are live under the lock.
        unsafe { key_of(p, tags[i as usize], i as usize) }
    };
    // Every key of the leaf starts with the same `l` bytes (long-key sets share long
    // prefixes: `http://www.`), which cannot order anything: skip them.
    let mut l = 0;
    if let Some((&first, rest)) = order.split_first() {
        let k0 = key(first);
        l = k0.len();
        for &i in rest {
            if l == 0 {
                break;
            }
            l = lcp(&k0[..l], key(i));
        }
    }
    // Sort keys: the 8 bytes after the common prefix as a big-endian integer (zero-padded;
    // a smaller padded prefix means a smaller key, see `prefix8`), then the suffix length
    // capped at 9, then the slot. Equal padded prefixes with suffix lengths below 9 order
    // by length (the shorter suffix is a prefix of the longer one), so only runs of equal
    // prefixes of suffixes longer than 8 bytes need a full comparison (`memcmp`); random
    // 8-byte keys never do. Plain integer comparisons replace a comparison closure.
    let mut ents = [0u128; MAX_CAP];
    for (e, &i) in ents.iter_mut().zip(order.iter()) {
        let k = &key(i)[l..];
        *e = ((prefix8(k) as u128) << 64) | ((k.len().min(9) as u128) << 8) | i as u128;
    }
    let ents = &mut ents[..n];
    let long_tie = |a: u128, b: u128| a >> 8 == b >> 8 && (a >> 8) & 0xFF == 9;
    let full = |a: u128, b: u128| key(a as u8)[l + 8..].cmp(&key(b as u8)[l + 8..]);
    let cmp = |a: u128, b: u128| {
        if long_tie(a, b) {
            full(a, b)
        } else {
            a.cmp(&b)
        }
    };
    // Sorts by sort key, then orders runs of long ties by full comparison.
    let sort = |v: &mut [u128]| {
        v.sort_unstable();
        let mut a = 0;
        while a < v.len() {
            let mut b = a + 1;
            while b < v.len() && long_tie(v[a], v[b]) {
                b += 1;
            }
            if b - a > 1 {
                v[a..b].sort_unstable_by(|x, y| full(*x, *y));
            }
            a = b;
        }
    };
    if s * 4 < n {
        // Short sorted run: one sort of everything is cheaper than a merge.
        sort(ents);
        for (o, e) in order.iter_mut().zip(ents.iter()) {
            *o = *e as u8;
        }
    } else {
        sort(&mut ents[s..]);
        let (mut i, mut j, mut o) = (0, s, 0);
        while i < s && j < n {
            if cmp(ents[j], ents[i]).is_lt() {
                order[o] = ents[j] as u8;
                j += 1;
            } else {
                order[o] = ents[i] as u8;
                i += 1;
            }
            o += 1;
        }
        for e in ents[i..s].iter().chain(ents[j..n].iter()) {
            order[o] = *e as u8;
            o += 1;
        }
    }
    h.nr_sorted.store(n as u16, Ordering::Release);
}
