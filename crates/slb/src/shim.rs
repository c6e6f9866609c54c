//! TEMPORARY stand-ins for `orrery_core::{hash, alloc}` until they land on main.
//! Deleted once the real modules are merged.
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]

pub mod hash {
    pub fn hash64(data: &[u8]) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in data {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        h ^= h >> 31;
        h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^ (h >> 29)
    }
    pub fn tag16(hash: u32) -> u16 {
        (hash >> 16) as u16
    }
}

pub mod alloc {
    use std::ops::Deref;
    use std::sync::atomic::{AtomicUsize, Ordering};
    pub unsafe trait Zeroable {}
    pub struct HugeArray<T>(Box<[T]>);
    impl<T: Zeroable> HugeArray<T> {
        pub fn new(len: usize) -> orrery_core::Result<Self> {
            let layout = std::alloc::Layout::array::<T>(len).unwrap();
            let p = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
            assert!(!p.is_null());
            Ok(HugeArray(unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, len))
            }))
        }
    }
    impl<T> Deref for HugeArray<T> {
        type Target = [T];
        fn deref(&self) -> &[T] {
            &self.0
        }
    }
    pub struct MemCounter(AtomicUsize);
    impl MemCounter {
        pub fn new() -> Self {
            MemCounter(AtomicUsize::new(0))
        }
        pub fn add(&self, n: usize) {
            self.0.fetch_add(n, Ordering::Relaxed);
        }
        pub fn sub(&self, n: usize) {
            self.0.fetch_sub(n, Ordering::Relaxed);
        }
        pub fn get(&self) -> usize {
            self.0.load(Ordering::Relaxed)
        }
    }
}
