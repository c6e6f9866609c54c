//! TEMPORARY stand-ins for `orrery_core::{hash, alloc}` while those modules are being
//! built. Same names as the interfaces in BRIEF.md; deleted as soon as the real ones land.
#![allow(missing_docs, unreachable_pub, dead_code)]

pub mod hash {
    pub fn hash64(data: &[u8]) -> u64 {
        let mut h: u64 = 0x9E37_79B9_7F4A_7C15 ^ data.len() as u64;
        for c in data.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            h = (h.rotate_left(23) ^ u64::from_le_bytes(w)).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        }
        h ^= h >> 33;
        h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
        h ^ (h >> 29)
    }
    pub fn tag16(hash: u32) -> u16 {
        (hash >> 16) as u16 ^ hash as u16
    }
}

pub mod alloc {
    use std::alloc::Layout;
    use std::ptr::NonNull;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    #[derive(Default, Debug)]
    pub struct MemCounter(AtomicUsize);
    impl MemCounter {
        pub fn new() -> Self {
            Self::default()
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

    pub struct HugeArray {
        v: Box<[AtomicU64]>,
    }
    impl HugeArray {
        pub fn new(len: usize) -> Result<Self, orrery_core::Error> {
            Ok(Self {
                v: (0..len).map(|_| AtomicU64::new(0)).collect(),
            })
        }
    }
    impl std::ops::Deref for HugeArray {
        type Target = [AtomicU64];
        fn deref(&self) -> &[AtomicU64] {
            &self.v
        }
    }

    pub struct SlabPool {
        size: usize,
    }
    impl SlabPool {
        pub fn new(size: usize) -> Self {
            Self { size }
        }
        pub fn object_size(&self) -> usize {
            self.size
        }
        pub fn alloc(&self) -> NonNull<u8> {
            let l = Layout::from_size_align(self.size, 64).unwrap();
            // SAFETY: shim; size > 0.
            NonNull::new(unsafe { std::alloc::alloc(l) }).unwrap()
        }
        /// # Safety
        /// `p` came from `alloc` of this pool.
        pub unsafe fn free(&self, p: NonNull<u8>) {
            let l = Layout::from_size_align(self.size, 64).unwrap();
            // SAFETY: shim; per contract.
            unsafe { std::alloc::dealloc(p.as_ptr(), l) }
        }
        pub fn bytes(&self) -> usize {
            0
        }
    }
}
