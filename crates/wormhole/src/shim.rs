//! TEMPORARY stand-ins for `orrery_core::{hash, sync}` with the interface names of BRIEF.md,
//! used only until those modules land on `main`; this file is deleted then.
#![allow(dead_code, missing_docs, unreachable_pub)]

/// Stand-in for `orrery_core::hash` (bitwise CRC32C: slow, correct).
pub mod hash {
    const POLY: u32 = 0x82F6_3B78;
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    pub fn crc32c_extend(crc: u32, data: &[u8]) -> u32 {
        let mut c = !crc;
        for &b in data {
            c = TABLE[((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
        }
        !c
    }
    pub fn crc32c(data: &[u8]) -> u32 {
        crc32c_extend(0, data)
    }
    pub fn tag16(hash: u32) -> u16 {
        (hash >> 16) as u16
    }
}

/// Stand-in for `orrery_core::sync`.
pub mod sync {
    use std::cell::UnsafeCell;
    use std::ops::{Deref, DerefMut};
    use std::sync::atomic::{AtomicU32, Ordering};

    pub struct Guard(crossbeam_epoch::Guard);
    pub fn pin() -> Guard {
        Guard(crossbeam_epoch::pin())
    }
    impl Guard {
        pub fn defer<F: FnOnce() + Send + 'static>(&self, f: F) {
            self.0.defer(f)
        }
        /// # Safety
        /// As `crossbeam_epoch::Guard::defer_unchecked`.
        pub unsafe fn defer_unchecked<F: FnOnce()>(&self, f: F) {
            // SAFETY: forwarded contract.
            unsafe { self.0.defer_unchecked(f) }
        }
        pub fn flush(&self) {
            self.0.flush()
        }
    }

    #[repr(align(128))]
    #[derive(Default)]
    pub struct CachePadded<T>(pub T);
    impl<T> CachePadded<T> {
        pub const fn new(t: T) -> Self {
            Self(t)
        }
    }
    impl<T> Deref for CachePadded<T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.0
        }
    }

    pub struct RwSpinLock<T> {
        state: AtomicU32,
        data: UnsafeCell<T>,
    }
    // SAFETY: a lock.
    unsafe impl<T: Send> Send for RwSpinLock<T> {}
    // SAFETY: a lock.
    unsafe impl<T: Send + Sync> Sync for RwSpinLock<T> {}
    const W: u32 = 1 << 31;
    impl<T> RwSpinLock<T> {
        pub const fn new(t: T) -> Self {
            Self { state: AtomicU32::new(0), data: UnsafeCell::new(t) }
        }
        pub fn try_read(&self) -> Option<RwSpinReadGuard<'_, T>> {
            let s = self.state.load(Ordering::Relaxed);
            if s & W == 0
                && self.state.compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                return Some(RwSpinReadGuard(self));
            }
            None
        }
        pub fn read(&self) -> RwSpinReadGuard<'_, T> {
            loop {
                if let Some(g) = self.try_read() {
                    return g;
                }
                std::hint::spin_loop();
                std::thread::yield_now();
            }
        }
        pub fn try_write(&self) -> Option<RwSpinWriteGuard<'_, T>> {
            self.state
                .compare_exchange(0, W, Ordering::Acquire, Ordering::Relaxed)
                .ok()
                .map(|_| RwSpinWriteGuard(self))
        }
        pub fn write(&self) -> RwSpinWriteGuard<'_, T> {
            loop {
                if let Some(g) = self.try_write() {
                    return g;
                }
                std::hint::spin_loop();
                std::thread::yield_now();
            }
        }
    }
    pub struct RwSpinReadGuard<'a, T>(&'a RwSpinLock<T>);
    impl<T> Drop for RwSpinReadGuard<'_, T> {
        fn drop(&mut self) {
            self.0.state.fetch_sub(1, Ordering::Release);
        }
    }
    impl<T> Deref for RwSpinReadGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            // SAFETY: shared lock held.
            unsafe { &*self.0.data.get() }
        }
    }
    pub struct RwSpinWriteGuard<'a, T>(&'a RwSpinLock<T>);
    impl<T> Drop for RwSpinWriteGuard<'_, T> {
        fn drop(&mut self) {
            self.0.state.store(0, Ordering::Release);
        }
    }
    impl<T> Deref for RwSpinWriteGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            // SAFETY: exclusive lock held.
            unsafe { &*self.0.data.get() }
        }
    }
    impl<T> DerefMut for RwSpinWriteGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            // SAFETY: exclusive lock held.
            unsafe { &mut *self.0.data.get() }
        }
    }
}
