//! [`CachePadded`]: a value alone on its own pair of cache lines.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// Pads and aligns a value to 128 bytes, so that it never shares a cache line with another
/// value that other threads write (false sharing).
///
/// 128 rather than 64 bytes: on x86-64 the L2 spatial prefetcher fetches cache lines in
/// aligned pairs, so two hot values 64 bytes apart still interfere; recent ARM cores
/// (Apple M-series, Neoverse) have 128-byte lines. The price is memory: use it for a few hot
/// shared words (counters, epoch, list heads, per-thread records), not per element.
///
/// ```
/// use orrery_core::sync::CachePadded;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let counters = [CachePadded::new(AtomicU64::new(0)), CachePadded::new(AtomicU64::new(0))];
/// counters[1].fetch_add(1, Ordering::Relaxed);
/// assert_eq!(std::mem::align_of_val(&counters[0]), 128);
/// ```
#[derive(Clone, Copy, Default, Hash, PartialEq, Eq)]
#[repr(C, align(128))]
pub struct CachePadded<T> {
    value: T,
}

const _: () = assert!(std::mem::align_of::<CachePadded<u8>>() == 128);
const _: () = assert!(std::mem::size_of::<CachePadded<u8>>() == 128);
const _: () = assert!(std::mem::size_of::<CachePadded<[u8; 129]>>() == 256);

impl<T> CachePadded<T> {
    /// Wraps `value`.
    pub const fn new(value: T) -> CachePadded<T> {
        CachePadded { value }
    }

    /// Unwraps the value.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> Deref for CachePadded<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for CachePadded<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T> From<T> for CachePadded<T> {
    fn from(value: T) -> Self {
        CachePadded::new(value)
    }
}

impl<T: fmt::Debug> fmt::Debug for CachePadded<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachePadded")
            .field("value", &self.value)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::CachePadded;

    #[test]
    fn layout_and_access() {
        let mut arr = [CachePadded::new(1u64), CachePadded::new(2u64)];
        let a = std::ptr::from_ref(&*arr[0]) as usize;
        let b = std::ptr::from_ref(&*arr[1]) as usize;
        assert_eq!(b - a, 128);
        assert_eq!(a % 128, 0);
        *arr[0] += 10;
        assert_eq!(*arr[0], 11);
        assert_eq!(arr[1].into_inner(), 2);
        assert_eq!(CachePadded::from(7u8), CachePadded::new(7u8));
        assert!(format!("{:?}", arr[0]).contains("11"));
    }
}
